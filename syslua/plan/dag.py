"""The execution DAG (SPEC section 4).

Edges (an edge a -> b means a finishes before b starts):
- `depends_on`: the dependency -> the item;
- `subscribe`: the target -> the subscriber;
- `after` (set by the CCM manifest reader: each resource after the one
  written before it): the earlier item -> the item. This edge only orders:
  when the earlier item fails, the item is not skipped for it
  (`Dag.ordering`), as CCM runs the rest of a manifest after a failure;
- the item's kind names items that must finish first
  (`Ordered.predecessors`): a file inside a directory managed by
  another file item waits for the directory (for removal the order is
  reversed by the executor);
- the item's kind requires what another item's kind provides
  (`Ordered.requires`/`provides`): an exec running a package's `bin` program waits
  for the package;
- children nested under an item (an `apply`'s children, a file tree's
  members): each child -> its parent (the parent finishes after its
  children), and the parent's own dependencies -> each child;
- an item using a build's or bind's outputs (`$${build:<hash>:out}`): the
  item providing `output:<hash>` -> the item.

Each edge is found with why it exists (the names above; `parent directory`
or the like, in the kind's words, `Ordered.why_before`), which only
`explained` keeps, for `sys graph`: the planner pays nothing for it.

Waves are Kahn's algorithm over in-degree counts (linear in nodes and
edges); networkx, whose import alone costs more than a whole `sys plan` of
1,000 files, is loaded only to list every cycle when there is one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping
from typing import Any

from syslua.errors import ConfigError
from syslua.manifest.model import Item, Manifest
from syslua.manifest.primitives import references
from syslua.resources import capability
from syslua.resources import get as get_type
from syslua.resources import has as has_type
from syslua.resources.kind import Kind, Ordered, Scheduling


class CycleError(ConfigError):
    """The items depend on each other in a circle."""


def in_dag(kind: Kind[Any]) -> bool:
    """Whether the kind's items run on the DAG (an env variable does not)."""
    scheduling = capability(kind, Scheduling)
    return scheduling is None or scheduling.in_dag


def graph_items(manifest: Manifest) -> list[Item]:
    """The items the graph orders: those of known kinds that run in it."""
    ordered = {t: has_type(t) and in_dag(get_type(t)) for t in {i.type for i in manifest}}
    return [i for i in manifest if ordered[i.type]]


class Dag:
    """Nodes are item ids of types that execute; `preds[n]` must finish before n."""

    def __init__(
        self,
        nodes: list[str],
        preds: Mapping[str, Collection[str]],
        ordering: dict[str, set[str]] | None = None,
    ) -> None:
        self.nodes = nodes
        # A sorted tuple per node (the empty one shared): a set each cost
        # 2.4 MiB for 10,000 items, most of them with one pred or none.
        self.preds: dict[str, tuple[str, ...]] = {n: _sorted(preds.get(n, ())) for n in nodes}
        # node -> those of its preds that only order it (`after`): their
        # failure does not skip it. A pred that is also a real dependency is not here.
        self.ordering = ordering or {}
        self._waves: list[list[str]] | None = None

    @classmethod
    def from_manifest(cls, manifest: Manifest, reasons: Reasons | None = None) -> Dag:
        """The graph of `manifest`'s items (the edges in the module's docstring).
        A CycleError when they depend on each other in a circle. `reasons`,
        when given, gets why each edge found exists (`sys graph`); the planner
        does not ask, and pays nothing for them."""
        edges = _Edges(manifest) if reasons is None else _Explained(manifest, reasons)
        ids, preds, ordering = sorted(edges.ids), edges.preds, edges.ordering
        if not ordering:
            dag = cls(ids, preds)
            dag.check(manifest)
            return dag
        hard = {n: set(before) for n, before in preds.items()}
        dag = cls(ids, *_with_order(preds, ordering))
        try:
            dag.check(manifest)
        except CycleError:
            # A `require` that reaches forward in manifest order: the required
            # item comes first, and the order edges against it are dropped.
            cls(ids, hard).check(manifest)  # a real cycle is still an error
            dag = cls(ids, *_with_order(hard, _consistent(hard, ordering)))
            dag.check(manifest)
        return dag

    def check(self, manifest: Manifest | None = None) -> None:
        """Raise a CycleError listing the cycles, if there are any (computes the waves)."""
        self.waves(manifest)

    def waves(self, manifest: Manifest | None = None) -> list[list[str]]:
        """Topological generations: each wave only needs earlier waves, and each
        is sorted. A CycleError (naming where items were declared, given the
        manifest) when some nodes are never ready."""
        if self._waves is None:
            pending = {n: len(self.preds[n]) for n in self.nodes}
            succ: dict[str, list[str]] = {}  # only the nodes that have some
            for node, before in self.preds.items():
                for b in before:
                    succ.setdefault(b, []).append(node)
            wave = sorted(n for n, count in pending.items() if count == 0)
            out = []
            while wave:
                out.append(wave)
                ready = []
                for node in wave:
                    for after in succ.get(node, ()):
                        pending[after] -= 1
                        if pending[after] == 0:
                            ready.append(after)
                wave = sorted(ready)
            if sum(map(len, out)) != len(self.nodes):
                raise self._cycle_error(manifest)
            self._waves = out
        return self._waves

    def successors(self) -> dict[str, set[str]]:
        succ: dict[str, set[str]] = {n: set() for n in self.nodes}
        for node, before in self.preds.items():
            for b in before:
                succ[b].add(node)
        return succ

    def _cycle_error(self, manifest: Manifest | None) -> CycleError:
        import networkx as nx

        graph = nx.DiGraph()
        graph.add_nodes_from(self.nodes)
        graph.add_edges_from((b, n) for n, before in self.preds.items() for b in before)
        cycles = sorted((_rotate(c) for c in nx.simple_cycles(graph)), key=lambda c: (len(c), c))[
            :10
        ]
        lines = ["dependency cycle:" if len(cycles) == 1 else f"{len(cycles)} dependency cycles:"]
        for cycle in cycles:
            lines.append("  " + " -> ".join([*cycle, cycle[0]]))
            if manifest is not None:
                for node in cycle:
                    where = manifest.source_of(node)
                    if where:
                        lines.append(f"      {node} declared at {where}")
        return CycleError(
            "\n".join(lines), hint="Remove one of the depends_on/subscribe links to break it."
        )


