"""Rematerialization (planner.remat): saved elementwise values recomputed in the backward
where that holds fewer bytes between the passes, on hand-built graphs (the values stay the
same, ids stay a topological order) and in compiled steps (equal to eager, fewer kernel
outputs)."""

from __future__ import annotations

import warnings
from typing import Any

import networkx as nx
import numpy as np
import pytest

import planner
import runtime as rt
from planner import remat
from planner.graph import add_value, check
from runtime.autograd.node import Meta
from runtime.ops import REGISTRY

F32 = rt.float32


def _node(g: nx.DiGraph, phase: str, name: str, *args: Any, **attrs: Any) -> int:
    a = [x if isinstance(x, tuple) else ("node", x) for x in args]
    ms = [Meta(g.nodes[x]["shape"], g.nodes[x]["dtype"], "cpu") if k == "node" else x
          for k, x in a]
    shape, dtype = REGISTRY[name].infer(*ms, **attrs)
    return add_value(g, name, a, attrs, shape, dtype, "cpu", phase=phase)


def _gelu_graph(size: int = 128, through_product: bool = True, read_by_product: bool = False
                ) -> tuple[nx.DiGraph, dict[str, int]]:
    """x = exp(input) @ w (an anchor the backward does not read); the forward's
    y = 0.5x(1 + erf(x)) and the backward's g * (1 + erf(x)) + g * 0.5x * exp(-x*x), its
    g = (y @ up) * 2: after a product of the forward's result, as a backward's gradient
    comes (or up * 2); or a backward reading 1 + erf(x) through a product."""
    g = nx.DiGraph(outputs=[], slots=[], writes=[], returns=None)
    shape = (size, size)
    inp = add_value(g, "input", [], {}, shape, F32, "cpu", index=0, phase="forward")
    up = add_value(g, "input", [], {}, shape, F32, "cpu", index=1, phase="forward")
    w = add_value(g, "input", [], {}, shape, F32, "cpu", index=2, phase="forward")
    x = _node(g, "forward", "matmul", _node(g, "forward", "exp", inp), w)
    half = _node(g, "forward", "mul", x, ("scalar", 0.5))
    one_erf = _node(g, "forward", "add", _node(g, "forward", "erf", x), ("scalar", 1.0))
    y = _node(g, "forward", "mul", half, one_erf)
    dexp = _node(g, "forward", "exp", _node(g, "forward", "neg",
                                            _node(g, "forward", "mul", x, x)))
    loss = _node(g, "forward", "sum", y, axes=(0, 1), keepdim=False)
    grad = _node(g, "backward", "mul",
                 _node(g, "backward", "matmul", y, up) if through_product else up,
                 ("scalar", 2.0))
    first = (_node(g, "backward", "matmul", grad, one_erf) if read_by_product
             else _node(g, "backward", "mul", grad, one_erf))
    gx = _node(g, "backward", "add", first,
               _node(g, "backward", "mul", _node(g, "backward", "mul", grad, half), dexp))
    g.graph["outputs"] = [loss, gx]
    return g, {"x": x, "y": y, "half": half, "one_erf": one_erf, "dexp": dexp, "first": first}


def _evaluate(g: nx.DiGraph, inputs: list[np.ndarray]) -> list[np.ndarray]:
    values: dict[int, Any] = {}
    for v in nx.topological_sort(g):
        n = g.nodes[v]
        if n["op"] == "input":
            values[v] = inputs[n["index"]]
        else:
            args = [values[x] if k == "node" else x for k, x in n["args"]]
            values[v] = np.asarray(REGISTRY[n["op"]].impl(np, *args, **n["attrs"]),
                                   n["dtype"].np)
    return [values[o] for o in g.graph["outputs"]]


