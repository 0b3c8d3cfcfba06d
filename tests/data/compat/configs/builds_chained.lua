-- Two builds, the second fed by the first through its inputs. Their ids sort
-- the other way round, so only the dependency puts `words` first.
return {
  inputs = {},
  setup = function()
    local words = sys.build({
      id = 'words-1.0',
      create = function(_, ctx)
        ctx:exec({ bin = '/bin/sh', args = { '-c', 'printf "alpha\\nbeta\\ngamma\\n" > "$1/words.txt"', 'sh', ctx.out } })
        return { list = ctx.out .. '/words.txt' }
      end,
    })

    sys.build({
      id = 'reversed-1.0',
      inputs = { words = words },
      create = function(inputs, ctx)
        ctx:exec({
          bin = '/bin/sh',
          args = { '-c', 'sort -r "$1" > "$2/reversed.txt"', 'sh', inputs.words.outputs.list, ctx.out },
          env = { PATH = '/usr/bin:/bin' },
        })
        return { list = ctx.out .. '/reversed.txt' }
      end,
    })
  end,
}
