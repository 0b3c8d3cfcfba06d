return require("syslua.programs.program")("jq")
