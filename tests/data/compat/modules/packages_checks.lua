-- Checks syslua.environment.packages against the original's documented
-- interface: what it exports, what setup refuses, its defaults, and the
-- priorities packages in `use` may carry.
local p = require('syslua.priority')
local packages = require('syslua.environment.packages')

local function expect(cond, what)
  if not cond then error('packages: ' .. what, 2) end
end

expect(type(packages.setup) == 'function', 'setup is exported')
expect(type(packages.opts) == 'table', 'opts is exported')

-- setup needs a non-empty `use`, and says so
for label, opts in pairs({ ['no use'] = {}, ['an empty use'] = { use = {} } }) do
  local ok, err = pcall(packages.setup, opts)
  expect(not ok, label .. ' is refused')
  expect(tostring(err):find('use', 1, true), label .. ': the error names `use`')
end

-- the link defaults: commands, man pages and completions on; lib and include off
local link = packages.opts.link
local want = { bin = true, man = true, completions = true, lib = false, include = false }
for key, value in pairs(want) do
  expect(link[key] == value, 'link.' .. key .. ' defaults to ' .. tostring(value))
end
expect(packages.opts.shell_integration == true, 'shell_integration defaults to true')

-- stand-ins for package references, as entries of `use` would be
local function pkg(name)
  return { id = name, hash = name .. '-0000', outputs = { bin = '/store/' .. name .. '/bin/' .. name } }
end

local use = { p.default(pkg('nano')), p.force(pkg('helix')), pkg('micro'), p.before(pkg('kak')) }
expect(p.get_priority(use[1]) == 1000, 'a default package is at 1000')
expect(p.get_priority(use[2]) == 50, 'a forced package is at 50')
expect(p.get_priority(use[3]) == 900, 'a plain package is at 900')
expect(p.get_priority(use[4]) == 500, 'a package before the others is at 500')
expect(p.unwrap(use[2]).outputs.bin == '/store/helix/bin/helix', 'unwrapping gives the package back')

return { success = true }
