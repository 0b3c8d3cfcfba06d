-- Checks syslua.priority against the original's documented interface:
-- wrapping, the named priorities, plain values, mergeable keys, merging
-- option tables, and where a wrapped value was written. Any failed check
-- stops evaluation with its message; the last line reports success.
local p = require('syslua.priority')

local function expect(cond, what)
  if not cond then error('priority: ' .. what, 2) end
end

-- wrap / unwrap / get_priority on a wrapped value
local shade = p.wrap('teal', 700)
expect(p.is_priority(shade), 'a wrapped value is a priority')
expect(p.unwrap(shade) == 'teal', 'unwrap gives the value back')
expect(p.get_priority(shade) == 700, 'the priority given to wrap is kept')

-- the named priorities, lower wins
local levels = {
  { p.force('x'), 50, 'force' },
  { p.before('x'), 500, 'before' },
  { p.default('x'), 1000, 'default' },
  { p.after('x'), 1500, 'after' },
  { p.order(1234, 'x'), 1234, 'order(1234)' },
}
for _, row in ipairs(levels) do
  expect(p.get_priority(row[1]) == row[2], row[3] .. ' is ' .. row[2])
end

-- a plain value is not wrapped, and sits at 900
expect(not p.is_priority('tabs'), 'a plain string is not a priority')
expect(p.unwrap('tabs') == 'tabs', 'unwrap leaves a plain value alone')
expect(p.get_priority('tabs') == 900, 'a plain value is at 900')
expect(p.get_priority(false) == 900, 'false is a plain value too')

-- mergeable markers, with and without a separator
local joined = p.mergeable({ separator = ',' })
expect(p.is_mergeable(joined), 'mergeable{separator} is mergeable')
expect(joined.separator == ',', 'the separator is kept')
local listed = p.mergeable()
expect(p.is_mergeable(listed), 'mergeable() is mergeable')
expect(listed.separator == nil, 'mergeable() has no separator')
expect(not p.is_mergeable({}), 'a plain table is not mergeable')

-- merge: the lower priority wins, whichever side it is on
local m = p.merge({ width = p.default(80) }, { width = p.after(120) })
expect(m.width == 80, 'default(80) beats after(120)')
m = p.merge({ width = p.after(120) }, { width = p.default(80) })
expect(m.width == 80, 'default(80) beats after(120) from the other side')
m = p.merge({ width = p.before(100) }, { width = p.force(72) })
expect(m.width == 72, 'force(72) beats before(100)')

-- the same value twice at one priority is no conflict
m = p.merge({ theme = p.default('dark') }, { theme = p.default('dark') })
expect(m.theme == 'dark', 'one value at one priority twice is fine')

-- two values at one priority are a conflict
local ok, err = pcall(p.merge, { theme = p.default('dark') }, { theme = p.default('light') })
expect(not ok and tostring(err):find('theme', 1, true), 'two values at one priority are refused, naming the key')

-- a mergeable string key joins every value in priority order
local base = { search = p.mergeable({ separator = ',' }) }
m = p.merge(base, { search = p.after('zeta') })
m = p.merge(m, { search = p.force('alpha') })
m = p.merge(m, { search = 'mid' })
expect(m.search == 'alpha,mid,zeta', 'joined in priority order, got ' .. tostring(m.search))

-- a mergeable list key concatenates lists in priority order
m = p.merge({ plugins = p.mergeable() }, { plugins = p.after({ 'lint', 'fmt' }) })
m = p.merge(m, { plugins = p.before({ 'git' }) })
expect(#m.plugins == 3, 'three plugins')
expect(m.plugins[1] == 'git' and m.plugins[2] == 'lint' and m.plugins[3] == 'fmt', 'before first, after last')

-- a wrapped value knows where it was written
local here = p.before('somewhere')
expect(type(here.__source) == 'table', 'a wrapped value has a source')
expect(here.__source.file ~= nil, 'the source has a file')
expect(type(here.__source.line) == 'number' and here.__source.line > 0, 'the source has a line')

return { success = true }
