-- syslua.interpolation: f-strings with {{ }} delimiters (single braces and
-- shell `${VAR}` pass through untouched).
--
--   f("{{name}} is {{age:%03d}}", { name = "ada", age = 7 })  --> "ada is 007"
--   f("{{x=}}", { x = 42 })                                   --> "x=42"
--
-- Each {{ }} holds a Lua expression, evaluated with `values` (or, without
-- them, the caller's local variables and upvalues; then the globals) in scope; `:%fmt` formats the value with string.format; a
-- trailing `=` prints the expression's text before its value.

local sformat, sfind, ssub = string.format, string.find, string.sub

local function evaluate(expr, env, template)
  local chunk, err = loadstring("return " .. expr, "=interpolation")
  if not chunk then
    error("syslua.interpolation: cannot parse {{" .. expr .. "}} in " .. sformat("%q", template) .. ": " .. err, 3)
  end
  setfenv(chunk, env)
  local ok, value = pcall(chunk)
  if not ok then
    error("syslua.interpolation: {{" .. expr .. "}} failed: " .. tostring(value), 3)
  end
  return value
end

local function interpolate(template, values)
  if type(template) ~= "string" then
    error("syslua.interpolation expects a string, got " .. type(template), 2)
  end
  if values ~= nil and type(values) ~= "table" then
    error("syslua.interpolation: values must be a table, got " .. type(values), 2)
  end
  -- Without `values`, the caller's local variables and upvalues are in
  -- scope, as in the original (f"Hello {{name}}" after local name = ...).
  if values == nil then
    local ok, vars = pcall(require, "syslua.caller_vars")
    values = ok and type(vars) == "function" and vars() or {}
  end
  local env = setmetatable({}, { __index = function(_, k)
    if values[k] ~= nil then return values[k] end
    return _G[k]
  end })
  local out, pos = {}, 1
  while true do
    local open = sfind(template, "{{", pos, true)
    if not open then break end
    local close = sfind(template, "}}", open + 2, true)
    if not close then break end
    out[#out + 1] = ssub(template, pos, open - 1)
    local inner = ssub(template, open + 2, close - 1)
    local expr, fmt = inner:match("^(.-):(%%[^:]*)$")
    if not expr then expr = inner end
    expr = expr:match("^%s*(.-)%s*$")
    local label = ""
    if ssub(expr, -1) == "=" and not sfind(expr, "[=~<>]=$") then
      expr = expr:sub(1, -2):match("^(.-)%s*$")
      label = expr .. "="
    end
    local value = evaluate(expr, env, template)
    local text
    if fmt then
      local ok, formatted = pcall(sformat, fmt, value)
      if not ok then
        error("syslua.interpolation: cannot format {{" .. inner .. "}}: " .. tostring(formatted), 2)
      end
      text = formatted
    else
      text = tostring(value)
    end
    out[#out + 1] = label .. text
    pos = close + 2
  end
  out[#out + 1] = ssub(template, pos)
  return table.concat(out)
end

return setmetatable({ interpolate = interpolate }, {
  __call = function(_, template, values) return interpolate(template, values) end,
})
