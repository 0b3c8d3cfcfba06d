"""`sys info`: what syslua sees here, read-only: the facts a config gets as
`sys.*`, the paths syslua uses, the config it would evaluate (and the inputs
its lock file pins), and the current snapshot.

Nothing is evaluated, locked or recovered: `info` only reads, so it answers
even while an apply runs or after one was interrupted."""

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from syslua.cli import terminal
from syslua.cli.options import ConfigArg, JsonOpt, NoColorOpt
from syslua.cli.when import iso

if TYPE_CHECKING:
    from syslua.cli.output import Terminal
    from syslua.paths import Paths


def command(
    config: ConfigArg = None,
    json_: JsonOpt = False,
    no_color: NoColorOpt = False,
) -> None:
    """Show what syslua sees here: the platform, user and paths, the config it
    would use (and the inputs its syslua.lock pins), and the current snapshot.
    Reads only.

    \b
    Examples:
      sys info
      sys info --json
    """
    raise typer.Exit(run(terminal(json_, 0, False, no_color), config))


def _snapshot(paths: "Paths") -> dict[str, Any] | None:
    from syslua.errors import StateError, UsageError
    from syslua.state.snapshots import Snapshots

    try:
        snap = Snapshots(paths).current()
    except (StateError, UsageError) as e:
        return {"error": e.message}
    except OSError as e:
        return {"error": f"{e.strerror or e}: {e.filename or paths.state}"}
    if snap is None:
        return None
    return {
        "id": snap.id,
        "time": iso(snap.time),
        "message": snap.message,
        "kind": snap.kind,
        "items": len(snap.manifest.get("items", [])) if isinstance(snap.manifest, dict) else None,
        "config": snap.config,
        "_local": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(snap.time)),
    }


def run(term: "Terminal", config: Path | None) -> int:
    doc = _what_syslua_sees(config)
    if term.json_mode:
        snap = doc["snapshot"]
        if snap is not None:
            snap.pop("_local", None)
        doc["config"].pop("_not_current", None)
        term.json(doc)
        return 0
    _show(term, doc)
    return 0


def _what_syslua_sees(config: Path | None) -> dict[str, Any]:
    """The document `--json` prints (and `_local`: the snapshot's local time)."""
    from syslua.cli.version import package_version
    from syslua.eval.facts import machine_facts
    from syslua.eval.lua import luajit_version
    from syslua.execute.config import config_info
    from syslua.paths import Paths, shipped_dirs

    paths = Paths.from_env()
    facts = machine_facts()
    user = facts["user"]
    lua_dir, pkgs_dir = shipped_dirs()
    return {
        "format": 1,
        "version": package_version(),
        "lua": luajit_version(),
        "system": {
            "platform": facts["platform"],
            "os": facts["os"],
            "arch": facts["arch"],
            "hostname": facts["hostname"],
            "user": user["name"],
            "uid": user["uid"],
            "home": user["home"],
            "is_elevated": os.geteuid() == 0,
        },
        "paths": {
            "store": str(paths.store),
            "state": str(paths.state),
            "cache": str(paths.cache),
            "config_dir": str(paths.config),
            "env_script": str(paths.env_sh),
            "lua": lua_dir,
            "pkgs": pkgs_dir,
        },
        "config": config_info(config, paths),
        "snapshot": _snapshot(paths),
    }


def _show(term: "Terminal", doc: dict[str, Any]) -> None:
    from syslua.paths import abbreviate

    s = doc["system"]
    term.line(f"syslua {doc['version']} ({doc['lua']})")
    term.line("System:")
    term.line(f"  Platform: {s['platform']}")
    term.line(f"  Host: {s['hostname']}")
    elevated = " (elevated)" if s["is_elevated"] else ""
    term.line(f"  User: {s['user']} (uid {s['uid']}){elevated}, home {s['home']}")
    term.line("Paths:")
    for label, key in (
        ("Store", "store"),
        ("State", "state"),
        ("Cache", "cache"),
        ("Config dir", "config_dir"),
        ("Env script", "env_script"),
    ):
        term.line(f"  {label}: {abbreviate(doc['paths'][key])}")
    c = doc["config"]
    term.line("Config:")
    if c["path"] is None:
        term.line("  none found (./sys.lua, ./init.lua, ~/.config/syslua/sys.lua or init.lua)")
    else:
        via = {"default": "", "given": "", "current snapshot": " (the current snapshot's)"}
        if c.get("_not_current"):
            via["default"] = (
                f" (not the current snapshot's config {abbreviate(c['_not_current'])}: "
                "sys apply uses it only when given explicitly)"
            )
        term.line(f"  {abbreviate(c['path'])}{via.get(c['found_by'], '')}")
        if c["lock"]:
            term.line(f"  Lock: {abbreviate(c['lock'])}")
            for name, i in c["inputs"].items():
                rev = i["rev"] or ""
                term.line(f"    {name}: {i['url']} @ {rev[:12] if rev != 'local' else rev}")
    snap = doc["snapshot"]
    term.line("Current snapshot:")
    if snap is None:
        term.line("  none yet (run `sys apply`)")
    elif "error" in snap:
        term.line(f"  cannot be read: {snap['error']}")
    else:
        term.line(f"  {snap['id']}  {snap['_local']}  {snap['message']}")
