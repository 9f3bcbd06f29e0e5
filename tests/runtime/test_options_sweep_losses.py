"""Issue 11's losses at their edges, against PyTorch 2.13: with nothing left to average (an
empty batch, or every row ignored) torch's NaN (and zero gradients) silently, with no numpy
warning (an error under a warnings "error" filter, as pytest's -W error or a script's own);
huber and smooth L1 of infinite and NaN inputs with torch's gradients."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")

CASES = [
    ("F.cross_entropy(x, t)", (0, 5), (0,)),
    ("F.cross_entropy(x, t, ignore_index=1)", (3, 5), (3,)),
    ("F.cross_entropy(x, t, ignore_index=1, label_smoothing=0.2)", (3, 5), (3,)),
    ("F.cross_entropy(x, t, weight=L.ones(5, dtype=x.dtype), ignore_index=1,"
     " label_smoothing=0.3)", (3, 5), (3,)),
    ("F.cross_entropy(x, t.float())", (0, 5), (0, 5)),
    ("F.cross_entropy(x, t.float(), label_smoothing=0.1)", (0, 5, 2), (0, 5, 2)),
    ("F.nll_loss(x, t, ignore_index=1)", (3, 5), (3,)),
    ("F.nll_loss(x, t)", (0, 5), (0,)),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(("call", "shape", "target"), CASES)
def test_a_loss_of_nothing_is_a_silent_nan_as_torch(call: str, shape: tuple[int, ...],
                                                   target: tuple[int, ...], dtype: str) -> None:
    x = np.random.default_rng(0).standard_normal(shape)

    def run(lib: Any) -> tuple[np.ndarray, np.ndarray]:
        t = lib.ones(target, dtype=lib.int64)  # class 1 everywhere: ignore_index=1 drops all
        leaf = lib.tensor(x, dtype=getattr(lib, dtype), requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            loss = eval(call, {"F": lib.nn.functional, "L": lib, "x": leaf, "t": t})  # noqa: S307
            loss.backward()
        return loss.detach().numpy(), leaf.grad.numpy()

    (want, want_grad), (got, got_grad) = run(torch), run(rt)
    assert np.isnan(want) and np.isnan(got)
    np.testing.assert_array_equal(got_grad, want_grad)


@pytest.mark.parametrize("call", [
    "F.huber_loss(x, t, reduction='none')",
    "F.huber_loss(x, t, delta=0.3, reduction='sum')",
    "F.smooth_l1_loss(x, t, reduction='none')",
    "F.smooth_l1_loss(x, t, beta=0.0)",
    "nn.SmoothL1Loss(beta=2.0)(x, t)",
])
def test_huber_and_smooth_l1_of_infinite_and_nan_inputs_as_torch(call: str) -> None:
    # an infinite difference's gradient is the linear branch's (+-delta), not the NaN of
    # inf * 0 through the quadratic one; a NaN one's is NaN, as torch's backward
    x = np.array([[0.0, 1.0, -np.inf, np.inf, np.nan], [1e30, -1e30, 0.0, 1.0, 0.5]])
    t = np.array([[0.0, 1.0, 0.0, 1.0, 0.5], [1.0, 0.0, 0.5, 0.0, 1.0]])

    def run(lib: Any) -> tuple[np.ndarray, np.ndarray]:
        leaf = lib.tensor(x, requires_grad=True)
        loss = eval(call, {"F": lib.nn.functional, "nn": lib.nn, "x": leaf,  # noqa: S307
                           "t": lib.tensor(t)})
        loss.sum().backward()
        return loss.detach().numpy(), leaf.grad.numpy()

    for got, want in zip(run(rt), run(torch), strict=True):
        np.testing.assert_array_equal(got, want)
