-- require('syslua'): the original sys.lua's library, written for syslua.
--
--   local syslua = require('syslua')
--   syslua.setup()                       -- accepted; ctx:script is built in here
--   syslua.pkgs.cli.jq.setup()           -- a package from syslua's catalogue
--   syslua.environment.variables.setup({ EDITOR = 'nvim' })
--   syslua.f('{{name}}', { name = 'x' }) -- string interpolation
--
-- Sub-modules load on first use: syslua.priority, .environment, .users,
-- .groups, .pkgs, .programs, .lib, .json, .interpolation.

local M = {}

M.f = require("syslua.interpolation")
M.interpolate = M.f

--- The original registers ctx:script (and a few build helpers) here. syslua's
--- contexts have ctx:script built in, so there is nothing left to set up;
--- calling it (once or more) is harmless.
function M.setup() end

return setmetatable(M, {
  __index = function(t, k)
    local ok, mod = pcall(require, "syslua." .. tostring(k))
    if not ok then
      if type(mod) == "string" and mod:find("module 'syslua." .. tostring(k) .. "' not found", 1, true) then
        error("module 'syslua." .. tostring(k) .. "' not found", 2)
      end
      error(mod, 0)
    end
    rawset(t, k, mod)
    return mod
  end,
})
