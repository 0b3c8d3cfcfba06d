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
  `ensure = "link"` with `target` = the absolute source path (and keeps
  `link = true`: its target is a declared source, which must exist).
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

Several trees rooted at one directory (stow packages `bin` and `fun` both
into `~/.local/bin`; merge keeps their declarations apart as layers) are
expanded one by one and then joined (`join`): one root that lists every
source (`sources`), the members of each, and the directories they share
made once. A path two of them hold otherwise is a conflict.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from syslua.errors import Source, display_path
from syslua.eval import reads as eval_reads
from syslua.eval import template as templating
from syslua.manifest.model import Item, freeze, freeze_owned

# Properties a member inherits from its tree declaration.
_INHERITED = ("owner", "group", "force", "provider", "fail_on_error", "sensitive", "age_identity")
AGE_SUFFIX = ".age"  # an encrypted member: decrypted, written without the suffix


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
        # Joined trees: where each member was declared (its trees' declarations).
        self.declared: dict[str, tuple[Source, ...]] = {}


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
    eval_reads.note("stat", source, source_mode)
    if stat.S_ISDIR(source_mode):
        return _tree(item, source, roots)
    if item.get("ensure") == "directory":
        raise TreeError(
            f'ensure = "directory" with a `source` needs a directory source, got {source}'
        )
    if item.get("ignore"):
        raise TreeError(f"`ignore` applies to a directory `source`; {source} is not a directory")
    if item.get("link"):
        # `link` stays: the target is a declared source, which must exist.
        link = {k: v for k, v in item.props.items() if k not in ("source", "mode")}
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
        recorder = eval_reads.active()
        if recorder is not None:
            recorder.note("list", full, eval_reads.listing_digest(entries))
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
                if recorder is not None:
                    recorder.note("stat", entry.path, st_mode)
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
        if rel.endswith(AGE_SUFFIX) and len(rel.rsplit("/", 1)[-1]) > len(AGE_SUFFIX):
            # Decrypted when written, under its name without `.age`: the
            # tree's declared mode, or owner-only.
            rel = rel[: -len(AGE_SUFFIX)]
            props.update(decrypt=True, mode=mode or "0600")
            out.items.append(member(rel, props))
            continue
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


# What a joined root keeps of each tree (its `sources` entries); the rest of
# the roots' properties are the same in every tree, or a conflict.
LAYERED = ("source", "ignore", "link", "template", "dir_mode")

# Makes the conflict error: (key, property, [(value, declared at)], hint).
Fail = Callable[[str, str, list[tuple[Any, Source]], str], Exception]


def join(parts: Sequence[tuple[Expansion, tuple[Source, ...]]], fail: Fail) -> Expansion:
    """One tree of the trees in `parts` (each expansion with its declarations),
    which all have the same root: every member of each, a directory they
    share made once, and a root listing each tree's source."""
    out = Expansion()
    at: dict[str, int] = {}  # member id -> its place in out.items
    holders: dict[str, list[int]] = {}  # member id -> the parts that hold it
    roots: list[Item] = []
    for n, (found, _) in enumerate(parts):
        out.inputs.extend(found.inputs)
        *members, root = found.items
        roots.append(root)
        for m in members:
            i = at.get(m.id)
            if i is None:
                at[m.id] = len(out.items)
                out.items.append(m)
                holders[m.id] = [n]
                continue
            first = holders[m.id][0]
            out.items[i] = _shared(
                out.items[i], m, (roots[first], parts[first][1][0]), (root, parts[n][1][0]), fail
            )
            holders[m.id].append(n)
    out.members = len(out.items)
    out.items.append(_joint_root(roots, [where[0] for _, where in parts], fail))
    out.declared = {
        mid: tuple(sorted({s for n in ns for s in parts[n][1]})) for mid, ns in holders.items()
    }
    return out


def _shared(
    a: Item, b: Item, tree_a: tuple[Item, Source], tree_b: tuple[Item, Source], fail: Fail
) -> Item:
    """The member two trees both hold: a directory made once when they agree
    on it; anything else is a conflict."""
    if a.get("ensure") == b.get("ensure") == "directory":
        if a.props == b.props:
            return Item(
                a.type,
                a.key,
                a.props,
                a.parent,
                a.noop and b.noop,
                a.health_check_only and b.health_check_only,
            )
        name = next(k for k in sorted({*a.props, *b.props}) if a.get(k) != b.get(k))
        raise fail(
            a.key,
            "dir_mode" if name == "mode" else name,
            [(a.get(name), tree_a[1]), (b.get(name), tree_b[1])],
            "Both trees hold this directory: give their declarations the same `dir_mode`.",
        )
    rel = a.key[len(tree_a[0].key.rstrip("/")) + 1 :]

    def held(member: Item, tree: tuple[Item, Source]) -> tuple[str, Source]:
        path = display_path(tree[0].get("source").rstrip("/") + "/" + rel)
        return (path + "/" if member.get("ensure") == "directory" else path), tree[1]

    raise fail(
        a.key,
        "source",
        [held(a, tree_a), held(b, tree_b)],
        f'Take it from one tree only: add "{rel}" to the `ignore` of the other declaration.',
    )


def _joint_root(roots: list[Item], where: list[Source], fail: Fail) -> Item:
    """The root of joined trees: what every tree's root says of the directory,
    and each tree's own `sources` entry, in the order of their sources."""
    first = roots[0]
    shared = {k: v for k, v in first.props.items() if k not in LAYERED}
    for root, at in zip(roots[1:], where[1:], strict=True):
        other = {k: v for k, v in root.props.items() if k not in LAYERED}
        if other != shared:
            name = next(k for k in sorted({*shared, *other}) if shared.get(k) != other.get(k))
            raise fail(
                first.key,
                "dir_mode" if name == "mode" else name,
                [(shared.get(name), where[0]), (other.get(name), at)],
                "The trees share this directory: give their declarations the same "
                f"`{'dir_mode' if name == 'mode' else name}`.",
            )
    layers = sorted(
        ({k: root.props[k] for k in LAYERED if k in root.props} for root in roots),
        key=lambda layer: str(layer["source"]),
    )
    # As for any item several declarations merge: brought in by an apply only
    # when no tree was declared at the top.
    parents = sorted({r.parent for r in roots if r.parent is not None})
    parent = None if any(r.parent is None for r in roots) else parents[0]
    return Item(
        first.type,
        first.key,
        freeze({**shared, "sources": layers}),
        parent,
        all(r.noop for r in roots),
        all(r.health_check_only for r in roots),
    )


def sources(root: Item) -> list[str]:
    """The source directories of a tree's root: one, or those of joined trees."""
    layers = root.get("sources")
    if layers:
        return [str(layer["source"]) for layer in layers]
    source = root.get("source")
    return [str(source)] if source else []
