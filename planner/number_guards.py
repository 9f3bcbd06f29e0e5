"""Guards on the truth of conditions over a compiled step's number arguments.

A number argument that changes between calls is an input of the plan (automatic dynamic,
``CompiledStep._changed_numbers``): the capture runs the step with a stand-in for it, and
arithmetic among such numbers is recorded as graph nodes (``Tracer.weak_nodes``). Where the
step's Python branches on one (``if (it + 1) % accum == 0: opt.step()``, ``min(1.0, it / warmup)``,
``if epoch > 10:``), the capture takes the branch the call's numbers take and records the
condition with its truth (``record``); the plan then fits only calls whose numbers give every
recorded condition the same truth (``NumberGuards.passes``), as torch.compile's guards on
symbolic ints do. A call that gives one another truth captures again (the step's other
branch), and the step keeps both plans: a training loop that steps its optimizer every k
micro-batches captures once per branch, not once per call. A branch that cannot be captured
(``log.append(loss.item())`` every k-th call) runs eagerly alone (planner.compile's
``_EagerBranch``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np

from .passes import evaluate

# how a condition reads in a recompile message
_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floor_divide": "//",
            "remainder": "%", "pow": "**", "eq": "==", "ne": "!=", "lt": "<", "le": "<=",
            "gt": ">", "ge": ">=", "bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^"}


@dataclass(frozen=True)
class NumberValue:
    """A number the step computed from its number arguments only: node ``node`` of ``graph``
    (a copy of the capture's nodes it is computed from), whose input nodes are the step's
    number arguments ``inputs`` (node -> argument position)."""

    graph: nx.DiGraph
    order: tuple[int, ...]  # the non-input nodes, each after those it reads
    inputs: tuple[tuple[int, int], ...]
    node: int
    # the value as Python code over the arguments (``_python``), where every node is a
    # Python operator: what the step's own Python computes, and 30x faster than numpy
    python: Any = None

    def of(self, args: tuple[Any, ...]) -> Any:
        """The value for the call's ``args``, a Python number as the step's code makes it."""
        if self.python is not None:
            return self.python(args)
        values: dict[int, Any] = {v: _number(args[i], self.graph.nodes[v]["dtype"].np)
                                  for v, i in self.inputs}
        for v in self.order:
            values[v] = evaluate(self.graph, v, values)
        return values[self.node].item()

    def describe(self) -> str:
        return _render(self.graph, self.node, dict(self.inputs))


def value(graph: nx.DiGraph, node: int, inputs: dict[int, int]) -> NumberValue:
    """Node ``node`` of the capture's ``graph``, a number computed from number arguments
    (``inputs``: the graph's number-argument nodes -> their positions)."""
    nodes = nx.ancestors(graph, node) | {node}
    sub = graph.subgraph(nodes).copy()
    used = tuple((v, inputs[v]) for v in sorted(nodes) if v in inputs)
    order = tuple(v for v in nx.topological_sort(sub) if v not in inputs)
    text = _python(sub, node, inputs)
    python = None if text is None else eval(  # noqa: S307 - operators, ints, float literals
        f"lambda args: {text}", {"_float": float, "_int": int, "_bool": bool, "_abs": abs})
    return NumberValue(sub, order, used, node, python)


def _number(value: Any, dtype: np.dtype[Any]) -> np.ndarray:
    return np.array(value, dtype=dtype)


@dataclass(frozen=True)
class NumberGuard:
    """A condition the step branched on (``value``), and its truth when captured."""

    value: NumberValue
    truth: bool

    def holds(self, args: tuple[Any, ...]) -> bool:
        """Whether the call's ``args`` give the condition its captured truth (False where
        computing it raises: a capture meets that call's error)."""
        try:
            return bool(self.value.of(args)) is self.truth
        except Exception:
            return False

    def describe(self) -> str:
        return self.value.describe()


def record(graph: nx.DiGraph, node: int, inputs: dict[int, int], args: tuple[Any, ...]
           ) -> NumberGuard:
    """The guard of condition ``node`` of the capture's ``graph``, evaluated on the call's
    ``args`` (``inputs``: the graph's number-argument nodes -> their positions)."""
    found = value(graph, node, inputs)
    return NumberGuard(found, bool(found.of(args)))


@dataclass(frozen=True)
class NumberGuards:
    """A plan's conditions on its number arguments (``record``), checked at every call."""

    guards: tuple[NumberGuard, ...]

    def passes(self, args: tuple[Any, ...]) -> bool:
        for guard in self.guards:
            if not guard.holds(args):
                return False
        return True

    def failed(self, args: tuple[Any, ...]) -> str | None:
        for guard in self.guards:
            if not guard.holds(args):
                return (f"the step's condition {guard.describe()} is now {not guard.truth} "
                        f"(it was {guard.truth} when the step was captured)")
        return None


_PYTHON_UNARY = {"neg": "(-{})", "abs": "_abs({})", "logical_not": "(not {})",
                 "bitwise_not": "(~{})"}
_CASTS = {"float64": "_float({})", "int64": "_int({})", "bool": "_bool({})"}


def _python(g: nx.DiGraph, v: int, inputs: dict[int, int]) -> str | None:
    """Node ``v`` as a Python expression over ``args`` (its number arguments), or None where
    a node is not a Python operator (computed with numpy instead: ``passes.evaluate``)."""
    if v in inputs:
        return f"args[{int(inputs[v])}]"
    n = g.nodes[v]
    parts = []
    for kind, x in n["args"]:
        if kind == "node":
            part = _python(g, x, inputs)
            if part is None:
                return None
        elif type(x) in (int, bool) or (type(x) is float and math.isfinite(x)):
            part = repr(x)  # a float's repr reads back as the same float
        else:
            return None
        parts.append(part)
    op, attrs = n["op"], n["attrs"]
    if op == "cast" and len(parts) == 1 and attrs.get("dtype") is not None:
        form = _CASTS.get(attrs["dtype"].name)
        return None if form is None or len(attrs) != 1 else form.format(parts[0])
    if attrs:
        return None
    if op in _SYMBOLS and len(parts) == 2:
        return f"({parts[0]} {_SYMBOLS[op]} {parts[1]})"
    if op in _PYTHON_UNARY and len(parts) == 1:
        return _PYTHON_UNARY[op].format(parts[0])
    return None


def _render(g: nx.DiGraph, v: int, inputs: dict[int, int]) -> str:
    if v in inputs:
        return f"argument {inputs[v]}"
    n = g.nodes[v]
    parts = [_render(g, x, inputs) if kind == "node" else repr(x) for kind, x in n["args"]]
    op = n["op"]
    if op == "cast" and len(parts) == 1:
        return parts[0]
    if op in _SYMBOLS and len(parts) == 2:
        return f"({parts[0]} {_SYMBOLS[op]} {parts[1]})"
    if op in _PYTHON_UNARY and len(parts) == 1:
        return _PYTHON_UNARY[op].format(parts[0]).replace("_abs", "abs")
    return f"{op}({', '.join(parts)})"
