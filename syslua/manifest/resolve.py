"""Resolve a config file into a Manifest: evaluate, validate, descend into `apply` children, merge.

Steps:
1. Gather facts (machine, user facts file, `--facts FILE`, `--fact`), and
   when the config is a CCM manifest, read the `.env` beside it into the
   `Environ` of the CCM manifests (CCM's `--read-env`, on unless
   `Options.read_env` is False).
2. Evaluate the root config (`.lua` in LuaJIT, `.yaml` as a CCM manifest)
   and validate each declaration where it was made. The Lua files of one
   resolve share one time limit (`Options.eval_timeout`).
3. For each `apply` declared there, check `allow_apply`, the depth limit
   (real nesting) and cycles (a manifest already on the current chain), then
   evaluate the child with the apply's `data` as `sys.data`, in a context
   whose noop and health-check modes can only be strengthened.
4. Merge every declaration of every level into one frozen Manifest.
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from syslua import secrets
from syslua.errors import ConfigError, Source, UsageError, set_display_root
from syslua.eval import facts as factlib
from syslua.eval import reads as eval_reads
from syslua.eval import template
from syslua.eval.lua import RawDeclaration, TimeLimit, run_config
from syslua.manifest import primitives
from syslua.manifest.assemble import assemble
from syslua.manifest.merge import merge, merge_group
from syslua.manifest.model import Manifest, thaw
from syslua.manifest.options import DEFAULT_MAX_DEPTH as DEFAULT_MAX_DEPTH
from syslua.manifest.options import Options
from syslua.manifest.schema import Context
from syslua.manifest.validate import Decl, Origin, validate
from syslua.paths import Paths

if TYPE_CHECKING:
    from syslua.eval.inputs import InputOptions, Resolution

# Files read as CCM manifests (by eval/ccm.py, imported only when one is
# read); anything else is Lua.
CCM_SUFFIXES = (".yaml", ".yml", ".json")


class _Run:
    """One resolution in progress: facts, and what the manifests evaluated so far gave."""

    def __init__(
        self, root_dir: str, facts: dict[str, Any], core: dict[str, Any], options: Options
    ) -> None:
        self.root_dir = root_dir
        self.facts = facts
        self.core = core
        self.options = options
        self.decls: list[Decl] = []
        self.inputs: list[str] = []
        self.warnings: list[str] = []
        self.messages: list[tuple[str, str]] = []
        self.skipped: list[tuple[str, str, Source]] = []  # by `control`
        self.seq = 0
        self.placeholders = False
        self.limit: TimeLimit | None = None
        self.inputs_options: InputOptions | None = None
        self.resolution: Resolution | None = None  # the root config's inputs
        self.root = ""  # the root config's path
        self.dotenv: str | None = None  # the `.env` read into `env`
        self.env: dict[str, str] = {}  # `Environ` of CCM manifests


def _start(config: Path, options: Options, paths: Paths, *, only_inputs: bool = False) -> _Run:
    config = Path(os.path.abspath(config))
    if not config.is_file():
        raise UsageError(f"config file not found: {config}")
    set_display_root(str(config.parent))
    secrets.new_evaluation()  # each `sys.secret` source is read again, once
    file_facts = factlib.read_facts_file(options.facts_file) if options.facts_file else None
    facts = factlib.gather(paths.config, options.cli_facts, file_facts)
    machine = factlib.machine_facts()
    run = _Run(str(config.parent), facts, {k: machine[k] for k in factlib.CORE}, options)
    run.root = str(config)
    run.env = dict(os.environ)
    if config.suffix in CCM_SUFFIXES:
        _read_env(run, config.parent / ".env")
    if options.eval_timeout is not None:
        run.limit = TimeLimit(options.eval_timeout)
    from syslua.eval.input_options import InputOptions

    run.inputs_options = InputOptions(
        cache=paths.cache,
        git=options.git,
        update=options.update,
        only_inputs=only_inputs,
        write_lock=options.write_lock,
        guard=options.guard,
    )
    return run


def _read_env(run: _Run, dotenv: Path) -> None:
    """`Environ` of the CCM manifests: the process environment, with the
    `.env` beside the config over it (eval/dotenv.py)."""
    if run.options.read_env and dotenv.is_file():
        from syslua.eval import dotenv as dotenv_file

        run.env.update(dotenv_file.read(dotenv))
        run.dotenv = str(dotenv)
        run.inputs.append(str(dotenv))


def resolve(config: Path, options: Options | None = None, paths: Paths | None = None) -> Manifest:
    options = options or Options()
    paths = paths or Paths.from_env()
    run = _start(config, options, paths)
    config = Path(os.path.abspath(config))
    root = Origin(noop=options.noop, health_check_only=options.health_check_only)
    _load(run, config, root, data={}, chain=(str(config),), allow_apply=True)
    if options.phase is not None:
        options.phase("merge")
    manifest = assemble(
        merge(run.decls),
        inputs=run.inputs,
        config=str(config),
        warnings=run.warnings,
        messages=run.messages,
        skipped=[(subject, reason, str(where)) for subject, reason, where in run.skipped],
        placeholders=run.placeholders or secrets.active(),
    )
    manifest = primitives.finalize(manifest)
    _record_run(run, manifest)
    return manifest


def resolve_inputs(
    config: Path, options: Options | None = None, paths: Paths | None = None
) -> Resolution | None:
    """`sys update`: evaluate the root config's main chunk, resolve its inputs
    (again, for those `options.update` names) and write the lock, without
    calling `setup`. None when the config is not in the entry form."""
    options = options or Options()
    run = _start(config, options, paths or Paths.from_env(), only_inputs=True)
    path = Path(os.path.abspath(config))
    _evaluate(run, path, {}, _roots(run, path, {}))
    return run.resolution


def _roots(run: _Run, path: Path, data: dict[str, Any]) -> template.Roots:
    """What templates and expressions in the manifest at `path` read."""
    ccm = path.suffix in CCM_SUFFIXES
    return template.Roots(
        facts=run.facts,
        data=data,
        env=dict(run.env) if ccm else eval_reads.environment(),
        base_dir=str(path.parent),
        reads=run.inputs,
        ccm=ccm,
        dotenv=run.dotenv if ccm else None,
    )


def _evaluate(
    run: _Run, path: Path, data: dict[str, Any], roots: template.Roots
) -> list[RawDeclaration]:
    if path.suffix in CCM_SUFFIXES:
        from syslua.eval import ccm

        eval_reads.uncacheable(f"{_short(str(path))} is a CCM manifest")
        raws, messages = ccm.load(
            path,
            facts=run.facts,
            data=data,
            seq_start=run.seq,
            warnings=run.warnings,
            skipped=run.skipped,
            inputs=run.inputs,
            scope=roots,
            env=run.env,
            dotenv=run.dotenv,
            hiera=run.options.hiera if str(path) == run.root else None,
        )
        run.inputs.append(str(path))
        run.messages.extend(messages)
        run.placeholders = (
            run.placeholders
            or "$${" in path.read_text(encoding="utf-8", errors="replace")
            or any(_deferred(raw.props) for raw in raws)
        )
    else:
        result = run_config(
            path,
            core=run.core,
            facts=run.facts,
            data=data,
            root_dir=run.root_dir,
            impure=run.options.impure,
            limit=run.limit,
            inputs=run.inputs_options,
        )
        if run.resolution is None:
            run.resolution = result.resolution
        raws = result.declarations
        run.inputs.extend(result.inputs)
        _record(result, run.options)
        run.placeholders = run.placeholders or result.placeholders
    return raws


def _record(result: Any, options: Options) -> None:
    """Tell the evaluation cache what a Lua file read besides files
    (`manifest/evalcache.py`)."""
    recorder = eval_reads.active()
    if recorder is None:
        return
    recorder.env.update(result.env)
    for path in result.absent:
        recorder.note("absent", path)
    for reason in result.uncacheable:
        recorder.uncacheable(f"the config calls {reason}")
    if options.impure:
        recorder.uncacheable("--impure")


def _record_run(run: _Run, manifest: Manifest) -> None:
    """The files the whole evaluation read, and the inputs' locks."""
    recorder = eval_reads.active()
    if recorder is None:
        return
    recorder.files.extend(manifest.inputs)
    resolution = run.resolution
    if resolution is None:
        return
    if resolution.lock_written:
        recorder.uncacheable("the inputs' lock was written (an input was fetched)")
    locks = [Path(run.root).parent / "syslua.lock"]
    pending = list(resolution.inputs.values())
    while pending:
        found = pending.pop()
        locks.append(found.path / "syslua.lock")
        pending.extend(found.inputs.values())
    for lock in locks:
        if lock.exists():
            recorder.files.append(str(lock))
        else:
            recorder.note("absent", str(lock))


