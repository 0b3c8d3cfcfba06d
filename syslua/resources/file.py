"""The file type: decides and verifies; `file_posix` does the work.

Decision table (seed file-resource.md, plus links), checked in order:
ensure, content (SHA-256) or link target, owner, group, mode.

| desired   | current                     | action                         |
|-----------|-----------------------------|--------------------------------|
| absent    | absent                      | none                           |
| absent    | present / directory / link  | remove                         |
| directory | directory + matching attrs  | none                           |
| directory | absent / link               | create directory               |
| directory | directory + wrong attrs     | create directory (fix attrs)   |
| directory | regular file                | error, or replace with force   |
| present   | present + all matching      | none                           |
| present   | absent / link               | store                          |
| present, no content/source | link             | error (the link is kept)       |
| present   | present + wrong content     | store                          |
| present   | present + wrong attrs       | store                          |
| present   | directory                   | error                          |
| link      | link to target + attrs      | none                           |
| link      | absent / link / file        | make the link (a file is kept) |
| link      | directory                   | error                          |

Missing parent directories of a path are created first (mode 0755 or the
item's `dir_mode`, its owner and group), unless another item declares them.

A tree (`manifest/tree.py`) is a root item (`tree = true`, a directory) and
member items whose `parent` is the root's id: members run first and create
the root (with its attributes) as their parent; the root runs last, fixes
its own attributes and reports on its members, so subscribers, dependents
and health checks of the tree see the whole tree.
"""

from __future__ import annotations

import bisect
import errno
import os
import stat
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from syslua import secrets
from syslua.errors import ConfigError, Source, StateError, display_path
from syslua.fsutil import CHUNK, real_path, sha256_file
from syslua.manifest import tree
from syslua.manifest.checks import (
    boolean,
    choice,
    content,
    escaped,
    file_path,
    local_path,
    mode,
    name_or_id,
    string_list,
)
from syslua.manifest.model import Item, Manifest, freeze, freeze_owned
from syslua.manifest.schema import Finishing, Invalid, Prop, TypeSchema, schema
from syslua.paths import abbreviate, home
from syslua.resources import file_edits as edits
from syslua.resources import file_folds as folds
from syslua.resources import file_posix, file_proof, file_protect
from syslua.resources import file_secret as secret_files
from syslua.resources.base import (
    CREATE,
    DANGLING,
    FAIL,
    NONE,
    NOTHING,
    REMOVE,
    UPDATE,
    Applied,
    Context,
    Decision,
    Members,
    Removal,
    ResourceError,
    SnapshotContext,
    TakeBack,
    group_name,
    user_name,
)
from syslua.resources.file_posix import (
    ABSENT,
    DIRECTORY,
    LINK,
    OTHER,
    PRESENT,
    FileState,
    points_to,
    same_entry,
)
from syslua.resources.file_secret import is_secret
from syslua.resources.kind import (
    Claim,
    Container,
    Drifts,
    Edited,
    Explained,
    Journaled,
    Kind,
    Ordered,
    Proven,
    Rechecked,
    Recorded,
    Removable,
    Scheduling,
    TakesBack,
)
from syslua.resources.placeholders import Unresolved
from syslua.resources.private import content_diff, is_private
from syslua.state import stat_index
from syslua.state.records import DIR, Original, PathAt, PathState, TreeOriginal
from syslua.state.records import LINK as LINK_RECORD
from syslua.state.restore import restore_path
from syslua.state.store import PACK_MAX, Store

if TYPE_CHECKING:
    from syslua.manifest.validate import Decl
    from syslua.resources.providers import FileProvider
    from syslua.state.stat_index import StatIndex

# The provider, reached only through its protocol: mypy checks file_posix against it.
posix: FileProvider = file_posix

CREATED_FILE = "Would have created the file"
UPDATED_FILE = "Would have updated the file"
CREATED_DIR = "Would have created directory"
UPDATED_DIR = "Would have updated directory"
CREATED_LINK = "Would have created the link"
UPDATED_LINK = "Would have updated the link"
REMOVED = "Would have removed the file"
NO_TARGET = "target does not exist"
PARENT_MODE = 0o755


class Planning:
    """What one planning run found of the file system, asked once for many
    items: which parent directories are symlinks, and which trees' roots."""

    def __init__(self) -> None:
        self.links: dict[str, str | None] = {}  # directory -> its link target, or None
        self.roots: dict[str, bool] = {}  # a tree's root -> whether it is a symlink now
        self.exists: dict[str, bool] = {}  # a parent directory -> whether it exists
        self.dirs: dict[str, bool] = {}  # a parent directory -> whether it is one


@dataclass(frozen=True, slots=True)
class Status:
    state: FileState
    differences: tuple[str, ...]  # why the item is not in its desired state
    error: str | None = None
    # missing parents it creates (declared by no item), outermost first
    parents: tuple[str, ...] = ()
    members: Members | None = None  # a tree root's members
    # Planning only: the parent directories that are symlinks now (a change
    # writes through none that turned into one since), and the member's tree
    # root when it is one of them (replaced by a directory, never written through).
    linked_parents: tuple[tuple[str, str], ...] = ()
    linked_root: str | None = None
    # Links into the repository on the way to the path (stow's folds), which
    # the apply unfolds before writing (`file_folds`), outermost first.
    folds: tuple[folds.Fold, ...] = ()
    # A member of a link tree that a fold already shows as the tree would
    # make it (`_kept_fold`): converged, nothing written, nothing unfolded.
    kept: bool = False
    # What `stat` gave of the `source` whose content the status compared
    # (packed as `stat_index.key`): what proves it unchanged (`file_proof`).
    source_key: bytes | None = None


def _desired_bytes(item: Item) -> bytes | None:
    return secret_files.desired_bytes(item)


def _file_equals(path: str, data: bytes) -> bool:
    with open(path, "rb") as f:
        return f.read() == data


def _size_differs(item: Item, target_size: int, written: int | None = None) -> bool:
    """Is `target_size` not the size of the desired content (`written`, when
    the apply knows how many bytes it wrote)? (False: content not managed)"""
    if written is not None:
        return written != target_size
    data = _desired_bytes(item)
    if data is not None:
        return len(data) != target_size
    source = item.get("source")
    try:
        return source is not None and os.stat(source).st_size != target_size
    except FileNotFoundError:
        return True


def _source_stat(source: str) -> os.stat_result:
    """A regular source file's `stat` (one system call); an error when it is not one."""
    try:
        st = os.stat(source)
    except PermissionError as e:
        raise ResourceError(f"cannot read source file {source}: permission denied") from e
    except OSError:  # absent, a parent that is a file, a symlink loop, a name too long
        raise ResourceError(f"source file not found: {source}") from None
    if not stat.S_ISREG(st.st_mode):
        raise ResourceError(f"source is not a regular file: {source}")
    return st


def _content_differs(
    item: Item,
    target: FileState,
    source_st: os.stat_result | None = None,
    index: StatIndex | None = None,
) -> bool:
    """Does the file `target` differ from the desired content? (False: content not managed)

    With a stat index, from `lstat` alone where it can (`_indexed_differs`).
    Otherwise sizes first, then bytes: comparing the bytes directly costs
    less than hashing both sides, and says the same thing.
    """
    data = _desired_bytes(item)
    source = item.get("source")
    if data is None and source is None:
        return False
    path, target_size = target.path, target.size
    try:
        # Never a secret's digest in the index: without inline or decrypted
        # content, only `sensitive` makes a file one (`is_secret`).
        secret = is_secret(item) if data is not None else item.get("sensitive")
        if index is not None and target.stat_key is not None and not secret:
            return _indexed_differs(index, target, data, source, source_st)
        if data is None:
            size = source_st.st_size if source_st is not None else os.stat(source).st_size
            if size != target_size:
                return True
            return not posix.same_content(source, path, target_size)
        if len(data) != target_size:
            return True
        return (
            posix.read_small(path, target_size) != data
            if target_size <= CHUNK
            else not _file_equals(path, data)
        )
    except FileNotFoundError:
        if source is not None and not os.path.exists(source):
            raise ResourceError(f"source file not found: {source}") from None
        # The target went while it was read (a parent directory of it that
        # was a symlink was just replaced, by another item of the same tree):
        # it no longer holds the content, so it differs.
        return True
    except PermissionError as e:
        raise ResourceError(f"cannot read {e.filename}: permission denied") from None


