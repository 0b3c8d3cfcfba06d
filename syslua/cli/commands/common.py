"""Helpers shared by commands: finding the config and resolving it."""

from __future__ import annotations

from pathlib import Path

from syslua.cli.output import Terminal
from syslua.errors import UsageError, display_path
from syslua.eval.facts import parse_fact_args
from syslua.manifest.model import Manifest
from syslua.manifest.resolve import Options, resolve
from syslua.paths import Paths, default_config


def find_config(config: Path | None) -> Path:
    if config is not None:
        if not config.exists():
            raise UsageError(f"config file not found: {config}")
        if config.is_dir():
            candidate = config / "sys.lua"
            if not candidate.is_file():
                raise UsageError(f"no sys.lua in {config}")
            return candidate
        return config
    found = default_config()
    if found is None:
        raise UsageError(
            "no config file: pass one (sys plan path/to/sys.lua) or create ./sys.lua "
            "or ~/.config/syslua/sys.lua (sys init writes a starter)"
        )
    return found


def load_manifest(term: Terminal, config: Path | None, *, facts: list[str], impure: bool, max_depth: int,
                  paths: Paths) -> Manifest:
    path = find_config(config)
    term.log(f"Evaluating {display_path(str(path.absolute())) if False else path.name}...")
    manifest = resolve(path, Options(cli_facts=parse_fact_args(facts), impure=impure, max_depth=max_depth), paths)
    for warning in manifest.warnings:
        term.warn(warning)
    return manifest
