-- An entry table whose setup declares nothing: the smallest config in the
-- original's shape. Planning shows no builds and no binds.
local config = {}

config.inputs = {}

function config.setup(inputs)
  assert(type(inputs) == 'table', 'setup is handed the resolved inputs')
end

return config
