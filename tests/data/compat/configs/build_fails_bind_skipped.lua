-- A build that fails, and a bind that takes it as an input: the bind must
-- never run, and nothing is left in the store.
local out_dir = sys.getenv('COMPAT_OUT')

return {
  inputs = {},
  setup = function()
    local doomed = sys.build({
      id = 'doomed-build',
      create = function(_, ctx)
        ctx:exec({ bin = '/bin/sh', args = { '-c', 'echo "cannot build" >&2; exit 3' } })
        return { out = ctx.out }
      end,
    })

    sys.bind({
      id = 'never-runs',
      inputs = { doomed = doomed },
      create = function(_, ctx)
        ctx:exec({ bin = '/usr/bin/touch', args = { out_dir .. '/ghost.txt' } })
        return {}
      end,
      destroy = function() end,
    })
  end,
}
