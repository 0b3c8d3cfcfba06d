"""Make the state-v1 fixture: state written by syslua as of commit bb82dbe.

The engine's saved records (journal, originals, unrestored, snapshots, the
store's packs and loose blobs) are about to become typed records with one
codec each, and every file today's version writes must still load. This
script drives the real `sys` command line of the checkout it lives in
(`python -m syslua`) through scenes that leave every kind of record today's
code writes, and copies what they leave into this directory:

- `main`: a history of applies of files (inline, copied, small and over
  64 KiB, so packed and loose blobs), a tree, links, a taken-over file, a
  hand-made directory removed whole, execs with and without `undo`, env
  variables, an archive and a package from file:// URLs, a build and a
  bind; an `edits` snapshot kept by `apply --force`, an `add` snapshot,
  rollbacks, a destroy and tags. Converged: the home matches the current
  snapshot.
- `crash-before`, `crash-after`, `crash-batch`: an apply killed (SIGKILL,
  `SYSLUA_CRASH_AT`) before its commit record, after it, and once its first
  batch of path records was written; the journal and the home as it left
  them. The killed apply runs an exec with `undo`, creates a bind, links a
  package into the profile and unpacks an archive.
- `unrestored`: an apply whose undo could not put a path back:
  `unrestored.json`, a journal in `failed-journals/`, no current snapshot.

Each scene is `<scene>/{home,root,work}`, made under `MARK/<scene>`: paths
inside state files are absolute, and tests/test_state_formats.py copies a
scene into a temp dir, writing its own directory for MARK in the JSON and
JSONL files of `root/state` and in symlink targets. Contents are never
rewritten (store objects are named by their hash). Git keeps neither modes,
symlinks nor empty directories: `layout.json` lists every entry with its
kind and mode (and a link's target). `expect.json` holds what the scenes
saw when they ran: snapshot ids by step, the home's tree (kind, mode,
SHA-256 of a file's bytes, a link's target) and where `state/profile`
pointed at each step, and the user who ran them: files are declared as
theirs, and a test run by another user writes its own name and ids for
theirs too.

Made on commit bb82dbe, as root, with:

    git archive bb82dbe | tar -x -C /tmp/syslua-bb82dbe
    cp tests/data/state-v1/make.py /tmp/syslua-bb82dbe/tests/data/state-v1/
    .venv/bin/python /tmp/syslua-bb82dbe/tests/data/state-v1/make.py tests/data/state-v1

(the first argument is where the fixture goes: this directory by default;
KEEP_SCENES=1 leaves the scenes under MARK to look at). Running it again
makes new snapshot ids and times; the tests read them from `expect.json`.
"""

from __future__ import annotations

import grp
import hashlib
import io
import json
import os
import pwd
import re
import shutil
import signal
import stat
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

CHECKOUT = Path(__file__).resolve().parents[3]  # the syslua whose formats are captured
MARK = "/tmp/syslua-state-v1-fixture-9c41e7"  # where the scenes are made; tests rewrite it
# The package's archive, outside the scenes: a package's tree is named by a
# hash of its URL, which must not change when a test moves a scene.
PKG_DIR = MARK + "-pkg"
SCENES = ("main", "crash-before", "crash-after", "crash-batch", "unrestored")

HEADER = """\
local ME, GRP = sys.user.name, sys.user.group
defaults { file = { owner = ME, group = GRP, mode = "0644" } }
"""


