"""`decide` of the file and exec types, one table row per rule of the seeds' decision tables.

In memory: each row gives an item's properties and the status the type would
have read (`Status` built directly, no machine state), and the expected
decision: action, reason and noop message. The type objects come from the
registry and are called directly, without the CLI or a plan. Only two file
rules look at the disk themselves (a non-empty directory, whether a link's
target exists); their rows point at a small tree made once for the module
(and at `/`, which always exists, as a link target).
Machine-backed versions of these tables, status included, are in
test_status.py.

Seeds: /work/shared/seeds/file-resource.md and exec-resource.md ("Decision
Table", and for exec "Desired State Validation", which `verify` implements).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import pytest

from syslua.manifest.model import Item, Manifest, freeze
from syslua.paths import abbreviate
from syslua.resources import exec as exec_type
from syslua.resources import file as file_type
from syslua.resources import file_posix as posix
from syslua.resources import get
from syslua.resources.base import CREATE, FAIL, NONE, REMOVE, RUN, SKIP, UPDATE, Applied, Context
from syslua.resources.process import ProcessResult, Runner

ATTRS = {"owner": "root", "group": "root", "mode": "0644"}


def item(type_: str, key: str, **props: Any) -> Item:
    return Item(type_, key, freeze(props))


def context(*items: Item) -> Context:
    ctx = Context(runner=Runner(), noop=True)
    ctx.manifest = Manifest(items=tuple(sorted(items, key=lambda i: i.id)))
    return ctx


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`target` (absent), `full/` (a non-empty directory), `done` (a file); `missing/` does not exist."""
    root = tmp_path_factory.mktemp("decide")
    (root / "full").mkdir()
    (root / "full" / "inner").write_text("x")
    (root / "done").write_text("")
    return root


# ---------------------------------------------------------------------------
# file: desired ensure x current state -> action (seed file-resource.md)
# ---------------------------------------------------------------------------
class FileRow(NamedTuple):
    props: dict[str, Any]  # besides owner, group and mode (ATTRS)
    current: str  # what status found: present, directory, absent, link, other
    differences: tuple[str, ...]  # why status says the item is not in its desired state
    action: str
    reason: str  # exact; `{parent}` is the abbreviated missing parent directory
    noop_message: str | None
    key: str = "target"  # under `base`
    declared_parent: bool = False  # the parent directory is itself declared


ABSENT, PRESENT, DIRECTORY = {"ensure": "absent"}, {"ensure": "present"}, {"ensure": "directory"}
LINK = {"ensure": "link", "target": "/"}
FORCE = {"force": True}
NOT_EMPTY = "directory is not empty; set force = true to remove it with its contents"
FILE_IN_THE_WAY = (
    "a file exists where a directory is wanted "
    "(set force = true to replace it; the file is kept in the store)"
)
SPECIAL_IN_THE_WAY = "a special file (device, socket or pipe) exists where a file is wanted"
RM, MKDIR, UPDIR = file_type.REMOVED, file_type.CREATED_DIR, "Would have updated directory"
NEW, UPD = file_type.CREATED_FILE, file_type.UPDATED_FILE
MKLINK, UPLINK = file_type.CREATED_LINK, file_type.UPDATED_LINK