def _indexed_differs(
    index: StatIndex,
    target: FileState,
    data: bytes | None,
    source: str | None,
    source_st: os.stat_result | None,
) -> bool:
    """`_content_differs` through the stat index: the digests of the target
    and of the source as the index gives them, each hashed (and recorded,
    with the `lstat` taken before it was read) only where it cannot."""
    path, target_key = target.path, target.stat_key
    assert target_key is not None
    source_key = b""
    if data is not None:
        import hashlib  # imported on first use: loading OpenSSL costs a run that hashes nothing

        want: bytes | None = hashlib.sha256(data).digest()
        size = len(data)
    else:
        assert source is not None
        if source_st is None:
            source_st = os.stat(source)
        source_key, size = stat_index.key(source_st), source_st.st_size
        want = index.digest(source, source_key)
    have = index.digest(path, target_key)
    if want is not None and have is not None:
        return want != have
    if size != target.size:
        return True  # no need to read either
    if want is None:
        assert source is not None
        want = bytes.fromhex(sha256_file(source))
        index.observe(source, source_key, want)
    if have is None:
        have = bytes.fromhex(sha256_file(path))
        index.observe(path, target_key, have)
    return want != have


def is_root(item: Item) -> bool:
    """A tree's own item (the declaration), as opposed to its members."""
    return item.type == FileType.name and bool(item.get("tree"))


def tree_of(item: Item, manifest: Manifest | None) -> Item | None:
    """The tree a member belongs to: its `parent`, when that is a tree's root
    (an item brought in by an `apply` has the apply as its parent)."""
    if item.parent is None or manifest is None:
        return None
    parent = manifest.get(item.parent)
    return parent if parent is not None and is_root(parent) else None


def _small_source(source: str) -> bytes | None:
    """A source's whole content when it is small enough to be one packed blob
    (the apply writes these bytes, then stores them; None: copy it in chunks)."""
    try:
        fd = os.open(source, os.O_RDONLY | os.O_CLOEXEC)  # four system calls; open() makes ten
        try:
            size = os.fstat(fd).st_size
            if size > PACK_MAX:
                return None
            data = os.read(fd, size + 1)  # a regular file reads whole, to its end
            return data if len(data) <= size else None  # it grew: copied in chunks
        finally:
            os.close(fd)
    except FileNotFoundError as e:
        raise ResourceError(f"source file not found: {source}") from e
    except PermissionError as e:
        raise ResourceError(f"cannot read source file {source}: permission denied") from e


def from_store(props: dict[str, Any], blob: str, store: Any) -> None:
    """Point `props` at the stored content `blob`: inline when it is a small
    packed blob (a thousand of them are read from one pack, not copied out),
    otherwise the loose object's path."""
    if store.packed(blob):
        data = store.read(blob)
        if b"$${" not in data:  # placeholder syntax in content would be resolved again
            props.pop("source", None)
            props["content"] = data.decode("utf-8", "surrogateescape")
            return
    props.pop("content", None)
    props["source"] = str(store.loose_path(blob))


# -- the declaration -----------------------------------------------------------

_REQUIRED_HINT = (
    "Files need owner, group and mode. Set them on the file, or once for "
    "the rest of the file with\n  defaults { file = { owner = sys.user.name, "
    'group = sys.user.group, mode = "0644" } }'
)


class _FileSchema(TypeSchema):
    """The rules of a file item: what goes with which `ensure`, links,
    templates, modes; trees; files inside other declared paths."""

    def imply(self, key: str, props: dict[str, Any], finishing: Finishing) -> tuple[str, ...]:
        """Owner, group and mode of a path under the home that a Lua config
        left out (`_imply`); a CCM manifest keeps the seed's rules."""
        if finishing.ccm or props["ensure"] == "absent":
            return ()
        if "mode" in props and "owner" in props and "group" in props:
            return ()  # all declared: the common case costs no home lookup
        return _imply(key, props)

    def required_for(self, props: Mapping[str, Any]) -> tuple[str, ...]:
        # An absent file needs none; a link needs no mode.
        if props["ensure"] == "absent":
            return ()
        if not _is_link(props):
            return self.required
        return tuple(p for p in self.required if p != "mode")

    def finish(self, key: str, props: dict[str, Any], finishing: Finishing) -> None:
        if props["ensure"] == "absent":
            why = file_protect.refusal(key)
            if why is not None:
                raise finishing.fail(
                    f'ensure = "absent" is refused here: {why} (`force` does not change this)',
                    hint='Declare the paths inside it that should go, e.g. file { path = "~/old.txt", ensure = "absent" }',
                )
        _finish(props, finishing.fail, finishing.written)

    def expand(
        self, item: Item, roots: Mapping[str, Any] | None, ccm: bool = False
    ) -> tree.Expansion | None:
        """Trees, links, templated sources and a copy's execute bit (`manifest/tree.py`)."""
        if "source" not in item.props:
            return None
        try:
            return tree.expand(item, roots, ccm)
        except tree.TreeError as e:
            raise Invalid(str(e)) from None

    # What each of several trees into one directory keeps for itself.
    layered = frozenset(("body", "ignore", "link", "template", "mode", "dir_mode"))

    def layers(self, group: list[Decl]) -> list[list[Decl]] | None:
        """Trees from several directory sources into one path (stow packages
        that share a target): a layer per source at the winning priority,
        each with the declarations that give it; a declaration that gives no
        source, or one that loses, is part of every layer. None: the sources
        do not make trees (they conflict as any two values do)."""
        winners = _winning_sources(group)
        if len(winners) < 2 or not all(os.path.isdir(s) for s in winners):
            return None
        own = {id(d) for decls in winners.values() for d in decls}
        return [
            [d for d in group if id(d) not in own or any(d is w for w in winners[source])]
            for source in sorted(winners)
        ]

    def join(self, key: str, parts: list[tuple[tree.Expansion, list[Decl]]]) -> tree.Expansion:
        """Trees into one directory, joined (`tree.join`); a conflict is told
        at the priority of their sources, naming their declarations."""
        from syslua.manifest.merge import conflict

        where = []
        prio = 0
        for _, group in parts:
            ((prio, decls),) = _winning(group).items()
            where.append(tuple(sorted(d.source for d in decls)))
        return tree.join(
            [(found, at) for (found, _), at in zip(parts, where, strict=True)],
            lambda k, name, entries, hint: conflict(self, k, name, prio, entries, hint),
        )

    def check_all(self, manifest: Manifest) -> None:
        """A file cannot live inside a path declared absent or as a regular file."""
        files = {i.key: i for i in manifest.of_type(self.name)}
        for item in files.values():
            if item.get("ensure") == "absent":
                continue
            parent = item.key.rpartition("/")[0]
            while parent:
                owner = files.get(parent)
                if owner is not None:
                    ensure = owner.get("ensure")
                    if ensure != "directory":
                        what = (
                            "declared absent"
                            if ensure == "absent"
                            else "declared as a regular file"
                        )
                        raise ConfigError(
                            f"{self.label(item.key)}: it is inside {self.label(owner.key)}, which is "
                            f"{what} (at {manifest.source_of(owner.id)})",
                            manifest.sources[item.id][0],
                        )
                    break
                parent = parent.rpartition("/")[0]

    def subject(self, key: str, prop: str) -> str:
        return f"{self.name}#{escaped(abbreviate(key))}.{prop}"


def _winning(group: list[Decl]) -> dict[int, list[Decl]]:
    """The declarations giving `content` or `source` at the winning priority, by it."""
    bodies = [(d.props["body"][0], d) for d in group if "body" in d.props]
    if not bodies:
        return {}
    best = min(p for p, _ in bodies)
    return {best: [d for p, d in bodies if p == best]}


def _winning_sources(group: list[Decl]) -> dict[str, list[Decl]]:
    """The winning declarations by the `source` each gives ({} when one gives `content`)."""
    out: dict[str, list[Decl]] = {}
    for decls in _winning(group).values():
        for d in decls:
            source = d.props["body"][1].get("source")
            if source is None:
                return {}
            out.setdefault(source, []).append(d)
    return out


def _is_link(props: Mapping[str, Any]) -> bool:
    return props["ensure"] == "link" or bool(props.get("link"))


@cache
def _running_user() -> tuple[str, str]:
    """The running user's name and group, as `sys.user.name` / `sys.user.group` give them."""
    return user_name(os.getuid()), group_name(os.getgid())


def _in_home(path: str) -> bool:
    top = home().rstrip("/")
    return bool(top) and (path == top or path.startswith(top + "/"))


def _source_mode(source: str) -> int | None:
    """The mode of what `source` names (its kind and permission bits); None
    when it cannot be read (the plan says why, at the item)."""
    try:
        return os.stat(source).st_mode
    except (OSError, ValueError):
        return None


