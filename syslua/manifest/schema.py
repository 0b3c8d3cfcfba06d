"""Property schemas: what each declaration type accepts, and how values are normalised.

Each declaration is checked on its own first, so an error points at the line
that made it: unknown properties (with the closest valid name), types, path
and mode rules, durations, `KEY=value` environments. Values are normalised
here (`~` expanded, modes as `0644`, durations in seconds) so that merge
compares like with like. Rules that need the merged item (required
properties, properties that only make sense together) are checked after
merging, in `merge._finish`.

Each property also carries the text and the Lua type (`lua_type`) that the
editor stubs in `lua/types/` are generated from (`manifest/stubs.py`).
"""

from __future__ import annotations

import difflib
import posixpath
import re
from collections.abc import Callable, Mapping
from typing import Any

from syslua.eval.constants import KEYS
from syslua.paths import home as _home


class Invalid(ValueError):
    """A property value is wrong; the message is shown with the declaration's location."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


# Plain classes, not dataclasses: they are made at every start, where a
# dataclass costs half a millisecond each to generate its methods, and
# nothing compares, hashes or prints them. Treat them as read-only.


class Context:
    """What normalisation needs to know about where a declaration was made."""

    __slots__ = ("manifest_dir", "roots", "render_templates", "home", "ccm")

    def __init__(
        self,
        manifest_dir: str,
        roots: Mapping[str, Any] | None = None,  # template roots
        render_templates: bool = True,
        home: str | None = None,  # read once: `~` is expanded for every path
        ccm: bool = False,  # a CCM YAML/JSON manifest: its reader may set the `CCM_ONLY` properties
    ) -> None:
        self.manifest_dir = manifest_dir
        self.roots: Mapping[str, Any] = {} if roots is None else roots
        self.render_templates = render_templates
        self.home: str = _home() if home is None else home
        self.ccm = ccm


Check = Callable[[Any, Context], Any]


class Prop:
    """One property of a type: how its values are checked, and how they merge."""

    __slots__ = ("name", "check", "mergeable", "slot", "required", "doc")

    def __init__(
        self,
        name: str,
        check: Check,
        mergeable: bool = False,
        slot: str | None = None,  # properties sharing a slot are alternatives (content/source)
        required: bool = False,  # the merged item must have it (a declaration or defaults{} may give it)
        doc: str = "",  # one line for the editor stubs
    ) -> None:
        self.name = name
        self.check = check
        self.mergeable = mergeable
        self.slot = slot
        self.required = required
        self.doc = doc


class TypeSchema:
    """What a declaration type accepts: its key property, properties, aliases, defaults."""

    __slots__ = ("name", "key", "props", "aliases", "defaults", "required", "doc", "hints")

    def __init__(
        self,
        name: str,
        key: str,
        props: Mapping[str, Prop],
        aliases: Mapping[str, str] | None = None,
        defaults: Mapping[str, Any] | None = None,
        required: tuple[str, ...] = (),  # names of the required properties, in schema order
        doc: str = "",  # what a declaration of this type is, for the editor stubs
        # Hints for properties that belong to another type (`ensure` on a store
        # package: an OS package is os_package), shown with the unknown-property error.
        hints: Mapping[str, str] | None = None,
    ) -> None:
        self.name = name
        self.key = key
        self.props = props
        self.aliases: Mapping[str, str] = {} if aliases is None else aliases
        self.defaults: Mapping[str, Any] = {} if defaults is None else defaults
        self.required = required
        self.doc = doc
        self.hints: Mapping[str, str] = {} if hints is None else hints


# ---------------------------------------------------------------------------
# value checks
# ---------------------------------------------------------------------------

_LUA_TYPES: dict[Check, str] = {}  # check -> Lua type; filled by `choice` and below the checks


def _is_empty_table(v: Any) -> bool:
    # Lua's {} arrives as an empty JSON object.
    return isinstance(v, dict) and not v


def _expand(path: str, ctx: Context) -> str:
    """A leading `~` or `~/` is the running user's home."""
    if path[:1] != "~":
        return path
    if path == "~":
        return ctx.home
    if path.startswith("~/"):
        return ctx.home + path[1:]
    return path


def anything(v: Any, ctx: Context) -> Any:
    return v


def string(v: Any, ctx: Context) -> str:
    if not isinstance(v, str):
        raise Invalid(f"expected a string, got {_kind(v)}")
    return v


def nonempty_string(v: Any, ctx: Context) -> str:
    s = string(v, ctx)
    if not s.strip():
        raise Invalid("must not be empty")
    return s


