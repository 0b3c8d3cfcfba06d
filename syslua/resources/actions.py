"""Run the recorded actions of a `sys.build` / `sys.bind` phase, resolving placeholders."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from syslua import fetch
from syslua.resources.base import Context, ResourceError
from syslua.resources.process import CannotStart


def run_actions(
    what: str,
    actions: Sequence[Mapping[str, Any]],
    ctx: Context,
    local: dict[str, str],
    cwd: str | None = None,
) -> dict[str, str]:
    """Perform actions in order; returns `local` extended with action results."""
    resolver, paths = ctx.resolver, ctx.paths
    assert resolver is not None
    doing = ctx.doing  # the live display: each command, then its output as it comes

    def on_line(stream: str, line: str) -> None:
        if doing is not None and line.strip():
            doing("output", line)

    for n, action in enumerate(actions, 1):
        if action["kind"] == "fetch":
            assert paths is not None  # where downloads are cached
            path = fetch.download(
                {
                    "fetch": "url",
                    "url": resolver.resolve(action["url"], local),
                    "sha256": action["sha256"],
                },
                paths.cache,
            )
            local[f"action:{n}:path"] = str(path)
            continue
        if action["kind"] == "script":
            bin_, args = action["interpreter"], [_write_script(what, n, action, local, resolver)]
        else:
            bin_ = resolver.resolve(action["bin"], local)
            args = [resolver.resolve(str(a), local) for a in action.get("args") or ()]
        env = [
            f"{k}={resolver.resolve(str(v), local)}"
            for k, v in sorted((action.get("env") or {}).items())
        ]
        workdir = resolver.resolve(action["cwd"], local) if action.get("cwd") else cwd
        command = " ".join(_quote(x) for x in [bin_, *args])
        if doing is not None:
            doing("command", command)
        try:
            result = ctx.runner.run(
                command,
                provider="posix",
                cwd=workdir,
                environment=env,
                on_line=on_line if doing is not None else None,
            )
        except CannotStart as e:
            raise ResourceError(
                f"{what} action {n} ({os.path.basename(bin_)}) could not start: {e}"
            ) from e
        if result.exit_code != 0 or result.timed_out:
            raise ResourceError(
                f"{what} action {n} ({os.path.basename(bin_)}) failed: {result.describe()}"
            )
        local[f"action:{n}:stdout"] = result.stdout.strip()
    return local


def _write_script(
    what: str, n: int, action: Mapping[str, Any], local: dict[str, str], resolver: Any
) -> str:
    """Write a `ctx:script` body to `$${out}/tmp/<name>` (kept for debugging); its path."""
    from pathlib import Path

    from syslua.fsutil import atomic_write, make_dir

    out = local.get("out")
    if out is None:
        raise ResourceError(f"{what} action {n} (script): no output directory to write it to")
    tmp = Path(out) / "tmp"
    make_dir(tmp, 0o755)
    path = tmp / action["name"]
    atomic_write(path, resolver.resolve(action["content"], local).encode(), 0o755)
    local[f"action:{n}:path"] = str(path)
    return str(path)


def _quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)
