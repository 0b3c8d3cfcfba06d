---@meta
-- Type stubs for lua-language-server: `sys init` points .luarc.json here.
-- This file is written by hand. The declarations (file, exec, apply,
-- package, user, env, defaults) and lib.mk* are in generated.lua, made from
-- the schema by `python -m syslua.manifest.stubs`.

---@class SysluaRef
---A reference returned by a declaration; use it in depends_on and subscribe.

---@class SysluaHealthCheck
---@field command string
---@field tries? integer
---@field try_sleep? string|number
---@field timeout? string|number
---@field name? string
---@field format? "nagios"

---A source descriptor made by lib.fetchUrl, lib.fetchGit or lib.fetchGitHub.
---@class SysluaSource

lib = {}
---@param spec {url: string, sha256: string}
---@return SysluaSource
function lib.fetchUrl(spec) end
---@param spec {url: string, rev: string}
---@return SysluaSource
function lib.fetchGit(spec) end
---@param spec {owner: string, repo: string, tag: string, asset: string, sha256: string}
---@return SysluaSource
function lib.fetchGitHub(spec) end

---@class SysluaUserFacts
---@field name string
---@field uid integer
---@field gid integer
---@field group string
---@field home string
---@field shell string

sys = {
  os = "", arch = "", platform = "", hostname = "",
  ---@type SysluaUserFacts
  user = {},
  facts = {}, data = {}, dir = "",
}
---@param path string
---@return string
function sys.readFile(path) end
---@class SysluaDirEntry
---@field name string
---@field type "file"|"directory"|"link"|"other"
---The entries of a directory (relative to sys.dir), sorted by name; recorded as a config input.
---@param path string
---@return SysluaDirEntry[]
function sys.readDir(path) end
---The paths matching a pattern (`*`, `?`, `[...]`, `**`), sorted; relative to sys.dir
---when the pattern is; recorded as a config input.
---@param pattern string
---@return string[]
function sys.glob(pattern) end
---@param rel string
---@return string
function sys.path(rel) end
