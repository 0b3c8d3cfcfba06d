---@meta
-- Type stubs for lua-language-server: `sys init` points .luarc.json here.

---@class SysluaRef
---A reference returned by a declaration; use it in depends_on and subscribe.

---@class SysluaHealthCheck
---@field command string
---@field tries? integer
---@field try_sleep? string|number
---@field timeout? string|number

---@class SysluaCommon
---@field depends_on? (SysluaRef|string)[]
---@field subscribe? (SysluaRef|string)[]
---@field health_checks? SysluaHealthCheck[]

---@class SysluaFile: SysluaCommon
---@field path string absolute or ~/ path
---@field ensure? "present"|"absent"|"directory"
---@field content? string inline content (may contain {{ lookup('facts.x') }})
---@field source? string file to copy, relative to this manifest
---@field owner string
---@field group string
---@field mode string|integer e.g. "0644"
---@field force? boolean

---@class SysluaExec: SysluaCommon
---@field name string
---@field command? string defaults to name
---@field cwd? string
---@field environment? string[]|table<string,string>
---@field path? string
---@field returns? integer[]
---@field timeout? string|number
---@field creates? string
---@field onlyif? string
---@field unless? string
---@field refresh_only? boolean
---@field logoutput? boolean
---@field provider? "posix"|"shell"
---@field undo? string command that reverses this one

---@class SysluaApply: SysluaCommon
---@field name string child manifest (.lua or .yaml), relative to this file
---@field noop? boolean
---@field health_check_only? boolean
---@field allow_apply? boolean
---@field data? table

---@class SysluaPackage: SysluaCommon
---@field name string
---@field version string
---@field source table lib.fetchUrl{...} / lib.fetchGit{...} / lib.fetchGitHub{...}
---@field bin? string[]
---@field strip_components? integer

---@class SysluaUser: SysluaCommon
---@field name string
---@field ensure? "present"|"absent"
---@field uid? integer
---@field gid? integer|string
---@field groups? string[]
---@field purge_groups? boolean
---@field shell? string
---@field home? string

---@param spec SysluaFile
---@return SysluaRef
function file(spec) end
---@param spec SysluaExec
---@return SysluaRef
function exec(spec) end
---@param spec SysluaApply
---@return SysluaRef
function apply(spec) end
---@param spec SysluaUser
---@return SysluaRef
function user(spec) end
---@param vars table<string, string|string[]>
---@return SysluaRef
function env(vars) end
---@param spec table<string, table>
function defaults(spec) end

lib = {}
---@generic T
---@param v T
---@return T
function lib.mkForce(v) end
function lib.mkBefore(v) end
function lib.mkDefault(v) end
function lib.mkAfter(v) end
---@param n integer
function lib.mkOrder(n, v) end
---@param spec {url: string, sha256: string}
function lib.fetchUrl(spec) end
---@param spec {url: string, rev: string}
function lib.fetchGit(spec) end
---@param spec {owner: string, repo: string, tag: string, asset: string, sha256: string}
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
---@param rel string
---@return string
function sys.path(rel) end
