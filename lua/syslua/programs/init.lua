-- syslua.programs: a package plus its configuration files, in one setup.
--   require('syslua').programs.ripgrep.setup({ version = 'stable', config = { ['~/.ripgreprc'] = { content = '--smart-case' } } })
return setmetatable({}, {
  __index = function(t, k)
    local ok, mod = pcall(require, "syslua.programs." .. tostring(k))
    if not ok then error("Program not found: " .. tostring(k) .. " (available: fd, jq, ripgrep)", 2) end
    rawset(t, k, mod)
    return mod
  end,
})
