-- Unnamed scripts are numbered in the order they are written: four of them.
return {
  inputs = { syslua = 'path:./vendor/syslua' },
  setup = function()
    require('syslua').setup()

    sys.build({
      id = 'numbered-scripts',
      create = function(_, ctx)
        for _, word in ipairs({ 'north', 'east', 'south', 'west' }) do
          ctx:script('shell', 'echo ' .. word)
        end
        return { out = ctx.out }
      end,
    })
  end,
}
