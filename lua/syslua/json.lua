-- syslua.json: encode Lua values as JSON and decode JSON text.
--
--   json.encode({ a = 1, list = { 1, 2 } })  --> '{"a":1,"list":[1,2]}' (keys sorted)
--   json.decode('{"a":[true,null]}')         --> { a = { true, json.null } }
--
-- An empty table encodes as [] unless it is json.object(); json.null stands
-- for null inside lists and objects.

local M = {}

local sformat, sbyte, schar, ssub, sfind, concat = string.format, string.byte, string.char, string.sub, string.find, table.concat

M.null = setmetatable({}, { __tostring = function() return "null" end })
local OBJECT = {}
function M.object(t) return setmetatable(t or {}, OBJECT) end

local escapes = { ['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b", ["\f"] = "\\f", ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t" }
local function quote(s)
  return '"' .. s:gsub('[%c"\\]', function(c) return escapes[c] or sformat("\\u%04x", sbyte(c)) end) .. '"'
end

local function encode(v, out, depth)
  if depth > 100 then error("syslua.json.encode: nested deeper than 100 levels (a cycle?)", 0) end
  local t = type(v)
  if v == nil or v == M.null then
    out[#out + 1] = "null"
  elseif t == "boolean" then
    out[#out + 1] = tostring(v)
  elseif t == "number" then
    if v ~= v or v == math.huge or v == -math.huge then error("syslua.json.encode: cannot encode " .. tostring(v), 0) end
    if v == math.floor(v) and v > -2^53 and v < 2^53 then out[#out + 1] = sformat("%d", v)
    else out[#out + 1] = sformat("%.17g", v) end
  elseif t == "string" then
    out[#out + 1] = quote(v)
  elseif t == "table" then
    local n, count = #v, 0
    for _ in pairs(v) do count = count + 1 end
    if getmetatable(v) ~= OBJECT and count == n then
      out[#out + 1] = "["
      for i = 1, n do
        if i > 1 then out[#out + 1] = "," end
        encode(v[i], out, depth + 1)
      end
      out[#out + 1] = "]"
      return
    end
    local keys = {}
    for k in pairs(v) do
      if type(k) ~= "string" and type(k) ~= "number" then
        error("syslua.json.encode: object keys must be strings, got " .. type(k), 0)
      end
      keys[#keys + 1] = tostring(k)
    end
    table.sort(keys)
    out[#out + 1] = "{"
    for i, k in ipairs(keys) do
      if i > 1 then out[#out + 1] = "," end
      local x = v[k]
      if x == nil then x = v[tonumber(k)] end
      out[#out + 1] = quote(k) .. ":"
      encode(x, out, depth + 1)
    end
    out[#out + 1] = "}"
  else
    error("syslua.json.encode: cannot encode a " .. t, 0)
  end
end

function M.encode(v)
  local out = {}
  local ok, err = pcall(encode, v, out, 0)
  if not ok then error(err, 2) end
  return concat(out)
end

local function decoder(s)
  local pos = 1
  local function fail(what) error(sformat("syslua.json.decode: %s at position %d", what, pos), 0) end
  local function skip() pos = (sfind(s, "[^ \t\r\n]", pos)) or #s + 1 end
  local value
  local function str()
    pos = pos + 1
    local buf = {}
    while true do
      local c = ssub(s, pos, pos)
      if c == "" then fail("unterminated string") end
      if c == '"' then pos = pos + 1; break end
      if c == "\\" then
        local e = ssub(s, pos + 1, pos + 1)
        local map = { b = "\b", f = "\f", n = "\n", r = "\r", t = "\t", ['"'] = '"', ["\\"] = "\\", ["/"] = "/" }
        if map[e] then buf[#buf + 1] = map[e]; pos = pos + 2
        elseif e == "u" then
          local hex = ssub(s, pos + 2, pos + 5)
          local code = tonumber(hex, 16)
          if not code or #hex ~= 4 then fail("bad \\u escape") end
          pos = pos + 6
          if code >= 0xD800 and code <= 0xDBFF and ssub(s, pos, pos + 1) == "\\u" then
            local low = tonumber(ssub(s, pos + 2, pos + 5), 16)
            if low and low >= 0xDC00 and low <= 0xDFFF then
              code = 0x10000 + (code - 0xD800) * 0x400 + (low - 0xDC00)
              pos = pos + 6
            end
          end
          if code < 0x80 then buf[#buf + 1] = schar(code)
          elseif code < 0x800 then buf[#buf + 1] = schar(0xC0 + math.floor(code / 64), 0x80 + code % 64)
          elseif code < 0x10000 then
            buf[#buf + 1] = schar(0xE0 + math.floor(code / 4096), 0x80 + math.floor(code / 64) % 64, 0x80 + code % 64)
          else
            buf[#buf + 1] = schar(0xF0 + math.floor(code / 262144), 0x80 + math.floor(code / 4096) % 64,
              0x80 + math.floor(code / 64) % 64, 0x80 + code % 64)
          end
        else fail("bad escape") end
      else
        local stop = sfind(s, '["\\]', pos) or #s + 1
        buf[#buf + 1] = ssub(s, pos, stop - 1)
        pos = stop
      end
    end
    return concat(buf)
  end
  value = function()
    skip()
    local c = ssub(s, pos, pos)
    if c == "{" then
      pos = pos + 1
      local obj = M.object({})
      skip()
      if ssub(s, pos, pos) == "}" then pos = pos + 1; return obj end
      while true do
        skip()
        if ssub(s, pos, pos) ~= '"' then fail("expected a string key") end
        local k = str()
        skip()
        if ssub(s, pos, pos) ~= ":" then fail("expected ':'") end
        pos = pos + 1
        obj[k] = value()
        skip()
        local d = ssub(s, pos, pos)
        pos = pos + 1
        if d == "}" then return obj end
        if d ~= "," then fail("expected ',' or '}'") end
      end
    elseif c == "[" then
      pos = pos + 1
      local arr = {}
      skip()
      if ssub(s, pos, pos) == "]" then pos = pos + 1; return arr end
      while true do
        arr[#arr + 1] = value()
        skip()
        local d = ssub(s, pos, pos)
        pos = pos + 1
        if d == "]" then return arr end
        if d ~= "," then fail("expected ',' or ']'") end
      end
    elseif c == '"' then
      return str()
    elseif ssub(s, pos, pos + 3) == "true" then pos = pos + 4; return true
    elseif ssub(s, pos, pos + 4) == "false" then pos = pos + 5; return false
    elseif ssub(s, pos, pos + 3) == "null" then pos = pos + 4; return M.null
    else
      local num = s:match("^-?%d+%.?%d*[eE]?[-+]?%d*", pos)
      if not num or num == "" or not tonumber(num) then fail("unexpected character") end
      pos = pos + #num
      return tonumber(num)
    end
  end
  return function()
    local v = value()
    skip()
    if pos <= #s then fail("trailing characters") end
    return v
  end
end

function M.decode(s)
  if type(s) ~= "string" then error("syslua.json.decode expects a string, got " .. type(s), 2) end
  local ok, v = pcall(decoder(s))
  if not ok then error(v, 2) end
  return v
end

return M
