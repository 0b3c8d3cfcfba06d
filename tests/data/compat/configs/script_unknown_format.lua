-- A script format syslua does not know: the config is refused at this line.
return {
  inputs = { syslua = 'path:./vendor/syslua' },
  setup = function()
    require('syslua').setup()

    sys.build({
      id = 'fish-script',
      create = function(_, ctx)
        ctx:script('fish', 'echo "not today"')
        return { out = ctx.out }
      end,
    })
  end,
}
