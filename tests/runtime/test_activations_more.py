"""ELU, CELU, SELU, Hardtanh, ReLU6, Hardsigmoid, Hardswish, Mish, LogSigmoid, Softsign,
Tanhshrink, Threshold, GLU, PReLU and GroupNorm: gradients checked numerically, and a compiled
step equal to eager without falling back. (Against PyTorch: test_activations_more_torch.py.)"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
from runtime.autograd.gradcheck import gradcheck

F = rt.nn.functional
UNARY = [("elu", {}), ("elu", {"alpha": 0.5}), ("celu", {"alpha": 2.0}), ("selu", {}),
         ("hardtanh", {}), ("hardtanh", {"min_val": -0.5, "max_val": 2.0}), ("relu6", {}),
         ("hardsigmoid", {}), ("hardswish", {}), ("mish", {}), ("logsigmoid", {}),
         ("softsign", {}), ("tanhshrink", {}), ("threshold", {"threshold": 0.1, "value": 2.0})]


def _x(dtype: Any = np.float64) -> np.ndarray:
    # away from the kinks (0, +-1, +-3, 6, the threshold), where differences are not slopes
    g = np.random.default_rng(0)
    x = g.uniform(-8, 8, (3, 8))
    for kink in (0.0, 0.1, -0.5, 1.0, -1.0, 2.0, 3.0, -3.0, 6.0):
        x[np.abs(x - kink) < 1e-3] += 0.01
    return x.astype(dtype)


@pytest.mark.parametrize(("name", "kw"), UNARY)
def test_unary_gradients_check(name: str, kw: dict[str, Any]) -> None:
    x = rt.tensor(_x(), requires_grad=True)
    assert gradcheck(lambda t: getattr(F, name)(t, **kw), (x,))


def test_glu_prelu_group_norm_gradients_check() -> None:
    x = rt.tensor(_x().reshape(3, 4, 2), requires_grad=True)
    w = rt.tensor(np.array([0.25, -0.1, 0.5, 2.0]), requires_grad=True)
    b = rt.tensor(np.array([0.1, 0.2, -0.3, 0.0]), requires_grad=True)
    assert gradcheck(lambda t: F.glu(t, 1), (x,))
    assert gradcheck(lambda t, w: F.prelu(t, w), (x, w))
    assert gradcheck(lambda t, w, b: F.group_norm(t, 2, w, b), (x, w, b))


@pytest.mark.parametrize(("name", "kw"), UNARY)
def test_inplace_forms_overwrite_the_input(name: str, kw: dict[str, Any]) -> None:
    if name in ("logsigmoid", "softsign", "tanhshrink"):
        return  # no inplace form in PyTorch either
    x = rt.tensor(_x(np.float32))
    want = getattr(F, name)(x, **kw).numpy()
    y = x.clone()
    out = getattr(F, name)(y, **kw, inplace=True)
    np.testing.assert_array_equal(y.numpy(), want)
    assert out is y


def test_errors() -> None:
    with pytest.raises(RuntimeError, match="Halving dimension must be even, but dimension 1 "
                                           "is size 3"):
        F.glu(rt.zeros(2, 3), 1)
    with pytest.raises(RuntimeError, match="Expected number of channels in input to be "
                                           "divisible by num_groups"):
        F.group_norm(rt.zeros(2, 6, 3), 4)
    with pytest.raises(ValueError, match=r"num_channels \(6\) must be divisible by num_groups"):
        rt.nn.GroupNorm(4, 6)
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers and input channel "
                                           "size"):
        F.prelu(rt.zeros(2, 3), rt.ones(4))
    # PyTorch's module asserts max > min (equal refused), its functional min <= max
    with pytest.raises(AssertionError, match=r"^max_val \(-1.0\) must be greater than min_val "
                                             r"\(1.0\)$"):
        rt.nn.Hardtanh(1.0, -1.0)
    with pytest.raises(AssertionError, match=r"^max_val \(0.5\) must be greater than min_val"):
        rt.nn.Hardtanh(0.5, 0.5)
    with pytest.raises(ValueError, match="^min_val cannot be greater than max_val$"):
        F.hardtanh(rt.zeros(2), 1.0, -1.0)
    assert F.hardtanh(rt.tensor([2.0, 0.0]), 0.5, 0.5).tolist() == [0.5, 0.5]


def test_a_compiled_step_with_them_equals_eager() -> None:
    def build() -> tuple[Any, Any]:
        rt.manual_seed(0)
        model = rt.nn.Sequential(
            rt.nn.Conv2d(3, 8, 3, padding=1), rt.nn.GroupNorm(2, 8), rt.nn.Hardswish(),
            rt.nn.Conv2d(8, 8, 3, padding=1), rt.nn.GroupNorm(4, 8, affine=False),
            rt.nn.PReLU(8), rt.nn.Flatten(), rt.nn.Linear(8 * 36, 32), rt.nn.Mish(),
            rt.nn.Linear(32, 32), rt.nn.ELU(), rt.nn.GLU(), rt.nn.Linear(16, 5), rt.nn.SELU())
        opt = rt.optim.AdamW(model.parameters(), lr=1e-2)

        def step(x: Any, y: Any) -> Any:
            opt.zero_grad()
            loss = F.cross_entropy(F.relu6(model(x)) + F.logsigmoid(model(x)), y)
            loss.backward()
            opt.step()
            return loss

        return step, model

    g = np.random.default_rng(1)
    x = rt.tensor(g.standard_normal((4, 3, 6, 6)).astype(np.float32))
    y = rt.tensor(g.integers(0, 5, 4))
    eager_step, eager_model = build()
    fn, model = build()
    step = planner.compile(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = [float(step(x, y)) for _ in range(3)]
    want = [float(eager_step(x, y)) for _ in range(3)]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    for a, b in zip(model.parameters(), eager_model.parameters(), strict=True):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-4,
                                   atol=1e-5)
