-- syslua.environment.variables: environment variables for login shells.
--
--   variables.setup({ EDITOR = 'nvim', PATH = priority.before('~/bin') })
--
-- Each variable becomes an `env` declaration: syslua writes them to the
-- environment script shells load (see docs/lua-api.md, env). PATH and other
-- *PATH variables are lists that merge by priority, as the original's
-- mergeable PATH does.

local prio = require("syslua.priority")
local common = require("syslua.environment.common")

local M = {}
M.opts = {}

function M.setup(provided)
  if type(provided) ~= "table" then
    error("syslua.environment.variables.setup expects { NAME = value, ... }", 2)
  end
  M.opts = prio.merge(M.opts, provided)
  local vars = {}
  for _, name in ipairs(common.sorted_keys(provided)) do
    local value = provided[name]
    if type(name) ~= "string" then error("syslua.environment.variables: variable names must be strings", 2) end
    if prio.is_mergeable(value) then
      -- PATH-like variables merge by themselves here; a default joins at `after`.
      if value.default ~= nil then vars[name] = prio.after(value.default) end
    else
      local raw = prio.unwrap(value)
      if type(raw) ~= "string" and type(raw) ~= "number" and type(raw) ~= "table" then
        error("syslua.environment.variables: " .. name .. " must be a string, got " .. type(raw), 2)
      end
      vars[name] = value
    end
  end
  if next(vars) == nil then return nil end
  return env(vars)
end

return M
