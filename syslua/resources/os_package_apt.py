"""The apt provider of `os_package`: dpkg-query reads, apt-get acts, `apt-get -s` plans.

Every command runs through the Runner, non-interactively
(DEBIAN_FRONTEND=noninteractive, apt-listbugs and apt-listchanges silenced,
`-y`), and apt-get keeps configuration files the admin changed
(`--force-confold`). It never runs `apt-get update`: the index is whatever
the machine has, so a plan and the apply that follows it see the same
archive. Packages in the `config-files` state (removed, configuration kept)
or half installed count as absent; installing them again repairs them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from syslua.resources.base import ResourceError
from syslua.resources.os_package import Change, Installed, Restore
from syslua.resources.process import CannotStart, ProcessResult, Runner

if TYPE_CHECKING:
    from syslua.resources.providers import OnLine

NAME = "apt"
TOOLS = ("apt-get", "apt-cache", "apt-mark", "dpkg-query")
ENV = (
    "DEBIAN_FRONTEND=noninteractive",
    "APT_LISTBUGS_FRONTEND=none",
    "APT_LISTCHANGES_FRONTEND=none",
)
KEEP_CONFIG = ("-o", "Dpkg::Options::=--force-confold")
# `Inst hello [2.10-2] (2.10-3 Debian:12.15/stable [amd64])`, `Remv hello [2.10-3]`
_SIMULATED = r"^(Inst|Remv|Purg) (\S+)(?: \[([^\]]*)\])?(?: \((\S+))?"


def compare(a: str, b: str) -> int:
    """Debian's version order (epoch, then upstream and revision with `~`
    before everything and digits compared as numbers): -1, 0 or 1."""
    ea, ua, ra = _split(a)
    eb, ub, rb = _split(b)
    if ea != eb:
        return -1 if ea < eb else 1
    return _cmp_part(ua, ub) or _cmp_part(ra, rb)


def _split(version: str) -> tuple[int, str, str]:
    epoch, sep, rest = version.partition(":")
    if not sep or not epoch.isdigit():
        epoch, rest = "0", version
    upstream, _, revision = rest.rpartition("-") if "-" in rest else (rest, "", "")
    return int(epoch), upstream, revision


def _order(c: str) -> int:
    if c == "~":
        return -1
    if c.isalpha():
        return ord(c)
    return ord(c) + 256  # letters sort before other characters


def _cmp_part(a: str, b: str) -> int:
    i = j = 0
    while i < len(a) or j < len(b):
        while (i < len(a) and not a[i].isdigit()) or (j < len(b) and not b[j].isdigit()):
            ca = _order(a[i]) if i < len(a) and not a[i].isdigit() else 0
            cb = _order(b[j]) if j < len(b) and not b[j].isdigit() else 0
            if ca != cb:
                return -1 if ca < cb else 1
            i, j = i + 1, j + 1
        da = db = 0
        while i < len(a) and a[i].isdigit():
            da, i = da * 10 + int(a[i]), i + 1
        while j < len(b) and b[j].isdigit():
            db, j = db * 10 + int(b[j]), j + 1
        if da != db:
            return -1 if da < db else 1
    return 0


def _run(runner: Runner, argv: Sequence[str], on_line: OnLine = None) -> ProcessResult:
    try:
        return runner.run_argv(argv, environment=ENV, on_line=on_line)
    except CannotStart as e:
        raise ResourceError(str(e)) from e


def _failure(what: str, result: ProcessResult) -> ResourceError:
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith(("E:", "dpkg:"))]
    if errors:
        return ResourceError(f"{what} failed: " + "; ".join(e.removeprefix("E: ") for e in errors))
    return ResourceError(f"{what} failed: {result.describe()}")


def installed(runner: Runner, name: str) -> Installed:
    """The package's state as dpkg knows it; only `installed` counts as present."""
    result = _run(runner, ["dpkg-query", "-W", "-f", "${Status} ${Version}\\n", name])
    return parse_status(result.stdout if result.exit_code == 0 else "")


def parse_status(text: str) -> Installed:
    """`install ok installed 2.10-3` is present; `deinstall ok config-files 2.10-3`,
    half-installed and the like are absent (installing again repairs them)."""
    for line in text.splitlines():
        words = line.split()
        if len(words) >= 4 and words[2] == "installed":
            return Installed(words[3], "installed")
        if len(words) >= 3:
            return Installed(None, words[2])
    return Installed(None)  # dpkg never heard of it


def candidate(runner: Runner, name: str) -> str | None:
    """The version `apt-get install NAME` would pick (`apt-cache policy`), if any."""
    result = _run(runner, ["apt-cache", "policy", name])
    return parse_candidate(result.stdout)


