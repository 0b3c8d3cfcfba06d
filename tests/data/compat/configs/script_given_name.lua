-- A script given a name is kept under that name.
return {
  inputs = { syslua = 'path:./vendor/syslua' },
  setup = function()
    require('syslua').setup()

    sys.build({
      id = 'named-script',
      create = function(_, ctx)
        ctx:script('shell', 'echo "assets ready"', { name = 'prepare-assets' })
        return { out = ctx.out }
      end,
    })
  end,
}
