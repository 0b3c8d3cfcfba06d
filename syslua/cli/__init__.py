"""The `sys` command line (typer). One module per command under `syslua.cli.commands`.

This module makes the app: its global options (`--version`, completion), the
list of commands, and `main`. Each command's options and body live in its
own module, which is imported only when typer makes that command (`sys plan`
imports one; `sys --help` lists each by the summary written beside it here and
imports none; a command's module imports what its body needs only when it
runs), so `sys --help` stays fast. Failures are
data until they reach `main`, which maps `SysluaError`s to their message and
exit code (0 ok, 1 apply failed, 2 usage/configuration, 3 lock held,
4 `plan --exit-code` with pending changes, 130 interrupted); anything else
is a bug, printed as `Internal error: ...` with its traceback, exit 70.
`main` also installs the SIGINT/SIGTERM handler (`cli/signals.py`).
"""

# No `from __future__ import annotations` here (nor in the command modules):
# typer reads the signatures of `_options` and of each command, and string
# annotations would be compiled and evaluated again each time it does.
import gc as _gc  # the module: `gc` below is the command
import os
import sys
import time
from collections.abc import Callable, Iterator, MutableMapping
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any

# A run allocates many small, short-lived, acyclic objects (declarations,
# items): collecting cycles less often saves a tenth of a large evaluation.
# Importing this module is how `sys` starts, so the threshold is raised here,
# before typer and click are imported: their import alone would otherwise
# trigger some thirty collections (about 4 ms of every command).
GC_THRESHOLD = (100_000, 50, 100)
_gc.set_threshold(*GC_THRESHOLD)

import click  # noqa: E402  (after the threshold, on purpose; for annotations)
import typer  # noqa: E402  (after the threshold, on purpose)
from typer.core import TyperCommand, TyperGroup  # noqa: E402
from typer.models import CommandInfo  # noqa: E402

from syslua.cli.options import DEFAULT_EVAL_TIMEOUT as DEFAULT_EVAL_TIMEOUT  # noqa: E402

if TYPE_CHECKING:
    from syslua.cli.output import Terminal


