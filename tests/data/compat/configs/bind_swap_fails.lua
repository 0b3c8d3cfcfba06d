-- Two stages, chosen by COMPAT_STAGE. `before` declares the bind `keeper`.
-- `after` drops it for `breaker`, whose create fails: the apply is undone as
-- a whole, and keeper's file, removed on the way, is there again.
local stage = os.getenv('COMPAT_STAGE')
local out_dir = sys.getenv('COMPAT_OUT')

return {
  inputs = {},
  setup = function()
    if stage == 'before' then
      sys.bind({
        id = 'keeper',
        create = function(_, ctx)
          local kept = out_dir .. '/kept.txt'
          ctx:exec({ bin = '/bin/sh', args = { '-c', 'echo "still here" > "$1"', 'sh', kept } })
          return { kept = kept }
        end,
        destroy = function(outputs, ctx)
          ctx:exec({ bin = '/bin/rm', args = { '-f', outputs.kept } })
        end,
      })
    elseif stage == 'after' then
      sys.bind({
        id = 'breaker',
        create = function(_, ctx)
          ctx:exec({ bin = '/bin/false' })
          return {}
        end,
        destroy = function() end,
      })
    else
      error('set COMPAT_STAGE to before or after')
    end
  end,
}
