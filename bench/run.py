#!/usr/bin/env python3
"""Benchmarks: syslua against the floor and its peers, in one run.

usage: python bench/run.py [SECTION ...] [--runs N] [--sizes 1000,10000]
                           [--scale 100,1000,10000] [--with-30k] [--json FILE]
                           [--shared DIR] [--out DIR]

SECTION is any of startup, dotfiles, takeover, update, tree, scaling, jobs,
packages (default: all of them, in that order).

Every figure is the wall time of a whole process. The commands compared in
one table are timed in rounds: each round runs every command once, starting
with a different one each round, so that noise on this machine hits them
alike; a table gives the median (and the minimum) of the rounds and the
ratio to its reference, both taken within this run. Each command first
runs once untimed (page cache, bytecode) under `/usr/bin/time -f %M`, which
gives its peak memory. Before each run the untimed setup of that row runs
(an empty home, a new state...), then `sync`, so that no command pays for
writing back what another one left dirty.

- startup: `sys plan` on an empty config and `sys --help`, against
  `python -c "import typer, lupa"` (at least 30 rounds: they are short).
- dotfiles: the reference workload (../shared/bench/workload.py) at each
  of --sizes: a clean apply (empty home, new state) and a no-change apply
  for the floor (../shared/bench/floor.py: on an empty home it writes every
  file, so its first run is its clean apply), GNU stow (`--no-folding`, so
  that it links every file as the others write every file), dotbot and
  `sys apply`; with `sys plan` and evaluation + merge alone
  (bench/evalmerge.py) on the converged home. A peer that is not installed
  is skipped, and the table says so.
- takeover: 1,000 files over a home already holding a different hand-made
  file at every path: `sys apply` takes them over, keeping each original.
- update: every one of 1,000 sources changed, `sys apply`, then `sys rollback`.
- tree: 10,000 files declared in one line,
  `file { path = "~/.config", source = "src/.config" }`; skipped when
  `sys plan` of it fails (a build without directory trees).
- scaling: clean apply at --scale sizes (plus 30,000 with --with-30k); a
  size the dotfiles section timed is taken from there.
- jobs: 32 execs of `sleep 0.5` with `--jobs 16`.
- packages: 20 packages (1 MB archives) from a loopback HTTP server with
  `--jobs 8`, cold (empty store and cache) and warm, against downloading
  and hashing the same bytes in one Python process.

Nothing here talks to anything but 127.0.0.1. Bytecode caching is on
(PYTHONDONTWRITEBYTECODE is removed) so that startup is measured as users
see it. The issue's targets are checked at the end: met or missed.
"""

from __future__ import annotations

import argparse
import hashlib
import http.server
import io
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SECTIONS = ("startup", "dotfiles", "takeover", "update", "tree", "scaling", "jobs", "packages")
TREE_LINE = (
    "local ME, GRP = sys.user.name, sys.user.group\n"
    'defaults { file = { owner = ME, group = GRP, mode = "0644" } }\n'
    'file { path = "~/.config", source = "src/.config" }\n'
)
PEERS = {
    "stow": "GNU stow (apt-get install stow)",
    "dotbot": "dotbot (pip install dotbot)",
}


def _shared_bench() -> Path:
    """`shared/bench` beside the checkout or beside one of its parents (a worktree)."""
    for parent in REPO.parents:
        if (parent / "shared" / "bench" / "workload.py").exists():
            return parent / "shared" / "bench"
    return REPO.parent / "shared" / "bench"


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["NO_COLOR"] = "1"
    env.update(extra)
    return env


def _sys() -> list[str]:
    exe = shutil.which("sys", path=os.path.dirname(sys.executable)) or shutil.which("sys")
    return [exe] if exe else [sys.executable, "-m", "syslua"]


def _dotbot() -> str | None:
    return shutil.which("dotbot", path=os.path.dirname(sys.executable)) or shutil.which("dotbot")


def _fresh(*dirs: Path) -> Callable[[], None]:
    """A setup step: each directory removed and made again, empty."""

    def setup() -> None:
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)
            d.mkdir(parents=True)

    return setup


def _copy(template: Path, home: Path, *fresh: Path) -> Callable[[], None]:
    """A setup step: `home` becomes a copy of `template`; `fresh` dirs are emptied."""

    def setup() -> None:
        shutil.rmtree(home, ignore_errors=True)
        shutil.copytree(template, home, symlinks=True)
        _fresh(*fresh)()

    return setup


