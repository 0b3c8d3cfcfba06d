-- A reusable module: require("modules.git").setup{ name = ..., email = ... }
local M = {}

-- defaults{} applies to declarations in the file that makes them: this one.
defaults { file = { owner = sys.user.name, group = sys.user.group, mode = "0644" } }

function M.setup(opts)
  local ini = table.concat({
    "[user]",
    "\tname = " .. opts.name,
    "\temail = " .. opts.email,
    "[init]",
    "\tdefaultBranch = main",
    "",
  }, "\n")
  local ref = file { path = "~/.gitconfig", content = lib.mkDefault(ini) }
  return ref
end

return M
