-- syslua.priority: the original sys.lua's priority helpers, on syslua's own
-- priorities. A wrapped value is the same thing lib.mkForce & co. make, so
-- it can be given straight to a declaration (file, env, user...) and merges
-- there; `merge` resolves option tables in Lua, as the original's modules do.
--
--   force 50 < before 500 < plain 900 < default 1000 < after 1500: lower wins.

local M = {}

local PRIO = getmetatable(lib.mkForce(true))  -- the prelude's wrapper type
local MERGEABLE = {}                           -- marks priority.mergeable{...}
local merged_state = setmetatable({}, { __mode = "k" })  -- merge result -> its entries

M.PRIORITIES = { FORCE = 50, BEFORE = 500, PLAIN = 900, DEFAULT = 1000, AFTER = 1500 }
local P = M.PRIORITIES

local NAMES = { [50] = "force", [500] = "before", [900] = "plain", [1000] = "default", [1500] = "after" }

--- Where the caller of a priority helper is: { file, line }.
function M.get_source(level)
  local info = debug.getinfo((level or 2) + 1, "Sl")
  if not info then return { file = "unknown", line = 0 } end
  local file = info.short_src or info.source or "unknown"
  return { file = file, line = info.currentline or 0 }
end

--- The config line that called into the syslua library, or nil: where a
--- plain value given to a module's setup() was written.
function M.caller_source()
  local ok, where = pcall(require, "syslua.caller")
  if ok and type(where) == "function" then return where() end
  return nil
end

function M.wrap(value, priority, source)
  if type(priority) ~= "number" then error("syslua.priority.wrap: the priority must be a number", 2) end
  if getmetatable(value) == PRIO then value = value.value end
  return setmetatable({ __prio = priority, value = value, __source = source or M.get_source(3) }, PRIO)
end

function M.is_priority(v) return type(v) == "table" and getmetatable(v) == PRIO end
function M.unwrap(v) if M.is_priority(v) then return v.value end return v end
function M.get_priority(v) if M.is_priority(v) then return v.__prio end return P.PLAIN end

function M.force(v) return M.wrap(v, P.FORCE, M.get_source(2)) end
function M.before(v) return M.wrap(v, P.BEFORE, M.get_source(2)) end
function M.default(v) return M.wrap(v, P.DEFAULT, M.get_source(2)) end
function M.after(v) return M.wrap(v, P.AFTER, M.get_source(2)) end
function M.order(priority, v)
  if type(priority) ~= "number" then error("syslua.priority.order: the priority must be a number", 2) end
  return M.wrap(v, priority, M.get_source(2))
end

--- A key whose values are combined instead of chosen: joined with
--- `separator` (strings), or concatenated (lists). `default` joins at `after`.
function M.mergeable(opts)
  opts = opts or {}
  if type(opts) ~= "table" then error("syslua.priority.mergeable expects a table { separator?, default? }", 2) end
  return setmetatable({ separator = opts.separator, default = opts.default }, MERGEABLE)
end

function M.is_mergeable(v) return type(v) == "table" and getmetatable(v) == MERGEABLE end

local function same(a, b)
  if a == b then return true end
  if type(a) ~= "table" or type(b) ~= "table" then return false end
  for k, v in pairs(a) do if not same(v, b[k]) then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end

local function show(v)
  if type(v) == "string" then return string.format("%q", v) end
  if type(v) == "table" then return "{...}" end
  return tostring(v)
end

local function conflict(key, a, b)
  error(string.format([[
Priority conflict in '%s'

  Two values at the same priority (%s: %d):

  File: %s:%d
    %s = %s

  File: %s:%d
    %s = %s

  Resolution options:
  1. syslua.priority.force() to override explicitly
  2. syslua.priority.before() or after() to move one of them
  3. syslua.priority.order(n, value) for a custom priority
  4. remove one of the two declarations

  Priorities: force 50, before 500, plain 900, default 1000, after 1500]],
    key, NAMES[a.priority] or "custom", a.priority, a.source.file, a.source.line, key, show(a.value),
    b.source.file, b.source.line, key, show(b.value)), 0)
end

local function entry(v, seq, fallback_source)
  if M.is_priority(v) then
    return { value = v.value, priority = v.__prio, source = v.__source or fallback_source, seq = seq }
  end
  return { value = v, priority = P.PLAIN, source = fallback_source, seq = seq }
end

local function sorted(entries)
  table.sort(entries, function(a, b)
    if a.priority ~= b.priority then return a.priority < b.priority end
    return a.seq < b.seq
  end)
  return entries
end

local function combine(entries, config)
  sorted(entries)
  if config.separator then
    local parts = {}
    for _, e in ipairs(entries) do parts[#parts + 1] = tostring(e.value) end
    return table.concat(parts, config.separator)
  end
  local out = {}
  for _, e in ipairs(entries) do
    if type(e.value) == "table" then
      for _, x in ipairs(e.value) do out[#out + 1] = x end
    else
      out[#out + 1] = e.value
    end
  end
  return out
end

local function is_record(t)
  if type(t) ~= "table" or getmetatable(t) ~= nil then return false end
  if next(t) == nil then return false end
  return #t == 0
end

--- Merge `override` into `base` (neither is changed): per key, the value of
--- the lower priority wins; equal priorities with different values are an
--- error naming both places; mergeable keys collect every value; nested
--- tables merge key by key.
function M.merge(base, override, path)
  if base == nil then base = {} end
  if override == nil then override = {} end
  local seq = 0
  local here = M.caller_source()
  local state = { singular = {}, combined = {}, config = {} }
  local old = merged_state[base]
  local result = {}
  local function take(t, st, label, source)
    source = source or { file = label, line = 0 }
    for k, v in pairs(t) do
      seq = seq + 1
      local key = path and (path .. "." .. tostring(k)) or tostring(k)
      if st and st.config[k] then
        -- already here as the entries of an earlier merge
      elseif M.is_mergeable(v) then
        state.config[k] = v
        state.combined[k] = state.combined[k] or {}
        if v.default ~= nil then
          state.combined[k][#state.combined[k] + 1] = { value = v.default, priority = P.AFTER, seq = seq,
            source = { file = "default", line = 0 } }
        end
      elseif state.config[k] then
        state.combined[k] = state.combined[k] or {}
        state.combined[k][#state.combined[k] + 1] = entry(v, seq, source)
      elseif is_record(M.unwrap(v)) and is_record(result[k]) then
        result[k] = M.merge(result[k], v, key)
      else
        local e = (st and st.singular[k]) or entry(v, seq, source)
        e.seq = seq
        local cur = state.singular[k]
        if cur == nil or e.priority < cur.priority then
          state.singular[k] = e
        elseif e.priority == cur.priority and not same(e.value, cur.value) then
          conflict(key, cur, e)
        end
        result[k] = state.singular[k].value
      end
    end
  end
  if old then
    for k, cfg in pairs(old.config) do
      state.config[k] = cfg
      state.combined[k] = {}
      for _, e in ipairs(old.combined[k]) do state.combined[k][#state.combined[k] + 1] = e end
    end
  end
  take(base, old, "base")
  take(override, nil, "override", here)
  for k, entries in pairs(state.combined) do
    result[k] = combine(entries, state.config[k])
  end
  merged_state[result] = state
  return result
end

return M