def boolean(v: Any, ctx: Context) -> bool:
    if not isinstance(v, bool):
        raise Invalid(f"expected true or false, got {_kind(v)}")
    return v


def integer(v: Any, ctx: Context) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        if isinstance(v, float) and v.is_integer():
            return int(v)
        raise Invalid(f"expected an integer, got {_kind(v)}")
    return v


def non_negative(v: Any, ctx: Context) -> int:
    n = integer(v, ctx)
    if n < 0:
        raise Invalid(f"must be 0 or more, got {n}")
    return n


# One string per owner or group name, however many declarations name it
# (10,000 files owned by one user held 20,000 copies of the name).
_NAMES: dict[str, str] = {}


def name_or_id(v: Any, ctx: Context) -> str:
    """An owner or group: a name, or a numeric id given as a number or digits."""
    if type(v) is str and v and not v[0].isspace():
        return _NAMES.setdefault(v, v) if len(_NAMES) < 4096 else v
    if isinstance(v, bool):
        raise Invalid("expected a name or a numeric id, got a boolean")
    if isinstance(v, int):
        if v < 0:
            raise Invalid(f"ids are 0 or more, got {v}")
        return str(v)
    return nonempty_string(v, ctx)


_PACKAGE_NAME = r"^[A-Za-z0-9][A-Za-z0-9._+:@-]*$"
_VERSION = r"^(?:[0-9]+:)?[0-9][A-Za-z0-9.+~:_^-]*$"  # versions start with a digit
_ENSURE_WORDS = ("present", "absent", "latest")


def package_name(v: Any, ctx: Context) -> str:
    """An OS package's name as apt and dnf spell them: no spaces, globs,
    `=` or leading `-`, and no trailing `-` (apt-get would read it as "remove")."""
    s = nonempty_string(v, ctx)
    if not re.match(_PACKAGE_NAME, s) or s.endswith("-"):
        raise Invalid(f"not a package name: {_show(v)}")
    return s


def package_ensure(v: Any, ctx: Context) -> str:
    """present, absent, latest, or a version (`2.10-3`, `1:2.0-1`)."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        v = _scalar_text(v)  # `ensure: 5.9` in YAML is a version, not a number
    s = nonempty_string(v, ctx)
    if s in _ENSURE_WORDS or re.match(_VERSION, s):
        return s
    raise Invalid(f"must be present, absent, latest or a version; got {_show(v)}")


def choice(*values: str) -> Check:
    """One of `values`. Made once per property, at import: each is remembered for `lua_type`."""

    def check(v: Any, ctx: Context) -> str:
        if v not in values:
            raise Invalid(f"must be one of {', '.join(values)}; got {_show(v)}")
        return v

    _LUA_TYPES[check] = "|".join(f'"{v}"' for v in values)
    return check


def _plainly_clean(p: str) -> bool:
    """True for the common absolute path with no `.`, `..`, `//` or trailing `/`
    (normpath would return it unchanged); anything else takes the full check."""
    return (
        p[:1] == "/"
        and "//" not in p
        and "/./" not in p
        and "/../" not in p
        and p[-1:] != "/"
        and not p.endswith(("/.", "/.."))
    )


def clean_absolute(v: Any, ctx: Context, what: str = "path") -> str:
    p = _expand(string(v, ctx), ctx)
    if _plainly_clean(p) and p != "/":
        return p
    if not p.startswith("/") or posixpath.normpath(p) != p or p.startswith("//"):
        raise Invalid(f"{what} must be absolute and clean, got {_show(v)}")
    return p


def abs_path(v: Any, ctx: Context) -> str:
    return clean_absolute(v, ctx)


def file_path(v: Any, ctx: Context) -> str:
    return clean_absolute(v, ctx, "file path")


def local_path(v: Any, ctx: Context) -> str:
    """A path relative to the manifest's directory (`source`, `apply` names)."""
    p = _expand(nonempty_string(v, ctx), ctx)
    if not p.startswith("/"):
        p = f"{ctx.manifest_dir.rstrip('/')}/{p}"
    return p if _plainly_clean(p) else posixpath.normpath(p)


# Patterns are kept as text and compiled by `re` on first use (and cached
# there): compiling them all at import would cost every run, even one that
# never meets a mode, a duration or a checksum.
_MODE = r"^(?:0[oO])?[0-7]+$"


_MODES: dict[Any, str] = {}


