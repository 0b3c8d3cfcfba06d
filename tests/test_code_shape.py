"""The shape of the code, as issue 20 set it: short functions, a small kind core, small capabilities.

- No function in `syslua/` is longer than 100 lines (an orchestrator that
  grows past a screen is two steps: name them).
- The core every kind implements (`resources.kind.Kind`) has at most 8
  members, and each capability at most 6.
- Every shipped kind implements the core with the schema its registry entry
  names, so the registry's light data (the key, read before any kind is
  imported) agrees with the kind's own schema.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from syslua import registry
from syslua.resources import get
from syslua.resources import kind as kinds

ROOT = Path(__file__).resolve().parent.parent
LONGEST = 100  # lines of one function, its signature and docstring included
CORE_MAX, CAPABILITY_MAX = 8, 6


def functions(root: Path) -> list[tuple[int, str]]:
    """(length in lines, `path:line name`) of every function under `root`."""
    out = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                length = node.end_lineno - node.lineno + 1
                out.append((length, f"{path.relative_to(root)}:{node.lineno} {node.name}"))
    return out


def test_no_function_is_longer_than_a_hundred_lines() -> None:
    long = sorted((f for f in functions(ROOT / "syslua") if f[0] > LONGEST), reverse=True)
    assert not long, f"functions longer than {LONGEST} lines:\n" + "\n".join(
        f"  {n} lines: {where}" for n, where in long
    )


def test_the_length_check_sees_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(LONGEST))
    (tmp_path / "m.py").write_text(f"def long():\n{body}\n\ndef short():\n    pass\n")
    found = {where.split()[-1]: n for n, where in functions(tmp_path)}
    assert found == {"long": LONGEST + 1, "short": 2}


def members(protocol: type) -> set[str]:
    """What a protocol declares: its methods and its annotated attributes."""
    own = {
        name
        for name, value in vars(protocol).items()
        if inspect.isfunction(value) and not name.startswith("_")
    }
    return own | set(getattr(protocol, "__annotations__", {}))


CAPABILITIES = [
    kinds.Journaled,
    kinds.Removable,
    kinds.Undoes,
    kinds.Recorded,
    kinds.Edited,
    kinds.TakesBack,
    kinds.Drifts,
    kinds.Container,
    kinds.Ordered,
    kinds.Explained,
    kinds.Irreversible,
    kinds.Outputs,
    kinds.Scheduling,
]


def test_the_core_is_small() -> None:
    core = members(kinds.Kind)
    assert core == {"name", "schema", "label", "status", "decide", "apply", "verify"}
    assert len(core) <= CORE_MAX


@pytest.mark.parametrize("capability", CAPABILITIES, ids=lambda c: c.__name__)
def test_each_capability_is_small(capability: type) -> None:
    assert 1 <= len(members(capability)) <= CAPABILITY_MAX, sorted(members(capability))


@pytest.mark.parametrize("entry", registry.SHIPPED, ids=lambda e: e.name)
def test_each_shipped_kind_is_what_its_registry_entry_says(entry: registry.Entry) -> None:
    kind = get(entry.name)
    assert kinds.Kind in type(kind).__mro__  # it subclasses the core: mypy checks it
    assert kind.name == entry.name
    assert kind.schema.name == entry.name and kind.schema.key == entry.key
