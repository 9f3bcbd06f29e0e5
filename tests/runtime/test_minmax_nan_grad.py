"""maximum/minimum's gradient as PyTorch's: an operand gets it where it does not lose, half on
a tie, and both get all of it where either is NaN (a NaN loses nowhere)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import planner
import runtime as rt

NAN = math.nan
A = [NAN, 1.0, 2.0, 3.0, NAN, -1.0]
B = [1.0, NAN, 2.0, 1.0, NAN, 5.0]
WANT = {"maximum": ([1, 1, 0.5, 1, 1, 0], [1, 1, 0.5, 0, 1, 1]),
        "minimum": ([1, 1, 0.5, 0, 1, 1], [1, 1, 0.5, 1, 1, 0])}


@pytest.mark.parametrize("name", ["maximum", "minimum"])
def test_gradient_shares_and_nans(name: str) -> None:
    a = rt.tensor(A, dtype=rt.float64, requires_grad=True)
    b = rt.tensor(B, dtype=rt.float64, requires_grad=True)
    getattr(rt, name)(a, b).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), WANT[name][0])
    np.testing.assert_array_equal(b.grad.numpy(), WANT[name][1])


@pytest.mark.parametrize("name", ["maximum", "minimum"])
def test_matches_torch(name: str) -> None:
    torch = pytest.importorskip("torch")
    a, b = torch.tensor(A, requires_grad=True), torch.tensor(B, requires_grad=True)
    getattr(torch, name)(a, b).sum().backward()
    np.testing.assert_array_equal(np.array(WANT[name][0], np.float32), a.grad.numpy())
    np.testing.assert_array_equal(np.array(WANT[name][1], np.float32), b.grad.numpy())


@pytest.mark.parametrize("name", ["maximum", "minimum"])
def test_gradcheck_away_from_ties(name: str) -> None:
    rng = np.random.default_rng(0)
    a = rt.tensor(rng.standard_normal(7), requires_grad=True)
    b = rt.tensor(rng.standard_normal(7), requires_grad=True)
    assert rt.autograd.gradcheck(getattr(rt, name), (a, b))


def test_compiled_equals_eager() -> None:
    a = rt.tensor(A, requires_grad=True)
    b = rt.tensor(B, requires_grad=True)

    def step() -> rt.Tensor:
        a.grad = b.grad = None
        loss = (rt.maximum(a, b) * 2 + rt.minimum(a, b)).sum()  # NaN; its gradient is not
        loss.backward()
        return loss

    compiled = planner.compile(step)
    for _ in range(3):
        compiled()
        np.testing.assert_array_equal(a.grad.numpy(), [3, 3, 1.5, 2, 3, 1])
        np.testing.assert_array_equal(b.grad.numpy(), [3, 3, 1.5, 1, 3, 2])
