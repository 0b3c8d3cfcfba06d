-- Only a build, no bind: it leaves one text file in its store directory.
-- The command is given as one shell line (ctx:exec with a string).
return {
  inputs = {},
  setup = function()
    sys.build({
      id = 'release-notes-0.4',
      create = function(_, ctx)
        ctx:exec('printf "first light\\n" > ' .. ctx.out .. '/NOTES.txt')
        return { out = ctx.out }
      end,
    })
  end,
}
