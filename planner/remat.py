"""Rematerialization: recompute cheap elementwise values in the backward instead of saving
them from the forward.

A fused forward kernel stores every value the backward reads: GELU's forward
(``0.5 * x * (1 + erf(x / sqrt(2)))``) stored ``0.5 * x``, ``1 + erf(...)`` and the
derivative's ``exp(-x*x/2)`` beside its result, four arrays written where one is needed, and
three read back by its backward. Recomputing them from ``x`` in the backward kernel writes
one array in the forward and reads two in the backward (gpt: 1.9 -> 1.1 ms a step over its
two GELUs' four kernels), and keeps one array alive between the passes instead of three.

The rule (a greedy form of the min-cut partitioners of TorchInductor and XLA): forward
values the backward reads only through elementwise steps of their shape that come after a
step fusion cannot join (a product: where none separates them, forward and backward are one
kernel and nothing is saved), each an elementwise function of other values ("anchors": the
nearest values up the graph that are not elementwise forward values), are grouped by their
anchors; a group is recomputed when the anchors it would keep alive, past those the
backward reads or the step holds anyway (its inputs, state, constants), take fewer bytes
than the values it saves, by MIN_SAVED_BYTES at least. The recomputed values are copies of
their forward nodes (phase "recompute", which fusion joins to no forward kernel through a
computed value: that would compute them in the forward again), placed just before their
first reader; what the forward no longer needs is pruned. Values are the same bits: the
same operations on the same operands.
"""

from __future__ import annotations

from typing import Any

import networkx as nx
import numpy as np

from runtime.ops import REGISTRY

from .graph import HELD_SOURCES, add_value, remove_dead, renumber, roots

ENABLED = True  # False: save what the forward computes, as before (for A/B measurements)
MAX_CONE = 32  # forward nodes recomputed for one saved value at most
# bytes a group must save to be recomputed: below, a kernel output more or less costs less
# than the kernel calls recomputing can add (fusion.MIN_COMMIT_BYTES' size)
MIN_SAVED_BYTES = 64 << 10
RECOMPUTE = "recompute"  # the phase of the copies


def rematerialize(g: nx.DiGraph) -> int:
    """Recompute in the backward the saved elementwise values where that keeps fewer bytes
    alive between the passes; return how many values are recomputed. Node ids stay a
    topological order (``build_plan`` schedules by id): the graph is renumbered."""
    if not ENABLED:
        return 0
    keep = roots(g)
    order = list(nx.topological_sort(g))
    early = _early(g, order)
    barriers = _barriers(g, order)
    groups: dict[frozenset[int], list[int]] = {}
    cones: dict[int, set[int]] = {}
    separate = {v for v in early if v not in keep and _separate_readers(g, v, early, barriers)}
    # early values kept alive into the backward anyway and not recomputed themselves: a cone
    # stops at them, as at an anchor (``_cone``)
    made = early - {v for v in early - separate if _held_anyway(g, v, keep, early)}
    for v in order:
        if v not in separate:
            continue
        found = _cone(g, v, made)
        if found is None:
            continue
        cones[v], anchors = found
        groups.setdefault(anchors, []).append(v)
    chosen: list[int] = []
    for anchors, values in groups.items():
        if _worth(g, values, anchors, keep, early):
            chosen += values
    chosen += _from_saved(g, order, separate, set(chosen), made, keep, early, cones)
    if not chosen:
        return 0
    copies: dict[int, int] = {}
    for v in sorted(chosen):
        readers = [c for c in g.successors(v) if c not in early]
        copy = _copy(g, v, cones[v], g.nodes[min(readers)], copies)
        for c in readers:
            n = g.nodes[c]
            n["args"] = [("node", copy) if a == ("node", v) else a for a in n["args"]]
            pos = g.edges[v, c]["pos"]
            g.remove_edge(v, c)
            if g.has_edge(copy, c):
                g.edges[copy, c]["pos"] = sorted(g.edges[copy, c]["pos"] + pos)
            else:
                g.add_edge(copy, c, pos=pos)
    remove_dead(g)
    made = set(copies.values())
    # each copy just before its first reader, the other nodes in their order (every node's
    # arguments sort before it: copies read anchors made before the values they copy)
    key: dict[int, tuple[int, int]] = {}
    for v in reversed(list(nx.topological_sort(g))):
        key[v] = (v, 0) if v not in made else min(
            (key[c][0], key[c][1] - 1) for c in g.successors(v))
    renumber(g, key.__getitem__)
    return len(chosen)


def _worth(g: nx.DiGraph, values: list[int], anchors: frozenset[int], keep: set[int],
           early: set[int]) -> bool:
    """Whether recomputing ``values`` from ``anchors`` keeps fewer bytes alive, by
    MIN_SAVED_BYTES at least."""
    saved = sum(_nbytes(g, v) for v in values)
    kept = sum(_nbytes(g, a) for a in anchors if not _held_anyway(g, a, keep, early))
    return kept < saved and saved - kept >= MIN_SAVED_BYTES


def _from_saved(g: nx.DiGraph, order: list[int], separate: set[int], chosen: set[int],
                made: set[int], keep: set[int], early: set[int], cones: dict[int, set[int]]
                ) -> list[int]:
    """The values not chosen from their anchors that are worth recomputing from the values
    still saved (a layer norm's x / std from x - mean, which its backward reads too: neither
    was worth recomputing from the residual stream), each on its own, in order: what one
    recomputes is never an anchor of another. gpt's five layer norms each store, and their
    backwards read, 512 KiB less."""
    found: list[int] = []
    saved = separate - chosen
    for v in order:
        if v not in saved:
            continue
        cone = _cone(g, v, made - (saved - {v}))
        if cone is not None and _worth(g, [v], cone[1], keep, early):
            cones[v] = cone[0]
            found.append(v)
            saved.discard(v)
    return found


