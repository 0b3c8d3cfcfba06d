-- syslua.pkgs: the package catalogue, by category (syslua.pkgs.cli.jq ...).
return setmetatable({}, {
  __index = function(t, k)
    local ok, mod = pcall(require, "syslua.pkgs." .. tostring(k))
    if not ok then error("syslua.pkgs." .. tostring(k) .. " not found: " .. tostring(mod), 2) end
    rawset(t, k, mod)
    return mod
  end,
})
