"""The dnf provider of `os_package`: rpm reads, dnf acts.

The same operations as the apt provider (`os_package_apt`), for RHEL and
Fedora: `rpm -q` for the installed version (VERSION-RELEASE, with the epoch
when it is not 0), `dnf install -y NAME-VERSION` for an install or an
upgrade, `dnf downgrade -y` for a downgrade, `dnf remove -y` to remove. dnf
has no dry run that lists a transaction as apt-get -s does, so the plan
lists only the package itself. It never refreshes metadata by itself beyond
what dnf's own cache policy does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from syslua.resources.base import ResourceError
from syslua.resources.os_package import Change, Installed, Restore
from syslua.resources.process import CannotStart, ProcessResult, Runner

if TYPE_CHECKING:
    from syslua.resources.providers import OnLine

NAME = "dnf"
TOOLS = ("dnf", "rpm")
_QUERY = "%|EPOCH?{%{EPOCH}:}:{}|%{VERSION}-%{RELEASE}\\n"


def _run(runner: Runner, argv: Sequence[str], on_line: OnLine = None) -> ProcessResult:
    try:
        return runner.run_argv(argv, on_line=on_line)
    except CannotStart as e:
        raise ResourceError(str(e)) from e


def _failure(what: str, result: ProcessResult) -> ResourceError:
    return ResourceError(f"{what} failed: {result.describe()}")


def compare(a: str, b: str) -> int:
    """rpm's version order (rpmvercmp on epoch, version and release): -1, 0 or 1."""
    ea, va, ra = _split(a)
    eb, vb, rb = _split(b)
    if ea != eb:
        return -1 if ea < eb else 1
    return _vercmp(va, vb) or (_vercmp(ra, rb) if ra and rb else 0)


def _split(evr: str) -> tuple[int, str, str]:
    epoch, sep, rest = evr.partition(":")
    if not sep or not epoch.isdigit():
        epoch, rest = "0", evr
    version, _, release = rest.partition("-")
    return int(epoch), version, release


def _segments(s: str) -> list[str]:
    import re

    return re.findall(r"~|\^|[0-9]+|[A-Za-z]+", s)


def _vercmp(a: str, b: str) -> int:
    if a == b:
        return 0
    sa, sb = _segments(a), _segments(b)
    for x, y in zip(sa, sb, strict=False):
        if x != y and "~" in (x, y):
            return -1 if x == "~" else 1
        if x != y and "^" in (x, y):
            return 1 if x == "^" else -1
        if x.isdigit() and y.isdigit():
            nx, ny = int(x), int(y)
            if nx != ny:
                return -1 if nx < ny else 1
        elif x.isdigit() != y.isdigit():
            return 1 if x.isdigit() else -1  # numbers are newer than letters
        elif x != y:
            return -1 if x < y else 1
    if len(sa) == len(sb):
        return 0
    longer, sign = (sa, 1) if len(sa) > len(sb) else (sb, -1)
    nxt = longer[min(len(sa), len(sb))]
    if nxt == "~":
        return -sign  # 1.0~rc1 is older than 1.0
    return sign


def installed(runner: Runner, name: str) -> Installed:
    result = _run(runner, ["rpm", "-q", "--queryformat", _QUERY, name])
    lines = result.stdout.split()
    if result.exit_code != 0 or not lines:
        return Installed(None)
    return Installed(lines[-1], "installed")


def candidate(runner: Runner, name: str) -> str | None:
    versions = sorted(available(runner, [name]).get(name, ()), key=_Key)
    return versions[-1] if versions else None


class _Key:
    def __init__(self, version: str) -> None:
        self.version = version

    def __lt__(self, other: _Key) -> bool:
        return compare(self.version, other.version) < 0


def available(runner: Runner, names: Iterable[str]) -> dict[str, set[str]]:
    """Versions the enabled repositories offer (`dnf repoquery`)."""
    names = sorted(set(names))
    out: dict[str, set[str]] = {n: set() for n in names}
    if not names:
        return out
    result = _run(
        runner,
        ["dnf", "-q", "repoquery", "--available", "--qf", "%{name} %{evr}\\n", *names],
    )
    # dnf 4 ends each entry with a newline itself, dnf 5 only where the format
    # says so: read name/version pairs, whatever separates them.
    words = result.stdout.replace("\\n", "\n").split()
    for pkg, evr in zip(words[0::2], words[1::2], strict=False):
        if pkg in out:
            out[pkg].add(evr.removeprefix("0:"))
    return out


def simulate(
    runner: Runner, name: str, version: str | None, *, remove: bool = False
) -> list[Change]:
    before = installed(runner, name).version
    after = None if remove else (version or candidate(runner, name))
    if not remove and after is None:
        raise ResourceError(f"no package {name} in the enabled repositories")
    return [Change(name, before, after)]


def auto_installed(runner: Runner, names: Iterable[str]) -> list[str]:
    return []


def install(
    runner: Runner, name: str, version: str | None, downgrade: bool, on_line: OnLine = None
) -> ProcessResult:
    spec = f"{name}-{version}" if version else name
    args = ["dnf", "-y", "downgrade" if downgrade else "install", spec]
    result = _run(runner, args, on_line)
    if result.exit_code != 0:
        raise _failure(" ".join(args[2:]), result)
    return result


def uninstall(runner: Runner, name: str, on_line: OnLine = None) -> ProcessResult:
    result = _run(runner, ["dnf", "-y", "remove", name], on_line)
    if result.exit_code != 0:
        raise _failure(f"dnf remove {name}", result)
    return result


def restore(runner: Runner, want: Restore) -> None:
    for name, version in sorted(want.versions.items()):
        now = installed(runner, name).version
        if version is None:
            if now is not None:
                uninstall(runner, name)
        elif now is None or compare(now, version) != 0:
            install(runner, name, version, downgrade=now is not None and compare(now, version) > 0)


def unavailable(runner: Runner, changes: Sequence[Change]) -> Mapping[str, str]:
    before = {c.name: c.before for c in changes if c.before is not None and c.before != c.after}
    offered = available(runner, before)
    return {n: v for n, v in before.items() if v not in offered.get(n, set())}