def _imply(key: str, props: dict[str, Any]) -> tuple[str, ...]:
    """What a file under the home takes when nothing declared it (SPEC
    section 5): the running user as owner and group, and `_implied_mode`."""
    if not _in_home(key):
        return ()  # owner, group and mode stay required
    user, group = _running_user()
    props.setdefault("owner", user)
    props.setdefault("group", group)
    return () if "mode" in props else _implied_mode(key, props)


def _implied_mode(key: str, props: dict[str, Any]) -> tuple[str, ...]:
    """The mode of a file under the home that declares none: a copy its
    source's (`tree.expand` then adds `x` where it has `r` for an executable
    source), inline content (or none) 0644, a directory 0755; the
    directories of a tree 0755 (`dir_mode`), but those of a tree into the
    home itself the home's own mode (a whole stow package never opens a
    0700 home to others). Returns ("mode",) for a copied tree, whose files
    take their sources' modes in `tree.expand`."""
    source = props.get("source")
    link = _is_link(props)
    if source is None:
        if not link:  # a link takes no mode
            props["mode"] = f"{PARENT_MODE:04o}" if props["ensure"] == "directory" else "0644"
            if secrets.contains(props.get("content")):
                props["mode"] = "0600"  # made with a secret: owner only, unless declared
        return ()
    if link and "dir_mode" in props:
        return ()
    st_mode = _source_mode(source)
    if st_mode is not None and stat.S_ISDIR(st_mode):
        props.setdefault("dir_mode", _home_mode() if key == home() else f"{PARENT_MODE:04o}")
        return () if link else ("mode",)
    if link:
        return ()
    if props.get("decrypt", str(source).endswith(tree.AGE_SUFFIX)) and stat.S_ISREG(st_mode or 0):
        props["mode"] = "0600"  # decrypted: owner only, unless a mode is declared
    elif props["ensure"] == "directory":
        props["mode"] = f"{PARENT_MODE:04o}"  # not a tree after all: `expand` says so
    elif st_mode is not None and stat.S_ISREG(st_mode):
        props["mode"] = f"{stat.S_IMODE(st_mode) & 0o777:04o}"
    else:
        # A source that cannot be read: the plan reports it at the item
        # (`source file not found`), and the next run reads its mode.
        props["mode"] = "0644"
    return ()


def _home_mode() -> str:
    try:
        return f"{stat.S_IMODE(os.stat(home()).st_mode) & 0o777:04o}"
    except OSError:
        return f"{PARENT_MODE:04o}"


def _finish(
    props: dict[str, Any],
    fail: Callable[[str], ConfigError],
    written: Callable[[str], bool],
) -> None:
    """The rules of a merged file item (see `_FileSchema`); `written(slot)`:
    whether a declaration wrote it itself (not through defaults{})."""
    for flag in ("link", "template"):
        if flag in props and not props[flag]:
            del props[flag]  # false is the same as not written: one canonical item
    # In this order: a declaration that breaks several rules hears of the first.
    _check_content_and_source(props, fail)
    _check_decrypt(props, fail)
    _check_link_and_template(props, fail)
    _check_target_and_ignore(props, fail)
    if _is_link(props):
        if written("mode"):
            raise fail(
                "a link takes no `mode` (the mode of what it points to applies)"
                + (
                    "; `dir_mode` sets the mode of a tree's directories"
                    if "source" in props
                    else ""
                )
            )
        if props["ensure"] == "link":
            props.pop("mode", None)  # from defaults{}: it does not apply to a link
    if props["ensure"] == "directory" and "mode" in props and "source" not in props:
        props["mode"] = _traversable(props["mode"])
    if "dir_mode" in props:
        props["dir_mode"] = _traversable(props["dir_mode"])


def _check_content_and_source(props: dict[str, Any], fail: Callable[[str], ConfigError]) -> None:
    """Content and source go with the `ensure` that writes them."""
    ensure = props["ensure"]
    if "content" in props and ensure != "present":
        raise fail(
            f'`content` only applies to ensure = "present" (this file has ensure = "{ensure}")'
        )
    if "source" in props and ensure not in ("present", "directory"):
        raise fail(
            '`source` only applies to ensure = "present" or "directory" '
            f'(this file has ensure = "{ensure}")'
        )


def _check_decrypt(props: dict[str, Any], fail: Callable[[str], ConfigError]) -> None:
    """An `.age` source is decrypted unless `decrypt = false`; decrypting
    needs a source file that is copied (not linked, not a template)."""
    source = props.get("source")
    if "decrypt" not in props and source is not None and source.endswith(tree.AGE_SUFFIX):
        if not os.path.isdir(source):
            props["decrypt"] = True
    if not props.get("decrypt"):
        props.pop("decrypt", None)  # false is the same as not written
        return
    if source is None:
        raise fail("`decrypt` needs a `source` (an age-encrypted file)")
    if _is_link(props):
        raise fail(
            "an encrypted source cannot be linked: its content is decrypted when written "
            "(drop `link = true`)"
        )
    if props.get("template"):
        raise fail("an encrypted source cannot be a template")


def _check_target_and_ignore(props: dict[str, Any], fail: Callable[[str], ConfigError]) -> None:
    """A link's `target` goes with ensure = "link"; `ignore` with a directory source."""
    if props["ensure"] == "link":
        if "target" not in props:
            raise fail('ensure = "link" needs a `target`')
        if props.get("link"):
            raise fail('`link = true` goes with `source`; ensure = "link" takes a `target`')
    elif "target" in props:
        raise fail('`target` only applies to ensure = "link"')
    if "ignore" in props and "source" not in props:
        raise fail("`ignore` applies to a directory `source`")


def _check_link_and_template(props: dict[str, Any], fail: Callable[[str], ConfigError]) -> None:
    """`link = true` and `template = true` each render or link a `source`, not both."""
    if props.get("link") and props.get("template"):
        raise fail("`template` and `link` are mutually exclusive")
    if props.get("link") and "source" not in props:
        raise fail(
            '`link = true` makes a symlink to `source`; for any other target use ensure = "link" with `target`'
        )
    if props.get("template") and "source" not in props:
        raise fail("`template = true` renders `source`; inline `content` is always rendered")


def _traversable(mode: str) -> str:
    """A directory mode without any x bit gets x wherever it has r (0644 -> 0755)."""
    return mode if int(mode, 8) & 0o111 else tree.traversable(mode)


SCHEMA = schema(
    "file",
    "path",
    [
        Prop("path", file_path, doc="absolute or ~/ path"),
        Prop(
            "ensure",
            choice("present", "absent", "directory", "link"),
            doc="what should be at path",
        ),
        Prop(
            "content",
            content,
            slot="body",
            doc="the file's exact content; may contain {{ lookup('facts.x') }}",
            secret="sensitive",
        ),
        Prop(
            "source",
            local_path,
            slot="body",
            doc="a file to copy, or a directory whose whole tree is managed; relative to this manifest",
        ),
        Prop(
            "target",
            local_path,
            doc='what the symlink points to (ensure = "link"); relative to this manifest',
        ),
        Prop(
            "link",
            boolean,
            doc="make path (or every file of a source tree) a symlink to its source file",
        ),
        Prop(
            "template",
            boolean,
            doc="render source (or every file of a source tree) like inline content",
        ),
        Prop(
            "ignore",
            string_list,
            mergeable=True,
            doc="gitignore-style patterns, relative to a directory source, left out of the tree",
        ),
        Prop(
            "decrypt",
            boolean,
            doc="decrypt `source` with age when writing it (the default for a source ending in .age)",
        ),
        Prop(
            "age_identity",
            local_path,
            doc="the age identity that decrypts it (default ~/.config/syslua/key.txt; SYSLUA_AGE_IDENTITY overrides)",
        ),
        Prop(
            "age_recipients",
            string_list,
            doc="who `sys add` encrypts an edit for (default: the identity's public key)",
        ),
        Prop(
            "dir_mode",
            mode,
            doc="mode of the directories of a tree and of missing parents syslua creates",
        ),
        Prop(
            "owner",
            name_or_id,
            required=True,
            doc="user name or numeric uid (under the home, the running user by default; an absent file needs none)",
        ),
        Prop(
            "group",
            name_or_id,
            required=True,
            doc="group name or numeric gid (under the home, the running user's by default; an absent file needs none)",
        ),
        Prop(
            "mode",
            mode,
            required=True,
            doc="octal mode, e.g. \"0644\" (under the home by default: a copy's source's, 0644 for content, 0755 for a directory; an absent file or a link needs none)",
        ),
        Prop(
            "force",
            boolean,
            doc="allow replacing a file with a directory and removing a non-empty directory",
        ),
        Prop("provider", choice("posix"), doc="the only provider"),
    ],
    aliases={"contents": "content"},
    defaults={"ensure": "present", "provider": "posix", "force": False},
    doc="A file or directory (docs/resources/file.md).",
    binary=frozenset({"content"}),
    required_hint=_REQUIRED_HINT,
    cls=_FileSchema,
)


