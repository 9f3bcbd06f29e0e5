"""The key of a kept plan (planner.plan_cache.key) stays exact: the same in every process for
the same capture, different when any field planning reads differs, and None where it cannot
describe a value."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import networkx as nx
import numpy as np
import pytest

import runtime as rt
from planner import cost, fusion, passes, plan_cache, remat, steps
from planner.capture import capture
from runtime.ops.registry import REGISTRY

ROOT = Path(__file__).resolve().parents[2]
Slots = list[dict[str, Any]]


def _step() -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """A step with an input, state, a weight's gradient, an update, a scalar argument, a
    reduction's attributes and a constant (the backward's ones)."""
    x = rt.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
    w = rt.tensor(np.ones(4, np.float32), requires_grad=True)

    def f(x: Any) -> Any:
        loss = (x * w).tanh().sum(dim=1).sum()
        loss.backward()
        with rt.no_grad():
            w.sub_(w.grad * 0.1)
        return loss

    return f, (x,)


def _captured() -> tuple[nx.DiGraph, Slots]:
    f, args = _step()
    cap = capture(f, args)
    return cap.graph, [s.describe() for s in cap.slots]


def _key(graph: nx.DiGraph, slots: Slots, device: str = "cpu", backend: str = "llvm"
         ) -> str | None:
    return plan_cache.key(graph, slots, device, backend)


def _node(graph: nx.DiGraph, op: str, **fields: Any) -> int:
    """The first node of ``op`` whose fields equal ``fields``."""
    return next(v for v, d in graph.nodes(data=True)
                if d["op"] == op and all(d.get(k) == x for k, x in fields.items()))


def test_two_captures_of_one_step_in_one_process_have_one_key() -> None:
    (g1, s1), (g2, s2) = _captured(), _captured()
    numbered = [v for v, d in g1.nodes(data=True) if d["sequence_nr"] is not None]
    assert numbered and all(g2.nodes[v]["sequence_nr"] > g1.nodes[v]["sequence_nr"]
                            for v in numbered)
    assert _key(g1, s1) is not None and _key(g1, s1) == _key(g2, s2)
    assert _key(g1.copy(), s1) == _key(g1, s1)  # a copy's dicts are other objects


_CHILD = """
import sys
sys.path.insert(0, {tests!r})
from test_plan_cache_key_h38 import _captured, _key
print(_key(*_captured()))
"""


def test_the_key_is_the_same_in_another_process_whatever_its_hash_seed() -> None:
    keys = []
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        child = _CHILD.format(tests=str(Path(__file__).parent))
        out = subprocess.run([sys.executable, "-c", child], env=env, cwd=ROOT, check=True,
                             capture_output=True, text=True)
        keys.append(out.stdout.strip().splitlines()[-1])
    assert keys[0] == keys[1] == _key(*_captured())


def _set(v_of: Callable[[nx.DiGraph], int], field: str, value: Any
         ) -> Callable[[nx.DiGraph, Slots], None]:
    def change(g: nx.DiGraph, slots: Slots) -> None:
        g.nodes[v_of(g)][field] = value
    return change


def _const_bumped(g: nx.DiGraph, slots: Slots) -> None:
    v = _node(g, "const")
    value = np.array(g.nodes[v]["value"], copy=True).reshape(-1)
    value[0] = np.nextafter(value[0], np.float32(9))
    g.nodes[v]["value"] = value.reshape(np.shape(g.nodes[v]["value"]))


def _const_retyped(g: nx.DiGraph, slots: Slots) -> None:
    v = _node(g, "const")
    g.nodes[v]["value"] = np.array(g.nodes[v]["value"]).view(np.int32)  # the same bytes


def _slot(i: int, field: str, value: Any) -> Callable[[nx.DiGraph, Slots], None]:
    def change(g: nx.DiGraph, slots: Slots) -> None:
        slots[i] = {**slots[i], field: value}
    return change


def _graph(field: str, value: Callable[[Any], Any]) -> Callable[[nx.DiGraph, Slots], None]:
    def change(g: nx.DiGraph, slots: Slots) -> None:
        g.graph[field] = value(g.graph[field])
    return change


def _tanh(g: nx.DiGraph) -> int:
    return _node(g, "tanh")


def _scaled(g: nx.DiGraph) -> int:
    return next(v for v, d in g.nodes(data=True)
                if d["op"] == "mul" and ("scalar", 0.1) in d["args"])


CHANGES: dict[str, Callable[[nx.DiGraph, Slots], None]] = {
    "an op": _set(_tanh, "op", "sigmoid"),
    "a scalar argument": _set(_scaled, "args", [("node", 16), ("scalar", 0.1000001)]),
    "an argument's node": _set(_tanh, "args", [("node", 0)]),
    "an attribute": _set(lambda g: _node(g, "sum", phase="forward"), "attrs",
                         {"axes": (0,), "keepdim": False}),
    "an attribute's flag": _set(lambda g: _node(g, "sum", phase="forward"), "attrs",
                                {"axes": (1,), "keepdim": True}),
    "a shape": _set(_tanh, "shape", (4, 3)),
    "a dtype": _set(_tanh, "dtype", rt.float64),
    "a device": _set(_tanh, "device", "meta"),
    "a phase": _set(_tanh, "phase", "update"),
    "an autograd function": _set(_tanh, "grad_fn", "SigmoidBackward0"),
    "a slot's number": _set(lambda g: _node(g, "state"), "slot", 3),
    "an input's index": _set(lambda g: _node(g, "input"), "index", 1),
    "a field more": _set(_tanh, "slot", 0),
    "a constant's element": _const_bumped,
    "a constant's dtype": _const_retyped,
    "the outputs": _graph("outputs", lambda o: o[:-1]),
    "the writes": _graph("writes", lambda w: w[:-1]),
    "the returns": _graph("returns", lambda r: ("node", r[1] - 1)),
    "a slot's kind": _slot(1, "kind", "input"),
    "a slot's shape": _slot(1, "shape", [2, 2]),
    "a slot's dtype": _slot(1, "dtype", "float64"),
    "a slot's description": _slot(1, "desc", "tensor[4] "),
    "a slot's mode": _slot(1, "mode", "assign"),
    "a slot's device": _slot(1, "device", rt.device("cuda:0")),
}


@pytest.mark.parametrize("what", sorted(CHANGES))
def test_the_key_changes_with_what_planning_reads(what: str) -> None:
    g, slots = _captured()
    base = _key(g, slots)
    g2, slots2 = g.copy(), list(slots)
    CHANGES[what](g2, slots2)
    assert base is not None and _key(g2, slots2) not in (None, base)
    assert _key(g, slots) == base  # the change was made to a copy


def test_the_key_changes_with_the_backend_and_is_none_off_the_cpu() -> None:
    g, slots = _captured()
    assert _key(g, slots, backend="interpreter") != _key(g, slots)
    assert _key(g, slots, device="cuda:0") is None


def test_the_autograd_numbers_are_not_keyed() -> None:
    g, slots = _captured()
    base = _key(g, slots)
    g2 = g.copy()
    for _, d in g2.nodes(data=True):
        if d["sequence_nr"] is not None:
            d["sequence_nr"] += 1000
            d["topological_nr"] += 7
    assert _key(g2, slots) == base


def test_what_the_key_cannot_describe_stays_unkeyed() -> None:
    g, slots = _captured()

    def mine(a: Any) -> Any:  # a user's function
        return a

    for change in (_set(_tanh, "attrs", {"fn": mine}),
                   _set(_tanh, "attrs", {"fn": lambda a: a}),
                   _set(_tanh, "attrs", {"thing": object()}),
                   _graph("returns", lambda r: mine),
                   _slot(1, "desc", mine)):
        g2, slots2 = g.copy(), list(slots)
        change(g2, slots2)
        assert _key(g2, slots2) is None
    assert _key(g, slots) is not None


def _rebound(module: Any, name: str, value: Callable[[Any], Any]) -> Any:
    return mock.patch.object(module, name, value(getattr(module, name)))


SETTINGS: dict[str, Callable[[], Any]] = {
    # a set or a table planning reads at each call (the key kept only numbers and strings)
    "fusion.LONE_KERNELS": lambda: _rebound(fusion, "LONE_KERNELS", lambda s: s | {"add"}),
    "fusion.FMA_KERNELS": lambda: _rebound(fusion, "FMA_KERNELS", lambda s: s - {"lerp"}),
    "fusion.COMMIT_DEVICES": lambda: _rebound(fusion, "COMMIT_DEVICES", lambda d: ()),
    "fusion.REDUCTIONS in place": lambda: mock.patch.dict(fusion.REDUCTIONS, {"prod": "mul"}),
    "passes.UNMERGEABLE": lambda: _rebound(passes, "UNMERGEABLE", lambda s: s | {"const"}),
    "passes.DEFAULT_PASSES": lambda: _rebound(passes, "DEFAULT_PASSES", lambda p: p[:-1]),
    # a number of another type that compares equal
    "fusion.MIN_ELEMENTS as a float": lambda: _rebound(fusion, "MIN_ELEMENTS", float),
    "remat.ENABLED as an int": lambda: _rebound(remat, "ENABLED", int),
    # the cost model's, from which a kept plan's schedule was computed
    "cost.FLOPS_PER_S": lambda: _rebound(cost, "FLOPS_PER_S", lambda v: v / 2),
    "cost.STEP_OVERHEAD_S": lambda: _rebound(cost, "STEP_OVERHEAD_S", lambda v: v * 2),
    "steps.COMM_BYTES_PER_S": lambda: _rebound(steps, "COMM_BYTES_PER_S", lambda v: v * 2),
}


@pytest.mark.parametrize("what", sorted(SETTINGS))
def test_the_key_changes_with_each_setting_planning_reads(what: str) -> None:
    g, slots = _captured()
    base = _key(g, slots)
    with SETTINGS[what]():
        changed = _key(g, slots)
    assert base is not None and changed not in (None, base)
    assert _key(g, slots) == base  # back as it was


def test_a_setting_the_key_cannot_describe_leaves_the_capture_unkeyed() -> None:
    g, slots = _captured()
    with mock.patch.object(fusion, "LONE_KERNELS", object()):
        assert _key(g, slots) is None
    assert _key(g, slots) is not None


_NO_FUSION = """
import sys
import numpy as np
import runtime as rt
from planner import plan_cache
from planner.capture import capture
from runtime.ops.registry import REGISTRY
x = rt.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
w = rt.tensor(np.ones(4, np.float32), requires_grad=True)

