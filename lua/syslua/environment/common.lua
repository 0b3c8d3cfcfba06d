-- Shared by the syslua.environment modules.
local M = {}

--- Owner, group and mode of a file the environment modules write: the user
--- running syslua, 0644 (a file given other values elsewhere conflicts, as
--- any two declarations of one file do).
function M.file_defaults(props)
  if props.owner == nil then props.owner = sys.user.name end
  if props.group == nil then props.group = sys.user.group end
  if props.mode == nil and not props.link then props.mode = "0644" end
  return props
end

function M.sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  return keys
end

return M