class FileType(
    Kind[Status],
    Journaled,
    Removable,
    Recorded,
    Edited,
    TakesBack,
    Drifts,
    Container,
    Ordered,
    Explained,
    Scheduling,
    Rechecked,
    Proven,
):
    name = "file"
    schema = SCHEMA
    in_dag = True
    inline = True  # a few system calls each: a worker thread costs more than it saves
    aggregates = False

    def label(self, item: Item) -> str:
        label = abbreviate(item.key)
        return label + "/" if is_root(item) else label

    # -- status ---------------------------------------------------------------
    def status(self, item: Item, ctx: Context) -> Status:
        try:
            source = item.get("source")
            ensure = item.get("ensure")
            source_st = None
            if source is not None and ensure == "present":
                source_st = _source_stat(source)
                if item.get("decrypt"):
                    # A wrong or missing identity is `!` in the plan, before
                    # anything is written, even where the target is new.
                    secret_files.decrypted(item)
            state = posix.status(item.key)
            # Planning asks once per tree (the root does not change while planning).
            planning = ctx.memo(Planning) if ctx.noop else None
            # Which parents are symlinks now: when the item runs, a parent
            # that turned into one since planning is refused (`apply`).
            seen = planning.links if planning else ctx.memo(_Run).links
            links = posix.linked_parents(item.key, home(), seen)
            if (links or (state.ensure == LINK and ensure == "directory")) and _kept_fold(
                item, links, ctx.manifest, ctx
            ):
                members = ctx.members(item) if is_root(item) else None
                return Status(state, (), None, (), members, links, kept=True)
            unfolds = _folds(item, links, ctx) if links else ()
            root = None
            if unfolds:
                state = folds.state_after(item.key, unfolds)
                if ensure == "absent" and not state.exists:
                    unfolds = ()  # nothing to remove: the fold stays as it is
            if ensure == "directory" and state.ensure == LINK and os.path.isdir(item.key):
                if unfolds or _is_fold(item.key, ctx):
                    # A directory that is a fold itself (or is in one):
                    # unfolded, then made as declared, so nothing the fold
                    # showed disappears. A link elsewhere is replaced (the
                    # seed's table).
                    unfolds = (*unfolds, (item.key, state.link_target or ""))
            if not unfolds:
                root = _symlinked_root(item, ctx.manifest, planning.roots if planning else None)
                if root is not None and state.exists:
                    # What is there now lies behind a symlink that the tree
                    # replaces with a real directory: this path will be new.
                    state = FileState(item.key, ABSENT)
            if ensure == "link":
                _check_link(item, state, ctx)
            differences = tuple(self._differences(item, state, ctx, source_st=source_st))
            if unfolds and not differences:
                differences = ("in a directory that will be unfolded",)
            parents: tuple[str, ...] = ()
            if state.ensure == ABSENT and ensure != "absent" and not unfolds:
                parents = tuple(self._parents(item, ctx))
            members = ctx.members(item) if is_root(item) else None
            source_key = stat_index.key(source_st) if source_st is not None else None
            return Status(
                state, differences, None, parents, members, links, root, unfolds, False, source_key
            )
        except ResourceError as e:
            return Status(FileState(item.key, ABSENT), (), str(e))

    def _parents(self, item: Item, ctx: Context) -> list[str]:
        """Missing parents this item creates: those below the innermost one
        that another item declares (and creates). The first existing one must
        be a directory."""
        planning = ctx.memo(Planning) if ctx.noop else None
        if planning is not None:  # nothing changes while planning: each directory asked once
            missing = posix.missing_parents(item.key, planning.exists)
            top = os.path.dirname(missing[0]) if missing else os.path.dirname(item.key)
            if top != "/" and not _is_dir(top, planning.dirs):
                raise ResourceError(
                    f"{abbreviate(top)} is not a directory, so {abbreviate(item.key)} cannot be created"
                )
            return self._undeclared(missing, ctx)
        missing = posix.missing_parents(item.key)
        top = os.path.dirname(missing[0]) if missing else os.path.dirname(item.key)
        if top != "/" and not os.path.lexists(top):
            # It went while we looked (another item of the tree is replacing
            # a symlinked root with a directory): look again.
            missing = posix.missing_parents(item.key)
            top = os.path.dirname(missing[0]) if missing else os.path.dirname(item.key)
        if top != "/" and not os.path.isdir(top):
            raise ResourceError(
                f"{abbreviate(top)} is not a directory, so {abbreviate(item.key)} cannot be created"
            )
        return self._undeclared(missing, ctx)

    def _undeclared(self, missing: list[str], ctx: Context) -> list[str]:
        """The `missing` parents below the innermost one another item declares."""
        for i in range(len(missing) - 1, -1, -1):
            if _declared_dir(ctx.manifest, missing[i]):
                return missing[i + 1 :]
        return missing

    def _differences(
        self,
        item: Item,
        state: FileState,
        ctx: Context,
        *,
        written: bool = False,
        source_st: os.stat_result | None = None,
        size: int | None = None,  # of what was written, when known
    ) -> list[str]:
        ensure = item.get("ensure")
        if ensure == "absent":
            return [] if not state.exists else [f"{_kind(state)} exists"]
        want = {"directory": DIRECTORY, "link": LINK}.get(ensure, PRESENT)
        owner, group = item.get("owner"), item.get("group")
        uid, gid = ctx.uid(owner), ctx.gid(group)
        if uid is None:
            raise ResourceError(f"owner `{owner}` does not exist")
        if gid is None:
            raise ResourceError(f"group `{group}` does not exist")
        if state.ensure == ABSENT:
            return ["does not exist"]
        if state.ensure != want:
            return [f"is {_kind(state)}, should be {_kind_name(want)}"]
        out = []
        if want == PRESENT and (
            _size_differs(item, state.size, size)
            if written
            else _content_differs(item, state, source_st, ctx.stat_index)
        ):
            out.append("content changed")
        if want == LINK and not points_to(item.key, state.link_target, item.get("target")):
            out.append(f"target {state.link_target} -> {item.get('target')}")
        if state.uid != uid:
            out.append(f"owner {user_name(state.uid)} -> {owner}")
        if state.gid != gid:
            out.append(f"group {group_name(state.gid)} -> {group}")
        mode = item.get("mode")
        if want != LINK and state.mode != mode:
            out.append(f"mode {state.mode} -> {mode}")
        return out

    # -- decide -------------------------------------------------------------
    def decide(self, item: Item, status: Status, ctx: Context, triggered: bool = False) -> Decision:
        if status.error:
            return Decision(FAIL, status.error)
        if status.members is not None:
            return _decide_root(status, self._decide(item, status))
        return self._decide(item, status)

    def _decide(self, item: Item, status: Status) -> Decision:
        state, diffs = status.state, status.differences
        ensure = item.get("ensure")
        if not diffs:
            return Decision(NONE, "absent" if ensure == "absent" else "unchanged")
        reason = ", ".join(diffs)
        if ensure == "absent":
            if state.ensure == DIRECTORY and not item.get("force") and _non_empty(item.key):
                return Decision(
                    FAIL, "directory is not empty; set force = true to remove it with its contents"
                )
            return Decision(REMOVE, reason, REMOVED)
        if ensure == "directory":
            if state.ensure in (PRESENT, OTHER) and not item.get("force"):
                return Decision(
                    FAIL,
                    "a file exists where a directory is wanted (set force = true to replace it; the file is kept in the store)",
                )
            if state.ensure == DIRECTORY:
                return Decision(UPDATE, reason, UPDATED_DIR)
            return Decision(CREATE, "" if state.ensure == ABSENT else reason, CREATED_DIR)
        if ensure == "link":
            return _decide_link(item, state, reason)
        if state.ensure == DIRECTORY:
            return Decision(FAIL, "a directory exists where a file is wanted")
        if state.ensure == OTHER:
            return Decision(
                FAIL, "a special file (device, socket or pipe) exists where a file is wanted"
            )
        if state.ensure == ABSENT:
            return Decision(CREATE, "", CREATED_FILE)
        if state.ensure == LINK:
            if "content" not in item.props and "source" not in item.props:
                # Only owner, group and mode: nothing says what the file should
                # hold, so replacing the link would lose what it points to.
                return Decision(
                    FAIL,
                    f"is a symlink to {state.link_target}; a file with only owner, group and "
                    "mode would replace it (give `content` or `source`, or manage the link "
                    'with ensure = "link")',
                )
            return Decision(UPDATE, f"replaces a symlink to {state.link_target}", UPDATED_FILE)
        return Decision(UPDATE, reason, UPDATED_FILE)

    def proof(self, item: Item, status: Status) -> list[Claim] | None:
        return file_proof.claims(item, status)

    def recheck(self, item: Item, planned: Status, ctx: Context) -> Status | None:
        """The planned status, when the item changes anyway and its path is
        as planning read it (one `lstat`: absent still, or the same `stat_key`).
        Its change writes what is declared now (the source read as it is
        written), so only an item planned unchanged, a tree root (its members
        ran since) or one whose folds or symlinked root the apply replaces is
        read again in full."""
        if (
            planned.error is not None
            or not planned.differences
            or planned.members is not None
            or planned.folds
            or planned.linked_root is not None
            or planned.kept
            or not posix.unchanged(item.key, planned.state)
        ):
            return None
        return planned

    # -- act ------------------------------------------------------------------
    def apply(
        self, item: Item, decision: Decision, planned: Status | None, ctx: Context
    ) -> Applied:
        if planned is not None:
            _check_parents(item, planned)
        ensure = item.get("ensure")
        before = ctx.before_change
        unfolds = planned.folds if planned is not None else ()
        # The parents that were links when planned: the only ones the
        # provider follows (`safe_fs`).
        links = dict(planned.linked_parents) if planned is not None else None
        if unfolds:  # first, whatever the item does: never through a fold
            folds.unfold(unfolds, before, ctx.before_changes)
            ctx.memo(_Run).links.clear()  # links are directories now
        if ensure == "absent":
            posix.remove(
                item.key, force=bool(item.get("force")), before_change=before, planned=links
            )
            return NOTHING
        uid, gid = self._ids(item, ctx)
        attrs = self._parent_attrs(item, ctx)
        if not unfolds and (root := _symlinked_root(item, ctx.manifest)) is not None:
            posix.replace_link_with_directory(
                root, *attrs(root), before_change=before, planned=links
            )
            ctx.memo(_Run).links.clear()
        posix.create_parents(item.key, attrs, before_change=before, planned=links)
        if ensure == "link":
            posix.make_link(
                item.key, item.get("target"), uid=uid, gid=gid, before_change=before, planned=links
            )
            return NOTHING
        mode = int(item.get("mode"), 8)
        if ensure == "directory":
            state = posix.status(item.key)
            if state.ensure in (PRESENT, OTHER) and item.get("force"):
                posix.replace_with_directory(item.key, before_change=before, planned=links)
            posix.create_directory(
                item.key, uid=uid, gid=gid, mode=mode, before_change=before, planned=links
            )
            return NOTHING
        content, source = _desired_bytes(item), item.get("source")
        if item.get("decrypt"):
            source = None  # the plaintext is written; the ciphertext stays where it is
        if content is None and source is not None and ctx.store is not None:
            content = _small_source(source)
            if content is not None:
                source = None
        posix.store(
            item.key,
            content=content,
            source=source,
            uid=uid,
            gid=gid,
            mode=mode,
            before_change=before,
            planned=links,
        )
        if (
            item.get("source") is not None
            and content is not None
            and ctx.store is not None
            and not is_secret(item)  # a secret is sealed with the snapshot, never stored
        ):
            # Stored now (a small blob waits in memory, a few megabytes at most,
            # until the store syncs): the snapshot records it by its hash, with
            # no second read of the source.
            return Applied(stored=ctx.store.put_bytes(content))
        return NOTHING

    def _ids(self, item: Item, ctx: Context) -> tuple[int, int]:
        uid, gid = ctx.uid(item.get("owner")), ctx.gid(item.get("group"))
        if uid is None:
            raise ResourceError(f"owner `{item.get('owner')}` does not exist")
        if gid is None:
            raise ResourceError(f"group `{item.get('group')}` does not exist")
        return uid, gid

    def _parent_attrs(self, item: Item, ctx: Context) -> Callable[[str], tuple[int, int, int]]:
        """(uid, gid, mode) of each parent directory the item creates: a tree
        member creates its tree's root with the root's attributes, and the
        root's parents as the root would; anything else uses its own owner,
        group and `dir_mode` (default 0755)."""
        root = tree_of(item, ctx.manifest)
        decl = root if root is not None else item
        uid, gid = self._ids(decl, ctx)
        above = int(decl.get("dir_mode") or f"{PARENT_MODE:o}", 8)
        if root is None:
            return lambda d: (uid, gid, above)
        inside = int(root.get("mode"), 8)
        top = root.key
        return lambda d: (uid, gid, inside if d == top or d.startswith(top + "/") else above)

    def verify(self, item: Item, decision: Decision, applied: Applied, ctx: Context) -> str | None:
        """Read the path back: its kind, link target, owner, group and mode,
        and its size for managed content. The bytes themselves are not read
        again: they were just written from the desired content into one temp
        file renamed into place, so a second read would only repeat the write."""
        try:
            state = posix.status(item.key)
            # The content it wrote is the blob it stored: its size is known
            # without a `stat` of the source (which may have changed since).
            size = (
                ctx.store.size(applied.stored)
                if applied.stored is not None and ctx.store is not None
                else None
            )
            return ", ".join(self._differences(item, state, ctx, written=True, size=size)) or None
        except ResourceError as e:
            return str(e)

    def diff(self, item: Item, status: Status, ctx: Context) -> str | None:
        """A unified diff of the content change, for `sys plan --diff`."""
        if item.get("ensure") != "present" or status.error:
            return None
        if "content changed" not in status.differences and status.state.ensure == PRESENT:
            return None
        try:
            desired = _desired_bytes(item)
        except ResourceError:
            return None
        if desired is None:
            source = item.get("source")
            if source is None:
                return None
            try:
                with open(source, "rb") as f:
                    desired = f.read()
            except OSError:
                return None
        current = b""
        if status.state.ensure == PRESENT:
            try:
                with open(item.key, "rb") as f:
                    current = f.read()
            except OSError:
                return None
        label = abbreviate(item.key)
        text = content_diff(
            current,
            desired,
            f"{label} (current)" if status.state.exists else "/dev/null",
            f"{label} (desired)",
            private=is_private((item.key, item.get("source")), (item.get("mode"),)),
            secret=is_secret(item),
        )
        return text or None

    # -- capabilities ----------------------------------------------------------
    def takes_over(self, item: Item, status: Any) -> bool:
        # A tree's root directory is not replaced; its members say what they
        # take over. What an unfolded fold shows is the repository's, not an original.
        return (
            isinstance(status, Status)
            and status.state.exists
            and not is_root(item)
            and not status.folds
        )

    def notes(self, item: Item, status: Any) -> list[str]:
        if not isinstance(status, Status):
            return []
        if status.folds:  # unfolded: never written through
            return folds.notes(status.folds)
        if status.kept:  # shown through a fold, as declared: nothing written
            return []
        return [
            f"{abbreviate(p)} is a symlink to {target}; writing through it"
            for p, target in status.linked_parents
            if p != status.linked_root  # replaced by a directory, never written through
        ]

    def removal(self, item: Item, recorded: Mapping[str, Any]) -> Decision:
        # The plan says `the original is restored` instead when there is one.
        return Decision(REMOVE, "no longer declared", REMOVED)

    def created_parents(self, item: Item, status: Any) -> list[tuple[str, str]]:
        return [
            (p, f"dir {abbreviate(p)}")
            for p in (status.parents if isinstance(status, Status) else ())
        ]

    def folds(self, item: Item) -> bool:
        return is_root(item)

    def group_note(
        self, root: Item, decision: Decision, members: Sequence[tuple[Item, Decision]]
    ) -> str:
        return _tree_note(root, decision, members)

    def provides(self, item: Item) -> tuple[str, ...]:
        return ()

    def requires(self, item: Item) -> tuple[str, ...]:
        return ()

    def predecessors(self, item: Item, manifest: Manifest) -> Iterator[str]:
        """The nearest declared ancestor, when it is a managed directory. A
        tree member looks past its own root, which runs after it."""
        own = item.parent
        parent = os.path.dirname(item.key)
        while parent != "/" and parent:
            owner = manifest.get(f"{self.name}#{parent}")
            if owner is not None and owner.id != own:
                if owner.get("ensure") == "directory":
                    yield owner.id
                return
            parent = os.path.dirname(parent)

    def why_before(self, item: Item, before: str, manifest: Manifest) -> str:
        return "parent directory"

    def key_label(self, key: str) -> str:
        return abbreviate(key)

    def managed_path(self, item: Item) -> str | None:
        return item.key

    def touched_paths(self, item: Item, manifest: Manifest | None, planned: object) -> list[str]:
        """The path and its missing parents, parents first (a parent another
        item declares is recorded by that item, which is prepared first; a
        tree's root and its parents by the root); everything under a
        directory that `ensure = "absent"` removes."""
        path = item.key
        if isinstance(planned, Status) and planned.folds:
            # What the path shows now is the repository's, through a fold
            # that is unfolded first: recorded as it runs, once it is ours.
            return []
        if planned is None and (links := posix.linked_parents(path, home())):
            # Unchanged (`execute.begin` asks before taking it over): seen
            # through a fold its link tree keeps, it is the repository's
            # own file, never an original.
            if _kept_fold(item, links, manifest):
                return []
        if _symlinked_root(item, manifest) is not None:
            # What the path shows now is behind a link that its tree replaces
            # with a new directory first: nothing of ours is there. The path
            # is recorded as it runs, once the link is gone.
            return []
        if item.get("ensure") == "absent":
            if os.path.isdir(path) and not os.path.islink(path):
                out = []
                for root, dirs, files in os.walk(path):
                    out.append(root)
                    out.extend(os.path.join(root, f) for f in files)
                    out.extend(
                        os.path.join(root, d) for d in dirs if os.path.islink(os.path.join(root, d))
                    )
                return out
            return [path]
        missing = posix.missing_parents(path)  # none when the path is there
        tree = tree_of(item, manifest)
        if tree is not None:  # the root and its parents are the root's to record
            below = tree.key + "/"
            missing = [p for p in missing if p.startswith(below)]
        return [*missing, path]

    def original(self, item: Item, prev: PathState, records: list[PathAt]) -> Original | None:
        if item.get("ensure") == "absent" and prev.kind == DIR:
            # A whole directory syslua removes: keep every entry, parents first.
            return TreeOriginal(tuple(records))
        return prev  # "did not exist" too: what syslua then writes is never an original

    def removal_paths(self, item: Item) -> list[str]:
        return [item.key]

    def remove(
        self, item: Item, ctx: Context, original: Original | None, state: Mapping[str, Any]
    ) -> Removal:
        """Restore the original syslua took over; otherwise delete the file or
        symlink, and a directory only when empty. Then the parents syslua
        created for it, when they are empty. Never through a fold: a path
        behind one (put back by another item's removal) is the repository's."""
        unfolded = state.get("unfolded", ())
        # A fold this item was unfolded from, put back by another removal (or
        # any link into the repository above it) is never reached through.
        refolded = (d for d, _ in unfolded if d != item.key and os.path.islink(d))
        fold = next(refolded, None) or _behind_fold(item.key, ctx)
        if fold is not None:
            return Removal(
                f"left to the repository: {abbreviate(fold)} links into it again, as before"
            )
        if unfolded and unfolded[-1][0] == item.key:
            message = "unfolded"  # a directory that was a fold: folded again below
        else:
            message = self._remove_path(item, ctx, original)
        for parent in sorted(state.get("created_parents", ()), key=len, reverse=True):
            ctx.before_change(parent)
            try:
                posix.remove_made(parent, directory=True)  # only when empty: the rest stays
            except ResourceError:
                pass
        for link, target in reversed(unfolded):
            # Folded again once nothing else of ours is in it, nor will be.
            if _still_used(link, ctx):
                continue
            note = folds.refold(link, target, ctx.before_change)
            ctx.memo(_Run).links.clear()  # it may be a link again
            if note:
                message = f"{message}; {note}"
            elif link == item.key:
                message = "the link it replaced is back"
        return Removal(message)

    def _remove_path(self, item: Item, ctx: Context, original: Original | None) -> str:
        path = item.key
        ctx.before_change(path)
        if original is not None and original.exists:
            assert ctx.store is not None
            if isinstance(original, TreeOriginal):
                notes = [restore_path(r.path, r.prev, ctx.store) for r in original.records]
                left = [n for n in notes if n]
                return "; ".join(left) if left else "restored the original directory it took over"
            # Not fsynced one by one: the path is journaled (`before_change`),
            # and the apply syncs its filesystem before the commit record.
            note = restore_path(path, original, ctx.store, durable=False)
            if note is None and link_problem(path) is not None:
                return (
                    f"restored the original it took over: a link to {original.target}, "
                    "which leads nowhere (dangling)"
                )
            return note or "restored the original it took over"
        # Nothing was there before syslua: remove what syslua made.
        state = posix.status(path)
        if not state.exists:
            return "already gone"
        if state.ensure == LINK and item.get("ensure") == "directory":
            return "the link it replaced is back"  # a fold put back (`file_folds.refold`)
        try:
            removed = posix.remove_made(path, directory=state.ensure == DIRECTORY)
        except ResourceError as e:
            return f"left in place: {e}"
        if not removed:
            return (
                "left in place: the directory is not empty (it holds files syslua does not manage)"
            )
        return "removed directory" if state.ensure == DIRECTORY else "removed"

    def snapshot_state(self, item: Item, sctx: SnapshotContext) -> dict[str, Any]:
        """The parents the item created (to remove them with it); a file's
        content, as a blob."""
        state: dict[str, Any] = {}
        ensure = item.get("ensure")
        if ensure != "absent":
            created = _created_parents(item, sctx)
            if created:
                state["created_parents"] = created
        unfolded = _unfolded(item, sctx)
        if unfolded:
            state["unfolded"] = unfolded
        if ensure == "present" and is_secret(item):
            state.update(secret_files.sealed_state(item, sctx))
        elif ensure == "present":
            if sctx.previous.get("blob") and not sctx.changed and sctx.declared_as_before():
                state["blob"] = sctx.previous["blob"]
            elif item.get("content") is not None:
                state["blob"] = sctx.store.put_bytes(
                    item.get("content").encode("utf-8", "surrogateescape")
                )
            elif item.get("source"):
                stored = sctx.applied.stored if sctx.applied is not None else None
                state["blob"] = (
                    stored if stored is not None else sctx.store.put_file(item.get("source"))
                )
            state["mode"] = item.get("mode")  # what was applied: a later change is an edit
            # A rollback that wrote a hand edit back: still a hand edit, found against
            # what the config applied before it.
            before = sctx.target.get(edits.EDITED_FROM)
            if before and state.get("blob") == sctx.target.get("blob"):
                state[edits.EDITED_FROM] = before
        return state

    def materialise(
        self, item: Item, state: Mapping[str, Any], store: Store, snapshot: str
    ) -> Item:
        """A copied `source` becomes the store's copy of the recorded content
        (a tree's root needs none: each member has its own). A state that
        adopted a hand edit (`adopt`) gives its content and mode."""
        if is_root(item):
            return item
        if is_secret(item) and item.get("ensure") == "present":
            return secret_files.materialise(item, state, store, snapshot)
        link = edits.adopted_link(item, state)
        if link is not None:
            if link.get("source"):
                blob = link["source"]
                if not store.has(blob):
                    raise StateError(
                        f"store object {blob[:12]} (content of {item.key} in snapshot {snapshot}) "
                        "is missing; it was deleted from the store by hand"
                    )
                from_store(link, blob, store)
            return Item(
                item.type, item.key, freeze(link), item.parent, item.noop, item.health_check_only
            )
        adopted = edits.adopted_blob(item, state)
        mode = state.get("mode") if item.get("ensure") == "present" else None
        if not item.get("source") and adopted is None and (not mode or mode == item.get("mode")):
            return item
        props = dict(item.props)  # only top-level properties change: nested ones stay frozen
        if item.get("source") or adopted is not None:
            blob = state.get("blob")
            if not blob:
                raise StateError(f"snapshot {snapshot} has no stored content for {item.key}")
            if not store.packed(blob) and not store.has(blob):  # packed: no second look-up
                raise StateError(
                    f"store object {blob[:12]} (content of {item.key} in snapshot {snapshot}) is missing; "
                    "it was deleted from the store by hand"
                )
            from_store(props, blob, store)
        if mode:
            props["mode"] = mode
        return Item(
            item.type, item.key, freeze_owned(props), item.parent, item.noop, item.health_check_only
        )

    def blobs(self, state: Mapping[str, Any]) -> set[str]:
        """The content it wrote (or an edit a snapshot adopted, and what the
        config had applied before that edit)."""
        before = state.get(edits.EDITED_FROM) or {}
        return {b for b in (state.get("blob"), before.get("blob")) if b}

    def trees(self, state: Mapping[str, Any]) -> set[str]:
        return set()

    def edited(self, item: Item, recorded: Mapping[str, Any], ctx: Context) -> str | None:
        if edits.applied(recorded).get("sealed"):
            return secret_files.edited(item, recorded)
        index = None if is_secret(item) else ctx.stat_index  # never a secret's digest in it
        return edits.edited(item, recorded, ctx.store, index)

    def edit_diff(self, item: Item, recorded: Mapping[str, Any], ctx: Context) -> str | None:
        if edits.applied(recorded).get("sealed"):
            return secret_files.edit_diff(item, recorded)
        return edits.edit_diff(item, recorded, ctx.store)

    def adopt(
        self, item: Item, recorded: Mapping[str, Any], live: PathState, store: Store
    ) -> dict[str, Any] | None:
        if is_secret(item) and recorded.get("sealed"):
            return secret_files.adopt(item, recorded, live)
        return edits.adopt(item, recorded, live)

    def take_back(
        self,
        item: Item,
        path: str,
        where: str,
        recorded: Mapping[str, Any] | None,
        store: Store,
        *,
        force: bool = False,
        declared: Sequence[Source] = (),
        kept: bool = True,
    ) -> TakeBack:
        if is_secret(item) and item.get("source") and item.get("ensure") == "present":
            if not item.get("link") and not item.get("template"):
                return secret_files.take_back(item, path, where, recorded, force=force)
        return edits.take_back(
            item, path, where, recorded, store, force=force, declared=declared, kept=kept
        )

    def take_in(
        self, path: str, dest: str, source: str, encrypt_for: Sequence[str] = ()
    ) -> TakeBack:
        if encrypt_for:
            return secret_files.take_in(path, dest, source, encrypt_for)
        return edits.take_in(path, dest, source)

    def drift(self, item: Item, ctx: Context) -> tuple[str, str] | None:
        try:
            if ctx.resolver is not None:
                item = ctx.resolver.resolve_item(item)
        except Unresolved:
            return None
        if item.get("ensure") == "link":
            broken = link_problem(item.key)
            if broken is not None:
                return broken
        st = self.status(item, ctx)
        if st.error:
            return "error", st.error
        if not st.differences:
            return self._brought_back(item, ctx)
        ensure = item.get("ensure")
        if ensure != "absent" and st.state.ensure == ABSENT:
            return "deleted", "deleted"
        if ensure == "absent":
            return "recreated", "exists again"
        if "content changed" in st.differences:
            return "edited", ", ".join(st.differences).replace("content changed", "content edited")
        if any(d.startswith("mode") for d in st.differences) and len(st.differences) == 1:
            return "mode", st.differences[0]
        return "changed", ", ".join(st.differences)

    def _brought_back(self, item: Item, ctx: Context) -> tuple[str, str] | None:
        """A hand edit that the snapshot keeps (a rollback wrote it back, after
        an apply --force overwrote it): the machine matches the snapshot, yet
        it is an edit, which the next apply refuses to overwrite."""
        recorded = ctx.last_applied.get(item.id) if ctx.last_applied else None
        if recorded is None or edits.EDITED_FROM not in recorded:
            return None
        what = edits.edited(item, recorded, ctx.store)
        return ("edited", f"{what} (a hand edit a rollback brought back)") if what else None


