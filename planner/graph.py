"""Helpers over the captured step graph (a networkx.DiGraph; see the format in the planner docs).

Each node is one value: `op` (a primitive name or a source), `args` (("node", id) or
("scalar", v) entries), `attrs`, `shape`, `dtype`, `device`. An edge u -> v carries `pos`, the
sorted argument positions of v where u appears. `g.graph["next_id"]` is the next free node id.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Callable, Iterator
from typing import Any

import networkx as nx

from runtime.autograd.node import Meta
from runtime.ops import REGISTRY

SOURCES = frozenset({"input", "state", "const", "rand"})
# the sources the step holds from its start to its end (a random draw is made where eager mode
# made it)
HELD_SOURCES = SOURCES - {"rand"}

Arg = tuple[str, Any]


class GraphError(ValueError):
    """A graph breaks an invariant of the format."""


def new_graph(**attrs: Any) -> nx.DiGraph:
    """An empty networkx DiGraph with graph attributes ``attrs``, made as networkx's own
    ``DiGraph.__new__`` makes one (``object.__new__``, its comment says). That ``__new__`` is a
    backend dispatcher whose first call in a process compiles its wrapper: 0.6 ms of a warm
    first call, which makes no other graph (the kept plan's graph loads lazily). A capture
    reads networkx's own dicts, so it wants networkx's class whatever backend is set."""
    g = object.__new__(nx.DiGraph)
    g.__init__(**attrs)  # type: ignore[misc]
    return g


def add_value(g: nx.DiGraph, op: str, args: list[Arg], attrs: dict[str, Any],
              shape: tuple[int, ...], dtype: Any, device: str, **extra: Any) -> int:
    """Add one value node (with its argument edges) under the next free id; return the id."""
    v = g.graph.get("next_id", max(g.nodes, default=-1) + 1)
    g.graph["next_id"] = v + 1
    g.add_node(v, op=op, args=[], attrs=dict(attrs), shape=tuple(shape), dtype=dtype,
               device=device, **extra)
    set_args(g, v, args)
    return v


def set_args(g: nx.DiGraph, v: int, args: list[Arg]) -> None:
    """Replace v's args and rebuild its incoming edges to match."""
    g.remove_edges_from(list(g.in_edges(v)))
    g.nodes[v]["args"] = list(args)
    for u, pos in _arg_positions(args).items():
        g.add_edge(u, v, pos=pos)


def _arg_positions(args: list[Arg]) -> dict[int, list[int]]:
    positions: dict[int, list[int]] = {}
    for i, (kind, x) in enumerate(args):
        if kind == "node":
            positions.setdefault(x, []).append(i)
    return positions


def arg_nodes(g: nx.DiGraph, v: int) -> list[int]:
    """The node ids among v's args, in argument order (repeats kept)."""
    return [x for kind, x in g.nodes[v]["args"] if kind == "node"]


def metas(g: nx.DiGraph, v: int) -> list[Any]:
    """v's args as `infer` takes them: a Meta per tensor, the value itself per scalar."""
    out: list[Any] = []
    for kind, x in g.nodes[v]["args"]:
        if kind == "node":
            n = g.nodes[x]
            out.append(Meta(n["shape"], n["dtype"], n["device"]))
        else:
            out.append(x)
    return out


def map_nodes(template: Any, fn: Any) -> Any:
    """Rebuild a nested tuple/list/dict template with every ("node", id) leaf mapped by fn."""
    if _is_node_ref(template):
        return ("node", fn(template[1]))
    if isinstance(template, dict):
        return {k: map_nodes(x, fn) for k, x in template.items()}
    if isinstance(template, list):
        return [map_nodes(x, fn) for x in template]
    if isinstance(template, tuple):
        items = [map_nodes(x, fn) for x in template]
        return type(template)(*items) if hasattr(template, "_fields") else tuple(items)
    return template


def template_nodes(template: Any) -> Iterator[int]:
    """The node ids referenced by ("node", id) leaves of a nested template."""
    if _is_node_ref(template):
        yield template[1]
    elif isinstance(template, dict):
        for x in template.values():
            yield from template_nodes(x)
    elif isinstance(template, (list, tuple)):
        for x in template:
            yield from template_nodes(x)


def _is_node_ref(x: Any) -> bool:
    return (type(x) is tuple and len(x) == 2 and x[0] == "node"
            and isinstance(x[1], int) and not isinstance(x[1], bool))


def replace_uses(g: nx.DiGraph, old: int, new: int) -> None:
    """Make every consumer of `old`, and the graph's outputs/writes/returns, use `new`."""
    def swap(u: int) -> int:
        return new if u == old else u

    for c in list(g.successors(old)):
        set_args(g, c, [("node", new) if a == ("node", old) else a for a in g.nodes[c]["args"]])
    gr = g.graph
    if "outputs" in gr:
        gr["outputs"] = [swap(u) for u in gr["outputs"]]
    if "writes" in gr:
        gr["writes"] = [(slot, swap(u)) for slot, u in gr["writes"]]
    if "returns" in gr:
        gr["returns"] = map_nodes(gr["returns"], swap)


def roots(g: nx.DiGraph) -> set[int]:
    """The values the step must produce: outputs, written state, returned nodes, and the side
    effects: random draws (they advance a generator) and checks (they raise on bad values, as
    eager mode does), which stay even when nothing reads them."""
    gr = g.graph
    keep = set(gr.get("outputs", ()))
    keep.update(u for _, u in gr.get("writes", ()) if u >= 0)
    keep.update(template_nodes(gr.get("returns")))
    keep.update(v for v, op in g.nodes(data="op") if has_side_effect(op))
    return keep


def has_side_effect(op: str) -> bool:
    """Whether a node of this op must run although nothing reads its value."""
    if op == "rand":
        return True
    prim = REGISTRY.get(op)
    return prim is not None and prim.check


def remove_dead(g: nx.DiGraph) -> int:
    """Remove every node no root depends on; return how many were removed."""
    live: set[int] = set()
    stack = [r for r in roots(g) if r in g]
    pred = g.pred
    while stack:  # one walk up from every root: each node is visited once
        v = stack.pop()
        if v not in live:
            live.add(v)
            stack.extend(u for u in pred[v] if u not in live)
    dead = [v for v in g.nodes if v not in live]
    g.remove_nodes_from(dead)
    return len(dead)


def topo_order(g: nx.DiGraph, key: Callable[[int], Any] | None = None) -> list[int]:
    """Node ids in a topological order, the lowest id (or with ``key``, the least key, then
    the earliest in the graph's node order) first among the ready ones: networkx's
    ``lexicographical_topological_sort``, 5x faster (it is the graph passes' walk: rnn's
    passes sorted their graph 11 times, 65 of 150 ms of planning)."""
    pred = g._pred  # networkx's own dicts: its views cost 2x the walk (1.9 of gpt's 3 ms)
    remaining = {v: len(p) for v, p in pred.items()}
    if key is None:
        ready: list[Any] = [v for v, d in remaining.items() if d == 0]
    else:
        position = {v: i for i, v in enumerate(g)}
        ready = [(key(v), position[v], v) for v, d in remaining.items() if d == 0]
    heapq.heapify(ready)
    order = []
    succ = g._succ
    while ready:
        v = heapq.heappop(ready)
        if key is not None:
            v = v[2]
        order.append(v)
        for w in succ[v]:
            left = remaining[w] - 1
            remaining[w] = left
            if not left:
                heapq.heappush(ready, w if key is None else (key(w), position[w], w))
    if len(order) != len(remaining):
        raise nx.NetworkXUnfeasible("Graph contains a cycle or graph changed during iteration")
    return order


def checking() -> bool:
    """Whether the planner verifies its graphs after the passes (``check``):
    ``$BACKPLAN_CHECK_GRAPHS`` is 1 (the test suite sets it)."""
    return os.environ.get("BACKPLAN_CHECK_GRAPHS") == "1"


def check(g: nx.DiGraph) -> None:
    """Validate the format's invariants; raise GraphError naming the first offending node."""
    for v in g.nodes:
        _check_args(g, v)
    if not nx.is_directed_acyclic_graph(g):
        cycle = [u for u, _ in nx.find_cycle(g)]
        raise GraphError(f"graph has a cycle through nodes {cycle}")
    for v in g.nodes:
        _check_node(g, v)
    gr = g.graph
    refs = [*gr.get("outputs", ()), *(u for _, u in gr.get("writes", ()) if u >= 0),
            *template_nodes(gr.get("returns"))]  # a write of -1 sets the slot to None
    missing = sorted({u for u in refs if u not in g})
    if missing:
        raise GraphError(f"graph outputs/writes/returns refer to missing nodes {missing}")


def _fail(g: nx.DiGraph, v: int, what: str) -> GraphError:
    return GraphError(f"node {v} ({g.nodes[v].get('op')!r}): {what}")


def _check_args(g: nx.DiGraph, v: int) -> None:
    args = g.nodes[v].get("args")
    if not isinstance(args, list):
        raise _fail(g, v, f"args must be a list, got {args!r}")
    for i, a in enumerate(args):
        if not (isinstance(a, tuple) and len(a) == 2 and a[0] in ("node", "scalar")):
            raise _fail(g, v, f"arg {i} is {a!r}, expected ('node', id) or ('scalar', value)")
        if a[0] == "node" and a[1] not in g:
            raise _fail(g, v, f"arg {i} refers to missing node {a[1]!r}")
    expected = _arg_positions(args)
    actual = {u: g.edges[u, v].get("pos") for u in g.predecessors(v)}
    if expected != actual:
        raise _fail(g, v, f"incoming edges {actual} do not match args (expected {expected})")


def _check_node(g: nx.DiGraph, v: int) -> None:
    n = g.nodes[v]
    op = n.get("op")
    for key in ("attrs", "shape", "dtype", "device"):
        if key not in n:
            raise _fail(g, v, f"missing attribute {key!r}")
    if op in SOURCES:
        _check_source(g, v)
        return
    prim = REGISTRY.get(op)
    if prim is None:
        raise _fail(g, v, "unknown op: neither a source nor a registered primitive")
    try:
        shape, dtype = prim.infer(*metas(g, v), **n["attrs"])
    except Exception as e:  # any failure of the rule means a malformed node
        raise _fail(g, v, f"infer rejects its arguments: {type(e).__name__}: {e}") from None
    if tuple(shape) != n["shape"] or dtype != n["dtype"]:
        raise _fail(g, v, f"shape/dtype {n['shape']}/{n['dtype']} differ from what infer gives, "
                          f"{tuple(shape)}/{dtype}")


def _check_source(g: nx.DiGraph, v: int) -> None:
    n = g.nodes[v]
    if n["args"]:
        raise _fail(g, v, f"a source must have no args, got {n['args']}")
    if n["op"] == "const":
        value = n.get("value")
        if value is None or value.shape != n["shape"] or value.dtype != n["dtype"].np:
            got = None if value is None else (value.shape, value.dtype)
            raise _fail(g, v, f"const value {got} does not match shape {n['shape']} and "
                              f"dtype {n['dtype']}")


def renumber(g: nx.DiGraph, key: Callable[[int], Any]) -> None:
    """Give the nodes ids 0.. in the topological order that takes the node of least ``key``
    among the ready ones (``build_plan`` schedules by id, fusion compares ids as positions),
    rewriting every argument and the graph's outputs, writes and returns. Each node keeps
    the id its capture gave it as ``captured`` (None for a node a pass made)."""
    order = topo_order(g, key)
    new = {v: i for i, v in enumerate(order)}
    for v in order:  # the id the capture gave it (plan_cache.load numbers nodes by it)
        g.nodes[v].setdefault("captured", v)
    # the graph rebuilt in place, nodes and edges in their present order (networkx's
    # relabel_nodes copied it once more: gpt's renumbering 40 -> 20 ms)
    nodes = [(new[v], n) for v, n in g.nodes(data=True)]
    edges = [(new[u], new[v], e) for u, v, e in g.edges(data=True)]
    attrs = dict(g.graph)
    g.clear()
    g.add_nodes_from(nodes)
    g.add_edges_from(edges)
    g.graph.update(attrs)
    for _, n in g.nodes(data=True):
        n["args"] = [("node", new[x]) if k == "node" else (k, x) for k, x in n["args"]]
    gr = g.graph
    if "outputs" in gr:
        gr["outputs"] = [new[u] for u in gr["outputs"]]
    if "writes" in gr:
        gr["writes"] = [(slot, new[u] if u >= 0 else u) for slot, u in gr["writes"]]
    if "returns" in gr:
        gr["returns"] = map_nodes(gr["returns"], new.__getitem__)
    gr["next_id"] = len(order)
