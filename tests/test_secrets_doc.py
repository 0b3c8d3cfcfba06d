"""docs/secrets.md, run: its age walkthrough from `sys age keygen` to a second
machine, and its claims about what Lua can and cannot do with a secret.

Each line the page quotes from syslua's output is checked twice: it is in the
page, and the real run printed it. The walkthrough uses the real `age`
command to check what another machine can decrypt. Two worlds: the laptop is
`sysenv`, the desktop a second HOME and SYSLUA_ROOT beside it.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, _in_process, out, put

DOC = (ROOT / "docs" / "secrets.md").read_text()
NETRC = "machine api.example.org\n  login ada\n  password hunter2-correct-horse\n"
PASSWORD = "hunter2-correct-horse"
KEY = re.compile(r"age1[0-9a-z]{58}")

needs_age = pytest.mark.skipif(
    shutil.which("age") is None, reason="the age command is not installed (apt install age)"
)


def quoted(p: subprocess.CompletedProcess[str], *lines: str) -> None:
    """Each of LINES is in the page and in what the command printed."""
    for line in lines:
        assert line in DOC, f"docs/secrets.md no longer quotes: {line}"
        assert line in out(p), (line, out(p))


def lua_block(after: str) -> str:
    """The first ```lua block after the text AFTER, its age1 keys made generic."""
    start = DOC.index("```lua\n", DOC.index(after)) + len("```lua\n")
    return KEY.sub("KEY", DOC[start : DOC.index("```", start)])


def run(env: dict[str, str], cwd: Path, *args: str, input: str | None = None):
    return _in_process(list(args), env, cwd, timeout=120, input=input)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@needs_age
