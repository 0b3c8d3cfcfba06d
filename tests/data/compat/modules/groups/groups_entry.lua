-- The same two groups, declared from the setup of an entry table.
local groups = require('syslua.groups')

local config = { inputs = {} }

function config.setup()
  groups.setup({
    daemons = { system = true, description = 'Service accounts' },
    crew = { gid = 2345, description = 'People on the project' },
  })
end

return config
