"""The checks of `sys doctor`: can syslua work on this machine?

Each check gives a `Check`: whether it passed, what it found, and for a
failure the fix. In order:

1. the Lua runtime: LuaJIT loads through lupa and runs a chunk, and the
   shipped Lua code is there;
2. permissions: the state and store directories and what they hold are
   yours, usable by you, and no more open than `state/layout.py` allows;
3. the lock: free, or held by a live process (its pid); a lock file a
   dead process left behind is free, and said so;
4. failed journals: undo records kept from a rollback that could not finish;
5. the store: every object's content matches its hash (`quick`: a sample),
   and what the current snapshot refers to is there;
6. the env line: the rc file of `$SHELL` (or the source the config manages
   it from) loads syslua's env script;
7. PATH: the profile's `bin` is on it;

6 and 7 pass as `not needed` when the config (the current snapshot's, or
before the first apply the one found) declares nothing a shell needs:
no variables, packages or aliases, as a config of dotfiles only.
8. the config: it is found and still evaluates;
   password managers: the commands its `sys.secret` calls run are on PATH
   (only where it calls one);
   the age identity: there, readable, private (0600 or 0400) and usable
   (only where age is used: the identity file exists, or
   SYSLUA_AGE_IDENTITY is set);
9. managed links: none leads nowhere;
10. the current snapshot: its file is readable (a corrupt or missing one
    makes `sys apply` refuse to remove anything until the user names the
    snapshot to plan removals against).

The checks only look: they take no lock, roll nothing back, and tighten no
permissions (other commands do that). `repair_current` is what `sys doctor
--repair` does first, under the state lock: make the newest readable
snapshot current in place of a damaged one.
"""

from __future__ import annotations

import os
import random
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from syslua.errors import SysluaError
from syslua.paths import Paths, abbreviate, root_hint

if TYPE_CHECKING:
    from syslua.manifest.model import Manifest

QUICK_SAMPLE = 64  # store objects hashed with `quick`
SHOWN = 5  # paths named on a line; the rest are counted


@dataclass
class Check:
    name: str  # machine name (--json)
    title: str  # what the line is about
    ok: bool
    detail: str
    fix: str | None = None


def run_checks(paths: Paths, *, quick: bool) -> list[Check]:
    """Every check that applies here, in order; `quick` hashes a sample of
    the store's objects."""
    return [
        _guarded(name, title, check, paths, quick)
        for name, title, check in CHECKS
        if name not in ONLY_WHEN or ONLY_WHEN[name]()
    ]


def _guarded(
    name: str,
    title: str,
    check: Callable[[Paths, bool], tuple[bool, str, str | None]],
    paths: Paths,
    quick: bool,
) -> Check:
    """One check; what stops it (an unreadable file, a state error) fails it, not doctor."""
    try:
        ok, detail, fix = check(paths, quick)
    except SysluaError as e:
        ok, detail, fix = False, e.message, e.hint
    except OSError as e:
        ok, detail, fix = False, f"{e.filename or ''}: {e.strerror}".lstrip(": "), None
    return Check(name, title, ok, detail, None if ok else fix)


def _named(items: list[str]) -> str:
    shown = ", ".join(items[:SHOWN])
    return shown + (f" and {len(items) - SHOWN} more" if len(items) > SHOWN else "")


# -- 1. the Lua runtime ----------------------------------------------------------
def lua_runtime(paths: Paths, quick: bool) -> tuple[bool, str, str | None]:
    from syslua.paths import shipped_dirs

    try:
        import lupa
        import lupa.luajit21 as luajit

        runtime = luajit.LuaRuntime(register_eval=False, register_builtins=False)
        answer = runtime.execute("return 6 * 7")
        version = str(runtime.lua_implementation)
    except Exception as e:  # an import or a runtime that cannot start: say which
        return (
            False,
            f"LuaJIT cannot be loaded through lupa: {type(e).__name__}: {e}",
            "reinstall lupa in syslua's environment (pip install --force-reinstall lupa)",
        )
    if answer != 42:
        return False, f"{version} returned {answer!r} for 6 * 7", "reinstall lupa"
    lua_dir, _ = shipped_dirs()
    prelude = Path(lua_dir) / "prelude.lua"
    if not prelude.is_file():
        return (
            False,
            f"{version} runs, but syslua's Lua code is missing ({prelude})",
            "reinstall syslua (pipx install --force, or pip install --force-reinstall)",
        )
    return True, f"{version} runs configs (lupa {lupa.__version__})", None


