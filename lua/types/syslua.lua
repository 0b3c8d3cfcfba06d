---@meta
-- Type stubs for lua-language-server. `sys init` copies them beside the
-- config (.syslua/types/) and points .luarc.json there; `sys init --stubs`
-- refreshes the copies after an upgrade.
-- This file is written by hand: `sys`, the fetch helpers and the types they
-- use. The declarations (file, exec, apply, package, user, env, defaults)
-- and lib.mk* are in generated.lua, made from the schema by
-- `python -m syslua.manifest.stubs`. tests/test_stubs.py checks that every
-- `sys.*` and `lib.*` name a config can use is described in one of them.

---A reference returned by a declaration; use it in depends_on and subscribe.
---@class SysluaRef

---@class SysluaHealthCheck
---@field command string run with /bin/sh -c; exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN
---@field tries? integer
---@field try_sleep? string|number
---@field timeout? string|number
---@field name? string shown in reports (default: the command's first word)
---@field format? "nagios"

---A source descriptor made by lib.fetchUrl, lib.fetchGit or lib.fetchGitHub.
---@class SysluaSource

lib = {}
---A download verified against its SHA-256 before use.
---@param spec {url: string, sha256: string}
---@return SysluaSource
function lib.fetchUrl(spec) end
---A git checkout of an exact commit (a commit, tag or branch name).
---@param spec {url: string, rev: string}
---@return SysluaSource
function lib.fetchGit(spec) end
---A GitHub release asset: https://github.com/<owner>/<repo>/releases/download/<tag>/<asset>.
---@param spec {owner: string, repo: string, tag: string, asset: string, sha256: string}
---@return SysluaSource
function lib.fetchGitHub(spec) end

---The user running `sys`.
---@class SysluaUserFacts
---@field name string the login name
---@field uid integer
---@field gid integer
---@field group string the primary group's name
---@field home string from $HOME
---@field shell string

---Facts about this machine, data from a parent apply, and the config's helpers.
---@class SysluaSys
---@field os string the operating system, lower case: "linux", "darwin"
---@field arch string the CPU architecture: "x86_64", "aarch64"
---@field platform string "<arch>-<os>", e.g. "x86_64-linux"
---@field hostname string the host name
---@field user SysluaUserFacts the user running `sys`
---@field facts table every fact: the ones above, CCM's names (facts.host.info), the facts file and --fact values
---@field data table data handed down by a parent `apply` ({} in the root config)
---@field dir string the directory of the manifest being evaluated
---@field is_elevated boolean whether `sys` runs as root (the original sys.lua's name)
---@field profile string where packages are linked; its bin/ is on PATH
sys = {}

---The value of an environment variable, or nil when it is not set.
---@param name string
---@return string?
function sys.getenv(name) end

---The content of a file (relative to sys.dir, or `~/...`); recorded as a config input.
---@param path string
---@return string
function sys.readFile(path) end

---@class SysluaSecretSpec
---@field pass? string the `pass` entry to read (`pass show NAME`)
---@field command? string[] a password manager's command, run without a shell
---@field file? string a file holding the secret (relative to sys.dir, or `~/...`)
---@field env? string an environment variable holding the secret
---@field whole? boolean the whole output or file, not only its first line

---A secret, read once per evaluation; it stands for its value wherever it
---goes (content, templates, env, exec environment) and is shown as (secret).
---See docs/secrets.md.
---@param spec SysluaSecretSpec
---@return string
function sys.secret(spec) end

---@class SysluaDirEntry
---@field name string
---@field type "file"|"directory"|"link"|"other"

---The entries of a directory (relative to sys.dir), sorted by name; recorded as a config input.
---@param path string
---@return SysluaDirEntry[]
function sys.readDir(path) end

---The paths matching a pattern (`*`, `?`, `[...]`, `**`), sorted; relative to sys.dir
---when the pattern is; recorded as a config input. `*` skips names starting with `.`;
---`**` goes into dot folders.
---@param pattern string
---@return string[]
function sys.glob(pattern) end

---An absolute path: `~/x` in the home directory, a relative path beside this manifest.
---`sys.path` is also a table of path helpers (the original sys.lua's): see SysluaPathLib.
---@param rel string
---@return string
function sys.path(rel) end

---The helpers of `sys.path` (`sys.path.join("a", "b")`). Only canonicalize reads the disk.
---@class SysluaPathLib
---@field join fun(...: string): string the parts joined; an absolute part starts over
---@field resolve fun(...: string): string the parts joined onto sys.dir (`~` is the home), normalised
---@field dirname fun(path: string): string the parent ("" for "/" or a bare name)
---@field basename fun(path: string): string the last component
---@field extname fun(path: string): string ".gz" for "a.tar.gz", "" for ".bashrc"
---@field is_absolute fun(path: string): boolean
---@field normalize fun(path: string): string "." and ".." resolved in the text
---@field relative fun(from: string, to: string): string the path of `to` seen from `from`
---@field split fun(path: string): string[] { "/", "a", "b" } for "/a/b"
---@field canonicalize fun(path: string): string the real path (symlinks resolved); an error when missing

-- sys.build and sys.bind: their phase functions run while the config is
-- evaluated and only record actions through `ctx`; the actions run when
-- the item is applied. Results are placeholders, resolved then.

---What a phase function of sys.build or sys.bind records its actions with.
---@class SysluaActionCtx
---@field out string the build's output directory (in the store once built), or the bind's own directory
local SysluaActionCtx = {}

---Record running a program directly (no shell; `bin` without a `/` is looked
---up in PATH), or a command string run with /bin/sh -c. Returns a
---placeholder for its trimmed stdout.
---@param spec {bin: string, args?: string[], env?: table<string,string>, cwd?: string}|string
---@return string
function SysluaActionCtx:exec(spec) end

---Record a download verified against its SHA-256. Returns a placeholder for its path.
---@param url string
---@param sha256 string
---@return string
function SysluaActionCtx:fetch_url(url, sha256) end

---Record writing `content` to `ctx.out/tmp/<name>.sh` (kept) and running it
---with /bin/sh ("shell") or /bin/bash ("bash"); "powershell" and "cmd" are
---Windows-only and refused here. `opts.name` defaults to script_1, script_2...
---@param format "shell"|"bash"
---@param content string
---@param opts? {name?: string}
---@return {stdout: string, path: string}
function SysluaActionCtx:script(format, content, opts) end

---The reference sys.build and sys.bind return: `outputs.<name>` is a
---placeholder for that output, usable in any property of any other item.
---Given in another build's or bind's `inputs`, it also orders that one after it.
---@class SysluaPrimitiveRef: SysluaRef
---@field outputs table<string,string>
---@field id string
---@field inputs table

---@alias SysluaDependsOn SysluaRef|string|(SysluaRef|string)[]

---@class SysluaBuildSpec
---@field id? string unique among builds (default: named by a digest of what it does)
---@field inputs? table|fun(): table any data, passed to create; part of the build's hash
---@field depends_on? SysluaDependsOn
---@field replace? boolean replace an earlier build with the same id instead of failing
---@field create fun(inputs: table, ctx: SysluaActionCtx): table<string,string>? returns the outputs (default { out = ctx.out })

---@class SysluaCheckResult
---@field drifted boolean|string true (or a ctx:exec result printing "true") when the bind's effect is gone
---@field message? string shown by `sys status` and `sys plan`

---@class SysluaBindSpec
---@field id? string unique among binds; needed for `update` (default: named by a digest of what it does)
---@field inputs? table|fun(): table any data, passed to create, update and check
---@field depends_on? SysluaDependsOn
---@field replace? boolean replace an earlier bind with the same id instead of failing
---@field create fun(inputs: table, ctx: SysluaActionCtx): table<string,string>? returns the outputs it records
---@field update? fun(outputs: table<string,string>, inputs: table, ctx: SysluaActionCtx): table<string,string>? returns the new outputs
---@field destroy? fun(outputs: table<string,string>, ctx: SysluaActionCtx) undoes create
---@field check? fun(outputs: table<string,string>, inputs: table, ctx: SysluaActionCtx): SysluaCheckResult

---Something built into the store once, cached by the hash of everything it is made from.
---@param spec SysluaBuildSpec
---@return SysluaPrimitiveRef
function sys.build(spec) end

---A side effect on the machine whose outputs are recorded and handed to its later phases.
---@param spec SysluaBindSpec
---@return SysluaPrimitiveRef
function sys.bind(spec) end

---Add a method to every build context (called as ctx:name(...)); exec, fetch_url, script and out stay built in.
---@param name string
---@param fn fun(ctx: SysluaActionCtx, ...): any
function sys.register_build_ctx_method(name, fn) end

---Add a method to every bind context (called as ctx:name(...)).
---@param name string
---@param fn fun(ctx: SysluaActionCtx, ...): any
function sys.register_bind_ctx_method(name, fn) end

---@class SysluaSystemdUnit
---@field name string the unit: backup (backup.service), or with its suffix (backup.timer)
---@field scope? "system"|"user" system (/etc/systemd/system, needs root) or user (~/.config/systemd/user)
---@field content? string the unit file's text
---@field source? string a file holding it (relative to sys.dir)
---@field mode? string the unit file's mode
---@field ensure? "running"|"stopped" what the service should be (default running)
---@field enable? boolean start it at boot; not given: left as it is
---@field subscribe? SysluaRef|string|(SysluaRef|string)[] what restarts it when it changes

---A unit file where its service manager reads it, and the service, which
---restarts when that file changes. See docs/resources/service.md.
---@param spec SysluaSystemdUnit
---@return SysluaRef
function systemd_unit(spec) end