# -- timing --------------------------------------------------------------------


@dataclass
class Case:
    """One command to time, with the untimed setup it needs before every run."""

    name: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=_env)
    cwd: Path | None = None
    setup: Callable[[], None] | None = None

    def command(self, out: Path) -> str:
        """The command as a shell line, paths under the output directory as $OUT."""
        shown = [
            f"{k}={v}" for k, v in self.env.items() if k != "NO_COLOR" and os.environ.get(k) != v
        ]
        line = shlex.join(shown + self.argv)
        if self.cwd is not None:
            line = f"cd {shlex.quote(str(self.cwd))} && {line}"
        return line.replace(str(out.resolve()), "$OUT")


@dataclass
class Timing:
    name: str
    command: str
    times: list[float] = field(default_factory=list)
    peak_kib: int = 0  # from the untimed first run

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def best(self) -> float:
        return min(self.times)

    @property
    def peak_mib(self) -> float:
        return self.peak_kib / 1024

    def to_dict(self) -> dict:
        return {
            "command": self.command,
            "median_s": self.median,
            "min_s": self.best,
            "times_s": self.times,
            "max_rss_kib": self.peak_kib,
        }


class BenchError(SystemExit):
    pass


TIME = "/usr/bin/time"  # GNU time: its %M is the peak RSS of the command alone


def run_once(case: Case, *, memory: bool = False) -> tuple[float, int]:
    """Wall time of one run of `case`, after its setup and a sync; with `memory`,
    also the command's peak RSS in KiB, measured by GNU time (a small parent: a
    process forked from this script would count this script's own pages)."""
    if case.setup is not None:
        case.setup()
    os.sync()
    with tempfile.TemporaryFile() as err, tempfile.NamedTemporaryFile("r") as rss:
        argv = [TIME, "-f", "%M", "-o", rss.name, *case.argv] if memory else case.argv
        start = time.perf_counter()
        done = subprocess.run(
            argv, env=case.env, cwd=case.cwd, stdout=subprocess.DEVNULL, stderr=err
        )
        elapsed = time.perf_counter() - start
        if done.returncode != 0:
            err.seek(0)
            tail = err.read().decode(errors="replace")[-1500:]
            raise BenchError(
                f"{case.name}: {shlex.join(case.argv)} exited {done.returncode}:\n{tail}"
            )
        lines = rss.read().split()
    return elapsed, int(lines[-1]) if memory and lines and lines[-1].isdigit() else 0


def measure(units: list[list[Case]], runs: int, out: Path) -> dict[str, Timing]:
    """Time every case `runs` times, interleaved. A unit is a list of cases run back
    to back (an update, then its rollback); round r starts with unit r mod n. Each
    unit first runs once untimed (page cache, bytecode), under GNU time for the
    peak memory, so that the timed runs carry no wrapper."""
    timings = {c.name: Timing(c.name, c.command(out)) for unit in units for c in unit}
    memory = os.access(TIME, os.X_OK)
    for unit in units:
        for case in unit:
            timings[case.name].peak_kib = run_once(case, memory=memory)[1]
    for r in range(runs):
        k = r % len(units)
        for unit in units[k:] + units[:k]:
            for case in unit:
                timings[case.name].times.append(run_once(case)[0])
    return timings


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms" if seconds < 10 else f"{seconds:,.1f} s"


def show(title: str, timings: dict[str, Timing], ref: str | None, runs: int) -> None:
    """Print a table: median, min, ratio to `ref`, peak memory; then the commands."""
    print(f"\n## {title}")
    print(f"median of {runs} interleaved runs" + (f"; ratio to `{ref}`" if ref else ""))
    print(f"\n| | median | min | {'ratio | ' if ref else ''}peak memory |")
    print(f"|---|---:|---:|{'---:|' if ref else ''}---:|")
    base = timings[ref].median if ref else None
    for t in timings.values():
        ratio = f" {t.median / base:.2f}x |" if base else ""
        print(f"| {t.name} | {_ms(t.median)} | {_ms(t.best)} |{ratio} {t.peak_mib:.1f} MiB |")
    print()
    for t in timings.values():
        print(f"    {t.name}: {t.command}")


