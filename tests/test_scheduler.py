"""The ready queue, in-process: order, concurrency, failure semantics, and linear work.

Items are exec declarations whose "run" is a Python function here; the
scheduler only sees ids, the DAG and results.
"""

from __future__ import annotations

import threading
import time

from syslua.execute import scheduler
from syslua.execute.item import CHANGED, FAILED, SKIPPED, ItemResult
from syslua.manifest.model import Item, Manifest, freeze
from syslua.plan.dag import Dag


def manifest(deps: dict[str, tuple[str, ...]]) -> Manifest:
    items = [
        Item(
            "exec",
            name,
            freeze({"command": "true", "depends_on": tuple(f"exec#{d}" for d in after)}),
        )
        for name, after in deps.items()
    ]
    return Manifest(items=tuple(sorted(items, key=lambda i: i.id)))


def result(ident: str, status: str = CHANGED) -> ItemResult:
    return ItemResult(ident, "exec", ident.split("#")[1], status, status)


def test_dependencies_finish_first_and_results_come_in_completion_order():
    m = manifest({"a": (), "b": ("a",), "c": ("b",), "d": ()})
    seen: list[str] = []
    lock = threading.Lock()

    def run(ident: str) -> ItemResult:
        with lock:
            seen.append(ident)
        return result(ident)

    done = scheduler.execute(Dag.from_manifest(m), m, run, jobs=1)
    assert [r.id for r in done] == seen
    assert seen.index("exec#a") < seen.index("exec#b") < seen.index("exec#c")
    assert sorted(seen) == ["exec#a", "exec#b", "exec#c", "exec#d"]


def test_never_more_than_jobs_at_once():
    m = manifest({f"x{i}": () for i in range(12)})
    now = peak = 0
    lock = threading.Lock()

    def run(ident: str) -> ItemResult:
        nonlocal now, peak
        with lock:
            now += 1
            peak = max(peak, now)
        time.sleep(0.01)
        with lock:
            now -= 1
        return result(ident)

    done = scheduler.execute(Dag.from_manifest(m), m, run, jobs=3)
    assert len(done) == 12 and peak == 3


def test_a_failure_skips_dependents_and_starts_nothing_new():
    m = manifest(
        {"bad": (), "child": ("bad",), "grandchild": ("child",), "later": ("slow",), "slow": ()}
    )
    release = threading.Event()

    def run(ident: str) -> ItemResult:
        if ident == "exec#slow":
            release.wait(5)  # still running when `bad` fails
            return result(ident)
        if ident == "exec#bad":
            release.set()
            return result(ident, FAILED)
        return result(ident)

    done = {r.id: r for r in scheduler.execute(Dag.from_manifest(m), m, run, jobs=2)}
    assert done["exec#bad"].status == FAILED
    assert (
        done["exec#child"].status == SKIPPED
        and done["exec#child"].message == "skipped because exec#bad failed"
    )
    assert done["exec#grandchild"].message == "skipped because exec#bad failed"
    assert done["exec#slow"].status == CHANGED  # in flight: it finishes
    assert done["exec#later"].message == "not started: another item failed"


def test_without_stop_on_failure_independent_items_go_on():
    m = manifest({"bad": (), "child": ("bad",), "other": ()})

    def run(ident: str) -> ItemResult:
        return result(ident, FAILED if ident == "exec#bad" else CHANGED)

    done = {
        r.id: r
        for r in scheduler.execute(Dag.from_manifest(m), m, run, jobs=1, stop_on_failure=False)
    }
    assert done["exec#other"].status == CHANGED and done["exec#child"].status == SKIPPED


class CountingManifest(Manifest):
    lookups = 0

    def get(self, ident: str) -> Item | None:
        CountingManifest.lookups += 1
        return super().get(ident)


def test_work_is_linear_in_items():
    """Each item is looked up a bounded number of times, however many are ready at once."""
    n = 3000
    base = manifest({f"x{i}": () for i in range(n)})
    m = CountingManifest(items=base.items)
    dag = Dag.from_manifest(m)
    CountingManifest.lookups = 0
    done = scheduler.execute(dag, m, result, jobs=2)
    assert len(done) == n
    assert CountingManifest.lookups <= 2 * n


def test_inline_items_run_in_the_scheduler_thread_while_workers_run_the_rest():
    """File items (an `inline` type) run in the caller's thread, one after
    another; exec items go to workers, which are handed their items first so
    that a slow exec overlaps the inline work instead of waiting behind it."""
    files = [
        Item("file", f"/tmp/f{i}", freeze({"ensure": "present", "depends_on": ()}))
        for i in range(5)
    ]
    slow = Item("exec", "slow", freeze({"command": "true", "depends_on": ()}))
    after = Item("file", "/tmp/z", freeze({"ensure": "present", "depends_on": ("exec#slow",)}))
    m = Manifest(items=tuple(sorted([*files, slow, after], key=lambda i: i.id)))
    threads: dict[str, int] = {}
    slow_started = threading.Event()
    inline_saw_slow_running: list[bool] = []

    def run(ident: str) -> ItemResult:
        threads[ident] = threading.get_ident()
        if ident == "exec#slow":
            slow_started.set()
            time.sleep(0.05)
        else:
            inline_saw_slow_running.append(slow_started.is_set())
        return result(ident)

    done = scheduler.execute(Dag.from_manifest(m), m, run, jobs=4)
    main = threading.get_ident()
    assert {r.id for r in done} == {i.id for i in m.items}
    assert all(threads[i.id] == main for i in [*files, after])
    assert threads["exec#slow"] != main
    assert all(inline_saw_slow_running)  # the exec was handed out before any file ran
    order = [r.id for r in done]
    assert order.index(after.id) > order.index("exec#slow")


def test_a_signal_delivered_to_a_worker_thread_is_handled_while_items_run():
    """Python runs signal handlers only in the main thread, between bytecodes;
    the kernel may hand a process's signal to any thread. The scheduler's
    thread therefore never blocks untimed while items run: a Ctrl-C that lands
    on a worker still reaches the handler (which stops the run) at once,
    not when the running command happens to end."""
    import signal

    m = manifest({"long": ()})
    handled = threading.Event()
    worker: list[int] = []

    def run(ident: str) -> ItemResult:
        worker.append(threading.get_ident())
        time.sleep(0.3)  # the scheduler's thread is waiting for this item by now
        # The signal goes to this worker thread, not to the main thread.
        signal.pthread_kill(threading.get_ident(), signal.SIGUSR1)
        handled.wait(5)  # a command that runs until Ctrl-C stops it
        return result(ident)

    previous = signal.signal(signal.SIGUSR1, lambda *_: handled.set())
    try:
        t0 = time.monotonic()
        done = scheduler.execute(Dag.from_manifest(m), m, run, jobs=2)
        elapsed = time.monotonic() - t0
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert worker and worker[0] != threading.get_ident()
    assert handled.is_set() and [r.id for r in done] == ["exec#long"]
    assert elapsed < 2, f"the handler ran only after {elapsed:.1f} s"
