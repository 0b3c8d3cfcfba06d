"""Imports point one way: a module imports only from its own layer or a layer below.

Layers, top to bottom (docs/architecture.md, "Import direction"):

| layer        | modules                                                         |
|--------------|-----------------------------------------------------------------|
| entry        | `syslua/__init__.py`, `syslua/__main__.py`, `syslua/quick.py`   |
| cli          | `syslua/cli`                                                    |
| execute      | `syslua/execute`                                                |
| plan         | `syslua/plan`                                                   |
| resources    | `syslua/resources`                                              |
| fetch/unpack | `syslua/fetch.py`, `syslua/unpack.py`                           |
| state        | `syslua/state`                                                  |
| manifest     | `syslua/manifest`                                               |
| eval         | `syslua/eval`                                                   |
| bottom       | `syslua/errors.py`, `syslua/age.py`, `syslua/paths.py`, `syslua/fsutil.py`, `syslua/secrets.py`, `syslua/record.py`, `syslua/shellrc.py`, `syslua/registry.py` |

`fetch.py` and `unpack.py` are the download and unpack providers of the
package and build types: a layer of their own directly below `resources`,
so only resource types (and what is above them) use them, and they cannot
import a resource type themselves (they raise `errors.ResourceError`, which
`resources.base` re-exports). Today they import only bottom modules.

Every import counts: module-level ones, the lazy ones inside functions (which
keep `sys --help` fast), those under `if TYPE_CHECKING:`, and
`importlib.import_module("syslua...")` with a literal name. A type-only import
is still a dependency: it is how a lower layer's interface is written, and an
upward one means that interface is described in terms of a higher layer.
Imports by a computed name are not seen. There is one: the registry of kinds
(`syslua/registry.py`, at the bottom so that every layer may ask it) imports
each kind's module by name on first use; `test_the_registry_names_only_kind_modules`
checks that it names nothing but modules of the resources layer, and a
kind's module is the one place where a kind's schema (read by merge) and
its behaviour (run by the engine) live together.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parent.parent

# (layer, module prefixes), top to bottom. A prefix covers the module itself
# and everything under it, except `syslua`, which is only the package's
# own `__init__.py`.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("entry", ("syslua", "syslua.__main__", "syslua.quick")),
    ("cli", ("syslua.cli",)),
    ("execute", ("syslua.execute",)),
    # `sys import`: reads another manager's repository, writes Lua text.
    ("importers", ("syslua.importers",)),
    ("plan", ("syslua.plan",)),
    ("resources", ("syslua.resources",)),
    ("fetch/unpack", ("syslua.fetch", "syslua.unpack")),
    ("state", ("syslua.state",)),
    ("manifest", ("syslua.manifest",)),
    ("eval", ("syslua.eval",)),
    (
        "bottom",
        (
            "syslua.errors",
            "syslua.age",
            "syslua.paths",
            "syslua.fsutil",
            "syslua.safe_fs",
            "syslua.secrets",
            "syslua.record",
            "syslua.shellrc",
            "syslua.registry",
        ),
    ),
]

# Known upward imports, as (file, imported module), tolerated until the code
# that makes them is refactored. Empty it as they go; an entry that no longer
# matches an import fails `test_known_violations_are_still_real`.
KNOWN_VIOLATIONS: frozenset[tuple[str, str]] = frozenset()


class Import(NamedTuple):
    file: str  # relative to the repository, e.g. syslua/eval/lua.py
    line: int
    module: str  # absolute, e.g. syslua.cli.output


class Violation(NamedTuple):
    imp: Import
    layer: str
    target_layer: str

    def __str__(self) -> str:
        return (
            f"{self.imp.file}:{self.imp.line} imports {self.imp.module} "
            f"(layer {self.layer} -> higher layer {self.target_layer})"
        )


def layer_of(module: str) -> str | None:
    for layer, prefixes in LAYERS:
        for prefix in prefixes:
            if module == prefix or (prefix != "syslua" and module.startswith(prefix + ".")):
                return layer
    return None


def rank(layer: str) -> int:
    """0 for the top layer; a larger number is a lower layer."""
    return [name for name, _ in LAYERS].index(layer)


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(root: Path, dotted: str) -> bool:
    base = root.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def imports_of(root: Path, path: Path) -> list[Import]:
    """Every syslua import in one file, wherever it is (functions, TYPE_CHECKING blocks)."""
    rel = path.relative_to(root).as_posix()
    name = module_name(root, path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[Import] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=rel)):
        if isinstance(node, ast.Import):
            found += [Import(rel, node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                source = f"{base}.{node.module}" if node.module else base
            else:
                source = node.module or ""
            # `from syslua.state import journal` imports the module syslua.state.journal.
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                found.append(Import(rel, node.lineno, sub if _is_module(root, sub) else source))
        elif (
            isinstance(node, ast.Call)
            and (getattr(node.func, "attr", None) or getattr(node.func, "id", None))
            == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append(Import(rel, node.lineno, node.args[0].value))
    return [i for i in found if i.module == "syslua" or i.module.startswith("syslua.")]


def modules(root: Path) -> list[Path]:
    return sorted((root / "syslua").rglob("*.py"))


def violations(root: Path) -> list[Violation]:
    out: list[Violation] = []
    for path in modules(root):
        layer = layer_of(module_name(root, path))
        assert layer is not None, f"{path.relative_to(root)} is in no layer: add it to LAYERS"
        for imp in imports_of(root, path):
            target = layer_of(imp.module)
            assert target is not None, (
                f"{imp.file}:{imp.line} imports {imp.module}, which is in no layer"
            )
            if rank(target) < rank(layer):
                out.append(Violation(imp, layer, target))
    return sorted(set(out))


def test_every_module_is_in_a_layer() -> None:
    unplaced = [
        str(p.relative_to(ROOT)) for p in modules(ROOT) if layer_of(module_name(ROOT, p)) is None
    ]
    assert not unplaced, "modules in no layer (add them to LAYERS): " + ", ".join(unplaced)


def test_imports_point_down() -> None:
    found = [v for v in violations(ROOT) if (v.imp.file, v.imp.module) not in KNOWN_VIOLATIONS]
    assert not found, "imports from a higher layer:\n" + "\n".join(map(str, found))


def test_the_registry_names_only_kind_modules() -> None:
    from syslua import registry

    for entry in registry.SHIPPED:
        assert entry.module is not None and layer_of(entry.module) == "resources", entry
        assert _is_module(ROOT, entry.module), entry


def test_known_violations_are_still_real() -> None:
    real = {(v.imp.file, v.imp.module) for v in violations(ROOT)}
    stale = sorted(KNOWN_VIOLATIONS - real)
    assert not stale, f"fixed, remove from KNOWN_VIOLATIONS: {stale}"


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def fake(tmp_path: Path) -> Path:
    """A tiny syslua tree with one module per layer, none importing anything."""
    for rel in (
        "syslua/__init__.py",
        "syslua/errors.py",
        "syslua/fetch.py",
        "syslua/eval/__init__.py",
        "syslua/eval/lua.py",
        "syslua/manifest/__init__.py",
        "syslua/state/__init__.py",
        "syslua/state/journal.py",
        "syslua/plan/__init__.py",
        "syslua/plan/dag.py",
        "syslua/resources/__init__.py",
        "syslua/execute/__init__.py",
        "syslua/cli/__init__.py",
        "syslua/cli/output.py",
    ):
        write(tmp_path, rel, "")
    return tmp_path


def test_every_kind_of_upward_import_is_reported(fake: Path) -> None:
    write(
        fake,
        "syslua/eval/lua.py",
        "from __future__ import annotations\n"
        "from typing import TYPE_CHECKING\n"
        "import importlib\n"
        "from syslua.errors import x\n"  # down: fine
        "from syslua.eval import lua\n"  # own layer: fine
        "if TYPE_CHECKING:\n"
        "    from syslua.cli.output import Terminal\n"  # line 7
        "def f():\n"
        "    from ..plan import dag\n"  # line 9, relative
        "    import syslua.state.journal\n"  # line 10
        "    from syslua import fetch\n"  # line 11: the module syslua.fetch
        "    return importlib.import_module('syslua.execute')\n",  # line 12
    )
    assert [str(v) for v in violations(fake)] == [
        "syslua/eval/lua.py:7 imports syslua.cli.output (layer eval -> higher layer cli)",
        "syslua/eval/lua.py:9 imports syslua.plan.dag (layer eval -> higher layer plan)",
        "syslua/eval/lua.py:10 imports syslua.state.journal (layer eval -> higher layer state)",
        "syslua/eval/lua.py:11 imports syslua.fetch (layer eval -> higher layer fetch/unpack)",
        "syslua/eval/lua.py:12 imports syslua.execute (layer eval -> higher layer execute)",
    ]


def test_fetch_may_not_import_a_resource_type(fake: Path) -> None:
    write(fake, "syslua/fetch.py", "from syslua.resources import base\n")
    assert [str(v) for v in violations(fake)] == [
        "syslua/fetch.py:1 imports syslua.resources (layer fetch/unpack -> higher layer resources)",
    ]


def test_a_name_from_the_package_itself_is_the_entry_layer(fake: Path) -> None:
    write(fake, "syslua/errors.py", "from syslua import __version__\n")
    assert [str(v) for v in violations(fake)] == [
        "syslua/errors.py:1 imports syslua (layer bottom -> higher layer entry)",
    ]
