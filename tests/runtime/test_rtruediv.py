"""number / t is t.reciprocal() * number, as PyTorch's Tensor.__rdiv__: the same bits (a
division rounds differently in about 1 value in 10) and the same graph (MulBackward0)."""

from __future__ import annotations

import numpy as np
import pytest

import planner
import runtime as rt

A = (np.random.default_rng(0).random(5000) + 0.1).astype(np.float32)


def test_reflected_division_is_reciprocal_times_number() -> None:
    got = (2.7 / rt.tensor(A)).numpy()
    want = (np.float32(1) / A) * np.float32(2.7)
    np.testing.assert_array_equal(got, want)
    assert (2.7 / rt.tensor(np.arange(1, 9))).dtype == rt.float32


@pytest.mark.parametrize("number", [2.7, 3, True, 0.1])
def test_matches_torch_bit_for_bit(number: float) -> None:
    torch = pytest.importorskip("torch")
    np.testing.assert_array_equal((number / rt.tensor(A)).numpy(),
                                  (number / torch.tensor(A)).numpy())
    x = rt.tensor(A[:8], requires_grad=True)
    xt = torch.tensor(A[:8], requires_grad=True)
    y, yt = number / x, number / xt
    assert type(y.grad_fn).__name__ == type(yt.grad_fn).__name__ == "MulBackward0"
    y.sum().backward()
    yt.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-6)


def test_gradcheck() -> None:
    x = rt.tensor(A[:6].astype(np.float64), requires_grad=True)
    assert rt.autograd.gradcheck(lambda t: 2.7 / t, (x,))


def test_compiled_equals_eager() -> None:
    w = rt.tensor(A[:64].copy(), requires_grad=True)

    def step() -> rt.Tensor:
        w.grad = None
        loss = (2.7 / w).sum()
        loss.backward()
        return loss

    eager_loss = (2.7 / rt.tensor(A[:64])).sum().item()
    compiled = planner.compile(step)
    for _ in range(3):
        np.testing.assert_allclose(compiled().item(), eager_loss, rtol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), -2.7 / A[:64].astype(np.float64) ** 2,
                               rtol=1e-5)
