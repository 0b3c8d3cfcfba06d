-- The cmd format exists for Windows only: refused here, with why.
return {
  inputs = { syslua = 'path:./vendor/syslua' },
  setup = function()
    require('syslua').setup()

    sys.build({
      id = 'cmd-script',
      create = function(_, ctx)
        ctx:script('cmd', 'ver')
        return { out = ctx.out }
      end,
    })
  end,
}