# -- 2. permissions ----------------------------------------------------------------
def permissions(paths: Paths, quick: bool) -> tuple[bool, str, str | None]:
    from syslua.state import layout

    roots = [r for r in (paths.state, paths.store) if r.exists() or r.is_symlink()]
    if quick:
        listed = [r for r in [*roots, *layout.watched(paths)] if r.exists()]
        found = [(p, os.lstat(p)) for p in dict.fromkeys(listed) if not p.is_symlink()]
    else:
        found = [entry for root in roots for entry in layout.entries(root, paths)]
    problems, fixes = _permission_problems(found, roots, paths)
    if problems:
        return False, "; ".join(problems), "; ".join(fixes)
    # What those entries do not show: a directory that cannot be made or
    # written (under a regular file, in a directory not yours, read-only)
    unusable = layout.unusable(paths, writing=True)
    if unusable is not None:
        return False, unusable, root_hint()
    if not roots:
        return True, "no state or store yet (the first `sys apply` creates them)", None
    what = "the layout's directories" if quick else f"{len(found)} entries"
    return True, f"{what} under {', '.join(str(r) for r in roots)} are yours and private", None


def _permission_problems(
    found: list[tuple[Path, os.stat_result]], roots: list[Path], paths: Paths
) -> tuple[list[str], list[str]]:
    """What is wrong with the entries `found` under `roots`, and the fixes."""
    from syslua.state import layout

    uid = os.getuid()
    others: list[str] = []  # not ours
    unusable: list[str] = []  # ours, but we cannot use it
    too_open: list[tuple[str, int]] = []  # readable by other users: path, mode it should have
    for path, st in found:
        mode = stat.S_IMODE(st.st_mode)
        if st.st_uid != uid:
            others.append(f"{path} (owner {_user(st.st_uid)})")
            continue
        need = 0o700 if stat.S_ISDIR(st.st_mode) else 0o400
        if mode & need != need:
            unusable.append(f"{path} ({mode:04o})")
        wanted = layout.wanted(path, st, paths)
        if wanted is not None:
            too_open.append((str(path), wanted))
    fixes = []
    problems = []
    if others:
        problems.append(f"not yours: {_named(others)}")
        me = _user(uid)
        fixes.append(
            f"give them back to {me}: sudo chown -R {me} "
            + " ".join(str(r) for r in roots)
            + " (a `sudo sys` run leaves files owned by root)"
        )
    if unusable:
        problems.append(f"you cannot use: {_named(unusable)}")
        fixes.append("chmod u+rwx on the directories, u+r on the files")
    if too_open:
        problems.append(
            "readable by other users: " + _named([f"{p} (should be {m:04o})" for p, m in too_open])
        )
        fixes.append(_tighten_fix(too_open, paths))
    return problems, fixes


def _tighten_fix(too_open: list[tuple[str, int]], paths: Paths) -> str:
    from syslua.state import layout

    shown = too_open[:SHOWN]
    return (
        "; ".join(f"chmod {m:04o} {p}" for p, m in shown)
        + (" and the rest likewise" if len(too_open) > SHOWN else "")
        # Commands tighten everything when a directory of the layout is too open.
        + (" (or run any `sys` command: it tightens them)" if layout.too_open(paths) else "")
    )


def _user(uid: int) -> str:
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


# -- 3. the lock -------------------------------------------------------------------
def lock(paths: Paths, quick: bool) -> tuple[bool, str, str | None]:
    from syslua.state.lock import StateLock

    lk = StateLock(paths.lock)
    if paths.lock.is_symlink() or (paths.lock.exists() and not paths.lock.is_file()):
        return (
            False,
            f"{paths.lock} is not a plain file",
            f"move {paths.lock} out of the way (syslua does not remove it for you)",
        )
    if not paths.lock.exists():
        return True, "free", None
    holder = lk.holder_info()
    if lk.is_held_by_other():
        who = holder.describe(whole=True) if holder else "a process that has not said who it is"
        pid = f" (kill {holder.pid})" if holder else ""
        return (
            False,
            f"held by {who}",
            "wait for it to finish (or run with --wait); if it is stuck, stop it" + pid,
        )
    if holder is not None:
        return (
            True,
            f"free; the lock file still names {holder.describe(whole=True)}, which ended "
            "without releasing it: that is fine, the lock died with it",
            None,
        )
    return True, "free", None


