"""The capture's cost cuts (issue 12's first call) change nothing it records: two fresh
captures of each benchmark step have one plan key and one graph, and the compiled steps still
equal eager mode's; the work cut stays cut (a layout probe per shape, a view laid out once)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
from benchmarks.workloads import WORKLOADS
from planner import plan_cache
from planner.capture import Capture, capture
from planner.layouts import Layouts
from runtime.tracing import GraphBreak, MetaArray

NAMES = ("mlp_small", "cnn", "rnn", "gpt")
# fused kernels sum in another order: float32 results move by a few ulp
TOL = 2e-5


def _captured(name: str) -> Capture:
    wl = WORKLOADS[name]
    case = wl.build(rt, wl.make_arrays(0))
    return capture(case.fn, tuple(case.args))


def _record(cap: Capture) -> tuple[Any, ...]:
    """The capture's nodes (their attributes in order), edges, slots and plan key; autograd's
    sequence numbers, which go on counting from capture to capture, from the capture's first."""
    g = cap.graph
    first = min(data["sequence_nr"] for _, data in g.nodes(data=True)
                if data["sequence_nr"] is not None)
    nodes = [(v, [(k, x - first if k == "sequence_nr" and x is not None else x)
                  for k, x in data.items()]) for v, data in g.nodes(data=True)]
    edges = [(u, v, data) for u, v, data in g.edges(data=True)]
    slots = [s.describe() for s in cap.slots]
    return repr(nodes), repr(edges), slots, plan_cache.key(g, slots, "cpu", "llvm")


@pytest.mark.parametrize("name", NAMES)
def test_two_fresh_captures_record_the_same(name: str) -> None:
    first, second = _record(_captured(name)), _record(_captured(name))
    assert first[3] is not None
    assert first == second


@pytest.mark.parametrize("name", NAMES)
def test_compiled_step_equals_eager(name: str) -> None:
    wl = WORKLOADS[name]
    arrays = wl.make_arrays(0)
    eager, compiled = wl.build(rt, arrays), wl.build(rt, arrays)
    step = planner.compile(compiled.fn)
    for i in range(3):
        expected = eager.outputs(eager.fn(*eager.args))
        got = compiled.outputs(step(*compiled.args))
        assert got.keys() == expected.keys()
        for k in expected:
            np.testing.assert_allclose(got[k], expected[k], rtol=TOL, atol=TOL,
                                       err_msg=f"call {i} {k}")
    assert step.plan is not None


def test_a_c_order_probe_is_made_once_per_shape() -> None:
    layouts = Layouts()
    a = MetaArray((3, 4), np.dtype(np.float32), 0)
    b = MetaArray((3, 4), np.dtype(np.float32), 1)
    c = MetaArray((3, 4), np.dtype(np.float64), 2)
    pa, pb, pc = layouts.probe(a), layouts.probe(b), layouts.probe(c)
    assert pa is pb and pc is not pa
    assert pa.strides == (16, 4) and pc.strides == (32, 8)


def test_a_renamed_view_is_laid_out_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """named() (a transpose's TransposeBackward0) annotates the op's record again: its view's
    layout is worked out once."""
    calls: list[str] = []
    real = Layouts.view_made

    def counted(self: Layouts, cell: MetaArray, op: str, attrs: dict[str, Any]) -> None:
        calls.append(op)
        real(self, cell, op, attrs)

    monkeypatch.setattr(Layouts, "view_made", counted)
    w = rt.randn(3, 4, requires_grad=True)

    def step(x: rt.Tensor) -> rt.Tensor:
        return (x @ w.t()).sum()

    cap = capture(step, (rt.randn(2, 4),))
    views = [v for v, op in cap.graph.nodes(data="op") if op == "permute"]
    assert views and calls.count("permute") == len(views)


def test_generators_set_again_only_where_the_step_moved_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A capture puts back a generator's state where the step seeded it (the call then runs
    eagerly from the state it met); where finish() found every one as met, none is set."""
    from runtime.creation import Generator

    sets: list[Generator] = []
    real = Generator.set_state

    def counted(self: Generator, state: rt.Tensor) -> Generator:
        sets.append(self)
        return real(self, state)

    monkeypatch.setattr(Generator, "set_state", counted)
    w = rt.randn(4, 4, requires_grad=True)

    def step(x: rt.Tensor) -> rt.Tensor:
        return rt.nn.functional.dropout(x @ w, 0.5).sum()

    capture(step, (rt.randn(2, 4),))
    assert sets == []

    def seeding(x: rt.Tensor) -> rt.Tensor:
        rt.manual_seed(3)
        return rt.nn.functional.dropout(x @ w, 0.5).sum()

    x = rt.randn(2, 4)
    before = rt.random.get_rng_state()
    with pytest.raises(GraphBreak, match="seeds a random generator"):
        capture(seeding, (x,))
    assert len(sets) == 1
    assert np.array_equal(rt.random.get_rng_state().numpy(), before.numpy())


def test_an_outside_array_in_c_order_needs_no_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    import planner.layouts as L

    made: list[tuple[int, ...]] = []
    real = L._probe

    def counted(shape: tuple[int, ...], dtype: np.dtype, strides: tuple[int, ...]) -> Any:
        made.append(strides)
        return real(shape, dtype, strides)

    monkeypatch.setattr(L, "_probe", counted)
    layouts = Layouts()
    c = MetaArray((3, 4), np.dtype(np.float32), 0)
    layouts.outside(c, np.zeros((3, 4), np.float32))
    assert made == [] and not c.transposed
    f = MetaArray((3, 4), np.dtype(np.float32), 1)
    layouts.outside(f, np.zeros((4, 3), np.float32).T)
    assert made == [(4, 12)] and f.transposed and not layouts.probe(f).flags.c_contiguous


def test_python_random_states_set_again_only_where_moved(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import random

    sets: list[Any] = []
    real = random.setstate
    monkeypatch.setattr(random, "setstate", lambda state: (sets.append(state), real(state)))
    w = rt.randn(4, 4, requires_grad=True)
    capture(lambda x: (x @ w).sum(), (rt.randn(2, 4),))
    assert sets == []
    before = random.getstate()

    def draws(x: rt.Tensor) -> rt.Tensor:
        return (x @ w).sum() * random.random()

    with pytest.raises(GraphBreak, match="Python's random module"):
        capture(draws, (rt.randn(2, 4),))
    assert len(sets) == 1 and random.getstate() == before