def _deferred(value: Any) -> bool:
    """Whether a CCM resource's properties hold a template rendered when it runs."""
    if isinstance(value, str):
        return value.startswith("$${" + template.DEFERRED)
    if isinstance(value, dict):
        return any(_deferred(v) for v in value.values())
    if isinstance(value, list):
        return any(_deferred(v) for v in value)
    return False


def _load(
    run: _Run,
    path: Path,
    origin: Origin,
    data: dict[str, Any],
    chain: tuple[str, ...],
    allow_apply: bool,
) -> None:
    ccm = path.suffix in CCM_SUFFIXES
    roots = _roots(run, path, data)
    raws = _evaluate(run, path, data, roots)
    ctx = Context(manifest_dir=str(path.parent), roots=roots, render_templates=not ccm, ccm=ccm)
    applies: dict[str, list[Decl]] = defaultdict(list)
    for raw in raws:
        # Keep evaluation order stable across files: sequence numbers are global.
        run.seq += 1
        raw.seq = run.seq
        decl = validate(raw, ctx, origin)
        if decl is None:
            continue
        run.decls.append(decl)
        if decl.type == "apply":
            if not allow_apply:
                raise ConfigError(
                    f"apply {_short(decl.key)}: not allowed here: the parent apply "
                    f"{_short((origin.parent or '').partition('#')[2])} "
                    "sets allow_apply = false, so this manifest may not contain apply resources",
                    decl.source,
                )
            applies[decl.key].append(decl)
    for key in sorted(applies):
        _load_child(run, key, applies[key], origin, chain)


