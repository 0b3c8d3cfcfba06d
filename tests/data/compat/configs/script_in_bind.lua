-- ctx:script works in a bind too: create and destroy are both scripts.
local flag = sys.getenv('COMPAT_OUT') .. '/flag.txt'

return {
  inputs = { syslua = 'path:./vendor/syslua' },
  setup = function()
    require('syslua').setup()

    sys.bind({
      id = 'flag-via-script',
      create = function(_, ctx)
        ctx:script('shell', 'echo up > "' .. flag .. '"')
        return { flag = flag }
      end,
      destroy = function(outputs, ctx)
        ctx:script('shell', 'rm -f "' .. outputs.flag .. '"')
      end,
    })
  end,
}