def _early(g: nx.DiGraph, order: list[int]) -> set[int]:
    """The elementwise values computable in the forward: those of its phase, and those the
    backward computes from such values and constants alone (a GELU's derivative
    exp(-u*u), made by erf's backward formula from the forward's u) before any gradient
    reaches them."""
    early: set[int] = set()
    for v in order:
        n = g.nodes[v]
        prim = REGISTRY.get(n["op"])
        if prim is None or not prim.elementwise or prim.check:
            continue
        preds = list(g.predecessors(v))
        if n.get("phase") == "forward" or (
                n.get("phase") == "backward" and any(u in early for u in preds)
                and all(u in early or g.nodes[u]["op"] == "const" for u in preds)):
            early.add(v)
    return early


def _barriers(g: nx.DiGraph, order: list[int]) -> dict[int, int]:
    """Per node, the most steps fusion cannot join (products, convolutions' windows,
    scatters: neither elementwise, a reduction nor a view) on a path from a source to it.
    An input of the backward (an output's gradient in a compiled function's joint graph,
    planner.aot: its backward is a plan of its own) comes after every forward value."""
    count = _counted(g, order, {})
    late = [v for v in order if g.nodes[v]["op"] == "input"
            and g.nodes[v].get("phase") == "backward"]
    if not late:
        return count
    top = max(count.values()) + 1
    return _counted(g, order, dict.fromkeys(late, top))


def _counted(g: nx.DiGraph, order: list[int], start: dict[int, int]) -> dict[int, int]:
    count: dict[int, int] = {}
    for v in order:
        best = start.get(v, 0)
        for u in g.predecessors(v):
            prim = REGISTRY.get(g.nodes[u]["op"])
            barrier = prim is not None and not (prim.elementwise or prim.reduction or prim.view)
            best = max(best, count[u] + barrier)
        count[v] = best
    return count


def _separate_readers(g: nx.DiGraph, v: int, early: set[int], barriers: dict[int, int]
                      ) -> bool:
    """Whether v has later readers (not early values), each elementwise over v's shape, its
    kernel recomputing v in registers (a product or a reduction reading v would need it
    written out again, a broadcast one a kernel of v's shape), and each after a step fusion
    cannot join, made after v: a kernel of its own, which the forward's cannot hold (where
    the backward follows the forward without one, as a loss's elementwise gradient does,
    both are one kernel and nothing is saved)."""
    later = [c for c in g.successors(v) if c not in early]
    shape = g.nodes[v]["shape"]
    for c in later:
        n = g.nodes[c]
        prim = REGISTRY.get(n["op"])
        if prim is None or not prim.elementwise or n["shape"] != shape \
                or barriers[c] <= barriers[v]:
            return False
    return bool(later)


def _cone(g: nx.DiGraph, v: int, early: set[int]) -> tuple[set[int], frozenset[int]] | None:
    """The early nodes v is made from (v included) and its anchors. ``early`` leaves out the
    early values the backward keeps anyway: they are anchors. A softmax's probabilities
    e / sum(e), whose backward reads the exp e itself, are recomputed from e and the row sums
    (nothing more kept), not from the scores (a product gpt then kept 1 MiB of, so they were
    saved): the forward stores one array fewer, and the backward reads one fewer."""
    cone: set[int] = set()
    anchors: set[int] = set()
    stack = [v]
    while stack:
        u = stack.pop()
        if u in cone:
            continue
        cone.add(u)
        if len(cone) > MAX_CONE:
            return None
        for w in g.predecessors(u):
            if w in early:
                stack.append(w)
            else:
                anchors.add(w)
    return cone, frozenset(anchors)


def _held_anyway(g: nx.DiGraph, a: int, keep: set[int], early: set[int]) -> bool:
    """Whether anchor a stays alive into the backward without the recompute: an input, state
    or constant (not a random draw: made each step), a view of one, a value the step
    produces, or one the backward reads itself."""
    while True:
        n = g.nodes[a]
        if n["op"] in HELD_SOURCES or a in keep or any(
                c not in early and g.nodes[c]["phase"] != "forward" for c in g.successors(a)):
            return True
        prim = REGISTRY.get(n["op"])
        preds = [x for k, x in n["args"] if k == "node"]
        if prim is None or not prim.view or len(preds) != 1:
            return False
        a = preds[0]


def _nbytes(g: nx.DiGraph, v: int) -> int:
    n = g.nodes[v]
    return int(np.prod(n["shape"], dtype=np.int64)) * n["dtype"].np.itemsize


def _copy(g: nx.DiGraph, v: int, cone: set[int], reader: dict[str, Any],
          copies: dict[int, int]) -> int:
    """The backward copy of forward node v (and of the cone nodes it reads), shared by every
    value recomputed from it: phase "recompute" (fusion keeps it out of forward kernels),
    its first reader's sequence and topological numbers."""
    found = copies.get(v)
    if found is not None:
        return found
    n = g.nodes[v]
    args = [("node", _copy(g, x, cone, reader, copies)) if k == "node" and x in cone
            else (k, x) for k, x in n["args"]]
    extra = {key: reader.get(key) for key in ("sequence_nr", "topological_nr", "grad_fn")
             if key in reader}
    copies[v] = add_value(g, n["op"], args, n["attrs"], n["shape"], n["dtype"], n["device"],
                          phase=RECOMPUTE, captured=None, **extra)
    return copies[v]