# (before, after) -> why the edge exists, in the order found: `depends_on`,
# `subscribe`, `after`, `member`, `parent directory`, `provides bin:rg`...
Reasons = dict[tuple[str, str], list[str]]
MEMBER = "member"
OUTPUT = "uses its output"
DEPENDS_INHERITED = "depends_on (inherited)"  # the parent's (or an ancestor's)
AFTER_INHERITED = "after (inherited)"
KIND = "predecessor"  # an edge its kind names (`Ordered.predecessors`): it says why


class _Edges:
    """The edges of a manifest's graph, as they are found: `preds` (each
    node's predecessors, only for nodes that have some) and `ordering` (the
    edges that only order, from `after`). Each edge is added with why it
    exists, which only `_Explained` keeps: the planner's graph pays nothing
    for it but passing a constant."""

    def __init__(self, manifest: Manifest) -> None:
        self.manifest = manifest
        items = graph_items(manifest)
        self.ids = {i.id for i in items}
        self.preds: dict[str, set[str]] = {}
        self.ordering: dict[str, set[str]] = defaultdict(set)
        hints = {t: capability(get_type(t), Ordered) for t in {i.type for i in items}}
        provided = self._provided(items, hints)
        # Placeholders are looked for only when something provides outputs.
        outputs = any(c.startswith("output:") for c in provided)
        for item in items:
            self._declared(item)
            kind = hints[item.type]
            if kind is not None:
                self._kinds(item, kind, provided)
            if outputs:
                for h in references(item):
                    if f"output:{h}" in provided:
                        self.edge(provided[f"output:{h}"], item.id, OUTPUT)
        self._members(items)

    def edge(self, before: str, after: str, why: str) -> bool:
        """Add the edge `before -> after` (`why`: for `_Explained`); whether it is one."""
        if before in self.ids and after in self.ids and before != after:
            found = self.preds.get(after)
            if found is None:
                self.preds[after] = {before}
            else:
                found.add(before)
            return True
        return False

    def order(self, before: str, after: str, why: str = "after") -> bool:
        if before in self.ids and after in self.ids and before != after:
            self.ordering[after].add(before)
            return True
        return False

    @staticmethod
    def _provided(items: list[Item], hints: dict[str, Ordered | None]) -> dict[str, str]:
        """What each item provides (`bin:rg`, `output:<hash>`) -> the item."""
        provided: dict[str, str] = {}
        for item in items:
            kind = hints[item.type]
            if kind is not None:
                for need in kind.provides(item):
                    provided[need] = item.id
        return provided

    def _declared(self, item: Item) -> None:
        """`depends_on`, `subscribe` and (ordering only) `after`."""
        for dep in item.get("depends_on", ()):
            self.edge(dep, item.id, "depends_on")
        for target in item.get("subscribe", ()):
            self.edge(target, item.id, "subscribe")
        for before in item.get("after", ()):
            self.order(before, item.id)

    def _kinds(self, item: Item, kind: Ordered, provided: dict[str, str]) -> None:
        """What the item's kind says must come first, and what it requires."""
        for before in kind.predecessors(item, self.manifest):
            self.edge(before, item.id, KIND)
        if provided:
            for need in kind.requires(item):
                if need in provided:
                    self.edge(provided[need], item.id, f"provides {need}")

    def _members(self, items: list[Item]) -> None:
        """Members before the item they are part of; that item's own
        dependencies (and those of every item above it) before its members."""
        members: dict[str, list[Item]] = defaultdict(list)
        for item in items:
            if item.parent:
                members[item.parent].append(item)
        for whole, parts in members.items():
            deps = _inherited_deps(self.manifest, whole)
            earlier = _inherited_deps(self.manifest, whole, "after")
            for part in parts:
                self.edge(part.id, whole, MEMBER)
                for dep in deps:
                    self.edge(dep, part.id, DEPENDS_INHERITED)
                for before in earlier:
                    self.order(before, part.id, AFTER_INHERITED)


