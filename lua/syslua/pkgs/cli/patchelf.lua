return require("syslua.pkgs.catalogue")("patchelf", {
  command = "patchelf", license = "GPL-3.0", homepage = "https://github.com/NixOS/patchelf",
  description = "A utility for modifying existing ELF executables and libraries",
})