def test_saved_values_of_one_anchor_are_recomputed_in_the_backward() -> None:
    g, named = _gelu_graph()
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal((128, 128)).astype(np.float32) * 0.1 for _ in range(3)]
    before = _evaluate(g, inputs)
    assert remat.rematerialize(g) == 3  # 0.5x, 1 + erf(x), exp(-x*x): x alone stays
    check(g)
    after = _evaluate(g, inputs)
    for a, b in zip(before, after):
        assert a.tobytes() == b.tobytes()
    # ids are a topological order again, the copies are of phase "recompute", and the
    # backward reads no forward value but the anchor x and the inputs
    assert all(u < v for u, v in g.edges)
    assert sorted(n["op"] for _, n in g.nodes(data=True) if n["phase"] == "recompute") == [
        "add", "erf", "exp", "mul", "mul", "neg"]
    for v, n in g.nodes(data=True):
        if n["phase"] != "forward":
            forward = {u for u in g.predecessors(v) if g.nodes[u]["phase"] == "forward"}
            # x (a product), y (the product of the gradient reads it) and the inputs
            assert all(g.nodes[u]["op"] in ("matmul", "input") or
                       g.nodes[u]["op"] == "mul" and g.nodes[u]["phase"] == "forward"
                       and any(g.nodes[c]["op"] == "matmul" for c in g.successors(u))
                       for u in forward), n
    assert sum(1 for _, n in g.nodes(data=True) if n["op"] == "erf") == 2
    assert g.graph["next_id"] == g.number_of_nodes()


def test_a_value_a_product_reads_stays_saved() -> None:
    """1 + erf(x) read by the backward's product stays the forward's value (it would be
    written out again); 0.5x and the derivative are still recomputed."""
    g, named = _gelu_graph(read_by_product=True)
    assert remat.rematerialize(g) == 2
    products = [v for v, n in g.nodes(data=True) if n["op"] == "matmul"
                and n["phase"] == "backward" and g.in_degree(v) == 2]
    erf_readers = {g.nodes[u]["phase"] for v in products for u in g.predecessors(v)
                   if g.nodes[u]["op"] == "add"}
    assert erf_readers == {"forward"}
    assert {n["op"] for _, n in g.nodes(data=True) if n["phase"] == "recompute"} == {
        "mul", "neg", "exp"}


@pytest.mark.parametrize("case", ["anchor as large", "small", "no product between", "off"])
def test_nothing_is_recomputed_where_it_would_not_pay(case: str) -> None:
    """A saved value stays saved where its anchor is as large and not otherwise held (tanh
    of a product: the product would be held instead), where the group saves less than
    MIN_SAVED_BYTES, where the backward reading it needs no product first (forward and
    backward are one kernel), and when remat is off."""
    if case == "anchor as large":
        g = nx.DiGraph(outputs=[], slots=[], writes=[], returns=None)
        a = add_value(g, "input", [], {}, (128, 128), F32, "cpu", index=0, phase="forward")
        t = _node(g, "forward", "tanh", _node(g, "forward", "matmul", a, a))
        g.graph["outputs"] = [_node(g, "backward", "mul", t, _node(g, "backward", "matmul",
                                                                  a, a))]
        assert remat.rematerialize(g) == 0
        return
    g, _ = _gelu_graph(size=32 if case == "small" else 128,
                       through_product=case != "no product between")
    remat.ENABLED = case != "off"
    try:
        assert remat.rematerialize(g) == 0
    finally:
        remat.ENABLED = True


def _gelu_step(w: rt.Tensor, w2: rt.Tensor) -> Any:
    """An MLP's hidden layer: the GELU's gradient comes through the second product."""
    def step(x: rt.Tensor) -> rt.Tensor:
        w.grad = None
        w2.grad = None
        loss = ((rt.nn.functional.gelu(x @ w) @ w2) ** 2).sum()
        loss.backward()
        return loss

    return step


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_gelu_recomputes_its_derivative_and_equals_eager(dtype: type) -> None:
    """The forward kernel of a GELU writes its result only, the backward kernel reads the
    product's result again; the gradients are eager mode's."""
    rng = np.random.default_rng(1)
    w0 = rng.standard_normal((64, 256)).astype(dtype) * 0.1
    w1 = rng.standard_normal((256, 8)).astype(dtype) * 0.1
    x = rt.tensor(rng.standard_normal((256, 64)).astype(dtype))
    weights = [(rt.tensor(w0.copy(), requires_grad=True),
                rt.tensor(w1.copy(), requires_grad=True)) for _ in range(2)]
    eager = _gelu_step(*weights[0])
    want = float(eager(x))
    compiled = planner.compile(_gelu_step(*weights[1]), backend="llvm")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = float(compiled(x))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for got_w, want_w in zip(weights[1], weights[0]):
        np.testing.assert_allclose(got_w.grad.numpy(), want_w.grad.numpy(), rtol=tol,
                                   atol=tol)
    erf_kernels = [k.kernel for k in compiled.plan.kernels
                   if any(getattr(e, "op", None) == "erf" for e in k.kernel.exprs)]
    assert len(erf_kernels) == 2  # forward and backward
    assert min(len(k.outputs) for k in erf_kernels) == 1