class _Explained(_Edges):
    """The edges and why each exists, in `reasons` (`sys graph`)."""

    def __init__(self, manifest: Manifest, reasons: Reasons) -> None:
        self.reasons = reasons
        super().__init__(manifest)

    def edge(self, before: str, after: str, why: str) -> bool:
        added = super().edge(before, after, why)
        if added:
            self._note(before, after, why)
        return added

    def order(self, before: str, after: str, why: str = "after") -> bool:
        added = super().order(before, after, why)
        if added:
            self._note(before, after, why)
        return added

    def _note(self, before: str, after: str, why: str) -> None:
        if why == KIND:  # the item's kind says why
            item = self.manifest.get(after)
            kind = capability(get_type(item.type), Ordered) if item is not None else None
            why = kind.why_before(item, before, self.manifest) if kind and item else "ordered"
        said = self.reasons.setdefault((before, after), [])
        if why not in said:
            said.append(why)


def _sorted(names: Collection[str]) -> tuple[str, ...]:
    return tuple(names) if len(names) < 2 else tuple(sorted(names))


def _with_order(
    preds: dict[str, set[str]], ordering: dict[str, set[str]]
) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """`preds` with the ordering edges added, and the ordering-only preds per node."""
    out = {n: set(before) for n, before in preds.items()}
    soft: dict[str, set[str]] = {}
    for node, before in ordering.items():
        mine = out.setdefault(node, set())
        only = before - mine
        mine |= before
        if only:
            soft[node] = only
    return out, soft


def _consistent(hard: dict[str, set[str]], ordering: dict[str, set[str]]) -> dict[str, set[str]]:
    """The ordering edges that do not close a cycle with the real edges (and
    the ordering edges kept before them), in a stable order."""
    succ: dict[str, set[str]] = defaultdict(set)
    for node, firsts in hard.items():
        for b in firsts:
            succ[b].add(node)
    kept: dict[str, set[str]] = defaultdict(set)
    for node in sorted(ordering):
        for first in sorted(ordering[node]):
            # first -> node closes a cycle when `first` is reachable from `node`.
            seen, stack = {node}, [node]
            while stack and first not in seen:
                for nxt in succ[stack.pop()]:
                    if nxt not in seen:
                        seen.add(nxt)
                        stack.append(nxt)
            if first not in seen:
                kept[node].add(first)
                succ[first].add(node)
    return kept


def _inherited_deps(manifest: Manifest, apply_id: str, prop: str = "depends_on") -> list[str]:
    """depends_on (or `after`) of an apply and of every apply above it: all its
    descendants wait for them."""
    deps: list[str] = []
    current = manifest.get(apply_id)
    while current is not None:
        deps.extend(current.get(prop, ()))
        current = manifest.get(current.parent) if current.parent else None
    return deps


def _rotate(cycle: list[str]) -> list[str]:
    """Start a cycle at its smallest node, so messages are stable."""
    i = cycle.index(min(cycle))
    return cycle[i:] + cycle[:i]


def explained(manifest: Manifest) -> tuple[Dag, list[tuple[str, str, list[str]]]]:
    """The graph of `manifest` and each of its edges with why it exists:
    (before, after, reasons), sorted (`sys graph`). An ordering edge the graph
    dropped (an `after` against a `require` that reaches forward) is not among them."""
    reasons: Reasons = {}
    dag = Dag.from_manifest(manifest, reasons)
    edges = [(b, n, reasons.get((b, n), ["ordered"])) for n in dag.nodes for b in dag.preds[n]]
    return dag, sorted(edges)
