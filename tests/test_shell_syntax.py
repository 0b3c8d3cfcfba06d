"""Shell syntax in a command run without a shell (the posix exec provider) is a configuration error.

`echo hi > ~/out` with `provider = "posix"` would run `echo` with `>` and
`~/out` as arguments, succeed and do nothing it seemed to say. Such a
command (or guard, or undo) is refused where declarations are checked, so
`sys plan` and `sys apply` stop with exit 2 before anything runs.
"""

from __future__ import annotations

import pytest
from conftest import HEADER, ok, out, q, tree

from syslua.manifest import shell_syntax

# -- the lexer, as data: command -> the first piece of shell syntax in it --------
FOUND = [
    ("echo hi > /tmp/x", ">"),
    ("echo hi >> /tmp/x", ">>"),
    ("sort < in.txt", "<"),
    ("cat a | grep b", "|"),
    ("a || b", "||"),
    ("make && make install", "&&"),
    ("sleep 10 &", "&"),
    ("a; b", ";"),
    ("a;b", ";"),  # operators need no blanks around them
    ("echo hi>out", ">"),
    ("cmd 2>&1", "2>&1"),
    ("cmd 2>/dev/null", "2>"),
    ("echo oops 1>&2", "1>&2"),
    ("echo ~/notes.txt", "~/notes.txt"),
    ("ls ~", "~"),
    ("echo $HOME", "$HOME"),
    ("echo ${HOME}/x", "${HOME}/x"),
    ("echo $(date)", "$(date)"),
    ("test $? -eq 0", "$?"),
    ("echo a > b | c", ">"),  # the first one
    ("echo 'quoted' ; x", ";"),
]
CLEAN = [
    "echo 'a|b' \"c;d\" e\\&f",  # quoted operators are characters
    "printf '%s\\n' '$HOME' \"~/x\"",
    "echo a~/b x$HOME",  # only a word that starts with ~/ or $ expands
    "echo $ 5",  # a lone $ is literal
    "echo $${build:0123abcd:bin}/tool $${env:HOME}",  # syslua's placeholders
    "$${build:@greet:out}/bin/greet --loud",
    "echo $$${literal}",
    "python3 -c print(1)",  # parentheses, globs and # are left alone
    "ls *.txt #1",
    "git log --format=%H -1",
    "sh -c 'echo cannot reach >&2; exit 3'",
    'echo "it\'s fine" \'say "hi"\'',
]


@pytest.mark.parametrize("command,token", FOUND)
def test_shell_syntax_is_found(command, token):
    assert shell_syntax.find(command) == token


@pytest.mark.parametrize("command", CLEAN)
def test_quoted_and_plain_commands_are_clean(command):
    assert shell_syntax.find(command) is None


def test_a_long_word_is_shortened_in_the_message():
    found = shell_syntax.find("echo $" + "X" * 100)
    assert found is not None and found.endswith("...") and len(found) == 40


# -- through the command line -----------------------------------------------------
LINE = HEADER.count("\n") + 1  # the declaration under test is on the line after HEADER


def witness(sysenv) -> str:
    """An exec whose onlyif guard would run during planning: it leaves a mark if anything ran."""
    return f'exec {{ name = "witness", command = "true", onlyif = {q("touch " + str(sysenv.work / "ran"))} }}\n'


