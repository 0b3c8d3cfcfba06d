-- ctx:script with the `bash` format runs bash, not sh: arrays work.
return {
  inputs = { syslua = 'path:./vendor/syslua' },
  setup = function()
    require('syslua').setup()

    sys.build({
      id = 'bash-arrays',
      create = function(_, ctx)
        ctx:script('bash', [[
fruits=(apple pear plum)
echo "${#fruits[@]} fruits, the last is ${fruits[2]}"
]])
        return { out = ctx.out }
      end,
    })
  end,
}