class _Run:
    """What the file items of one run share, each made on first use:

    - `links`: which directories are symlinks, as the items of an apply
      find them (`Planning.links` while planning); emptied when an item
      turns a link into a directory or back (its own `apply` looks again,
      uncached);
    - `protected`: what writes never reach through a link (made when a
      parent of a path is a symlink);
    - `keys`: the sorted paths of the config's file items (for a removal
      that may fold a directory again)."""

    def __init__(self) -> None:
        self.links: dict[str, str | None] = {}
        self.protected: folds.Protected | None = None
        self.keys: list[str] | None = None


def _folds(item: Item, links: tuple[tuple[str, str], ...], ctx: Context) -> tuple[folds.Fold, ...]:
    """The folds on the way to the item's path (`file_folds.chain`)."""
    return folds.chain(item.key, links, _protected(ctx))


def _protected(ctx: Context) -> folds.Protected:
    """The run's protected paths: those of the config applied and of the
    snapshot it follows (its sources may be where removals would reach)."""
    run = ctx.memo(_Run)
    if run.protected is None:
        run.protected = folds.Protected(ctx.manifest, ctx.previous)
    return run.protected


def _behind_fold(path: str, ctx: Context) -> str | None:
    """The parent of `path` that is a fold now (a link into the repository),
    if any: a removal or restore there would reach the repository."""
    for link, _ in posix.linked_parents(path, home()):
        if _protected(ctx).holds(real_path(link)):
            return link
    return None


