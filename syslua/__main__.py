"""`sys` and `python -m syslua`: a no-change `sys apply` or `sys plan` is
answered from the no-change proof before the command line is even parsed
(`syslua/quick.py`); everything else is the typer command line (`syslua.cli`)."""

import sys


def main() -> None:
    from syslua.quick import answer

    code = answer(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from syslua.cli import main as full

    full()


if __name__ == "__main__":
    main()
