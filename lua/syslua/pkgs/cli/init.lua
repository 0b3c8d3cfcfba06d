-- syslua.pkgs.cli: command-line tools (fd, jq, patchelf, ripgrep).
return setmetatable({}, {
  __index = function(t, k)
    local ok, mod = pcall(require, "syslua.pkgs.cli." .. tostring(k))
    if not ok then
      error("package syslua.pkgs.cli." .. tostring(k) .. " not found (available: fd, jq, patchelf, ripgrep)", 2)
    end
    rawset(t, k, mod)
    return mod
  end,
})
