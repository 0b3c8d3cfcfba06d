-- Builds a syslua.programs.<name> module: setup{ version?, config? } declares
-- the package from syslua.pkgs.cli (linked into the profile, on PATH) and
-- the files of `config` (syslua.environment.files options).

local prio = require("syslua.priority")

return function(name)
  local M = { opts = { version = prio.default("stable") } }
  function M.setup(opts)
    opts = opts or {}
    if type(opts) ~= "table" then error("syslua.programs." .. name .. ".setup expects a table of options", 2) end
    for k in pairs(opts) do
      if k ~= "version" and k ~= "config" and not tostring(k):match("_integration$") then
        error("syslua.programs." .. name .. ": unknown option `" .. tostring(k) .. "` (options: version, config)", 2)
      end
    end
    M.opts = prio.merge(M.opts, opts)
    local pkg = require("syslua.pkgs.cli." .. name).setup({ version = M.opts.version })
    if M.opts.config then require("syslua.environment.files").setup(M.opts.config) end
    return pkg
  end
  return M
end
