-- syslua prelude: runs first in every fresh LuaJIT state.
--
-- It builds the sandbox the config runs in, the declaration functions
-- (file, exec, apply, env, package, os_package, user, defaults), `lib` and `sys`, and
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
local concat, sformat, sgsub, ssub, sbyte, sfind = table.concat, string.format, string.gsub, string.sub, string.byte, string.find
local type, pairs, ipairs, tostring, select, error, setmetatable, getmetatable, rawget, next, floor =
      type, pairs, ipairs, tostring, select, error, setmetatable, getmetatable, rawget, next, math.floor
local huge = math.huge

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
local function caller(level)
  while true do
    local info = getinfo(level, "Sl")
    if not info then return "=?", 0 end
    if info.source ~= PRELUDE_SOURCE and info.what ~= "C" then
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

local function declare_env(spec)
  local vars, prio = unwrap_whole("env", spec)
  local src, line = caller(3)
  local names = {}
  for name in pairs(vars) do
    if type(name) ~= "string" then
      fail("env: variable names must be strings, got " .. type(name))
    end
    names[#names + 1] = name
  end
  table.sort(names)
  local refs, records = {}, {}
  for _, name in ipairs(names) do
    local ok, json = pcall(to_json, { [KEY.env] = name, value = vars[name] }, "env." .. name)
    if not ok then fail(json) end
    records[#records + 1] = add_record("env", src, line, prio, json)
    refs[#refs + 1] = "env#" .. name
  end
  return make_ref(refs, records)
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
  if not f then return nil, err end
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

------------------------------------------------------------------------------
-- sys.build / sys.bind: low-level primitives whose actions are recorded now
-- and performed at apply time (placeholders are resolved then).
------------------------------------------------------------------------------

local function action_ctx(kind)
  local actions = {}
  local ctx = { out = "$${out}" }
  function ctx:exec(spec)
    if type(spec) ~= "table" or type(spec.bin) ~= "string" then
      fail(kind .. ": ctx:exec expects { bin = \"...\", args = {...}, env = {...}, cwd = \"...\" }")
    end
    actions[#actions + 1] = { kind = "exec", bin = spec.bin, args = spec.args or {}, env = spec.env or {}, cwd = spec.cwd }
    return "$${action:" .. #actions .. ":stdout}"
  end
  function ctx:fetch_url(url, sha256)
    if type(url) ~= "string" or type(sha256) ~= "string" then
      fail(kind .. ": ctx:fetch_url expects (url, sha256)")
    end
    actions[#actions + 1] = { kind = "fetch", url = url, sha256 = sha256 }
    return "$${action:" .. #actions .. ":path}"
  end
  return ctx, actions
end

local function record_primitive(kind, spec, phases)
  local key_name = KEY[kind]
  if type(spec) ~= "table" then fail("sys." .. kind .. " expects a table { " .. key_name .. " = ..., create = function ... }") end
  local id = spec[key_name]
  if type(id) ~= "string" or id == "" then fail("sys." .. kind .. ": `" .. key_name .. "` must be a non-empty string") end
  if type(spec.create) ~= "function" then fail("sys." .. kind .. ": `create` must be a function(inputs, ctx)") end
  for k in pairs(spec) do
    local ok = k == key_name or k == "inputs" or k == "depends_on"
    for _, p in ipairs(phases) do if k == p then ok = true end end
    if not ok then fail("sys." .. kind .. ": unknown field `" .. tostring(k) .. "`") end
  end
  local src, line = caller(3)
  local inputs = spec.inputs or {}
  local ctx, actions = action_ctx("sys." .. kind)
  local outputs = spec.create(inputs, ctx)
  if outputs == nil then outputs = { out = ctx.out } end
  if type(outputs) ~= "table" then fail("sys." .. kind .. ": create must return a table of outputs (or nothing)") end
  local props = { [key_name] = id, inputs = inputs, actions = actions, outputs = outputs, depends_on = spec.depends_on }
  -- Placeholders for this primitive's own outputs, handed to its other phases.
  local selfs = {}
  for name in pairs(outputs) do selfs[name] = "$${self:" .. name .. "}" end
  for _, phase in ipairs(phases) do
    if phase ~= "create" and spec[phase] ~= nil then
      if type(spec[phase]) ~= "function" then fail("sys." .. kind .. ": `" .. phase .. "` must be a function") end
      local pctx, pactions = action_ctx("sys." .. kind)
      local result = spec[phase](selfs, pctx, inputs)
      props[phase] = pactions
      if phase == "update" and type(result) == "table" then props.update_outputs = result end
    end
  end
  local ok, json = pcall(to_json, props, "sys." .. kind)
  if not ok then fail(json) end
  local rec = add_record(kind, src, line, nil, json)
  local ref = make_ref1(kind, id, rec)
  local outs = {}
  for name in pairs(outputs) do outs[name] = "$${" .. kind .. ":@" .. id .. ":" .. name .. "}" end
  rawset(ref, "outputs", outs)
  return ref
end

function sys.build(spec)
  return record_primitive("build", spec, { "create" })
end

function sys.bind(spec)
  return record_primitive("bind", spec, { "create", "update", "destroy", "check" })
end

function sys.readFile(path)
  if type(path) ~= "string" then fail("sys.readFile expects a path string") end
  local data, err = read_file(path)
  if not data then fail("sys.readFile: cannot read " .. path .. ": " .. tostring(err)) end
  return data
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

function sys.path(rel)
  if type(rel) ~= "string" then fail("sys.path expects a path string") end
  return expand(rel)
end

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

-- `require` finds pkgs.* in the shipped catalogue, everything else beside
-- the manifest, beside the root config, then in the shipped lua/ directory.
local function module_searcher(name)
  local rel = sgsub(name, "%.", "/")
  local dirs
  if ssub(name, 1, 5) == "pkgs." then
    dirs = { cfg.pkgs_parent }
  else
    dirs = { cfg.manifest_dir }
    if cfg.root_dir ~= cfg.manifest_dir then dirs[#dirs + 1] = cfg.root_dir end
    dirs[#dirs + 1] = cfg.lua_dir
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
      tried[#tried + 1] = "\n\tno file '" .. path .. "'"
    end
  end
  return concat(tried)
end

package.loaders = { package.loaders[1], module_searcher }
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
  if f then record_input(full) end
  return f, err
end

local function recorded_loadfile(path)
  local full = expand(path)
  local code, err = read_file(full)
  if not code then return nil, err end
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

if not cfg.impure then
  package.preload.ffi = nil
  package.loaded.ffi = nil
  io = { open = read_only_open, lines = function(path, ...)
    if path == nil then fail("io.lines: a path is required while evaluating") end
    local f, err = read_only_open(path)
    if not f then fail(err) end
    return f:lines(...)
  end, type = io.type }
  os = { clock = os.clock, date = os.date, difftime = os.difftime, getenv = os.getenv, time = os.time }
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
  local parts = {}
  for i = 1, select("#", ...) do parts[i] = tostring((select(i, ...))) end
  stderr:write(concat(parts, "\t"), "\n")
end

REF.__tostring = function(r) return concat(ref_names(r), ", ") end
REF.__metatable = REF
PRIO.__metatable = PRIO

file = declare("file")
exec = declare("exec")
apply = declare("apply")
user = declare("user")
os_package = declare("os_package")
env = declare_env
defaults = declare_defaults
-- `package` is also Lua's module library, so the declaration is its __call.
local declare_package = declare("package")
setmetatable(package, { __call = function(_, spec) return declare_package(spec) end })
_G.lib = lib
_G.sys = sys

------------------------------------------------------------------------------
-- Hooks for Python
------------------------------------------------------------------------------

local hooks = {}

-- The text of an error value. A string (or number) carries its location;
-- anything else (`error({})`, `error()`) is located here, at the line of the
-- user's code that raised it (the handler runs on top of that frame).
local function error_text(e)
  local t = type(e)
  if t == "string" or t == "number" then return tostring(e) end
  local mt = getmetatable(e)
  local what
  if type(mt) == "table" and rawget(mt, "__tostring") then
    what = tostring(e)
  elseif e == nil then
    what = "error called with nil"
  else
    what = "error called with a " .. t .. " value"
  end
  local src, line = caller(3)
  return where_of(src, line) .. ": " .. what
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

-- A config declares; its main chunk returns nothing. The original syslua's
-- entry form (a table with `inputs` and `setup`) is named as such.
local function returned_error(chunk, path, value)
  local line = return_line(chunk)
  local what
  if type(value) == "table" and (rawget(value, "setup") ~= nil or rawget(value, "inputs") ~= nil) then
    what = "a config's main chunk returned a table; the original sys.lua entry form "
      .. "({ inputs = ..., setup = ... }) is not supported yet"
  else
    what = "a config's main chunk returned a " .. type(value) .. " value; a config declares, it returns nothing"
  end
  return (line and (path .. ":" .. line .. ": ") or "") .. what
end

local function pack(...) return { n = select("#", ...), ... } end

-- Run a config chunk under the watchdog. Returns true; or false, a message
-- and a traceback; or "stopped", where it stopped ("path:line") and what the
-- Python check raised, if it raised.
function hooks.run(code, path)
  if is_binary(code) then return false, path .. " " .. REFUSED, "" end
  local chunk, err = load_user(code, chunkname(path))
  if not chunk then return false, err, "" end
  record_input(path)
  sethook(watchdog, "", WATCH_STEP)
  local results = pack(real_xpcall(chunk, function(e)
    if e == STOPPED then return STOPPED end
    return { msg = error_text(e), tb = traceback("", 2) }
  end))
  sethook()
  if stopped_at ~= nil then return "stopped", stopped_at, stop_error end
  local ok, msg = results[1], results[2]
  if not ok then return false, msg.msg, msg.tb end
  for i = 2, results.n do
    if results[i] ~= nil then return false, returned_error(chunk, path, results[i]), "" end
  end
  return true
end

-- Everything declared, as one JSON document.
function hooks.export()
  local parts = {}
  for i, r in ipairs(decls) do
    parts[i] = sformat('{"t":%s,"s":%s,"l":%d,"q":%d,"w":%s,"p":%s}',
      quote(r.t), quote(source_path(r.s) or r.s), r.l, r.q, r.w and sformat("%d", r.w) or "null", r.p)
  end
  local ins = {}
  for i, p in ipairs(input_list) do ins[i] = quote(p) end
  return '{"decls":[' .. concat(parts, ",") .. '],"inputs":[' .. concat(ins, ",") .. ']}'
end

-- The chunk-name map, so Python can turn "#n:12: msg" into "path:12: msg".
function hooks.chunks()
  local parts = {}
  for id, path in pairs(chunk_paths) do parts[#parts + 1] = quote(id) .. ":" .. quote(path) end
  return "{" .. concat(parts, ",") .. "}"
end

return hooks
