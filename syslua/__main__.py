"""`python -m syslua` runs the `sys` command line."""

from syslua.cli import main

if __name__ == "__main__":
    main()