# -- 4. failed journals ---------------------------------------------------------------
def failed_journals(paths: Paths, quick: bool) -> tuple[bool, str, str | None]:
    folder = paths.failed_journals
    kept = sorted(str(p) for p in folder.iterdir()) if folder.is_dir() else []
    if not kept:
        return True, "none", None
    return (
        False,
        f"{len(kept)} kept from an undo that could not finish: {_named(kept)}",
        "`sys status` lists the paths that were not put back and where their previous "
        "content is kept; put them right, then delete the journals: rm " + " ".join(kept),
    )


# -- 5. the store ----------------------------------------------------------------------
_OBJECT = re.compile(r"[0-9a-f]{64}")


def store(paths: Paths, quick: bool) -> tuple[bool, str, str | None]:
    from syslua.execute.drift import store_check
    from syslua.state.store import Store

    st = Store(paths.store)
    names = [n for n in st.all_objects() if _OBJECT.fullmatch(n)]
    sample = random.sample(names, QUICK_SAMPLE) if quick and len(names) > QUICK_SAMPLE else names
    corrupt = [n for n in sample if not st.verify(n)]
    missing = store_check(paths)
    problems, fixes = [], []
    if corrupt:
        problems.append(
            f"{len(corrupt)} of {len(sample)} objects checked do not match their hash: "
            + _named([st.location(n) for n in corrupt])
        )
        # A pack holds many other blobs (every original, after gc): only a
        # loose object is deleted whole.
        packed = set(st.corrupt_packed())
        loose = [n for n in corrupt if n not in packed]
        steps = []
        if packed & set(corrupt):
            steps.append("run `sys gc`, which writes their packs again without them")
        if loose:
            steps.append(
                "delete the files that hold them (rm " + " ".join(st.files_of(loose)) + ")"
            )
        fixes.append(
            " and ".join(steps) + ", then `sys apply` stores file contents "
            "again; an original or an older content kept only there cannot be restored"
        )
    if missing is not None:
        if not missing["exists"]:
            problems.append(f"the store {missing['path']} is missing")
        else:
            problems.append(
                f"{missing['missing_objects']} of {missing['objects']} objects and "
                f"{missing['missing_trees']} of {missing['trees']} trees the current snapshot "
                "refers to are missing"
            )
        fixes.append("`sys status` says what; `sys apply` stores what the config declares again")
    if problems:
        return False, "; ".join(problems), "; ".join(fixes)
    if quick and len(sample) < len(names):
        return True, f"{len(sample)} of {len(names)} objects checked (a sample): hashes match", None
    return True, f"{len(names)} objects: every hash matches", None


# -- 6. the env line --------------------------------------------------------------------
# Which rc file a shell reads, whether it (or the source the config manages
# it from) loads the script, and whether the config needs it at all, is
# syslua/resources/env_line.py's knowledge (`sys apply` prints the line
# while the rc file does not load it).
NOT_NEEDED = "not needed (the config declares no variables, packages or aliases)"


def _needs_shell(paths: Paths) -> tuple[bool, Manifest | None]:
    """Whether the applied config (or, before the first apply, the config
    found) declares something the shell needs; an unknown config does."""
    from syslua.resources.env_line import applied_manifest, needs_shell

    manifest = applied_manifest(paths) or _found_config(paths)
    return (manifest is None or needs_shell(manifest)), manifest


def _found_config(paths: Paths) -> Manifest | None:
    """The manifest of the config `sys plan` would use; None when there is
    none or it does not evaluate (the config check says so)."""
    from syslua.execute.config import find_config
    from syslua.manifest.resolve import Options, resolve

    try:
        return resolve(find_config(None, paths), Options(write_lock=False), paths)
    except SysluaError:
        return None


def env_line(paths: Paths, quick: bool) -> tuple[bool, str, str | None]:
    from syslua.resources.env_line import rc_target
    from syslua.shellrc import rc_file, rc_line

    needed, manifest = _needs_shell(paths)
    if not needed:
        return True, NOT_NEEDED, None
    env_shell = os.environ.get("SHELL", "")
    shell = os.path.basename(env_shell)
    rc = rc_file(shell) if shell else None
    if rc is None:
        return (
            False,
            f"$SHELL is {env_shell or 'not set'}: syslua writes env scripts for bash, zsh, "
            "sh and fish only",
            f"load {paths.env_sh} from your shell's startup file (`sys env --shell sh` prints "
            "the line)",
        )
    script = paths.env_fish if shell == "fish" else paths.env_sh
    line = rc_line(paths, "fish" if shell == "fish" else "sh")
    target = rc_target(manifest, rc)
    shown = abbreviate(str(rc))
    fix = f"add this line to {target.where()}: {line}"
    if not target.inline:
        fix = f"run `sys env --append`, or {fix}"
    if target.loads(script):
        return True, f"{shown} loads {abbreviate(str(script))}", None
    if not rc.exists() and target.source is None:
        return False, f"{shown} does not exist, so it does not load syslua's env script", fix
    return False, f"{shown} does not load syslua's env script", fix


