"""The pkgs/ catalogue: `require("pkgs.lib.release").define{...}` and the shipped modules.

A catalogue-shaped module beside sys.lua, pointing at archives on a loopback
HTTP server, is installed for real. The shipped modules (ripgrep, fd, jq,
patchelf) are only evaluated and planned: their manifests must carry the
published URL and SHA-256 of `tests/data/releases.json` (a copy of the
shared release facts, so a clean clone runs every check) for the platform;
they are never applied and their URLs are never fetched.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import ok
from conftest import out as out_of
from httpserver import make_tar, tool

RELEASES = Path(__file__).resolve().parent / "data" / "releases.json"
MODULES = {"ripgrep": "ripgrep", "fd": "fd", "jq": "jq", "patchelf": "patchelf"}


def releases() -> dict:
    return json.loads(RELEASES.read_text())["packages"]


def plan_json(sysenv) -> dict:
    res = sysenv.run("plan", "--json")
    ok(res)
    return json.loads(res.stdout)


def packages_of(doc: dict) -> dict[str, dict]:
    return {i["key"]: i["props"] for i in doc["manifest"]["items"] if i["type"] == "package"}


@pytest.fixture
def platform(sysenv) -> str:
    sysenv.write("sys.lua", "env { SYSLUA_TEST_PLATFORM = sys.platform }\n")
    doc = plan_json(sysenv)
    [item] = [i for i in doc["manifest"]["items"] if i["key"] == "SYSLUA_TEST_PLATFORM"]
    return item["props"]["value"]


# -- a catalogue-shaped module of our own, installed from 127.0.0.1 ------------------


def write_module(sysenv, server) -> None:
    urls = {}
    for version in ("1.0", "2.0"):
        data = make_tar({f"mytool-{version}/bin/mytool": tool(f"mytool {version}")})
        urls[version] = server.put(f"mytool-{version}.tar.gz", data)
    single_url, single_sha = server.put("single", tool("single"))
    sysenv.write(
        "mytools.lua",
        f'''
        return require("pkgs.lib.release").define {{
          name = "mytool",
          default = "1.0",
          bin = {{ "bin/mytool" }},
          strip_components = 1,
          releases = {{
            ["1.0"] = {{
              [sys.platform] = {{ format = "tar.gz", url = "{urls["1.0"][0]}", sha256 = "{urls["1.0"][1]}" }},
              ["sparc64-plan9"] = {{ format = "tar.gz", url = "http://127.0.0.1:9/never", sha256 = "{"0" * 64}" }},
            }},
            ["v2.0"] = {{
              [sys.platform] = {{ format = "tar.gz", url = "{urls["2.0"][0]}", sha256 = "{urls["2.0"][1]}" }},
            }},
          }},
        }}
    ''',
    )
    sysenv.write(
        "single.lua",
        f'''
        return require("pkgs.lib.release").define {{
          name = "single", default = "0.1",
          releases = {{ ["0.1"] = {{ [sys.platform] = {{ format = "binary", url = "{single_url}", sha256 = "{single_sha}" }} }} }},
        }}
    ''',
    )


def run_tool(sysenv, cmd: str) -> str:
    env = dict(sysenv.env, PATH="/usr/bin:/bin")
    res = subprocess.run(
        ["/bin/sh", "-c", f". '{sysenv.root}/state/env.sh' && {cmd}"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert res.returncode == 0, res.stderr
    return res.stdout.strip()


def test_local_catalogue_module_installs(sysenv, server):
    write_module(sysenv, server)
    sysenv.write("sys.lua", 'require("mytools").setup {}\nrequire("single").setup {}\n')
    ok(sysenv.run("apply"))
    assert run_tool(sysenv, "mytool") == "mytool 1.0"
    assert run_tool(sysenv, "single") == "single"
    # another version is another store tree; the old one stays until gc
    sysenv.write("sys.lua", 'require("mytools").setup { version = "2.0" }\n')
    ok(sysenv.run("apply"))
    assert run_tool(sysenv, "mytool") == "mytool 2.0"
    trees = sorted(p.name for p in (sysenv.root / "store" / "trees").iterdir())
    assert sorted(t.split("-", 1)[1] for t in trees) == ["mytool-1.0", "mytool-2.0", "single-0.1"]
    assert server.count("mytool-1.0.tar.gz") == 1 and server.count("mytool-2.0.tar.gz") == 1


def test_local_module_version_and_overrides_in_manifest(sysenv, server):
    write_module(sysenv, server)
    sysenv.write(
        "sys.lua",
        'require("mytools").setup { version = "v2.0", name = "mine", bin = { "bin/mytool" } }\n',
    )
    pkgs = packages_of(plan_json(sysenv))
    assert set(pkgs) == {"mine"}
    assert pkgs["mine"]["version"] == "2.0"
    assert pkgs["mine"]["source"]["url"].endswith("/mytool-2.0.tar.gz")
    assert pkgs["mine"]["strip_components"] == 1


def test_local_module_unknown_version_lists_available(sysenv, server):
    write_module(sysenv, server)
    sysenv.write("sys.lua", '\nrequire("mytools").setup { version = "9.9" }\n')
    res = sysenv.run("apply")
    assert res.returncode == 2, out_of(res)
    text = out_of(res)
    assert "9.9" in text and "1.0" in text and "v2.0" in text and "available" in text
    assert "sys.lua:2" in text  # the caller's line
    assert "Traceback" not in text
    assert server.count() == 0
    assert not (sysenv.root / "store" / "trees").exists() or not list(
        (sysenv.root / "store" / "trees").iterdir()
    )


def test_local_module_unknown_platform_lists_available(sysenv, server):
    write_module(sysenv, server)
    sysenv.write(
        "sys.lua", 'require("mytools").setup { version = "2.0", platform = "sparc64-plan9" }\n'
    )
    res = sysenv.run("plan")
    assert res.returncode == 2, out_of(res)
    text = out_of(res)
    assert "sparc64-plan9" in text and "available" in text
    assert "Traceback" not in text
    # the platform that version 1.0 does have is accepted
    sysenv.write("sys.lua", 'require("mytools").setup { platform = "sparc64-plan9" }\n')
    pkgs = packages_of(plan_json(sysenv))
    assert pkgs["mytool"]["source"]["url"] == "http://127.0.0.1:9/never"


# -- the shipped catalogue: evaluated and planned, never applied -----------------------


def test_shipped_modules_plan_with_published_assets(sysenv, platform):
    data = releases()
    lines, expect, missing = [], {}, {}
    for mod, name in MODULES.items():
        info = data[name]["releases"]
        default_version = max(info)  # a single release each
        assets = info[default_version]
        if platform in assets:
            lines.append(f'require("pkgs.cli.{mod}").setup {{}}')
            expect[name] = (default_version, assets[platform])
        else:
            missing[mod] = sorted(assets)
    if not expect:
        pytest.skip(f"no shipped package has a release for {platform}")
    sysenv.write("sys.lua", "\n".join(lines) + "\n")
    doc = plan_json(sysenv)
    pkgs = packages_of(doc)
    assert set(pkgs) == set(expect)
    for name, (version, asset) in expect.items():
        props = pkgs[name]
        assert props["source"]["url"] == asset["url"]
        assert props["source"]["sha256"] == asset["sha256"]
        assert props["source"]["url"].startswith("https://github.com/")
        assert props["version"] == version.lstrip("v")
        fmt = props.get("format") or asset["format"]
        assert fmt == asset["format"]
        assert props.get("bin"), name
    plan_items = {i["id"]: i for i in doc["plan"]["items"]}
    for name in expect:
        assert plan_items[f"package#{name}"]["action"] == "create"
    # nothing was downloaded or installed by planning
    assert not (sysenv.root / "cache" / "downloads").exists() or not list(
        (sysenv.root / "cache" / "downloads").iterdir()
    )
    assert not (sysenv.root / "store" / "trees").exists() or not list(
        (sysenv.root / "store" / "trees").iterdir()
    )
    for mod, platforms in missing.items():
        sysenv.write("sys.lua", f'require("pkgs.cli.{mod}").setup {{}}\n')
        res = sysenv.run("plan")
        assert res.returncode == 2, out_of(res)
        assert all(p in out_of(res) for p in platforms)


def test_every_published_asset_is_in_the_modules(sysenv):
    """For every version and platform of releases.json, setup{platform=...} yields that URL and SHA-256."""
    data = releases()
    lines, expect = [], {}
    for mod, name in MODULES.items():
        for version, assets in data[name]["releases"].items():
            for plat, asset in assets.items():
                key = f"{name}-{plat}-{version}".replace(".", "_")
                lines.append(
                    f'require("pkgs.cli.{mod}").setup {{ version = "{version}", platform = "{plat}", '
                    f'name = "{key}", bin = {{ "{key}" }} }}'
                )
                expect[key] = asset
    sysenv.write("sys.lua", "\n".join(lines) + "\n")
    pkgs = packages_of(plan_json(sysenv))
    assert set(pkgs) == set(expect)
    for key, asset in expect.items():
        assert pkgs[key]["source"]["url"] == asset["url"], key
        assert pkgs[key]["source"]["sha256"] == asset["sha256"], key
        assert pkgs[key].get("format") in (None, asset["format"]), key


def test_shipped_bins_and_layout(sysenv):
    """bin and strip_components of each shipped module, on its Linux x86_64 release."""
    sysenv.write(
        "sys.lua",
        "\n".join(f'require("pkgs.cli.{m}").setup {{ platform = "x86_64-linux" }}' for m in MODULES)
        + "\n",
    )
    pkgs = packages_of(plan_json(sysenv))
    assert pkgs["ripgrep"]["bin"] == ["rg"] and pkgs["ripgrep"]["strip_components"] == 1
    assert pkgs["fd"]["bin"] == ["fd"] and pkgs["fd"]["strip_components"] == 1
    assert pkgs["jq"]["bin"] == ["bin/jq"]
    assert pkgs["patchelf"]["bin"] == ["bin/patchelf"]
    assert pkgs["fd"]["version"] == "10.2.0"


def test_shipped_module_accepts_version_with_or_without_v(sysenv):
    sysenv.write(
        "sys.lua",
        'require("pkgs.cli.fd").setup { version = "10.2.0", platform = "x86_64-linux" }\n'
        'require("pkgs.cli.ripgrep").setup { version = "v15.1.0", platform = "x86_64-linux" }\n',
    )
    pkgs = packages_of(plan_json(sysenv))
    assert pkgs["fd"]["version"] == "10.2.0"
    assert pkgs["ripgrep"]["version"] == "15.1.0"


def test_shipped_unknown_version_lists_available(sysenv):
    sysenv.write("sys.lua", 'require("pkgs.cli.ripgrep").setup { version = "0.0.1" }\n')
    res = sysenv.run("apply")
    assert res.returncode == 2, out_of(res)
    text = out_of(res)
    assert "0.0.1" in text and "15.1.0" in text and "available" in text
    assert "sys.lua:1" in text and "Traceback" not in text
    assert not (sysenv.root / "cache").exists() or not list((sysenv.root / "cache").rglob("*.*"))


def test_shipped_unknown_platform_lists_available(sysenv):
    sysenv.write("sys.lua", 'require("pkgs.cli.patchelf").setup { platform = "aarch64-darwin" }\n')
    res = sysenv.run("plan")
    assert res.returncode == 2, out_of(res)
    text = out_of(res)
    for p in ("aarch64-linux", "x86_64-linux", "x86_64-windows"):
        assert p in text
    assert "aarch64-darwin" in text and "Traceback" not in text


def test_unknown_catalogue_module(sysenv):
    sysenv.write("sys.lua", 'require("pkgs.cli.nonexistent-tool").setup {}\n')
    res = sysenv.run("plan")
    assert res.returncode == 2, out_of(res)
    assert "nonexistent-tool" in out_of(res) and "Traceback" not in out_of(res)


def test_module_beside_config_does_not_shadow_pkgs(sysenv):
    """`pkgs.*` always comes from the shipped catalogue, even with a pkgs/ dir beside sys.lua."""
    sysenv.write("pkgs/cli/ripgrep.lua", 'error("the local pkgs/ must not be used")\n')
    sysenv.write("sys.lua", 'require("pkgs.cli.ripgrep").setup { platform = "x86_64-linux" }\n')
    pkgs = packages_of(plan_json(sysenv))
    assert pkgs["ripgrep"]["source"]["url"].startswith("https://github.com/BurntSushi/ripgrep/")
