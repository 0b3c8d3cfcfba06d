-- Cases for syslua.interpolation (the original's f-strings with {{ }}):
-- each row is a template, the values it sees, and the text it must give.
-- Every row runs; the summary line counts them, and any failure is listed
-- and then raised.
local f = require('syslua.interpolation')

local cases = {
  -- values, expressions, tables, functions handed in
  { 'a name', '{{who}}', { who = 'ada' }, 'ada' },
  { 'numbers in text', '{{x}} * {{y}} = {{z}}', { x = 6, y = 7, z = 42 }, '6 * 7 = 42' },
  { 'an expression', '{{2 ^ 10}}', {}, '1024' },
  { 'an expression over values', '{{n * 3}}', { n = 5 }, '15' },
  { 'a nested field', '{{cfg.ui.font}}', { cfg = { ui = { font = 'mono' } } }, 'mono' },
  { 'a string function handed in', '{{string.rep(c, 3)}}', { c = '-', string = string }, '---' },
  { 'a math function handed in', '{{math.max(a, b)}}', { a = 4, b = 9, math = math }, '9' },
  { 'a boolean', '{{flag}}', { flag = false }, 'false' },
  -- format specifiers after a colon
  { 'integer', '{{n:%d}}', { n = 7 }, '7' },
  { 'zero-padded integer', '{{n:%04d}}', { n = 7 }, '0007' },
  { 'two decimals', '{{r:%.2f}}', { r = 2.71828 }, '2.72' },
  { 'string', '{{s:%s}}', { s = 'plain' }, 'plain' },
  { 'right-aligned string', '{{s:%8s}}', { s = 'right' }, '   right' },
  { 'left-aligned string', '[{{s:%-6s}}]', { s = 'left' }, '[left  ]' },
  { 'hexadecimal', '{{n:%x}}', { n = 255 }, 'ff' },
  -- a trailing = shows the expression before its value
  { 'debug form', '{{port=}}', { port = 8080 }, 'port=8080' },
  { 'debug form with a format', '{{port=:%06d}}', { port = 8080 }, 'port=008080' },
  -- text with nothing to fill in, or filled back to back
  { 'empty template', '', {}, '' },
  { 'no braces', 'just text', {}, 'just text' },
  { 'back to back', '{{p}}{{q}}{{r}}', { p = 1, q = 2, r = 3 }, '123' },
  { 'quotes in a value', '{{s}}', { s = [[say "hi" and 'bye']] }, [[say "hi" and 'bye']] },
  -- single braces are left alone: shell code stays as written
  { 'a shell variable', 'ls ${PWD}', {}, 'ls ${PWD}' },
  { 'braces in text', 'fn() { true; }', {}, 'fn() { true; }' },
  { 'both kinds', '{{tool}} runs in ${HOME}', { tool = 'make' }, 'make runs in ${HOME}' },
  { '$VAR kept beside a value', 'mv "{{f}}" "$TMPDIR/{{f}}"', { f = 'log.txt' }, 'mv "log.txt" "$TMPDIR/log.txt"' },
  -- building paths and commands
  { 'a path', '{{base}}/share/{{app}}/theme.toml', { base = '/opt', app = 'kitty' }, '/opt/share/kitty/theme.toml' },
  { 'backslashes', '{{vol}}\\Program Files\\{{app}}', { vol = 'D:', app = 'tool' }, 'D:\\Program Files\\tool' },
  { 'a quoted argument', 'rm -rf "{{dir}}"', { dir = '/var/tmp/build' }, 'rm -rf "/var/tmp/build"' },
  { 'two quoted arguments', 'ln -s "{{from}}" "{{to}}"', { from = '/a/b', to = '/c/d' }, 'ln -s "/a/b" "/c/d"' },
  -- several lines
  { 'a here-document', 'tee "{{out}}" <<END\n{{body}}\nEND', { out = '/tmp/x', body = 'one\ntwo' },
    'tee "/tmp/x" <<END\none\ntwo\nEND' },
  { 'a multi-line template', 'name = {{n}}\nversion = {{v}}\n', { n = 'fd', v = '10.2.0' },
    'name = fd\nversion = 10.2.0\n' },
  { 'a multi-line message', "two packages provide '{{cmd}}':\n  - {{a}}\n  - {{b}}", { cmd = 'vi', a = 'vim', b = 'neovim' },
    "two packages provide 'vi':\n  - vim\n  - neovim" },
}

local failures = {}
for _, case in ipairs(cases) do
  local label, template, values, want = case[1], case[2], case[3], case[4]
  local ok, got = pcall(f, template, values)
  if not ok then
    failures[#failures + 1] = label .. ': raised ' .. tostring(got)
  elseif got ~= want then
    failures[#failures + 1] = string.format('%s: wanted %q, got %q', label, want, got)
  end
end

print(string.format('interpolation: %d cases, %d failed', #cases, #failures))
if #failures > 0 then
  error('interpolation cases failed:\n  ' .. table.concat(failures, '\n  '))
end
print('interpolation: every case gave the expected text')
