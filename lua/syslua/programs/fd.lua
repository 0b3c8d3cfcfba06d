return require("syslua.programs.program")("fd")
