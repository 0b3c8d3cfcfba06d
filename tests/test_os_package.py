"""os_package: OS packages through apt (and dnf), CCM's `package`.

The first half runs anywhere: version order, the parsing of what apt's tools
print, the choice of a provider, the decisions and plan lines, and the
declaration's checks through the real CLI.

The second half changes the machine's packages for real and is marked
`root` (skipped without root, apt-get or dpkg-deb). Most of it uses a small
apt archive of its own: packages built here with dpkg-deb (`syslua-probe`,
in two versions, with a configuration file, and `syslua-probe-app` that
depends on `syslua-probe-lib`), served from a directory, and seen by apt
through APT_CONFIG, so apt's own lists and cache are not touched and no
network is needed. One test goes to Debian's real archive for `hello`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import machine_lock, ok, out, tree

from syslua.manifest.model import Item, freeze
from syslua.resources import os_package_apt as apt
from syslua.resources import os_package_dnf as dnf
from syslua.resources.base import CREATE, FAIL, NONE, REMOVE, UPDATE, Context, ResourceError
from syslua.resources.os_package import (
    Change,
    Installed,
    OsPackageType,
    Status,
    choose_provider,
    provider,
)
from syslua.resources.process import Runner

# dpkg's lock admits one apt-get at a time: the tests of this group take turns
# (conftest.machine_lock), whichever worker runs them.
pytestmark = pytest.mark.xdist_group("dpkg")

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
APT_TOOLS = ("apt-get", "apt-cache", "apt-mark", "dpkg-query", "dpkg-deb", "dpkg")
HAVE_APT = all(shutil.which(t) for t in APT_TOOLS)
needs_apt = pytest.mark.skipif(
    not (IS_ROOT and HAVE_APT), reason="needs root, apt-get and dpkg-deb"
)
PROBES = ("syslua-probe", "syslua-probe-app", "syslua-probe-lib")


# -- version order -------------------------------------------------------------
@pytest.mark.parametrize(
    "a,b,expected",
    [
        ("1.0", "1.0", 0),
        ("1.0", "2.0", -1),
        ("1.10", "1.9", 1),  # numbers compare as numbers
        ("1:1.0", "9.9", 1),  # an epoch wins over everything else
        ("0:2.10-3", "2.10-3", 0),  # epoch 0 is the same as none
        ("1.0~rc1", "1.0", -1),  # a tilde sorts before the end
        ("1.0~~", "1.0~", -1),
        ("1.0~alpha", "1.0~beta", -1),
        ("1.0a", "1.0+", -1),  # letters before other characters
        ("1.0-1", "1.0-2", -1),
        ("2.10-3", "2.10-3+b1", -1),
        ("2025b-0+deb12u2", "2026f-0+deb12u1", -1),
        ("1.2.3-1ubuntu1", "1.2.3-1", 1),
    ],
)
def test_debian_version_order(a: str, b: str, expected: int) -> None:
    assert apt.compare(a, b) == expected
    assert apt.compare(b, a) == -expected
    if shutil.which("dpkg"):  # the same order as dpkg's own
        for op, want in (("lt", expected < 0), ("eq", expected == 0), ("gt", expected > 0)):
            p = subprocess.run(["dpkg", "--compare-versions", a, op, b], capture_output=True)
            assert (p.returncode == 0) == want, (a, op, b)


@pytest.mark.parametrize(
    "a,b,expected",
    [
        ("5.8-9.el9", "5.8-9.el9", 0),
        ("1.0-1", "2.0-1", -1),
        ("1.10-1", "1.9-1", 1),
        ("1:1.0-1", "2.0-1", 1),
        ("1.0-1", "1.0-2", -1),
        ("1.0~rc1-1", "1.0-1", -1),
        ("1.0a-1", "1.0b-1", -1),
        ("1.0-1", "1.0.1-1", -1),
        ("5.9", "5.9-3.fc40", 0),  # a version without a release matches any release
    ],
)
def test_rpm_version_order(a: str, b: str, expected: int) -> None:
    assert dnf.compare(a, b) == expected
    assert dnf.compare(b, a) == -expected


# -- what apt's tools print ----------------------------------------------------------
SIMULATION = """\
NOTE: This is only a simulation!
Reading package lists...
The following NEW packages will be installed:
  hello libfoo
