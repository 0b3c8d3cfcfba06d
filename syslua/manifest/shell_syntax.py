"""Shell syntax in a command that no shell will read (the `posix` exec provider).

With `provider = "posix"` a command is split into words with shell quoting
rules and run directly, so `echo hi > ~/out` passes `>` and `~/out` to
`echo` as arguments: the command succeeds and does nothing it seemed to
say. `find` reports the first piece of shell syntax in such a command, so
that it becomes a configuration error instead of a silent surprise.

Words and operators are recognised as a POSIX shell's lexer recognises them
(token recognition, XCU 2.3): quotes and backslashes protect what they
cover, an operator is the longest run of operator characters that forms
one, whether or not spaces surround it (`a;b` contains `;`), and digits
written right before a redirection are part of it (`2>&1`). Reported:

- every control and redirection operator (`|`, `||`, `&&`, `;`, `&`, `<`,
  `>`, `>>`, `2>&1`, ...);
- an unquoted word that starts with a parameter or command substitution
  (`$HOME`, `${X}`, `$(date)`, `$?`) or with a tilde (`~`, `~/x`).

syslua's own placeholders (`$${build:...}`, `$${env:NAME}`, `$$${`) are
not shell syntax: they are resolved before the command runs. Parentheses,
globs and `#` are left alone: without a shell they are ordinary characters,
and they are common in arguments (`python3 -c print(1)` is rare, but a
regex or a URL is not).
"""

from __future__ import annotations

# Longest first, so that the first match is the longest operator (XCU 2.3 rule 2).
_OPERATORS = (
    "<<-",
    "&&",
    "||",
    ";;",
    "<<",
    ">>",
    "<&",
    ">&",
    "<>",
    ">|",
    "|",
    "&",
    ";",
    "<",
    ">",
)
_OPERATOR_CHARS = frozenset("|&;<>")
_BLANKS = frozenset(" \t\n")
# What may follow `$` to make an expansion: a name, `{`, `(`, a digit or a
# special parameter. A `$` followed by anything else is a literal `$`.
_EXPANSION_START = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789{(?$!#*@-"
)
_PLACEHOLDERS = ("$${", "$$${")  # syslua's, resolved before the command runs
_SHOWN = 40  # characters of an offending word shown in the message


def find(command: str) -> str | None:
    """The first piece of shell syntax in `command` (an operator such as
    `>` or `2>&1`, or a word such as `$HOME` or `~/x`), or None."""
    i, n = 0, len(command)
    word = ""  # the unquoted characters of the current word so far
    in_word = False  # a word has begun (quoted characters begin one too)
    quoted = False  # part of the current word was quoted
    while i < n:
        c = command[i]
        if c in _BLANKS:
            word, in_word, quoted = "", False, False
            i += 1
        elif c == "\\":
            in_word = quoted = True
            i += 2
        elif c == "'":
            end = command.find("'", i + 1)
            in_word = quoted = True
            i = n if end < 0 else end + 1
        elif c == '"':
            i = _after_double_quotes(command, i + 1)
            in_word = quoted = True
        elif c in _OPERATOR_CHARS:
            op = next(o for o in _OPERATORS if command.startswith(o, i))
            io_number = word if in_word and not quoted and word.isdigit() and op[0] in "<>" else ""
            shown = io_number + op
            if op in (">&", "<&"):
                j = i + len(op)
                while j < n and (command[j].isdigit() or command[j] == "-"):
                    j += 1
                shown += command[i + len(op) : j]
            return shown
        else:
            if not in_word and _expands(command, i):
                return _word_at(command, i)
            word += c
            in_word = True
            i += 1
    return None


def _after_double_quotes(command: str, i: int) -> int:
    """The index after the `"` that closes a double-quoted string opened before `i`."""
    n = len(command)
    while i < n:
        c = command[i]
        if c == "\\":
            i += 2
        elif c == '"':
            return i + 1
        else:
            i += 1
    return n


def _expands(command: str, i: int) -> bool:
    """Whether the unquoted word starting at `i` starts with an expansion."""
    c = command[i]
    nxt = command[i + 1 : i + 2]
    if c == "$":
        if any(command.startswith(p, i) for p in _PLACEHOLDERS):
            return False
        return nxt != "" and nxt in _EXPANSION_START
    if c == "~":
        return nxt in ("", "/") or nxt in _BLANKS or nxt in _OPERATOR_CHARS
    return False


def _word_at(command: str, i: int) -> str:
    """The word starting at `i`, as written, up to a blank or an operator."""
    j = i
    while j < len(command) and command[j] not in _BLANKS and command[j] not in _OPERATOR_CHARS:
        j += 1
    word = command[i:j]
    return word if len(word) <= _SHOWN else word[: _SHOWN - 3] + "..."
