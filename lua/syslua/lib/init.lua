-- syslua.lib: helpers of the original sys.lua's library.

local M = {}

--- The user's home directory.
function M.get_home()
  return (sys.getenv and sys.getenv("HOME")) or os.getenv("HOME")
end

--- A build that downloads `url`, checks it against `sha256` and keeps it in
--- the store; its output `out` is the file there.
function M.fetch_url(opts)
  if type(opts) ~= "table" then error("syslua.lib.fetch_url expects { url = ..., sha256 = ... }", 2) end
  if type(opts.url) ~= "string" then error("syslua.lib.fetch_url requires a 'url' option", 2) end
  if type(opts.sha256) ~= "string" then error("syslua.lib.fetch_url requires a 'sha256' option", 2) end
  return sys.build({
    inputs = { url = opts.url, sha256 = opts.sha256 },
    create = function(inputs, ctx)
      local name = inputs.url:match("([^/?#]+)[?#]?[^/]*$") or "download"
      local fetched = ctx:fetch_url(inputs.url, inputs.sha256)
      ctx:exec({ bin = "/bin/cp", args = { fetched, ctx.out .. "/" .. name } })
      return { out = ctx.out .. "/" .. name }
    end,
  })
end

return setmetatable(M, {
  __index = function(_, k)
    error("syslua.lib." .. tostring(k) .. " does not exist (syslua.lib has get_home and fetch_url)", 2)
  end,
})
