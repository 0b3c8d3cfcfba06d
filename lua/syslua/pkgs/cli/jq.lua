return require("syslua.pkgs.catalogue")("jq", {
  command = "jq", license = "MIT", homepage = "https://github.com/jqlang/jq",
  description = "Command-line JSON processor",
})
