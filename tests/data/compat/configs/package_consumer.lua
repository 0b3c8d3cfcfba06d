-- A package from the catalogue (ripgrep) and a bind that uses its command:
-- the bind (without an id) runs after the package, through the reference in
-- its inputs.
return {
  inputs = { syslua = 'path:./vendor/syslua' },
  setup = function()
    local syslua = require('syslua')
    local rg = syslua.pkgs.cli.ripgrep.setup()

    sys.bind({
      inputs = { rg = rg },
      create = function(inputs, ctx)
        local version = ctx:exec({ bin = inputs.rg.outputs.bin, args = { '--version' } })
        return { version = version }
      end,
      destroy = function() end,
    })
  end,
}
