"""How a config is resolved (`manifest/resolve.py`): its own module, light to
import, so that a run answered by the evaluation cache (`manifest/evalcache.py`)
builds its options without importing the evaluator."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from syslua.eval.input_options import Guard
    from syslua.eval.inputs import GitFetcher

DEFAULT_MAX_DEPTH = 10
DEFAULT_EVAL_TIMEOUT = 60.0  # syslua.eval.lua.DEFAULT_EVAL_TIMEOUT, without importing Lua


# Plain classes, not dataclasses: a dataclass costs every start half a
# millisecond to generate its methods, and nothing compares or prints these.


class Options:
    """How to resolve: facts from the command line, impure evaluation, nesting, modes."""

    def __init__(
        self,
        cli_facts: dict[str, Any] | None = None,
        impure: bool = False,
        max_depth: int = DEFAULT_MAX_DEPTH,
        noop: bool = False,  # `sys apply --noop`: children cannot weaken it
        health_check_only: bool = False,
        eval_timeout: float
        | None = DEFAULT_EVAL_TIMEOUT,  # seconds for all Lua files; None: no limit
        # Inputs of a config in the original's entry form (eval/inputs.py): how
        # git inputs are fetched (None: only from the cache), and which inputs
        # `sys update` resolves again (None: none, empty: all).
        git: GitFetcher | None = None,
        update: frozenset[str] | None = None,
        write_lock: bool = True,  # False: `sys update --dry-run`
        guard: Guard | None = None,  # around the lock's write (`InputOptions.guard`)
        phase: Callable[[str], None] | None = None,  # told "merge" when merging starts (-vv)
        # CCM's flags: `--facts FILE` (merged over the user facts, under
        # `--fact`), `--hiera FILE` (data over the root manifest's own),
        # `--read-env` (the `.env` beside the config into `Environ`).
        facts_file: Path | None = None,
        hiera: Path | None = None,
        read_env: bool = True,
    ) -> None:
        self.cli_facts: dict[str, Any] = {} if cli_facts is None else cli_facts
        self.impure = impure
        self.max_depth = max_depth
        self.noop = noop
        self.health_check_only = health_check_only
        self.eval_timeout = eval_timeout
        self.git = git
        self.update = update
        self.write_lock = write_lock
        self.guard = guard
        self.phase = phase
        self.facts_file = facts_file
        self.hiera = hiera
        self.read_env = read_env
