-- A reusable module: require("modules.git").setup{ name = ..., email = ... }
local M = {}

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
