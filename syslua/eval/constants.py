"""Priorities and declaration keys: the one place they are defined.

Both sides of evaluation need them: the Lua prelude wraps values in
`lib.mkForce` & co. and finds each declaration's key, and Python validates,
merges and reads CCM YAML with the same numbers and names. `eval/lua.py`
hands `LUA_CONSTANTS` to the prelude once per runtime, so nothing here is
repeated as a literal in `lua/prelude.lua`. The module lives in `eval`, the
lowest layer that needs it; `manifest` imports it from here.
"""

from __future__ import annotations

from typing import Any, Final

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

# The property that names each declaration: declarations of one type with
# the same key are one item ("type#key").
KEYS: Final[dict[str, str]] = {
    "file": "path",
    "exec": "name",
    "apply": "name",
    "package": "name",
    "os_package": "name",
    "user": "name",
    "archive": "name",  # where the archive file is saved
    "env": "name",  # env { NAME = value } records { name = NAME, value = value }
    "defaults": "type",  # defaults { file = {...} } records { type = "file", props = {...} }
    "build": "id",  # sys.build { id = ... }
    "bind": "id",  # sys.bind { id = ... }
}

# What the prelude receives as `cfg.constants`.
LUA_CONSTANTS: Final[dict[str, Any]] = {"priorities": PRIORITIES, "keys": KEYS}
