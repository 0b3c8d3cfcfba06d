-- The powershell format exists for Windows only: refused here, with why.
return {
  inputs = { syslua = 'path:./vendor/syslua' },
  setup = function()
    require('syslua').setup()

    sys.build({
      id = 'powershell-script',
      create = function(_, ctx)
        ctx:script('powershell', 'Get-Date')
        return { out = ctx.out }
      end,
    })
  end,
}
