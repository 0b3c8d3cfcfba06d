-- A bind that puts a file down when created and takes it away when destroyed.
-- COMPAT_OUT names the directory the test gives it.
local out_dir = sys.getenv('COMPAT_OUT')

return {
  inputs = {},
  setup = function()
    sys.bind({
      id = 'welcome-mat',
      create = function(_, ctx)
        local mat = out_dir .. '/doormat.txt'
        ctx:exec({ bin = '/bin/sh', args = { '-c', 'echo welcome > "$1"', 'sh', mat } })
        return { mat = mat }
      end,
      destroy = function(outputs, ctx)
        ctx:exec({ bin = '/bin/rm', args = { '-f', outputs.mat } })
      end,
    })
  end,
}
