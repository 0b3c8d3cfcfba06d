-- syslua.lib.fetch_url describes a verified download as a build; a second
-- build takes it as an input and unpacks the file it provides.
local syslua = require('syslua')

local archive = syslua.lib.fetch_url({
  url = 'https://downloads.example.net/widget/widget-1.2.tar.xz',
  sha256 = '5f2b0a8e7c41d9936e0b7c7e58a0b1f0c9d9e3a4b6f1c2d3e4f5a6b7c8d9e0f1',
})

sys.build({
  id = 'unpack-widget',
  inputs = { archive = archive },
  create = function(inputs, ctx)
    ctx:exec({ bin = 'tar', args = { '-xJf', inputs.archive.outputs.out, '-C', ctx.out } })
    return { out = ctx.out }
  end,
})
