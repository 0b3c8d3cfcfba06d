-- A build that makes a small executable with ctx:exec, each command given
-- as a program and its arguments, one with an environment of its own.
return {
  inputs = {},
  setup = function()
    sys.build({
      id = 'morning-2.3.1',
      create = function(_, ctx)
        local tool = ctx.out .. '/bin/morning'
        ctx:exec({ bin = '/bin/mkdir', args = { '-p', ctx.out .. '/bin' } })
        ctx:exec({
          bin = '/bin/sh',
          args = { '-c', 'printf "#!/bin/sh\\necho %s\\n" "$WORDS" > "$1"', 'sh', tool },
          env = { WORDS = 'good morning', PATH = '/usr/bin:/bin' },
        })
        ctx:exec({ bin = '/bin/chmod', args = { '0755', tool } })
        return { bin = tool }
      end,
    })
  end,
}