Inst libfoo (1.2-1 Debian:12.15/stable [amd64])
Inst hello [2.10-2] (2.10-3 Debian:12.15/stable [amd64])
Remv oldthing [0.9-1]
Conf libfoo (1.2-1 Debian:12.15/stable [amd64])
Conf hello (2.10-3 Debian:12.15/stable [amd64])
"""


def test_simulation_lists_the_whole_transaction() -> None:
    assert apt.parse_simulation(SIMULATION) == [
        Change("libfoo", None, "1.2-1"),
        Change("hello", "2.10-2", "2.10-3"),
        Change("oldthing", "0.9-1", None),
    ]


def test_candidate_and_versions_offered() -> None:
    policy = "hello:\n  Installed: (none)\n  Candidate: 2.10-3\n  Version table:\n     2.10-3 500\n"
    assert apt.parse_candidate(policy) == "2.10-3"
    assert apt.parse_candidate("hello:\n  Installed: 2.10-3\n  Candidate: (none)\n") is None
    assert apt.parse_candidate("") is None  # apt-cache knows no such package
    madison = (
        "     hello |     2.10-3 | http://deb.debian.org/debian bookworm/main amd64 Packages\n"
        "     hello |     2.10-2 | file:/srv/repo ./ Packages\n"
        "     hello |     2.10-3 | http://deb.debian.org/debian bookworm/main Sources\n"
    )
    assert apt.parse_madison(madison, ["hello", "sl"]) == {
        "hello": {"2.10-3", "2.10-2"},
        "sl": set(),
    }


@pytest.mark.parametrize(
    "output,expected",
    [
        ("install ok installed 2.10-3\n", Installed("2.10-3", "installed")),
        ("deinstall ok config-files 2.10-3\n", Installed(None, "config-files")),
        ("install reinstreq half-installed 2.10-3\n", Installed(None, "half-installed")),
        ("unknown ok not-installed \n", Installed(None, "not-installed")),
        ("", Installed(None)),
    ],
)
def test_dpkg_status(output: str, expected: Installed) -> None:
    """Only `installed` is present: config-files and half-installed count as absent."""
    assert apt.parse_status(output) == expected


# -- the provider --------------------------------------------------------------------
@pytest.mark.parametrize(
    "platform,family,tools,expected",
    [
        ("debian", "debian", (), "apt"),
        ("ubuntu", "debian", (), "apt"),
        ("linuxmint", "ubuntu", (), "apt"),
        ("fedora", "fedora", (), "dnf"),
        ("rocky", "rhel", (), "dnf"),
        ("almalinux", "rhel", (), "dnf"),
        ("something", "else", ("apt-get", "apt-cache", "apt-mark", "dpkg-query"), "apt"),
        ("something", "else", ("dnf", "rpm"), "dnf"),
    ],
)
def test_provider_from_facts(
    platform: str, family: str, tools: tuple, expected: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shutil, "which", lambda t: f"/usr/bin/{t}" if t in tools else None)
    assert choose_provider(platform, family) == expected


def test_no_provider_fits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda t: None)
    with pytest.raises(ResourceError) as info:
        choose_provider("arch", "arch")
    assert str(info.value) == (
        "no OS package provider for this machine (platform arch, family arch, "
        "neither apt-get nor dnf found); set `provider` to apt or dnf"
    )


def test_a_provider_is_imported_only_when_asked_for() -> None:
    """Loading the kind imports no provider: a plan without packages pays for none."""
    code = (
        "import sys\n"
        "from syslua.resources import os_package\n"
        "loaded = lambda: sorted(m for m in sys.modules if '.os_package_' in m)\n"
        "print(loaded())\n"
        "os_package.provider('dnf')\n"
        "print(loaded())\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.stdout.splitlines() == ["[]", "['syslua.resources.os_package_dnf']"], p.stderr


def test_an_unknown_provider_is_refused() -> None:
    with pytest.raises(ResourceError, match="unknown OS package provider 'yum'"):
        provider("yum")


# -- decisions and plan lines ------------------------------------------------------------
def _item(ensure: str, name: str = "hello", **more: Any) -> Item:
    return Item("os_package", name, freeze({"ensure": ensure, "provider": "apt", **more}))


def _planned(ensure: str, status: Status) -> tuple[str, str, bool | str]:
    rtype = OsPackageType()
    item = _item(ensure)
    d = rtype.decide(item, status, Context(runner=Runner(), noop=True))
    return d.action, d.plan_line, rtype.irreversible(item, d)


@pytest.mark.parametrize(
    "ensure,status,expected",
    [
        ("present", Status("apt", Installed("2.10-3")), (NONE, "2.10-3", False)),
        ("absent", Status("apt"), (NONE, "absent", False)),
        (
            "present",
            Status("apt", target="2.10-3", changes=(Change("hello", None, "2.10-3"),)),
            (CREATE, "will install (2.10-3)", False),
        ),
        (
            "latest",
            Status(
                "apt",
                Installed("2.10-2"),
                "2.10-3",
                (Change("hello", "2.10-2", "2.10-3"), Change("libfoo", None, "1.2")),
            ),
            (UPDATE, "will upgrade (2.10-2 -> 2.10-3; also installs libfoo 1.2)", False),
        ),
        (
            "2.10-2",
            Status("apt", Installed("2.10-3"), "2.10-2", (Change("hello", "2.10-3", "2.10-2"),)),
            (UPDATE, "will downgrade (2.10-3 -> 2.10-2)", False),
        ),
        (
            "absent",
            Status(
                "apt",
                Installed("2.10-3"),
                None,
                (Change("hello", "2.10-3", None), Change("hello-doc", "1", None)),
                {"hello": "2.10-3"},
            ),
            (
                REMOVE,
                "will uninstall (2.10-3; also removes hello-doc)",
                "the archive no longer has hello 2.10-3",
            ),
        ),
        (
            "9.9",
            Status("apt", Installed(None), error="version 9.9 of hello is not in the archive"),
            (FAIL, "version 9.9 of hello is not in the archive", False),
        ),
    ],
)
def test_decisions(ensure: str, status: Status, expected: tuple) -> None:
    assert _planned(ensure, status) == expected


@pytest.mark.parametrize(
    "recorded,planned",
    [
        (
            {"version": "2.10-3", "before": None},
            "will uninstall (no longer declared; syslua installed it)",
        ),
        (
            {"version": "2.10-3", "before": "2.10-2"},
            "no longer declared; it was installed before syslua managed it, so it stays",
        ),
        ({"version": None, "before": "2.10-2"}, "no longer declared; it is not installed"),
        ({"version": None, "before": None}, "no longer declared; it is not installed"),
    ],
)
def test_removal_depends_on_what_syslua_found(recorded: dict, planned: str) -> None:
    """A package leaving the config is uninstalled only if syslua installed it."""
    assert OsPackageType().removal(_item("present"), recorded).plan_line == planned


@pytest.mark.skipif(shutil.which("dnf") is not None, reason="dnf is installed here")
def test_a_provider_whose_tools_are_missing_cannot_be_applied(sysenv) -> None:  # type: ignore[no-untyped-def]
    sysenv.write("sys.lua", 'os_package { name = "zsh", provider = "dnf" }\n')
    p = sysenv.run("plan")
    assert p.returncode == 1, out(p)  # marked !: `sys apply` would refuse (issue 23)
    assert "! os_package zsh: provider dnf needs dnf" in p.stdout, out(p)
    assert "not found on PATH" in p.stdout


# -- the declaration -----------------------------------------------------------------
@pytest.mark.parametrize(
    "decl,message",
    [
        (
            'os_package { name = "hello", ensure = "newest" }',
            "sys.lua:1: os_package: `ensure`: must be present, absent, latest or a version; "
            'got "newest"',
        ),
        (
            'os_package { name = "hello world" }',
            'sys.lua:1: os_package: `name`: not a package name: "hello world"',
        ),
        (
            'os_package { name = "hello-" }',
            'sys.lua:1: os_package: `name`: not a package name: "hello-"',
        ),
        (
            'os_package { name = "hello", provider = "yum" }',
            'sys.lua:1: os_package: `provider`: must be one of apt, dnf; got "yum"',
        ),
        (
            'os_package { name = "hello", version = "2" }',
            "sys.lua:1: os_package: unknown property `version` for os_package",
        ),
    ],
)
def test_bad_declarations(sysenv, decl: str, message: str) -> None:  # type: ignore[no-untyped-def]
    sysenv.write("sys.lua", decl + "\n")
    before = tree(sysenv.root)
    p = sysenv.run("plan")
    assert p.returncode == 2, out(p)
    assert message in p.stderr, out(p)
    assert tree(sysenv.root) == before


def test_store_package_with_an_os_package_property_hints_at_os_package(sysenv) -> None:  # type: ignore[no-untyped-def]
    sysenv.write("sys.lua", 'package { name = "hello", ensure = "present" }\n')
    before = tree(sysenv.root)
    p = sysenv.run("plan")
    assert p.returncode == 2, out(p)
    assert "sys.lua:1: package: unknown property `ensure` for package" in p.stderr
    assert 'os_package { name = "hello", ensure = "present" }' in p.stderr
    assert "did you mean" not in p.stderr
    assert tree(sysenv.root) == before


def test_yaml_package_is_an_os_package(sysenv) -> None:  # type: ignore[no-untyped-def]
    from syslua.manifest.resolve import Options, resolve

    path = sysenv.write(
        "m.yaml",
        """\
        ccm:
          resources:
            - package:
                - zsh:
                    ensure: 5.9
                - defaults:
                    provider: apt
            - package:
                name: hello
                ensure: latest
        """,
    )
    m = resolve(path, Options())
    assert {i.id: dict(i.props) for i in m} == {
        # in the order written: hello runs after zsh (CCM's manifest order)
        "os_package#hello": {
            "ensure": "latest",
            "after": ("os_package#zsh",),
            "fail_on_error": False,
        },
        "os_package#zsh": {"ensure": "5.9", "provider": "apt", "fail_on_error": False},
    }


def test_yaml_references_to_a_package_name_the_os_package(sysenv) -> None:  # type: ignore[no-untyped-def]
    """`require: [package#nginx]` in a CCM manifest names CCM's package, which
    syslua declares as os_package#nginx; an alias of a package resolves the same way."""
    from syslua.manifest.resolve import Options, resolve

    path = sysenv.write(
        "m.yaml",
        """\
        ccm:
          resources:
            - exec:
                - first:
                    command: /bin/true
            - package:
                - nginx:
                    ensure: present
                    alias: web
            - exec:
                - reload:
                    command: /bin/true
                    refreshonly: true
                    require: [package#nginx]
                    subscribe: [package#web]
        """,
    )
    m = resolve(path, Options())
    reload = m.get("exec#reload")
    assert reload is not None
    assert list(reload.get("depends_on")) == ["os_package#nginx"]
    assert list(reload.get("subscribe")) == ["os_package#nginx"]