def mode(v: Any, ctx: Context) -> str:
    """Modes `644`, `0644`, `0o644`, `0O644` (or the number 644) become `0644`."""
    known = _MODES.get(v) if type(v) in (str, int) else None
    if known is not None:
        return known
    if isinstance(v, bool):
        raise Invalid('mode must be an octal string such as "0644"')
    text = str(v) if isinstance(v, int) else v
    if not isinstance(text, str) or not re.match(_MODE, text):
        raise Invalid(f'mode {_show(v)} is not a valid octal mode (digits 0-7, e.g. "0644")')
    digits = text[2:] if text[:2] in ("0o", "0O") else text
    value = int(digits, 8)
    if value > 0o777:
        raise Invalid(f"mode {text} exceeds maximum value 0777")
    normal = _MODES[v] = f"{value:04o}"
    return normal


_DURATION_PART = r"(\d+(?:\.\d+)?)(ms|s|m|h)"


def duration(v: Any, ctx: Context) -> float:
    """`30s`, `5m`, `1h30m`, `500ms`, or a number of seconds."""
    if isinstance(v, bool):
        raise Invalid('expected a duration such as "30s" or "5m"')
    if isinstance(v, (int, float)):
        seconds = float(v)
    elif isinstance(v, str):
        text = v.strip()
        if re.fullmatch(r"\d+(?:\.\d+)?", text):
            seconds = float(text)
        else:
            pos, seconds = 0, 0.0
            for m in re.finditer(_DURATION_PART, text):
                if m.start() != pos:
                    break
                unit = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[m.group(2)]
                seconds += float(m.group(1)) * unit
                pos = m.end()
            if pos != len(text) or not text:
                raise Invalid(f'{_show(v)} is not a duration (use e.g. "30s", "5m", "1h30m")')
    else:
        raise Invalid(f'expected a duration such as "30s", got {_kind(v)}')
    if seconds <= 0:
        raise Invalid(f"duration must be positive, got {_show(v)}")
    return int(seconds) if float(seconds).is_integer() else seconds


def list_of(item: Check, *, single: bool = True) -> Check:
    def check(v: Any, ctx: Context) -> list[Any]:
        if _is_empty_table(v) or v is None:
            return []
        if not isinstance(v, list):
            if single:
                v = [v]
            else:
                raise Invalid(f"expected a list, got {_kind(v)}")
        out = []
        for i, x in enumerate(v, 1):
            try:
                out.append(item(x, ctx))
            except Invalid as e:
                raise Invalid(f"item {i}: {e}") from None
        return out

    return check


_ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"


def environment(v: Any, ctx: Context) -> list[str]:
    """`{"KEY=value", ...}` or `{ KEY = "value" }`, as a list of `KEY=value`."""
    if isinstance(v, dict) and v:
        for k, val in v.items():
            if isinstance(val, (dict, list)):
                raise Invalid(
                    f"environment value for {k} must be a string or number, got {_kind(val)}"
                )
        entries = [f"{k}={_scalar_text(val)}" for k, val in sorted(v.items())]
    else:
        entries = list_of(string)(v, ctx)
    for e in entries:
        key, sep, _ = e.partition("=")
        if not sep or not re.match(_ENV_NAME, key):
            raise Invalid(f"environment entry {_show(e)} must be KEY=value")
    return entries


def search_path(v: Any, ctx: Context) -> str:
    """A colon-separated list (or a Lua list) of absolute directories."""
    parts = list_of(string)(v, ctx) if isinstance(v, list) else string(v, ctx).split(":")
    out = []
    for p in parts:
        p = _expand(p, ctx)
        if not p.startswith("/"):
            raise Invalid(f"path entries must be absolute directories, got {_show(p)}")
        out.append(p)
    return ":".join(out)


def mapping(v: Any, ctx: Context) -> dict[str, Any]:
    if isinstance(v, list) and not v:
        return {}
    if not isinstance(v, dict):
        raise Invalid(f"expected a table of named values, got {_kind(v)}")
    return v


def content(v: Any, ctx: Context) -> str:
    s = string(v, ctx)
    # Most content has no placeholder at all: only content with `{{` or `${`
    # imports the template module.
    if ctx.render_templates and ("{{" in s or "${" in s):
        from syslua.eval import template

        try:
            return str(template.render(s, ctx.roots))
        except template.TemplateError as e:
            raise Invalid(str(e)) from None
    return s


def reference(v: Any, ctx: Context) -> list[str]:
    """A reference returned by a declaration, or a `"type#key"` string."""
    if isinstance(v, dict) and "__syslua_refs" in v:
        raw = v["__syslua_refs"]
    elif isinstance(v, str):
        raw = [v]
    else:
        raise Invalid(
            f'expected a reference (the value a declaration returns) or "type#key", got {_kind(v)}'
        )
    return [normalise_ref(r, ctx) for r in raw]


