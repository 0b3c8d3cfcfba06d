-- ctx:script with the `shell` format: the script's output and the path it
-- was written to come back as the result, and become the build's outputs.
return {
  inputs = { syslua = 'path:./vendor/syslua' },
  setup = function()
    require('syslua').setup()

    sys.build({
      id = 'shell-greeting',
      create = function(_, ctx)
        local result = ctx:script('shell', [[
name=world
echo "hello, $name"
echo "from a shell script"
]])
        return { out = ctx.out, said = result.stdout, script = result.path }
      end,
    })
  end,
}
