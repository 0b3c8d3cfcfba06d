"""File declarations that stand for more than one plain item: trees, links, templated sources.

`merge` calls `expand` for every merged `file` item. Most come back as they
are. Four kinds are rewritten:

- **a tree**: `source` is a directory. The declaration becomes the tree's
  *root* item (`ensure = "directory"`, `tree = true`, its `mode` the
  directories' mode) and one *member* item per directory and file below
  `source`, minus `.git` and what `ignore` matches. Members are ordinary
  file items (`file#<path>/<relative path>`) whose `parent` is the root's
  id: the DAG runs them before the root, which then reports on them, as an
  `apply` does on its children; the plan shows them as one line.
- **a link**: `link = true` beside a file `source` becomes
  `ensure = "link"` with `target` = the absolute source path.
- **a templated source**: `template = true` reads `source` now and renders
  it like inline `content` (the result is the item's `content`; `source`
  stays, for `sys add` and the plan).
- **an executable copy**: a file `source` with an execute bit gets `x`
  wherever `mode` has `r`, as a tree's files do (not in a CCM manifest).

Modes (SPEC section 5): a tree's file whose source has an execute bit gets
`x` wherever `mode` has `r` (`copy_mode`, the rule of every copied file);
with no `mode` (a tree under the home), each file takes its source's mode.
Directories get `dir_mode`, which defaults to `mode` with `x` wherever it
has `r`.

Per member this costs one directory entry and one `stat` of its source (for
the execute bit); nothing is read twice, and nothing is compared between
members.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping
from typing import Any

from syslua.eval import template as templating
from syslua.manifest.model import Item, freeze, freeze_owned

# Properties a member inherits from its tree declaration.
_INHERITED = ("owner", "group", "force", "provider", "fail_on_error")


class TreeError(ValueError):
    """What is wrong with a tree or a link; merge shows it at the declaration's line."""


class Expansion:
    """The items a declaration stands for. (A plain class: a dataclass would cost
    every start half a millisecond to generate methods nothing uses.)"""

    def __init__(
        self,
        items: list[Item] | None = None,
        inputs: list[str] | None = None,  # files read while expanding (templates)
        members: int = 0,  # items added besides the declaration's own
    ) -> None:
        self.items: list[Item] = [] if items is None else items
        self.inputs: list[str] = [] if inputs is None else inputs
        self.members = members


def _with_x(value: int) -> int:
    """`value` with `x` added wherever it has `r` (0o644 -> 0o755)."""
    return value | ((value & 0o444) >> 2)


def traversable(mode: str) -> str:
    """`mode` with `x` added wherever it has `r` (0644 -> 0755), as a directory needs."""
    return f"{_with_x(int(mode, 8)):04o}"


def copy_mode(mode: str | None, source_mode: int) -> str:
    """The mode of a copy of a file whose mode is `source_mode`: `mode`, or
    the source's permission bits when None; with `x` wherever it has `r`
    when the source has an execute bit (a script stays executable)."""
    value = source_mode & 0o777 if mode is None else int(mode, 8)
    return f"{_with_x(value) if source_mode & 0o111 else value:04o}"


def expand(item: Item, roots: Mapping[str, Any] | None, ccm: bool = False) -> Expansion | None:
    """The items `item` stands for, or None when it is an ordinary item.

    `roots` are the template roots of the manifest that declared it (facts,
    data, env), for `template = true` (in a YAML manifest too: its own
    values were rendered when it was read, but not the files it names).
    A copied file whose source has an execute bit gets `x` wherever its
    mode has `r` (`copy_mode`), as a tree's files do, unless only CCM
    manifests declared it (`ccm`: the mode is the seed's, as written).
    """
    source = item.get("source")
    if source is None or item.get("ensure") not in ("present", "directory"):
        return None
    try:
        source_mode = os.stat(source).st_mode
    except (OSError, ValueError):
        source_mode = 0  # not there: the plan says so, at the item
    if stat.S_ISDIR(source_mode):
        return _tree(item, source, roots)
    if item.get("ensure") == "directory":
        raise TreeError(
            f'ensure = "directory" with a `source` needs a directory source, got {source}'
        )
    if item.get("ignore"):
        raise TreeError(f"`ignore` applies to a directory `source`; {source} is not a directory")
    if item.get("link"):
        link = {k: v for k, v in item.props.items() if k not in ("source", "link", "mode")}
        link.update(ensure="link", target=source)
        return Expansion([_replace(item, link)])
    props: dict[str, Any] | None = None
    inputs: list[str] = []
    if item.get("template"):
        reads: list[str] = []
        text = _render_file(source, roots, reads)
        props = dict(item.props)
        props["content"] = text
        inputs = [source, *reads]
    mode = item.get("mode")
    if source_mode & 0o111 and mode is not None and not ccm and stat.S_ISREG(source_mode):
        executable = copy_mode(mode, source_mode)
        if executable != mode:
            props = dict(item.props) if props is None else props
            props["mode"] = executable
    return None if props is None else Expansion([_replace(item, props)], inputs=inputs)


