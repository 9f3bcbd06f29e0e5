"""Pruning: a step asking for the gradient of a subset of the leaves keeps exactly the backward
work the eager engine does for that request (its exec_info), and nothing of the rest."""

from __future__ import annotations

from collections.abc import Callable
import sys
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
from planner.capture import Tracer, capture

F = rt.nn.functional
SIZES = (5, 7, 6, 3)


def make_model() -> Any:
    layers: list[Any] = []
    for n_in, n_out in zip(SIZES, SIZES[1:], strict=False):
        layers += [rt.nn.Linear(n_in, n_out), rt.nn.ReLU()]
    model = rt.nn.Sequential(*layers[:-1])
    rng = np.random.default_rng(0)
    with rt.no_grad():
        for p in model.parameters():
            p.copy_(rt.from_numpy(rng.uniform(-0.5, 0.5, p.shape).astype(np.float32)))
    return model


def make_step(model: Any, pick: Callable[[Any, Any], list[Any]]) -> Callable[..., Any]:
    def step(x: Any, y: Any) -> Any:
        h = model(x)
        # a second path from x, and a parameter-only regularizer the x-gradient never needs
        reg = sum((p * p).sum() for p in model.parameters()) * 1e-3
        loss = F.cross_entropy(h, y) + (x.tanh() * 0.1).mean() + reg
        grads = rt.autograd.grad(loss, pick(model, x))
        return (loss, *grads)

    return step


def data() -> tuple[Any, Any]:
    rng = np.random.default_rng(1)
    x = rt.tensor(rng.standard_normal((4, SIZES[0])).astype(np.float32), requires_grad=True)
    y = rt.tensor(rng.integers(0, SIZES[-1], 4).astype(np.int64))
    return x, y


def reachable(root: Any) -> list[Any]:
    seen: dict[int, Any] = {}
    stack = [root]
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen[id(fn)] = fn
        stack.extend(nxt for nxt, _ in fn.next_functions)
    return list(seen.values())


def is_accumulate(fn: Any) -> bool:
    return fn.name() == "torch::autograd::AccumulateGrad"


def eager_exec(step: Callable[..., Any], pick: Callable[[Any, Any], list[Any]]
               ) -> tuple[list[str], set[int]]:
    """Names of the autograd nodes the forward made (creation order) and the ranks of those
    the eager engine runs for this gradient request."""
    model = make_model()
    x, y = data()
    h = model(x)
    reg = sum((p * p).sum() for p in model.parameters()) * 1e-3
    loss = F.cross_entropy(h, y) + (x.tanh() * 0.1).mean() + reg
    nodes = sorted((fn for fn in reachable(loss.grad_fn) if not is_accumulate(fn)),
                   key=lambda fn: fn.sequence_nr())
    ran: set[int] = set()
    handles = [fn.register_prehook(lambda grads, i=i: ran.add(i)) for i, fn in enumerate(nodes)]
    rt.autograd.grad(loss, pick(model, x))
    for h in handles:
        h.remove()
    return [fn.name() for fn in nodes], ran


def compile_and_record(step: Callable[..., Any], args: tuple[Any, ...],
                       monkeypatch: pytest.MonkeyPatch) -> tuple[Any, ...]:
    """Compile and run ``step`` once, keeping a copy of its raw captured graph (before the
    passes) and the autograd nodes the engine ran while capturing. Returns the result, the raw
    graph, the names of the autograd nodes the forward made (creation order), sequence number
    -> rank, and the ranks that ran."""
    entered: list[Any] = []
    raw: list[Any] = []
    original_enter = Tracer.enter_backward_node

    def record(self: Tracer, fn: Any) -> None:
        entered.append(fn)
        original_enter(self, fn)

    def capture_and_copy(*a: Any, **k: Any) -> Any:
        cap = capture(*a, **k)
        raw.append(cap.graph.copy())
        return cap

    monkeypatch.setattr(Tracer, "enter_backward_node", record)
    monkeypatch.setattr(sys.modules["planner.compile"], "capture", capture_and_copy)
    compiled = planner.compile(step)
    result = compiled(*args)
    monkeypatch.undo()
    assert len(raw) == 1 and compiled.captures == 1
    graph = raw[0]
    made = sorted({(d["sequence_nr"], d["grad_fn"]) for _, d in graph.nodes(data=True)
                   if d["phase"] == "forward" and d["grad_fn"] is not None})
    rank = {seq: i for i, (seq, _) in enumerate(made)}
    ran = {rank[fn.sequence_nr()] for fn in entered if not is_accumulate(fn)}
    return result, compiled, graph, [name for _, name in made], rank, ran


