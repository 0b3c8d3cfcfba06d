"""Secrets end to end (issue 25), through the real command line: files
encrypted with the real `age` command and decrypted when applied, and
`sys.secret` values read from the real `pass` (with a real gpg key), a
command, a file or the environment, used in `content`, templates, `env` and
an exec's `environment`.

The grep test (no secret in any output, nor in any file under SYSLUA_ROOT
but the private env scripts and the store's previous contents),
`sensitive = true` and the archive password are in tests/test_secrets_grep.py.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from conftest import _in_process, history, ok, out, tree

pytestmark = pytest.mark.skipif(
    shutil.which("age") is None or shutil.which("age-keygen") is None,
    reason="the age command is not installed (apt install age)",
)
AGE = shutil.which("age") or "age"
# Files under the home get the running user's owner and group; no mode, so
# a decrypted file's own default (0600) shows.
OWN = """\
local ME, GRP = sys.user.name, sys.user.group
defaults { file = { owner = ME, group = GRP } }
"""
NETRC = "machine example.com login me password hunter2-netrc\n"
NOTHING = "Plan: 0 to create, 0 to update, 0 to remove"


# -- helpers ------------------------------------------------------------------------------
def sys_(sysenv, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`sys *args` in this process, with extra environment variables."""
    return _in_process(list(args), dict(sysenv.env, **env), sysenv.work, timeout=60, input=None)


def keygen(sysenv) -> str:
    """`sys age keygen` into ~/.config/syslua/key.txt; its recipient."""
    p = sysenv.run("age", "keygen")
    ok(p)
    return p.stdout.split("Public key: ")[1].strip()


def key_path(sysenv) -> Path:
    return sysenv.home / ".config" / "syslua" / "key.txt"


def encrypt(sysenv, recipient: str, text: str, name: str) -> Path:
    """`text` encrypted by the real `age` into the work dir's `name`."""
    path = sysenv.work / name
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [AGE, "-r", recipient, "-o", str(path)], input=text.encode(), check=True, timeout=30
    )
    return path


def decrypt(path: Path, identity: Path) -> str:
    """The real `age -d`."""
    p = subprocess.run(
        [AGE, "-d", "-i", str(identity), str(path)], capture_output=True, check=True, timeout=30
    )
    return p.stdout.decode()


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def config(sysenv, body: str) -> None:
    sysenv.write("sys.lua", OWN + body)