@pytest.mark.parametrize(
    "decl,message",
    [
        (
            'exec { name = "hello", command = "echo hi > /tmp/x" }',
            "exec hello: command uses shell syntax ('>'); set provider = \"shell\"",
        ),
        (
            'exec { name = "echo hi; echo there" }',  # the name is the command
            "command uses shell syntax (';'); set provider = \"shell\"",
        ),
        (
            'exec { name = "x", command = "true", unless = "grep -q x f | head" }',
            "exec x: unless uses shell syntax ('|'); set provider = \"shell\"",
        ),
        (
            'exec { name = "x", command = "true", onlyif = "test -f ~/.done" }',
            "exec x: onlyif uses shell syntax ('~/.done'); set provider = \"shell\"",
        ),
        (
            'exec { name = "x", command = "true", undo = "rm -f $HOME/x" }',
            "exec x: undo uses shell syntax ('$HOME/x'); set provider = \"shell\"",
        ),
        (
            'exec { name = "x", command = "make 2>&1", provider = "posix" }',
            "exec x: command uses shell syntax ('2>&1'); set provider = \"shell\"",
        ),
    ],
)
@pytest.mark.parametrize("verb", ["plan", "apply"])
def test_shell_syntax_with_posix_is_a_config_error(sysenv, decl, message, verb):
    sysenv.write("sys.lua", HEADER + decl + "\n" + witness(sysenv), dedent=False)
    home, work = tree(sysenv.home), tree(sysenv.work)
    p = sysenv.run(verb)
    assert p.returncode == 2, out(p)
    assert f"Error: sys.lua:{LINE}: " in p.stderr and message in p.stderr, p.stderr
    assert 'provider = "shell" runs the commands with /bin/sh -c' in p.stderr
    assert "Traceback" not in p.stderr
    # nothing ran (not even the other exec's guard) and nothing changed
    assert tree(sysenv.home) == home and tree(sysenv.work) == work
    assert not (sysenv.work / "ran").exists()
    assert not (sysenv.root / "state" / "snapshots").exists() or not any(
        (sysenv.root / "state" / "snapshots").iterdir()
    )


def test_the_same_commands_run_with_the_shell_provider(sysenv):
    target = sysenv.home / "hello.txt"
    sysenv.write(
        "sys.lua",
        HEADER
        + 'exec { name = "hello", command = "echo hi > ~/hello.txt", provider = "shell",\n'
        + '       unless = "test -f ~/hello.txt && grep -q hi ~/hello.txt", undo = "rm -f $HOME/hello.txt" }\n',
        dedent=False,
    )
    p = sysenv.run("apply")
    ok(p)
    assert target.read_text() == "hi\n"


def test_a_shell_provider_from_defaults_counts(sysenv):
    sysenv.write(
        "sys.lua",
        HEADER + 'defaults { exec = { provider = "shell" } }\n'
        'exec { name = "hello", command = "echo hi > ~/hello.txt" }\n',
        dedent=False,
    )
    p = sysenv.run("apply")
    ok(p)
    assert (sysenv.home / "hello.txt").read_text() == "hi\n"


def test_quoted_characters_pass_through_posix(sysenv):
    sysenv.write(
        "sys.lua",
        HEADER
        + "exec { name = \"quoted\", command = [[printf '%s,' 'a > b' \"c|d\" '$HOME' e\\;f]] }\n",
        dedent=False,
    )
    p = sysenv.run("apply", "--json", "-v")
    assert p.returncode == 0, out(p)
    assert '"stdout_tail": "a > b,c|d,$HOME,e;f,"' in p.stdout


def test_placeholders_are_not_shell_syntax(sysenv):
    # $${build:...} and $${env:...} are syslua's, resolved before the command runs
    sysenv.write(
        "sys.lua",
        HEADER
        + """\
local b = sys.build { id = "tool", create = function(inputs, ctx)
  ctx:exec { bin = "/bin/mkdir", args = { "-p", ctx.out .. "/bin" } }
end }
exec { name = "uses-build", command = "ls " .. b.outputs.out .. "/bin" }
exec { name = "uses-env", command = "printf %s $${env:HOME}" }
""",
        dedent=False,
    )
    p = sysenv.run("apply", "--json")
    assert p.returncode == 0, out(p)
    assert f'"stdout_tail": "{sysenv.home}"' in p.stdout


def test_the_check_sees_rendered_templates(sysenv):
    # a YAML manifest's command is checked after its lookups are rendered:
    # `${ lookup(...) }` is a template, not a shell variable, and what it
    # renders to is checked like anything written by hand
    sysenv.write(
        "ok.yaml",
        """\
        data:
          word: hello
        ccm:
          resources:
            - exec:
                name: greet
                command: "echo ${ lookup('data.word') }"
        """,
    )
    p = sysenv.run("plan", "ok.yaml")
    assert p.returncode == 0, out(p)
    sysenv.write(
        "bad.yaml",
        """\
        data:
          target: "/tmp/out; rm -rf x"
        ccm:
          resources:
            - exec:
                name: greet
                command: "echo {{ lookup('data.target') }}"
        """,
    )
    p = sysenv.run("plan", "bad.yaml")
    assert p.returncode == 2, out(p)
    assert "bad.yaml:" in p.stderr
    assert "exec greet: command uses shell syntax (';'); set provider = \"shell\"" in p.stderr