def backward_seqs(graph: Any) -> set[int]:
    return {d["sequence_nr"] for _, d in graph.nodes(data=True)
            if d["phase"] == "backward" and d["grad_fn"] != "torch::autograd::AccumulateGrad"}


def count(graph: Any, op: str, phase: str) -> int:
    return sum(1 for _, d in graph.nodes(data=True) if d["op"] == op and d["phase"] == phase)


PICKS: dict[str, Callable[[Any, Any], list[Any]]] = {
    "x": lambda m, x: [x],
    "last_weight": lambda m, x: [m[-1].weight],
    "first_bias": lambda m, x: [m[0].bias],
    "x_and_first_weight": lambda m, x: [x, m[0].weight],
}


@pytest.mark.parametrize("which", sorted(PICKS))
def test_kept_backward_nodes_are_exactly_those_eager_runs(which: str,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    pick = PICKS[which]
    eager_names, eager_ran = eager_exec(make_step(make_model(), pick), pick)
    model = make_model()
    step = make_step(model, pick)
    x, y = data()
    got, compiled, graph, names, rank, ran = compile_and_record(step, (x, y), monkeypatch)
    assert names == eager_names
    assert ran == eager_ran
    assert ran != set(range(len(names)))  # something was pruned in this request
    executed_seqs = {seq for seq, r in rank.items() if r in ran}
    # the raw capture holds backward ops only of nodes that ran
    assert backward_seqs(graph) <= executed_seqs
    # and every node that ran, except pass-through formulas (add/sub may hand the incoming
    # gradient on unchanged), emitted its backward ops
    emitted = backward_seqs(graph)
    silent = {names[rank[seq]] for seq in executed_seqs - emitted}
    assert silent <= {"AddBackward0", "SubBackward0"}, silent
    # and so does the plan, after its passes
    assert backward_seqs(compiled.plan.graph) <= executed_seqs
    expected = step(*data())
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6,
                                   atol=1e-7)
    assert all(p.grad is None for p in model.parameters()) and x.grad is None


def test_input_gradient_has_one_backward_matmul_per_layer() -> None:
    model = make_model()
    n_layers = len(SIZES) - 1

    def step(x: Any, y: Any) -> Any:
        loss = F.cross_entropy(model(x), y)
        return rt.autograd.grad(loss, [x])[0]

    compiled = planner.compile(step)
    x, y = data()
    np.testing.assert_allclose(compiled(x, y).numpy(), step(x, y).numpy(), rtol=1e-6,
                               atol=1e-7)
    g = compiled.plan.graph
    assert count(g, "matmul", "forward") == n_layers
    assert count(g, "matmul", "backward") == n_layers  # grad of each layer's input only
    assert compiled.plan.stats["pruned"] > 0


def test_full_backward_keeps_parameter_matmuls() -> None:
    model = make_model()
    n_layers = len(SIZES) - 1

    def step(x: Any, y: Any) -> Any:
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        return loss

    compiled = planner.compile(step)
    x, y = data()
    x.requires_grad_(False)
    compiled(x, y)
    g = compiled.plan.graph
    # weight grads of every layer, input grads of all but the first (x needs none)
    assert count(g, "matmul", "backward") == 2 * n_layers - 1


def test_unused_branch_is_dropped() -> None:
    model = make_model()

    def step(x: Any, y: Any) -> Any:
        loss = F.cross_entropy(model(x), y)
        unused = (model[0].weight.exp() * 3.0).sum()  # computed, never returned
        del unused
        return rt.autograd.grad(loss, [x])[0]

    compiled = planner.compile(step)
    x, y = data()
    compiled(x, y)
    assert count(compiled.plan.graph, "exp", "forward") == 1  # only cross_entropy's

