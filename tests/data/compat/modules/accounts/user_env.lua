-- The per-user config user_account.lua names; applied on its own it sets
-- one environment variable through syslua.environment.
local environment = require('syslua.environment')

environment.variables.setup({ QUILL_INBOX = 'drafts waiting: 3' })
