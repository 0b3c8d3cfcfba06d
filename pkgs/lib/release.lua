-- Shared helper for catalogue packages published as per-platform release assets.
--
--   return require("pkgs.lib.release").define {
--     name = "ripgrep", default = "15.1.0", bin = { "rg" }, strip_components = 1,
--     releases = { ["15.1.0"] = { ["x86_64-linux"] = { url = ..., sha256 = ..., format = "tar.gz" } } },
--   }
--
-- The module's setup{ version = ..., bin = ..., depends_on = ... } picks the
-- release for sys.platform and declares the package; an unknown version or
-- platform fails with the list of what is available.

local M = {}

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys)
  return keys
end

local function find_version(releases, wanted)
  if releases[wanted] then return wanted end
  if releases["v" .. wanted] then return "v" .. wanted end
  local bare = wanted:gsub("^v", "")
  if releases[bare] then return bare end
  return nil
end

function M.define(spec)
  local mod = { name = spec.name, releases = spec.releases, default = spec.default }

  function mod.setup(opts)
    opts = opts or {}
    local wanted = opts.version or spec.default
    local version = find_version(spec.releases, wanted)
    if not version then
      error(spec.name .. ": no release " .. tostring(wanted) .. " in the catalogue (available: "
        .. table.concat(sorted_keys(spec.releases), ", ") .. ")", 2)
    end
    local platform = opts.platform or sys.platform
    local asset = spec.releases[version][platform]
    if not asset then
      error(spec.name .. " " .. version .. ": no release for platform " .. platform .. " (available: "
        .. table.concat(sorted_keys(spec.releases[version]), ", ") .. ")", 2)
    end
    local bin = opts.bin or spec.bin
    if asset.format == "binary" then
      bin = opts.bin or { "bin/" .. spec.name }
    end
    return package {
      name = opts.name or spec.name,
      version = (version:gsub("^v", "")),
      source = lib.fetchUrl { url = asset.url, sha256 = asset.sha256 },
      format = asset.format,
      bin = bin,
      strip_components = asset.strip_components or spec.strip_components or 0,
      depends_on = opts.depends_on,
    }
  end

  return mod
end

return M