def references(v: Any, ctx: Context) -> list[str]:
    if _is_empty_table(v) or v is None:
        return []
    items = v if isinstance(v, list) else [v]
    out: list[str] = []
    for x in items:
        for ref in reference(x, ctx):
            if ref not in out:
                out.append(ref)
    return out


def normalise_ref(ref: str, ctx: Context) -> str:
    type_, sep, key = ref.partition("#")
    if not sep or not key:
        raise Invalid(f'reference {_show(ref)} must look like "type#key", e.g. "file#~/.zshrc"')
    schema = SCHEMAS.get(type_)
    if schema is None or type_ == "defaults":
        raise Invalid(
            f"reference {_show(ref)} names an unknown type `{type_}`{_suggest(type_, REFERABLE)}"
        )
    try:
        normal = schema.props[schema.key].check(key, ctx)
    except Invalid as e:
        raise Invalid(f"reference {_show(ref)}: {e}") from None
    return f"{type_}#{normal}"


_CHECK_FIELDS = {"command", "tries", "try_sleep", "timeout", "name", "format"}


def health_checks(v: Any, ctx: Context) -> list[dict[str, Any]]:
    """`{command, tries, try_sleep, timeout}` checks with Nagios exit codes."""
    if _is_empty_table(v) or v is None:
        return []
    items = [v] if isinstance(v, dict) else v
    if not isinstance(items, list):
        raise Invalid(f"health_checks must be a list of {{ command = ... }} tables, got {_kind(v)}")
    out: list[dict[str, Any]] = []
    for i, c in enumerate(items, 1):
        if isinstance(c, str):
            c = {"command": c}
        if not isinstance(c, dict):
            raise Invalid(f"health check {i} must be a table with a command")
        unknown = set(c) - _CHECK_FIELDS
        if unknown:
            bad = sorted(unknown)[0]
            raise Invalid(f"health check {i}: unknown field `{bad}`{_suggest(bad, _CHECK_FIELDS)}")
        if "command" not in c:
            raise Invalid(f"health check {i}: `command` is required")
        if c.get("format", "nagios") != "nagios":
            raise Invalid(f"health check {i}: only the nagios format is supported")
        check: dict[str, Any] = {"command": nonempty_string(c["command"], ctx)}
        try:
            check["tries"] = integer(c.get("tries", 1), ctx)
            if check["tries"] < 1:
                raise Invalid(f"tries must be 1 or more, got {check['tries']}")
            check["try_sleep"] = duration(c.get("try_sleep", 1), ctx)
            if "timeout" in c:
                check["timeout"] = duration(c["timeout"], ctx)
        except Invalid as e:
            raise Invalid(f"health check {i}: {e}") from None
        if "name" in c:
            check["name"] = string(c["name"], ctx)
        out.append(check)
    return out


_SHA256 = r"^[0-9a-f]{64}$"


def fetch_source(v: Any, ctx: Context) -> dict[str, Any]:
    """A `lib.fetchUrl` / `lib.fetchGit` / `lib.fetchGitHub` descriptor."""
    if not isinstance(v, dict) or v.get("fetch") not in ("url", "git", "github"):
        raise Invalid("source must be lib.fetchUrl{...}, lib.fetchGit{...} or lib.fetchGitHub{...}")
    d = {k: x for k, x in v.items() if x is not None}
    sha = d.get("sha256")
    if sha is not None:
        sha = sha.lower()
        if not re.match(_SHA256, sha):
            raise Invalid(f"sha256 must be 64 hexadecimal digits, got {_show(v.get('sha256'))}")
        d["sha256"] = sha
    if d["fetch"] == "url":
        url = d["url"]
        if url.startswith("file://"):
            pass
        elif not url.startswith(("http://", "https://")):
            if url.startswith(("/", "~", ".")):
                d["url"] = "file://" + local_path(url, ctx)
            else:
                raise Invalid(f"url must be http://, https:// or file://, got {_show(url)}")
    if d["fetch"] == "git" and not re.fullmatch(r"[0-9a-fA-F]{7,40}|[A-Za-z0-9._/-]+", d["rev"]):
        raise Invalid(f"rev {_show(d['rev'])} is not a commit, tag or branch name")
    return d


# CCM's archive kinds, by the end of a file name.
ARCHIVE_KINDS = {".tar.gz": "tar.gz", ".tgz": "tar.gz", ".tar": "tar", ".zip": "zip"}