# fmt: off
FILE_ROWS = {
    # absent: absent -> none; present / directory (/ link / special) -> remove
    "absent/absent": FileRow(ABSENT, "absent", (), NONE, "absent", None),
    "absent/present": FileRow(ABSENT, "present", ("a file exists",), REMOVE, "a file exists", RM),
    "absent/directory-empty": FileRow(
        ABSENT, "directory", ("a directory exists",),
        REMOVE, "a directory exists", RM),
    "absent/directory-not-empty": FileRow(
        ABSENT, "directory", ("a directory exists",),
        FAIL, NOT_EMPTY, None, key="full"),
    "absent/directory-not-empty+force": FileRow(
        {**ABSENT, **FORCE}, "directory", ("a directory exists",),
        REMOVE, "a directory exists", RM, key="full"),
    "absent/link": FileRow(ABSENT, "link", ("a symlink exists",), REMOVE, "a symlink exists", RM),
    "absent/special": FileRow(
        ABSENT, "other", ("a special file exists",),
        REMOVE, "a special file exists", RM),
    # directory: directory + matching attrs -> none
    "directory/directory-matching": FileRow(DIRECTORY, "directory", (), NONE, "unchanged", None),
    # directory: absent / present -> create directory (a file only with force) / link
    "directory/absent": FileRow(DIRECTORY, "absent", ("does not exist",), CREATE, "", MKDIR),
    "directory/present": FileRow(
        DIRECTORY, "present", ("is a file, should be a directory",),
        FAIL, FILE_IN_THE_WAY, None),
    "directory/present+force": FileRow(
        {**DIRECTORY, **FORCE}, "present", ("is a file, should be a directory",),
        CREATE, "is a file, should be a directory", MKDIR),
    "directory/special": FileRow(
        DIRECTORY, "other", ("is a special file, should be a directory",),
        FAIL, FILE_IN_THE_WAY, None),
    "directory/special+force": FileRow(
        {**DIRECTORY, **FORCE}, "other", ("is a special file, should be a directory",),
        CREATE, "is a special file, should be a directory", MKDIR),
    "directory/link": FileRow(
        DIRECTORY, "link", ("is a symlink, should be a directory",),
        CREATE, "is a symlink, should be a directory", MKDIR),
    # directory: directory + wrong attrs -> create directory (updates attrs)
    "directory/directory-wrong-mode": FileRow(
        DIRECTORY, "directory", ("mode 0700 -> 0644",),
        UPDATE, "mode 0700 -> 0644", UPDIR),
    "directory/directory-wrong-owner-and-group": FileRow(
        DIRECTORY, "directory", ("owner nobody -> root", "group nogroup -> root"),
        UPDATE, "owner nobody -> root, group nogroup -> root", UPDIR),
    # present: present + matching all -> none
    "present/present-matching": FileRow(PRESENT, "present", (), NONE, "unchanged", None),
    # present: absent -> store (missing parents are created first)
    "present/absent": FileRow(PRESENT, "absent", ("does not exist",), CREATE, "", NEW),
    "present/absent-parent-missing": FileRow(
        PRESENT, "absent", ("does not exist",),
        CREATE, "", NEW, key="missing/target"),
    "present/absent-parent-declared": FileRow(
        PRESENT, "absent", ("does not exist",),
        CREATE, "", NEW, key="missing/target", declared_parent=True),
    "present/link": FileRow(
        {**PRESENT, "content": "x"}, "link", ("is a symlink, should be a file",),
        UPDATE, "replaces a symlink to /elsewhere", UPD),
    # present without content or source (attributes only): link -> error, the link stays
    "present-attributes-only/link": FileRow(
        PRESENT, "link", ("is a symlink, should be a file",),
        FAIL, "is a symlink to /elsewhere; a file with only owner, group and mode would "
        'replace it (give `content` or `source`, or manage the link with ensure = "link")',
        None),
    # present: present + wrong content -> store
    "present/present-wrong-content": FileRow(
        PRESENT, "present", ("content changed",),
        UPDATE, "content changed", UPD),
    # present: present + wrong attrs -> store
    "present/present-wrong-mode": FileRow(
        PRESENT, "present", ("mode 0600 -> 0644",),
        UPDATE, "mode 0600 -> 0644", UPD),
    "present/present-wrong-content-and-owner": FileRow(
        PRESENT, "present", ("content changed", "owner nobody -> root"),
        UPDATE, "content changed, owner nobody -> root", UPD),
    # present: directory or special file -> error, never replaced
    "present/directory": FileRow(
        PRESENT, "directory", ("is a directory, should be a file",),
        FAIL, "a directory exists where a file is wanted", None),
    "present/special": FileRow(
        PRESENT, "other", ("is a special file, should be a file",),
        FAIL, SPECIAL_IN_THE_WAY, None),
    # link: absent -> make it (noting a target that does not exist)
    "link/absent": FileRow(LINK, "absent", ("does not exist",), CREATE, "", MKLINK),
    "link/absent-target-missing": FileRow(
        {**LINK, "target": "/no/such/target"}, "absent", ("does not exist",),
        CREATE, "target does not exist", MKLINK),
    # link: link to the target, attrs matching -> none
    "link/link-matching": FileRow(LINK, "link", (), NONE, "unchanged", None),
    # link: another target, or a file (taken over) -> make it
    "link/link-elsewhere": FileRow(
        LINK, "link", ("target /elsewhere -> /",),
        UPDATE, "target /elsewhere -> /", UPLINK),
    "link/present": FileRow(
        LINK, "present", ("is a file, should be a symlink",),
        UPDATE, "is a file, should be a symlink", UPLINK),
    # link: a directory or a special file -> error, never replaced
    "link/directory": FileRow(
        LINK, "directory", ("is a directory, should be a symlink",),
        FAIL, "a directory exists where a link is wanted", None),
    "link/special": FileRow(
        LINK, "other", ("is a special file, should be a symlink",),
        FAIL, "a special file (device, socket or pipe) exists where a link is wanted", None),
}
# fmt: on


