-- syslua.groups called straight from the main chunk: one group with a fixed
-- gid, one system group whose gid the system picks.
require('syslua.groups').setup({
  crew = { description = 'People on the project', gid = 2345 },
  daemons = { description = 'Service accounts', system = true },
})