# -- 7. PATH --------------------------------------------------------------------------
def on_path(paths: Paths, quick: bool) -> tuple[bool, str, str | None]:
    if not _needs_shell(paths)[0]:
        return True, NOT_NEEDED, None
    bin_dir = paths.profile / "bin"
    entries = [e for e in os.environ.get("PATH", "").split(os.pathsep) if e]
    real = os.path.realpath(bin_dir)
    if any(e == str(bin_dir) or os.path.realpath(e) == real for e in entries):
        return True, f"{abbreviate(str(bin_dir))} is on PATH", None
    return (
        False,
        f"{abbreviate(str(bin_dir))} (where installed packages' commands are) is not on PATH",
        "load syslua's env script in your shell (the env line above), then open a new shell",
    )


# -- 8. the config -------------------------------------------------------------------
def config(paths: Paths, quick: bool) -> tuple[bool, str, str | None]:
    from syslua.errors import UsageError
    from syslua.execute.config import locate_config
    from syslua.manifest.resolve import Options, resolve

    try:
        found = locate_config(None, paths)
    except UsageError:
        return (
            False,
            "no config file (./sys.lua, ./init.lua, the same in ~/.config/syslua/, "
            "or the current snapshot's)",
            "sys init writes a starter",
        )
    path, aside = found.path, ""
    if found.current is not None:
        # `sys apply` refuses the file found here: the config to check is the
        # current snapshot's, the one it applies when given
        aside = (
            f"; {found.shown()} here is not it: "
            f"sys apply uses {found.shown()} only when given explicitly"
        )
        if not found.current.is_file():
            return (
                False,
                f"the current snapshot's config {abbreviate(str(found.current))} "
                f"no longer exists{aside}",
                f"pass the config to apply: sys apply {found.shown()}",
            )
        path = found.current
    shown = abbreviate(str(path))
    try:
        # Read-only: inputs come from the cache and the lock is not written.
        manifest = resolve(path, Options(write_lock=False), paths)
    except SysluaError as e:
        return (
            False,
            f"{shown} does not evaluate: {e.render()}",
            f"sys plan {shown} shows it in full",
        )
    n = len(list(manifest))
    return True, f"{shown} evaluates ({n} item{'' if n == 1 else 's'}){aside}", None


# -- password managers ---------------------------------------------------------------
def managers_in_use() -> bool:
    """Whether the config evaluated by the config check ran a password
    manager for `sys.secret` (the vault remembers which)."""
    from syslua import secrets

    return bool(secrets.programs())


def managers(paths: Paths, quick: bool) -> tuple[bool, str, str | None]:
    """The commands the config's `sys.secret` calls run (`pass`, `op`, ...) are on PATH."""
    import shutil

    from syslua import secrets

    used = sorted(secrets.programs())
    missing = [p for p in used if shutil.which(p) is None]
    if missing:
        return (
            False,
            f"{_named(missing)} {'is' if len(missing) == 1 else 'are'} not on PATH "
            "(the config reads secrets with it)",
            "install it, or put the directory that holds it on PATH",
        )
    return True, f"{_named(used)} on PATH", None


# -- the age identity ----------------------------------------------------------------
def age_in_use() -> bool:
    """Whether this machine uses age: an identity file where syslua looks
    for one, or SYSLUA_AGE_IDENTITY set. Without either the check is left
    out, so a machine without secrets hears nothing of age."""
    from syslua import age

    return bool(os.environ.get(age.ENV_IDENTITY)) or os.path.lexists(age.identity_path())


def age_identity(paths: Paths, quick: bool) -> tuple[bool, str, str | None]:
    """The identity that decrypts `.age` sources is there, readable, private
    (0600 or 0400) and parses (`syslua/age.py`)."""
    from syslua import age

    detail, problems = age.check_identity(age.identity_path())
    if problems:
        return False, "; ".join(p for p, _ in problems), "; ".join(f for _, f in problems)
    return True, detail, None


