#!/usr/bin/env python3
"""Benchmarks: syslua against the floor and its peers on the reference workload.

usage: python bench/run.py [dotfiles|packages|all] [--runs N] [--sizes 1000,10000]
                           [--shared DIR]   (holds workload.py and floor.py; default ../shared/bench)

`dotfiles` times whole processes, side by side in one run, median of N runs:
  - `sys --help`
  - evaluation + merge alone (bench/evalmerge.py: import, evaluate, merge)
  - `sys plan` on a converged home
  - `sys apply` on a converged home (nothing to do)
  - the floor (../shared/bench/floor.py, no-change run), GNU stow and dotbot
    (each on its own converged home) when they are installed
and prints each time with its ratio to the floor.

`packages` installs 20 packages (1 MB archives) from a loopback HTTP server
with `--jobs 8`, cold (empty store and cache) and warm (everything present),
and compares the cold install with downloading and hashing the same bytes
in one Python process.

Nothing here talks to anything but 127.0.0.1. Bytecode caching is on
(PYTHONDONTWRITEBYTECODE is removed) so that startup is measured as users see it.
"""

from __future__ import annotations

import argparse
import hashlib
import http.server
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["NO_COLOR"] = "1"
    env.update(extra)
    return env


def _sys() -> list[str]:
    exe = shutil.which("sys", path=os.path.dirname(sys.executable)) or shutil.which("sys")
    return [exe] if exe else [sys.executable, "-m", "syslua"]


def timed(
    argv: list[str], env: dict[str, str], runs: int, cwd: Path | None = None
) -> tuple[float, float, int]:
    """Median and min wall time of `runs` runs of a whole process (after one
    warm-up), and its peak resident memory in KiB."""
    subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(
            argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        times.append(time.perf_counter() - start)
        if done.returncode not in (0, 4):
            raise SystemExit(
                f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.decode()[-500:]}"
            )
    return statistics.median(times), min(times), _peak_memory(argv, env, cwd)


