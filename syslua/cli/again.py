"""Next steps: the commands a refusal or a failure ends with (issue 23, point 7).

Each is printed to be run as it stands: words quoted for a POSIX shell, a
path under the home as `~/...` (the `~` left for the shell, the rest
quoted), and the user's own command line repeated, with its options, where
the next step is "the same again, with one more option" (`--wait`,
`--force`).
"""

from __future__ import annotations

import shlex
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from syslua.manifest.model import Manifest
    from syslua.plan.planner import Entry

# Options that change only how the output looks: a next step printed to a
# person drops `--json` (what it printed is not for a person then anyway).
_OUTPUT_ONLY = ("--json",)


def word(text: str) -> str:
    """`text` as one shell word: `~/` kept unquoted so that the shell expands it."""
    if text.startswith("~/") and len(text) > 2:
        return "~/" + shlex.quote(text[2:])
    return shlex.quote(text)


def command(*words: str) -> str:
    """`sys WORDS...`, each word quoted as `word` quotes it."""
    return " ".join(["sys", *(word(w) for w in words)])


def again(name: str, config: str | None = None, *extra: str) -> str:
    """The command line that runs command `name` again as the user typed it
    (its options kept, `--json` dropped) with `extra` options added; when
    this process runs `name` on behalf of another command (`sys pull
    --apply`, `sys init --from URL --apply`), `sys NAME CONFIG`."""
    args = sys.argv[1:]
    first = next((a for a in args if not a.startswith("-")), None)
    if first == name:
        kept = [a for a in args if a not in _OUTPUT_ONLY]
    else:
        kept = [name, *([config] if config else [])]
    kept += [e for e in extra if e not in kept]
    return command(*kept)


def keep_edits(manifest: Manifest | None, edited: list[Entry], config: str | None) -> list[str]:
    """How to keep edits made by hand, one line each way (`manifest`: what
    declares them, None when not known): `sys add PATH...`
    for those it takes back into their source files; for a file declared
    with inline `content` (or rendered from a template), which `sys add`
    does not write, changing the declaration to match, after which a plain
    apply goes ahead and the edit stays."""
    addable, encrypted, undeclared, inline = [], [], [], []
    for entry in edited:
        item = manifest.get(entry.id) if manifest is not None else None
        if manifest is None:  # not known here (`sys destroy`): `sys add` says what it does
            addable.append(entry.label)
        elif item is None:  # a removal: `sys add` copies it in and prints its declaration
            undeclared.append(entry.label)
        elif item.get("content") is not None or item.get("template"):
            inline.append(entry)
        elif item.get("decrypt"):  # `sys add` encrypts the edit into the .age source
            encrypted.append(entry.label)
        else:
            addable.append(entry.label)
    lines = []
    where = ("--config", config) if config else ()
    for labels, verb in ((addable, "copied"), (encrypted, "encrypted")):
        if labels:
            sources = "its source" if len(labels) == 1 else "their sources"
            lines.append(
                f"keep {', '.join(labels)} ({verb} into {sources}): "
                f"{command('add', *where, *labels)}"
            )
    if undeclared:
        it = "it" if len(undeclared) == 1 else "them"
        lines.append(
            f"keep {', '.join(undeclared)} (no longer declared: copied into the config, "
            f"then declare {it} as `sys add` prints): {command('add', *where, *undeclared)}"
        )
    for entry in inline:
        declared = manifest.source_of(entry.id) if manifest is not None else ""
        lines.append(
            f"keep {entry.label}: make its declaration ({declared}) say what it holds now, "
            f"then run: {command('apply', *([config] if config else []))}"
        )
    return lines


def overwrite_edits(n: int, verb: str, line: str) -> str:
    """The other way on: `verb` (overwrite, remove) the edits with `line`."""
    them = "it" if n == 1 else "them"
    return f"{verb} {them} (kept in a snapshot first: `sys rollback` brings {them} back): {line}"
