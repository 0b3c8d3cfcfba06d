"""A sandboxed evaluator for the Expr language used in CCM templates.

CCM (choria-io/ccm) evaluates `{{ expr }}` and `${ expr }` with the Go
library expr-lang/expr. This package reads the same language with a small
recursive-descent parser and walks the tree it builds; no Python code is
generated or run (no `eval`, no `exec`, no attribute access on Python
objects), so an expression can only read the values it is given and call the
functions listed in `FUNCTIONS`.

Pieces, in order:

1. `lexer.py`: the text as a list of tokens.
2. `parser.py`: tokens to a tree of tuples `(kind, ...)`, then a check that
   every name is a known variable and every call a known function, before
   anything runs (as Expr compiles before it runs), so a typo is an error
   even in a branch that is not taken.
3. `evaluator.py`: the tree against an `Env` (facts, data, environment, and
   where `readFile` reads).
4. `functions.py`: the built-in functions; `lookup.py`: `lookup()`'s GJSON
   paths; `values.py`: the errors, the `Env`, and how values are compared
   and written.

Values are plain Python: None, bool, int, float, str, list, dict, and
`datetime` for `now()`. Errors are `ExprError` with a message that says what
went wrong; `template.py` names the expression and the caller the file:line.
This package is imported only where a text has a placeholder (`template.py`
imports it on first use): a Lua-only config never loads it.
"""

from __future__ import annotations

from syslua.eval.expr.evaluator import evaluate
from syslua.eval.expr.functions import FUNCTIONS, PREDICATES, REJECTED
from syslua.eval.expr.lexer import Token, tokens
from syslua.eval.expr.lookup import ROOTS_HELP, gjson, lookup
from syslua.eval.expr.parser import names, parse
from syslua.eval.expr.values import VARIABLES, Env, ExprError, text

__all__ = [
    "FUNCTIONS",
    "PREDICATES",
    "REJECTED",
    "ROOTS_HELP",
    "VARIABLES",
    "Env",
    "ExprError",
    "Token",
    "evaluate",
    "gjson",
    "lookup",
    "names",
    "parse",
    "text",
    "tokens",
]
