"""In-place updates of slices inside a captured step are functionalized (the base becomes a
copy with the slice's elements replaced), not a fallback: values, state and gradients equal
eager mode step for step, also where the in-place op records autograd history (each tensor the
view was taken from gets the history eager mode's CopySlices gives it)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt


def _slices_of_an_intermediate(w: Any, buf: Any) -> Callable[[Any], Any]:
    def step(x: Any) -> Any:
        w.grad = None
        x.grad = None
        y = x * 2  # history: in-place ops on its slices rewrite it (CopySlices in eager)
        y[1:3] += 1.0  # a slice of rows
        y[:, 0].mul_(3.0)  # an int index: a column
        y[4:, 1:3][0].sub_(w[0, :2])  # a view of a view, and w gets a gradient through it
        y.t()[2].add_(1.5)  # a row of a transpose: a column
        loss = (y * w).sum()
        loss.backward()
        return loss

    return step


def _slices_of_state(w: Any, buf: Any) -> Callable[[Any], Any]:
    def step(x: Any) -> Any:
        w.grad = None
        x.grad = None
        buf[2:4].mul_(0.5)
        buf[2:4] += x[2:4].detach()
        buf[0] = x[0].detach()
        loss = (buf * w).sum() + (x * w).sum()
        loss.backward()
        return loss

    return step


def _slice_of_a_grad(w: Any, buf: Any) -> Callable[[Any], Any]:
    def step(x: Any) -> Any:
        w.grad = None
        x.grad = None
        loss = (x * w).tanh().sum()
        loss.backward()
        w.grad[0].zero_()  # as a user masking one row's update
        w.grad[1:3].mul_(0.25)
        with rt.no_grad():
            w.sub_(w.grad * 0.1)
        return loss

    return step


@pytest.mark.parametrize("make", [_slices_of_an_intermediate, _slices_of_state,
                                  _slice_of_a_grad])
@pytest.mark.parametrize("backend", ["interpreter", "llvm"])
def test_compiled_equals_eager_without_fallback(make: Callable[..., Any], backend: str) -> None:
    def fresh() -> tuple[Any, Any, Callable[[Any], Any]]:
        rt.manual_seed(0)
        w = rt.randn(6, 4, requires_grad=True)
        buf = rt.zeros(6, 4)
        return w, buf, make(w, buf)

    (w1, b1, eager), (w2, b2, step) = fresh(), fresh()
    compiled = planner.compile(step, backend=backend)
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback to eager warns
        for _ in range(3):
            data = rng.standard_normal((6, 4)).astype(np.float32)
            x1, x2 = rt.tensor(data, requires_grad=True), rt.tensor(data, requires_grad=True)
            # fused sums add in another order: float32 rounding apart
            np.testing.assert_allclose(compiled(x2).item(), eager(x1).item(), rtol=1e-5)
            for a, b in ((w1, w2), (b1, b2), (w1.grad, w2.grad), (x1.grad, x2.grad)):
                if a is None:
                    assert b is None
                    continue
                np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-5,
                                           atol=1e-6)
    assert compiled.captures == 1


def test_in_place_on_a_view_of_a_leaf_raises_as_eager() -> None:
    w = rt.randn(4, 3, requires_grad=True)

    def step(x: Any) -> Any:
        w[1:3].add_(x[1:3])  # a view of a leaf that requires grad
        return w.sum()

    with pytest.raises(RuntimeError) as eager:
        step(rt.ones(4, 3))
    with pytest.raises(RuntimeError) as compiled:
        planner.compile(step)(rt.ones(4, 3))
    assert str(compiled.value) == str(eager.value)
