"""A step returning ``Tensor.item()`` (``return loss.item()``, in a tuple, list or dict) is
captured and returns the same Python numbers as eager mode; any other use of an item during
a capture still runs the step eagerly, with the planner's warning."""

from __future__ import annotations

import sys
from typing import Any
import warnings

import numpy as np
import pytest

import planner
import runtime as rt
import runtime.nn.functional as F
from planner.item_outputs import ItemOut, returned_as_is
from planner.plan import Plan
from runtime.tracing import GraphBreak


def _model():
    rt.manual_seed(0)
    model = rt.nn.Sequential(rt.nn.Linear(6, 8), rt.nn.ReLU(), rt.nn.Linear(8, 3))
    return model, rt.optim.SGD(model.parameters(), lr=0.1)


X = rt.randn(5, 6, generator=rt.Generator().manual_seed(1))
Y = rt.tensor([0, 2, 1, 2, 0])


def _returning(kind: str):
    model, opt = _model()

    def step(x, y):
        opt.zero_grad()
        out = model(x)
        loss = F.cross_entropy(out, y)
        loss.backward()
        opt.step()
        if kind == "item":
            return loss.item()
        if kind == "tuple":
            return loss.item(), (out.argmax(1) == y).float().mean().item()
        if kind == "dict":
            return {"loss": loss.item(), "right": (out.argmax(1) == y).sum().item(),
                    "any": (y > 1).any().item(), "out": out.detach()}
        return [loss.item(), [(y * 2).sum().item()]]

    return step


@pytest.mark.parametrize("kind", ["item", "tuple", "dict", "nested"])
def test_returned_items_are_captured_and_equal_eager(kind: str) -> None:
    eager, compiled = [], []
    eager_step, compiled_step = _returning(kind), planner.compile(_returning(kind))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback
        for _ in range(3):
            eager.append(eager_step(X, Y))
            compiled.append(compiled_step(X, Y))
    assert compiled_step.captures == 1
    for e, c in zip(eager, compiled):  # fused kernels sum in another order: float32 close
        if kind == "dict":
            assert c["loss"] == pytest.approx(e["loss"], rel=1e-5)
            assert (c["right"], c["any"]) == (e["right"], e["any"])
            assert [type(c[k]) for k in ("loss", "right", "any")] == [float, int, bool]
        else:
            assert _leaves(c) == pytest.approx(_leaves(e), rel=1e-5)
            assert [type(v) for v in _leaves(c)] == [type(v) for v in _leaves(e)]


def _leaves(x):
    return [v for item in x for v in _leaves(item)] if isinstance(x, (list, tuple)) else [x]


def _falls_back(step) -> None:
    compiled = planner.compile(step)
    with pytest.warns(RuntimeWarning, match="runs eagerly"):
        compiled(X, Y)
    assert compiled.captures == 0


def test_other_uses_of_an_item_run_eagerly() -> None:
    model, opt = _model()
    history = []

    def stored(x, y):
        v = F.cross_entropy(model(x), y).item()
        return v

    def added(x, y):
        return F.cross_entropy(model(x), y).item() + 1

    def appended(x, y):
        history.append(F.cross_entropy(model(x), y).item())
        return history[-1]

    def tested(x, y):
        loss = F.cross_entropy(model(x), y)
        return loss if loss.item() > 0 else -loss

    def converted(x, y):
        return float(F.cross_entropy(model(x), y).item())

    def helper(x, y):
        return F.cross_entropy(model(x), y).item()

    def through_a_helper(x, y):
        return helper(x, y)

    for step in (stored, added, appended, tested, converted, through_a_helper):
        _falls_back(step)
    assert history and all(type(v) is float for v in history)


def test_an_item_of_many_elements_raises_as_eager() -> None:
    def step(x):
        return (x * 2).item()

    with pytest.raises(RuntimeError, match="a Tensor with 30 elements cannot be converted to "
                       "Scalar"):
        step(X)
    with pytest.raises(RuntimeError, match="a Tensor with 30 elements cannot be converted"):
        planner.compile(step, fullgraph=True)(X)


def test_a_plan_returning_an_item_round_trips() -> None:
    step = planner.compile(_returning("tuple"))
    first = step(X, Y)
    plan = Plan.loads(step.plan.dumps())
    assert plan.returns == step.plan.returns
    assert plan.returns[0] == "tuple" and plan.returns[1][0][0] == "item"
    assert type(first[0]) is float


def test_returned_as_is_reads_the_callers_bytecode() -> None:
    seen: list[bool] = []

    class Probe:
        def item(self):
            seen.append(returned_as_is(sys._getframe(1)))
            return 0

    p, q = Probe(), Probe()
    returned = [lambda: p.item(), lambda: (p.item(), q.item()), lambda: {"a": p.item()},
                lambda: [p.item(), [q.item()]], lambda: (p.item(), len([1]) == 1),
                lambda: {"n": (p.item(), q.item())}]
    used = [lambda: p.item() + 1, lambda: float(p.item()), lambda: [p.item()] * 2,
            lambda: p.item().real, lambda: print(p.item()), lambda: {p.item(): 1}.keys()]
    # beside a comprehension (a function made and called on Python 3.11; inlined with jumps
    # from 3.12, refused there)
    beside = [lambda: (p.item(), [i for i in range(2)]),
              lambda: {"loss": p.item(), "n": {k: k for k in "ab"}, "s": sum(i for i in [1])}]
    (returned if sys.version_info[:2] == (3, 11) else used).extend(beside)
    for f in returned:
        seen.clear()
        f()
        assert seen and all(seen), f
    for f in used:
        seen.clear()
        f()
        assert seen == [False], f


def test_an_item_out_refuses_every_use() -> None:
    item = ItemOut(3)
    for use in (lambda: item + 1, lambda: 1 - item, lambda: item < 2, lambda: float(item),
                lambda: f"{item}", lambda: bool(item), lambda: item.real, lambda: hash(item),
                lambda: {item: 1}, lambda: -item, lambda: round(item)):
        with pytest.raises(GraphBreak, match="only returning it is captured"):
            use()
    assert "node 3" in repr(item)


def test_an_item_returned_beside_the_gradients_a_comprehension_lists() -> None:
    """``return {"loss": loss.item(), "grads": [p.grad for p in ...]}``: one capture, the
    item a Python float and the grads the live ones (Python 3.11; from 3.12 the comprehension
    is inlined, with jumps, and the step runs eagerly with a warning)."""
    model = rt.nn.Linear(3, 2)
    opt = rt.optim.SGD(model.parameters(), lr=0.1)

    def step(x: Any) -> Any:
        opt.zero_grad()
        loss = model(x).pow(2).sum()
        loss.backward()
        opt.step()
        return {"loss": loss.item(), "grads": [p.grad for p in model.parameters()]}

    compiled = planner.compile(step, backend="llvm")
    x = rt.from_numpy(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))
    if sys.version_info[:2] != (3, 11):
        with pytest.warns(UserWarning, match="item"):
            compiled(x)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        losses = []
        for _ in range(3):
            out = compiled(x)
            assert type(out["loss"]) is float
            assert all(g is p.grad for g, p in zip(out["grads"], model.parameters(), strict=True))
            losses.append(out["loss"])
    assert compiled.captures == 1 and losses[0] > losses[1] > losses[2]
