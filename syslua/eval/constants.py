"""Priorities and declaration keys: the one place they are defined.

Both sides of evaluation need them: the Lua prelude wraps values in
`lib.mkForce` & co. and finds each declaration's key, and Python validates,
merges and reads CCM YAML with the same numbers and names. `eval/lua.py`
hands `lua_constants()` to the prelude once per runtime, so nothing here is
repeated as a literal in `lua/prelude.lua`; the declarations and their keys
come from the registry of kinds (`syslua/registry.py`). The module lives in `eval`, the
lowest layer that needs it; `manifest` imports it from here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from syslua import registry

# Lower wins (SPEC section 3). Plain is 900, not the seed's 1000, so that a
# plain value beats lib.mkDefault instead of conflicting with it.
FORCE: Final = 50  # lib.mkForce
BEFORE: Final = 500  # lib.mkBefore
PLAIN: Final = 900  # a value without a wrapper
DEFAULT: Final = 1000  # lib.mkDefault
FROM_DEFAULTS: Final = 1200  # a value filled in by defaults{}: weaker than lib.mkDefault
AFTER: Final = 1500  # lib.mkAfter

PRIORITIES: Final[dict[str, int]] = {
    "force": FORCE,
    "before": BEFORE,
    "plain": PLAIN,
    "default": DEFAULT,
    "from_defaults": FROM_DEFAULTS,
    "after": AFTER,
}


class _Keys(Mapping[str, str]):
    """Declaration kind -> the property that names it: declarations of one
    kind with the same key are one item ("kind#key"). Read from the registry
    of kinds at each use (a kind registered later is in it too), with the
    `defaults {}` declaration's own."""

    def _all(self) -> dict[str, str]:
        return {**registry.keys(), "defaults": "type"}

    def __getitem__(self, kind: str) -> str:
        return self._all()[kind]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


KEYS: Final[Mapping[str, str]] = _Keys()


def lua_constants() -> dict[str, Any]:
    """What the prelude receives as `cfg.constants`: the priorities, the key
    of each declaration, and the declarations a config calls as globals
    (`registry.GLOBAL`, or `registry.VARIABLES` for `env {}`)."""
    return {
        "priorities": PRIORITIES,
        "keys": dict(KEYS),
        "declarations": registry.lua_declarations(),
    }