# -- 9. managed links ---------------------------------------------------------------
def managed_links(paths: Paths, quick: bool) -> tuple[bool, str, str | None]:
    """Links the current snapshot manages that lead nowhere (a source deleted,
    renamed or `git rm`-ed; a loop), or that are no longer what was recorded
    (`sys status` says how every managed path drifted)."""
    from syslua.state.snapshots import Snapshots

    snap, _ = Snapshots(paths).usable_current()
    if snap is None:
        return True, "none yet (nothing applied)", None
    links = [
        (i.key, i.get("target"))
        for i in snap.load_manifest()
        if i.type == "file" and i.get("ensure") == "link"
    ]
    broken = [(p, found) for p, target in links if (found := _link_wrong(p, target)) is not None]
    if not broken:
        n = len(links)
        return True, f"{n} link{'' if n == 1 else 's'}, none dangling", None
    shown = "; ".join(f"{abbreviate(p)} is {detail}" for p, detail in broken)
    return (
        False,
        f"{len(broken)} of {len(links)} managed links are not as applied: {shown}",
        "restore what they point to, or drop them from the config and run sys apply "
        "(sys status lists every managed path that changed)",
    )


def _link_wrong(path: str, target: object) -> str | None:
    from syslua.resources.file import link_problem
    from syslua.resources.file_posix import points_to, same_entry

    broken = link_problem(path)
    if broken is not None:
        return broken[1]
    try:
        now = os.readlink(path)
    except FileNotFoundError:
        return "gone"
    except OSError:
        if isinstance(target, str) and same_entry(path, target):
            return None  # the source itself, seen through a fold its link tree keeps
        return "no longer a link"
    if isinstance(target, str) and not points_to(path, now, target):
        return f"a link to {now}, not to {target} as applied"
    return None


# -- 10. the current snapshot --------------------------------------------------------
def current_snapshot(paths: Paths, quick: bool) -> tuple[bool, str, str | None]:
    """The current snapshot's file is readable; a damaged one names the
    newest readable snapshot, which `--repair` makes current."""
    from syslua.state.snapshots import Snapshots

    snapshots = Snapshots(paths)
    damage = snapshots.damaged_current()
    if damage is None:
        ident = snapshots.current_id()
        return True, f"snapshot {ident} is readable" if ident else "none yet", None
    _, why = damage
    other = snapshots.latest_readable()
    if other is None:
        return (
            False,
            f"{why} No other snapshot is readable.",
            "the next sys apply converges every item",
        )
    return (
        False,
        f"{why} Snapshot {other.id} is the newest readable one.",
        f"sys doctor --repair makes snapshot {other.id} current (or sys apply --from-snapshot "
        f"{other.id} plans removals against it)",
    )


def repair_current(paths: Paths) -> list[str]:
    """Make the newest readable snapshot current when the current one's file
    is corrupt or missing; what was done, as lines to show (none: nothing to
    repair). The caller holds the state lock."""
    from syslua.state.snapshots import Snapshots

    snapshots = Snapshots(paths)
    damage = snapshots.damaged_current()
    if damage is None:
        return []
    ident, why = damage
    other = snapshots.latest_readable()
    if other is None:
        return [f"{why} No other snapshot is readable: nothing to make current."]
    snapshots.set_current(other.id, other)
    return [
        why,
        f"Made snapshot {other.id} current, the newest readable one (snapshot {ident} stays "
        f"in the history; `sys snapshot delete {ident}` removes it). The next sys apply plans "
        "against it: a path changed since it is an edit, which the apply refuses to "
        "overwrite or remove without --force.",
    ]


# Checks made only where they apply: name -> whether they do.
# Checks left out where they do not apply (`managers` after `config`, whose
# evaluation tells which managers the config runs).
ONLY_WHEN: dict[str, Callable[[], bool]] = {"age": age_in_use, "managers": managers_in_use}

CHECKS: list[tuple[str, str, Callable[[Paths, bool], tuple[bool, str, str | None]]]] = [
    ("lua", "Lua runtime", lua_runtime),
    ("permissions", "permissions", permissions),
    ("lock", "lock", lock),
    ("journals", "failed journals", failed_journals),
    ("store", "store", store),
    ("env", "env line", env_line),
    ("path", "PATH", on_path),
    ("config", "config", config),
    ("managers", "password managers", managers),
    ("age", "age identity", age_identity),
    ("links", "managed links", managed_links),
    ("snapshot", "current snapshot", current_snapshot),
]
