"""Regression tests for the differences from PyTorch that the op parity sweep found: each
compares the runtime with torch on the input that showed it."""

from __future__ import annotations

import math

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")
TF = torch.nn.functional

_EDGE = [math.nan, math.inf, -math.inf, -0.0, 0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -3.0, 3.0, 1e-3]


def _same(got: rt.Tensor, want: torch.Tensor) -> None:
    """Equal values, NaNs in the same places, zeros of the same sign, the same dtype."""
    g, w = got.detach().numpy(), want.detach().numpy(force=True)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    assert g.shape == w.shape
    np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
    fin = ~np.isnan(w)
    tol = 1e-12 if w.dtype == np.float64 else 2e-6  # float32: torch's kernels are an ulp off
    np.testing.assert_allclose(g[fin], w[fin], rtol=tol, atol=0)
    zero = (w == 0) & (g == 0)
    np.testing.assert_array_equal(np.signbit(g[zero]), np.signbit(w[zero]))


def _both(values: list[float], dtype: str = "float64", grad: bool = False
          ) -> tuple[rt.Tensor, torch.Tensor]:
    a = np.array(values, dtype=dtype)
    return rt.tensor(a, requires_grad=grad), torch.tensor(a, requires_grad=grad)


# --- special functions: values at edges ------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_log_ndtr_of_nan_is_nan(dtype: str) -> None:
    r, t = _both(_EDGE, dtype)
    _same(rt.special.log_ndtr(r), torch.special.log_ndtr(t))  # NaN gave -454


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_digamma_at_signed_zeros(dtype: str) -> None:
    r, t = _both(_EDGE, dtype)
    _same(rt.digamma(r), torch.digamma(t))  # digamma(-0.0) is +inf


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_erfinv_keeps_the_sign_of_zero(dtype: str) -> None:
    r, t = _both([-0.0, 0.0, 0.5, -0.5, 1.0, -1.0, math.nan], dtype)
    _same(rt.erfinv(r), torch.erfinv(t))


def test_erfinv_gradient_at_zero() -> None:
    r, t = _both([-0.0, 0.0, 0.25], grad=True)
    rg, = rt.autograd.grad(rt.erfinv(r).sum(), r)
    tg, = torch.autograd.grad(torch.erfinv(t).sum(), t)
    _same(rg, tg)
    assert rt.autograd.gradcheck(rt.erfinv, (rt.tensor([0.0, 0.3, -0.6], dtype=rt.float64,
                                                      requires_grad=True),))