def archive_kind(name: str) -> str | None:
    """`tar.gz`, `tar` or `zip` from a file name's end, or None."""
    lower = name.lower()
    return next((k for end, k in ARCHIVE_KINDS.items() if lower.endswith(end)), None)


def archive_path(v: Any, ctx: Context) -> str:
    p = clean_absolute(v, ctx, "archive path")
    if archive_kind(p) is None:
        raise Invalid(f"archive path must end in .tar.gz, .tgz, .tar or .zip, got {_show(v)}")
    return p


def archive_url(v: Any, ctx: Context) -> str:
    url = nonempty_string(v, ctx)
    if not url.startswith(("http://", "https://", "file://")):
        raise Invalid(f"url must be http://, https:// or file://, got {_show(url)}")
    path = url.split("?", 1)[0].split("#", 1)[0]
    if archive_kind(path) is None:
        raise Invalid(f"url must name a .tar.gz, .tgz, .tar or .zip file, got {_show(url)}")
    return url


def sha256(v: Any, ctx: Context) -> str:
    s = nonempty_string(v, ctx).strip().lower()
    if not re.match(_SHA256, s):
        raise Invalid(f"checksum must be a SHA-256: 64 hexadecimal digits, got {_show(v)}")
    return s


def http_headers(v: Any, ctx: Context) -> dict[str, str]:
    table = mapping(v, ctx)
    out = {}
    for name, value in table.items():
        if not re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", str(name)):
            raise Invalid(f"{_show(name)} is not an HTTP header name")
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise Invalid(f"header {name}: expected a string, got {_kind(value)}")
        text = str(value)
        if "\r" in text or "\n" in text:
            raise Invalid(f"header {name}: a value may not contain a line break")
        out[str(name)] = text
    return out


def returns(v: Any, ctx: Context) -> list[int]:
    """Acceptable exit codes; an empty list means the default [0], as in the seed."""
    return list_of(integer)(v, ctx) or [0]


def path_like_value(v: Any, ctx: Context) -> list[str]:
    parts = list_of(string)(v, ctx)
    out: list[str] = []
    for p in parts:
        out.extend(_expand(x, ctx) for x in p.split(":") if x)
    return out


def env_name(v: Any, ctx: Context) -> str:
    name = string(v, ctx)
    if not re.match(_ENV_NAME, name):
        raise Invalid(
            f"{_show(name)} is not a valid environment variable name (letters, digits, _)"
        )
    return name


def env_value(v: Any, ctx: Context) -> str:
    """A scalar value; a leading `~/` means the home, as in every path."""
    return _scalar_text(v) if isinstance(v, (int, float, bool)) else _expand(string(v, ctx), ctx)


# ---------------------------------------------------------------------------
# Lua types, for the editor stubs
# ---------------------------------------------------------------------------

string_list = list_of(nonempty_string)  # bin, groups

# What each check accepts, as a lua-language-server type. `choice` adds its
# own; SysluaRef, SysluaHealthCheck and SysluaSource are hand-written in
# lua/types/syslua.lua.
_LUA_TYPES.update(
    {
        anything: "any",
        string: "string",
        nonempty_string: "string",
        boolean: "boolean",
        integer: "integer",
        non_negative: "integer",
        name_or_id: "string|integer",
        file_path: "string",
        abs_path: "string",
        local_path: "string",
        mode: "string|integer",
        duration: "string|number",
        string_list: "string|string[]",
        environment: "string[]|table<string,string|number>",
        search_path: "string|string[]",
        mapping: "table",
        content: "string",
        references: "SysluaRef|string|(SysluaRef|string)[]",
        health_checks: "SysluaHealthCheck|(SysluaHealthCheck|string)[]",
        fetch_source: "SysluaSource",
        archive_path: "string",
        archive_url: "string",
        sha256: "string",
        http_headers: "table<string,string>",
        returns: "integer|integer[]",
        path_like_value: "string|string[]",
        env_name: "string",
        env_value: "string|number|boolean",
        package_name: "string",
        package_ensure: '"present"|"absent"|"latest"|string',
    }
)


def lua_type(prop: Prop) -> str:
    """The lua-language-server type of the values `prop` accepts."""
    try:
        return _LUA_TYPES[prop.check]
    except KeyError:
        raise KeyError(
            f"no Lua type for the check of property `{prop.name}`: add it to _LUA_TYPES"
        ) from None


# ---------------------------------------------------------------------------
# the schemas
# ---------------------------------------------------------------------------

