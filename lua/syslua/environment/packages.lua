-- syslua.environment.packages: the packages whose commands are on PATH.
--
--   packages.setup({ use = { pkgs.cli.ripgrep.setup(), priority.force(pkgs.cli.fd.setup()) } })
--
-- In syslua a package is linked into the profile (sys.profile, whose bin/
-- is on PATH through the environment script) as soon as it is declared, so
-- `use` checks that each entry is a package and says so clearly otherwise.
-- Two packages providing one command are reported by the package type.
-- `link` and `shell_integration` keep the original's defaults: commands
-- and the PATH integration are on; man pages, completions, lib and include
-- are not linked by syslua's profile (yet) and are accepted as options only.

local prio = require("syslua.priority")

local M = {}

M.opts = {
  use = {},
  link = { bin = true, man = true, completions = true, lib = false, include = false },
  shell_integration = true,
}

function M.setup(opts)
  if type(opts) ~= "table" then error("syslua.environment.packages.setup expects { use = { ... } }", 2) end
  local use = prio.unwrap(opts.use)
  if type(use) ~= "table" or next(use) == nil then
    error("syslua.environment.packages.setup: `use` must list at least one package", 2)
  end
  for k in pairs(opts) do
    if k ~= "use" and k ~= "link" and k ~= "shell_integration" then
      error("syslua.environment.packages.setup: unknown option `" .. tostring(k) .. "` (options: use, link, shell_integration)", 2)
    end
  end
  if prio.unwrap(opts.shell_integration) == false then
    error("syslua.environment.packages.setup: shell_integration = false is not supported: "
      .. "syslua always puts its profile's bin/ on PATH through the environment script", 2)
  end
  local names = {}
  for i, entry in ipairs(use) do
    local pkg = prio.unwrap(entry)
    local name = type(pkg) == "table" and tostring(pkg) or ""
    if name:sub(1, 8) ~= "package#" then
      error("syslua.environment.packages.setup: use[" .. i .. "] is not a package (got "
        .. (type(pkg) == "table" and (name ~= "" and name or "a table") or type(pkg))
        .. "); use packages made by syslua.pkgs, e.g. syslua.pkgs.cli.jq.setup()", 2)
    end
    names[#names + 1] = name
  end
  M.opts.use = use
  return names
end

return M
