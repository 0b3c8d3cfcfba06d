-- syslua.environment: files, variables, aliases and packages of the user's
-- environment, mapped onto syslua's own declarations (file, env, package).
return setmetatable({}, {
  __index = function(t, k)
    local ok, mod = pcall(require, "syslua.environment." .. tostring(k))
    if not ok then
      error("syslua.environment." .. tostring(k) .. " not found (available: files, variables, aliases, packages)", 2)
    end
    rawset(t, k, mod)
    return mod
  end,
})