def _still_used(directory: str, ctx: Context) -> bool:
    """Does the config applied declare `directory`, or a file below it?"""
    paths = ctx.memo(_Run)
    if paths.keys is None:
        manifest = ctx.manifest
        paths.keys = sorted(i.key for i in manifest.of_type("file")) if manifest else []
    keys, below = paths.keys, directory + "/"
    at = bisect.bisect_left(keys, directory)
    if at < len(keys) and keys[at] == directory:
        return True
    at = bisect.bisect_left(keys, below)
    return at < len(keys) and keys[at].startswith(below)


def _kept_fold(
    item: Item,
    links: tuple[tuple[str, str], ...],
    manifest: Manifest | None,
    ctx: Context | None = None,
) -> bool:
    """Is the item a member (or the root) of a link tree that a fold on its
    way, or the fold it is, already shows as the tree would make it? A link
    is the very source file seen through the fold (`same_entry`); a
    directory is the tree's source directory there, with the declared mode
    and owner (checked with `ctx`). Then the fold is kept as the tool made it: nothing is
    written, nothing unfolded (stow's `~/.config/nvim -> ../dotfiles/nvim/.config/nvim`
    under a link tree of `nvim/.config/nvim`). What the fold shows besides
    (a file the tree ignores) stays the repository's, shown, not managed."""
    root = item if is_root(item) else tree_of(item, manifest)
    if root is None:
        return False
    layers = root.get("sources") or ({"source": root.get("source"), "link": root.get("link")},)
    sources = [str(layer["source"]) for layer in layers if layer.get("link") and layer["source"]]
    if not sources:
        return False
    ensure = item.get("ensure")
    if ensure == "link":
        target = item.get("target")
        return (
            bool(links)
            and isinstance(target, str)
            and os.path.lexists(item.key)
            and same_entry(item.key, target)
        )
    if ensure != "directory":  # a directory that is the fold, or is in one
        return False
    try:
        st = os.stat(item.key)
    except OSError:
        return False
    rel = os.path.relpath(item.key, root.key)
    real = real_path(item.key)
    if not stat.S_ISDIR(st.st_mode):
        return False
    if not any(real == real_path(os.path.normpath(os.path.join(s, rel))) for s in sources):
        return False
    return ctx is None or (
        f"{stat.S_IMODE(st.st_mode):04o}" == item.get("mode")
        and (st.st_uid, st.st_gid) == (ctx.uid(item.get("owner")), ctx.gid(item.get("group")))
    )


