"""Binary float ops and reduction errors the op parity sweep found differing from PyTorch:
hypot's overflow and its inf beside a NaN, copysign's and logaddexp2's promotion, PyTorch's
errors for integer operands, amin's own name in its error."""

from __future__ import annotations

import math

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")

_EDGE = [math.nan, math.inf, -math.inf, -0.0, 0.0, 1.0, -1.0, 2.5, 3e38, 1e20, 1e-30]


def _grid(da: str, db: str) -> tuple[np.ndarray, np.ndarray]:
    a = np.array(_EDGE, dtype=da)
    b = np.array(_EDGE, dtype=db)
    return np.repeat(a, len(b)), np.tile(b, len(a))


def _close(got: rt.Tensor, want: torch.Tensor, rtol: float, atol: float = 0.0) -> None:
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    g, w = got.detach().numpy(), want.detach().numpy()
    np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
    fin = ~np.isnan(w)
    np.testing.assert_allclose(g[fin], w[fin], rtol=rtol, atol=atol)


@pytest.mark.parametrize(("da", "db"), [("float32", "float32"), ("float64", "float64"),
                                        ("float32", "float64")])
def test_hypot_no_overflow_and_inf_beside_nan(da: str, db: str) -> None:
    """sqrt(a*a + b*b) overflowed (float32's 1e20 squared is inf) and gave NaN for
    hypot(NaN, inf), which is inf."""
    a, b = _grid(da, db)
    _close(rt.hypot(rt.tensor(a), rt.tensor(b)), torch.hypot(torch.tensor(a), torch.tensor(b)),
           2e-7 if "float32" in (da, db) else 1e-15)


def test_hypot_gradient() -> None:
    x = rt.tensor([3.0, -1.0, 1e200, 0.5], dtype=rt.float64, requires_grad=True)
    y = rt.tensor([4.0, 2.0, 1e200, -0.5], dtype=rt.float64, requires_grad=True)
    tx, ty = (torch.tensor(t.detach().numpy(), requires_grad=True) for t in (x, y))
    gx, gy = rt.autograd.grad(rt.hypot(x, y).sum(), (x, y))
    wx, wy = torch.autograd.grad(torch.hypot(tx, ty).sum(), (tx, ty))
    np.testing.assert_allclose(gx.numpy(), wx.numpy(), rtol=1e-15)
    np.testing.assert_allclose(gy.numpy(), wy.numpy(), rtol=1e-15)
    assert rt.autograd.gradcheck(rt.hypot, (x[:2].detach().requires_grad_(),
                                            y[:2].detach().requires_grad_()))


@pytest.mark.parametrize(("da", "db"), [("float32", "float64"), ("int64", "int32"),
                                        ("int64", "float64"), ("float64", "float32")])
def test_copysign_promotes_as_torch(da: str, db: str) -> None:
    a, b = _grid("float64", "float64")
    a, b = a[np.isfinite(a)], b[np.isfinite(a)]
    a = a.astype(da) if da.startswith("float") else np.trunc(np.clip(a, -9, 9)).astype(da)
    b = b.astype(db) if db.startswith("float") else np.trunc(np.clip(b, -9, 9)).astype(db)
    _close(rt.copysign(rt.tensor(a), rt.tensor(b)),
           torch.copysign(torch.tensor(a), torch.tensor(b)), 0)


def test_logaddexp2_mixed_precision_scaled_in_the_result_dtype() -> None:
    a, b = _grid("float32", "float64")
    with np.errstate(all="ignore"):
        _close(rt.logaddexp2(rt.tensor(a), rt.tensor(b)),
               torch.logaddexp2(torch.tensor(a), torch.tensor(b)), 1e-12, 1e-15)


@pytest.mark.parametrize("call", [
    lambda m, a, b: m.hypot(a, b), lambda m, a, b: m.logaddexp(a, b),
    lambda m, a, b: m.logaddexp2(a, b), lambda m, a, b: m.std_mean(a),
    lambda m, a, b: m.var_mean(b), lambda m, a, b: m.amin(a[:0], 0),
    lambda m, a, b: m.amin(a[:0])])
@pytest.mark.parametrize(("da", "db"), [("int64", "int64"), ("bool", "int32"), ("bool", "bool")])
def test_errors_as_torch(call: object, da: str, db: str) -> None:
    a, b = np.array([1, 0, 1], dtype=da), np.array([0, 1, 1], dtype=db)
    with pytest.raises(Exception) as want:
        call(torch, torch.tensor(a), torch.tensor(b))
    with pytest.raises(Exception) as got:
        call(rt, rt.tensor(a), rt.tensor(b))
    assert (type(got.value), str(got.value)) == (type(want.value), str(want.value))


def test_logaddexp_gradient_at_plus_inf() -> None:
    """logaddexp(inf, y) is inf with the gradient 1 to the inf operand and 0 to y, as
    PyTorch's 1 / (1 + exp(y - x)) (exp(inf) / exp(inf) made it NaN)."""
    xs = [math.inf, math.inf, 1.0, -math.inf, 0.5, -1e308]
    ys = [2.0, -math.inf, math.inf, -1.0, 0.25, -1e308]
    grads = []
    for m in (rt, torch):
        x = m.tensor(xs, dtype=m.float64, requires_grad=True)
        y = m.tensor(ys, dtype=m.float64, requires_grad=True)
        out = m.logaddexp(x, y)
        grads.append([out.detach().numpy(), *(g.numpy() for g in m.autograd.grad(out.sum(),
                                                                                  (x, y)))])
    for got, want in zip(*grads):
        np.testing.assert_allclose(got, want, rtol=1e-15)
