return require("syslua.programs.program")("ripgrep")
