return require("syslua.pkgs.catalogue")("fd", {
  command = "fd", license = "MIT", homepage = "https://github.com/sharkdp/fd",
  description = "A simple, fast and user-friendly alternative to find",
})
