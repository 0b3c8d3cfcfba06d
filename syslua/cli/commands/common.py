"""Helpers shared by commands: evaluating the config, and `state()`, which
tightens the permissions of a state dir left readable by an older version,
takes the state lock when writing and first rolls back an interrupted run (a
rollback that Ctrl-C does not stop; the command ends after it, exit 130)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from syslua.cli import signals
from syslua.cli.output import Terminal
from syslua.errors import UsageError
from syslua.eval.facts import parse_fact_args
from syslua.execute.config import GitInputs, locate_config
from syslua.manifest.model import Manifest
from syslua.paths import Paths

if TYPE_CHECKING:
    from syslua.execute.apply import Reporter
    from syslua.manifest.evalcache import Recorder
    from syslua.manifest.options import Options
    from syslua.state.lock import Holder, StateLock

_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str, option: str) -> int:
    """`4GiB`, `4G`, `500M`, `100k`, `1.5G` or a number of bytes (units are powers of 1024)."""
    import re

    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b)?\s*", text, re.IGNORECASE)
    if m is None or (not m.group(2) and "." in m.group(1)):
        raise UsageError(
            f"{option}: {text!r} is not a size (use e.g. 4GiB, 500M or a number of bytes)"
        )
    size = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if size < 1:
        raise UsageError(f"{option}: the size must be at least 1 byte, got {text!r}")
    return size


class DataFlags:
    """CCM's flags for a manifest's data: `--facts FILE`, `--hiera FILE`, `--read-env`."""

    def __init__(
        self, facts_file: Path | None = None, hiera: Path | None = None, read_env: bool = True
    ) -> None:
        # relative to where `sys` runs, as the user typed them
        self.facts_file = facts_file.absolute() if facts_file is not None else None
        self.hiera = hiera.absolute() if hiera is not None else None
        self.read_env = read_env


def load_manifest(
    term: Terminal,
    config: Path | None,
    *,
    facts: list[str],
    impure: bool,
    max_depth: int,
    paths: Paths,
    noop: bool = False,
    health_check_only: bool = False,
    eval_timeout: float | None = None,
    example: str = "sys plan path/to/sys.lua",
    changes: str | None = None,
    flags: DataFlags | None = None,
    no_cache: bool = False,
) -> Manifest:
    """Evaluate and merge the config. `eval_timeout`: seconds for the whole
    evaluation (None: the default, 0: no limit); `example`: see `find_config`.
    `changes`: for a command that changes the machine, how it is given a
    config (`sys apply {}`): a file found that is not the current
    snapshot's config is then refused before it is evaluated; without it,
    the command only reads, and says which file it used (`config_found`).
    `flags`: CCM's `--facts`, `--hiera` and `--read-env`. The manifest
    comes from the evaluation cache when nothing the config read changed
    (`manifest/evalcache.py`), unless `no_cache` (`--no-cache`)."""
    from syslua.cli import phases
    from syslua.manifest.options import Options

    flags = flags or DataFlags()
    cli_facts = parse_fact_args(facts)
    path = config_found(term, config, paths, example, changes)
    term.log(f"Evaluating {path.name}...")
    phases.mark("evaluate")
    options = Options(
        cli_facts=cli_facts,
        impure=impure,
        max_depth=max_depth,
        noop=noop,
        health_check_only=health_check_only,
        phase=phases.mark,
        facts_file=flags.facts_file,
        hiera=flags.hiera,
        read_env=flags.read_env,
    )
    if eval_timeout is not None:
        options.eval_timeout = eval_timeout or None
    options.git = GitInputs()
    from syslua.cli import options as cli_options

    manifest = _evaluated(term, path, options, paths, no_cache or cli_options.no_cache)
    term.distrust(item.id for item in manifest)  # before a cycle error quotes them
    phases.show_inputs(term, manifest.inputs)
    for warning in manifest.warnings:
        term.warn(warning)
    return manifest


def _evaluated(
    term: Terminal, path: Path, options: Options, paths: Paths, no_cache: bool
) -> Manifest:
    """The resolved manifest: from the evaluation cache when every read it
    recorded gives the same answer now, else evaluated (and cached when it
    can be). Under -v, says which and why."""
    import os

    from syslua.manifest import evalcache

    def say(text: str) -> None:
        if term.verbosity > 0:
            term.log(text)

    from syslua.errors import set_display_root

    config = Path(os.path.abspath(path))
    set_display_root(str(config.parent))
    if no_cache or options.impure:
        # --impure: what the config does outside the sandbox (a command it
        # runs, a file it writes) is not recorded, and must happen again.
        say(f"evaluation not cached: {'--no-cache' if no_cache else '--impure'}")
        return _resolve(path, options, paths, None)
    file = evalcache.cache_file(paths.cache, config)
    key = evalcache.key(config, options, evalcache.gathered_facts(options, paths))
    manifest, why = evalcache.load(file, key)
    if manifest is not None:
        say(f"evaluation cached: nothing {config.name} read changed")
        return manifest
    say(f"evaluation cache not used: {why}")
    recorder = evalcache.Recorder()
    manifest = _resolve(path, options, paths, recorder)
    reasons = evalcache.reasons_against(recorder, manifest)
    if reasons:
        evalcache.drop(file)
        say(f"evaluation not cached: {'; '.join(reasons)}")
        return manifest
    failed = evalcache.store(file, key, recorder, manifest)
    if failed is not None:
        evalcache.drop(file)
        say(f"evaluation not cached: {failed}")
    return manifest


def _resolve(path: Path, options: Options, paths: Paths, recorder: Recorder | None) -> Manifest:
    from syslua.manifest import evalcache
    from syslua.manifest.resolve import resolve

    with evalcache.recording(recorder):
        return resolve(path, options, paths)


def config_found(
    term: Terminal,
    config: Path | None,
    paths: Paths,
    example: str = "sys plan path/to/sys.lua",
    changes: str | None = None,
) -> Path:
    """The config to evaluate (`execute.config.locate_config`). A file that
    discovery found and that is not the current snapshot's config (a
    Neovim `init.lua` in ~/.config/nvim) is refused when the command
    changes the machine (`changes`: how it is given a config, `sys apply
    {}`), and named otherwise: on stdout, before what the command shows
    (on stderr with --json)."""
    found = locate_config(config, paths, term.log, example)
    if found.current is None:
        return found.path
    if changes is not None:
        raise found.refusal(changes)
    if term.json_mode:
        term.log(found.note())
    else:
        term.line(found.note())
    return found.path


def show_skipped(term: Terminal, manifest: Manifest) -> None:
    """The CCM resources that their `control` leaves unmanaged (not items)."""
    for subject, reason, where in manifest.skipped:
        term.line(f"  = {subject}: skipped by control ({reason}) (declared at {where})")


@contextmanager
def state(
    paths: Paths, term: Terminal, *, exclusive: bool, wait: bool = False
) -> Iterator[StateLock | None]:
    """Open the state dir (`execute.recovery.StateAccess`): tighten its
    permissions if an older version left them open, take the lock when
    writing, and first roll back an interrupted apply; what it says is
    printed as a warning."""
    from syslua.execute.recovery import StateAccess

    access = StateAccess(
        paths,
        warn=term.warn,
        stop=signals.current,
        reporter=lambda: _reporter(term),
        command=_command(),
        started=_started(),
        on_wait=_waiting(term),
    )
    from syslua.errors import LockHeldError

    try:
        with access.open(exclusive=exclusive, wait=wait) as lock:
            yield lock
    except LockHeldError as e:
        # The next step, as a command that works as printed: the same again, waiting.
        from syslua.cli.again import again

        if wait or not _waits():
            raise
        name = _command().removeprefix("sys ").split(" ")[0]
        e.hint = (
            f"Wait for it to finish, or run this again with --wait: {again(name, None, '--wait')}"
        )
        raise


def _waits() -> bool:
    """Whether the command running has `--wait` (those that change the state do)."""
    import click

    ctx = click.get_current_context(silent=True)
    return ctx is not None and "wait" in ctx.params


def _command() -> str:
    """The command running (`sys apply`, `sys snapshot tag`), without its arguments."""
    import click

    ctx = click.get_current_context(silent=True)
    names: list[str] = []
    while ctx is not None and ctx.parent is not None:
        names.append(ctx.info_name or "")
        ctx = ctx.parent
    return " ".join(["sys", *reversed(names)])


def _started() -> float | None:
    from syslua import cli

    return cli.started


def _waiting(term: Terminal) -> Callable[[Holder | None], None]:
    def say(holder: Holder | None) -> None:
        who = holder.describe() if holder else "another syslua process"
        term.log(f"Waiting for the lock held by {who}...")

    return say


def _reporter(term: Terminal) -> Reporter:
    from syslua.cli.report import PlainReporter

    return PlainReporter(term)