def f(x):
    loss = (x * w).tanh().sum(dim=1).sum()
    loss.backward()
    with rt.no_grad():
        w.sub_(w.grad * 0.1)
    return loss

cap = capture(f, (x,))
key = plan_cache.key(cap.graph, [s.describe() for s in cap.slots], "cpu", "llvm")
print("planner.fusion" in sys.modules, key)
"""


def test_a_key_needs_not_import_fusion_and_is_the_same_where_it_is_imported() -> None:
    """Fusion is imported only where a step is planned: a warm first call's key leaves it
    unimported (3 to 5 ms), and keys as a process that imported it does."""
    out = subprocess.run([sys.executable, "-c", _NO_FUSION], cwd=ROOT, check=True,
                         capture_output=True, text=True)
    imported, key = out.stdout.split()
    assert imported == "False"
    assert "planner.fusion" in sys.modules and key == _key(*_captured())


def test_fusion_settings_as_its_source_sets_them_are_told_from_changed_ones() -> None:
    g, slots = _captured()
    base = _key(g, slots)
    for value in (fusion.MIN_ELEMENTS + 1, float(fusion.MIN_ELEMENTS)):
        with mock.patch.object(fusion, "MIN_ELEMENTS", value):
            assert _key(g, slots) not in (None, base)
    with mock.patch.object(fusion, "NEW_SETTING", 1, create=True):
        assert _key(g, slots) not in (None, base)
    assert _key(g, slots) == base


def test_a_primitive_changed_in_place_is_described_again() -> None:
    """A primitive's description is kept between keys: one changed in place (a field set
    again, a table's items, a function's code) is described again."""
    g, slots = _captured()
    base = _key(g, slots)
    tanh = REGISTRY["tanh"]
    object.__setattr__(tanh, "differentiable", 1)  # equal to True, another value
    try:
        assert _key(g, slots) not in (None, base)
    finally:
        object.__setattr__(tanh, "differentiable", True)
    assert _key(g, slots) == base
    mul = REGISTRY["mul"]
    assert mul.saves_if_grad is not None
    with mock.patch.dict(mul.saves_if_grad, {0: ()}):
        assert _key(g, slots) not in (None, base)
    assert _key(g, slots) == base
    backward = REGISTRY["tanh"].backward
    code = backward.__code__

    def other(ctx: Any, grad: Any) -> Any:
        return grad

    assert not code.co_freevars
    backward.__code__ = other.__code__
    try:
        assert _key(g, slots) not in (None, base)
    finally:
        backward.__code__ = code
    assert _key(g, slots) == base
