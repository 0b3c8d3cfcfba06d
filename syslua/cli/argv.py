"""The command line as click reads it: the global output options in any
position, and the original sys.lua's `-o json`.

`-q`, `-v` (`-vv`), `--no-color`, `--json` (`-o json`) and `--no-cache` are each
command's own options, declared with it (`cli/options.py`); `normalize`
moves those written before the command name (`sys -v plan`) right after it
(`sys plan -v`), so both positions mean the same. One a command does not
have is refused with the reason, in either position, instead of click's
"No such option". Any other option is left where it is, for click to read
(or refuse) as the command declares it. A command with an `-o` of its own
(`sys age encrypt -o FILE`) takes `-o` and `--output` as that option.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from syslua.errors import UsageError

if TYPE_CHECKING:
    import click

OUTPUT_FORMATS = ("json", "text")
# The global options, by the long name a command declares, and why a command
# without it does not take it.
WHY_NOT = {
    "--quiet": "it prints only what it is run for",
    "--verbose": "it has no more detail to show",
    "--no-color": "it prints no colour",
    "--json": "it has no machine-readable output",
    "--no-cache": "it does not evaluate a config",
}
_SHORT = {"q": "--quiet", "v": "--verbose", "o": "--json"}


def normalize(argv: list[str], group: click.Group) -> list[str]:
    """`argv` with the global options before the command name moved after
    it, and `-o json` / `--output json` as `--json` (`-o text`, the plain
    output, dropped). A global option the command lacks is a UsageError."""
    args, command, name = _hoisted(argv, group)
    if command is None:
        return argv  # no command named (or an unknown one): click answers
    _check(args[len(name) :], command, " ".join(["sys", *name]))
    if any("-o" in p.opts for p in command.params):
        return args  # its own -o (`sys age decrypt -o json`: a file named json)
    return _output_synonym(args)


def _global(argv: list[str], i: int) -> int:
    """How many words from `argv[i]` make a global option (0: not one)."""
    a = argv[i]
    if a in ("-q", "--quiet", "-v", "--verbose", "--no-color", "--json", "--no-cache"):
        return 1
    if len(a) > 1 and a[0] == "-" and set(a[1:]) <= {"v", "q"}:
        return 1  # -vv, -vq
    if a in ("-o", "--output") and i + 1 < len(argv) and argv[i + 1] in OUTPUT_FORMATS:
        return 2
    if a in {f"{o}{f}" for o in ("-o", "-o=", "--output=") for f in OUTPUT_FORMATS}:
        return 1
    return 0


def _hoisted(
    argv: list[str], group: click.Group
) -> tuple[list[str], click.Command | None, list[str]]:
    """The arguments with the global options found before the command name
    put right after it; the command (None when none is named) and its name."""
    import click

    command: click.Command = group
    hoisted: list[str] = []
    head: list[str] = []
    name: list[str] = []
    i = 0
    while isinstance(command, click.Group):
        if i >= len(argv):
            return argv, None, []
        width = _global(argv, i)
        if width:
            hoisted += argv[i : i + width]
            i += width
            continue
        word = argv[i]
        if word.startswith("-"):
            return argv, None, []  # the group's own option (--help, --version): click's
        sub = command.get_command(click.Context(command), word)
        if sub is None:
            return argv, None, []
        head.append(word)
        name.append(word)
        command = sub
        i += 1
    return [*head, *hoisted, *argv[i:]], command, name


def _takes_value(param: click.Parameter | None) -> bool:
    import click

    return isinstance(param, click.Option) and not param.is_flag and not param.count


def _check(args: list[str], command: click.Command, name: str) -> None:
    """Refuse a global option that `command` (`name`) does not declare."""
    by_opt = {o: p for p in command.params for o in (*p.opts, *p.secondary_opts)}
    own_output = "-o" in by_opt  # `sys age encrypt -o FILE`: not the `-o json` synonym
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return
        if a.startswith("--"):
            word = a.partition("=")[0]
            wanted = "--json" if word == "--output" and not own_output else word
            if wanted in WHY_NOT and wanted not in by_opt:
                _refuse(name, word, wanted)
            i += 2 if "=" not in a and _takes_value(by_opt.get(word)) else 1
            continue
        if a.startswith("-") and len(a) > 1:
            for k, c in enumerate(a[1:], 1):
                long = _SHORT.get(c)
                if long is not None and f"-{c}" not in by_opt and long not in by_opt:
                    _refuse(name, f"-{c}", long)
                if _takes_value(by_opt.get(f"-{c}")) or c == "o":
                    i += 1 if k == len(a) - 1 else 0  # its value: the next word, or the rest
                    break
        i += 1


def _refuse(name: str, given: str, wanted: str) -> None:
    raise UsageError(f"{name} has no {given} option: {WHY_NOT[wanted]}")


def _output_synonym(argv: list[str]) -> list[str]:
    """The original sys.lua's `-o json` / `--output json`: `--json` (a command
    without `--json` was refused before). Its default, `-o text`, is the
    plain output: the option is dropped."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            out += argv[i:]
            break
        width = _global(argv, i)
        if width == 2 and a in ("-o", "--output"):
            out += ["--json"] if argv[i + 1] == "json" else []
        elif width and a.startswith(("-o", "--output")):
            out += ["--json"] if a.endswith("json") else []
        else:
            out.append(a)
        i += width or 1
    return out
