"""`syslua.state.profile.update` directly: within one apply, a profile the
apply built and swapped in grows in place when it only gains links; anything
else (another apply, a link that changes, a removal) gets a new directory,
swapped in and recorded."""

from __future__ import annotations

import os
from pathlib import Path

from syslua.paths import Paths
from syslua.state import profile


def make_tree(root: Path, name: str, files: list[str]) -> Path:
    tree = root / "store" / "trees" / name
    for f in files:
        (tree / f).parent.mkdir(parents=True, exist_ok=True)
        (tree / f).write_text(f)
    return tree


def paths_in(tmp_path: Path) -> Paths:
    return Paths(tmp_path / "store", tmp_path / "state", tmp_path / "cache", tmp_path / "config")


def test_one_apply_grows_its_own_profile_and_records_one_swap(tmp_path):
    paths = paths_in(tmp_path)
    a = make_tree(tmp_path, "a", ["bin/a", "share/doc/a.txt"])
    b = make_tree(tmp_path, "b", ["bin/b", "share/doc/b.txt", "man/man1/b.1"])
    notes: list[dict] = []
    apply = object()
    profile.update(paths, [(a, ["bin/a"])], notes.append, apply)
    first = os.readlink(paths.profile)
    profile.update(paths, [(a, ["bin/a"]), (b, ["bin/b"])], notes.append, apply)
    assert os.readlink(paths.profile) == first  # grown in place
    assert len(notes) == 1 and notes[0]["prev"] is None
    assert os.readlink(paths.profile / "bin" / "b") == str(b / "bin" / "b")
    assert os.readlink(paths.profile / "share" / "doc" / "b.txt") == str(b / "share/doc/b.txt")
    assert os.readlink(paths.profile / "man" / "man1" / "b.1") == str(b / "man/man1/b.1")
    assert oct(os.stat(paths.profile / "man").st_mode & 0o777) == oct(0o755)


def test_another_apply_builds_a_new_directory(tmp_path):
    paths = paths_in(tmp_path)
    a = make_tree(tmp_path, "a", ["bin/a"])
    b = make_tree(tmp_path, "b", ["bin/b"])
    notes: list[dict] = []
    profile.update(paths, [(a, ["bin/a"])], notes.append, object())
    first = os.readlink(paths.profile)
    profile.update(paths, [(a, ["bin/a"]), (b, ["bin/b"])], notes.append, object())
    assert os.readlink(paths.profile) != first
    assert [n["prev"] for n in notes] == [None, first]
    old = paths.profile.parent / first
    assert sorted(os.listdir(old / "bin")) == ["a"]  # the previous apply's profile is untouched


def test_a_removal_or_a_changed_link_builds_a_new_directory(tmp_path):
    paths = paths_in(tmp_path)
    a = make_tree(tmp_path, "a", ["bin/a", "share/x"])
    b = make_tree(tmp_path, "b", ["bin/b"])
    a0 = make_tree(tmp_path, "0a", ["share/x"])  # sorts first: it takes share/x over
    notes: list[dict] = []
    apply = object()
    profile.update(paths, [(a, ["bin/a"]), (b, ["bin/b"])], notes.append, apply)
    grown = os.readlink(paths.profile)
    profile.update(paths, [(a, ["bin/a"])], notes.append, apply)  # b removed
    removed = os.readlink(paths.profile)
    assert removed != grown and sorted(os.listdir(paths.profile / "bin")) == ["a"]
    profile.update(paths, [(a, ["bin/a"]), (a0, [])], notes.append, apply)
    assert os.readlink(paths.profile) != removed
    assert os.readlink(paths.profile / "share" / "x") == str(a0 / "share" / "x")
    assert len(notes) == 3
