-- syslua.environment.files: files by target path.
--
--   files.setup({
--     ['~/.gitconfig'] = { source = './gitconfig' },             -- a link to ./gitconfig
--     ['~/.config/app/config'] = { content = 'key=value' },      -- a managed file
--     ['~/.local/share/app/data'] = { content = 'x', mutable = true },
--   })
--
-- Each entry becomes a `file` declaration. An immutable `source` (the
-- default) is linked to, like the original's link into its store; a
-- mutable one is copied. Content is written either way; syslua keeps every
-- managed file as declared and shows and keeps edits made by hand
-- (`sys status`, `sys apply --force`).

local prio = require("syslua.priority")
local common = require("syslua.environment.common")

local M = {}
M.opts = {}

function M.setup(provided)
  if type(provided) ~= "table" then
    error("syslua.environment.files.setup expects { [target] = { source = ... | content = ... } }", 2)
  end
  M.opts = prio.merge(M.opts, provided)
  local refs = {}
  for _, target in ipairs(common.sorted_keys(provided)) do
    local opts = provided[target]
    if type(target) ~= "string" or type(opts) ~= "table" then
      error("syslua.environment.files.setup: each entry is [target path] = { source = ... | content = ... }", 2)
    end
    local source, content = opts.source, opts.content
    if source == nil and content == nil then
      error("File setup requires either a 'source' or 'content' option (for " .. target .. ")", 2)
    end
    if source ~= nil and content ~= nil then
      error("File setup takes a 'source' or a 'content' option, not both (for " .. target .. ")", 2)
    end
    local mutable = prio.unwrap(opts.mutable)
    if mutable ~= nil and type(mutable) ~= "boolean" then
      error("File setup: 'mutable' must be true or false (for " .. target .. ")", 2)
    end
    local props = { path = target, content = content, source = source }
    if source ~= nil and not mutable then props.link = true end
    refs[#refs + 1] = file(common.file_defaults(props))
  end
  return refs
end

return M
