-- syslua.users: local user accounts, as syslua `user` declarations
-- (useradd / usermod / userdel; docs/resources/user.md). Needs root.
--
--   users.setup({
--     ada = { description = 'Ada Lovelace', homeDir = '/home/ada', groups = { 'developers' },
--             shell = syslua.pkgs.cli.fd.setup() --[[ or a path ]] },
--   })
--
-- Differences from the original sys.lua:
-- - `config` (a syslua config applied as that user) is not run by syslua:
--   a warning says so; apply it as the user with `sys apply`.
-- - `initialPassword` is refused: syslua does not set passwords.
-- - the home directory is always kept when an account is removed
--   (`preserveHomeOnRemove = false` is refused rather than ignored).

local prio = require("syslua.priority")
local groups_mod = require("syslua.groups")

local M = {}

M.defaults = { description = "", groups = prio.mergeable({ default = {} }), preserveHomeOnRemove = false }

local OPTIONS = { description = true, homeDir = true, config = true, shell = true, initialPassword = true,
  groups = true, preserveHomeOnRemove = true }

local function shell_path(shell)
  if shell == nil then return nil end
  if type(shell) == "string" then return shell end
  if type(shell) == "table" and type(shell.outputs) == "table" and type(shell.outputs.bin) == "string" then
    return shell.outputs.bin
  end
  error("a shell must be a path or a package (with outputs.bin)", 0)
end

function M.setup(users)
  if type(users) ~= "table" or next(users) == nil then
    error("syslua.users.setup: at least one user definition is required", 2)
  end
  if not groups_mod.elevated() then
    error("syslua.users requires elevated privileges (root/Administrator)", 2)
  end
  local names = {}
  for name in pairs(users) do names[#names + 1] = name end
  table.sort(names, function(a, b) return tostring(a) < tostring(b) end)
  local refs = {}
  for _, name in ipairs(names) do
    local opts = users[name]
    if type(name) ~= "string" or type(opts) ~= "table" then
      error("syslua.users.setup: each entry is name = { homeDir = ..., ... }", 2)
    end
    for k in pairs(opts) do
      if not OPTIONS[k] then
        error("user '" .. name .. "': unknown option `" .. tostring(k) .. "`", 2)
      end
    end
    local home = prio.unwrap(opts.homeDir)
    if type(home) ~= "string" or home == "" then error("user '" .. name .. "': homeDir is required", 2) end
    if opts.initialPassword ~= nil then
      error("user '" .. name .. "': initialPassword is not supported (syslua does not set passwords; use passwd)", 2)
    end
    if prio.unwrap(opts.preserveHomeOnRemove) == false and opts.preserveHomeOnRemove ~= nil then
      error("user '" .. name .. "': preserveHomeOnRemove = false is not supported "
        .. "(syslua always keeps a removed account's home directory)", 2)
    end
    local config = prio.unwrap(opts.config)
    if config ~= nil then
      print("warning: user '" .. name .. "': config " .. tostring(config) .. " is not applied by syslua; "
        .. "run `sys apply " .. tostring(config) .. "` as " .. name)
    end
    local ok, shell = pcall(shell_path, prio.unwrap(opts.shell))
    if not ok then error("user '" .. name .. "': " .. shell, 2) end
    local props = { name = name, home = home, shell = shell, comment = opts.description }
    local grps = opts.groups
    if prio.is_mergeable(grps) then grps = grps.default end
    if grps ~= nil and next(prio.unwrap(grps)) ~= nil then props.groups = grps end
    local deps = {}
    for _, g in ipairs(prio.unwrap(grps) or {}) do
      -- a group declared with syslua.groups is created before the user joins it
      if groups_mod.declared[g] then deps[#deps + 1] = groups_mod.declared[g] end
    end
    if #deps > 0 then props.depends_on = deps end
    refs[name] = user(props)
  end
  return refs
end

return M