def parse_candidate(text: str) -> str | None:
    for line in text.splitlines():
        key, _, value = line.strip().partition(":")
        if key == "Candidate":
            value = value.strip()
            return None if value in ("", "(none)") else value
    return None


def available(runner: Runner, names: Iterable[str]) -> dict[str, set[str]]:
    """Versions the configured archives offer for each name (`apt-cache madison`)."""
    names = sorted(set(names))
    if not names:
        return {}
    result = _run(runner, ["apt-cache", "madison", *names])
    return parse_madison(result.stdout, names)


def parse_madison(text: str, names: Iterable[str]) -> dict[str, set[str]]:
    """`hello | 2.10-3 | http://deb.debian.org/debian bookworm/main amd64 Packages`
    lines: binary versions only (source packages end in `Sources`)."""
    out: dict[str, set[str]] = {n: set() for n in names}
    for line in text.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) >= 3 and parts[2].endswith("Packages"):
            out.setdefault(parts[0], set()).add(parts[1])
    return out


def _install_args(spec: str, downgrade: bool) -> list[str]:
    return ["install", *KEEP_CONFIG, *(["--allow-downgrades"] if downgrade else []), spec]


def _spec(name: str, version: str | None) -> str:
    return f"{name}={version}" if version else name


def simulate(
    runner: Runner, name: str, version: str | None, *, remove: bool = False
) -> list[Change]:
    """What apt-get would do (`apt-get -s`), without changing anything: every
    package it would install, upgrade, downgrade or remove."""
    args = ["remove", name] if remove else _install_args(_spec(name, version), True)
    result = _run(runner, ["apt-get", "-s", "-q", *args])
    if result.exit_code != 0:
        raise _failure(f"apt-get -s {' '.join(args)}", result)
    return parse_simulation(result.stdout)


def parse_simulation(text: str) -> list[Change]:
    out: list[Change] = []
    for line in text.splitlines():
        m = re.match(_SIMULATED, line)
        if m is None:
            continue
        action, pkg, before, after = m.groups()
        if action == "Inst":
            out.append(Change(pkg, before or None, after))
        else:
            out.append(Change(pkg, before or None, None))
    return out


def auto_installed(runner: Runner, names: Iterable[str]) -> list[str]:
    """Which of `names` apt marked as installed automatically (as dependencies)."""
    names = sorted(set(names))
    if not names:
        return []
    result = _run(runner, ["apt-mark", "showauto", *names])
    return sorted(set(result.stdout.split()) & set(names))


def install(
    runner: Runner, name: str, version: str | None, downgrade: bool, on_line: OnLine = None
) -> ProcessResult:
    args = ["apt-get", "-q", "-y", *_install_args(_spec(name, version), downgrade)]
    result = _run(runner, args, on_line)
    if result.exit_code != 0:
        raise _failure(f"apt-get install {_spec(name, version)}", result)
    return result


def uninstall(runner: Runner, name: str, on_line: OnLine = None) -> ProcessResult:
    result = _run(runner, ["apt-get", "-q", "-y", "remove", name], on_line)
    if result.exit_code != 0:
        raise _failure(f"apt-get remove {name}", result)
    return result


def restore(runner: Runner, want: Restore) -> None:
    """Put packages back as they were, in one apt-get transaction: a version
    (allowing downgrades), or removed (`name-`). Then mark as automatic again
    those that were dependencies."""
    words = [f"{n}-" if v is None else f"{n}={v}" for n, v in sorted(want.versions.items())]
    if words:
        args = ["apt-get", "-q", "-y", "install", *KEEP_CONFIG, "--allow-downgrades", *words]
        result = _run(runner, args)
        if result.exit_code != 0 and "dpkg --configure -a" in result.stderr:
            # The transaction being undone was killed half-way (Ctrl-C, a
            # crash): dpkg finishes configuring what it unpacked, then apt can act.
            _run(runner, ["dpkg", "--configure", "-a", "--force-confold"])
            result = _run(runner, args)
        if result.exit_code != 0:
            raise _failure("apt-get install " + " ".join(words), result)
    auto = [n for n in want.auto if want.versions.get(n) is not None]
    if auto:
        _run(runner, ["apt-mark", "auto", *auto])


def unavailable(runner: Runner, changes: Sequence[Change]) -> Mapping[str, str]:
    """Packages whose version before `changes` the archive no longer offers
    (name -> version): an undo could not bring them back."""
    before = {c.name: c.before for c in changes if c.before is not None and c.before != c.after}
    offered = available(runner, before)
    return {n: v for n, v in before.items() if v not in offered.get(n, set())}
