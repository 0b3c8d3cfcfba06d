"""A picture of the plan (`sys graph`): its items, their waves, and why each
edge of the execution graph exists, as Graphviz DOT or as plain data.

Steps:
1. One node per item the plan lists, named as the plan names it: the items
   removed first (no wave), the items of each wave of the DAG, and the items
   outside it (env variables, written after the last wave; no wave). The
   directories created on the way to an item are not items, and not nodes.
2. One edge per pair of items the DAG orders, with why (`dag.explained`):
   `depends_on`, `subscribe`, `after`, `member`, `parent directory`,
   `provides bin:rg`, ...; several reasons are joined by ", ".
3. With `changes`, only the items the apply would act on (that change, or
   that cannot be applied), and the edges between them, as `terraform
   graph` draws a plan.
"""

from __future__ import annotations

from typing import Any

from syslua.plan.dag import explained
from syslua.plan.planner import Entry, Plan

REMOVED = "removed"  # the cluster of removals, before the first wave
AFTER = "after"  # the cluster of the items outside the DAG, after the last wave
# How DOT colours a node, by the symbol the plan gives it.
COLORS = {"+": "darkgreen", "~": "darkgoldenrod", "-": "red3", "!": "red", "=": "gray40"}


class Node:
    """One item of the picture: its id, the plan's label and line, where it runs."""

    __slots__ = ("id", "type", "label", "subject", "symbol", "action", "wave", "place")

    def __init__(self, entry: Entry, wave: int | None, place: str) -> None:
        self.id = entry.id
        self.type = entry.type
        self.label = entry.label
        self.subject = entry.subject or f"{entry.type} {entry.label}"
        self.symbol = entry.symbol
        self.action = entry.decision.action
        self.wave = wave
        self.place = place  # "wave", REMOVED or AFTER

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": self.type,
            "label": self.label,
            "wave": self.wave,
            "action": self.action,
            "symbol": self.symbol,
        }


class Graph:
    """The nodes, in plan order, and the edges (before, after, reason), sorted."""

    def __init__(self, nodes: list[Node], edges: list[tuple[str, str, str]]) -> None:
        self.nodes = nodes
        self.edges = edges

    @classmethod
    def of(cls, plan: Plan, *, changes: bool = False) -> Graph:
        """The picture of `plan` (with `changes`, only of what it would change)."""
        entries = {e.id: e for e in plan.entries if not e.created_parent}
        nodes = [Node(e, None, REMOVED) for e in plan.removals]
        for n, wave in enumerate(plan.waves, 1):
            nodes.extend(Node(entries[i], n, "wave") for i in wave)
        nodes.extend(Node(e, None, AFTER) for e in plan.values)
        _, found = explained(plan.manifest)
        edges = [(b, a, ", ".join(why)) for b, a, why in found]
        if changes:
            acts = {e.id for e in plan.all_entries if e.runs}
            nodes = [n for n in nodes if n.id in acts]
            edges = [e for e in edges if e[0] in acts and e[1] in acts]
        return cls(nodes, edges)

    def to_dict(self) -> dict[str, Any]:
        return {
            "nodes": [n.to_dict() for n in self.nodes],
            "edges": [{"from": b, "to": a, "reason": why} for b, a, why in self.edges],
        }

    def to_dot(self) -> str:
        """Graphviz DOT: a cluster per wave (`cluster_wave1`...), one for the
        removals before them and one for the items written after them."""
        out = [
            "digraph syslua {",
            "  rankdir=LR;",
            '  node [shape=box, fontname="monospace"];',
            "  edge [fontsize=10];",
        ]
        clusters: dict[str, tuple[str, list[Node]]] = {}
        for node in self.nodes:
            if node.place == "wave":
                name, title = f"cluster_wave{node.wave}", f"Wave {node.wave}"
            elif node.place == REMOVED:
                name, title = "cluster_removed", "Removed first"
            else:
                name, title = "cluster_after", "After the last wave"
            clusters.setdefault(name, (title, []))[1].append(node)
        for name, (title, members) in clusters.items():
            out.append(f"  subgraph {name} {{")
            out.append(f"    label={label(title)};")
            for node in members:
                text = label(f"{node.symbol} {node.subject}")
                color = COLORS.get(node.symbol, "black")
                out.append(f"    {ident(node.id)} [label={text}, color={color}];")
            out.append("  }")
        for before, after, why in self.edges:
            out.append(f"  {ident(before)} -> {ident(after)} [label={label(why)}];")
        out.append("}")
        return "\n".join(out) + "\n"


_NAMED = {"\n": "n", "\r": "r"}  # as the plan shows them: `\n`, `\r`


def _escape(text: str, backslashes: str) -> str:
    """`text` in a DOT quoted string: `"` and `\\` escaped, and every control
    character (and byte that was not UTF-8) written after `backslashes` as
    the plan shows it (`n`, `r`, `x1b`), so that nothing reaches the terminal raw."""
    if text.isascii() and text.isprintable() and '"' not in text and "\\" not in text:
        return f'"{text}"'  # the common case, without a look at each character
    out = []
    for c in text:
        n = ord(c)
        if c in '"\\':
            out.append("\\" + c)
        elif c in _NAMED:
            out.append(backslashes + _NAMED[c])
        elif n < 0x20 or n == 0x7F or 0x80 <= n < 0xA0:
            out.append(f"{backslashes}x{n:02x}")
        elif 0xDC80 <= n <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
            out.append(f"{backslashes}x{n - 0xDC00:02x}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def ident(text: str) -> str:
    """A DOT node id: quoted, one id per text (a control character is `\\xNN`,
    which a path's own backslash, written `\\\\`, cannot forge)."""
    return _escape(text, "\\")


def label(text: str) -> str:
    """A DOT label: quoted, drawn as written (a control character is drawn as
    `\\xNN`; Graphviz reads a lone backslash as an escape of its own)."""
    return _escape(text, "\\\\")