def test_the_age_walkthrough_runs_from_keygen_to_a_second_machine(sysenv, tmp_path):
    lap, repo = sysenv.env, sysenv.home / "dotfiles"
    put(sysenv.home / ".netrc", NETRC, 0o600)
    put(repo / "gitconfig", "[user]\n\tname = Ada\n")
    printed = []

    # 1. an identity
    p = run(lap, repo, "age", "keygen")
    quoted(p, "Wrote a new age identity to ~/.config/syslua/key.txt (0600).")
    laptop_key = KEY.search(p.stdout).group()  # type: ignore[union-attr]
    p = run(lap, repo, "age", "keygen")
    assert p.returncode == 1
    quoted(p, "Error: ~/.config/syslua/key.txt already exists: it is left as it is")

    # 2. encrypt by hand (the page's command), 3. declare it and apply
    p = run(lap, repo, "age", "encrypt", "-o", "dotfiles/.netrc.age", "~/.netrc")
    assert "sys age encrypt -o dotfiles/.netrc.age ~/.netrc" in DOC
    assert p.returncode == 0, out(p)
    config = lua_block("### 3. Declare it and apply")
    (repo / "sys.lua").write_text(config)
    p = run(lap, repo, "plan", "--diff")
    quoted(p, "+ file ~/.gitconfig: will create", "= 1 unchanged")
    p = run(lap, repo, "apply")
    assert p.returncode == 0, out(p)
    printed.append(p)

    # 4. an edit, taken back encrypted
    with open(sysenv.home / ".netrc", "a") as f:
        f.write("  account work\n")
    p = run(lap, repo, "plan", "--diff")
    quoted(
        p,
        "! file ~/.netrc: edited since the last apply (content edited); will update (content changed)",
        "      (secret file, edited by hand: 1 line changed)\n      (secret file: 1 line changed)",
    )
    printed.append(p)
    p = run(lap, repo, "add", "~/.netrc")
    quoted(p, "~/.netrc: encrypted into its source dotfiles/.netrc.age (declared at sys.lua:2)")

    # 5. a second machine: no identity, then its own, then the file re-encrypted to both
    desk_home, desk_root = tmp_path / "desk" / "home", tmp_path / "desk" / "root"
    desk_home.mkdir(parents=True)
    desk = dict(lap, HOME=str(desk_home), SYSLUA_ROOT=str(desk_root))
    desk_repo = desk_home / "dotfiles"
    shutil.copytree(repo, desk_repo)
    p = run(desk, desk_repo, "apply")
    assert p.returncode == 1
    quoted(
        p,
        "cannot decrypt dotfiles/.netrc.age: the identity file ~/.config/syslua/key.txt "
        "does not exist (`sys age keygen` writes one)",
        "Nothing was changed.",
    )
    assert not (desk_home / ".netrc").exists() and not (desk_home / ".gitconfig").exists()
    p = run(desk, desk_repo, "age", "keygen")
    desktop_key = KEY.search(p.stdout).group()  # type: ignore[union-attr]

    both = lua_block("On the first machine, declare both recipients")
    assert both.count('"KEY"') == 2
    (repo / "sys.lua").write_text(both.replace("KEY", laptop_key, 1).replace("KEY", desktop_key))
    plain = run(lap, repo, "age", "decrypt", "dotfiles/.netrc.age")
    assert plain.returncode == 0 and plain.stdout == NETRC + "  account work\n"
    p = run(
        lap, repo, "age", "encrypt", "-r", laptop_key, "-r", desktop_key,
        "-o", "dotfiles/.netrc.age", input=plain.stdout,
    )  # fmt: skip
    assert p.returncode == 0, out(p)
    p = run(lap, repo, "plan")
    assert "No changes." in p.stdout, out(p)

    for name in ("sys.lua", "dotfiles/.netrc.age"):
        shutil.copy(repo / name, desk_repo / name)
    p = run(desk, desk_repo, "apply")
    quoted(p, "[2/2] ✓ file ~/.netrc: created")
    printed.append(p)
    assert mode(desk_home / ".netrc") == 0o600
    assert (desk_home / ".netrc").read_text() == plain.stdout

    # an edit taken back on the desktop still opens on the laptop
    with open(desk_home / ".netrc", "a") as f:
        f.write("# from the desk\n")
    p = run(desk, desk_repo, "add", "~/.netrc")
    assert p.returncode == 0, out(p)
    opened = subprocess.run(
        ["age", "-d", "-i", str(sysenv.home / ".config/syslua/key.txt"), str(desk_repo / "dotfiles/.netrc.age")],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert opened.stdout.endswith("# from the desk\n")
    for p in printed:
        assert PASSWORD not in out(p)


def test_lua_string_functions_see_the_placeholder_not_the_value(sysenv):
    """The page's "What syslua cannot follow": `:sub` cuts the placeholder,
    `:upper` makes an unknown placeholder that fails the apply."""
    sysenv.write(
        "sys.lua",
        """\
        local gh = sys.secret{ env = "DOC_TOKEN" }
        file { path = "~/up",  content = gh:upper() .. "\\n" }
        file { path = "~/sub", content = gh:sub(1, 8) .. "\\n" }
        """,
    )
    env = dict(sysenv.env, DOC_TOKEN="gh-token-0123456789abcdef")
    p = run(env, sysenv.work, "plan", "--diff")
    quoted(p, "      +$${secre", "will update (unknown placeholder $${SECRET:")
    p = run(env, sysenv.work, "apply")
    assert p.returncode == 1
    assert "file ~/up failed: unknown placeholder $${SECRET:" in out(p)
    assert not (sysenv.home / "sub").exists()  # rolled back with the rest


def test_a_secret_env_variable_goes_only_into_the_private_script(sysenv):
    """The page's "In the shell environment": env.private.sh (0600), loaded by env.sh."""
    sysenv.write(
        "sys.lua", 'env { GITHUB_TOKEN = sys.secret{ env = "DOC_TOKEN" }, EDITOR = "nvim" }\n'
    )
    env = dict(sysenv.env, DOC_TOKEN="gh-token-0123456789abcdef")
    p = run(env, sysenv.work, "plan")
    quoted(p, "+ env GITHUB_TOKEN: (secret)")
    p = run(env, sysenv.work, "apply")
    assert p.returncode == 0, out(p)
    state = sysenv.root / "state"
    private = state / "env.private.sh"
    assert mode(private) == 0o600 and "gh-token-0123456789abcdef" in private.read_text()
    public = (state / "env.sh").read_text()
    assert "gh-token" not in public
    assert f"if [ -r '{private}' ]; then . '{private}'; fi" in public
    assert "if [ -r '/tmp/s25doc/c/root/state/env.private.sh' ]; then . " in DOC
