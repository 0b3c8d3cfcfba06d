"""`sys age keygen|encrypt|decrypt`: age identities, and single files.

`keygen` writes a new identity where syslua looks for one
(`~/.config/syslua/key.txt`, or `SYSLUA_AGE_IDENTITY`) and prints its
recipient; it never replaces a file. `encrypt` and `decrypt` read a file or
stdin and write `-o FILE` or stdout, as the `age` command does, and what they
write the `age` command reads (`syslua/age.py` does the work).
"""

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from syslua.cli import terminal
from syslua.cli.options import NoColorOpt, QuietOpt

if TYPE_CHECKING:
    from syslua.cli.output import Terminal

IdentityOpt = Annotated[
    Path | None,
    typer.Option(
        "--identity",
        "-i",
        metavar="IDENTITY",
        help="The identity file (default: $SYSLUA_AGE_IDENTITY, else ~/.config/syslua/key.txt).",
        show_default=False,
    ),
]
OutputOpt = Annotated[
    Path | None,
    typer.Option(
        "--output",
        "-o",
        metavar="FILE",
        help="Write to FILE (default: stdout).",
        show_default=False,
    ),
]
InputArg = Annotated[
    Path | None,
    typer.Argument(metavar="[FILE]", help="The file to read (default: stdin).", show_default=False),
]


def keygen_command(
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            metavar="PATH",
            help="Where to write the identity (default: $SYSLUA_AGE_IDENTITY, else "
            "~/.config/syslua/key.txt).",
            show_default=False,
        ),
    ] = None,
    quiet: QuietOpt = False,
    no_color: NoColorOpt = False,
) -> None:
    """Write a new age identity (0600) and print its recipient, the public key to encrypt to.

    An existing file is never replaced. The secret key is only in the file:
    copy that file to your other machines, and keep it out of the repository.

    \b
    Examples:
      sys age keygen
      sys age keygen -o ~/.ssh/age-key.txt
    """
    raise typer.Exit(keygen(terminal(quiet=quiet, no_color=no_color), output))


def encrypt_command(
    file: InputArg = None,
    recipients: Annotated[
        list[str] | None,
        typer.Option(
            "--recipient",
            "-r",
            metavar="RECIPIENT",
            help="An age1... public key or an ssh-ed25519/ssh-rsa public key line (repeatable; "
            "default: the public key of the identity).",
            show_default=False,
        ),
    ] = None,
    identity: IdentityOpt = None,
    armor: Annotated[
        bool, typer.Option("--armor", "-a", help="Write ASCII-armored (PEM-like) text.")
    ] = False,
    output: OutputOpt = None,
    no_color: NoColorOpt = False,
) -> None:
    """Encrypt a file (or stdin) with age, to -o FILE or stdout.

    \b
    Examples:
      sys age encrypt -o netrc.age ~/.netrc
      sys age encrypt -r age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p -a token.txt
    """
    raise typer.Exit(
        encrypt(terminal(no_color=no_color), file, recipients or [], identity, armor, output)
    )


def decrypt_command(
    file: InputArg = None,
    identity: IdentityOpt = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            help="Write to FILE, created 0600 (default: stdout).",
            show_default=False,
        ),
    ] = None,
    no_color: NoColorOpt = False,
) -> None:
    """Decrypt an age file (or stdin), to -o FILE or stdout.

    \b
    Examples:
      sys age decrypt netrc.age
      sys age decrypt -i ~/.ssh/id_ed25519 -o token.txt token.txt.age
    """
    raise typer.Exit(decrypt(terminal(no_color=no_color), file, identity, output))


# -- the bodies ---------------------------------------------------------------------------
def keygen(term: "Terminal", output: Path | None) -> int:
    from syslua import age
    from syslua.errors import SysluaError

    path = _absolute(output) if output is not None else age.identity_path()
    try:
        public = age.keygen(path)
    except age.AgeError as e:
        raise SysluaError(str(e), hint=_keygen_hint(path)) from None
    term.line(f"Wrote a new age identity to {age.shown(path)} (0600).")
    term.line(f"Public key: {public}", always=True)
    return 0


def _keygen_hint(path: Path) -> str | None:
    import os

    if not os.path.lexists(path):
        return None
    return (
        "Move it away first to make a new identity (files encrypted to it then need "
        "it to decrypt); `sys age keygen -o OTHER` writes elsewhere."
    )


def encrypt(
    term: "Terminal",
    file: Path | None,
    recipients: list[str],
    identity: Path | None,
    armor: bool,
    output: Path | None,
) -> int:
    from syslua import age
    from syslua.errors import SysluaError

    if output is None and not armor and _stdout_is_terminal():
        return _refuse_binary()
    try:
        to = recipients or age.recipients_of(_identity(identity))
        data = age.encrypt(_read(file), to, armor=armor)
    except age.AgeError as e:
        raise SysluaError(str(e)) from None
    _write(output, data, mode=0o644)
    return 0


def decrypt(term: "Terminal", file: Path | None, identity: Path | None, output: Path | None) -> int:
    from syslua import age
    from syslua.errors import SysluaError

    what = str(_absolute(file)) if file is not None else "stdin"
    try:
        data = age.decrypt(_read(file), what, _identity(identity))
    except age.AgeError as e:
        raise SysluaError(str(e)) from None
    _write(output, data, mode=0o600)
    return 0


# -- input and output -------------------------------------------------------------------------
def _absolute(path: Path) -> Path:
    import os

    return Path(os.path.abspath(os.path.expanduser(str(path))))


def _identity(given: Path | None) -> Path:
    from syslua import age

    return _absolute(given) if given is not None else age.identity_path()


def _read(file: Path | None) -> bytes:
    from syslua import age

    if file is None:
        stream = sys.stdin
        buffer = getattr(stream, "buffer", None)
        return buffer.read() if buffer is not None else stream.read().encode()
    try:
        return _absolute(file).read_bytes()
    except OSError as e:
        raise age.AgeError(f"cannot read {age.shown(_absolute(file))}: {e.strerror}") from None


def _stdout_is_terminal() -> bool:
    try:
        return sys.stdout.isatty()
    except ValueError:
        return False


def _refuse_binary() -> int:
    from syslua.errors import UsageError

    raise UsageError(
        "refusing to write binary age output to a terminal",
        hint="Give -o FILE, redirect stdout, or use --armor for text.",
    )


def _write(output: Path | None, data: bytes, *, mode: int) -> None:
    """`data` to stdout, or to the file `output` atomically: a new file gets
    `mode`, an existing one keeps its own when that is stricter."""
    import os
    import stat

    from syslua import age
    from syslua.errors import SysluaError
    from syslua.fsutil import atomic_write

    if output is None:
        sys.stdout.flush()
        buffer = getattr(sys.stdout, "buffer", None)
        if buffer is not None:
            buffer.write(data)
            buffer.flush()
        else:
            sys.stdout.write(data.decode("utf-8", "replace"))
        return
    path = _absolute(output)
    try:
        st = os.stat(path)
        mode = stat.S_IMODE(st.st_mode) & mode
    except FileNotFoundError:
        pass
    except OSError as e:
        raise SysluaError(f"cannot write {age.shown(path)}: {e.strerror}") from None
    try:
        atomic_write(path, data, mode)
    except OSError as e:
        raise SysluaError(f"cannot write {age.shown(path)}: {e.strerror}") from None