COMMON = {
    "depends_on": Prop(
        "depends_on", references, mergeable=True, doc="items that must be applied before this one"
    ),
    "subscribe": Prop(
        "subscribe",
        references,
        mergeable=True,
        doc="items whose change triggers this one (an exec runs, others are refreshed)",
    ),
    "health_checks": Prop(
        "health_checks",
        health_checks,
        mergeable=True,
        doc="commands checked after applying, with Nagios exit codes",
    ),
}


# Properties that only the CCM manifest reader sets (never a Lua config), on
# every type: a manifest's resources run in the order written, and with
# `fail_on_error: false` (CCM's default) a failure does not stop the rest.
CCM_ONLY = {
    "after": Prop(
        "after",
        references,
        mergeable=True,
        doc="items that finish first; their failure does not skip this one (manifest order)",
    ),
    "fail_on_error": Prop(
        "fail_on_error",
        boolean,
        doc="false: starts even after another item failed (the apply still rolls back)",
    ),
}


def _schema(
    name: str,
    props: list[Prop],
    aliases: dict[str, str] | None = None,
    defaults: dict[str, Any] | None = None,
    common: bool = True,
    doc: str = "",
    hints: dict[str, str] | None = None,
) -> TypeSchema:
    """The schema of type `name`, keyed by its property in `constants.KEYS`."""
    table = {p.name: p for p in props}
    aliases = dict(aliases or {})
    if common:
        for p in COMMON.values():
            table.setdefault(p.name, p)
        aliases.setdefault("require", "depends_on")  # CCM's name for it
    required = tuple(p.name for p in table.values() if p.required)
    return TypeSchema(name, KEYS[name], table, aliases, defaults or {}, required, doc, hints or {})


_OS_PACKAGE_HINT = (
    "`package {}` is a tool fetched into syslua's store (version, source, bin). "
    "For a package of the operating system (apt, dnf), CCM's `package`, write\n"
    '  os_package { name = "hello", ensure = "present" }'
)

