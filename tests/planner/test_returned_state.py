"""A step returning a tensor that lives outside it (a ``.grad``, a buffer, an optimizer's
state) returns that very object when compiled, as eager mode and torch.compile do: its later
in-place updates (the next ``zero_grad(set_to_none=False)``, the next step) show in it."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt


def _train(compiled: bool, set_to_none: bool) -> tuple[list[tuple[bool, ...]], list[Any], Any]:
    rt.manual_seed(0)
    # no bias before the batch norm: its gradient is zero up to rounding, which Adam scales
    # up to the learning rate
    model = rt.nn.Sequential(rt.nn.Linear(4, 3, bias=False), rt.nn.BatchNorm1d(3))
    opt = rt.optim.Adam(model.parameters(), lr=0.1)
    w = model[0].weight

    def step(x: Any) -> Any:
        opt.zero_grad(set_to_none=set_to_none)
        (model(x) * rt.arange(1.0, 4.0)).tanh().sum().backward()
        opt.step()
        return {"grad": w.grad, "stats": [model[1].running_mean], "avg": opt.state[w]["exp_avg"],
                "norm": w.grad.norm()}

    fn = planner.compile(step, backend="llvm") if compiled else step
    x = rt.randn(5, 4)
    same, values = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for i in range(4):
            out = fn(x * (i + 1))
            same.append((out["grad"] is w.grad, out["stats"][0] is model[1].running_mean,
                         out["avg"] is opt.state[w]["exp_avg"]))
            values.append([out["grad"].numpy().copy(), out["stats"][0].numpy().copy(),
                           out["avg"].numpy().copy(), out["norm"].item()])
    opt.zero_grad(set_to_none=False)  # seen by the last returned .grad
    return same, values, out["grad"].numpy().copy()


@pytest.mark.parametrize("set_to_none", [True, False])
def test_returned_outside_tensors_are_the_live_objects(set_to_none: bool) -> None:
    eager_same, eager, eager_after = _train(False, set_to_none)
    same, compiled, after = _train(True, set_to_none)
    assert eager_same == same == [(True, True, True)] * 4
    for e, c in zip(eager, compiled, strict=True):
        for a, b in zip(e, c, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(after, eager_after)
    assert not after.any()


def test_a_returned_grad_of_an_argument_is_its_live_grad() -> None:
    def step(x: Any) -> Any:
        x.grad = None
        (x * x).sum().backward()
        return x.grad

    compiled = planner.compile(step, backend="llvm")
    for i in range(3):
        x = rt.tensor(np.arange(3.0, dtype=np.float32) + i, requires_grad=True)
        g = compiled(x)
        assert g is x.grad
        np.testing.assert_array_equal(g.numpy(), 2 * x.detach().numpy())


def test_a_returned_argument_is_the_argument() -> None:
    """A step returning a tensor argument it updated in place returns that argument, as eager
    mode (a new tensor over the plan's array before)."""
    def step(x: Any, y: Any) -> Any:
        x.mul_(2)
        return x, (y * 3).sum()

    compiled = planner.compile(step, backend="llvm")
    for i in range(3):
        x, y = rt.ones(3) * i, rt.arange(3.0)
        out, total = compiled(x, y)
        assert out is x
        np.testing.assert_array_equal(x.numpy(), np.full(3, 2.0 * i, np.float32))
        assert total.item() == 9.0


def test_a_returned_detach_of_live_state_shares_its_storage() -> None:
    """``return m.weight.detach(), m.bias.data, x.detach(), w.grad.detach()``: eager mode
    returns tensors sharing the parameter's, argument's and .grad's storage (and version
    counter), so a later in-place update shows in them; a replay returned copies."""
    def run(compiled: bool) -> list[Any]:
        rt.manual_seed(0)
        m = rt.nn.Linear(3, 2)
        opt = rt.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        x = rt.ones(4, 3)

        def step(x: Any) -> Any:
            opt.zero_grad(set_to_none=False)
            m(x).pow(2).sum().backward()
            opt.step()
            return m.weight.detach(), m.bias.data, x.detach(), m.weight.grad.detach()

        fn = planner.compile(step) if compiled else step
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            out = [fn(x) for _ in range(3)][-1]  # a replay
        assert out[0]._vc is m.weight._vc and not out[0].requires_grad
        with rt.no_grad():
            m.weight.add_(1.0)
            m.bias.mul_(3.0)
        x.add_(2.0)
        opt.zero_grad(set_to_none=False)
        return [t.numpy().copy() for t in out]

    for got, want in zip(run(True), run(False), strict=True):
        np.testing.assert_array_equal(got, want)


def test_a_returned_view_of_live_state_is_a_view_of_it() -> None:
    """``return w.detach()[0], m.bias.data[1:], w.grad.view(-1).t()``, and a view taken in
    no_grad mode (which requires grad, as PyTorch's): eager mode returns views of the live
    tensors, which show their later in-place updates; a replay returned copies."""
    def run(compiled: bool) -> list[Any]:
        rt.manual_seed(0)
        m = rt.nn.Linear(3, 2)
        opt = rt.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        x = rt.ones(4, 3)

        def step(x: Any) -> Any:
            opt.zero_grad(set_to_none=False)
            m(x).pow(2).sum().backward()
            opt.step()
            with rt.no_grad():
                row = m.weight[1]
            return (m.weight.detach()[0], m.bias.data[1:], m.weight.grad.view(-1, 1).t(),
                    row, x.detach()[:, 1])

        fn = planner.compile(step) if compiled else step
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            out = [fn(x) for _ in range(3)][-1]  # a replay
        assert out[0]._vc is m.weight._vc and not out[0].requires_grad
        assert out[3].requires_grad and out[3].grad_fn is None and out[3]._base is m.weight
        with rt.no_grad():
            m.weight.add_(1.0)
            m.bias.mul_(3.0)
        x.add_(2.0)
        opt.zero_grad(set_to_none=False)
        return [t.detach().numpy().copy() for t in out]

    for got, want in zip(run(True), run(False), strict=True):
        np.testing.assert_array_equal(got, want)
