"""The sign of a zero result, as PyTorch's: relu(-0.0) is -0.0 (``x < 0 ? 0 : x``), its
gradient still 0 at both zeros."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")

# 8 or more elements: PyTorch's vectorized kernels (softshrink's scalar tail signs its zeros
# otherwise)
X = np.array([-0.0, 0.0, -1.0, 2.0, -0.2, 0.3, -0.5, np.inf, -np.inf, np.nan])

OPS: dict[str, Callable[[Any, Any], Any]] = {
    "relu": lambda m, x: m.relu(x),
    "F.relu": lambda m, x: m.nn.functional.relu(x),
    "relu6": lambda m, x: m.nn.functional.relu6(x),
    "hardtanh": lambda m, x: m.nn.functional.hardtanh(x),
    "leaky_relu": lambda m, x: m.nn.functional.leaky_relu(x),
    "softshrink": lambda m, x: m.nn.functional.softshrink(x),
    "hardshrink": lambda m, x: m.nn.functional.hardshrink(x),
    "threshold": lambda m, x: m.nn.functional.threshold(x, 0.0, -0.0),
    "elu": lambda m, x: m.nn.functional.elu(x),
    "clamp_min": lambda m, x: x.clamp(min=0.0),
}


def _run(m: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
    x = m.tensor(X, requires_grad=True)
    y = OPS[name](m, x)
    y.backward(m.ones(len(X), dtype=m.float64))
    return np.asarray(y.detach().numpy()), np.asarray(x.grad.numpy())


@pytest.mark.parametrize("name", list(OPS))
def test_values_signs_and_gradients(name: str) -> None:
    (y, g), (ty, tg) = _run(rt, name), _run(torch, name)
    np.testing.assert_array_equal(y, ty)
    known = ~np.isnan(ty)  # a NaN's sign bit is numpy's or the CPU's, not the op's
    np.testing.assert_array_equal(np.signbit(y)[known], np.signbit(ty)[known])
    np.testing.assert_array_equal(g, tg)


def test_relu_in_place_keeps_negative_zero() -> None:
    x = rt.tensor([-0.0, 0.0, -1.0])
    x.relu_()
    assert np.signbit(x.numpy()).tolist() == [True, False, False]


def test_relu_integer() -> None:
    assert rt.relu(rt.tensor([-3, 0, 2])).tolist() == [0, 0, 2]