SCHEMAS: dict[str, TypeSchema] = {
    "file": _schema(
        "file",
        [
            Prop("path", file_path, doc="absolute or ~/ path"),
            Prop(
                "ensure",
                choice("present", "absent", "directory", "link"),
                doc="what should be at path",
            ),
            Prop(
                "content",
                content,
                slot="body",
                doc="the file's exact content; may contain {{ lookup('facts.x') }}",
            ),
            Prop(
                "source",
                local_path,
                slot="body",
                doc="a file to copy, or a directory whose whole tree is managed; relative to this manifest",
            ),
            Prop(
                "target",
                local_path,
                doc='what the symlink points to (ensure = "link"); relative to this manifest',
            ),
            Prop(
                "link",
                boolean,
                doc="make path (or every file of a source tree) a symlink to its source file",
            ),
            Prop(
                "template",
                boolean,
                doc="render source (or every file of a source tree) like inline content",
            ),
            Prop(
                "ignore",
                string_list,
                mergeable=True,
                doc="gitignore-style patterns, relative to a directory source, left out of the tree",
            ),
            Prop(
                "dir_mode",
                mode,
                doc="mode of the directories of a tree and of missing parents syslua creates",
            ),
            Prop(
                "owner",
                name_or_id,
                required=True,
                doc="user name or numeric uid (an absent file needs none)",
            ),
            Prop(
                "group",
                name_or_id,
                required=True,
                doc="group name or numeric gid (an absent file needs none)",
            ),
            Prop(
                "mode",
                mode,
                required=True,
                doc='octal mode, e.g. "0644" (an absent file or a link needs none)',
            ),
            Prop(
                "force",
                boolean,
                doc="allow replacing a file with a directory and removing a non-empty directory",
            ),
            Prop("provider", choice("posix"), doc="the only provider"),
        ],
        aliases={"contents": "content"},
        defaults={"ensure": "present", "provider": "posix", "force": False},
        doc="A file or directory (docs/resources/file.md).",
    ),
    "exec": _schema(
        "exec",
        [
            Prop(
                "name",
                nonempty_string,
                doc="identifies the exec; also the command when `command` is not given",
            ),
            Prop("command", nonempty_string, doc="what to run (defaults to name)"),
            Prop("cwd", abs_path, doc="working directory"),
            Prop(
                "environment",
                environment,
                mergeable=True,
                doc='added to the environment: { "KEY=value" } or { KEY = "value" }',
            ),
            Prop("path", search_path, doc="PATH for finding the program and for the command"),
            Prop("returns", returns, doc="exit codes that count as success"),
            Prop(
                "timeout",
                duration,
                doc='e.g. 30, "500ms", "5m", "1h30m"; the command is killed on expiry',
            ),
            Prop("creates", abs_path, doc="when this path exists, the command is not run"),
            Prop("onlyif", nonempty_string, doc="run only if this guard command exits 0"),
            Prop("unless", nonempty_string, doc="run only if this guard command exits non-zero"),
            Prop("refresh_only", boolean, doc="run only when an item in subscribe changed"),
            Prop("logoutput", boolean, doc="show the command's output as it runs"),
            Prop(
                "provider",
                choice("posix", "shell"),
                doc="posix runs the program directly; shell runs /bin/sh -c command",
            ),
            Prop(
                "undo",
                nonempty_string,
                doc="a command that reverses this one (rollback and removal)",
            ),
            Prop("ensure", choice("present"), doc="accepted for CCM compatibility; no effect"),
        ],
        aliases={"refreshonly": "refresh_only"},
        defaults={"provider": "posix", "returns": [0], "refresh_only": False, "logoutput": False},
        doc="A command to run (docs/resources/exec.md).",
    ),
    "apply": _schema(
        "apply",
        [
            Prop("name", local_path, doc="child manifest (.lua or .yaml), relative to this file"),
            Prop("ensure", choice("present"), doc="the only value"),
            Prop("noop", boolean, doc="run the child's resources in noop mode"),
            Prop(
                "health_check_only",
                boolean,
                doc="only run the health checks of the child's resources",
            ),
            Prop(
                "allow_apply", boolean, doc="whether the child may contain apply items of its own"
            ),
            Prop(
                "data",
                mapping,
                doc="sys.data in a Lua child, the data. root of lookups in a YAML child",
            ),
            Prop(
                "provider",
                choice("ccmmanifest", "lua"),
                doc="accepted for CCM compatibility; the format follows the file extension",
            ),
        ],
        defaults={
            "ensure": "present",
            "noop": False,
            "health_check_only": False,
            "allow_apply": True,
            "data": {},
        },
        doc="A child manifest, Lua or CCM YAML (docs/resources/apply.md).",
    ),
    "package": _schema(
        "package",
        [
            Prop("name", nonempty_string, doc="the package's name"),
            Prop(
                "version", nonempty_string, required=True, doc="its version; part of the store path"
            ),
            Prop(
                "source",
                fetch_source,
                required=True,
                doc="lib.fetchUrl{...}, lib.fetchGitHub{...} or lib.fetchGit{...}",
            ),
            Prop(
                "bin",
                string_list,
                mergeable=True,
                doc="programs in the unpacked tree to link into the profile's bin",
            ),
            Prop(
                "strip_components",
                non_negative,
                doc="leading path components removed from archive members",
            ),
            Prop(
                "format",
                choice("tar.gz", "tar.xz", "tar.bz2", "zip", "binary"),
                doc="how to unpack (guessed from the URL when omitted)",
            ),
        ],
        defaults={"strip_components": 0},
        doc="A tool fetched into the store and linked into the profile (docs/resources/package.md).",
        hints=dict.fromkeys(("ensure", "provider"), _OS_PACKAGE_HINT),
    ),
    "os_package": _schema(
        "os_package",
        [
            Prop("name", package_name, doc="the package's name, as apt or dnf knows it"),
            Prop(
                "ensure",
                package_ensure,
                doc='"present", "absent", "latest" or a version such as "2.10-3"',
            ),
            Prop(
                "provider",
                choice("apt", "dnf"),
                doc="the package manager; chosen from the machine when not given",
            ),
        ],
        defaults={"ensure": "present"},
        doc="A package of the operating system, through apt or dnf; needs root (docs/resources/os_package.md).",
    ),
    "user": _schema(
        "user",
        [
            Prop("name", nonempty_string, doc="the login name"),
            Prop("ensure", choice("present", "absent"), doc="whether the account should exist"),
            Prop("uid", non_negative, doc="the user id"),
            Prop("gid", name_or_id, doc="the primary group (name or number); must exist"),
            Prop(
                "groups", string_list, mergeable=True, doc="supplementary groups; each must exist"
            ),
            Prop("purge_groups", boolean, doc="also remove the account from groups not listed"),
            Prop("shell", abs_path, doc="the login shell"),
            Prop("home", abs_path, doc="the home directory recorded for the account"),
            Prop("comment", string, doc="the GECOS field"),
        ],
        defaults={"ensure": "present", "purge_groups": False},
        doc="An OS account; applying it needs root (docs/resources/user.md).",
    ),
    "archive": _schema(
        "archive",
        [
            Prop(
                "name",
                archive_path,
                doc="absolute path where the archive is saved (.tar.gz, .tgz, .tar or .zip)",
            ),
            Prop(
                "ensure",
                choice("present", "absent"),
                doc="present: downloaded (and extracted); absent: the archive file removed",
            ),
            Prop("url", archive_url, doc="http://, https:// or file:// URL of the archive"),
            Prop(
                "checksum",
                sha256,
                doc="SHA-256 of the archive, verified before anything is extracted",
            ),
            Prop("extract_parent", abs_path, doc="directory the archive is extracted into"),
            Prop(
                "creates",
                abs_path,
                doc="when this path exists, nothing is downloaded or extracted",
            ),
            Prop(
                "cleanup",
                boolean,
                doc="remove the archive file once extracted (needs extract_parent and creates)",
            ),
            Prop("owner", name_or_id, doc="owner of the archive file and of what is extracted"),
            Prop("group", name_or_id, doc="group of the archive file and of what is extracted"),
            Prop("username", nonempty_string, doc="user for HTTP basic authentication"),
            Prop("password", string, doc="password for HTTP basic authentication"),
            Prop("headers", http_headers, doc="extra HTTP headers: { Name = value }"),
            Prop("provider", choice("http"), doc="accepted for CCM compatibility; the only one"),
        ],
        defaults={"ensure": "present", "cleanup": False, "provider": "http"},
        doc="An archive downloaded and extracted (docs/resources/archive.md).",
    ),
    "env": _schema(
        "env",
        [Prop("name", env_name), Prop("value", env_value)],
        common=False,
    ),
    "defaults": _schema("defaults", [], common=False),
    # Recorded by sys.build / sys.bind in the prelude, never written by hand.
    "build": _schema(
        "build",
        [
            Prop("id", nonempty_string),
            Prop("inputs", anything),
            Prop("actions", anything),
            Prop("outputs", anything),
        ],
    ),
    "bind": _schema(
        "bind",
        [
            Prop("id", nonempty_string),
            Prop("inputs", anything),
            Prop("actions", anything),
            Prop("outputs", anything),
            Prop("update", anything),
            Prop("destroy", anything),
            Prop("check", anything),
            Prop("update_outputs", anything),
            Prop("check_result", anything),
        ],
    ),
}