def _replace(item: Item, props: dict[str, Any]) -> Item:
    return Item(item.type, item.key, freeze(props), item.parent, item.noop, item.health_check_only)


def _render_file(source: str, roots: Mapping[str, Any] | None, reads: list[str]) -> str:
    """The text of `source` with its expressions rendered; files that they
    read (`readFile()`) are added to `reads`."""
    try:
        with open(source, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise TreeError(f"source file not found: {source}") from None
    except OSError as e:
        raise TreeError(f"cannot read {source}: {e.strerror}") from None
    text = data.decode("utf-8", "surrogateescape")
    if roots is None:
        return text
    try:
        return str(templating.render(text, roots, reads=reads))
    except templating.TemplateError as e:
        raise TreeError(f"{source}: {e}") from None


def _spec(patterns: Iterable[str]) -> Any:
    """A gitignore matcher. `X/**` is read as `X/*`: in git it matches what is
    inside X, not X itself, and once a directory is left out so is all below."""
    lines = [p[:-1] if p.endswith("/**") else p for p in patterns]
    if not lines:
        return None
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(lines)


def _walk(source: str, spec: Any) -> tuple[list[tuple[str, int]], list[str]]:
    """Files (relative path, mode) and directories below `source`.

    `.git` is skipped; a directory that `spec` matches is skipped with all
    below it, as git does. Symlinks in the source are followed; a broken one
    or a special file is an error rather than silently left out.
    """
    files: list[tuple[str, int]] = []
    dirs: list[str] = []
    stack = [("", source)]
    while stack:
        rel, full = stack.pop()
        try:
            entries = list(os.scandir(full))
        except OSError as e:
            raise TreeError(f"cannot read directory {full}: {e.strerror}") from None
        for entry in entries:
            name = entry.name
            if name == ".git":
                continue
            path = rel + name
            try:
                is_dir = entry.is_dir()
                is_file = not is_dir and entry.is_file()
            except OSError as e:
                raise TreeError(f"cannot read {entry.path}: {e.strerror}") from None
            if is_dir:
                if spec is not None and spec.match_file(path + "/"):
                    continue
                if entry.is_symlink():
                    _check_loop(entry.path, full)
                dirs.append(path)
                stack.append((path + "/", entry.path))
            elif is_file:
                if spec is not None and spec.match_file(path):
                    continue
                try:
                    st_mode = entry.stat().st_mode
                except OSError as e:
                    raise TreeError(f"cannot read {entry.path}: {e.strerror}") from None
                files.append((path, st_mode))
            elif spec is not None and spec.match_file(path):
                continue
            elif entry.is_symlink():
                raise TreeError(
                    f"the source tree holds a broken symlink: {entry.path} (add it to `ignore`)"
                )
            else:
                raise TreeError(
                    f"the source tree holds a special file: {entry.path} (add it to `ignore`)"
                )
    return files, dirs


def _check_loop(link: str, inside: str) -> None:
    real, here = os.path.realpath(link), os.path.realpath(inside)
    if here == real or here.startswith(real.rstrip("/") + "/"):
        raise TreeError(f"the source tree holds a symlink to one of its own parents: {link}")


def _tree(item: Item, source: str, roots: Mapping[str, Any] | None) -> Expansion:
    link = bool(item.get("link"))
    mode = item.get("mode")
    explicit_dir_mode = item.get("dir_mode")
    if explicit_dir_mode is None and mode is None:
        raise TreeError(
            "a link tree needs `dir_mode` for its directories (or a `mode` from defaults{})"
        )
    dir_mode = explicit_dir_mode or traversable(mode)
    files, dirs = _walk(source, _spec(item.get("ignore", ())))
    base = {k: item.get(k) for k in _INHERITED if item.get(k) is not None}
    root_id = item.id
    prefix = item.key.rstrip("/") + "/"
    src = source.rstrip("/") + "/"
    out = Expansion()

    def member(rel: str, props: dict[str, Any]) -> Item:
        return Item(
            "file",
            prefix + rel,
            freeze_owned(props),
            root_id,
            item.noop,
            item.health_check_only,
        )

    for rel in dirs:
        out.items.append(member(rel, {**base, "ensure": "directory", "mode": dir_mode}))
    template = bool(item.get("template"))
    for rel, source_mode in files:
        path = src + rel
        if link:
            out.items.append(member(rel, {**base, "ensure": "link", "target": path}))
            continue
        props = {**base, "ensure": "present", "source": path, "mode": copy_mode(mode, source_mode)}
        if template:
            out.inputs.append(path)
            text = _render_file(path, roots, out.inputs)
            props["content"] = text
            props["template"] = True
        out.items.append(member(rel, props))
    out.members = len(out.items)
    root = {k: v for k, v in item.props.items() if k != "mode"}
    root.update(ensure="directory", mode=dir_mode, tree=True)
    out.items.append(_replace(item, root))
    return out


def is_root(item: Item) -> bool:
    return bool(item.props.get("tree"))