# -- on the machine: a small archive of our own ----------------------------------------
def _dpkg(name: str) -> str | None:
    """The installed version of a package, or None (config-files counts as absent)."""
    p = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Status} ${Version}", name], capture_output=True, text=True
    )
    words = p.stdout.split()
    return words[3] if p.returncode == 0 and len(words) == 4 and words[2] == "installed" else None


def _purge(*names: str) -> None:
    subprocess.run(["dpkg", "--purge", *names], capture_output=True, check=False)


class Archive:
    """A flat apt archive in a directory, and an apt configuration that sees only it."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.repo = base / "repo"
        for d in ("repo", "parts", "lists/partial", "cache/archives/partial"):
            (base / d).mkdir(parents=True)
        (base / "sources.list").write_text(f"deb [trusted=yes] file:{self.repo} ./\n")
        self.config = base / "apt.conf"
        self.config.write_text(
            f'Dir::Etc::SourceList "{base}/sources.list";\n'
            f'Dir::Etc::SourceParts "{base}/parts";\n'
            f'Dir::State::Lists "{base}/lists";\n'
            f'Dir::Cache "{base}/cache";\n'
        )

    def build(self, name: str, version: str, *, depends: str = "", conf: str = "") -> None:
        root = self.base / "build" / f"{name}-{version}"
        (root / "DEBIAN").mkdir(parents=True)
        control = f"Package: {name}\nVersion: {version}\nArchitecture: all\n"
        control += f"Depends: {depends}\n" if depends else ""
        control += "Maintainer: syslua tests <tests@example.invalid>\n"
        control += "Description: a package syslua's tests install and remove\n"
        (root / "DEBIAN" / "control").write_text(control)
        share = root / "usr" / "share" / name
        share.mkdir(parents=True)
        (share / "version").write_text(version + "\n")
        if conf:
            (root / "etc").mkdir()
            (root / "etc" / f"{name}.conf").write_text(conf)
            (root / "DEBIAN" / "conffiles").write_text(f"/etc/{name}.conf\n")
        deb = self.repo / f"{name}_{version}_all.deb"
        subprocess.run(
            ["dpkg-deb", "-Zgzip", "--root-owner-group", "--build", str(root), str(deb)],
            check=True,
            capture_output=True,
        )

    def publish(self, *debs: str) -> None:
        """Write the index with the named .debs (all of them when none is named) and read it."""
        import hashlib

        entries = []
        for deb in sorted(self.repo.glob("*.deb")):
            if debs and deb.name not in debs:
                continue
            control = subprocess.run(
                ["dpkg-deb", "-f", str(deb)], check=True, capture_output=True, text=True
            ).stdout.rstrip("\n")
            data = deb.read_bytes()
            entries.append(
                f"{control}\nFilename: ./{deb.name}\nSize: {len(data)}\n"
                f"SHA256: {hashlib.sha256(data).hexdigest()}\n"
            )
        (self.repo / "Packages").write_text("\n".join(entries))
        subprocess.run(
            ["apt-get", "update", "-q"],
            env={**os.environ, "APT_CONFIG": str(self.config)},
            check=True,
            capture_output=True,
        )


@pytest.fixture
def archive(sysenv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Archive]:  # type: ignore[no-untyped-def]
    if not (IS_ROOT and HAVE_APT):
        pytest.skip("needs root, apt-get and dpkg-deb")
    _purge(*PROBES)
    arc = Archive(tmp_path / "archive")
    arc.build("syslua-probe", "1.0-1", conf="setting = one\n")
    arc.build("syslua-probe", "1.0-2", conf="setting = two\n")
    arc.build("syslua-probe-lib", "3.0-1")
    arc.build("syslua-probe-app", "1.0-1", depends="syslua-probe-lib")
    arc.publish()
    monkeypatch.setenv("APT_CONFIG", str(arc.config))
    yield arc
    _purge(*PROBES)


def _config(sysenv, body: str) -> None:  # type: ignore[no-untyped-def]
    sysenv.write("sys.lua", textwrap.dedent(body))


def _lines(p) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """Plan lines by subject (`+ os_package hello`)."""
    out = {}
    for line in p.stdout.splitlines():
        head, sep, _ = line.strip().partition(": ")
        if sep and head[:2] in ("+ ", "~ ", "- ", "= ", "! "):
            out[head] = line.strip()
    return out


@pytest.mark.root
@needs_apt
def test_install_a_version_upgrade_and_roll_back(sysenv, archive) -> None:  # type: ignore[no-untyped-def]
    _config(sysenv, 'os_package { name = "syslua-probe", ensure = "1.0-1" }\n')
    p = sysenv.run("plan")
    ok(p)
    assert "+ os_package syslua-probe: will install (1.0-1)" in p.stdout, out(p)
    assert _dpkg("syslua-probe") is None  # planning changed nothing
    ok(sysenv.run("apply"))
    assert _dpkg("syslua-probe") == "1.0-1"
    first = json.loads(sysenv.run("history", "--json").stdout)[0]["id"]

    _config(sysenv, 'os_package { name = "syslua-probe", ensure = "latest" }\n')
    p = sysenv.run("plan")
    assert "~ os_package syslua-probe: will upgrade (1.0-1 -> 1.0-2)" in p.stdout, out(p)
    assert "irreversible" not in p.stdout
    ok(sysenv.run("apply"))
    assert _dpkg("syslua-probe") == "1.0-2"
    assert "No changes." in sysenv.run("plan").stdout

    p = sysenv.run("rollback", first)
    ok(p)
    assert _dpkg("syslua-probe") == "1.0-1"


@pytest.mark.root
@needs_apt
def test_downgrade_to_a_pinned_version(sysenv, archive) -> None:  # type: ignore[no-untyped-def]
    _config(sysenv, 'os_package { name = "syslua-probe", ensure = "latest" }\n')
    ok(sysenv.run("apply"))
    assert _dpkg("syslua-probe") == "1.0-2"
    _config(sysenv, 'os_package { name = "syslua-probe", ensure = "1.0-1" }\n')
    p = sysenv.run("plan")
    assert "~ os_package syslua-probe: will downgrade (1.0-2 -> 1.0-1)" in p.stdout, out(p)
    ok(sysenv.run("apply"))
    assert _dpkg("syslua-probe") == "1.0-1"


@pytest.mark.root
@needs_apt
def test_ccm_yaml_manifest_package(sysenv, archive) -> None:  # type: ignore[no-untyped-def]
    sysenv.write(
        "m.yaml",
        """\
        ccm:
          resources:
            - package:
                - syslua-probe:
                    ensure: "1.0-2"
        """,
    )
    p = sysenv.run("plan", "m.yaml")
    assert "+ os_package syslua-probe: will install (1.0-2)" in p.stdout, out(p)
    ok(sysenv.run("apply", "m.yaml"))
    assert _dpkg("syslua-probe") == "1.0-2"


@pytest.mark.root
@needs_apt
def test_a_version_the_archive_does_not_have_cannot_be_applied(sysenv, archive) -> None:  # type: ignore[no-untyped-def]
    _config(sysenv, 'os_package { name = "syslua-probe", ensure = "9.9-9" }\n')
    p = sysenv.run("apply")
    assert p.returncode == 1, out(p)  # the item cannot be applied: the apply fails
    assert "version 9.9-9 of syslua-probe is not in the archive (it has 1.0-1, 1.0-2)" in out(p)
    assert _dpkg("syslua-probe") is None


@pytest.mark.root
@needs_apt
def test_failed_apply_undoes_install_with_its_dependencies(sysenv, archive) -> None:  # type: ignore[no-untyped-def]
    _config(
        sysenv,
        """\
        local app = os_package { name = "syslua-probe-app" }
        exec { name = "false", depends_on = { app } }
        """,
    )
    p = sysenv.run("plan")
    line = (
        "+ os_package syslua-probe-app: will install (1.0-1; also installs syslua-probe-lib 3.0-1)"
    )
    assert line in p.stdout, out(p)
    p = sysenv.run("apply")
    assert p.returncode == 1, out(p)
    assert "Apply failed. System unchanged." in p.stdout, out(p)
    assert _dpkg("syslua-probe-app") is None
    assert _dpkg("syslua-probe-lib") is None


@pytest.mark.root
@needs_apt
def test_failed_apply_undoes_an_upgrade_and_a_removal(sysenv, archive) -> None:  # type: ignore[no-untyped-def]
    _config(
        sysenv,
        """\
        os_package { name = "syslua-probe", ensure = "1.0-1" }
        os_package { name = "syslua-probe-lib" }
        """,
    )
    ok(sysenv.run("apply"))
    _config(
        sysenv,
        """\
        local a = os_package { name = "syslua-probe", ensure = "1.0-2" }
        local b = os_package { name = "syslua-probe-lib", ensure = "absent" }
        exec { name = "false", depends_on = { a, b } }
        """,
    )
    p = sysenv.run("apply")
    assert p.returncode == 1, out(p)
    assert "Apply failed. System unchanged." in p.stdout, out(p)
    assert _dpkg("syslua-probe") == "1.0-1"
    assert _dpkg("syslua-probe-lib") == "3.0-1"
    # installed by name before, so marked as installed by hand again
    auto = subprocess.run(["apt-mark", "showmanual", "syslua-probe-lib"], capture_output=True)
    assert auto.stdout.split() == [b"syslua-probe-lib"]


@pytest.mark.root
@needs_apt
def test_killed_apply_is_undone_by_the_next_command(sysenv, archive) -> None:  # type: ignore[no-untyped-def]
    """SIGKILL after the install: the next `sys` command finds the journal and
    uninstalls what the dead run installed, dependencies included."""
    import signal
    import sys
    import time

    marker = sysenv.work / "sleeping"
    _config(
        sysenv,
        f"""\
        local app = os_package {{ name = "syslua-probe-app" }}
        exec {{ name = "sleep", provider = "shell", undo = "true", depends_on = {{ app }},
                command = "echo $$ > {marker}.tmp && mv {marker}.tmp {marker} && exec sleep 30" }}
        """,
    )
    env = {**sysenv.env, "APT_CONFIG": str(archive.config)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "syslua", "apply"],
        cwd=sysenv.work,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert proc.poll() is None, "sys apply ended before its exec started"
            assert time.monotonic() < deadline, "timed out waiting for the exec"
            time.sleep(0.05)
        assert _dpkg("syslua-probe-app") == "1.0-1"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if marker.exists():  # the exec's sleep, left behind by the killed run
            try:
                os.kill(int(marker.read_text()), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
    p = sysenv.run("plan")
    assert p.returncode == 0, out(p)
    assert "rolled back an interrupted apply" in out(p), out(p)
    assert _dpkg("syslua-probe-app") is None
    assert _dpkg("syslua-probe-lib") is None
    assert "+ os_package syslua-probe-app: will install" in p.stdout, out(p)


@pytest.mark.root
@needs_apt
def test_change_is_irreversible_when_the_archive_lost_the_version(sysenv, archive) -> None:  # type: ignore[no-untyped-def]
    _config(sysenv, 'os_package { name = "syslua-probe", ensure = "1.0-1" }\n')
    ok(sysenv.run("apply"))
    archive.publish("syslua-probe_1.0-2_all.deb")  # 1.0-1 is gone from the archive
    _config(
        sysenv,
        """\
        local p = os_package { name = "syslua-probe", ensure = "latest" }
        exec { name = "false", depends_on = { p } }
        """,
    )
    p = sysenv.run("plan", "--json")
    entry = next(e for e in json.loads(p.stdout)["plan"]["items"] if e["type"] == "os_package")
    assert entry["irreversible"] is True, entry
    assert entry["irreversible_reason"] == "the archive no longer has syslua-probe 1.0-1"
    p = sysenv.run("plan")
    assert (
        "~ os_package syslua-probe: will upgrade (1.0-1 -> 1.0-2) - irreversible "
        "(the archive no longer has syslua-probe 1.0-1)"
    ) in p.stdout, out(p)
    p = sysenv.run("apply")
    assert p.returncode == 1, out(p)
    assert "System unchanged." not in p.stdout, out(p)
    assert "Rolled back everything except 1 command(s) that cannot be undone" in p.stdout
    assert "  - os_package syslua-probe (declared at sys.lua:1)" in p.stdout, out(p)
    assert _dpkg("syslua-probe") == "1.0-2"


@pytest.mark.root
@needs_apt
def test_config_files_state_is_absent_and_configuration_is_kept(sysenv, archive) -> None:  # type: ignore[no-untyped-def]
    conf = Path("/etc/syslua-probe.conf")
    _config(sysenv, 'os_package { name = "syslua-probe", ensure = "1.0-1" }\n')
    ok(sysenv.run("apply"))
    conf.write_text("setting = mine\n")
    subprocess.run(["dpkg", "--remove", "syslua-probe"], check=True, capture_output=True)
    assert conf.read_text() == "setting = mine\n"  # config-files: removed, configuration kept
    p = sysenv.run("status", "-v")
    assert "DA os_package syslua-probe" in p.stdout.splitlines(), out(p)
    assert "    in the home: package uninstalled" in p.stdout, out(p)
    p = sysenv.run("plan")
    assert "+ os_package syslua-probe: will install (1.0-1)" in p.stdout, out(p)
    ok(sysenv.run("apply"))
    _config(sysenv, 'os_package { name = "syslua-probe", ensure = "1.0-2" }\n')
    ok(sysenv.run("apply"))
    assert _dpkg("syslua-probe") == "1.0-2"
    assert conf.read_text() == "setting = mine\n"  # --force-confold: the admin's edit stays


@pytest.mark.root
@needs_apt
def test_removing_the_declaration(sysenv, archive) -> None:  # type: ignore[no-untyped-def]
    """What syslua installed goes with its declaration; what was there before stays."""
    subprocess.run(
        ["apt-get", "install", "-q", "-y", "syslua-probe-lib"], check=True, capture_output=True
    )
    _config(
        sysenv,
        """\
        os_package { name = "syslua-probe" }
        os_package { name = "syslua-probe-lib" }
        """,
    )
    ok(sysenv.run("apply"))
    _config(sysenv, 'file { path = "/tmp/syslua-os-package-unused", ensure = "absent" }\n')
    p = sysenv.run("plan")
    lines = _lines(p)
    assert lines["- os_package syslua-probe"] == (
        "- os_package syslua-probe: will uninstall (no longer declared; syslua installed it)"
    ), out(p)
    assert lines["- os_package syslua-probe-lib"] == (
        "- os_package syslua-probe-lib: no longer declared; it was installed before "
        "syslua managed it, so it stays"
    ), out(p)
    ok(sysenv.run("apply"))
    assert _dpkg("syslua-probe") is None
    assert _dpkg("syslua-probe-lib") == "3.0-1"
    # and a rollback brings back what the earlier snapshot had
    snaps = json.loads(sysenv.run("history", "--json").stdout)
    ok(sysenv.run("rollback", snaps[1]["id"]))
    assert _dpkg("syslua-probe") == "1.0-2"


# -- on the machine: Debian's archive ----------------------------------------------------
@pytest.fixture(scope="session")
def debian_hello() -> str:
    """The version of `hello` Debian's archive offers; the index is updated
    once when it knows none (syslua itself never updates it)."""
    if not (IS_ROOT and HAVE_APT):
        pytest.skip("needs root, apt-get and dpkg-deb")
    env = {k: v for k, v in os.environ.items() if k != "APT_CONFIG"}

    def candidate() -> str | None:
        p = subprocess.run(
            ["apt-cache", "policy", "hello"], capture_output=True, text=True, env=env
        )
        return apt.parse_candidate(p.stdout)

    found = candidate()
    if found is None:
        try:
            with machine_lock("dpkg"):  # a session fixture: outside the tests' own turns
                subprocess.run(
                    ["apt-get", "update", "-q"], capture_output=True, env=env, timeout=300
                )
        except subprocess.TimeoutExpired:
            pytest.skip("Debian's archive is unreachable: `apt-get update` timed out")
        found = candidate()
    if found is None:
        pytest.skip("Debian's archive is unreachable: `apt-cache policy hello` has no candidate")
    return found


@pytest.mark.root
@pytest.mark.slow
@needs_apt
def test_hello_from_debians_archive(sysenv, debian_hello: str) -> None:  # type: ignore[no-untyped-def]
    """Pinned to the archive's version, installed, and taken away again by a
    rollback to the snapshot from before it was declared (two apt runs: the
    archive is slow to download from)."""
    if _dpkg("hello") is not None:
        pytest.skip("hello is installed on this machine already; the test would remove it")
    try:
        _config(sysenv, 'file { path = "/tmp/syslua-os-package-unused", ensure = "absent" }\n')
        ok(sysenv.run("apply"))
        before = json.loads(sysenv.run("history", "--json").stdout)[0]["id"]
        _config(sysenv, f'os_package {{ name = "hello", ensure = "{debian_hello}" }}\n')
        p = sysenv.run("plan")
        assert f"+ os_package hello: will install ({debian_hello})" in p.stdout, out(p)
        assert _dpkg("hello") is None
        ok(sysenv.run("apply"))
        assert _dpkg("hello") == debian_hello
        assert subprocess.run(["hello"], capture_output=True, text=True).stdout.strip()
        assert "No changes." in sysenv.run("plan").stdout

        p = sysenv.run("rollback", before)
        ok(p)
        assert "os_package hello" in p.stdout, out(p)
        assert _dpkg("hello") is None
    finally:
        _purge("hello")