@pytest.mark.parametrize("row", FILE_ROWS.values(), ids=FILE_ROWS.keys())
def test_file_decision_table(row: FileRow, base: Path) -> None:
    key = str(base / row.key)
    it = item("file", key, **ATTRS, **row.props)
    items = [it]
    if row.declared_parent:
        items.append(item("file", str(base / "missing"), **ATTRS, ensure="directory"))
    link = "/elsewhere" if row.current == posix.LINK else None
    state = posix.FileState(key, row.current, 0, 0, "0644", 0, link)
    status = file_type.Status(state, row.differences)
    decision = get("file").decide(it, status, context(*items))
    reason = row.reason.format(parent=abbreviate(str(base / "missing")))
    assert (decision.action, decision.reason, decision.noop_message) == (
        row.action,
        reason,
        row.noop_message,
    )
    assert not (base / "target").exists() and not (base / "missing").exists()  # decide never acts


@pytest.mark.parametrize("ensure", ["present", "directory", "absent"])
def test_file_status_error_fails_whatever_is_desired(ensure: str, base: Path) -> None:
    it = item("file", str(base / "target"), **ATTRS, ensure=ensure)
    status = file_type.Status(
        posix.FileState(it.key, posix.ABSENT), (), "owner `ghost` does not exist"
    )
    decision = get("file").decide(it, status, context(it))
    assert (decision.action, decision.reason) == (FAIL, "owner `ghost` does not exist")


# ---------------------------------------------------------------------------
# exec: first matching condition -> action (seed exec-resource.md)
# ---------------------------------------------------------------------------
class ExecRow(NamedTuple):
    props: dict[str, Any]  # besides the command
    status: exec_type.Status  # creates / guard results as status read them
    triggered: bool  # a subscribed item changed in this run
    action: str
    reason: str
    noop_message: str | None


RAN = exec_type.EXECUTED
RAN_SUB = exec_type.EXECUTED_SUBSCRIBE
SUBSCRIBED = "a subscribed item changed"
DONE = "/srv/done"
REFRESH_ONLY = "refresh_only: runs only when a subscribed item changes"
NOPE = "onlyif guard could not start: command not found: nope"
S = exec_type.Status

