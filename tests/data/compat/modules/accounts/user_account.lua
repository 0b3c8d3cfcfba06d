-- One account through syslua.user (the original's singular module name):
-- a description, a home, no extra groups, a per-user config that syslua
-- warns it does not apply, and the home kept when the account goes.
require('syslua.user').setup({
  quill = {
    description = 'Quill Writer',
    homeDir = '/home/quill',
    config = './user_env.lua',
    groups = {},
    preserveHomeOnRemove = true,
  },
})
