"""The bundled dotfiles repository (examples/dotfiles, issue 10 "Example and tests").

The example is copied into the test's work dir, so the repository itself is
never written, and every command runs from inside the copy, as a user who
keeps ~/dotfiles would run them. It is applied into the test's temporary
home, then put through a user's day: an installer appends to a copied rc
file, a script in ~/bin is tweaked in place, a Neovim file is edited through
its link, the repository changes; then `sys plan`, the refusal, `sys add`,
`sys apply --force` and `sys rollback`, a file deleted from a source tree,
and `sys destroy`, which leaves the home exactly as it was before the first
apply (a hand-made ~/.bashrc included). Messages and exit codes are the
ones issue 10 and docs/cli.md state.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, history, ok, out, put, tree

from syslua.eval.facts import machine_facts

EXAMPLE = ROOT / "examples" / "dotfiles"
EDITED = "edited since the last apply"
# The end of a refusal to overwrite edits: both ways on, as commands (issue 23, point 7).
KEEP_OR_FORCE = (
    "Nothing was changed. Either:\n"
    "  keep {paths} (copied into {sources}): sys add {words}\n"
    "  overwrite {them} (kept in a snapshot first: `sys rollback` brings {them} back): "
    "sys apply --force"
)
KEEP_2 = KEEP_OR_FORCE.format(
    paths="~/.bashrc, ~/bin/note",
    sources="their sources",
    words="~/.bashrc ~/bin/note",
    them="them",
)
KEEP_1 = KEEP_OR_FORCE.format(
    paths="~/bin/note", sources="its source", words="~/bin/note", them="it"
)
RC_FILES = (".bashrc", ".zshrc", ".aliases")
SCRIPTS = ("extract", "git-sweep", "note")
NVIM_FILES = (
    "init.lua",
    "lua/config/autocmds.lua",
    "lua/config/keymaps.lua",
    "lua/config/lazy.lua",
    "lua/config/options.lua",
    "lua/plugins/colorscheme.lua",
    "lua/plugins/lsp.lua",
    "lua/plugins/telescope.lua",
    "lua/plugins/treesitter.lua",
)
NVIM_DIRS = ("", "lua", "lua/config", "lua/plugins")
HAND_MADE_BASHRC = "# my own bashrc, from before syslua\nalias ll='ls -l'\n"


@pytest.fixture
def repo(sysenv) -> Path:  # type: ignore[no-untyped-def]
    """A copy of the example with the modes git gives its files (0644, or
    0755 for the scripts, whatever the checkout's umask: copies keep their
    source's mode), and a vim swap file beside a source file."""
    dest = sysenv.work / "dotfiles"
    shutil.copytree(EXAMPLE, dest, symlinks=True)
    for path in dest.rglob("*"):
        if path.is_file() and not path.is_symlink():
            path.chmod(0o755 if mode_of(path) & 0o100 else 0o644)
    put(dest / ".config" / "nvim" / "lua" / "config" / ".options.lua.swp", "swap\n")
    return dest


def run(sysenv, repo: Path, *args: str):  # type: ignore[no-untyped-def]
    """`sys ARGS` from inside the repository: ./sys.lua is the config."""
    return sysenv.run(*args, cwd=repo)


def lines(p) -> list[str]:  # type: ignore[no-untyped-def]
    return [ln.strip() for ln in p.stdout.splitlines()]


def mode_of(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def rendered_gitconfig(repo: Path, email: str = "ada@home.example", host: str = "") -> str:
    text = (repo / ".gitconfig").read_text()
    text = text.replace("{{ lookup('facts.hostname') }}", host or machine_facts()["hostname"])
    return text.replace("{{ lookup('facts.git.email', 'ada@home.example') }}", email)


def test_the_scripts_keep_their_execute_bit_in_the_repository():
    for name in SCRIPTS:
        assert mode_of(EXAMPLE / "bin" / name) & 0o111 == 0o111, name
    tracked = subprocess.run(
        ["git", "ls-files", "-s", "--", "examples/dotfiles/bin"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if tracked.returncode != 0 or not tracked.stdout:
        pytest.skip("not a git checkout, or the example is not committed yet")
    modes = {
        ln.split("\t")[1].rsplit("/", 1)[1]: ln.split()[0] for ln in tracked.stdout.splitlines()
    }
    assert modes == dict.fromkeys(SCRIPTS, "100755"), modes


def test_first_apply_copies_links_renders_and_takes_over(sysenv, repo):
    home = sysenv.home
    put(home / ".bashrc", HAND_MADE_BASHRC, 0o600)
    example_before = tree(EXAMPLE)

    p = run(sysenv, repo, "plan")
    ok(p)
    shown = lines(p)
    assert (
        "~ file ~/.bashrc: will update (content changed, mode 0600 -> 0644)"
        " - takes over an existing file; the original is kept"
    ) in shown, shown
    for line in (
        "+ file ~/.zshrc: will create",
        "+ file ~/.aliases: will create",
        "+ file ~/.gitconfig: will create",
        "+ file ~/bin/ (tree: 3 files)",
        "+ dir ~/.config (parent)",
        # 9 files: README.md and the swap file are ignored
        "+ file ~/.config/nvim/ (tree: 9 links, 3 directories)",
        # a tree is one item; parents are not counted (issue 23, point 2)
        "Plan: 5 to create, 1 to update, 0 to remove, 0 unchanged.",
    ):
        assert line in shown, (line, shown)

    p = run(sysenv, repo, "apply")
    ok(p)
    assert "Apply complete: snapshot" in p.stdout
    # copies: the repository's bytes and modes
    for name in RC_FILES:
        assert (home / name).read_bytes() == (repo / name).read_bytes(), name
        assert not (home / name).is_symlink() and mode_of(home / name) == 0o644
    # a copied tree: scripts executable because git keeps their x bit
    assert mode_of(home / "bin") == 0o755
    assert sorted(os.listdir(home / "bin")) == sorted(SCRIPTS)
    for name in SCRIPTS:
        assert (home / "bin" / name).read_bytes() == (repo / "bin" / name).read_bytes()
        assert mode_of(home / "bin" / name) == 0o755, name
    notes = sysenv.work / "notes.md"
    env = {**sysenv.env, "NOTES": str(notes)}
    subprocess.run([str(home / "bin" / "note"), "it", "runs"], env=env, check=True)
    assert notes.read_text().endswith(" it runs\n")
    # a link tree: every file a link to its source's absolute path, directories real
    nvim = home / ".config" / "nvim"
    for rel in NVIM_FILES:
        assert os.readlink(nvim / rel) == str(repo / ".config" / "nvim" / rel), rel
    for rel in NVIM_DIRS:
        d = nvim / rel
        assert d.is_dir() and not d.is_symlink() and mode_of(d) == 0o755, rel
    assert mode_of(home / ".config") == 0o755
    assert not (nvim / "README.md").exists() and not (nvim / "README.md").is_symlink()
    assert not os.path.lexists(nvim / "lua" / "config" / ".options.lua.swp")
    # a template: facts filled in, nothing else of the file touched
    gitconfig = (home / ".gitconfig").read_text()
    assert gitconfig == rendered_gitconfig(repo)
    assert "\temail = ada@home.example\n" in gitconfig and "{{" not in gitconfig

    p = run(sysenv, repo, "plan")
    ok(p)
    assert "No changes. The machine matches the configuration." in p.stdout
    applied = tree(home)
    p = run(sysenv, repo, "apply")
    ok(p)
    assert "No changes. The machine matches the configuration." in p.stdout
    assert tree(home) == applied
    assert tree(EXAMPLE) == example_before


def test_a_day_with_the_dotfiles(sysenv, repo):
    home = sysenv.home
    put(home / ".bashrc", HAND_MADE_BASHRC, 0o600)
    before = tree(home)
    example_before = tree(EXAMPLE)
    ok(run(sysenv, repo, "apply"))

    # -- the day: edits in ~ (two copies, one link) and in the repository ----------
    installer = 'export NVM_DIR="$HOME/.nvm"\n'
    with open(home / ".bashrc", "a") as f:  # an installer appends to a copied rc file
        f.write(installer)
    bashrc_live = (home / ".bashrc").read_text()
    note = home / "bin" / "note"
    tweak = "# a quick fix made in ~/bin\n"
    with open(note, "a") as f:  # a script of the copied tree, fixed in place
        f.write(tweak)
    note_edited = note.read_text()
    with open(home / ".config" / "nvim" / "lua" / "config" / "options.lua", "a") as f:
        f.write("opt.wrap = false\n")  # through the link: lands in the repository
    source_options = repo / ".config" / "nvim" / "lua" / "config" / "options.lua"
    assert source_options.read_text().endswith("opt.wrap = false\n")
    with open(repo / ".zshrc", "a") as f:  # and the repository moves on
        f.write("setopt correct\n")

    p = run(sysenv, repo, "plan", "-v")  # -v: the unchanged items are listed too
    assert p.returncode == 1, out(p)  # edits: `sys apply` would refuse (issue 23)
    shown = lines(p)
    assert (
        f"! file ~/.bashrc: {EDITED} (content edited); will update (content changed)"
    ) in shown, shown
    bin_line = shown.index("~ file ~/bin/ (tree: 1 updated)")
    # under its tree (with -v, among the tree's unchanged members)
    assert (
        f"! file ~/bin/note: {EDITED} (content edited); will update (content changed)"
    ) in shown[bin_line + 1 : bin_line + 4], shown
    assert "~ file ~/.zshrc: will update (content changed)" in shown
    assert (
        "= file ~/.config/nvim/ (tree: 9 links, 3 directories)" in shown
    )  # a link edit is no edit
    assert (
        "Plan: 0 to create, 3 to update, 0 to remove, 3 unchanged, 2 edited since the last apply."
    ) in shown
    # both ways on, as commands that work as printed (issue 23, point 7)
    assert shown[-4:] == [
        "Keep or overwrite the edits:",
        "keep ~/.bashrc, ~/bin/note (copied into their sources): sys add ~/.bashrc ~/bin/note",
        "overwrite them (kept in a snapshot first: `sys rollback` brings them back): "
        "sys apply --force",
        "2 paths edited since the last apply would be overwritten: `sys apply` would refuse "
        "(exit 2).",
    ], shown
    p = run(sysenv, repo, "plan", "--diff")
    assert p.returncode == 1, out(p)
    shown = lines(p)
    edit = shown.index("--- ~/.bashrc (last applied)")  # the edit first, then what would be written
    assert shown[edit + 1] == "+++ ~/.bashrc (live)", shown
    assert shown.index("--- ~/.bashrc (current)") > shown.index(f"+{installer.strip()}") > edit

    # -- the apply refuses, and changes nothing -----------------------------------------
    edited_home, edited_repo, snapshots = tree(home), tree(repo), len(history(sysenv))
    p = run(sysenv, repo, "apply")
    assert p.returncode == 2, out(p)
    assert (
        "Refusing to overwrite 2 paths edited since the last apply:\n"
        f"  ~/.bashrc\n  ~/bin/note\n{KEEP_2}\n"
    ) in out(p), out(p)
    assert "Traceback" not in out(p)
    assert (tree(home), tree(repo), len(history(sysenv))) == (edited_home, edited_repo, snapshots)

    # -- sys add: the installer's line goes into the repository ---------------------
    p = run(sysenv, repo, "add", "~/.bashrc")
    ok(p)
    assert "~/.bashrc: copied over its source .bashrc (declared at sys.lua:21)" in p.stdout
    assert (repo / ".bashrc").read_text() == bashrc_live
    # a link needs nothing; a rendering is refused, the template named
    p = run(sysenv, repo, "add", str(home / ".config" / "nvim" / "lua" / "config" / "options.lua"))
    ok(p)
    assert "edits made through it are already there; nothing to do" in p.stdout
    p = run(sysenv, repo, "add", "~/.gitconfig")
    assert p.returncode == 2, out(p)
    assert (
        "Error: ~/.gitconfig is rendered from the template .gitconfig (declared at sys.lua:42): "
        "edit the template (`sys add` does not copy a rendering over it)"
    ) in p.stderr
    shown = lines(run(sysenv, repo, "plan", "-v"))
    assert "= file ~/.bashrc: unchanged" in shown, shown
    # one edit left: the refusal names it alone
    p = run(sysenv, repo, "apply")
    assert p.returncode == 2, out(p)
    assert (
        f"Refusing to overwrite 1 path edited since the last apply:\n  ~/bin/note\n{KEEP_1}\n"
    ) in out(p), out(p)

    # -- --force overwrites it, kept for sys rollback --------------------------------
    p = run(sysenv, repo, "apply", "--force")
    ok(p)
    assert "Kept 1 path edited since the last apply in snapshot " in p.stdout
    assert ": `sys rollback` brings it back." in p.stdout
    assert note.read_bytes() == (repo / "bin" / "note").read_bytes() and mode_of(note) == 0o755
    assert (home / ".zshrc").read_bytes() == (repo / ".zshrc").read_bytes()
    h = history(sysenv)
    assert h[1]["kind"] == "edits" and h[1]["message"] == (
        "edits kept before apply --force: ~/bin/note"
    ), h[:2]
    ok(run(sysenv, repo, "rollback"))
    assert note.read_text() == note_edited
    # the edit the rollback brought back is an edit again (issue 21): refused, then
    # overwritten by name, back to what the repository says
    assert run(sysenv, repo, "apply").returncode == 2
    ok(run(sysenv, repo, "apply", "--overwrite", "~/bin/note"))
    assert note.read_bytes() == (repo / "bin" / "note").read_bytes()

    # -- a file deleted from a source tree leaves ~ at the next apply ----------------
    extract = (repo / "bin" / "extract").read_bytes()
    (repo / "bin" / "extract").unlink()
    (repo / ".config" / "nvim" / "lua" / "plugins" / "lsp.lua").unlink()
    shown = lines(run(sysenv, repo, "plan"))
    assert "~ file ~/bin/ (tree: 1 removed)" in shown, shown
    assert "~ file ~/.config/nvim/ (tree: 1 removed)" in shown, shown
    [removals] = [ln for ln in shown if ln.startswith("[Remove] ")]
    assert sorted(removals.removeprefix("[Remove] ").split(", ")) == [
        "~/.config/nvim/* (1)",
        "~/bin/* (1)",
    ], removals
    p = run(sysenv, repo, "apply", "-v")  # -v: a tree's members under it
    ok(p)
    assert "file ~/bin/extract: removed" in p.stdout
    assert not os.path.lexists(home / "bin" / "extract")
    assert not os.path.lexists(home / ".config" / "nvim" / "lua" / "plugins" / "lsp.lua")

    # -- sys rollback returns to the snapshot before -----------------------------------
    p = run(sysenv, repo, "rollback")
    ok(p)
    assert "Rollback complete: snapshot" in p.stdout
    assert (home / "bin" / "extract").read_bytes() == extract
    assert mode_of(home / "bin" / "extract") == 0o755
    lsp = home / ".config" / "nvim" / "lua" / "plugins" / "lsp.lua"
    assert os.readlink(lsp) == str(repo / ".config" / "nvim" / "lua" / "plugins" / "lsp.lua")

    # -- sys destroy: the home as it was before the first apply ------------------------
    managed = tree(home)
    p = run(sysenv, repo, "destroy", "--dry-run")
    ok(p)
    assert "Dry run: nothing was changed." in p.stdout
    assert tree(home) == managed
    p = run(sysenv, repo, "destroy", "--yes")
    ok(p)
    assert "file ~/.bashrc: restored the original it took over" in p.stdout
    assert "Destroy complete: snapshot" in p.stdout
    assert tree(home) == before
    assert (home / ".bashrc").read_text() == HAND_MADE_BASHRC and mode_of(home / ".bashrc") == 0o600
    # and sys rollback undoes the destroy
    ok(run(sysenv, repo, "rollback"))
    assert (home / ".bashrc").read_bytes() == (repo / ".bashrc").read_bytes()
    assert os.access(home / "bin" / "note", os.X_OK)
    assert tree(EXAMPLE) == example_before


def test_the_git_email_is_per_host(sysenv, repo):
    """The email is the fact git.email when the machine has one, else the home address."""
    facts = sysenv.home / ".config" / "syslua" / "facts.json"
    put(facts, json.dumps({"git": {"email": "ada@work.example"}}))
    ok(run(sysenv, repo, "apply"))
    assert (sysenv.home / ".gitconfig").read_text() == rendered_gitconfig(repo, "ada@work.example")
    p = run(sysenv, repo, "plan", "--diff", "--fact", "hostname=buildbox")
    ok(p)
    assert "~ file ~/.gitconfig: will update (content changed)" in p.stdout
    host = machine_facts()["hostname"]
    assert f"-# Written by syslua for {host} from the dotfiles" in p.stdout, p.stdout
    assert "+# Written by syslua for buildbox from the dotfiles" in p.stdout, p.stdout
    facts.unlink()
    ok(run(sysenv, repo, "apply"))
    assert (sysenv.home / ".gitconfig").read_text() == rendered_gitconfig(repo)
