"""One module per `sys` command: `command`, the typer function that declares
its options (`cli/__init__.py` lists it), and `run(term, ...) -> exit code`,
which parses what is left, calls the library and prints. `snapshot` has one
pair per subcommand (`show_command`/`show`, `tag_command`/`tag_snapshot`,
`delete_command`/`delete`); `repo` holds `pull` and `sys init --from`.

No `from __future__ import annotations` (typer reads `command`'s signature),
and only typer and `cli/options.py` imported at the top: `sys --help`
imports every command module, and a body imports what it needs when it runs.
"""
