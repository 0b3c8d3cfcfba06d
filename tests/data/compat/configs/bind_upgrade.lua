-- A bind whose input changes between two applies (COMPAT_RELEASE). It has an
-- update, so the second apply upgrades it in place from what the first one
-- recorded, instead of destroying and creating it again.
local release = os.getenv('COMPAT_RELEASE')
local out_dir = sys.getenv('COMPAT_OUT')

return {
  inputs = {},
  setup = function()
    sys.bind({
      id = 'release-marker',
      inputs = { release = release, file = out_dir .. '/release.txt' },
      create = function(inputs, ctx)
        ctx:exec({ bin = '/bin/sh', args = { '-c', 'echo "installed $1" > "$2"', 'sh', inputs.release, inputs.file } })
        return { file = inputs.file, release = inputs.release }
      end,
      update = function(outputs, inputs, ctx)
        ctx:exec({
          bin = '/bin/sh',
          args = { '-c', 'echo "upgraded $1 -> $2" > "$3"', 'sh', outputs.release, inputs.release, outputs.file },
        })
        return { file = outputs.file, release = inputs.release }
      end,
      destroy = function(outputs, ctx)
        ctx:exec({ bin = '/bin/rm', args = { '-f', outputs.file } })
      end,
    })
  end,
}