def _load_child(
    run: _Run, key: str, decls: list[Decl], origin: Origin, chain: tuple[str, ...]
) -> None:
    item = merge_group(decls)
    where = min(d.source for d in decls)
    child = Path(key)
    if key in chain:
        cycle = " -> ".join(_short(p) for p in (*chain[chain.index(key) :], key))
        raise ConfigError(
            f"apply: manifest cycle: {cycle}",
            where,
            hint="A manifest cannot apply itself, directly or through its children.",
        )
    depth = origin.depth + 1
    if depth > run.options.max_depth:
        raise ConfigError(
            f"apply {_short(key)}: nesting depth {depth} exceeds the limit of {run.options.max_depth}",
            where,
            hint=f"Chain: {' -> '.join(_short(p) for p in (*chain, key))}",
        )
    if not child.is_file():
        raise ConfigError(f"apply: child manifest not found: {key}", where)
    noop = origin.noop or bool(item.get("noop"))
    hco = origin.health_check_only or bool(item.get("health_check_only"))
    if origin.noop and "noop" in decls[0].props and not item.get("noop"):
        run.warnings.append(
            f"apply {_short(key)} asks for noop = false inside a noop run; noop stays on (it can only be strengthened)"
        )
    if (
        origin.health_check_only
        and "health_check_only" in decls[0].props
        and not item.get("health_check_only")
    ):
        run.warnings.append(
            f"apply {_short(key)} asks for health_check_only = false inside a health-check run; it stays on"
        )
    child_origin = Origin(parent=item.id, noop=noop, health_check_only=hco, depth=depth)
    _load(
        run,
        child,
        child_origin,
        data=thaw(item.get("data") or {}),
        chain=(*chain, key),
        allow_apply=bool(item.get("allow_apply", True)),
    )


def _short(path: str) -> str:
    from syslua.errors import display_path

    return display_path(path)