def applied(sysenv, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    p = sys_(sysenv, "apply", *args, **env)
    ok(p)
    return p


def netrc_world(sysenv, text: str = NETRC, extra: str = "") -> str:
    recipient = keygen(sysenv)
    encrypt(sysenv, recipient, text, "netrc.age")
    config(sysenv, 'file { path = "~/.netrc", source = "netrc.age" }\n' + extra)
    return recipient


def all_files(sysenv) -> dict:
    return {"home": tree(sysenv.home), "root": tree(sysenv.root), "work": tree(sysenv.work)}


# -- 1. age-encrypted files ---------------------------------------------------------------
def test_an_age_source_is_decrypted_into_a_private_target(sysenv):
    netrc_world(sysenv)
    p = sysenv.run("plan", "--diff")
    ok(p)
    assert "+ file ~/.netrc: will create" in p.stdout
    assert "(secret file: 1 line changed)" in p.stdout
    assert "hunter2" not in out(p)
    applied(sysenv)
    target = sysenv.home / ".netrc"
    assert target.read_text() == NETRC
    assert mode(target) == 0o600
    p = sysenv.run("plan")
    ok(p)
    assert NOTHING in p.stdout


def test_a_declared_mode_wins_over_0600(sysenv):
    netrc_world(sysenv)
    config(sysenv, 'file { path = "~/.netrc", source = "netrc.age", mode = "0640" }\n')
    applied(sysenv)
    assert (sysenv.home / ".netrc").read_text() == NETRC
    assert mode(sysenv.home / ".netrc") == 0o640


@pytest.mark.parametrize(("declared", "expected"), [("", 0o600), (', mode = "0640"', 0o640)])
def test_a_tree_decrypts_its_age_members_and_drops_the_suffix(sysenv, declared, expected):
    recipient = keygen(sysenv)
    encrypt(sysenv, recipient, "token one\n", "dots/token.age")
    encrypt(sysenv, recipient, "deep secret\n", "dots/sub/deep.age")
    (sysenv.work / "dots" / "plain.txt").write_text("plain\n")
    config(sysenv, f'file {{ path = "~/d", source = "dots"{declared} }}\n')
    p = sysenv.run("plan", "--diff")
    ok(p)
    assert "token one" not in out(p) and "deep secret" not in out(p)
    applied(sysenv)
    d = sysenv.home / "d"
    assert sorted(str(p.relative_to(d)) for p in d.rglob("*")) == [
        "plain.txt",
        "sub",
        "sub/deep",
        "token",
    ]
    assert (d / "token").read_text() == "token one\n"
    assert (d / "sub" / "deep").read_text() == "deep secret\n"
    assert mode(d / "token") == expected and mode(d / "sub" / "deep") == expected
    assert (d / "plain.txt").read_text() == "plain\n"
    p = sysenv.run("plan")
    ok(p)
    assert NOTHING in p.stdout
    # a member edited by hand goes back into its .age, encrypted
    (d / "token").write_text("token edited\n")
    p = sysenv.run("add", str(d / "token"))
    ok(p)
    assert "~/d/token: encrypted into its source dots/token.age" in p.stdout, out(p)
    assert decrypt(sysenv.work / "dots" / "token.age", key_path(sysenv)) == "token edited\n"
    assert not (sysenv.work / "dots" / "token").exists()
    p = sysenv.run("plan")
    ok(p)
    assert NOTHING in p.stdout


def test_a_tree_member_and_an_age_member_of_the_same_name_are_refused(sysenv):
    recipient = keygen(sysenv)
    encrypt(sysenv, recipient, "token one\n", "dots/token.age")
    (sysenv.work / "dots" / "token").write_text("plain token\n")
    config(sysenv, 'file { path = "~/d", source = "dots" }\n')
    before = all_files(sysenv)
    for command in ("plan", "apply"):
        p = sysenv.run(command)
        assert p.returncode == 2, out(p)
        assert "Error: sys.lua:3: file ~/d/token is declared twice" in p.stderr, out(p)
        assert "token one" not in out(p)
    assert all_files(sysenv) == before


def test_an_edit_by_hand_is_found_and_sys_add_encrypts_it_back(sysenv):
    netrc_world(sysenv)
    applied(sysenv)
    target = sysenv.home / ".netrc"
    edited = "machine example.com login me password edited-by-hand\n"
    target.write_text(edited)
    p = sysenv.run("plan", "--diff")
    assert "! file ~/.netrc: edited since the last apply (content edited)" in p.stdout
    # the way to keep it says what `sys add` does: encrypt, not copy, into the .age
    assert "keep ~/.netrc (encrypted into its source): sys add ~/.netrc" in p.stdout, p.stdout
    assert "edited-by-hand" not in out(p) and "hunter2" not in out(p)
    p = sysenv.run("status")
    assert "M! file ~/.netrc" in p.stdout, out(p)
    assert "edited-by-hand" not in out(p)
    p = sysenv.run("status", "-v")
    assert "(secret file: 1 line changed)" in p.stdout, out(p)
    assert "edited-by-hand" not in out(p) and "hunter2" not in out(p)
    p = sysenv.run("add", str(target))
    ok(p)
    assert "encrypted into its source" in p.stdout
    assert "edited-by-hand" not in out(p)
    source = sysenv.work / "netrc.age"
    assert b"edited-by-hand" not in source.read_bytes()
    assert decrypt(source, key_path(sysenv)) == edited
    p = sysenv.run("plan")
    ok(p)
    assert NOTHING in p.stdout and "edited" not in p.stdout
    p = applied(sysenv)
    assert target.read_text() == edited


def test_a_changed_source_is_applied_and_rollback_brings_back_the_plaintext(sysenv):
    recipient = netrc_world(sysenv)
    applied(sysenv)
    newer = "machine example.com login me password newer-one\n"
    encrypt(sysenv, recipient, newer, "netrc.age")
    p = sysenv.run("plan", "--diff")
    ok(p)
    assert "~ file ~/.netrc: will update" in p.stdout
    assert "(secret file: 1 line changed)" in p.stdout
    applied(sysenv)
    target = sysenv.home / ".netrc"
    assert target.read_text() == newer
    p = sysenv.run("rollback")
    ok(p)
    assert "hunter2" not in out(p) and "newer-one" not in out(p)
    assert target.read_text() == NETRC
    assert mode(target) == 0o600
    # and forward again, with the config's source unreadable: the sealed value serves
    os.rename(sysenv.work / "netrc.age", sysenv.work / "gone.age")
    p = sysenv.run("rollback", "-1")
    ok(p)
    assert target.read_text() == newer


def _other_recipient(sysenv) -> str:
    """A second identity (made by the real age-keygen, not the configured one); its recipient."""
    other = sysenv.home / "other.txt"
    subprocess.run(["age-keygen", "-o", str(other)], capture_output=True, check=True)
    return subprocess.run(
        ["age-keygen", "-y", str(other)], capture_output=True, text=True, check=True
    ).stdout.strip()


WRONG = (
    "cannot decrypt netrc.age with the identity ~/.config/syslua/key.txt: "
    "no identity matched a recipient"
)
TWO = 'file { path = "~/.netrc", source = "netrc.age" }\nfile { path = "~/plain", content = "plain\\n" }\n'


# Not changes: the lock, and the state's own key, made when the first secret
# of a run is hashed (a plan makes it too).
MADE_BY_ANY_RUN = ("state", "state/lock", "state/secret.key")


def without_lock(snapshot: dict) -> dict:
    snapshot["root"] = {k: v for k, v in snapshot["root"].items() if k not in MADE_BY_ANY_RUN}
    return snapshot


def test_rollback_after_force_brings_back_the_kept_edit_of_a_secret_file(sysenv):
    netrc_world(sysenv, extra='file { path = "~/plain", content = "plain\\n" }\n')
    applied(sysenv)
    edit = "machine example.com login me password kept-edit\n"
    (sysenv.home / ".netrc").write_text(edit)
    (sysenv.home / "plain").write_text("plain edit\n")
    p = applied(sysenv, "--force")
    assert "`sys rollback` brings them back" in p.stdout
    ok(sysenv.run("rollback"))
    assert (sysenv.home / "plain").read_text() == "plain edit\n"  # as for any file
    assert (sysenv.home / ".netrc").read_text() == edit


def test_the_wrong_identity_is_refused_before_anything_is_written(sysenv):
    """A managed target whose source is now encrypted for another identity:
    the plan marks it `!`, the apply refuses before anything runs."""
    netrc_world(sysenv)
    applied(sysenv)
    encrypt(sysenv, _other_recipient(sysenv), "machine x password other-one\n", "netrc.age")
    config(sysenv, TWO)
    p = sysenv.run("plan")
    assert p.returncode == 1, out(p)
    assert "! file ~/.netrc" in p.stdout, out(p)
    assert WRONG in out(p)
    before = without_lock(all_files(sysenv))
    p = sysenv.run("apply")
    assert p.returncode == 1, out(p)
    assert WRONG in out(p)
    assert "hunter2" not in out(p) and "other-one" not in out(p)
    assert without_lock(all_files(sysenv)) == before
    assert not (sysenv.home / "plain").exists()


def test_the_wrong_identity_for_a_new_target_writes_nothing(sysenv):
    keygen(sysenv)
    encrypt(sysenv, _other_recipient(sysenv), NETRC, "netrc.age")
    config(sysenv, TWO)
    before = all_files(sysenv)
    p = sysenv.run("apply")
    assert p.returncode == 1, out(p)
    assert WRONG in out(p)
    after = all_files(sysenv)
    assert after["home"] == before["home"] and after["work"] == before["work"]
    assert history(sysenv) == []


def test_the_wrong_identity_for_a_new_target_is_marked_in_the_plan(sysenv):
    keygen(sysenv)
    encrypt(sysenv, _other_recipient(sysenv), NETRC, "netrc.age")
    config(sysenv, TWO)
    p = sysenv.run("plan")
    assert "! file ~/.netrc" in p.stdout, out(p)
    assert WRONG in out(p)


def test_a_missing_identity_is_named(sysenv):
    netrc_world(sysenv)
    applied(sysenv)
    key_path(sysenv).unlink()
    encrypt(sysenv, _other_recipient(sysenv), "machine x password other-one\n", "netrc.age")
    before = without_lock(all_files(sysenv))
    p = sysenv.run("plan")
    assert "! file ~/.netrc" in p.stdout, out(p)
    assert "~/.config/syslua/key.txt" in out(p)
    p = sysenv.run("apply")
    assert p.returncode == 1, out(p)
    assert "~/.config/syslua/key.txt" in out(p)
    assert "other-one" not in out(p)
    assert without_lock(all_files(sysenv)) == before


def _elsewhere(sysenv) -> tuple[Path, str]:
    """An identity made by `sys age keygen -o` outside the default place; its recipient."""
    where = sysenv.home / "keys" / "mine.txt"
    p = sysenv.run("age", "keygen", "-o", str(where))
    ok(p)
    return where, p.stdout.split("Public key: ")[1].strip()


def test_the_identity_variable(sysenv):
    where, recipient = _elsewhere(sysenv)
    encrypt(sysenv, recipient, NETRC, "netrc.age")
    config(sysenv, 'file { path = "~/.netrc", source = "netrc.age" }\n')
    before = all_files(sysenv)
    p = sysenv.run("apply")  # the default identity does not exist
    assert p.returncode == 1 and "~/.config/syslua/key.txt" in out(p), out(p)
    assert all_files(sysenv)["home"] == before["home"]
    applied(sysenv, SYSLUA_AGE_IDENTITY=str(where))
    assert (sysenv.home / ".netrc").read_text() == NETRC


@pytest.mark.parametrize(
    "body",
    [
        'file { path = "~/.netrc", source = "netrc.age", age_identity = "~/keys/mine.txt" }\n',
        'defaults { file = { age_identity = "~/keys/mine.txt" } }\n'
        'file { path = "~/.netrc", source = "netrc.age" }\n',
    ],
    ids=["property", "defaults"],
)
def test_the_age_identity_property(sysenv, body):
    _, recipient = _elsewhere(sysenv)
    encrypt(sysenv, recipient, NETRC, "netrc.age")
    config(sysenv, body)
    applied(sysenv)
    assert (sysenv.home / ".netrc").read_text() == NETRC
    assert mode(sysenv.home / ".netrc") == 0o600


# -- 2. sys.secret ------------------------------------------------------------------------
PASS_VALUE = "pass-value-7c1e"
CMD_VALUE = "command-value-4b2a"
FILE_VALUE = "file-value-93d0"
ENV_VALUE = "env-value-e8f5"


def script(sysenv, name: str, body: str) -> Path:
    """An executable shell script in the home's bin directory."""
    path = sysenv.home / "bin" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def no_value(p: subprocess.CompletedProcess[str], *values: str) -> None:
    for value in values:
        assert value not in out(p), f"{value!r} shown:\n{out(p)}"


def test_pass_gives_the_first_line_or_the_whole_entry(sysenv, pass_store):
    pass_store.insert("email/work", f"{PASS_VALUE}\nuser: me\n")
    config(
        sysenv,
        'file { path = "~/first", content = "pw=" .. sys.secret{ pass = "email/work" } .. "\\n" }\n'
        'file { path = "~/whole", content = sys.secret{ pass = "email/work", whole = true } }\n',
    )
    p = sysenv.run("plan", "--diff")
    ok(p)
    assert "+ file ~/first: will create" in p.stdout and "(secret file: 1 line changed)" in p.stdout
    no_value(p, PASS_VALUE, "user: me")
    p = applied(sysenv)  # no --impure
    no_value(p, PASS_VALUE)
    assert (sysenv.home / "first").read_text() == f"pw={PASS_VALUE}\n"
    assert (sysenv.home / "whole").read_text() == f"{PASS_VALUE}\nuser: me\n"
    p = sysenv.run("plan")
    ok(p)
    assert NOTHING in p.stdout


def test_command_file_and_env_sources(sysenv):
    tool = script(sysenv, "op", f'[ "$1 $2" = "read op://v/i/f" ] || exit 9\necho {CMD_VALUE}\n')
    token = sysenv.home / ".config" / "tokens" / "gh"
    token.parent.mkdir(parents=True)
    token.write_text(f"{FILE_VALUE}\nsecond line\n")
    config(
        sysenv,
        f'local c = sys.secret{{ command = {{ "{tool}", "read", "op://v/i/f" }} }}\n'
        'local f = sys.secret{ file = "~/.config/tokens/gh" }\n'
        'local e = sys.secret{ env = "GITHUB_TOKEN" }\n'
        'file { path = "~/all", content = c .. "|" .. f .. "|" .. e .. "\\n" }\n',
    )
    p = sys_(sysenv, "plan", "--diff", GITHUB_TOKEN=ENV_VALUE)
    ok(p)
    no_value(p, CMD_VALUE, FILE_VALUE, ENV_VALUE)
    p = applied(sysenv, GITHUB_TOKEN=ENV_VALUE)
    no_value(p, CMD_VALUE, FILE_VALUE, ENV_VALUE)
    assert (sysenv.home / "all").read_text() == f"{CMD_VALUE}|{FILE_VALUE}|{ENV_VALUE}\n"
    # the value changed where it comes from: an update, shown as a secret
    p = sys_(sysenv, "plan", "--diff", GITHUB_TOKEN="another-env-value")
    ok(p)
    assert "~ file ~/all: will update" in p.stdout, out(p)
    no_value(p, "another-env-value", ENV_VALUE)


CHILD_YAML = """\
ccm:
  resources:
    - file:
        name: ~/.child
        content: "token={{ Data.token }}\\n"
        owner: "{{ lookup('facts.user.name') }}"
        group: "{{ lookup('facts.user.group') }}"
        mode: "0600"
"""
USES = """\
local tok = sys.secret{ pass = "api/token" }
apply { name = "child.yaml", data = { token = tok } }
local f = require('syslua').f
file { path = "~/.f", content = f("tok={{t}}\\n", { t = tok }), mode = "0600" }
exec { name = "show", provider = "shell", command = "printf '%s\\\\n' \\"$TOKEN\\" > ~/.exec-out",
       environment = { TOKEN = tok } }
env { TOKEN = tok }
"""


def test_a_secret_in_templates_env_and_an_exec_environment(sysenv, pass_store):
    pass_store.insert("api/token", PASS_VALUE + "\n")
    sysenv.write("child.yaml", CHILD_YAML)
    config(sysenv, USES)
    p = sysenv.run("plan", "--diff")
    ok(p)
    assert "+ env TOKEN: (secret)" in p.stdout
    no_value(p, PASS_VALUE)
    p = applied(sysenv)
    no_value(p, PASS_VALUE)
    home, state = sysenv.home, sysenv.root / "state"
    assert (home / ".child").read_text() == f"token={PASS_VALUE}\n"
    assert (home / ".f").read_text() == f"tok={PASS_VALUE}\n"
    assert (home / ".exec-out").read_text() == f"{PASS_VALUE}\n"
    # the value only in the private env scripts, which env.sh loads
    for name in ("env.private.sh", "env.private.fish"):
        assert PASS_VALUE in (state / name).read_text()
        assert mode(state / name) == 0o600
    for name in ("env.sh", "env.fish"):
        assert PASS_VALUE not in (state / name).read_text()
    shell = subprocess.run(
        ["sh", "-c", f'. "{state / "env.sh"}"; printf "%s" "$TOKEN"'],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": os.environ["PATH"], "HOME": str(home)},
    )
    assert shell.stdout == PASS_VALUE
    # unchanged: nothing to do but the exec that runs every time
    p = sysenv.run("plan")
    ok(p)
    assert "Plan: 0 to create, 0 to update, 1 to run, 0 to remove" in p.stdout, out(p)
    # a new value in pass: every use is an update
    pass_store.insert("api/token", "a-new-pass-value\n")
    p = sysenv.run("plan", "--diff")
    ok(p)
    for line in ("~ file ~/.f: will update", "~ file ~/.child: will update", "~ env TOKEN"):
        assert line in p.stdout, out(p)
    no_value(p, PASS_VALUE, "a-new-pass-value")
    applied(sysenv)
    assert (home / ".f").read_text() == "tok=a-new-pass-value\n"
    assert "a-new-pass-value" in (state / "env.private.sh").read_text()
    # rollback writes the earlier value back from what the apply sealed: no pass needed
    empty = sysenv.home / "empty-bin"
    empty.mkdir()
    p = sys_(sysenv, "rollback", PATH=str(empty))
    ok(p)
    no_value(p, PASS_VALUE, "a-new-pass-value")
    assert (home / ".f").read_text() == f"tok={PASS_VALUE}\n"
    assert (home / ".child").read_text() == f"token={PASS_VALUE}\n"
    private = (state / "env.private.sh").read_text()
    assert PASS_VALUE in private and "a-new-pass-value" not in private


def test_pass_not_on_path_is_an_evaluation_error(sysenv, pass_store):
    pass_store.insert("email/work", PASS_VALUE + "\n")
    config(
        sysenv, 'local x = 1\nfile { path = "~/p", content = sys.secret{ pass = "email/work" } }\n'
    )
    empty = sysenv.home / "empty-bin"
    empty.mkdir()
    before = all_files(sysenv)
    for command in ("plan", "apply"):
        p = sys_(sysenv, command, PATH=str(empty))
        assert p.returncode == 2, out(p)
        assert "Error: sys.lua:4: sys.secret: the pass command is not on PATH" in p.stderr
        no_value(p, PASS_VALUE)
    assert without_lock(all_files(sysenv)) == without_lock(before)


def test_a_manager_failure_is_an_error_at_its_line_without_the_value(sysenv, pass_store):
    pass_store.insert("email/work", PASS_VALUE + "\n")
    tool = script(sysenv, "bw", f"echo {CMD_VALUE}\necho 'vault locked' >&2\nexit 3\n")
    config(
        sysenv,
        'local ok = sys.secret{ pass = "email/work" }\n'
        'file { path = "~/p", content = ok .. sys.secret{ pass = "email/home" } }\n',
    )
    before = all_files(sysenv)
    for command in ("plan", "apply"):
        p = sysenv.run(command)
        assert p.returncode == 2, out(p)
        assert "Error: sys.lua:4: sys.secret: pass email/home failed (exit 1): " in p.stderr, out(p)
        assert "email/home is not in the password store" in p.stderr
        no_value(p, PASS_VALUE)
    # a command manager failing after it printed the value: never shown either
    config(sysenv, f'file {{ path = "~/p", content = sys.secret{{ command = {{ "{tool}" }} }} }}\n')
    p = sysenv.run("apply")
    assert p.returncode == 2, out(p)
    assert f"Error: sys.lua:3: sys.secret: command {tool} failed (exit 3): vault locked" in p.stderr
    no_value(p, CMD_VALUE)
    assert not (sysenv.home / "p").exists()
    after = without_lock(all_files(sysenv))
    before = without_lock(before)
    after["work"].pop("sys.lua"), before["work"].pop("sys.lua")
    assert after == before


def test_each_source_is_read_once_per_evaluation(sysenv):
    counter = sysenv.home / "count"
    tool = script(sysenv, "op", f'echo run >> "{counter}"\necho {CMD_VALUE}\n')
    config(
        sysenv,
        f'local a = sys.secret{{ command = {{ "{tool}" }} }}\n'
        f'local b = sys.secret{{ command = {{ "{tool}" }} }}\n'
        'file { path = "~/a", content = a .. "\\n" }\n'
        'file { path = "~/b", content = b .. "\\n" }\n'
        "env { A = a, B = b }\n",
    )
    p = sysenv.run("plan")
    ok(p)
    assert counter.read_text() == "run\n"
    p = applied(sysenv)
    assert counter.read_text() == "run\nrun\n"
    assert (sysenv.home / "a").read_text() == (sysenv.home / "b").read_text() == CMD_VALUE + "\n"


def test_the_private_env_scripts_follow_the_config_rollback_and_destroy(sysenv):
    state = sysenv.root / "state"
    private = (state / "env.private.sh", state / "env.private.fish")
    sysenv.write("sys.lua", 'env { TOKEN = sys.secret{ env = "TOK" }, EDITOR = "vi" }\n')
    applied(sysenv, TOK=ENV_VALUE)
    assert all(ENV_VALUE in p.read_text() and mode(p) == 0o600 for p in private)
    assert "TOKEN" not in (state / "env.sh").read_text()
    sysenv.write("sys.lua", 'env { EDITOR = "vi" }\n')
    applied(sysenv)
    assert not any(p.exists() for p in private)
    # back from the sealed value: the variable is not in the environment now
    p = sysenv.run("rollback")
    ok(p)
    no_value(p, ENV_VALUE)
    assert all(ENV_VALUE in p.read_text() and mode(p) == 0o600 for p in private)
    ok(sysenv.run("destroy", "--yes"))
    assert not any(p.exists() for p in private)
