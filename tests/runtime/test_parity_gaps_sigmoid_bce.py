"""sigmoid's backward is PyTorch's g (1 - y) y from the result y: where y rounds to 1 (float32
sigmoid(17) and up) the gradient is 0, so binary_cross_entropy(sigmoid(z)) gives z PyTorch's
gradient (its log clamped at -100 and its 1e12 slope times 0), not the exact derivative."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")

Z = np.array([25.0, -25.0, 0.0, 3.0, 17.0, -104.0, 88.0, -0.5], dtype=np.float32)
T = np.array([0.0, 1.0, 0.5, 1.0, 0.3, 0.0, 1.0, 0.25], dtype=np.float32)


def _grads(m: Any, reduction: str) -> tuple[np.ndarray, np.ndarray, float]:
    z = m.tensor(Z, requires_grad=True)
    p = m.sigmoid(z)
    p.retain_grad()
    loss = m.nn.functional.binary_cross_entropy(p, m.tensor(T), reduction=reduction)
    loss.sum().backward()
    return np.asarray(z.grad.numpy()), np.asarray(p.grad.numpy()), float(loss.sum().item())


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_bce_of_sigmoid_gradient(reduction: str) -> None:
    (gz, gp, loss), (tgz, tgp, tloss) = _grads(rt, reduction), _grads(torch, reduction)
    assert loss == pytest.approx(tloss, rel=1e-6)
    np.testing.assert_allclose(gp, tgp, rtol=1e-6)
    np.testing.assert_allclose(gz, tgz, rtol=1e-6, atol=0)
    assert gz[0] == 0.0 and gz[4] == 0.0  # y rounds to 1: exactly 0, as PyTorch's


def test_sigmoid_gradient_is_g_one_minus_y_y() -> None:
    x = np.linspace(-30, 30, 61, dtype=np.float32)
    g = np.cos(x).astype(np.float32)
    z = rt.tensor(x, requires_grad=True)
    y = rt.sigmoid(z)
    y.backward(rt.tensor(g))
    yv = y.detach().numpy()
    np.testing.assert_array_equal(z.grad.numpy(), g * (np.float32(1) - yv) * yv)
    t = torch.tensor(x, requires_grad=True)
    torch.sigmoid(t).backward(torch.tensor(g))
    # the values differ from PyTorch's (its vectorized exp) by an ulp at most
    np.testing.assert_allclose(z.grad.numpy(), t.grad.numpy(), rtol=3e-7, atol=0)


def test_sigmoid_second_derivative_and_names() -> None:
    z = rt.tensor([0.3, -2.0, 5.0], dtype=rt.float64, requires_grad=True)
    assert rt.autograd.gradcheck(rt.sigmoid, (z,))
    assert rt.autograd.gradgradcheck(rt.sigmoid, (z,))
    assert type(rt.sigmoid(z).grad_fn).__name__ == "SigmoidBackward0"
    half = rt.tensor([0.3, -2.0], dtype=rt.float16, requires_grad=True)
    y = half.sigmoid()
    assert type(y.grad_fn).__name__ == "SigmoidBackward0"
    y.sum().backward()
    t = torch.tensor([0.3, -2.0], dtype=torch.float16, requires_grad=True)
    t.sigmoid().sum().backward()
    np.testing.assert_array_equal(half.grad.numpy(), t.grad.numpy())


def test_sigmoid_backward_twice_raises() -> None:
    z = rt.tensor([0.5], requires_grad=True)
    y = rt.sigmoid(z)
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second"):
        y.backward()
