-- Several builds in one config, each using ctx:script a different way:
-- plain, named, two in a row, and bash. Their results feed their outputs.
return {
  inputs = { syslua = 'path:./vendor/syslua' },
  setup = function()
    require('syslua').setup()

    sys.build({
      id = 'scripts-plain',
      create = function(_, ctx)
        local r = ctx:script('shell', 'uname -s')
        return { out = ctx.out, kernel = r.stdout, script = r.path }
      end,
    })

    sys.build({
      id = 'scripts-named',
      create = function(_, ctx)
        local r = ctx:script('shell', 'echo 42', { name = 'collect-stats' })
        return { out = ctx.out, answer = r.stdout, script = r.path }
      end,
    })

    sys.build({
      id = 'scripts-pair',
      create = function(_, ctx)
        local one = ctx:script('shell', 'echo one')
        local two = ctx:script('shell', 'echo two')
        return { out = ctx.out, first = one.path, second = two.path }
      end,
    })

    sys.build({
      id = 'scripts-bash',
      create = function(_, ctx)
        local r = ctx:script('bash', 'declare -A size=([small]=1 [large]=9); echo "${size[large]}"')
        return { out = ctx.out, large = r.stdout }
      end,
    })
  end,
}
