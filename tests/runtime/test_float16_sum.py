"""float16 sums accumulate in float32 and round once, as PyTorch's CPU kernels do (numpy adds
float16 in float16, rounding at every step), eagerly and in a compiled step."""

from __future__ import annotations

import numpy as np
import pytest

import planner
import runtime as rt

A = np.random.default_rng(0).standard_normal((64, 48)).astype(np.float16)
CASES = [((0,), False), ((1,), False), ((0, 1), False), ((0,), True)]


@pytest.mark.parametrize(("dims", "keepdim"), CASES)
def test_float16_sum_rounds_once(dims: tuple[int, ...], keepdim: bool) -> None:
    got = rt.tensor(A).sum(dims, keepdim=keepdim)
    want = A.sum(dims, keepdims=keepdim, dtype=np.float32).astype(np.float16)
    assert got.dtype == rt.float16
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize(("dims", "keepdim"), CASES)
def test_float16_sum_matches_torch(dims: tuple[int, ...], keepdim: bool) -> None:
    torch = pytest.importorskip("torch")
    got = rt.tensor(A).sum(dims, keepdim=keepdim).numpy()
    want = torch.tensor(A).sum(dims, keepdim=keepdim).numpy()
    np.testing.assert_array_equal(got, want)


def test_float16_sum_compiled_equals_eager() -> None:
    step = planner.compile(lambda x: (x * 2).sum(0))
    x = rt.tensor(A)
    eager = (x * 2).sum(0).numpy()
    for _ in range(3):
        np.testing.assert_array_equal(step(x).numpy(), eager)
