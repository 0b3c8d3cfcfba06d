--- Minimal config that does nothing.
--- Used for testing basic CLI behavior without builds/binds.
return {
  inputs = {},
  setup = function(_) end,
}
