-- syslua prelude: runs first in every fresh LuaJIT state.
--
-- It builds the sandbox the config runs in, the declaration functions
-- (file, exec, apply, env, package, os_package, user, archive, defaults), `lib` and `sys`, and
-- returns a few private hooks to the Python side. Nothing here touches the
-- machine: each declaration is encoded as JSON the moment it is made (so a
-- table mutated afterwards cannot change what was declared) and the whole
-- list is handed to Python once the config has run.
--
-- Private state lives in upvalues of this chunk; the config cannot reach it
-- because `debug` is reduced to `getinfo` and `traceback`.

local cfg = ...

local io_open, stderr = io.open, io.stderr
local getinfo, traceback, sethook = debug.getinfo, debug.traceback, debug.sethook
local getlocal, getupvalue = debug.getlocal, debug.getupvalue
local concat, sformat, sgsub, ssub, sbyte, sfind = table.concat, string.format, string.gsub, string.sub, string.byte, string.find
local type, pairs, ipairs, tostring, select, error, setmetatable, getmetatable, rawget, next, floor =
      type, pairs, ipairs, tostring, select, error, setmetatable, getmetatable, rawget, next, math.floor
local huge = math.huge
local unpack = unpack

-- Priorities and key names are defined once, in Python
-- (syslua/eval/constants.py), and handed over with `cfg`.
local function constant(group, name, kind)
  local v = cfg.constants[group][name]
  if type(v) ~= kind then
    error("syslua: the evaluator did not hand over " .. group .. "." .. name, 0)
  end
  return v
end
local FORCE = constant("priorities", "force", "number")
local BEFORE = constant("priorities", "before", "number")
local DEFAULT = constant("priorities", "default", "number")
local AFTER = constant("priorities", "after", "number")
local FROM_DEFAULTS = constant("priorities", "from_defaults", "number")
local KEY = {}  -- declaration type -> the property that names it
for kind in pairs(cfg.constants.keys) do KEY[kind] = constant("keys", kind, "string") end

local decls = {}        -- encoded declaration records, in evaluation order
local chunk_paths = {}  -- "#n" -> file path (chunks get short names: see chunkname)
local nchunks = 0
local inputs = {}       -- config files read (path -> true), in `input_list` order
local input_list = {}
local defaults_by_source = {} -- chunk source -> { type -> { prop -> value } }
local seq = 0

-- LuaJIT shortens long chunk names in error messages ("...long/dir/sys.lua"),
-- so every file is loaded as "@#n" and mapped back to its path here and in Python.
local function chunkname(path)
  nchunks = nchunks + 1
  local id = "#" .. nchunks
  chunk_paths[id] = path
  return "@" .. id
end

local function source_path(src)
  if ssub(src, 1, 1) == "@" then
    local id = ssub(src, 2)
    return chunk_paths[id] or id
  end
  return nil
end

