"""Priorities and declaration keys have one source, `syslua/eval/constants.py`.

The Lua prelude receives them from the evaluator instead of writing its own
literals; these tests evaluate real Lua and check that what comes out carries
the Python numbers and names.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from syslua.errors import ConfigError
from syslua.eval import constants
from syslua.eval.lua import RawDeclaration, run_config
from syslua.manifest.merge import ConflictError
from syslua.manifest.resolve import Options, resolve
from syslua.manifest.schema import Context
from syslua.manifest.validate import Decl, Origin, validate
from syslua.paths import shipped_dirs

OWNED = 'owner = "u", group = "g"'


def raw(sysenv: Any, text: str) -> list[RawDeclaration]:
    path = sysenv.write("sys.lua", text)
    return run_config(path, core={}, facts={}, data={}, root_dir=str(sysenv.work)).declarations


def decls(sysenv: Any, text: str) -> list[Decl]:
    ctx = Context(manifest_dir=str(sysenv.work))
    out = [validate(r, ctx, Origin()) for r in raw(sysenv, text)]
    return [d for d in out if d is not None]


def test_each_wrapper_gives_its_python_priority(sysenv):
    (d,) = decls(
        sysenv,
        f"""
        file {{ path = "/each", {OWNED}, mode = lib.mkForce("0600"), force = lib.mkBefore(true),
               ensure = lib.mkDefault("present"), content = lib.mkAfter("x"), provider = lib.mkOrder(7, "posix") }}
        """,
    )
    assert {name: prio for name, (prio, _) in d.props.items()} == {
        "owner": constants.PLAIN,
        "group": constants.PLAIN,
        "mode": constants.FORCE,
        "force": constants.BEFORE,
        "ensure": constants.DEFAULT,
        "body": constants.AFTER,
        "provider": 7,
    }


def test_whole_declaration_and_defaults_priorities(sysenv):
    forced, late, defaulted = decls(
        sysenv,
        """
        defaults { file = { owner = "u", group = "g" } }
        file(lib.mkForce { path = "/forced", mode = "0600" })
        lib.mkAfter(file { path = "/late", mode = "0600" })
        file { path = "/defaulted", mode = "0600" }
        """,
    )
    assert forced.props["mode"][0] == constants.FORCE
    assert late.props["mode"][0] == constants.AFTER
    assert defaulted.props["mode"][0] == constants.PLAIN
    # values from defaults{} keep their own priority, whatever wraps the declaration
    for d in (forced, late, defaulted):
        assert d.props["owner"][0] == constants.FROM_DEFAULTS


@pytest.mark.parametrize(
    ("name", "declared"),
    [
        ("force", 'mode = lib.mkForce("0600")'),
        ("before", 'mode = lib.mkBefore("0600")'),
        ("plain", 'mode = "0600"'),
        ("default", 'mode = lib.mkDefault("0600")'),
        ("after", 'mode = lib.mkAfter("0600")'),
        ("from_defaults", ""),  # mode comes from defaults{}
    ],
)
def test_the_merged_result_meets_lib_mkorder_at_the_python_priority(sysenv, name, declared):
    """A wrapper and lib.mkOrder(<the Python number>) are equals: merging them conflicts at that priority."""
    prio = constants.PRIORITIES[name]
    path = sysenv.write(
        "sys.lua",
        f"""
        defaults {{ file = {{ mode = "0600" }} }}
        file {{ path = "/a", {OWNED}, {declared} }}
        file {{ path = "/a", mode = lib.mkOrder({prio}, "0640") }}
        """,
    )
    with pytest.raises(ConflictError) as info:
        resolve(path, Options())
    assert f"Conflicting values for file#/a.mode at priority {prio}:" in info.value.render()
    # one less wins outright
    sysenv.write("sys.lua", path.read_text().replace(f"mkOrder({prio},", f"mkOrder({prio - 1},"))
    item = resolve(path, Options()).get("file#/a")
    assert item is not None and item.get("mode") == "0640"


@pytest.mark.parametrize("type_", ["file", "exec", "apply", "user", "package"])
def test_declarations_are_keyed_by_the_python_key_names(sysenv, type_):
    key = constants.KEYS[type_]
    path = sysenv.write("sys.lua", f"{type_} {{ }}\n")
    with pytest.raises(ConfigError) as info:
        resolve(path, Options())
    assert f"{type_}: missing required property `{key}`" in info.value.render()


def test_env_defaults_and_primitives_record_their_python_key_names(sysenv):
    records = raw(
        sysenv,
        """
        env { EDITOR = "vi" }
        defaults { exec = { timeout = "5s" } }
        sys.build { id = "b", create = function(inputs, ctx) end }
        """,
    )
    env, defaults, build = records
    assert env.props == {constants.KEYS["env"]: "EDITOR", "value": "vi"}
    assert defaults.props[constants.KEYS["defaults"]] == "exec"
    assert build.props[constants.KEYS["build"]] == "b"


def test_the_prelude_writes_no_priority_of_its_own():
    prelude = Path(shipped_dirs()[0], "prelude.lua").read_text()
    code = "\n".join(line.split("--", 1)[0] for line in prelude.splitlines())
    literals = {str(p) for p in constants.PRIORITIES.values()}
    found = sorted(set(re.findall(r"(?<![\w.])\d+(?![\w.])", code)) & literals)
    assert not found, (
        f"lua/prelude.lua writes priorities {found}: read them from cfg.constants instead"
    )
