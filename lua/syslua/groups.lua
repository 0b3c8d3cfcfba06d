-- syslua.groups: local groups, created with groupadd and removed with
-- groupdel. Needs root.
--
--   groups.setup({ developers = { description = 'Dev team', gid = 2001 }, ops = { system = true } })
--
-- Each group is a sys.bind with id `__syslua_group_<name>`: created when
-- declared, destroyed (groupdel) when no longer declared, re-created if it
-- disappears (its check). Under SYSLUA_ACCOUNTS_PREFIX (a directory holding
-- etc/group, for containers, images and tests) the tools work there.
-- A description is kept in the bind's inputs; Linux groups have no field
-- for it.

local prio = require("syslua.priority")

local M = {}

M.declared = {}  -- group name -> its bind, for syslua.users to order after

M.defaults = { description = prio.default(""), system = prio.default(false) }

local function elevated()
  if sys.is_elevated ~= nil then return sys.is_elevated end
  return sys.user.uid == 0
end
M.elevated = elevated

local function check_name(name)
  if type(name) ~= "string" or not name:match("^[a-z_][a-z0-9_-]*%$?$") or #name > 32 then
    error("syslua.groups: `" .. tostring(name) .. "` is not a valid group name "
      .. "(lowercase letters, digits, '_' and '-', starting with a letter or '_')", 3)
  end
end

local function tool(prefix, ...)
  local args = {}
  if prefix then args[#args + 1] = "--prefix"; args[#args + 1] = prefix end
  for _, a in ipairs({ ... }) do args[#args + 1] = a end
  return args
end

function M.setup(groups)
  if type(groups) ~= "table" or next(groups) == nil then
    error("syslua.groups.setup: at least one group definition is required", 2)
  end
  if not elevated() then
    error("syslua.groups requires elevated privileges (root/Administrator)", 2)
  end
  local prefix = os.getenv("SYSLUA_ACCOUNTS_PREFIX")
  if prefix == "" then prefix = nil end
  local refs = {}
  local names = {}
  for name in pairs(groups) do names[#names + 1] = name end
  table.sort(names, function(a, b) return tostring(a) < tostring(b) end)
  for _, name in ipairs(names) do
    check_name(name)
    local opts = groups[name]
    if type(opts) ~= "table" then error("syslua.groups: group " .. name .. " must be a table of options", 2) end
    for k in pairs(opts) do
      if k ~= "description" and k ~= "gid" and k ~= "system" then
        error("syslua.groups: group " .. name .. ": unknown option `" .. tostring(k) .. "` (options: description, gid, system)", 2)
      end
    end
    local merged = prio.merge(M.defaults, opts)
    local gid, system = merged.gid, merged.system
    if gid ~= nil and (type(gid) ~= "number" or gid ~= math.floor(gid) or gid < 0) then
      error("syslua.groups: group " .. name .. ": gid must be a non-negative integer, got " .. tostring(gid), 2)
    end
    if type(system) ~= "boolean" then error("syslua.groups: group " .. name .. ": system must be true or false", 2) end
    local etc_group = (prefix or "") .. "/etc/group"
    refs[name] = sys.bind({
      id = "__syslua_group_" .. name,
      inputs = { name = name, description = tostring(merged.description or ""), gid = gid, system = system },
      create = function(inputs, ctx)
        local args = {}
        if inputs.gid then args[#args + 1] = "-g"; args[#args + 1] = tostring(inputs.gid) end
        if inputs.system then args[#args + 1] = "-r" end
        args[#args + 1] = inputs.name
        ctx:exec({ bin = "groupadd", args = tool(prefix, table.unpack(args)) })
        return { name = inputs.name }
      end,
      destroy = function(outputs, ctx)
        -- a group already gone (deleted by hand) is removed: nothing to do
        local present = ctx:exec({ bin = "/bin/sh", args = { "-c",
          'grep -q "^$1:" "$2" && printf yes || printf no', "sh", outputs.name, etc_group } })
        ctx:exec({ bin = "/bin/sh", args = { "-c", '[ "$1" = no ] && exit 0; shift; exec "$@"', "sh", present,
          "groupdel", table.unpack(tool(prefix, outputs.name)) } })
      end,
      check = function(outputs, _, ctx)
        local missing = ctx:exec({ bin = "/bin/sh", args = { "-c",
          'grep -q "^$1:" "$2" && printf false || printf true', "sh", outputs.name, etc_group } })
        return { drifted = missing, message = "group " .. name .. " does not exist" }
      end,
    })
  end
  for name, ref in pairs(refs) do M.declared[name] = ref end
  return refs
end

return M