local function record_input(path)
  if not inputs[path] then
    inputs[path] = true
    input_list[#input_list + 1] = path
  end
end

-- For the evaluation cache (manifest/evalcache.py): environment variables
-- read, paths looked for and not there, and what the cache cannot see.
local env_read, env_list = {}, {}
local absent, absent_list = {}, {}
local unseen, unseen_list = {}, {}
local function record_once(set, list, value)
  if not set[value] then
    set[value] = true
    list[#list + 1] = value
  end
end
local function record_env(name) record_once(env_read, env_list, name) end
local function record_absent(path) record_once(absent, absent_list, path) end
local function record_unseen(what) record_once(unseen, unseen_list, what) end

------------------------------------------------------------------------------
-- JSON encoding of declared values
------------------------------------------------------------------------------

local PRIO = {}   -- metatable of priority wrappers
local REF = {}    -- metatable of references returned by declarations

local escapes = { ['"'] = '\\"', ['\\'] = '\\\\', ['\b'] = '\\b', ['\f'] = '\\f',
                  ['\n'] = '\\n', ['\r'] = '\\r', ['\t'] = '\\t' }
local function escape_char(c)
  return escapes[c] or sformat("\\u%04x", sbyte(c))
end
-- Quoting is the hot spot of evaluation: keys and common values repeat, so
-- they are cached; other strings are scanned with a byte loop (which LuaJIT
-- compiles) and only those that need escaping go through gsub.
local quoted = setmetatable({}, { __mode = "k" })
local nquoted = 0
local function quote(s)
  local q = quoted[s]
  if q then return q end
  local clean = true
  for i = 1, #s do
    local b = sbyte(s, i)
    if b < 32 or b == 34 or b == 92 or b == 127 then clean = false; break end
  end
  if clean then q = '"' .. s .. '"' else q = '"' .. sgsub(s, '[%c"\\]', escape_char) .. '"' end
  if #s <= 24 and nquoted < 100000 then
    quoted[s] = q
    nquoted = nquoted + 1
  end
  return q
end

local encode -- forward
local ref_names -- forward: defined with the references below

-- `trail` holds the keys leading to the value being encoded; it is turned
-- into text ("file.props.mode") only when there is an error to report.
local function where(trail, depth)
  return concat(trail, ".", 1, depth)
end

local function encode_table(t, buf, depth, trail)
  local mt = getmetatable(t)
  if mt == PRIO then
    local cached = rawget(t, "json")
    if cached then
      buf[#buf + 1] = cached
      return
    end
    buf[#buf + 1] = '{"__syslua_prio":' .. sformat("%d", t.__prio) .. ',"__syslua_v":'
    encode(t.value, buf, depth, trail)
    buf[#buf + 1] = '}'
    return
  end
  if mt == REF then
    buf[#buf + 1] = '{"__syslua_refs":['
    for i, r in ipairs(ref_names(t)) do
      if i > 1 then buf[#buf + 1] = ',' end
      buf[#buf + 1] = quote(r)
    end
    buf[#buf + 1] = ']}'
    return
  end
  local n = #t
  if n > 0 then
    local count = 0
    for _ in pairs(t) do count = count + 1 end
    if count ~= n then
      error(where(trail, depth) .. ": a table mixes list items and named fields", 0)
    end
    buf[#buf + 1] = '['
    for i = 1, n do
      if i > 1 then buf[#buf + 1] = ',' end
      encode(t[i], buf, depth, trail)
    end
    buf[#buf + 1] = ']'
    return
  end
  if next(t) == nil then
    buf[#buf + 1] = '{}'
    return
  end
  buf[#buf + 1] = '{'
  local first = true
  for k, v in pairs(t) do
    if type(k) ~= "string" then
      error(where(trail, depth) .. ": table keys must be strings or a list 1..n, found key " .. tostring(k), 0)
    end
    if not first then buf[#buf + 1] = ',' end
    first = false
    buf[#buf + 1] = quote(k)
    buf[#buf + 1] = ':'
    trail[depth + 1] = k
    encode(v, buf, depth + 1, trail)
  end
  buf[#buf + 1] = '}'
end

encode = function(v, buf, depth, trail)
  if depth > 64 then
    error(where(trail, depth) .. ": tables nested deeper than 64 levels (is a table inside itself?)", 0)
  end
  local tv = type(v)
  if tv == "string" then
    buf[#buf + 1] = quote(v)
  elseif tv == "number" then
    if v ~= v or v == huge or v == -huge then
      error(where(trail, depth) .. ": numbers must be finite", 0)
    end
    if v == floor(v) and v > -2^53 and v < 2^53 then
      buf[#buf + 1] = sformat("%d", v)
    else
      buf[#buf + 1] = sformat("%.17g", v)
    end
  elseif tv == "boolean" then
    buf[#buf + 1] = v and "true" or "false"
  elseif tv == "table" then
    encode_table(v, buf, depth, trail)
  elseif tv == "nil" then
    buf[#buf + 1] = "null"
  else
    error(where(trail, depth) .. ": a " .. tv .. " cannot be a property value", 0)
  end
end

local function to_json(v, name)
  local buf = {}
  encode(v, buf, 1, { name })
  return concat(buf)
end

------------------------------------------------------------------------------
-- Declarations
------------------------------------------------------------------------------

-- The frame of the config line that made the declaration: skip frames that
-- belong to this prelude so wrappers (env, package's __call) report the user.
local PRELUDE_SOURCE = getinfo(1, "S").source
-- Frames of syslua's own `require('syslua')` library are skipped too, so a
-- declaration made by syslua.pkgs or syslua.groups is located at the
-- config line that called it.
local LIBRARY_DIR = cfg.lua_dir .. "/syslua/"
local function in_library(src)
  local path = source_path(src)
  return path ~= nil and ssub(path, 1, #LIBRARY_DIR) == LIBRARY_DIR
end

-- The innermost frame of the user's code from `level` up: of this thread, or
-- of the coroutine `co` (a config's chunk runs in one, see `guarded`).
local function caller(level, co)
  while true do
    local info
    if co then info = getinfo(co, level, "Sl") else info = getinfo(level, "Sl") end
    if not info then return "=?", 0 end
    if info.source ~= PRELUDE_SOURCE and info.what ~= "C" and not in_library(info.source) then
      return info.source, info.currentline
    end
    level = level + 1
  end
end

local function where_of(src, line)
  local path = source_path(src)
  if path then return path .. ":" .. line end
  return "[string]:" .. line
end

-- Raise an error located at the config line that called into the prelude.
local function fail(msg)
  local src, line = caller(2)
  error(where_of(src, line) .. ": " .. msg, 0)
end

-- A reference names what a declaration made: one "type#key" (the common
-- case, kept as kind and key so no string is built unless it is used) or,
-- for env{} with several variables, a list.
local function make_ref(refs, records)
  return setmetatable({ __refs = refs, __records = records }, REF)
end

local function make_ref1(kind, key, rec)
  return setmetatable({ __kind = kind, __key = key, __rec = rec }, REF)
end

ref_names = function(r)
  local refs = rawget(r, "__refs")
  if refs then return refs end
  return { rawget(r, "__kind") .. "#" .. rawget(r, "__key") }
end

local function ref_records(r)
  return rawget(r, "__records") or { rawget(r, "__rec") }
end

local function unwrap_whole(kind, spec)
  local prio
  if getmetatable(spec) == PRIO then
    prio = spec.__prio
    spec = spec.value
  end
  if type(spec) ~= "table" or getmetatable(spec) ~= nil then
    fail(kind .. " expects a table of properties, e.g. " .. kind .. " { ... }, got " .. type(spec))
  end
  return spec, prio
end

local function add_record(kind, src, line, prio, props_json)
  seq = seq + 1
  local rec = { t = kind, s = src, l = line, q = seq, w = prio, p = props_json }
  decls[#decls + 1] = rec
  return rec
end

local function with_defaults(kind, src, spec)
  local d = defaults_by_source[src] and defaults_by_source[src][kind]
  if not d then return spec end
  local props = {}
  for k, v in pairs(spec) do props[k] = v end
  for k, wrapped in pairs(d) do
    if props[k] == nil then props[k] = wrapped end
  end
  return props
end

local function declare(kind)
  local key_name = KEY[kind]
  return function(spec)
    local props, prio = unwrap_whole(kind, spec)
    local src, line = caller(3)
    local key = props[key_name]
    if key == nil then
      fail(kind .. ": missing required property `" .. key_name .. "`")
    end
    if type(key) ~= "string" then
      fail(kind .. ": `" .. key_name .. "` must be a string, got " .. type(key))
    end
    props = with_defaults(kind, src, props)
    local ok, json = pcall(to_json, props, kind)
    if not ok then fail(json) end
    local rec = add_record(kind, src, line, prio, json)
    return make_ref1(kind, key, rec)
  end
end

-- `env { NAME = value, ... }`: one item per variable, named by it.
local function declare_env(kind)
  return function(spec)
    local vars, prio = unwrap_whole(kind, spec)
    local src, line = caller(3)
    local names = {}
    for name in pairs(vars) do
      if type(name) ~= "string" then
        fail(kind .. ": variable names must be strings, got " .. type(name))
      end
      names[#names + 1] = name
    end
    table.sort(names)
    local refs, records = {}, {}
    for _, name in ipairs(names) do
      local ok, json = pcall(to_json, { [KEY[kind]] = name, value = vars[name] }, kind .. "." .. name)
      if not ok then fail(json) end
      records[#records + 1] = add_record(kind, src, line, prio, json)
      refs[#refs + 1] = kind .. "#" .. name
    end
    return make_ref(refs, records)
  end
end

local function declare_defaults(spec)
  if type(spec) ~= "table" or getmetatable(spec) ~= nil then
    fail("defaults expects a table such as defaults { file = { owner = ... } }")
  end
  local src, line = caller(2)
  local mine = defaults_by_source[src] or {}
  for kind, props in pairs(spec) do
    if type(props) ~= "table" then
      fail("defaults: `" .. tostring(kind) .. "` must be a table of properties")
    end
    local ok, json = pcall(to_json, { [KEY.defaults] = kind, props = props }, "defaults." .. tostring(kind))
    if not ok then fail(json) end
    add_record("defaults", src, line, nil, json)
    -- Stored wrapped once: at FROM_DEFAULTS, weaker than lib.mkDefault, so a
    -- file-wide default yields to an explicit fallback on the property.
    local merged = {}
    for k, v in pairs(mine[kind] or {}) do merged[k] = v end
    for k, v in pairs(props) do
      local wrapped = setmetatable({ __prio = FROM_DEFAULTS, value = v }, PRIO)
      if type(v) ~= "table" then
        -- The same default is encoded into every declaration: do it once.
        wrapped.json = '{"__syslua_prio":' .. sformat("%d", FROM_DEFAULTS) .. ',"__syslua_v":'
          .. to_json(v, "defaults") .. '}'
      end
      merged[k] = wrapped
    end
    mine[kind] = merged
  end
  defaults_by_source[src] = mine
end

------------------------------------------------------------------------------
-- lib: priorities and fetch descriptors
------------------------------------------------------------------------------

local lib = {}

local function wrap(prio, v, name)
  if getmetatable(v) == PRIO then
    fail(name .. ": the value already has a priority")
  end
  if getmetatable(v) == REF then
    -- lib.mkForce(file { ... }): the whole declaration takes the priority.
    for _, rec in ipairs(ref_records(v)) do rec.w = prio end
    return v
  end
  if v == nil then fail(name .. ": a value is required") end
  return setmetatable({ __prio = prio, value = v }, PRIO)
end

function lib.mkForce(v) return wrap(FORCE, v, "lib.mkForce") end
function lib.mkBefore(v) return wrap(BEFORE, v, "lib.mkBefore") end
function lib.mkDefault(v) return wrap(DEFAULT, v, "lib.mkDefault") end
function lib.mkAfter(v) return wrap(AFTER, v, "lib.mkAfter") end
function lib.mkOrder(n, v)
  if type(n) ~= "number" or n ~= floor(n) or n < 0 then
    fail("lib.mkOrder: the priority must be a non-negative integer, got " .. tostring(n))
  end
  return wrap(n, v, "lib.mkOrder")
end

local function fetch_descriptor(name, kind, spec, fields)
  if type(spec) ~= "table" then
    fail(name .. " expects named fields, e.g. " .. name .. "{ " .. fields[1] .. " = ... }")
  end
  local allowed = {}
  for _, f in ipairs(fields) do allowed[f] = true end
  for k in pairs(spec) do
    if not allowed[k] then
      fail(name .. ": unknown field `" .. tostring(k) .. "` (fields: " .. concat(fields, ", ") .. ")")
    end
  end
  local d = { fetch = kind }
  for _, f in ipairs(fields) do
    local v = spec[f]
    if v ~= nil and type(v) ~= "string" then
      fail(name .. ": `" .. f .. "` must be a string")
    end
    d[f] = v
  end
  return d
end

function lib.fetchUrl(spec)
  local d = fetch_descriptor("lib.fetchUrl", "url", spec, { "url", "sha256" })
  if not d.url then fail("lib.fetchUrl: `url` is required") end
  if not d.sha256 then fail("lib.fetchUrl: `sha256` is required (the download is verified before use)") end
  return d
end

function lib.fetchGit(spec)
  local d = fetch_descriptor("lib.fetchGit", "git", spec, { "url", "rev" })
  if not d.url then fail("lib.fetchGit: `url` is required") end
  if not d.rev then fail("lib.fetchGit: `rev` is required (a commit to check out exactly)") end
  return d
end

function lib.fetchGitHub(spec)
  local d = fetch_descriptor("lib.fetchGitHub", "github", spec, { "owner", "repo", "tag", "asset", "sha256" })
  for _, f in ipairs({ "owner", "repo", "tag", "asset", "sha256" }) do
    if not d[f] then fail("lib.fetchGitHub: `" .. f .. "` is required") end
  end
  return d
end

------------------------------------------------------------------------------
-- sys: facts, data and file reading
------------------------------------------------------------------------------

local function expand(path)
  if ssub(path, 1, 1) == "~" and (#path == 1 or ssub(path, 2, 2) == "/") then
    return cfg.home .. ssub(path, 2)
  end
  if ssub(path, 1, 1) ~= "/" then
    return cfg.manifest_dir .. "/" .. path
  end
  return path
end

local function read_file(path)
  local full = expand(path)
  local f, err = io_open(full, "rb")
  if not f then
    record_absent(full)  -- a config may catch this: the file appearing is a change
    return nil, err
  end
  local data = f:read("*a")
  f:close()
  record_input(full)
  return data
end

local sys = {}
for k, v in pairs(cfg.core) do sys[k] = v end
sys.facts = cfg.facts
sys.data = cfg.data
sys.dir = cfg.manifest_dir
-- The directory of the file being evaluated (sys.dir, kept here too so a
-- config that assigns sys.dir does not move sys.path.resolve).
local current_dir = cfg.manifest_dir
-- Where packages are linked (its bin/ is what syslua puts on PATH).
sys.profile = cfg.profile_dir

------------------------------------------------------------------------------
-- sys.build / sys.bind: low-level primitives whose actions are recorded now
-- and performed at apply time (placeholders are resolved then). The
-- callbacks have the original sys.lua's signatures:
--   build: create(inputs, ctx)
--   bind:  create(inputs, ctx), update(outputs, inputs, ctx),
--          destroy(outputs, ctx), check(outputs, inputs, ctx) -> { drifted, message }
------------------------------------------------------------------------------

local SCRIPT_FORMATS = { shell = "/bin/sh", bash = "/bin/bash" }
local WINDOWS_FORMATS = { powershell = true, cmd = true }

-- Methods added with sys.register_build_ctx_method / sys.register_bind_ctx_method.
local ctx_methods = { ["sys.build"] = {}, ["sys.bind"] = {} }
local BUILTIN_CTX = { exec = true, fetch_url = true, script = true, out = true }

local function action_ctx(kind)
  local actions = {}
  local scripts = {}  -- script file names used in this phase
  local ctx = { out = "$${out}" }
  local function add(action)
    actions[#actions + 1] = action
    return #actions
  end
  function ctx:exec(spec)
    if type(spec) == "string" then
      spec = { bin = "/bin/sh", args = { "-c", spec } }
    end
    if type(spec) ~= "table" or type(spec.bin) ~= "string" then
      fail(kind .. ": ctx:exec expects a command string or { bin = \"...\", args = {...}, env = {...}, cwd = \"...\" }")
    end
    local n = add({ kind = "exec", bin = spec.bin, args = spec.args or {}, env = spec.env or {}, cwd = spec.cwd })
    return "$${action:" .. n .. ":stdout}"
  end
  function ctx:fetch_url(url, sha256)
    if type(url) ~= "string" or type(sha256) ~= "string" then
      fail(kind .. ": ctx:fetch_url expects (url, sha256)")
    end
    -- (a placeholder, another build's output, is checked when it is filled in)
    if not sfind(sha256, "$${", 1, true) and not (#sha256 == 64 and sfind(sha256, "^%x+$")) then
      fail(kind .. ": ctx:fetch_url: sha256 must be 64 hexadecimal digits, got '" .. sha256 .. "'")
    end
    local n = add({ kind = "fetch", url = url, sha256 = sha256 })
    return "$${action:" .. n .. ":path}"
  end
  function ctx:script(format, content, opts)
    if WINDOWS_FORMATS[format] then
      fail(kind .. ": ctx:script: the " .. format .. " format runs only on Windows; on "
        .. cfg.core.os .. " the format must be 'shell' or 'bash'")
    end
    if not SCRIPT_FORMATS[format] then
      fail(kind .. ": ctx:script: format must be 'shell' or 'bash' ('powershell' and 'cmd' on Windows), got "
        .. (type(format) == "string" and ("'" .. format .. "'") or type(format)))
    end
    if type(content) ~= "string" then fail(kind .. ": ctx:script: the script content must be a string") end
    if opts ~= nil and type(opts) ~= "table" then fail(kind .. ": ctx:script: options must be a table such as { name = \"build\" }") end
    local name = opts and opts.name
    if name == nil then
      local i = #scripts + 1
      name = "script_" .. i
      while scripts[name] do i = i + 1; name = "script_" .. i end
    elseif type(name) ~= "string" or not sfind(name, "^[%w][%w._-]*$") then
      fail(kind .. ": ctx:script: `name` must be a file name (letters, digits, '.', '_', '-'), got " .. tostring(name))
    elseif scripts[name] then
      fail(kind .. ": ctx:script: a script named `" .. name .. "` was already written in this phase")
    end
    scripts[name] = true
    scripts[#scripts + 1] = name
    local file = name .. ".sh"
    local n = add({ kind = "script", interpreter = SCRIPT_FORMATS[format], name = file, content = content })
    return { stdout = "$${action:" .. n .. ":stdout}", path = "$${out}/tmp/" .. file }
  end
  for name, fn in pairs(ctx_methods[kind]) do ctx[name] = fn end
  return ctx, actions
end

local function register_ctx_method(kind, api)
  return function(name, fn)
    if type(name) ~= "string" or name == "" then fail(api .. " expects a method name") end
    if type(fn) ~= "function" then fail(api .. ": `" .. name .. "` must be a function(ctx, ...)") end
    if BUILTIN_CTX[name] then fail(api .. ": `" .. name .. "` is built in and cannot be replaced") end
    ctx_methods[kind][name] = fn
  end
end
sys.register_build_ctx_method = register_ctx_method("sys.build", "sys.register_build_ctx_method")
sys.register_bind_ctx_method = register_ctx_method("sys.bind", "sys.register_bind_ctx_method")

-- What a primitive's `inputs` become in its JSON: a reference returned by a
-- declaration is encoded by what it names and the outputs it hands over (so
-- a build's hash follows the builds it uses); `deps` collects the references
-- so the primitive runs after them.
local function encode_inputs(v, deps, depth)
  if depth > 64 then fail("inputs are nested deeper than 64 levels (is a table inside itself?)") end
  if type(v) ~= "table" then return v end
  if getmetatable(v) == REF then
    deps[#deps + 1] = v
    local outs = rawget(v, "outputs")
    return { ref = concat(ref_names(v), ", "), outputs = outs }
  end
  if getmetatable(v) == PRIO then return v end
  local out = {}
  for k, x in pairs(v) do out[k] = encode_inputs(x, deps, depth + 1) end
  return out
end

local PHASES = {
  build = { create = true },
  bind = { create = true, update = true, destroy = true, check = true },
}

local primitive_ids = { build = {}, bind = {} }  -- id -> { rec, ref }: `replace` and duplicates

local function record_primitive(kind, spec)
  local key_name = KEY[kind]
  local phases = PHASES[kind]
  if type(spec) ~= "table" then fail("sys." .. kind .. " expects a table { create = function(inputs, ctx) ... end, ... }") end
  for k in pairs(spec) do
    local ok = k == key_name or k == "inputs" or k == "depends_on" or k == "replace" or phases[k]
    if not ok then
      local fields = kind == "build" and "id, inputs, create, replace, depends_on"
        or "id, inputs, create, update, destroy, check, replace, depends_on"
      fail("sys." .. kind .. ": unknown field `" .. tostring(k) .. "` (fields: " .. fields .. ")")
    end
  end
  local id = spec[key_name]
  if id ~= nil and (type(id) ~= "string" or id == "") then
    fail("sys." .. kind .. ": `" .. key_name .. "` must be a non-empty string")
  end
  if type(spec.create) ~= "function" then fail("sys." .. kind .. ": `create` must be a function(inputs, ctx)") end
  for phase in pairs(phases) do
    if spec[phase] ~= nil and type(spec[phase]) ~= "function" then
      fail("sys." .. kind .. ": `" .. phase .. "` must be a function")
    end
  end
  if spec.replace ~= nil and type(spec.replace) ~= "boolean" then
    fail("sys." .. kind .. ": `replace` must be true or false")
  end
  local src, line = caller(3)
  local inputs = spec.inputs
  if type(inputs) == "function" then inputs = inputs() end
  if inputs == nil then inputs = {} end
  if type(inputs) ~= "table" or getmetatable(inputs) == REF then
    fail("sys." .. kind .. ": `inputs` must be a table or a function returning one, got " .. type(inputs))
  end
  local deps = {}
  local encoded_inputs = encode_inputs(inputs, deps, 1)
  local depends_on = spec.depends_on
  if #deps > 0 then
    local all = {}
    if getmetatable(depends_on) == REF or type(depends_on) == "string" then
      all[1] = depends_on
    elseif type(depends_on) == "table" then
      for _, d in ipairs(depends_on) do all[#all + 1] = d end
    end
    for _, d in ipairs(deps) do all[#all + 1] = d end
    depends_on = all
  end
  local ctx, actions = action_ctx("sys." .. kind)
  local outputs = spec.create(inputs, ctx)
  if outputs == nil then outputs = { out = ctx.out } end
  if type(outputs) ~= "table" then fail("sys." .. kind .. ": create must return a table of outputs (or nothing)") end
  local props = { inputs = encoded_inputs, actions = actions, outputs = outputs, depends_on = depends_on }
  -- Placeholders for this primitive's own outputs, handed to its other phases.
  local selfs = {}
  for name in pairs(outputs) do selfs[name] = "$${self:" .. name .. "}" end
  for _, phase in ipairs({ "update", "destroy", "check" }) do
    if phases[phase] and spec[phase] ~= nil then
      local pctx, pactions = action_ctx("sys." .. kind)
      local result
      if phase == "destroy" then
        result = spec[phase](selfs, pctx)
      else
        result = spec[phase](selfs, inputs, pctx)
      end
      props[phase] = pactions
      if phase == "update" and type(result) == "table" then props.update_outputs = result end
      if phase == "check" then
        if type(result) ~= "table" then
          fail("sys.bind: check must return a table { drifted = <boolean>, message = <string> }, got " .. type(result))
        end
        local d = result.drifted
        if type(d) ~= "boolean" and type(d) ~= "string" then
          fail("sys.bind: check: `drifted` must be a boolean (or the result of ctx:exec), got " .. type(d))
        end
        if result.message ~= nil and type(result.message) ~= "string" then
          fail("sys.bind: check: `message` must be a string")
        end
        props.check_result = { drifted = d, message = result.message }
      end
    end
  end
  if id == nil then
    -- Without an id the declaration is named by what it does, like the original's hash.
    local ok, body = pcall(to_json, props, "sys." .. kind)
    if not ok then fail(body) end
    id = kind .. "-" .. cfg.digest(body)
  end
  props[key_name] = id
  local ok, json = pcall(to_json, props, "sys." .. kind)
  if not ok then fail(json) end
  local seen = primitive_ids[kind][id]
  if seen then
    if seen.rec.p == json then return seen.ref end  -- the same declaration twice: one item
    if not spec.replace then
      fail("sys." .. kind .. ": a " .. kind .. " with id `" .. id .. "` is already declared at "
        .. where_of(seen.rec.s, seen.rec.l) .. "; use `replace = true` to override it, or another id")
    end
    seen.rec.dropped = true
  end
  local rec = add_record(kind, src, line, nil, json)
  local ref = make_ref1(kind, id, rec)
  local outs = {}
  for name in pairs(outputs) do outs[name] = "$${" .. kind .. ":@" .. id .. ":" .. name .. "}" end
  rawset(ref, "outputs", outs)
  rawset(ref, "id", id)
  -- The original's `ref.hash`. The content hash is known only once every
  -- declaration is in (sys plan shows it); until then the reference by id
  -- stands for it, so '$${build:' .. ref.hash .. ':out}' resolves as the
  -- SPEC's `$${build:<hash>:out}`.
  rawset(ref, "hash", "@" .. id)
  rawset(ref, "inputs", inputs)
  primitive_ids[kind][id] = { rec = rec, ref = ref }
  return ref
end

function sys.build(spec)
  return record_primitive("build", spec)
end

function sys.bind(spec)
  return record_primitive("bind", spec)
end

function sys.readFile(path)
  if type(path) ~= "string" then fail("sys.readFile expects a path string") end
  local data, err = read_file(path)
  if not data then fail("sys.readFile: cannot read " .. path .. ": " .. tostring(err)) end
  return data
end

-- sys.secret{ pass | command | file | env, whole? }: a secret read now, once
-- per evaluation, returned as a placeholder that stands for its value
-- (docs/secrets.md). The value never enters Lua, so a config cannot print it.
local py_secret = cfg.secret
cfg.secret = nil
function sys.secret(spec)
  if type(spec) ~= "table" then
    fail("sys.secret expects a table such as { pass = \"email/work\" }, got " .. type(spec))
  end
  local ok, value = py_secret(to_json(spec, "sys.secret"), cfg.manifest_dir)
  if not ok then fail(value) end
  return value
end

-- Split "a\0b\0c" (what the Python helpers return) into { "a", "b", "c" }.
local function split_nul(s)
  local out, pos = {}, 1
  if s == "" then return out end
  while true do
    local i = sfind(s, "\0", pos, true)
    if not i then out[#out + 1] = ssub(s, pos); return out end
    out[#out + 1] = ssub(s, pos, i - 1)
    pos = i + 1
  end
end

local py_read_dir, py_glob = cfg.read_dir, cfg.glob
cfg.read_dir, cfg.glob = nil, nil

function sys.readDir(path)
  if type(path) ~= "string" then fail("sys.readDir expects a path string") end
  local full = expand(path)
  local ok, data = py_read_dir(full)
  if not ok then fail("sys.readDir: cannot read " .. path .. ": " .. tostring(data)) end
  record_input(full)
  local parts, entries = split_nul(data), {}
  for i = 1, #parts, 2 do entries[#entries + 1] = { name = parts[i], type = parts[i + 1] } end
  return entries
end

function sys.glob(pattern)
  if type(pattern) ~= "string" or pattern == "" then fail("sys.glob expects a pattern string") end
  if ssub(pattern, 1, 1) == "~" and (#pattern == 1 or ssub(pattern, 2, 2) == "/") then
    pattern = cfg.home .. ssub(pattern, 2)
  end
  local ok, data, base = py_glob(pattern, cfg.manifest_dir)
  if not ok then fail("sys.glob: " .. pattern .. ": " .. tostring(data)) end
  record_input(base)
  return split_nul(data)
end

-- sys.path: a table of path helpers (the original sys.lua's), still callable
-- as sys.path(rel) for the absolute path of `rel` (relative to sys.dir, `~`
-- for the home). Only canonicalize looks at the file system.
local py_path = cfg.path_ops
cfg.path_ops = nil
-- A helper of fixed arity `n` takes its first n arguments and, like any Lua
-- function (and the original's), leaves the rest alone, so
-- sys.path.basename(s:gsub('/$', '')) works; join and resolve take them all.
local function path_args(name, n, ...)
  local count = select("#", ...)
  if n and count < n then
    fail("sys.path." .. name .. " expects " .. n .. " path string" .. (n > 1 and "s" or "") .. ", got " .. count .. " argument" .. (count == 1 and "" or "s"))
  end
  for i = 1, n or count do
    if type((select(i, ...))) ~= "string" then
      fail("sys.path." .. name .. " expects path strings, argument " .. i .. " is a " .. type((select(i, ...))))
    end
  end
end
local path_lib = {}
for _, name in ipairs({ "dirname", "basename", "extname", "normalize" }) do
  path_lib[name] = function(...)
    path_args(name, 1, ...)
    return py_path[name]((...))
  end
end
function path_lib.is_absolute(...)
  path_args("is_absolute", 1, ...)
  return ssub((...), 1, 1) == "/"
end
function path_lib.join(...)
  path_args("join", nil, ...)
  return py_path.join(...)
end
function path_lib.resolve(...)
  path_args("resolve", nil, ...)
  local parts = { ... }
  for i, p in ipairs(parts) do
    if ssub(p, 1, 1) == "~" and (#p == 1 or ssub(p, 2, 2) == "/") then parts[i] = cfg.home .. ssub(p, 2) end
  end
  return py_path.resolve(current_dir, unpack(parts))
end
function path_lib.relative(...)
  path_args("relative", 2, ...)
  return py_path.relative((select(1, ...)), (select(2, ...)))
end
function path_lib.split(...)
  path_args("split", 1, ...)
  return split_nul(py_path.split((...)))
end
function path_lib.canonicalize(...)
  path_args("canonicalize", 1, ...)
  local ok, result = py_path.canonicalize(expand((...)))
  if not ok then fail("sys.path.canonicalize: " .. tostring(result)) end
  return result
end
sys.path = setmetatable(path_lib, { __call = function(_, rel)
  if type(rel) ~= "string" then fail("sys.path expects a path string") end
  if ssub(rel, 1, 1) ~= "/" and ssub(rel, 1, 1) ~= "~" then return current_dir .. "/" .. rel end
  return expand(rel)
end })

-- sys.getenv: the value of an environment variable now, or nil.
local real_getenv = os.getenv
function sys.getenv(name)
  if type(name) ~= "string" then fail("sys.getenv expects a variable name string, got " .. type(name)) end
  record_env(name)
  return real_getenv(name)
end
sys.is_elevated = cfg.is_elevated == true

------------------------------------------------------------------------------
-- Lua 5.4 functions the original sys.lua's configs and modules use (we run
-- LuaJIT, which is Lua 5.1 with some 5.2 extensions).
------------------------------------------------------------------------------

local function lua54_compat()
  table.unpack = table.unpack or unpack
  table.pack = table.pack or function(...) return { n = select("#", ...), ... } end
  table.move = table.move or function(a1, f, e, t, a2)
    a2 = a2 or a1
    if e >= f then
      if t > e or t <= f or a1 ~= a2 then
        for i = 0, e - f do a2[t + i] = a1[f + i] end
      else
        for i = e - f, 0, -1 do a2[t + i] = a1[f + i] end
      end
    end
    return a2
  end
  math.type = math.type or function(x)
    if type(x) ~= "number" then return nil end
    -- LuaJIT has one number type: whole numbers in the integer range count as integers.
    if x == floor(x) and x >= -2^63 and x < 2^63 then return "integer" end
    return "float"
  end
  math.tointeger = math.tointeger or function(x)
    if math.type(x) == "integer" then return x end
    return nil
  end
  math.maxinteger = math.maxinteger or 9007199254740991  -- exact in a double: 2^53 - 1
  math.mininteger = math.mininteger or -9007199254740991
  math.ult = math.ult or function(m, n)
    if (m >= 0) == (n >= 0) then return m < n end
    return m >= 0
  end
  -- string.format("%q") of LuaJIT and 5.4 agree for strings; 5.4's `%i` is `%d`.
  local real_format = string.format
  string.format = function(fmt, ...)
    if type(fmt) == "string" and sfind(fmt, "%i", 1, true) then
      fmt = sgsub(fmt, "%%(%%?)([-#+ 0]*%d*%.?%d*)i", function(esc, flags)
        if esc == "%" then return "%%" .. flags .. "i" end
        return "%" .. flags .. "d"
      end)
    end
    return real_format(fmt, ...)
  end
end
lua54_compat()

------------------------------------------------------------------------------
-- The sandbox
------------------------------------------------------------------------------

-- Binary chunks (string.dump output) can break out of any Lua sandbox. A
-- refusal names what was refused and the line of the user's code that asked.
local real_load, real_loadstring = load, loadstring
local REFUSED = "is a binary chunk (bytecode); binary chunks are not allowed while evaluating"
local function is_binary(code)
  return type(code) == "string" and sbyte(code, 1) == 27
end
local function refused(what)
  local src, line = caller(3)
  return where_of(src, line) .. ": " .. what .. " " .. REFUSED
end
local function text_only(code)
  if is_binary(code) then return nil, refused("the string given to load") end
  return true
end
local load_user  -- the sandbox's loadstring (below): text only, never compiled by the JIT

-- `require` finds pkgs.* in the shipped catalogue; syslua.* in the shipped
-- lua/ directory first (our own modules with the original's interfaces);
-- everything else in the root config's lua/ directory, in the lua/
-- directories of its inputs (set once they are resolved, see hooks.setup),
-- beside the manifest, beside the root config, then in the shipped lua/
-- directory. The lua/ directories come first, as on the original's
-- package.path: an input checked out beside the config (`path:./syslua`)
-- must not be found as a module by its directory's name.
local input_lua_dirs = {}
local function module_searcher(name)
  local rel = sgsub(name, "%.", "/")
  local dirs
  if ssub(name, 1, 5) == "pkgs." then
    dirs = { cfg.pkgs_parent }
  else
    dirs = {}
    if name == "syslua" or ssub(name, 1, 7) == "syslua." then dirs[1] = cfg.lua_dir end
    dirs[#dirs + 1] = cfg.root_dir .. "/lua"
    for _, dir in ipairs(input_lua_dirs) do dirs[#dirs + 1] = dir end
    dirs[#dirs + 1] = cfg.manifest_dir
    if cfg.root_dir ~= cfg.manifest_dir then dirs[#dirs + 1] = cfg.root_dir end
    if dirs[1] ~= cfg.lua_dir then dirs[#dirs + 1] = cfg.lua_dir end
  end
  local tried = {}
  for _, dir in ipairs(dirs) do
    for _, pattern in ipairs({ "%s/%s.lua", "%s/%s/init.lua" }) do
      local path = sformat(pattern, dir, rel)
      local f = io_open(path, "rb")
      if f then
        local code = f:read("*a")
        f:close()
        record_input(path)
        if is_binary(code) then fail(path .. " " .. REFUSED) end
        local chunk, err = load_user(code, chunkname(path))
        if not chunk then error(err, 0) end
        return chunk
      end
      record_absent(path)
      tried[#tried + 1] = "\n\tno file '" .. path .. "'"
    end
  end
  return concat(tried)
end

package.loaders = { package.loaders[1], module_searcher }
-- For syslua.interpolation's f"{{name}}" without a values table: the
-- variables in scope at the config line that called into the library (its
-- upvalues, then its locals over them). Only the user's own frame is read;
-- `debug.getlocal` and `debug.getupvalue` themselves stay out of the sandbox.
package.loaded["syslua.caller_vars"] = function()
  for level = 2, 10000 do
    local info = getinfo(level, "Sf")
    if not info then return {} end
    if info.source ~= PRELUDE_SOURCE and info.what ~= "C" and not in_library(info.source) then
      local vars = {}
      for i = 1, 255 do
        local name, value = getupvalue(info.func, i)
        if not name then break end
        vars[name] = value
      end
      for i = 1, 255 do
        local name, value = getlocal(level, i)
        if not name then break end
        if ssub(name, 1, 1) ~= "(" then vars[name] = value end
      end
      return vars
    end
  end
  return {}
end
-- For syslua's own library (syslua.priority): the config line that called
-- into it, as { file = path, line = n }, or nil when there is none.
package.loaded["syslua.caller"] = function()
  local src, line = caller(2)
  local path = source_path(src)
  if not path or line == 0 then return nil end
  return { file = path, line = line }
end
package.path = ""
package.cpath = ""
package.loadlib = nil
package.loaded.python = nil
python = nil

local function read_only_open(path, mode)
  mode = mode or "r"
  if mode ~= "r" and mode ~= "rb" then
    fail("io.open: only reading is allowed while evaluating (mode '" .. tostring(mode) .. "'); run with --impure to write files")
  end
  local full = expand(path)
  local f, err = io_open(full, mode)
  if f then record_input(full) else record_absent(full) end
  return f, err
end

local function recorded_loadfile(path)
  local full = expand(path)
  local code, err = read_file(full)
  if not code then record_absent(full); return nil, err end
  if is_binary(code) then return nil, full .. " " .. REFUSED end
  return load_user(code, chunkname(full))
end

local jit_off = jit.off
-- Every chunk a config loads runs interpreted, so the watchdog's hook sees
-- it (see "Stopping a config" below).
local function interpreted(chunk, err)
  if chunk then jit_off(chunk, true) end
  return chunk, err
end
loadstring = function(code, name)
  local ok, err = text_only(code)
  if not ok then return nil, err end
  return interpreted(real_loadstring(code, name))
end
load_user = loadstring
load = function(chunk, name, ...)
  if type(chunk) == "function" then
    local parts = {}
    while true do
      local piece = chunk()
      if piece == nil or piece == "" then break end
      parts[#parts + 1] = piece
    end
    chunk = concat(parts)
  end
  local ok, err = text_only(chunk)
  if not ok then return nil, err end
  return interpreted(real_loadstring(chunk, name))
end

-- Time and randomness: the evaluation cache cannot see them, so a config
-- that calls them is evaluated every time.
local function unseen_call(fn, what)
  return function(...)
    record_unseen(what)
    return fn(...)
  end
end
math.random = unseen_call(math.random, "math.random()")
math.randomseed = unseen_call(math.randomseed, "math.randomseed()")

if not cfg.impure then
  package.preload.ffi = nil
  package.loaded.ffi = nil
  io = { open = read_only_open, lines = function(path, ...)
    if path == nil then fail("io.lines: a path is required while evaluating") end
    local f, err = read_only_open(path)
    if not f then fail(err) end
    return f:lines(...)
  end, type = io.type }
  os = { clock = unseen_call(os.clock, "os.clock()"), date = unseen_call(os.date, "os.date()"),
    difftime = os.difftime, time = unseen_call(os.time, "os.time()"),
    getenv = function(name)
      if type(name) == "string" then record_env(name) end
      return real_getenv(name)
    end }
  -- require("os") / package.loaded.io must not hand back the real libraries.
  package.loaded.io = io
  package.loaded.os = os
else
  local real_io = io
  io = setmetatable({ open = function(path, mode)
    local full = expand(path)
    local f, err = io_open(full, mode)
    if f and (mode == nil or mode == "r" or mode == "rb") then record_input(full) end
    return f, err
  end }, { __index = real_io })
  os.exit = nil
  os.setlocale = nil
end
loadfile = recorded_loadfile
dofile = function(path)
  local chunk, err = recorded_loadfile(path)
  if not chunk then fail(err) end
  return chunk()
end
debug = { getinfo = getinfo, traceback = traceback }
package.loaded.debug = debug

------------------------------------------------------------------------------
-- Stopping a config that runs too long, or on Ctrl-C
------------------------------------------------------------------------------

-- A count hook asks Python every WATCH_STEP VM instructions whether to stop
-- (the evaluation's time limit). Calling Python also lets Python run its
-- signal handlers, so Ctrl-C stops even `while true do end`: the exception
-- the handler raises is handed back to Python, which raises it again.
-- Compiled code never calls hooks, so code from a config or a module is
-- never compiled: every chunk loaded here has the JIT off for itself and
-- the functions it defines (the prelude's own code still is compiled; a
-- trace that reaches user code stops there). A config cannot turn it back
-- on: `jit` keeps only its read-only facts.
local WATCH_STEP = 10000
local real_pcall, real_xpcall, real_resume = pcall, xpcall, coroutine.resume
local create_thread, thread_status = coroutine.create, coroutine.status
local STOPPED = setmetatable({}, { __tostring = function() return "evaluation stopped" end })
local stopped_at = nil   -- "path:line" of the user's code when it was stopped
local stop_error = nil   -- what the Python check raised (a signal handler's exception)

local has_util, jit_util = real_pcall(require, "jit.util")
if not has_util then jit_util = nil end
jit = { os = jit.os, arch = jit.arch, version = jit.version, version_num = jit.version_num }
for name in pairs(package.loaded) do
  if ssub(name, 1, 4) == "jit." then package.loaded[name] = nil end
end
for name in pairs(package.preload) do
  if ssub(name, 1, 4) == "jit." then package.preload[name] = nil end
end
package.loaded.jit = jit

-- The innermost frame of the user's code (prelude frames are skipped).
local function user_frame()
  for level = 2, 10000 do
    local info = getinfo(level, "Sl")
    if not info then return nil end
    local path = info.source ~= PRELUDE_SOURCE and source_path(info.source)
    if path and info.currentline and info.currentline > 0 then
      return path .. ":" .. info.currentline
    end
  end
end

local function watchdog()
  if stopped_at == nil then
    local ok, stop = real_pcall(cfg.check)
    if ok and not stop then return end
    -- Lua could not make the call (no stack or memory left): the config's
    -- own error follows at its line; the check runs again at the next step.
    if not ok and type(stop) == "string" then return end
    if not ok then stop_error = stop end
    stopped_at = user_frame() or "?"
  end
  error(STOPPED, 0)
end

-- Once stopped, a config's pcall, xpcall or coroutine cannot catch the stop.
local function unless_stopped(...)
  if stopped_at ~= nil then error(STOPPED, 0) end
  return ...
end
pcall = function(...) return unless_stopped(real_pcall(...)) end
-- A stop is raised from inside the hook, where hooks are off: the config's
-- message handler must not run then (an endless one could not be stopped).
xpcall = function(f, handler, ...)
  return unless_stopped(real_xpcall(f, function(e)
    if stopped_at ~= nil then return e end
    return handler(e)
  end, ...))
end
coroutine.resume = function(...) return unless_stopped(real_resume(...)) end
print = function(...)
  record_unseen("print()")  -- a cached run would not print it
  local parts = {}
  for i = 1, select("#", ...) do parts[i] = tostring((select(i, ...))) end
  -- a secret's placeholder (sys.secret) prints as the rest of syslua shows it
  local text = concat(parts, "\t"):gsub("%$%${secret:%x+}", "(secret)")
  stderr:write(text, "\n")
end

REF.__tostring = function(r) return concat(ref_names(r), ", ") end
REF.__metatable = REF
PRIO.__metatable = PRIO

-- The declarations come from the registry of kinds (cfg.constants.declarations):
-- a global per kind, called with a table of properties, or, for env, a table
-- of variables. A kind named like one of Lua's own libraries (`package`) is
-- that library's __call.
for kind, form in pairs(cfg.constants.declarations) do
  local declaration = form == "variables" and declare_env(kind) or declare(kind)
  local existing = rawget(_G, kind)
  if type(existing) == "table" then
    setmetatable(existing, { __call = function(_, spec) return declaration(spec) end })
  else
    _G[kind] = declaration
  end
end
defaults = declare_defaults

-- systemd_unit { name, scope?, content | source, ensure?, enable?, subscribe? }:
-- the unit's file where its manager reads it (/etc/systemd/system/NAME.service,
-- or ~/.config/systemd/user/ in user scope) and the service, which restarts
-- when that file changes (docs/resources/service.md). Returns the service.
local UNIT_KEYS = { name = true, scope = true, content = true, source = true,
  ensure = true, enable = true, subscribe = true, mode = true }
local UNIT_SUFFIXES = { "service", "socket", "timer", "path", "target", "mount",
  "automount", "swap", "slice" }
function systemd_unit(spec)
  if type(spec) ~= "table" then
    fail("systemd_unit expects a table such as { name = \"backup\", content = [[...]] }, got " .. type(spec))
  end
  for k in pairs(spec) do
    if not UNIT_KEYS[k] then
      fail("systemd_unit: unknown property `" .. tostring(k) .. "` (it takes name, scope, "
        .. "content, source, mode, ensure, enable and subscribe)")
    end
  end
  local name = spec.name
  if type(name) ~= "string" or name == "" then fail("systemd_unit: missing required property `name`") end
  local scope = spec.scope or "system"
  if scope ~= "system" and scope ~= "user" then
    fail("systemd_unit: `scope` must be one of system, user; got " .. tostring(scope))
  end
  local unit = name .. ".service"
  for _, suffix in ipairs(UNIT_SUFFIXES) do
    if name:sub(-#suffix - 1) == "." .. suffix then unit = name end
  end
  local f = { content = spec.content, source = spec.source, mode = spec.mode }
  if scope == "user" then
    f.path = "~/.config/systemd/user/" .. unit
  else
    f.path = "/etc/systemd/system/" .. unit
    f.owner, f.group, f.mode = "root", "root", spec.mode or "0644"
  end
  file(f)
  return service { name = name, scope = scope, ensure = spec.ensure, enable = spec.enable,
    subscribe = spec.subscribe }
end
_G.lib = lib
_G.sys = sys

------------------------------------------------------------------------------
-- Hooks for Python
------------------------------------------------------------------------------

local hooks = {}

-- The text of an error value raised in the coroutine `co`, with the line of
-- the user's code it stopped at where the value does not carry one: a
-- table (`error({})`), nil, a message raised with level 0, out of memory.
local function error_text(e, co)
  local t = type(e)
  local where = where_of(caller(0, co))
  if t == "number" then e, t = tostring(e), "string" end
  if t == "string" then
    if sfind(e, "^[^\n]-:%d+: ") then return e end
    return where .. ": " .. e
  end
  local mt = getmetatable(e)
  local what
  if type(mt) == "table" and rawget(mt, "__tostring") then
    local ok, text = real_pcall(tostring, e)
    if ok and type(text) == "string" and text ~= "" then
      what = text
    else
      what = "error called with a " .. t .. " value whose __tostring failed"
        .. (ok and "" or (": " .. (type(text) == "string" and text or type(text))))
    end
  elseif e == nil then
    what = "error called with nil"
  else
    what = "error called with a " .. t .. " value"
  end
  return where .. ": " .. what
end

-- The line of the main chunk's `return` with values: the last one in the
-- chunk's own bytecode (LuaJIT 2.1 opcodes RETM, RET, RET1, CALLMT, CALLT),
-- or nil when that cannot be read.
local RETURNS = { [67] = true, [68] = true, [73] = true, [74] = true, [76] = true }
local function return_line(chunk)
  local util = jit_util
  if not util or jit.version_num < 20100 then return nil end
  local line
  local n = util.funcinfo(chunk).bytecodes or 0
  for pc = 1, n do
    local ins = util.funcbc(chunk, pc)
    if ins and RETURNS[ins % 256] then line = util.funcinfo(chunk, pc).currentline end
  end
  return line
end

-- LuaJIT puts a multi-line `return { ... }` at its last line: the line of
-- the `return` keyword is the one to show. `code` is the chunk's source.
local function statement_line(code, line)
  if not line or type(code) ~= "string" then return line end
  local lines, n = {}, 0
  for l in (code .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    lines[n] = l
    if n >= line then break end
  end
  for i = math.min(line, n), 1, -1 do
    if lines[i]:match("^%s*return%f[^%w_]") then return i end
  end
  return line
end

-- A config declares; its main chunk returns nothing, or the original
-- sys.lua's entry table { inputs = ..., setup = function(inputs) ... end }.
local function returned_error(chunk, path, value, code, count)
  local line = statement_line(code, return_line(chunk))
  local what
  if count then
    what = "a config's main chunk returned " .. count .. " values; a config declares, "
      .. "it returns nothing or the entry table { inputs = { ... }, setup = function(inputs) ... end }"
  elseif type(value) == "table" then
    what = "a config's main chunk returned a table without a `setup` function; a config declares, "
      .. "it returns nothing or the entry table { inputs = { ... }, setup = function(inputs) ... end }"
  else
    what = "a config's main chunk returned a " .. type(value) .. " value; a config declares, "
      .. "it returns nothing or the entry table { inputs = { ... }, setup = function(inputs) ... end }"
  end
  return (line and (path .. ":" .. line .. ": ") or "") .. what
end

local function pack(...) return { n = select("#", ...), ... } end

local UNKNOWN = "the config raised an error that has no message (out of memory or stack?)"

-- Run `fn(...)` under the watchdog. Returns true and what fn returned (packed);
-- or false, a message and a traceback; or "stopped", where it stopped
-- ("path:line") and what the Python check raised, if it raised.
--
-- fn runs in a coroutine of its own rather than under xpcall: when Lua is
-- called from Python, LuaJIT drops the answer of an xpcall handler that
-- fails for want of stack (a stack overflow left `Error: stack overflow`
-- with no line), while a dead coroutine keeps its frames to read after the
-- fact, at no cost when nothing failed. LuaJIT's hooks are global, so the
-- watchdog covers the coroutine and any the config makes.
local function guarded(fn, ...)
  local co = create_thread(fn)
  sethook(watchdog, "", WATCH_STEP)
  local results = pack(real_resume(co, ...))
  sethook()
  if stopped_at ~= nil then return "stopped", stopped_at, stop_error end
  local alive = thread_status(co) ~= "dead"
  if results[1] and not alive then return true, results end
  local tb_ok, tb = real_pcall(traceback, co, "", 0)
  tb = tb_ok and type(tb) == "string" and tb or ""
  if alive then
    return false, where_of(caller(0, co)) .. ": coroutine.yield outside of a coroutine: "
      .. "a config's main chunk and its setup cannot yield", tb
  end
  local ok, text = real_pcall(error_text, results[2], co)
  if not ok or type(text) ~= "string" then
    text = type(results[2]) == "string" and results[2] or UNKNOWN
  end
  return false, text, tb
end

-- Entry tables returned by main chunks (the root config's and its inputs'
-- init.lua), by path, until their `setup` is called.
local entries = {}

-- The entry table a main chunk returned: "entry", its inputs as JSON and
-- the line of its `return`; true when it returned nothing; or false and a
-- message when it returned anything else.
local function entry_of(chunk, path, results, code)
  local value
  for i = 2, results.n do
    if results[i] ~= nil then
      if value ~= nil or i > 2 then return false, returned_error(chunk, path, results[i], code, results.n - 1) end
      value = results[i]
    end
  end
  if value == nil then return true end
  if type(value) ~= "table" or getmetatable(value) ~= nil or type(rawget(value, "setup")) ~= "function" then
    return false, returned_error(chunk, path, value, code)
  end
  local line = statement_line(code, return_line(chunk)) or 0
  local ins = rawget(value, "inputs")
  if ins ~= nil and (type(ins) ~= "table" or getmetatable(ins) ~= nil) then
    return false, path .. ":" .. line .. ": `inputs` must be a table of name = \"git:URL\" | \"path:DIR\" | { url = ... }, got " .. type(ins)
  end
  local ok, json = pcall(to_json, ins or {}, "inputs")
  if not ok then return false, path .. ":" .. line .. ": " .. json end
  entries[path] = value
  return "entry", json, line
end

-- Run a config chunk under the watchdog. Returns true; "entry", its inputs
-- (JSON) and the line of its `return` when it returned the entry table; or
-- false, a message and a traceback; or "stopped", where it stopped
-- ("path:line") and what the Python check raised, if it raised.
function hooks.run(code, path)
  if is_binary(code) then return false, path .. " " .. REFUSED, "" end
  local chunk, err = load_user(code, chunkname(path))
  if not chunk then return false, err, "" end
  record_input(path)
  local ok, a, b = guarded(chunk)
  if ok ~= true then return ok, a, b end
  local kind, json, line = entry_of(chunk, path, a, code)
  if kind == true then return true end
  if kind == false then return false, json, "" end
  return kind, json, line
end

-- sys.dir is the directory of the file being evaluated: an input's init.lua
-- sees its own directory, while its main chunk runs and while its setup does.
local smatch = string.match
local function in_dir_of(path, fn, ...)
  local saved, saved_current = sys.dir, current_dir
  current_dir = smatch(path, "^(.*)/[^/]*$") or current_dir
  sys.dir = current_dir
  local results = pack(fn(...))
  sys.dir, current_dir = saved, saved_current
  return unpack(results, 1, results.n)
end

-- Load an input's init.lua: "entry", its inputs (JSON) and line when it
-- returns an entry table; true when it returns nothing else worth calling
-- (a plain Lua file, as the original treats it); false etc. on an error.
function hooks.entry(path)
  local code, err = read_file(path)
  if not code then return false, path .. ": " .. tostring(err), "" end
  if is_binary(code) then return false, path .. " " .. REFUSED, "" end
  local chunk, lerr = load_user(code, chunkname(path))
  if not chunk then return false, lerr, "" end
  local ok, a, b = in_dir_of(path, guarded, chunk)
  if ok ~= true then return ok, a, b end
  local value = a[2]
  if type(value) ~= "table" or type(rawget(value, "setup")) ~= "function" then return true end
  local kind, json, line = entry_of(chunk, path, a, code)
  if kind == false then return false, json, "" end
  return kind, json, line
end

-- Once the inputs are resolved: put their lua/ directories on the require
-- path, call the inputs' setup functions (dependencies first), then the
-- root config's. `plan` = { lua_dirs = {...}, setups = { { path, inputs }... } },
-- the root config's entry last.
function hooks.setup(plan)
  for i, dir in ipairs(plan.lua_dirs) do input_lua_dirs[i] = dir end
  for _, s in ipairs(plan.setups) do
    local entry = entries[s.path]
    if entry then
      entries[s.path] = nil
      local ok, a, b = in_dir_of(s.path, guarded, entry.setup, s.inputs)
      if ok ~= true then return ok, a, b end
    end
  end
  return true
end

-- Everything declared, as one JSON document.
function hooks.export()
  local parts = {}
  for _, r in ipairs(decls) do
    if not r.dropped then parts[#parts + 1] = sformat('{"t":%s,"s":%s,"l":%d,"q":%d,"w":%s,"p":%s}',
      quote(r.t), quote(source_path(r.s) or r.s), r.l, r.q, r.w and sformat("%d", r.w) or "null", r.p)
    end
  end
  local ins = {}
  for i, p in ipairs(input_list) do ins[i] = quote(p) end
  local function quoted(list)
    local out = {}
    for i, v in ipairs(list) do out[i] = quote(v) end
    return concat(out, ",")
  end
  return '{"decls":[' .. concat(parts, ",") .. '],"inputs":[' .. concat(ins, ",")
    .. '],"env":[' .. quoted(env_list) .. '],"absent":[' .. quoted(absent_list)
    .. '],"uncacheable":[' .. quoted(unseen_list) .. ']}'
end

-- The chunk-name map, so Python can turn "#n:12: msg" into "path:12: msg".
function hooks.chunks()
  local parts = {}
  for id, path in pairs(chunk_paths) do parts[#parts + 1] = quote(id) .. ":" .. quote(path) end
  return "{" .. concat(parts, ",") .. "}"
end

return hooks
