-- syslua.environment.aliases: shell aliases.
--
--   aliases.setup({ ll = 'ls -la', gs = 'git status' })
--
-- The aliases of every call are merged by priority (a conflict names both
-- places) and written to ~/.config/syslua/aliases.sh (POSIX shells) and
-- ~/.config/syslua/aliases.fish, both managed files. syslua's env scripts
-- load them (syslua/resources/env_line.py knows these two paths), so the
-- one line `sys env` prints for the shell's rc file brings them too.

local prio = require("syslua.priority")
local common = require("syslua.environment.common")

local M = {}
M.opts = {}
M.paths = { posix = "~/.config/syslua/aliases.sh", fish = "~/.config/syslua/aliases.fish" }

local declared = nil  -- the file references of the latest call
local calls = 0

local function quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

function M.setup(provided)
  if type(provided) ~= "table" then
    error("syslua.environment.aliases.setup expects { name = 'command', ... }", 2)
  end
  for name, value in pairs(provided) do
    if type(name) ~= "string" or not name:match("^[%w_.:-]+$") then
      error("syslua.environment.aliases: `" .. tostring(name) .. "` is not a valid alias name", 2)
    end
    if type(prio.unwrap(value)) ~= "string" then
      error("syslua.environment.aliases: alias " .. name .. " must be a string", 2)
    end
  end
  M.opts = prio.merge(M.opts, provided)
  local sh, fish = { "# Written by syslua (syslua.environment.aliases)." }, { "# Written by syslua (syslua.environment.aliases)." }
  for _, name in ipairs(common.sorted_keys(M.opts)) do
    local cmd = prio.unwrap(M.opts[name])
    sh[#sh + 1] = "alias " .. name .. "=" .. quote(cmd)
    fish[#fish + 1] = "alias " .. name .. " " .. quote(cmd)
  end
  -- Each call declares both files again with every alias so far, a little
  -- stronger than the call before, so the last call's files win the merge
  -- (and a file the config declares itself, at plain priority, beats them all).
  calls = calls + 1
  local strength = 1100 - calls
  local function declare(path, lines)
    return lib.mkOrder(strength, file(common.file_defaults({ path = path, content = table.concat(lines, "\n") .. "\n" })))
  end
  declared = { declare(M.paths.posix, sh), declare(M.paths.fish, fish) }
  return declared
end

return M
