-- patchelf: A utility for modifying existing ELF executables and libraries (GPL-3.0, https://github.com/NixOS/patchelf).
-- Release URLs and SHA-256 checksums are the published ones (facts, not code).
-- Use: require("pkgs.cli.patchelf").setup{ version = "0.18.0" }

return require("pkgs.lib.release").define {
  name = "patchelf",
  default = "0.18.0",
  bin = { "bin/patchelf" },
  strip_components = 0,
  releases = {
    ["0.18.0"] = {
      ["aarch64-linux"] = { format = "tar.gz", sha256 = "ae13e2effe077e829be759182396b931d8f85cfb9cfe9d49385516ea367ef7b2",
        url = "https://github.com/NixOS/patchelf/releases/download/0.18.0/patchelf-0.18.0-aarch64.tar.gz" },
      ["x86_64-linux"] = { format = "tar.gz", sha256 = "ce84f2447fb7a8679e58bc54a20dc2b01b37b5802e12c57eece772a6f14bf3f0",
        url = "https://github.com/NixOS/patchelf/releases/download/0.18.0/patchelf-0.18.0-x86_64.tar.gz" },
      ["x86_64-windows"] = { format = "binary", sha256 = "ea5293833b6a547612ce4b073ac84fd603011ce3455f488a1017fabc8bd170ff",
        url = "https://github.com/NixOS/patchelf/releases/download/0.18.0/patchelf-win64-0.18.0.exe" },
    },
  },
}
