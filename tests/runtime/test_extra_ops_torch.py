"""The ops of runtime.ops.extra_ops against PyTorch: values and gradients on the same inputs,
and error types and texts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")

g = np.random.default_rng(0)
X = g.standard_normal((4, 5))
X[0, :3] = [np.inf, -np.inf, np.nan]

CASES: dict[str, Callable[[Any, Any], Any]] = {
    "roll": lambda m, x: m.roll(x, (1, -2), (0, 1)),
    "roll_flat": lambda m, x: m.roll(x, 7),
    "roll_method": lambda m, x: x.roll(-1, 1),
    "repeat_interleave": lambda m, x: m.repeat_interleave(x, 2, dim=1),
    "repeat_interleave_flat": lambda m, x: x.repeat_interleave(3),
    "nan_to_num": lambda m, x: m.nan_to_num(x),
    "nan_to_num_args": lambda m, x: m.nan_to_num(x, nan=0.5, posinf=9.0, neginf=-9.0),
    "diag_1d": lambda m, x: m.diag(x[1], 2),
    "diag_2d": lambda m, x: m.diag(x[1:], -1),
    "diag_2d_wide": lambda m, x: m.diag(x[1:], 3),
    "logaddexp": lambda m, x: m.logaddexp(x[1:], x[1:].flip(0) * 2),
    "var_mean": lambda m, x: m.var_mean(x[1:], 1),
    "std_mean": lambda m, x: m.std_mean(x[1:], 0, keepdim=True, correction=0),
    "count_nonzero": lambda m, x: m.count_nonzero(m.relu(x[1:]), 1),
    "logical_or": lambda m, x: m.logical_or(x[1:] > 0, x[1:] < -1),
    "logical_xor": lambda m, x: m.logical_xor(x[1:] > 0, x[1:] < 1),
    "index_add": lambda m, x: x[1:].index_add(1, m.tensor([4, 0, 4]), x[1:, :3], alpha=2.0),
    "unflatten": lambda m, x: x[1:, :4].unflatten(1, (2, 2)),
    "split_with_sizes": lambda m, x: x.split_with_sizes([2, 3], 1)[1],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(name: str) -> None:
    xr, xt = rt.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
    a, b = CASES[name](rt, xr), CASES[name](torch, xt)
    a = a if isinstance(a, tuple) else (a,)
    b = b if isinstance(b, tuple) else (b,)
    for u, v in zip(a, b, strict=True):
        np.testing.assert_allclose(u.detach().numpy(), v.detach().numpy(), rtol=1e-12,
                                   atol=1e-14)
        assert u.dtype.name == str(v.dtype).removeprefix("torch.")
    if all(v.dtype.is_floating_point for v in b):
        up = [g.standard_normal(tuple(v.shape)) for v in b]
        # nan_to_num on both sides (Tensor.nansum gives +-inf elements a gradient, as torch's)
        sum(rt.nan_to_num(u * rt.tensor(w), 0.0, 0.0, 0.0).sum() for u, w in zip(a, up))\
            .backward()
        sum(torch.nan_to_num(v * torch.tensor(w), 0.0, 0.0, 0.0).sum() for v, w in zip(b, up))\
            .backward()
        np.testing.assert_allclose(xr.grad.numpy(), np.nan_to_num(xt.grad.numpy()),
                                   rtol=1e-10, atol=1e-12)


def _message(fn: Any) -> tuple[type, str]:
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return type(e), str(e).split("\n")[0]
    raise AssertionError("no error")


@pytest.mark.parametrize("case", ["roll", "diag", "index_add", "repeats"])
def test_errors_match_torch(case: str) -> None:
    def call(m: Any) -> Any:
        x = m.zeros(3, 4)
        if case == "roll":
            return m.roll(x, (1, 2), 0)
        if case == "diag":
            return m.diag(m.zeros(2, 2, 2))
        if case == "index_add":
            return x.index_add(1, m.tensor([0, 1]), m.ones(3, 3))
        return x.repeat_interleave(m.tensor([1, 2]), 0)

    assert _message(lambda: call(rt)) == _message(lambda: call(torch))