def _is_fold(path: str, ctx: Context) -> bool:
    """Is the link at `path` a fold (its real path is protected, or holds a protected path)?"""
    return _protected(ctx).holds(real_path(path))


def _check_link(item: Item, state: FileState, ctx: Context) -> None:
    """A link is never made to a loop, nor where it would point to itself;
    a link to a source (`link = true`) needs the source (a rollback or
    destroy puts it back all the same, and says so)."""
    target = item.get("target")
    if isinstance(target, Unresolved) or not isinstance(target, str):
        return
    full = os.path.join(os.path.dirname(item.key), target)
    what = f"its source {abbreviate(target)}" if item.get("link") else f"its target {target}"
    try:
        st = os.stat(full)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise ResourceError(f"{what} is a symlink loop") from None
        if item.get("link") and not ctx.restoring and e.errno == errno.ENOENT:
            raise ResourceError(f"{what} does not exist") from None
        return
    if state.ensure in (PRESENT, DIRECTORY):
        here = os.stat(item.key)
        if (here.st_dev, here.st_ino) == (st.st_dev, st.st_ino):
            raise ResourceError(f"{abbreviate(item.key)} would point to itself")


def link_problem(path: str) -> tuple[str, str] | None:
    """("dangling" or "loop", what is wrong) when the link at `path` leads
    nowhere; None when it resolves, or is no link."""
    try:
        target = os.readlink(path)
    except OSError:
        return None
    try:
        os.stat(path)
    except OSError as e:
        if e.errno == errno.ELOOP:
            return "loop", f"a symlink loop (it points to {target})"
        return "dangling", f"a dangling link: {target} does not exist"
    return None