# fmt: off
EXEC_ROWS = {
    # subscribe triggered -> execute, whatever creates, the guards and refresh_only say
    "triggered": ExecRow({}, S(), True, RUN, SUBSCRIBED, RAN_SUB),
    "triggered-over-creates": ExecRow(
        {"creates": DONE}, S(creates_satisfied=True), True,
        RUN, SUBSCRIBED, RAN_SUB),
    "triggered-over-onlyif": ExecRow(
        {"onlyif": "false"}, S(onlyif_satisfied=False), True,
        RUN, SUBSCRIBED, RAN_SUB),
    "triggered-over-unless": ExecRow(
        {"unless": "true"}, S(unless_satisfied=True), True,
        RUN, SUBSCRIBED, RAN_SUB),
    "triggered-over-refresh-only": ExecRow(
        {"refresh_only": True}, S(), True,
        RUN, SUBSCRIBED, RAN_SUB),
    # creates file exists -> skip (before the guards and refresh_only)
    "creates-exists": ExecRow(
        {"creates": DONE}, S(creates_satisfied=True), False,
        SKIP, f"{DONE} exists", None),
    "creates-exists-over-refresh-only": ExecRow(
        {"creates": DONE, "refresh_only": True}, S(creates_satisfied=True), False,
        SKIP, f"{DONE} exists", None),
    "creates-missing": ExecRow({"creates": DONE}, S(), False, RUN, f"{DONE} is missing", RAN),
    # onlyif guard exits non-zero -> skip
    "onlyif-non-zero": ExecRow(
        {"onlyif": "false"}, S(onlyif_satisfied=False), False,
        SKIP, "onlyif guard exited non-zero", None),
    "onlyif-zero": ExecRow({"onlyif": "true"}, S(onlyif_satisfied=True), False, RUN, "", RAN),
    "onlyif-non-zero-before-unless": ExecRow(
        {"onlyif": "false", "unless": "true"}, S(onlyif_satisfied=False, unless_satisfied=True), False,
        SKIP, "onlyif guard exited non-zero", None),
    # unless guard exits 0 -> skip
    "unless-zero": ExecRow(
        {"unless": "true"}, S(unless_satisfied=True), False,
        SKIP, "unless guard exited 0", None),
    "unless-non-zero": ExecRow({"unless": "false"}, S(unless_satisfied=False), False, RUN, "", RAN),
    # refresh_only and no trigger -> skip
    "refresh-only-untriggered": ExecRow(
        {"refresh_only": True}, S(), False,
        SKIP, REFRESH_ONLY, None),
    "refresh-only-guards-pass-untriggered": ExecRow(
        {"refresh_only": True, "onlyif": "true"}, S(onlyif_satisfied=True), False,
        SKIP, REFRESH_ONLY, None),
    # refresh_only false and no guards -> execute
    "no-guards": ExecRow({}, S(), False, RUN, "", RAN),
    "refresh-only-false": ExecRow({"refresh_only": False}, S(), False, RUN, "", RAN),
    # a guard that could not run is an error, even when triggered
    "guard-error": ExecRow({"onlyif": "nope"}, S(error=NOPE), False, FAIL, NOPE, None),
    "guard-error-triggered": ExecRow({"onlyif": "nope"}, S(error=NOPE), True, FAIL, NOPE, None),
}
# fmt: on


@pytest.mark.parametrize("row", EXEC_ROWS.values(), ids=EXEC_ROWS.keys())
def test_exec_decision_table(row: ExecRow) -> None:
    it = item("exec", "e", command="true", provider="posix", **row.props)
    decision = get("exec").decide(it, row.status, context(it), row.triggered)
    assert (decision.action, decision.reason, decision.noop_message) == (
        row.action,
        row.reason,
        row.noop_message,
    )


# ---------------------------------------------------------------------------
# exec after running: desired state validation (`verify`; None = converged)
# ---------------------------------------------------------------------------
def result(code: int, *, stderr: str = "", timed_out: bool = False) -> ProcessResult:
    return ProcessResult(code, "", stderr, 0.01, timed_out)


class VerifyRow(NamedTuple):
    props: dict[str, Any]
    result: ProcessResult | None  # None: the command never ran
    expected: str | None  # `{base}`: the module's temp tree


# fmt: off
VERIFY_ROWS = {
    "exit-0-default-returns": VerifyRow({}, result(0), None),
    "exit-1-default-returns": VerifyRow({}, result(1), "exit code 1 (expected 0)"),
    "exit-in-returns": VerifyRow({"returns": (0, 2)}, result(2), None),
    "exit-not-in-returns": VerifyRow({"returns": (1,)}, result(0), "exit code 0 (expected 1)"),
    "empty-returns-means-0": VerifyRow({"returns": ()}, result(0), None),
    "stderr-tail-shown": VerifyRow(
        {}, result(3, stderr="first\nboom\n"),
        "exit code 3 (expected 0)\n    first\n    boom"),
    "timed-out": VerifyRow({"timeout": 5}, result(-9, timed_out=True), "timed out after 5s"),
    "did-not-run": VerifyRow({}, None, "the command did not run"),
    # the creates file takes precedence over the exit code
    "creates-exists-after-run": VerifyRow({"creates": "{base}/done"}, result(1), None),
    "creates-missing-after-run": VerifyRow(
        {"creates": "{base}/target"}, result(1),
        "exit code 1 (expected 0)"),
}
# fmt: on


@pytest.mark.parametrize("row", VERIFY_ROWS.values(), ids=VERIFY_ROWS.keys())
def test_exec_desired_state_table(row: VerifyRow, base: Path) -> None:
    props = {k: v.format(base=base) if isinstance(v, str) else v for k, v in row.props.items()}
    it = item("exec", "e", command="true", provider="posix", **props)
    ctx = context(it)
    decision = get("exec").decide(it, exec_type.Status(), ctx)
    assert get("exec").verify(it, decision, Applied(output=row.result), ctx) == row.expected
