"""Value checks: what a property accepts, and how its values are normalised.

Each check takes a declared value and the `Context` of the declaration and
returns the normal form (`~` expanded, modes as `0644`, durations in
seconds), or raises `Invalid` with what is wrong; the message is shown with
the declaration's location. Kinds build their schemas from these
(`syslua.manifest.schema`); `LUA_TYPES` says what each accepts as a
lua-language-server type, for the editor stubs.
"""

from __future__ import annotations

import difflib
import posixpath
import re
from collections.abc import Callable, Mapping
from typing import Any

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


# ---------------------------------------------------------------------------
# value checks
# ---------------------------------------------------------------------------

LUA_TYPES: dict[Check, str] = {}  # check -> Lua type; filled by `choice` and below the checks


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

    LUA_TYPES[check] = "|".join(f'"{v}"' for v in values)
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


def list_of(item: Check) -> Check:
    """A list of `item`s; a single one stands for a list of one."""

    def check(v: Any, ctx: Context) -> list[Any]:
        if _is_empty_table(v) or v is None:
            return []
        if not isinstance(v, list):
            v = [v]
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
            raise Invalid(f"health check {i}: unknown field `{bad}`{suggest(bad, _CHECK_FIELDS)}")
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
LUA_TYPES.update(
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


PATH_LIKE = {"PATH", "MANPATH", "INFOPATH", "XDG_DATA_DIRS", "XDG_CONFIG_DIRS", "FPATH", "CDPATH"}


def is_path_like(name: str) -> bool:
    return name in PATH_LIKE or name.endswith("PATH")


def suggestion(name: str, candidates: Any) -> str | None:
    close = difflib.get_close_matches(name, sorted(candidates), n=1, cutoff=0.6)
    return close[0] if close else None


def suggest(name: str, candidates: Any) -> str:
    """` (did you mean `x`?)` for the closest of `candidates`, or nothing."""
    best = suggestion(name, candidates)
    return f" (did you mean `{best}`?)" if best else ""


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
