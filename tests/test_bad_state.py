"""Bad state and bad input give a message, never a traceback (issue 9, its table).

Each case is set up for real (a full tmpfs where root may mount one, a
journal of random bytes, a directory where the lock should be, a deleted
store...), run through the real command line, and checked for its message,
its exit code, and what it left on disk.
"""

from __future__ import annotations

from conftest import HEADER, out, tree


def apply_ok(sysenv, text: str) -> None:  # type: ignore[no-untyped-def]
    sysenv.write("sys.lua", HEADER + text)
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)


# -- the lock path is a directory ---------------------------------------------
def test_lock_path_that_is_a_directory_is_a_clear_error(sysenv) -> None:
    apply_ok(sysenv, 'file { path = "~/a.txt", content = "v1\\n" }\n')
    lock = sysenv.root / "state" / "lock"
    lock.unlink()
    lock.mkdir(mode=0o700)  # private, or the next command would tighten it (test_private_state)
    (lock / "keep").write_text("mine\n")
    (lock / "keep").chmod(0o600)
    sysenv.write("sys.lua", HEADER + 'file { path = "~/a.txt", content = "v2\\n" }\n')
    home, root = tree(sysenv.home), tree(sysenv.root)
    p = sysenv.run("apply")
    text = out(p)
    assert p.returncode == 2, text
    assert "Traceback" not in text
    assert f"Error: the state lock {lock} is a directory; syslua keeps a plain file there" in text
    assert f"Move {lock} out of the way" in text
    assert tree(sysenv.home) == home
    assert tree(sysenv.root) == root
    # read-only commands need no lock and still work
    p = sysenv.run("status")
    assert p.returncode == 0, out(p)
    # once moved away, all is well again
    lock.rename(sysenv.work / "old-lock")
    p = sysenv.run("apply")
    assert p.returncode == 0, out(p)
    assert (sysenv.home / "a.txt").read_text() == "v2\n"
