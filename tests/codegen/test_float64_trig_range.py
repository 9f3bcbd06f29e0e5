"""float64 sin and cos of arguments past the fast reduction's range (|x| >= 2**51 gave
meaningless values): a fused kernel checks its arguments' magnitudes, as float32's do, and
reruns with the C library's sin and cos where one passed FAST_SIN_COS_LIMIT."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt

LARGE = [1e30, -2.5e17, 3.0e16, 2.0**52 + 1, 1e300, -0.0, 0.5, -3.0, float("inf"),
         float("nan"), 1e5, 2.0**20, 2.0**20 + 1]


def _numpy_f64(fn: Any, values: list[float]) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return fn(np.asarray(values, dtype=np.float64))


@pytest.mark.parametrize("op", ["sin", "cos"])
def test_fused_float64_trig_of_large_arguments(op: str) -> None:
    step = planner.compile(lambda a: getattr(rt, op)(a * 1) + 0, backend="llvm",
                           background=False)
    x = rt.tensor(LARGE, dtype=rt.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = step(x).numpy()
    np.testing.assert_allclose(got, _numpy_f64(getattr(np, op), LARGE), rtol=1e-15, atol=0)


def test_float64_sin_and_its_gradient_of_large_arguments_match_eager() -> None:
    """sin's backward takes cos of its argument: one pair, both exact on the rerun."""
    def step(x: Any) -> Any:
        x.grad = None
        loss = (x.sin() * 3).sum()
        loss.backward()
        return loss

    values = [v for v in LARGE if np.isfinite(v)]
    x = rt.tensor(values, dtype=rt.float64, requires_grad=True)
    compiled = planner.compile(step, backend="llvm", background=False)
    loss = compiled(x)
    np.testing.assert_allclose(loss.item(), 3 * np.sin(np.asarray(values)).sum(), rtol=1e-13)
    np.testing.assert_allclose(x.grad.numpy(), 3 * np.cos(np.asarray(values)), rtol=1e-15)
    # a call under the limit takes the fast body, still within float64 rounding
    small = rt.tensor([0.25, -1.5, 100.0], dtype=rt.float64, requires_grad=True)
    compiled(small)
    np.testing.assert_allclose(small.grad.numpy(), 3 * np.cos([0.25, -1.5, 100.0]), rtol=1e-15)


def test_float64_state_updated_from_trig_of_large_values() -> None:
    w = rt.tensor([1e30, 2.0, -3e17, 1e20], dtype=rt.float64)
    start = w.numpy().copy()

    def step(scale: Any) -> Any:
        w.copy_((w * scale).sin() + (w * scale).cos())
        return w.sum()

    compiled = planner.compile(step, backend="llvm", background=False)
    compiled(rt.tensor(1.0, dtype=rt.float64))
    np.testing.assert_allclose(w.numpy(), np.sin(start) + np.cos(start), rtol=1e-15)