class Scene:
    """A world (home, root, work) under MARK/<name>, driven through `python -m syslua`."""

    def __init__(self, name: str) -> None:
        self.base = Path(MARK) / name
        self.home, self.root, self.work = (self.base / d for d in ("home", "root", "work"))
        for d in (self.home, self.root, self.work):
            d.mkdir(parents=True)
        self.steps: dict[str, str] = {}  # step -> snapshot id
        self.trees: dict[str, dict[str, list[Any]]] = {}  # step -> the home's tree
        self.profiles: dict[str, str | None] = {}  # step -> where state/profile points

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SYSLUA_")}
        env.update(
            HOME=str(self.home),
            SYSLUA_ROOT=str(self.root),
            NO_COLOR="1",
            COLUMNS="200",
            PYTHONPATH=str(CHECKOUT),
            PYTHONDONTWRITEBYTECODE="1",
            **extra,
        )
        return env

    def sys(self, *args: str, code: int = 0, stdin: str = "", **extra: str) -> str:
        p = subprocess.run(
            [sys.executable, "-m", "syslua", *args],
            cwd=self.work,
            env=self.env(**extra),
            input=stdin,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if p.returncode != code:
            raise SystemExit(f"sys {' '.join(args)}: exit {p.returncode}\n{p.stdout}{p.stderr}")
        return p.stdout + p.stderr

    def config(self, body: str) -> None:
        (self.work / "sys.lua").write_text(HEADER + body)

    def write(self, rel: str, data: str | bytes, mode: int = 0o644) -> Path:
        path = self.base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            data = data.encode()
        path.write_bytes(data)
        os.chmod(path, mode)
        return path

    def step(self, name: str, output: str) -> str:
        """Record the snapshot `output` says was made, and the home as it is now."""
        found = re.findall(
            r"(?:(?:Apply|Rollback|Destroy) complete: s|Recorded s)napshot ([0-9a-f-]+)[.:]", output
        )
        if not found:
            raise SystemExit(f"no snapshot in the output of step {name}:\n{output}")
        self.steps[name] = found[-1]
        self.snap_tree(name)
        return found[-1]

    def snap_tree(self, name: str) -> None:
        self.trees[name] = home_tree(self.home)
        profile = self.root / "state" / "profile"
        self.profiles[name] = os.readlink(profile) if profile.is_symlink() else None

    def current(self) -> str | None:
        ids = [h["id"] for h in json.loads(self.sys("history", "--json")) if h["current"]]
        return ids[0] if ids else None

    def killed(self, point: str) -> None:
        """`sys apply`, SIGKILLed by itself at `point`."""
        self.sys("apply", code=-signal.SIGKILL, SYSLUA_CRASH_AT=point)


def home_tree(home: Path) -> dict[str, list[Any]]:
    """Every entry under `home`: [kind, mode, sha256 of a file | a link's target]."""
    out: dict[str, list[Any]] = {}
    for dirpath, dirs, files in os.walk(home):
        dirs.sort()
        for name in sorted(dirs + files):
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            rel = os.path.relpath(p, home)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ["link", os.readlink(p)]
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ["dir", f"{stat.S_IMODE(st.st_mode):04o}"]
            else:
                digest = hashlib.sha256(Path(p).read_bytes()).hexdigest()
                out[rel] = ["file", f"{stat.S_IMODE(st.st_mode):04o}", digest]
    return dict(sorted(out.items()))


# -- the scenes ------------------------------------------------------------------
def tar_gz(members: list[tuple[str, bytes, int]]) -> bytes:
    """A small .tar.gz of `members` (name, content, mode), the same bytes every time."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        for name, data, mode in members:
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), mode, 1_700_000_000
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


APP = tar_gz(
    [("app/bin/app", b"#!/bin/sh\necho app\n", 0o755), ("app/README", b"the app\n", 0o644)]
)
HELLO = tar_gz([("hello-1.0/bin/hello", b"#!/bin/sh\necho hello\n", 0o755)])
BIG = b"".join(b"%05d big line of the loose blob\n" % i for i in range(2000))  # 66,000 bytes

FILES_V1 = """\
file { path = "~/small.txt", content = "small v1\\n" }
file { path = "~/copied.txt", source = "src/copied.txt", mode = "0600" }
file { path = "~/big.bin", source = "src/big.bin" }
file { path = "~/tree", source = "src/tree", dir_mode = "0750" }
file { path = "~/linked.txt", source = "src/linked.txt", link = true }
file { path = "~/sym", ensure = "link", target = "~/small.txt" }
file { path = "~/.bashrc", content = "export EDITOR=vim\\n" }
file { path = "~/old-dir", ensure = "absent", force = true }
file { path = "~/made-dir", ensure = "directory", mode = "0700" }
"""
DEEP = 'file { path = "~/deep/nested/file.txt", content = "deep\\n", mode = "0640" }\n'
ENABLE = (
    'exec { name = "enable-thing", provider = "shell", command = "touch ~/.thing-enabled",'
    ' creates = "~/.thing-enabled", undo = "rm -f ~/.thing-enabled" }\n'
)
NOTIFY = (
    'exec { name = "notify", provider = "shell", command = "echo notified > ~/.notified",'
    ' creates = "~/.notified" }\n'
)
ARCHIVE = """\
archive {
  name = sys.path("~/dl/app.tar.gz"), url = "file://" .. sys.path("~/.archive-src/app.tar.gz"),
  checksum = "APP_SHA256", extract_parent = sys.path("~/opt"), creates = sys.path("~/opt/app/bin/app"),
  owner = ME, group = GRP,
}
""".replace("APP_SHA256", hashlib.sha256(APP).hexdigest())
PACKAGE = """\
package {
  name = "hello", version = "1.0", strip_components = 1, bin = { "bin/hello" },
  source = lib.fetchUrl { url = "file://PKG_DIR/hello-1.0.tar.gz", sha256 = "HELLO_SHA256" },
}
""".replace("PKG_DIR", PKG_DIR).replace("HELLO_SHA256", hashlib.sha256(HELLO).hexdigest())
PRIMITIVES = """\
local tool = sys.build {
  id = "greet",
  inputs = { text = "hello from the store" },
  create = function(inputs, ctx)
    ctx:exec { bin = "/bin/sh", args = { "-c",
      'mkdir -p "$1/bin" && printf "#!/bin/sh\\\\necho %s\\\\n" "$2" > "$1/bin/greet" && chmod 755 "$1/bin/greet"',
      "sh", ctx.out, inputs.text } }
    return { out = ctx.out, bin = ctx.out .. "/bin/greet" }
  end,
}
sys.bind {
  id = "greet-link",
  inputs = { target = tool.outputs.bin, link = sys.path("~/bin/greet") },
  create = function(inputs, ctx)
    ctx:exec { bin = "/bin/mkdir", args = { "-p", sys.path("~/bin") } }
    ctx:exec { bin = "/bin/ln", args = { "-sfn", inputs.target, inputs.link } }
    return { link = inputs.link }
  end,
  destroy = function(outputs, ctx)
    ctx:exec { bin = "/bin/rm", args = { "-f", outputs.link } }
  end,
}
"""


def sources(s: Scene) -> None:
    """What the archive and the package are made from (the archive's is under the
    home: its file:// URL is absolute, and `sys.path` makes it so)."""
    s.write("home/.archive-src/app.tar.gz", APP)
    Path(PKG_DIR).mkdir(exist_ok=True)
    (Path(PKG_DIR) / "hello-1.0.tar.gz").write_bytes(HELLO)


def main_scene() -> Scene:
    s = Scene("main")
    # By hand, before syslua: a file taken over, a directory removed whole,
    # a file a link replaces.
    s.write("home/.bashrc", "hand-made bashrc\n", 0o600)
    s.write("home/old-dir/a.txt", "old a\n", 0o640)
    s.write("home/old-dir/sub/b.txt", "old b\n", 0o600)
    os.chmod(s.home / "old-dir" / "sub", 0o750)
    os.symlink("a.txt", s.home / "old-dir" / "ln")
    s.write("home/sym", "hand-made file where a link goes\n", 0o644)
    sources(s)
    s.write("work/src/copied.txt", "copied v1\n", 0o644)
    s.write("work/src/big.bin", BIG)
    s.write("work/src/linked.txt", "linked v1\n")
    s.write("work/src/tree/x.txt", "x v1\n")
    s.write("work/src/tree/sub/y.txt", "y v1\n", 0o600)
    s.snap_tree("seed")

    env = 'env { EDITOR = "vim", PAGER = "less" }\n'
    s.config(FILES_V1 + DEEP + ENABLE + NOTIFY + env + ARCHIVE + PRIMITIVES + PACKAGE)
    s.step("first", s.sys("apply", "-m", "first apply"))

    # Contents change, a tree loses and gains files, an exec with undo goes
    # (its undo runs), a nested file goes with the parents made for it, the
    # package leaves the profile (its tree stays in the store).
    s.write("work/src/copied.txt", "copied v2\n", 0o644)
    s.write("work/src/tree/x.txt", "x v2\n")
    s.write("work/src/tree/z.txt", "z new\n")
    (s.work / "src/tree/sub/y.txt").unlink()
    second = FILES_V1.replace("small v1", "small v2")
    s.config(second + NOTIFY + 'env { EDITOR = "nvim" }\n' + ARCHIVE + PRIMITIVES)
    s.step("second", s.sys("apply"))

    # A hand edit overwritten by `apply --force`: kept as an `edits` snapshot.
    # The archive, the build and the bind go (what they made is removed).
    s.write("home/small.txt", "edited by hand\n", 0o644)
    s.config(second.replace("small v2", "small v3") + NOTIFY + 'env { EDITOR = "nvim" }\n')
    s.step("third", s.sys("apply", "--force"))
    s.steps["edits"] = edits_id(s)

    # A hand edit of a copied file taken back into its source: an `add` snapshot.
    s.write("home/copied.txt", "copied edited by hand\n", 0o600)
    s.step("add", s.sys("add", str(s.home / "copied.txt")))

    # Back to the first apply, away with everything, and back again.
    s.step("rollback-first", s.sys("rollback", s.steps["first"]))
    s.step("destroy", s.sys("destroy", "--yes"))
    s.step("rollback-destroy", s.sys("rollback"))
    s.sys("snapshot", "tag", s.steps["first"], "first-apply")
    s.sys("snapshot", "tag", s.steps["first"], "keep")
    s.sys("snapshot", "tag", s.steps["second"], "second")
    assert s.current() == s.steps["rollback-destroy"]
    assert "No drift" in s.sys("status"), s.sys("status")
    return s


def edits_id(s: Scene) -> str:
    """The `edits` snapshot the forced apply recorded, just before its own."""
    snaps = json.loads(s.sys("history", "--json"))
    ids = [h["id"] for h in snaps]
    return ids[ids.index(s.steps["third"]) + 1]


CRASH_V1 = """\
file { path = "~/a.txt", content = "a v1\\n" }
file { path = "~/d/f.txt", content = "f v1\\n", mode = "0600" }
env { EDITOR = "vim" }
"""
CRASH_V2 = """\
file { path = "~/a.txt", content = "a v2\\n" }
file { path = "~/d/f.txt", content = "f v2\\n", mode = "0640" }
file { path = "~/n/new.txt", content = "new\\n" }
file { path = "~/hand.txt", content = "managed\\n" }
exec { name = "enable", provider = "shell", command = "touch ~/.enabled",
       creates = "~/.enabled", undo = "rm -f ~/.enabled" }
env { EDITOR = "nvim" }
sys.bind {
  id = "bound",
  inputs = { path = sys.path("~/bound") },
  create = function(inputs, ctx)
    ctx:exec { bin = "/bin/sh", args = { "-c", 'echo bound > "$1"', "sh", inputs.path } }
    return { path = inputs.path }
  end,
  destroy = function(outputs, ctx)
    ctx:exec { bin = "/bin/rm", args = { "-f", outputs.path } }
  end,
}
"""


def crash_scene(name: str, point: str) -> Scene:
    s = Scene(name)
    s.write("home/hand.txt", "made by hand\n", 0o640)
    sources(s)
    s.config(CRASH_V1)
    s.step("applied", s.sys("apply"))
    s.config(CRASH_V2 + ARCHIVE + PACKAGE)
    s.killed(point)
    s.snap_tree("killed")
    journal = s.root / "state" / "journal" / "journal.jsonl"
    assert journal.exists(), f"{name}: no journal left"
    records = [json.loads(line) for line in journal.read_text().splitlines()]
    ops = [r["op"] for r in records]
    if point != "journal-batch":
        assert {"exec", "bind", "profile"} <= set(ops), ops
    commit = [r for r in records if r["op"] == "commit"]
    if commit:
        s.steps["committed"] = commit[0]["snapshot"]
    return s


def unrestored_scene() -> Scene:
    """A file taken over, then an exec that puts a file where its parent
    directory was and fails: undoing cannot put the taken-over file back."""
    s = Scene("unrestored")
    s.write("home/u/a.txt", "hand-made a\n", 0o600)
    s.write("home/u/b.txt", "hand-made b\n", 0o644)
    s.config('file { path = "~/keep.txt", content = "keep\\n" }\n')
    s.step("applied", s.sys("apply"))
    s.config(
        'file { path = "~/keep.txt", content = "keep\\n" }\n'
        'file { path = "~/u/a.txt", content = "managed a\\n" }\n'
        'file { path = "~/u/b.txt", content = "managed b\\n" }\n'
        'exec { name = "break", provider = "shell", depends_on = { "file#~/u/a.txt", "file#~/u/b.txt" },'
        ' command = "rm -r ~/u && echo in the way > ~/u && exit 1" }\n'
    )
    out = s.sys("apply", code=1)
    assert (s.root / "state" / "unrestored.json").exists(), out
    assert s.current() is None, out  # self-healing: the next apply converges everything
    s.snap_tree("failed")
    return s


# -- copying the scenes out ------------------------------------------------------
def layout(base: Path) -> dict[str, list[Any]]:
    """Every entry under `base`: [kind, mode] or ["link", target]."""
    out: dict[str, list[Any]] = {}
    for dirpath, dirs, files in os.walk(base):
        for name in dirs + files:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            rel = os.path.relpath(p, base)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ["link", os.readlink(p)]
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ["dir", f"{stat.S_IMODE(st.st_mode):04o}"]
            elif stat.S_ISREG(st.st_mode):
                out[rel] = ["file", f"{stat.S_IMODE(st.st_mode):04o}"]
            else:
                raise SystemExit(f"{p}: not a file, directory or link")
    return dict(sorted(out.items()))


def dump(value: Any, indent: str = "") -> str:
    """JSON with one line per entry of a table (lists on one line): reads well in a diff."""
    if not isinstance(value, dict) or not value:
        return json.dumps(value)
    inner = indent + " "
    lines = [f"{inner}{json.dumps(k)}: {dump(v, inner)}" for k, v in value.items()]
    return "{\n" + ",\n".join(lines) + "\n" + indent + "}" + ("" if indent else "\n")


def copy_out(scenes: list[Scene], dest: Path) -> None:
    for name in SCENES:
        shutil.rmtree(dest / name, ignore_errors=True)
    entries: dict[str, list[Any]] = {}
    for s in scenes:
        for rel, entry in layout(s.base).items():
            entries[f"{s.base.name}/{rel}"] = entry
            if entry[0] == "file":
                target = dest / s.base.name / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(s.base / rel, target)
                os.chmod(target, 0o644)
    (dest / "layout.json").write_text(dump(entries))
    me = pwd.getpwuid(os.getuid())
    expect = {
        "mark": MARK,
        "user": {
            "name": me.pw_name,
            "group": grp.getgrgid(os.getgid()).gr_name,
            "uid": os.getuid(),
            "gid": os.getgid(),
        },
        "scenes": {
            s.base.name: {"steps": s.steps, "trees": s.trees, "profiles": s.profiles}
            for s in scenes
        },
    }
    (dest / "expect.json").write_text(dump(expect))


def main() -> None:
    dest = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent).resolve()
    keep = os.environ.get("KEEP_SCENES") == "1"  # leave MARK in place, to look at
    for d in (MARK, PKG_DIR):
        shutil.rmtree(d, ignore_errors=True)
    try:
        scenes = [
            main_scene(),
            crash_scene("crash-before", "before-commit"),
            crash_scene("crash-after", "after-commit"),
            crash_scene("crash-batch", "journal-batch"),
            unrestored_scene(),
        ]
        copy_out(scenes, dest)
    finally:
        if not keep:
            for d in (MARK, PKG_DIR):
                shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