REFERABLE = (
    "file",
    "exec",
    "apply",
    "package",
    "os_package",
    "user",
    "env",
    "build",
    "bind",
    "archive",
)

# Environment variables whose values are lists of paths: merged, not replaced.
PATH_LIKE = {"PATH", "MANPATH", "INFOPATH", "XDG_DATA_DIRS", "XDG_CONFIG_DIRS", "FPATH", "CDPATH"}


def is_path_like(name: str) -> bool:
    return name in PATH_LIKE or name.endswith("PATH")


def env_prop(var: str) -> Prop:
    if is_path_like(var):
        return Prop("value", path_like_value, mergeable=True)
    return SCHEMAS["env"].props["value"]


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def suggestion(name: str, candidates: Any) -> str | None:
    close = difflib.get_close_matches(name, sorted(candidates), n=1, cutoff=0.6)
    return close[0] if close else None


def _suggest(name: str, candidates: Any) -> str:
    best = suggestion(name, candidates)
    return f" (did you mean `{best}`?)" if best else ""


def unknown_property(type_: str, name: str) -> Invalid:
    schema = SCHEMAS[type_]
    valid = set(schema.props) | set(schema.aliases)
    hint = schema.hints.get(name)
    suggest = "" if hint else _suggest(name, valid)
    return Invalid(f"unknown property `{name}` for {type_}{suggest}", hint)


def _kind(v: Any) -> str:
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return f"the number {v}"
    if isinstance(v, str):
        return f"the string {_show(v)}"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, dict):
        return "a reference" if "__syslua_refs" in v else "a table"
    if v is None:
        return "nil"
    return type(v).__name__


_CONTROL = "[\x00-\x1f\x7f-\x9f]"  # compiled by `re` on first use (and cached there)


def escaped(text: str) -> str:
    """`text` with control characters shown as escapes (`\\n`, `\\x1b`), for
    messages that quote a value: it cannot start a line of its own."""
    control = re.compile(_CONTROL)
    if control.search(text) is None:
        return text
    return control.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), text)


def _show(v: Any) -> str:
    return f'"{escaped(v)}"' if isinstance(v, str) else str(v)


def _scalar_text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)
