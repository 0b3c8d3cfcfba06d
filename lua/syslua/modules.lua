-- syslua.modules: the module names the original sys.lua's documentation uses.
--
--   modules.file.setup({ target = '~/.gitconfig', source = './gitconfig' })  -- also `path =`
--   modules.env.setup({ EDITOR = 'nvim' })
--   modules.user.setup({ ada = { homeDir = '/home/ada' } })
--
-- They are thin names for syslua.environment.files, .variables and syslua.users.

local M = {}

M.file = {
  setup = function(opts)
    if type(opts) ~= "table" then error("syslua.modules.file.setup expects { target = ..., content = ... | source = ... }", 2) end
    local target = opts.target or opts.path
    if type(target) ~= "string" then error("syslua.modules.file.setup: `target` (or `path`) is required", 2) end
    local entry = {}
    for k, v in pairs(opts) do
      if k ~= "target" and k ~= "path" then entry[k] = v end
    end
    return require("syslua.environment.files").setup({ [target] = entry })[1]
  end,
}
M.env = require("syslua.environment.variables")
M.user = require("syslua.users")

return M
