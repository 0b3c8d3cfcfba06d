"""`sys apply`: converge the machine to the config, atomically.

Evaluation errors exit 2 before any state is touched; then the state lock is
taken (exit 3 when held), an interrupted apply is rolled back, and the apply
runs. Exit 0 when every item converged, 1 when the apply failed (and was
rolled back), 2 when it refused to overwrite files edited by hand since the
last apply (without `--force`; nothing was changed) or when it would remove
every managed item and `--allow-empty` was not given, 130 when Ctrl-C or
SIGTERM stopped it (rolled back too).

How the run ends on the terminal (the summary, the verdict and the exit
code) is `cli/outcome.py`'s, shared with `sys rollback` and `sys destroy`.
"""

from __future__ import annotations

import time
from pathlib import Path

from syslua.cli import signals
from syslua.cli.commands.common import load_manifest, parse_size, show_skipped, state
from syslua.cli.outcome import interrupted_early, late, report, reporter_for
from syslua.cli.output import Terminal
from syslua.errors import Interrupted
from syslua.execute.apply import ApplyOptions, apply_manifest
from syslua.paths import Paths


def run(
    term: Terminal,
    config: Path | None,
    *,
    noop: bool,
    health_check_only: bool,
    jobs: int | None,
    facts: list[str],
    impure: bool,
    max_depth: int,
    message: str | None,
    wait: bool,
    force: bool = False,
    max_unpack: str = "4GiB",
    eval_timeout: float | None = None,
    allow_empty: bool = False,
) -> int:
    started = time.monotonic()
    unpack_limit = parse_size(max_unpack, "--max-unpack")
    paths = Paths.from_env()
    try:
        manifest = load_manifest(
            term,
            config,
            facts=facts,
            impure=impure,
            max_depth=max_depth,
            paths=paths,
            noop=noop,
            health_check_only=health_check_only,
            eval_timeout=eval_timeout,
        )
        for kind, text in manifest.messages:
            if kind == "pre_message":
                term.lines(text)
        show_skipped(term, manifest)
        options = ApplyOptions(
            noop=noop,
            health_check_only=health_check_only,
            jobs=jobs,
            message=message,
            allow_empty=allow_empty,
            keep_edits=force,
            max_unpack=unpack_limit,
            stop=signals.current(),
        )
        read_only = noop or health_check_only
        term.log("Building execution plan...")
        reporter = reporter_for(term, options)
        with state(paths, term, exclusive=not read_only, wait=wait):
            try:
                outcome = apply_manifest(manifest, paths, options, reporter, config=manifest.config)
            finally:
                reporter.close()
    except Interrupted:
        return interrupted_early(term)
    late(term, outcome, options)
    for kind, text in manifest.messages:
        if kind == "post_message" and outcome.ok:
            term.lines(text)
    return report(term, outcome, time.monotonic() - started, noop=noop, hc=health_check_only)
