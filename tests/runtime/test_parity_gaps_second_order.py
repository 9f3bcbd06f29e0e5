"""Double backward through ops whose gradient is the incoming one masked or moved (pooling,
prelu): PyTorch's backward reads the op's inputs, so a second backward gives them zeros (not
"does not require grad")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt
import runtime.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

RNG = np.random.default_rng(0)
X4 = RNG.standard_normal((2, 3, 5, 5))
X5 = RNG.standard_normal((1, 2, 4, 5, 5))
X3 = RNG.standard_normal((2, 3, 7))

CASES: dict[str, tuple[np.ndarray, Callable[[Any, Any], Any]]] = {
    "max_pool2d": (X4, lambda M, x: M.max_pool2d(x, 2)),
    "max_pool2d_padded": (X4, lambda M, x: M.max_pool2d(x, 3, 2, 1)),
    "avg_pool2d": (X4, lambda M, x: M.avg_pool2d(x, 2)),
    "max_pool1d": (X3, lambda M, x: M.max_pool1d(x, 2)),
    "avg_pool1d": (X3, lambda M, x: M.avg_pool1d(x, 2)),
    "max_pool3d": (X5, lambda M, x: M.max_pool3d(x, 2)),
    "avg_pool3d": (X5, lambda M, x: M.avg_pool3d(x, 2)),
    "adaptive_max_pool2d": (X4, lambda M, x: M.adaptive_max_pool2d(x, 3)),
    "adaptive_avg_pool2d": (X4, lambda M, x: M.adaptive_avg_pool2d(x, 3)),
    "adaptive_max_pool1d": (X3, lambda M, x: M.adaptive_max_pool1d(x, 3)),
    "adaptive_avg_pool3d": (X5, lambda M, x: M.adaptive_avg_pool3d(x, 3)),
    "relu": (X4, lambda M, x: M.relu(x)),
    "hardtanh": (X4, lambda M, x: M.hardtanh(x)),
}


def _second(mod: Any, M: Any, x0: np.ndarray, f: Callable[[Any, Any], Any]) -> np.ndarray:
    x = mod.tensor(x0, requires_grad=True)
    y = f(M, x)
    v = mod.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)))
    g, = mod.autograd.grad((y * v).sum(), x, create_graph=True)
    assert g.requires_grad
    (g * mod.tensor(np.sin(np.arange(x.numel())).reshape(x0.shape))).sum().backward()
    assert x.grad is not None
    return np.asarray(x.grad.detach().numpy())


@pytest.mark.parametrize("name", list(CASES))
def test_double_backward_gives_the_input_zeros(name: str) -> None:
    x0, f = CASES[name]
    ours, theirs = _second(rt, F, x0, f), _second(torch, TF, x0, f)
    np.testing.assert_array_equal(ours, theirs)
    assert not ours.any()


def test_max_pool2d_double_backward_after_a_constant_gradient() -> None:
    x = rt.tensor(X4, requires_grad=True)
    g, = rt.autograd.grad(F.max_pool2d(x, 2).sum(), x, create_graph=True)
    g.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros_like(X4))


@pytest.mark.parametrize("weight_requires_grad", [False, True])
@pytest.mark.parametrize("target", ["x", "w"])
def test_prelu_double_backward(target: str, weight_requires_grad: bool) -> None:
    w0 = np.array([0.25, 0.5, 0.75])
    got = []
    for mod, M in ((rt, F), (torch, TF)):
        x = mod.tensor(X4, requires_grad=True)
        w = mod.tensor(w0, requires_grad=weight_requires_grad or target == "w")
        g, = mod.autograd.grad(M.prelu(x, w).sum(), x if target == "x" else w,
                               create_graph=True)
        g.sum().backward()
        got.append([None if t.grad is None else np.asarray(t.grad.detach().numpy())
                    for t in (x, w)])
    for ours, theirs in zip(*got):
        assert (ours is None) == (theirs is None)
        if ours is not None:
            np.testing.assert_allclose(ours, theirs)


def test_prelu_grad_of_grad_matches_torch() -> None:
    w0 = np.array([0.25, 0.5, 0.75])
    x = rt.tensor(X4, requires_grad=True)
    w = rt.tensor(w0, requires_grad=True)
    assert rt.autograd.gradgradcheck(F.prelu, (x, w))