class _Group(TyperGroup):
    """typer's group, whose command list (`--help`) names a command not made yet
    by its summary instead of making it (see `_LazyCommands.listing`)."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        commands = self.commands
        if not isinstance(commands, _LazyCommands):
            return super().format_commands(ctx, formatter)
        self.commands = commands.listing()
        try:
            super().format_commands(ctx, formatter)
        finally:
            self.commands = commands


class _Command(TyperCommand):
    """typer's command, whose help lists the options of a help group (an
    option's `rich_help_panel`, e.g. COMPATIBILITY) in a section of their own,
    after the others."""

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        sections: dict[str, list[tuple[str, str]]] = {"Arguments": [], "Options": []}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if param.param_type_name == "argument":
                sections["Arguments"].append(record)
            else:
                sections.setdefault(getattr(param, "rich_help_panel", None) or "Options", [])
                sections[getattr(param, "rich_help_panel", None) or "Options"].append(record)
        for title, records in sections.items():
            if records:
                with formatter.section(title):
                    formatter.write_dl(records)


# Every exit code of every command, with what it means: the end of `sys --help`,
# and the table of docs/cli.md (tests/test_exit_codes.py keeps them the same).
EXIT_CODES = (
    (0, "success: nothing needed to change, or everything changed"),
    (
        1,
        "the apply failed and was rolled back; or the plan marks items ! (they cannot be "
        "applied: `sys plan` says so, `sys apply` runs nothing); or a check failed",
    ),
    (
        2,
        "usage or configuration error, or a refusal (files edited by hand, a config "
        "that declares nothing, ...); nothing was changed",
    ),
    (3, "another sys process holds the state lock"),
    (
        4,
        "`sys plan --exit-code`: changes are pending; `sys status --exit-code`: something "
        "drifted or changes are pending",
    ),
    (70, "internal error: a bug in syslua"),
    (130, "interrupted by Ctrl-C or SIGTERM (what had changed was rolled back)"),
)


def _epilog() -> str:
    """The exit codes as the end of `sys --help`: a paragraph click prints as it
    is ("\\b"), each meaning wrapped under its own start to fit 80 columns
    (click indents the paragraph by 2)."""
    import textwrap

    rows = [
        textwrap.fill(
            meaning,
            width=76,
            initial_indent=f"  {code:<4} ",
            subsequent_indent=" " * 7,
            break_on_hyphens=False,
        )
        for code, meaning in EXIT_CODES
    ]
    return "\b\nExit codes (with --json, a refusal's summary names its reason):\n" + "\n".join(rows)


app = typer.Typer(
    cls=_Group,
    name="sys",
    help="syslua: describe your machine in Lua, preview with `sys plan`, converge with `sys apply`.",
    epilog=_epilog(),
    no_args_is_help=True,
    # Our own --install-completion / --show-completion (cli/completion.py):
    # typer's take no shell name and edit rc files in place.
    add_completion=False,
    # click itself says "Did you mean ...?" once; typer's would add it again.
    suggest_commands=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _subgroup(name: str, help: str) -> typer.Typer:
    """A group of commands under `sys NAME`, made as the main group is."""
    group = typer.Typer(
        cls=_Group, help=help, no_args_is_help=True, suggest_commands=False, rich_markup_mode=None
    )
    app.add_typer(group, name=name)
    return group


snapshot_app = _subgroup("snapshot", "Show, tag and delete snapshots.")
age_app = _subgroup("age", "Make an age identity, and encrypt or decrypt single files with age.")


def _version(value: bool) -> None:
    if value:
        from syslua.cli.version import version_line

        typer.echo(version_line())
        raise typer.Exit()


def _show_completion(value: bool) -> None:
    if value:
        from syslua.cli import completion

        raise typer.Exit(completion.show(terminal(), completion.shell_after("--show-completion")))


def _install_completion(value: bool) -> None:
    if value:
        from syslua.cli import completion

        raise typer.Exit(
            completion.install(terminal(), completion.shell_after("--install-completion"))
        )


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            "-V",
            is_eager=True,
            callback=_version,
            help="Print the versions of syslua, LuaJIT and Python, and exit.",
        ),
    ] = False,
    show_completion: Annotated[
        bool,
        typer.Option(
            "--show-completion",
            is_eager=True,
            callback=_show_completion,
            help="Print the completion script of a shell, named after the option (bash, zsh or "
            'fish; default: $SHELL\'s), e.g. eval "$(sys --show-completion bash)".',
        ),
    ] = False,
    install_completion: Annotated[
        bool,
        typer.Option(
            "--install-completion",
            is_eager=True,
            callback=_install_completion,
            help="Install completion for a shell, named after the option (bash, zsh or fish; "
            "default: $SHELL's).",
        ),
    ] = False,
) -> None:
    pass  # the options above act on their own and exit; the help is the app's


_no_color = False  # --no-color of this command, for the error line `main` prints
_json_mode = False  # --json of this command: an error is also a summary on stdout
started: float | None = None  # when `main` began: the lock records it


def terminal(
    json_: bool = False,
    verbose: int = 0,
    quiet: bool = False,
    no_color: bool = False,
    *,
    error_summary: bool | None = None,
) -> "Terminal":
    """The command's Terminal, from its output options. An error ends with a
    JSON summary on stdout in JSON mode, unless `error_summary` says otherwise
    (`sys graph` keeps stdout machine-only but prints DOT there)."""
    from syslua.cli.output import Terminal

    global _no_color, _json_mode
    _no_color, _json_mode = no_color, json_ if error_summary is None else error_summary
    from syslua.cli import phases

    Terminal.new_command()
    term = Terminal(
        json_mode=json_, verbosity=-1 if quiet else verbose, color=False if no_color else None
    )
    phases.start(term)
    return term


class _Declared(CommandInfo):
    """A command declared in its own module under `syslua.cli.commands`, options
    and body together: typer gets its function (its signature gives the options,
    its docstring the help) only when it makes the command, so that module is
    imported only then. `summary`: the first sentence of that function's
    docstring, which `sys --help` shows without making the command."""

    def __init__(
        self,
        name: str,
        module: str,
        function: str,
        summary: str,
        context_settings: dict[str, Any] | None = None,
    ) -> None:
        self._where = (f"syslua.cli.commands.{module}", function)
        self._function: Callable[..., Any] | None = None
        self.summary = summary
        super().__init__(name, cls=_Command, context_settings=context_settings)

    @property  # type: ignore[override]
    def callback(self) -> Callable[..., Any]:
        if self._function is None:
            module, function = self._where
            # __import__, as an import statement does: `python -X importtime` lists
            # it (it does not see importlib.import_module).
            self._function = getattr(__import__(module, fromlist=[function]), function)
        return self._function

    @callback.setter
    def callback(self, function: Callable[..., Any] | None) -> None:
        self._function = function


# Every command, in the order `sys --help` lists them: (name, module under
# syslua.cli.commands, the function declaring it there).
COMMANDS = (
    ("plan", "plan", "command"),
    ("graph", "graph", "command"),
    ("apply", "apply", "command"),
    ("rollback", "rollback", "command"),
    ("add", "add", "command"),
    ("edit", "edit", "command"),
    ("cd", "cd", "command"),
    ("destroy", "destroy", "command"),
    ("history", "history", "command"),
    ("status", "status", "command"),
    ("diff", "diff", "command"),
    ("gc", "gc", "command"),
    ("init", "init", "command"),
    ("pull", "repo", "pull_command"),
    ("env", "env", "command"),
    ("doctor", "doctor", "command"),
    ("info", "info", "command"),
    ("facts", "facts", "command"),
    ("update", "update", "command"),
    ("import", "import_", "command"),
)
SNAPSHOT_COMMANDS = (
    ("show", "snapshot", "show_command"),
    ("tag", "snapshot", "tag_command"),
    ("delete", "snapshot", "delete_command"),
)
AGE_COMMANDS = (
    ("keygen", "age", "keygen_command"),
    ("encrypt", "age", "encrypt_command"),
    ("decrypt", "age", "decrypt_command"),
)
# What `sys --help` lists for a command without making it (which would import
# its module): the first sentence of its docstring, as click shortens a help
# text; tests/test_cli_help.py keeps the two the same.
SUMMARIES = {
    "plan": "Show what `sys apply` would change, and why, without touching anything.",
    "import": "Write a sys.lua from a stow, dotbot, chezmoi, rcm, yadm or mirrored repository.",
    "graph": "Print the plan as a graph in Graphviz DOT: items, waves, and why each edge exists.",
    "apply": "Make the machine match the config, atomically.",
    "rollback": "Return the machine to an earlier snapshot.",
    "add": "Take files edited by hand back into the config (over their source files).",
    "edit": "Open the source of a managed file in your editor ($VISUAL, $EDITOR, vi).",
    "cd": "Start a shell in the config's directory ($SHELL; exit it to come back).",
    "destroy": (
        "Remove everything syslua manages and restore every original (`sys rollback` undoes it)."
    ),
    "history": "List snapshots, newest first.",
    "status": (
        "Show what changed in the home since the last apply, and what the config would change."
    ),
    "diff": "Show the changes the config would make as a diff, or compare two snapshots.",
    "gc": "Drop old snapshots, then store objects nothing refers to.",
    "init": (
        "Write a starter sys.lua, type stubs and a .luarc.json for lua-language-server; files "
        "that exist are left alone, and each file is listed as written or left alone."
    ),
    "pull": (
        "Update a config cloned with `sys init --from` (git pull --ff-only), then show the new "
        "plan."
    ),
    "env": "Print the line to add to your shell's rc file.",
    "doctor": (
        "Check that syslua can work here: the Lua runtime, permissions, the lock, failed "
        "journals, the store, the shell's env line, PATH and the config."
    ),
    "info": (
        "Show what syslua sees here: the platform, user and paths, the config it would use (and "
        "the inputs its syslua.lock pins), and the current snapshot."
    ),
    "facts": "Print the facts a config or manifest sees, with --fact and --facts merged in.",
    "update": (
        "Resolve the inputs of a config in the original sys.lua's entry form again (git inputs "
        "to the commit their ref names now) and rewrite syslua.lock beside it."
    ),
    "snapshot show": "Show one snapshot.",
    "snapshot tag": "Tag a snapshot so gc keeps it.",
    "snapshot delete": "Delete a snapshot (not the current one).",
    "age keygen": (
        "Write a new age identity (0600) and print its recipient, the public key to encrypt to."
    ),
    "age encrypt": "Encrypt a file (or stdin) with age, to -o FILE or stdout.",
    "age decrypt": "Decrypt an age file (or stdin), to -o FILE or stdout.",
}
# Commands taking a snapshot argument, which may be `-1` (the one before the
# current one): click would take it for an option. An unknown option reaches
# the command as that argument, where `Snapshots.resolve_id` refuses it.
TAKE_SNAPSHOT = {"rollback", "diff", "snapshot show", "snapshot tag", "snapshot delete"}
_SNAPSHOT_ARGUMENT = {"ignore_unknown_options": True}
app.registered_commands += [
    _Declared(*c, SUMMARIES[c[0]], _SNAPSHOT_ARGUMENT if c[0] in TAKE_SNAPSHOT else None)
    for c in COMMANDS
]
snapshot_app.registered_commands += [
    _Declared(
        *c,
        SUMMARIES[f"snapshot {c[0]}"],
        _SNAPSHOT_ARGUMENT if f"snapshot {c[0]}" in TAKE_SNAPSHOT else None,
    )
    for c in SNAPSHOT_COMMANDS
]
age_app.registered_commands += [_Declared(*c, SUMMARIES[f"age {c[0]}"]) for c in AGE_COMMANDS]


COMPLETE_VAR = "_SYS_COMPLETE"  # set by the completion scripts (cli/completion.py)


def main() -> None:
    """Entry point of `sys` and `python -m syslua`."""
    _gc.set_threshold(*GC_THRESHOLD)  # again: a caller may have changed it since the import
    from syslua.cli import signals
    from syslua.errors import Interrupted, ResourceError, SysluaError

    global _no_color, _json_mode, started
    _no_color = _json_mode = False
    started = time.time()
    if os.environ.get(COMPLETE_VAR):
        # The completion script asks for candidates: typer's handlers for bash, zsh and fish.
        from typer.completion import completion_init

        completion_init()
    from syslua.cli.watchdog import watching
    from syslua.secrets import redacting, reset

    reset()  # a command knows only the secrets it reads (the tests run many in one process)
    try:
        with redacting(), signals.handling(), watching(_last_words):
            group = click_app(app)
            args = sys.argv[1:]
            if not os.environ.get(COMPLETE_VAR):
                from syslua.cli.argv import normalize

                args = normalize(args, group)  # global options in any position
            from syslua.cli import phases

            try:
                group(args=args, complete_var=COMPLETE_VAR)
            finally:
                phases.finish()  # -vv: the command's last phase ends with it
    except (Interrupted, SysluaError) as e:
        sys.exit(_last_words(e))
    except ResourceError as e:  # one item's problem, met outside an apply's items
        from syslua.cli.output import Terminal

        Terminal(color=False if _no_color else None).error(str(e))
        sys.exit(1)
    except Exception as e:  # a bug: say so, with everything needed to report it
        internal_error(e)
        sys.exit(INTERNAL_ERROR)


def _last_words(e: BaseException) -> int:
    """Print what stopped the command (an error, or Ctrl-C before anything
    changed) and return its exit code; also the watchdog's, when it ends an
    evaluation that cannot be stopped otherwise (`cli/watchdog.py`)."""
    from syslua.cli import signals
    from syslua.errors import Interrupted, SysluaError

    if isinstance(e, Interrupted):
        said = signals.say_interrupted()
        if said is not None:
            return said
        sys.stderr.write(e.message + "\n")
        return e.exit_code
    from syslua.cli.output import Terminal

    assert isinstance(e, SysluaError)
    if _json_mode:
        # What a script reads: the reason it stopped (`refused`), on stdout as
        # the last JSON it gets; the message goes to stderr as always.
        import json

        from syslua.cli.machine import refused_summary

        summary = refused_summary(e.reason, e.summary())
        sys.stdout.write(json.dumps(summary, ensure_ascii=False) + "\n")
        sys.stdout.flush()
    Terminal(color=False if _no_color else None).error(e.render())
    return e.exit_code


def click_app(typer_app: typer.Typer) -> click.Group:
    """The click group of `typer_app`, as typer makes it, except that each command
    (and each sub-group's) is made only when click asks for it: `sys plan` then
    inspects one function's signature and imports one command's module instead
    of all of them. `--help` lists every command, so it makes them all, in the
    same order; a sub-group is listed by its own help, without its commands."""
    import copy

    from typer.main import (
        get_command_from_info,
        get_command_name,
        get_group_from_info,
        solve_typer_info_defaults,
    )
    from typer.models import TyperInfo

    def command_of(command: Any) -> click.Command:
        # As typer's group makes each of its commands.
        return get_command_from_info(
            command,
            pretty_exceptions_short=typer_app.pretty_exceptions_short,
            rich_markup_mode=typer_app.rich_markup_mode,
        )

    def group_of(info: TyperInfo) -> click.Group:
        # The group typer makes of `info`, but with its commands made lazily.
        typer_instance = info.typer_instance
        assert typer_instance is not None
        shell, shell_info = copy.copy(typer_instance), copy.copy(info)
        shell.registered_commands, shell.registered_groups = [], []
        shell_info.typer_instance = shell
        group = get_group_from_info(
            shell_info,
            pretty_exceptions_short=typer_app.pretty_exceptions_short,
            rich_markup_mode=typer_app.rich_markup_mode,
            suggest_commands=typer_app.suggest_commands,
        )
        makers: dict[str, Callable[[], click.Command]] = {}
        summaries: dict[str, str] = {}
        for command in typer_instance.registered_commands:
            name = command.name or get_command_name(command.callback.__name__)  # type: ignore[union-attr]
            makers[name] = partial(command_of, command)
            if isinstance(command, _Declared):
                summaries[name] = command.summary
        for sub in typer_instance.registered_groups:
            sub_name = solve_typer_info_defaults(sub).name
            assert sub_name, "a sub-group without a name would merge its commands into its parent"
            makers[sub_name] = partial(group_of, sub)
        group.commands = _LazyCommands(makers, summaries)
        return group

    return group_of(TyperInfo(typer_app))


class _LazyCommands(MutableMapping[str, click.Command]):
    """A group's commands by name, in declaration order. `makers[name]()` makes
    the command `name`; it is called the first time `name` is looked up.
    `summaries[name]`: what the group's command list says of a command."""

    def __init__(
        self, makers: dict[str, Callable[[], click.Command]], summaries: dict[str, str]
    ) -> None:
        self._makers = makers
        self._summaries = summaries
        self._commands: dict[str, click.Command | None] = dict.fromkeys(makers)

    def listing(self) -> dict[str, click.Command]:
        """The commands as the command list shows them: one not made yet, and
        with a summary, stands in as a command whose help is that summary
        (click shortens it as it would the docstring); the rest are made."""
        return {name: self._listed(name) for name in self._commands}

    def _listed(self, name: str) -> click.Command:
        summary = self._summaries.get(name)
        if self._commands[name] is None and summary is not None:
            return click.Command(name, help=summary)
        return self[name]

    def __getitem__(self, name: str) -> click.Command:
        command = self._commands[name]
        if command is None:
            command = self._commands[name] = self._makers[name]()
        return command

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._commands[name] = command

    def __delitem__(self, name: str) -> None:
        del self._commands[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._commands)

    def __len__(self) -> int:
        return len(self._commands)


INTERNAL_ERROR = 70  # EX_SOFTWARE: a bug in syslua, not in the user's config


def internal_error(e: BaseException) -> None:
    import traceback

    sys.stderr.write(f"Internal error: {type(e).__name__}: {e}\n")
    sys.stderr.write("".join(traceback.format_exception(e)))
    sys.stderr.write(
        "This is a bug in syslua. Please report it with the traceback above and the command you ran.\n"
    )
    sys.stderr.flush()
