"""The components `safe_fs` walks to reach a directory (issue 27: taken from
the path's tail when it needs no normalising, else from `os.path.relpath`)
are the same either way, for every shape of path."""

from __future__ import annotations

import os

import pytest

from syslua.safe_fs import _components

CASES = [
    ("/home/u/.config/app", "/home/u"),
    ("/home/u", "/home/u"),
    ("/home/u/", "/home/u"),
    ("/home/u//a", "/home/u"),
    ("/home/u/./a", "/home/u"),
    ("/home/u/a/../b", "/home/u"),
    ("/home/u/a/", "/home/u"),
    ("/home/u/.../a", "/home/u"),
    ("/home/u/..a/b", "/home/u"),
    ("/home/uu/a", "/home/u"),
    ("/etc/x", "/"),
    ("/", "/"),
    ("/etc//x/", "/"),
    ("/a/b/c", "/"),
]


@pytest.mark.parametrize(("directory", "top"), CASES)
def test_components_are_those_relpath_gives(directory: str, top: str) -> None:
    rel = os.path.relpath(directory, top)
    assert _components(directory, top) == ([] if rel == "." else rel.split("/"))