def _peak_memory(argv: list[str], env: dict[str, str], cwd: Path | None) -> int:
    """Peak RSS in KiB of one more run, measured by /usr/bin/time (a small parent,
    so the figure is the command's own, not that of a fork of this script)."""
    if not os.path.exists("/usr/bin/time"):
        return 0
    with tempfile.NamedTemporaryFile("r") as out:
        subprocess.run(
            ["/usr/bin/time", "-f", "%M", "-o", out.name, *argv],
            env=env,
            cwd=cwd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        text = out.read().strip().splitlines()
    return int(text[-1]) if text and text[-1].isdigit() else 0


def _row(name: str, median: float, best: float, peak: int, floor: float | None) -> str:
    ratio = f"{median / floor:5.2f}x" if floor else "   - "
    return f"  {name:<38} {median * 1000:8.1f} ms  (min {best * 1000:7.1f})  {ratio}  {peak / 1024:6.1f} MiB"


def dotfiles(shared: Path, sizes: list[int], runs: int, out: Path) -> dict:
    results: dict = {}
    sysbin = _sys()
    for n in sizes:
        work = out / f"w{n}"
        if not (work / "sys.lua").exists():
            subprocess.run(
                [sys.executable, str(shared / "workload.py"), str(n), str(work)],
                check=True,
                stdout=subprocess.DEVNULL,
            )
        homes = {k: work / f"home-{k}" for k in ("sys", "floor", "stow", "dotbot")}
        for h in homes.values():
            h.mkdir(exist_ok=True)
        root = work / "syslua-root"
        env_sys = _env(HOME=str(homes["sys"]), SYSLUA_ROOT=str(root))
        subprocess.run([*sysbin, "apply", "-q", "sys.lua"], env=env_sys, cwd=work, check=True)
        env_floor = _env(HOME=str(homes["floor"]))
        subprocess.run(
            [sys.executable, str(shared / "floor.py"), str(work)],
            env=env_floor,
            check=True,
            stderr=subprocess.DEVNULL,
        )
        rows = {}
        floor = timed([sys.executable, str(shared / "floor.py"), str(work)], env_floor, runs)
        rows["floor (no change)"] = floor
        rows["sys --help"] = timed([*sysbin, "--help"], env_sys, runs, cwd=work)
        rows["evaluate + merge"] = timed(
            [sys.executable, str(HERE / "evalmerge.py"), "sys.lua"], env_sys, runs, cwd=work
        )
        rows["sys plan (converged)"] = timed([*sysbin, "plan", "sys.lua"], env_sys, runs, cwd=work)
        rows["sys apply (converged)"] = timed(
            [*sysbin, "apply", "sys.lua"], env_sys, runs, cwd=work
        )
        if shutil.which("stow"):
            stow = ["stow", "-d", str(work / "stow"), "-t", str(homes["stow"]), "-R", "pkg"]
            subprocess.run(stow, check=True, stderr=subprocess.DEVNULL)
            rows["GNU stow -R (converged)"] = timed(stow, _env(), runs)
        dotbot = shutil.which("dotbot", path=os.path.dirname(sys.executable)) or shutil.which(
            "dotbot"
        )
        if dotbot:
            cmd = [dotbot, "-Q", "-d", str(work), "-c", str(work / "dotbot.yaml")]
            env_dotbot = _env(HOME=str(homes["dotbot"]))
            subprocess.run(cmd, env=env_dotbot, check=True, stdout=subprocess.DEVNULL)
            rows["dotbot (converged)"] = timed(cmd, env_dotbot, runs)
        print(f"\n{n} dotfiles (median of {runs} runs, ratio to the floor, peak memory)")
        for name, (med, best, peak) in rows.items():
            print(_row(name, med, best, peak, floor[0]))
        results[n] = {
            k: {"median_s": v[0], "min_s": v[1], "ratio": v[0] / floor[0], "max_rss_kib": v[2]}
            for k, v in rows.items()
        }
    return results


# -- packages ------------------------------------------------------------------


class _Counting(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


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


def packages(runs: int, out: Path, count: int = 20, size: int = 1 << 20) -> dict:
    serve = out / "serve"
    serve.mkdir(parents=True, exist_ok=True)
    lines = []
    for i in range(count):
        name = f"tool{i:02d}"
        data = _archive(name, size)
        (serve / f"{name}.tar.gz").write_bytes(data)
        sha = hashlib.sha256(data).hexdigest()
        lines.append(
            f'package {{ name = "{name}", version = "1.0", strip_components = 1, bin = {{ "bin/{name}" }},\n'
            f'  source = lib.fetchUrl {{ url = URL .. "/{name}.tar.gz", sha256 = "{sha}" }} }}\n'
        )
    handler = lambda *a, **k: _Counting(*a, directory=str(serve), **k)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    config = out / "pkgs.lua"
    config.write_text(f'local URL = "{url}"\n' + "".join(lines))
    sysbin = _sys()
    colds, warms, baselines = [], [], []
    try:
        for _ in range(runs):
            root, home = Path(tempfile.mkdtemp(dir=out)), Path(tempfile.mkdtemp(dir=out))
            env = _env(HOME=str(home), SYSLUA_ROOT=str(root))
            start = time.perf_counter()
            subprocess.run(
                [*sysbin, "apply", "-q", "--jobs", "8", str(config)], env=env, check=True
            )
            colds.append(time.perf_counter() - start)
            start = time.perf_counter()
            subprocess.run(
                [*sysbin, "apply", "-q", "--jobs", "8", str(config)], env=env, check=True
            )
            warms.append(time.perf_counter() - start)
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", _BASELINE, url, str(count)], check=True)
            baselines.append(time.perf_counter() - start)
            shutil.rmtree(root, ignore_errors=True)
            shutil.rmtree(home, ignore_errors=True)
    finally:
        server.shutdown()
    cold, warm, base = (
        statistics.median(colds),
        statistics.median(warms),
        statistics.median(baselines),
    )
    print(f"\n{count} packages of {size >> 20} MB from 127.0.0.1, --jobs 8 (median of {runs} runs)")
    print(f"  {'download + SHA-256 in one process':<38} {base * 1000:8.1f} ms")
    print(
        f"  {'sys apply, cold':<38} {cold * 1000:8.1f} ms  {cold / base:5.2f}x the download baseline"
    )
    print(f"  {'sys apply, warm (all cached)':<38} {warm * 1000:8.1f} ms")
    return {"baseline_s": base, "cold_s": cold, "warm_s": warm, "cold_ratio": cold / base}


_BASELINE = """
import hashlib, sys, urllib.request
url, count = sys.argv[1], int(sys.argv[2])
for i in range(count):
    h = hashlib.sha256()
    with urllib.request.urlopen(f"{url}/tool{i:02d}.tar.gz") as r:
        while chunk := r.read(1 << 20):
            h.update(chunk)
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", nargs="?", default="all", choices=("dotfiles", "packages", "all"))
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--shared", default=str(REPO.parent / "shared" / "bench"))
    ap.add_argument("--out", default=str(HERE / "out"))
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results: dict = {"python": sys.version.split()[0], "cpus": os.cpu_count()}
    if args.what in ("dotfiles", "all"):
        shared = Path(args.shared)
        if not (shared / "workload.py").exists():
            raise SystemExit(f"no workload.py in {shared}: pass --shared DIR")
        results["dotfiles"] = dotfiles(
            shared, [int(s) for s in args.sizes.split(",")], args.runs, out
        )
    if args.what in ("packages", "all"):
        results["packages"] = packages(max(3, args.runs // 2), out)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