def skipped(title: str, why: str) -> None:
    print(f"\n## {title}\nskipped: {why}")


# -- workloads -------------------------------------------------------------------


def workload(shared: Path, n: int, work: Path) -> Path:
    if not (work / "sys.lua").exists():
        subprocess.run(
            [sys.executable, str(shared / "workload.py"), str(n), str(work)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    return work


Setup = Callable[[], None] | None


def floor_case(name: str, shared: Path, work: Path, home: Path, setup: Setup = None) -> Case:
    argv = [sys.executable, str(shared / "floor.py"), str(work)]
    return Case(name, argv, _env(HOME=str(home)), setup=setup)


def sys_case(
    name: str, work: Path, home: Path, root: Path, *args: str, setup: Setup = None
) -> Case:
    env = _env(HOME=str(home), SYSLUA_ROOT=str(root))
    return Case(name, [*_sys(), *args], env, cwd=work, setup=setup)


def stow_case(name: str, work: Path, home: Path, setup: Setup = None) -> Case:
    argv = ["stow", "--no-folding", "-d", str(work / "stow"), "-t", str(home), "-S", "pkg"]
    return Case(name, argv, _env(), setup=setup)


def dotbot_case(name: str, work: Path, home: Path, setup: Setup = None) -> Case:
    argv = [_dotbot() or "dotbot", "-Q", "-d", str(work), "-c", str(work / "dotbot.yaml")]
    return Case(name, argv, _env(HOME=str(home)), setup=setup)


def peers() -> dict[str, bool]:
    return {"stow": shutil.which("stow") is not None, "dotbot": _dotbot() is not None}


# -- sections ----------------------------------------------------------------------


STARTUP_ROUNDS = 30


def startup(runs: int, out: Path) -> dict:
    empty = out / "empty"
    (empty / "home").mkdir(parents=True, exist_ok=True)
    (empty / "sys.lua").write_text("")
    root = empty / "root"
    cases = [
        Case("python -c 'import typer, lupa'", [sys.executable, "-c", "import typer, lupa"]),
        sys_case("sys plan (empty config)", empty, empty / "home", root, "plan", "sys.lua"),
        sys_case("sys --help", empty, empty / "home", root, "--help"),
    ]
    # A tenth of a second each: more rounds cost little and steady the medians.
    rounds = max(runs, STARTUP_ROUNDS)
    timings = measure([[c] for c in cases], rounds, out)
    show("Startup", timings, cases[0].name, rounds)
    return {k: v.to_dict() for k, v in timings.items()}


def dotfiles(shared: Path, sizes: list[int], runs: int, out: Path) -> dict:
    have = peers()
    results: dict = {}
    for n in sizes:
        work = workload(shared, n, out / f"w{n}")
        roots, home = work / "root", work / "home"
        # clean apply: every tool on an empty home of its own (and sys on a new state)
        clean = [
            floor_case("floor", shared, work, home / "floor-clean", _fresh(home / "floor-clean")),
        ]
        if have["stow"]:
            clean.append(
                stow_case("GNU stow", work, home / "stow-clean", _fresh(home / "stow-clean"))
            )
        if have["dotbot"]:
            clean.append(
                dotbot_case("dotbot", work, home / "dotbot-clean", _fresh(home / "dotbot-clean"))
            )
        clean.append(
            sys_case(
                "sys apply",
                work,
                home / "sys-clean",
                roots / "clean",
                "apply",
                "sys.lua",
                setup=_fresh(home / "sys-clean", roots / "clean"),
            )
        )
        t_clean = measure([[c] for c in clean], runs, out)
        show(f"{n:,} files, clean apply (empty home, new state)", t_clean, "floor", runs)
        # no change: each tool again on its own converged home (the warm-up run converges it)
        for d in ("floor", "stow", "dotbot", "sys"):
            (home / d).mkdir(parents=True, exist_ok=True)
        same = [floor_case("floor", shared, work, home / "floor")]
        if have["stow"]:
            same.append(stow_case("GNU stow", work, home / "stow"))
        if have["dotbot"]:
            same.append(dotbot_case("dotbot", work, home / "dotbot"))
        sys_home, sys_root = home / "sys", roots / "converged"
        converged = sys_case("sys apply", work, sys_home, sys_root, "apply", "sys.lua")
        same += [
            converged,
            sys_case("sys plan", work, sys_home, sys_root, "plan", "sys.lua"),
            Case(
                "evaluate + merge",
                [sys.executable, str(HERE / "evalmerge.py"), "sys.lua"],
                _env(HOME=str(sys_home), SYSLUA_ROOT=str(sys_root)),
                cwd=work,
            ),
        ]
        _converge(converged, work, "sys.lua")
        t_same = measure([[c] for c in same], runs, out)
        show(f"{n:,} files, no change (converged home)", t_same, "floor", runs)
        for peer, present in have.items():
            if not present:
                print(f"    {PEERS[peer]}: skipped, not installed")
        results[n] = {
            "clean": {k: v.to_dict() for k, v in t_clean.items()},
            "no_change": {k: v.to_dict() for k, v in t_same.items()},
        }
    return results


def _handmade(work: Path, target: Path) -> Path:
    """A home holding a different, hand-made file at every path of the workload."""
    if not target.exists():
        rels = json.loads((work / "files.json").read_text())
        for rel in rels:
            p = target / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(f"# my own {rel}, written by hand\nset -o vi\n")
    return target


def takeover(shared: Path, runs: int, out: Path, n: int = 1000) -> dict:
    work = workload(shared, n, out / f"w{n}")
    handmade = _handmade(work, out / f"handmade{n}")
    home, root = work / "home" / "sys-takeover", work / "root" / "takeover"
    cases = [
        floor_case(
            "floor, clean apply",
            shared,
            work,
            work / "home" / "floor-clean",
            _fresh(work / "home" / "floor-clean"),
        ),
        floor_case(
            "floor over the hand-made files",
            shared,
            work,
            work / "home" / "floor-takeover",
            _copy(handmade, work / "home" / "floor-takeover"),
        ),
        sys_case(
            "sys apply, take-over",
            work,
            home,
            root,
            "apply",
            "sys.lua",
            setup=_copy(handmade, home, root),
        ),
    ]
    timings = measure([[c] for c in cases], runs, out)
    show(
        f"{n:,} files, take-over of hand-made files (originals kept)", timings, cases[0].name, runs
    )
    return {k: v.to_dict() for k, v in timings.items()}


def update(shared: Path, runs: int, out: Path, n: int = 1000) -> dict:
    """`sys apply` after every source changed, then `sys rollback`: each round
    updates (the home holds the old content: the rollback put it back) and rolls back."""
    work = out / f"update{n}"
    if not (work / "srcB").exists() and not (work / "srcA").exists():
        shutil.rmtree(work, ignore_errors=True)
        workload(shared, n, work)
        shutil.copytree(work / "src", work / "srcB")
        for rel in json.loads((work / "files.json").read_text()):
            with open(work / "srcB" / rel, "a") as f:
                f.write("# changed upstream\n")
    home, root, floor_old = work / "home-sys", work / "root", work / "home-floor-old"
    if (work / "srcB").exists():  # first run here: converge on the old sources, then switch
        _fresh(home, root, floor_old)()
        env = _env(HOME=str(home), SYSLUA_ROOT=str(root))
        subprocess.run([*_sys(), "apply", "-q", "sys.lua"], env=env, cwd=work, check=True)
        subprocess.run(
            [sys.executable, str(shared / "floor.py"), str(work)],
            env=_env(HOME=str(floor_old)),
            check=True,
            stderr=subprocess.DEVNULL,
        )
        (work / "src").rename(work / "srcA")
        (work / "srcB").rename(work / "src")
    floor_home = work / "home-floor"
    units = [
        [floor_case("floor, clean apply", shared, work, floor_home, _fresh(floor_home))],
        [floor_case("floor, update", shared, work, floor_home, _copy(floor_old, floor_home))],
        [
            sys_case("sys apply, update", work, home, root, "apply", "sys.lua"),
            sys_case("sys rollback", work, home, root, "rollback"),
        ],
    ]
    timings = measure(units, runs, out)
    show(f"{n:,} files, every source changed: update and rollback", timings, units[0][0].name, runs)
    return {k: v.to_dict() for k, v in timings.items()}


def tree(shared: Path, runs: int, out: Path, n: int = 10000) -> dict | None:
    work = workload(shared, n, out / f"w{n}")
    (work / "tree.lua").write_text(TREE_LINE)
    home, root = work / "home" / "sys-tree", work / "root" / "tree"
    _fresh(home, root)()
    probe = subprocess.run(
        [*_sys(), "plan", "tree.lua"],
        env=_env(HOME=str(home), SYSLUA_ROOT=str(root)),
        cwd=work,
        capture_output=True,
        text=True,
    )
    title = f"{n:,} files in one directory tree, declared in one line"
    if probe.returncode != 0:
        lines = probe.stderr.strip().splitlines() or ["?"]
        reason = next((ln for ln in lines if ln.startswith("Error")), lines[-1])
        skipped(title, f"directory trees not supported by this build ({reason})")
        return None
    floor_home = work / "home" / "floor-clean"
    cases = [
        floor_case("floor, clean apply", shared, work, floor_home, _fresh(floor_home)),
        sys_case(
            "sys apply tree.lua, clean",
            work,
            home,
            root,
            "apply",
            "tree.lua",
            setup=_fresh(home, root),
        ),
    ]
    t_clean = measure([[c] for c in cases], runs, out)
    show(f"{title}: clean apply", t_clean, cases[0].name, runs)
    conv_home, conv_root = work / "home" / "sys-tree-converged", work / "root" / "tree-converged"
    _fresh(conv_home, conv_root)()
    converged = sys_case(
        "sys apply tree.lua, no change", work, conv_home, conv_root, "apply", "tree.lua"
    )
    same = [floor_case("floor, no change", shared, work, work / "home" / "floor"), converged]
    (work / "home" / "floor").mkdir(parents=True, exist_ok=True)
    # Converged first: the warm-up run, which gives the peak memory, is then a no-change run.
    _converge(converged, work, "tree.lua")
    t_same = measure([[c] for c in same], runs, out)
    show(f"{title}: no change", t_same, same[0].name, runs)
    return {
        "clean": {k: v.to_dict() for k, v in t_clean.items()},
        "no_change": {k: v.to_dict() for k, v in t_same.items()},
    }


def _converge(case: Case, work: Path, config: str) -> None:
    """Converge `case`'s home, then, as on a real machine where the next run
    comes later than the racy margin (2 s), apply again once its files are
    older than that: the no-change apply that writes the no-change proof
    (`syslua/state/proof.py`). Right after the apply that wrote them, a run
    cannot trust their timestamps and plans in full."""
    subprocess.run([*_sys(), "apply", "-q", config], env=case.env, cwd=work, check=True)
    time.sleep(2.1)
    subprocess.run([*_sys(), "apply", "-q", config], env=case.env, cwd=work, check=True)


def scaling(shared: Path, sizes: list[int], runs: int, out: Path, known: dict) -> dict:
    """Clean apply of sys and the floor at each size; sizes the dotfiles section
    timed are taken from there."""
    units, rows = [], {}
    for n in sizes:
        if n in known:
            rows[n] = {k: known[n]["clean"][k] for k in ("floor", "sys apply")}
            continue
        work = workload(shared, n, out / f"w{n}")
        fh, sh, sr = (
            work / "home" / "floor-clean",
            work / "home" / "sys-clean",
            work / "root" / "clean",
        )
        units += [
            [floor_case(f"floor, {n:,} files", shared, work, fh, _fresh(fh))],
            [
                sys_case(
                    f"sys apply, {n:,} files",
                    work,
                    sh,
                    sr,
                    "apply",
                    "sys.lua",
                    setup=_fresh(sh, sr),
                )
            ],
        ]
    timings = measure(units, runs, out) if units else {}
    for n in sizes:
        if n not in rows:
            rows[n] = {
                "floor": timings[f"floor, {n:,} files"].to_dict(),
                "sys apply": timings[f"sys apply, {n:,} files"].to_dict(),
            }
    print("\n## Scaling: clean apply (empty home, new state)")
    print(f"median of {runs} interleaved runs; sizes also in the dotfiles section come from there")
    print("\n| files | floor | sys apply | sys / floor | sys, time per file | peak memory (sys) |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n in sizes:
        f, s = rows[n]["floor"], rows[n]["sys apply"]
        print(
            f"| {n:,} | {_ms(f['median_s'])} | {_ms(s['median_s'])} | "
            f"{s['median_s'] / f['median_s']:.2f}x | {s['median_s'] / n * 1e6:,.0f} us | "
            f"{s['max_rss_kib'] / 1024:.1f} MiB |"
        )
    print()
    for name, t in timings.items():
        print(f"    {name}: {t.command}")
    return {str(n): rows[n] for n in sizes}


def jobs(runs: int, out: Path, count: int = 32, workers: int = 16) -> dict:
    work = out / "jobs"
    work.mkdir(parents=True, exist_ok=True)
    (work / "sleep.lua").write_text(
        "".join(f'exec {{ name = "sleep-{i:02d}", command = "sleep 0.5" }}\n' for i in range(count))
    )
    (work / "home").mkdir(exist_ok=True)
    case = sys_case(
        f"sys apply --jobs {workers}, {count} x sleep 0.5",
        work,
        work / "home",
        work / "root",
        "apply",
        "--jobs",
        str(workers),
        "sleep.lua",
    )
    timings = measure([[case]], runs, out)
    show(
        f"{count} execs of `sleep 0.5`, --jobs {workers} (ideal: {count // workers * 0.5:.1f} s)",
        timings,
        None,
        runs,
    )
    return {k: v.to_dict() for k, v in timings.items()}


# -- packages ------------------------------------------------------------------


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


class _Server(http.server.ThreadingHTTPServer):
    # socketserver listens with a backlog of 5: eight clients connecting at
    # once overflow it, and the kernel drops the handshake of the others,
    # which the client repeats only after its 1 s retransmission timeout.
    # The run would time that timer, not the downloads.
    request_queue_size = 128


def _archive(name: str, size: int) -> bytes:
    buf = io.BytesIO()
    payload = os.urandom(size)
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as tar:
        script = f"#!/bin/sh\necho {name}\n".encode()
        for member, data, mode in (
            (f"{name}/bin/{name}", script, 0o755),
            (f"{name}/share/{name}.dat", payload, 0o644),
        ):
            info = tarfile.TarInfo(member)
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


_BASELINE = """
import hashlib, sys, urllib.request
url, count = sys.argv[1], int(sys.argv[2])
for i in range(count):
    h = hashlib.sha256()
    with urllib.request.urlopen(f"{url}/tool{i:02d}.tar.gz") as r:
        while chunk := r.read(1 << 20):
            h.update(chunk)
"""


def packages(runs: int, out: Path, count: int = 20, size: int = 1 << 20) -> dict:
    work = out / "packages"
    serve = work / "serve"
    serve.mkdir(parents=True, exist_ok=True)
    lines = []
    for i in range(count):
        name = f"tool{i:02d}"
        archive = serve / f"{name}.tar.gz"
        if not archive.exists():
            archive.write_bytes(_archive(name, size))
        sha = hashlib.sha256(archive.read_bytes()).hexdigest()
        lines.append(
            f'package {{ name = "{name}", version = "1.0", strip_components = 1, bin = {{ "bin/{name}" }},\n'
            f'  source = lib.fetchUrl {{ url = URL .. "/{name}.tar.gz", sha256 = "{sha}" }} }}\n'
        )
    handler = lambda *a, **k: _Quiet(*a, directory=str(serve), **k)  # noqa: E731
    server = _Server(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    (work / "pkgs.lua").write_text(f'local URL = "{url}"\n' + "".join(lines))
    home, root = work / "home", work / "root"
    units = [
        [
            Case(
                "download + SHA-256 in one process",
                [sys.executable, "-c", _BASELINE, url, str(count)],
            )
        ],
        [
            sys_case(
                "sys apply --jobs 8, cold",
                work,
                home,
                root,
                "apply",
                "-q",
                "--jobs",
                "8",
                "pkgs.lua",
                setup=_fresh(home, root),
            ),
            sys_case(
                "sys apply --jobs 8, warm",
                work,
                home,
                root,
                "apply",
                "-q",
                "--jobs",
                "8",
                "pkgs.lua",
            ),
        ],
    ]
    try:
        timings = measure(units, runs, out)
    finally:
        server.shutdown()
    show(
        f"{count} packages of {size >> 20} MB from 127.0.0.1, --jobs 8",
        timings,
        units[0][0].name,
        runs,
    )
    return {k: v.to_dict() for k, v in timings.items()}


# -- the table and targets ------------------------------------------------


def summary(results: dict) -> None:
    """The issue's table (clean and no-change apply per tool), and each target: met or missed."""
    dot = results.get("dotfiles", {})
    if dot:
        print("\n## Summary: medians; ratio to the floor in the same table")
        print("\n| workload | floor | GNU stow | dotbot | sys | sys / floor |")
        print("|---|---:|---:|---:|---:|---:|")
        for n, by_kind in dot.items():
            for kind, label in (("clean", "clean apply"), ("no_change", "no change")):
                row = by_kind[kind]
                cells = [
                    _ms(row[k]["median_s"]) if k in row else "-"
                    for k in ("floor", "GNU stow", "dotbot", "sys apply")
                ]
                ratio = row["sys apply"]["median_s"] / row["floor"]["median_s"]
                print(f"| {int(n):,} files, {label} | {' | '.join(cells)} | {ratio:.1f}x |")
    checks: list[tuple[str, str, bool]] = []

    def check(figure: str, value: str, ok: bool) -> None:
        checks.append((figure, value, ok))

    for n, by_kind in dot.items():  # issue 27's targets
        _dotfile_targets(check, int(n), by_kind["clean"], by_kind["no_change"])
    if "tree" in results and "clean" in results["tree"]:
        t = results["tree"]
        r = t["clean"]["sys apply tree.lua, clean"]["median_s"]
        r /= t["clean"]["floor, clean apply"]["median_s"]
        check(
            "the one-line 10,000-file tree, clean apply: <= 2.5x the floor", f"{r:.2f}x", r <= 2.5
        )
        r = t["no_change"]["sys apply tree.lua, no change"]["median_s"]
        r /= t["no_change"]["floor, no change"]["median_s"]
        check("the one-line 10,000-file tree, no change: <= 1.0x the floor", f"{r:.2f}x", r <= 1.0)
    scale = results.get("scaling", {})
    if "1000" in scale and "10000" in scale:
        r = scale["10000"]["sys apply"]["median_s"] / scale["1000"]["sys apply"]["median_s"]
        check("clean apply scaling: 10,000 files <= 12x 1,000 files", f"{r:.1f}x", r <= 12)
    if "takeover" in results:
        t = results["takeover"]
        r = t["sys apply, take-over"]["median_s"] / t["floor, clean apply"]["median_s"]
        check("take-over of 1,000 files: <= 3.0x the floor's clean apply", f"{r:.2f}x", r <= 3.0)
    if "update" in results:
        u = results["update"]
        r = u["sys rollback"]["median_s"] / u["floor, clean apply"]["median_s"]
        check(
            "rollback of a 1,000-file update: <= 2.5x the floor's clean apply",
            f"{r:.2f}x",
            r <= 2.5,
        )
    if "packages" in results:
        p = results["packages"]
        r = (
            p["sys apply --jobs 8, cold"]["median_s"]
            / p["download + SHA-256 in one process"]["median_s"]
        )
        check("cold install of 20 x 1 MB packages: <= 2.0x download + hash", f"{r:.2f}x", r <= 2.0)
    if "jobs" in results:
        (j,) = results["jobs"].values()
        check(
            "32 x sleep 0.5, --jobs 16: <= 1.25 s", f"{j['median_s']:.2f} s", j["median_s"] <= 1.25
        )
    if "startup" in results:
        st = results["startup"]
        r = (
            st["sys plan (empty config)"]["median_s"]
            / st["python -c 'import typer, lupa'"]["median_s"]
        )
        check(
            "sys plan, empty config: <= 1.4x python -c 'import typer, lupa'", f"{r:.2f}x", r <= 1.4
        )
    if checks:
        print("\n## Targets\n\n| figure | this run | |\n|---|---|---|")
        for figure, value, ok in checks:
            print(f"| {figure} | {value} | {'met' if ok else 'MISSED'} |")
    results["targets"] = [{"figure": f, "value": v, "met": ok} for f, v, ok in checks]


def _dotfile_targets(
    check: Callable[[str, str, bool], None], n: int, clean: dict, same: dict
) -> None:
    """Issue 27's targets for the reference workload of `n` files."""
    r = clean["sys apply"]["median_s"] / clean["floor"]["median_s"]
    dotbot = clean.get("dotbot")
    faster = dotbot is not None and clean["sys apply"]["median_s"] < dotbot["median_s"]
    vs = f"dotbot {_ms(dotbot['median_s'])}" if dotbot else "dotbot not installed"
    check(
        f"clean apply, {n:,} files: <= 2.5x the floor, faster than dotbot",
        f"{r:.2f}x; sys {_ms(clean['sys apply']['median_s'])} ({vs})",
        r <= 2.5 and faster,
    )
    r = same["sys apply"]["median_s"] / same["floor"]["median_s"]
    peers_ = [k for k in ("GNU stow", "dotbot") if k in same]
    vs = ", ".join(f"{k} {_ms(same[k]['median_s'])}" for k in peers_) or "no peer installed"
    if n == 10000:
        check(f"no-change apply, {n:,} files: <= 1.0x the floor", f"{r:.2f}x", r <= 1.0)
        mib = clean["sys apply"]["max_rss_kib"] / 1024
        check("peak memory, 10,000-file clean apply: <= 60 MiB", f"{mib:.1f} MiB", mib <= 60)
        return
    faster = all(same["sys apply"]["median_s"] < same[k]["median_s"] for k in peers_)
    check(
        f"no-change apply, {n:,} files: <= 2.0x the floor, faster than stow and dotbot",
        f"{r:.2f}x; sys {_ms(same['sys apply']['median_s'])} ({vs})",
        r <= 2.0 and faster and len(peers_) == 2,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sections", nargs="*", metavar="SECTION", help=", ".join(SECTIONS) + " or all")
    ap.add_argument("--runs", type=int, default=5, help="rounds per table (default 5)")
    ap.add_argument("--sizes", default="1000,10000", help="dotfiles sizes (default 1000,10000)")
    ap.add_argument(
        "--scale", default="100,1000,10000", help="scaling sizes (default 100,1000,10000)"
    )
    ap.add_argument("--with-30k", action="store_true", help="add 30,000 files to the scaling row")
    ap.add_argument(
        "--shared",
        default=str(_shared_bench()),
        help="holds workload.py and floor.py (default: shared/bench beside the checkout)",
    )
    ap.add_argument("--out", default=str(HERE / "out"))
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args()
    chosen = [s for s in args.sections if s != "all"] or list(SECTIONS)
    for s in chosen:
        if s not in SECTIONS:
            ap.error(f"unknown section {s!r} (choose from {', '.join(SECTIONS)})")
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    shared = Path(args.shared)
    if not (shared / "workload.py").exists():
        raise SystemExit(f"no workload.py in {shared}: pass --shared DIR")
    sizes = [int(s) for s in args.sizes.split(",")]
    scale = [int(s) for s in args.scale.split(",")] + ([30000] if args.with_30k else [])
    started = time.perf_counter()
    print(f"# syslua benchmarks\n\n    $ {shlex.join([sys.executable, *sys.argv])}")
    print(f"    OUT={out}; sys = {shlex.join(_sys())}")
    print(
        f"    Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.2f} at the start"
    )
    results: dict = {"python": sys.version.split()[0], "cpus": os.cpu_count(), "runs": args.runs}
    for section in chosen:
        if section == "startup":
            results["startup"] = startup(args.runs, out)
        elif section == "dotfiles":
            results["dotfiles"] = dotfiles(shared, sizes, args.runs, out)
        elif section == "takeover":
            results["takeover"] = takeover(shared, args.runs, out)
        elif section == "update":
            results["update"] = update(shared, args.runs, out)
        elif section == "tree":
            tree_results = tree(shared, args.runs, out)
            if tree_results is not None:
                results["tree"] = tree_results
        elif section == "scaling":
            known = {int(n): v for n, v in results.get("dotfiles", {}).items()}
            results["scaling"] = scaling(shared, scale, args.runs, out, known)
        elif section == "jobs":
            results["jobs"] = jobs(args.runs, out)
        elif section == "packages":
            results["packages"] = packages(args.runs, out)
    summary(results)
    elapsed = time.perf_counter() - started
    results["elapsed_s"] = elapsed
    print(
        f"\n(whole run: {elapsed / 60:.1f} min, load average {os.getloadavg()[0]:.2f} at the end)"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