def _unfolded(item: Item, sctx: SnapshotContext) -> list[list[str]]:
    """The folds above the item's path that this apply unfolded (to fold
    them again when the item goes); kept from the previous snapshot when
    this apply unfolded none. Each is looked for only when some are known
    (once per recording, `sctx.memo`): most applies have none."""
    links = sctx.memo.get("file.links")
    if links is None:  # the paths this apply's journal found as links
        links = sctx.memo["file.links"] = {
            path: rec.prev.target
            for path, rec in sctx.path_records.items()
            if rec.prev.kind == LINK_RECORD
        }

    def was_link(path: str) -> str | None:
        target = links.get(path)
        return None if target is None or os.path.islink(path) else target

    found = folds.unfolded(item.key, was_link) if links else []
    if links and item.get("ensure") == "directory" and (own := was_link(item.key)) is not None:
        found.append((item.key, own))  # a directory that was a fold itself
    if found:
        return [list(f) for f in found]
    kept = sctx.previous.get("unfolded") or sctx.target.get("unfolded")
    if kept:
        return list(kept)
    # Declared after another item unfolded its directory: that item's record
    # says what the fold was, for whichever removal comes last.
    known = sctx.memo.get("file.folds")
    if known is None:
        known = sctx.memo["file.folds"] = {
            link: target
            for state in sctx.others.values()
            for link, target in state.get("unfolded", ())
        }
    return [list(f) for f in folds.known_above(item.key, known)] if known else []


def _is_dir(path: str, seen: dict[str, bool]) -> bool:
    there = seen.get(path)
    if there is None:
        there = seen[path] = os.path.isdir(path)
    return there


def _check_parents(item: Item, planned: Status) -> None:
    """Never write through a symlink that was not there when the item was
    planned (the folds it unfolds are links, or directories, as planned)."""
    before = dict(planned.linked_parents)
    before.update(planned.folds)
    for parent, target in posix.linked_parents(item.key, home()):
        if parent not in before:
            raise ResourceError(
                f"parent directory {abbreviate(parent)} changed into a symlink since planning"
            )
        if before[parent] != target:
            raise ResourceError(
                f"parent directory {abbreviate(parent)} is a symlink to {target} now, "
                f"not to {before[parent]} as when planned"
            )


def _symlinked_root(
    item: Item, manifest: Manifest | None, seen: dict[str, bool] | None = None
) -> str | None:
    """The root of the member's tree, when it is a symlink now (a stow-style
    link to the repository): members write into a real directory there, never
    through the link. `seen` caches the answer per tree."""
    tree = tree_of(item, manifest)
    if tree is None:
        return None
    root = tree.key
    if seen is None:
        return root if os.path.islink(root) else None
    linked = seen.get(root)
    if linked is None:
        linked = seen[root] = os.path.islink(root)
    return root if linked else None


def _decide_link(item: Item, state: FileState, reason: str) -> Decision:
    if state.ensure == DIRECTORY:
        return Decision(FAIL, "a directory exists where a link is wanted")
    if state.ensure == OTHER:
        return Decision(
            FAIL, "a special file (device, socket or pipe) exists where a link is wanted"
        )
    target = item.get("target")
    missing = not os.path.exists(os.path.join(os.path.dirname(item.key), target))
    # A link to what is gone: a link to a source is only made so by a
    # rollback or destroy (it cannot be applied otherwise), and says so.
    note = ""
    if missing and (item.get("link") or item.parent is not None):  # a source's link (a tree's too)
        what = "its source" if item.get("link") else "its target"
        note = f"{DANGLING}{what} {abbreviate(target)} does not exist"
    elif missing:  # a declared target that may come later
        note = NO_TARGET
    if state.ensure == ABSENT:
        return Decision(CREATE, note, CREATED_LINK)
    return Decision(UPDATE, f"{reason}, {note}" if note else reason, UPDATED_LINK)


def _decide_root(status: Status, own: Decision) -> Decision:
    """A tree's root: its own directory, and what its members do (as an `apply` reports on its children)."""
    m = status.members
    assert m is not None
    if own.action == FAIL:
        return own
    if m.failed:
        return Decision(FAIL, f"{m.failed} of {m.total} cannot be applied")
    parts = [f"{m.changed} of {m.total} changed"] if m.changed else []
    if m.removed:
        parts.append(f"{m.removed} removed")
    if own.changes:
        # Members' counts follow the directory's own reason (which never starts with a digit).
        reason = "; ".join(p for p in (own.reason, ", ".join(parts)) if p)
        return Decision(own.action, reason, own.noop_message)
    if parts:
        return Decision(UPDATE, ", ".join(parts), "Would have updated the tree")
    if m.would_change:
        return Decision(NONE, f"{m.would_change} of {m.total} would change (noop)")
    return own


def _tree_note(root: Item, decision: Decision, members: Sequence[tuple[Item, Decision]]) -> str:
    """`tree: 30 files, 6 directories` or `tree: 2 updated, 1 added, 1 removed`;
    joined trees add their sources (`from bin/.local/bin, fun/.local/bin`)."""
    kinds: dict[str, int] = {}
    count = {CREATE: 0, UPDATE: 0, REMOVE: 0, FAIL: 0}
    for item, d in members:
        kind = item.get("ensure")
        kinds[kind] = kinds.get(kind, 0) + 1
        if d.action in count:
            count[d.action] += 1
    fresh = decision.action == CREATE and count[CREATE] == len(members)
    gone = decision.action == REMOVE
    if fresh or gone or not any(count.values()):
        names = {"present": "file", "link": "link", "directory": "directory"}
        parts = [
            _plural(kinds[k], names[k]) for k in ("present", "link", "directory") if kinds.get(k)
        ]
        text = "tree: " + (", ".join(parts) or "empty")
    else:
        parts = []
        for action, word in ((UPDATE, "updated"), (CREATE, "added"), (REMOVE, "removed")):
            if count[action]:
                parts.append(f"{count[action]} {word}")
        if count[FAIL]:
            parts.append(f"{count[FAIL]} cannot be applied")
        text = "tree: " + ", ".join(parts)
    if root.get("sources"):  # joined trees: say which
        text += " from " + ", ".join(abbreviate(display_path(s)) for s in tree.sources(root))
    # The root directory's own change (a mode, an owner, a failure) comes
    # first in its reason; what is said of members starts with a digit.
    own = decision.reason.partition("; ")[0] if decision.action in (CREATE, UPDATE, FAIL) else ""
    if own and not own[0].isdigit():
        text += f"; {own}"
    return text


def _plural(n: int, word: str) -> str:
    if n == 1:
        return f"1 {word}"
    return f"{n} {'directories' if word == 'directory' else word + 's'}"


def _created_parents(item: Item, sctx: SnapshotContext) -> list[str]:
    """Parents syslua created for the item (in this apply, by whichever item
    got there first), up to the first that another item declares; kept from
    the previous snapshot when this apply created none."""
    created = []
    parent = os.path.dirname(item.key)
    path_records = sctx.path_records
    while parent not in ("/", ""):
        if sctx.manifest is not None and _declared_dir(sctx.manifest, parent):
            break
        rec = path_records.get(parent)
        if rec is None or rec.prev.exists:
            break
        created.append(parent)
        parent = os.path.dirname(parent)
    return created or list(sctx.previous.get("created_parents", ()))


def _declared_dir(manifest: Manifest | None, path: str) -> bool:
    if manifest is None:
        return False
    owner = manifest.get(f"file#{path}")
    return owner is not None and owner.get("ensure") == "directory"


def _kind(state: FileState) -> str:
    return {
        PRESENT: "a file",
        DIRECTORY: "a directory",
        ABSENT: "absent",
        LINK: "a symlink",
        OTHER: "a special file",
    }[state.ensure]


def _kind_name(ensure: str) -> str:
    return {DIRECTORY: "a directory", LINK: "a symlink"}.get(ensure, "a file")


def _non_empty(path: str) -> bool:
    try:
        return bool(os.listdir(path))
    except OSError:
        return False
