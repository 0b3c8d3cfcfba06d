-- A bind with a check: it reports drift when its file is gone, so `sys status`
-- shows it and the next apply puts the file back.
local out_dir = sys.getenv('COMPAT_OUT')

return {
  inputs = {},
  setup = function()
    sys.bind({
      id = 'heartbeat',
      create = function(_, ctx)
        local pulse = out_dir .. '/pulse.txt'
        ctx:exec({ bin = '/bin/sh', args = { '-c', 'date +%s > "$1"', 'sh', pulse } })
        return { pulse = pulse }
      end,
      check = function(outputs, _, ctx)
        -- prints `true` (drifted) when the file is missing
        local missing = ctx:exec({ bin = '/bin/sh', args = { '-c', '[ -e "$1" ] && echo false || echo true', 'sh', outputs.pulse } })
        return { drifted = missing, message = 'pulse.txt has gone missing' }
      end,
      destroy = function(outputs, ctx)
        ctx:exec({ bin = '/bin/rm', args = { '-f', outputs.pulse } })
      end,
    })
  end,
}
