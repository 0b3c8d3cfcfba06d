"""The ready-queue scheduler: the only code in syslua that knows about concurrency.

An item starts as soon as every item it depends on has finished and one of
the `jobs` workers is free (items are handed to a worker only then, so after
a failure nothing queued starts). When an item fails, its dependents are
skipped with the reason; with `stop_on_failure` (atomic apply) no new item
starts at all, items already running finish, and everything not started is
reported as not started, but for items declared with `fail_on_error =
false` (a CCM manifest's default), which still start: CCM runs the rest of a
manifest after a failure. An edge that only orders (`Dag.ordering`, a CCM
manifest's order) never skips the later item. Aggregating items (an `apply`, which only reports on
its children) still run when their own children failed, to report the count.
When `should_stop` says so (Ctrl-C), no new item starts either, as after a
failure. Resource code stays plain sequential code.
"""

from __future__ import annotations

import os
import traceback
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from syslua.execute.item import FAILED, ItemResult, skipped
from syslua.manifest.model import Manifest
from syslua.plan.dag import Dag
from syslua.resources import get as get_type

DEFAULT_JOBS = max(4, min(16, (os.cpu_count() or 1) * 4))


def execute(
    dag: Dag,
    manifest: Manifest,
    run: Callable[[str], ItemResult],
    *,
    jobs: int | None = None,
    stop_on_failure: bool = True,
    on_start: Callable[[str], None] | None = None,
    on_finish: Callable[[ItemResult], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> list[ItemResult]:
    """Run every node of `dag`; returns results in completion order.

    Linear in items and edges: each node keeps a count of unfinished
    predecessors, a finished node decrements only its successors' counts, and
    a node whose count reaches zero joins the ready queue once. Nothing
    rescans the queue: a ready node waits in it only until a worker is free.
    """
    waiting = {node: len(dag.preds[node]) for node in dag.nodes}
    successors = dag.successors()
    ready: deque[str] = deque(sorted(node for node, n in waiting.items() if n == 0))
    done: list[ItemResult] = []
    bad: dict[str, str] = {}  # item -> the failed item that stopped it
    stopped = False
    why_stopped = "another item failed"
    running: dict[Future[ItemResult], str] = {}

    def finish(ident: str, result: ItemResult) -> None:
        done.append(result)
        if on_finish is not None:
            on_finish(result)
        unblocked = []
        for after in successors[ident]:
            waiting[after] -= 1
            if waiting[after] == 0:
                unblocked.append(after)
        ready.extend(sorted(unblocked))

    workers = jobs or DEFAULT_JOBS
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="syslua") as pool:
        while ready or running:
            # Hand ready items to free workers; items that will not run
            # (skipped) need no worker and are settled on the spot.
            while ready and len(running) < workers:
                if why_stopped != "interrupted" and should_stop is not None and should_stop():
                    stopped, why_stopped = True, "interrupted"
                ident = ready.popleft()
                item = manifest.get(ident)
                assert item is not None
                soft = dag.ordering.get(ident, ())
                failed_deps = sorted(bad[p] for p in dag.preds[ident] if p in bad and p not in soft)
                aggregate = get_type(item.type).aggregates
                own_children = aggregate and all(
                    getattr(manifest.get(p), "parent", None) == ident for p in failed_deps
                )
                if failed_deps and not own_children:
                    bad[ident] = failed_deps[0]
                    finish(ident, skipped(item, f"skipped because {failed_deps[0]} failed"))
                elif (
                    stopped
                    and not aggregate
                    and not (item.get("fail_on_error") is False and why_stopped != "interrupted")
                ):
                    bad[ident] = ident
                    finish(ident, skipped(item, f"not started: {why_stopped}"))
                else:
                    if on_start is not None:
                        on_start(ident)
                    running[pool.submit(run, ident)] = ident
            if not running:
                continue
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                ident = running.pop(future)
                try:
                    result = future.result()
                except Exception as e:  # a bug in resource code: report it as this item's failure
                    item = manifest.get(ident)
                    assert item is not None
                    trace = "".join(traceback.format_exception(e)).rstrip()
                    result = skipped(
                        item,
                        f"internal error: {type(e).__name__}: {e} "
                        f"(a bug in syslua; please report it)\n{trace}",
                    )
                    result.status = FAILED
                    result.mutated = True
                if result.status == FAILED:
                    bad[ident] = ident
                    if stop_on_failure:
                        stopped = True
                finish(ident, result)
    return done
