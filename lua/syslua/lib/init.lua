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

local FORMATS = { ["tar.gz"] = "-xzf", ["tar.xz"] = "-xJf", zip = true }

--- A build that unpacks `archive` (a path, for example the `out` of
--- M.fetch_url) of `format` 'tar.gz', 'tar.xz' or 'zip' into its output,
--- without the first `strip_components` directories of each path (tar only).
--- Its output `out` is the unpacked tree.
function M.extract(opts)
  if type(opts) ~= "table" then error("syslua.lib.extract expects { archive = ..., format = ... }", 2) end
  if type(opts.archive) ~= "string" then error("syslua.lib.extract requires an 'archive' option", 2) end
  if type(opts.format) ~= "string" then error("syslua.lib.extract requires a 'format' option", 2) end
  if not FORMATS[opts.format] then
    error("syslua.lib.extract: format must be 'tar.gz', 'tar.xz' or 'zip', got '" .. opts.format .. "'", 2)
  end
  local strip = opts.strip_components or 0
  if type(strip) ~= "number" or strip < 0 or strip % 1 ~= 0 then
    error("syslua.lib.extract: strip_components must be a whole number, got " .. tostring(strip), 2)
  end
  if strip > 0 and opts.format == "zip" then
    error("syslua.lib.extract: strip_components works with tar archives, not zip", 2)
  end
  return sys.build({
    inputs = { archive = opts.archive, format = opts.format, strip_components = strip },
    create = function(inputs, ctx)
      if inputs.format == "zip" then
        ctx:exec({ bin = "unzip", args = { "-q", inputs.archive, "-d", ctx.out } })
      else
        local args = { FORMATS[inputs.format], inputs.archive, "-C", ctx.out }
        if inputs.strip_components > 0 then
          args[#args + 1] = "--strip-components=" .. string.format("%d", inputs.strip_components)
        end
        ctx:exec({ bin = "tar", args = args })
      end
      return { out = ctx.out }
    end,
  })
end

return setmetatable(M, {
  __index = function(_, k)
    error("syslua.lib." .. tostring(k) .. " does not exist (syslua.lib has get_home, fetch_url and extract)", 2)
  end,
})
