-- Builds a syslua.pkgs.cli.<name> module (the original's interface:
-- releases, meta, opts, setup) over syslua's own catalogue (pkgs/cli/<name>.lua).

local prio = require("syslua.priority")

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys)
  return keys
end

return function(name, meta)
  local catalogue = require("pkgs.cli." .. name)
  local stable = (catalogue.default:gsub("^v", ""))
  local releases = {}
  for version, platforms in pairs(catalogue.releases) do releases[(version:gsub("^v", ""))] = platforms end
  local M = {
    releases = releases,
    meta = {
      name = name,
      homepage = meta.homepage,
      description = meta.description,
      license = meta.license,
      versions = { stable = stable },
    },
    opts = { version = prio.default("stable") },
  }

  --- Declare the package (fetched into the store, linked into the profile).
  --- Returns its reference, with outputs.bin (the command in the profile)
  --- and outputs.out (the profile).
  function M.setup(opts)
    opts = opts or {}
    if type(opts) ~= "table" then error(name .. ".setup expects a table of options", 2) end
    local wanted = prio.unwrap(opts.version) or prio.unwrap(M.opts.version)
    local version = M.meta.versions[wanted] or (tostring(wanted):gsub("^v", ""))
    if not releases[version] then
      error(string.format("%s version '%s' not found. Available: %s", name, tostring(wanted),
        table.concat(sorted_keys(releases), ", ")), 2)
    end
    local ref = catalogue.setup({ version = version })
    rawset(ref, "outputs", { bin = sys.profile .. "/bin/" .. meta.command, out = sys.profile })
    return ref
  end

  return M
end
