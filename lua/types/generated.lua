---@meta
-- Generated from the schemas of the kinds by `python -m syslua.manifest.stubs`: do not edit.
-- The hand-written stubs (sys, lib.fetch*, SysluaRef, ...) are in syslua.lua.

---Properties every declaration accepts.
---@class SysluaCommon
---@field depends_on? SysluaRef|string|(SysluaRef|string)[] items that must be applied before this one; merged across declarations
---@field subscribe? SysluaRef|string|(SysluaRef|string)[] items whose change triggers this one (an exec runs, others are refreshed); merged across declarations
---@field health_checks? SysluaHealthCheck|(SysluaHealthCheck|string)[] commands checked after applying, with Nagios exit codes; merged across declarations
---@field sensitive? boolean its content (or environment, password) is a secret: never shown or stored in the clear
---@field require? SysluaRef|string|(SysluaRef|string)[] same as depends_on

---Properties of a file but its key: what `defaults { file = {...} }` may set.
---@class SysluaFileProps: SysluaCommon
---@field ensure? "present"|"absent"|"directory"|"link" what should be at path; default "present"
---@field content? string the file's exact content; may contain {{ lookup('facts.x') }}
---@field source? string a file to copy, or a directory whose whole tree is managed; relative to this manifest
---@field target? string what the symlink points to (ensure = "link"); relative to this manifest
---@field link? boolean make path (or every file of a source tree) a symlink to its source file
---@field template? boolean render source (or every file of a source tree) like inline content
---@field ignore? string|string[] gitignore-style patterns, relative to a directory source, left out of the tree; merged across declarations
---@field decrypt? boolean decrypt `source` with age when writing it (the default for a source ending in .age)
---@field age_identity? string the age identity that decrypts it (default ~/.config/syslua/key.txt; SYSLUA_AGE_IDENTITY overrides)
---@field age_recipients? string|string[] who `sys add` encrypts an edit for (default: the identity's public key)
---@field dir_mode? string|integer mode of the directories of a tree and of missing parents syslua creates
---@field owner? string|integer user name or numeric uid (under the home, the running user by default; an absent file needs none); required, may come from defaults{}
---@field group? string|integer group name or numeric gid (under the home, the running user's by default; an absent file needs none); required, may come from defaults{}
---@field mode? string|integer octal mode, e.g. "0644" (under the home by default: a copy's source's, 0644 for content, 0755 for a directory; an absent file or a link needs none); required, may come from defaults{}
---@field force? boolean allow replacing a file with a directory and removing a non-empty directory; default false
---@field provider? "posix" the only provider; default "posix"
---@field contents? string same as content

---A file or directory (docs/resources/file.md).
---@class SysluaFile: SysluaFileProps
---@field path string absolute or ~/ path; the key: declarations with the same path are one item

---A file or directory (docs/resources/file.md).
---@param spec SysluaFile
---@return SysluaRef
function file(spec) end

---Properties of an exec but its key: what `defaults { exec = {...} }` may set.
---@class SysluaExecProps: SysluaCommon
---@field command? string what to run (defaults to name)
---@field cwd? string working directory
---@field environment? string[]|table<string,string|number> added to the environment: { "KEY=value" } or { KEY = "value" }; merged across declarations
---@field path? string|string[] PATH for finding the program and for the command
---@field returns? integer|integer[] exit codes that count as success; default { 0 }
---@field timeout? string|number e.g. 30, "500ms", "5m", "1h30m"; the command is killed on expiry
---@field creates? string when this path exists, the command is not run
---@field onlyif? string run only if this guard command exits 0
---@field unless? string run only if this guard command exits non-zero
---@field refresh_only? boolean run only when an item in subscribe changed; default false
---@field logoutput? boolean show the command's output as it runs; default false
---@field provider? "posix"|"shell" posix runs the program directly; shell runs /bin/sh -c command; default "posix"
---@field undo? string a command that reverses this one (rollback and removal)
---@field ensure? "present" accepted for CCM compatibility; no effect
---@field refreshonly? boolean same as refresh_only

---A command to run (docs/resources/exec.md).
---@class SysluaExec: SysluaExecProps
---@field name string identifies the exec; also the command when `command` is not given; the key: declarations with the same name are one item

---A command to run (docs/resources/exec.md).
---@param spec SysluaExec
---@return SysluaRef
function exec(spec) end

---Properties of an apply but its key: what `defaults { apply = {...} }` may set.
---@class SysluaApplyProps: SysluaCommon
---@field ensure? "present" the only value; default "present"
---@field noop? boolean run the child's resources in noop mode; default false
---@field health_check_only? boolean only run the health checks of the child's resources; default false
---@field allow_apply? boolean whether the child may contain apply items of its own; default true
---@field data? table sys.data in a Lua child, the data. root of lookups in a YAML child; default {}
---@field provider? "ccmmanifest"|"lua" accepted for CCM compatibility; the format follows the file extension

---A child manifest, Lua or CCM YAML (docs/resources/apply.md).
---@class SysluaApply: SysluaApplyProps
---@field name string child manifest (.lua or .yaml), relative to this file; the key: declarations with the same name are one item

---A child manifest, Lua or CCM YAML (docs/resources/apply.md).
---@param spec SysluaApply
---@return SysluaRef
function apply(spec) end

---Properties of a package but its key: what `defaults { package = {...} }` may set.
---@class SysluaPackageProps: SysluaCommon
---@field version? string its version; part of the store path; required, may come from defaults{}
---@field source? SysluaSource lib.fetchUrl{...}, lib.fetchGitHub{...} or lib.fetchGit{...}; required, may come from defaults{}
---@field bin? string|string[] programs in the unpacked tree to link into the profile's bin; merged across declarations
---@field strip_components? integer leading path components removed from archive members; default 0
---@field format? "tar.gz"|"tar.xz"|"tar.bz2"|"zip"|"binary" how to unpack (guessed from the URL when omitted)

---A tool fetched into the store and linked into the profile (docs/resources/package.md).
---@class SysluaPackage: SysluaPackageProps
---@field name string the package's name; the key: declarations with the same name are one item

-- `package` is also Lua's module library: the declaration is its __call.
---@class packagelib
---@overload fun(spec: SysluaPackage): SysluaRef

---Properties of an os_package but its key: what `defaults { os_package = {...} }` may set.
---@class SysluaOsPackageProps: SysluaCommon
---@field ensure? "present"|"absent"|"latest"|string "present", "absent", "latest" or a version such as "2.10-3"; default "present"
---@field provider? "apt"|"dnf" the package manager; chosen from the machine when not given

---A package of the operating system, through apt or dnf; needs root (docs/resources/os_package.md).
---@class SysluaOsPackage: SysluaOsPackageProps
---@field name string the package's name, as apt or dnf knows it; the key: declarations with the same name are one item

---A package of the operating system, through apt or dnf; needs root (docs/resources/os_package.md).
---@param spec SysluaOsPackage
---@return SysluaRef
function os_package(spec) end

---Properties of an user but its key: what `defaults { user = {...} }` may set.
---@class SysluaUserProps: SysluaCommon
---@field ensure? "present"|"absent" whether the account should exist; default "present"
---@field uid? integer the user id
---@field gid? string|integer the primary group (name or number); must exist
---@field groups? string|string[] supplementary groups; each must exist; merged across declarations
---@field purge_groups? boolean also remove the account from groups not listed; default false
---@field shell? string the login shell
---@field home? string the home directory recorded for the account
---@field comment? string the GECOS field

---An OS account; applying it needs root (docs/resources/user.md).
---@class SysluaUser: SysluaUserProps
---@field name string the login name; the key: declarations with the same name are one item

---An OS account; applying it needs root (docs/resources/user.md).
---@param spec SysluaUser
---@return SysluaRef
function user(spec) end

---Properties of an archive but its key: what `defaults { archive = {...} }` may set.
---@class SysluaArchiveProps: SysluaCommon
---@field ensure? "present"|"absent" present: downloaded (and extracted); absent: the archive file removed; default "present"
---@field url? string http://, https:// or file:// URL of the archive
---@field checksum? string SHA-256 of the archive, verified before anything is extracted
---@field extract_parent? string directory the archive is extracted into
---@field creates? string when this path exists, nothing is downloaded or extracted
---@field cleanup? boolean remove the archive file once extracted (needs extract_parent and creates); default false
---@field owner? string|integer owner of the archive file and of what is extracted
---@field group? string|integer group of the archive file and of what is extracted
---@field username? string user for HTTP basic authentication
---@field password? string password for HTTP basic authentication (a secret: never shown or stored)
---@field headers? table<string,string> extra HTTP headers: { Name = value } (secret: never shown or stored)
---@field provider? "http" accepted for CCM compatibility; the only one; default "http"

---An archive downloaded and extracted (docs/resources/archive.md).
---@class SysluaArchive: SysluaArchiveProps
---@field name string absolute path where the archive is saved (.tar.gz, .tgz, .tar or .zip); the key: declarations with the same name are one item

---An archive downloaded and extracted (docs/resources/archive.md).
---@param spec SysluaArchive
---@return SysluaRef
function archive(spec) end

---Properties of a service but its key: what `defaults { service = {...} }` may set.
---@class SysluaServiceProps: SysluaCommon
---@field ensure? "running"|"stopped" running (the default) or stopped; default "running"
---@field enable? boolean start it at boot (true) or not (false); not given: left as it is
---@field scope? "system"|"user" the system's manager (default, needs root) or your own (systemctl --user); default "system"
---@field provider? "systemd" the service manager (only systemd); default "systemd"

---A service of the service manager: running or stopped, enabled or not (docs/resources/service.md).
---@class SysluaService: SysluaServiceProps
---@field name string the unit: nginx (nginx.service), or with its suffix; the key: declarations with the same name are one item

---A service of the service manager: running or stopped, enabled or not (docs/resources/service.md).
---@param spec SysluaService
---@return SysluaRef
function service(spec) end

---Environment variables for the generated shell scripts; path-like ones (PATH, MANPATH, ...)
---take a list or a colon-separated string and are merged across declarations.
---@param vars table<string,string|number|boolean|string[]>
---@return SysluaRef
function env(vars) end

---Property defaults for the declarations that follow in the same file, at priority
---1200 (weaker than lib.mkDefault, 1000).
---@class SysluaDefaults
---@field file? SysluaFileProps
---@field exec? SysluaExecProps
---@field apply? SysluaApplyProps
---@field package? SysluaPackageProps
---@field os_package? SysluaOsPackageProps
---@field user? SysluaUserProps
---@field archive? SysluaArchiveProps
---@field service? SysluaServiceProps

---@param spec SysluaDefaults
function defaults(spec) end

-- Priorities: lower wins; a plain value is 900. Each lib.mk* wraps a property value
-- or a whole declaration.

---Priority 50: override whatever else is declared.
---@generic T
---@param v T
---@return T
function lib.mkForce(v) end
---Priority 500: put list entries first.
---@generic T
---@param v T
---@return T
function lib.mkBefore(v) end
---Priority 1000: a fallback: a plain value (900) beats it.
---@generic T
---@param v T
---@return T
function lib.mkDefault(v) end
---Priority 1500: put list entries last.
---@generic T
---@param v T
---@return T
function lib.mkAfter(v) end
---An explicit priority n (mkForce 50, mkBefore 500, plain 900, mkDefault 1000, defaults{} 1200, mkAfter 1500).
---@generic T
---@param n integer
---@param v T
---@return T
function lib.mkOrder(n, v) end
