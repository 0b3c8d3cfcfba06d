return require("syslua.pkgs.catalogue")("ripgrep", {
  command = "rg", license = "MIT", homepage = "https://github.com/BurntSushi/ripgrep",
  description = "Recursively searches directories for a regex pattern",
})
