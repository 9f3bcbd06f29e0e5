"""torch.special's Airy/Bessel functions and orthogonal polynomials in compiled steps: each
family's step under planner.compile equals the same step run eagerly, over two calls with
different values (the host computation replayed, not frozen at capture), in one capture and
without a fallback to eager."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import pytest

import planner
import runtime as rt

S = rt.special


Pair = tuple[rt.Tensor, rt.Tensor]


def _bessel_step(x: rt.Tensor, w: rt.Tensor) -> Pair:
    # a differentiable loss around non-differentiable special values (PyTorch's have no grad)
    y = (S.airy_ai(x) + S.bessel_j0(x) * S.bessel_y1(x.abs() + 0.5)
         + S.modified_bessel_i1(x) - S.scaled_modified_bessel_k0(x.abs() + 0.1)
         + S.spherical_bessel_j0(x) + S.modified_bessel_k1(x))
    loss = (y.nan_to_num(0.0) * w).sum()
    loss.backward()
    return loss, y


def _polynomial_step(x: rt.Tensor, w: rt.Tensor) -> Pair:
    n = rt.tensor([0.0, 2.0, 3.0, 9.0, 11.0, 4.0], dtype=x.dtype)
    y = (S.chebyshev_polynomial_t(x, n) + S.shifted_chebyshev_polynomial_w(x, 7)
         + S.hermite_polynomial_h(x, n) - S.laguerre_polynomial_l(0.5, n)
         + S.legendre_polynomial_p(x, 5) * S.chebyshev_polynomial_v(x.tanh(), n))
    loss = (y * w).sum()
    loss.backward()
    return loss, y


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("step", [_bessel_step, _polynomial_step], ids=["bessel", "polynomial"])
def test_compiled_equals_eager(step: Callable[[rt.Tensor, rt.Tensor], Pair],
                               dtype: str) -> None:
    rng = np.random.default_rng(0)
    compiled = planner.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to eager
        for _ in range(2):
            x = rng.uniform(-3.0, 3.0, 6)
            w = rng.standard_normal(6)
            wa = rt.tensor(w, dtype=getattr(rt, dtype), requires_grad=True)
            wb = rt.tensor(w, dtype=getattr(rt, dtype), requires_grad=True)
            xt = rt.tensor(x, dtype=getattr(rt, dtype))
            (want, want_y), (got, got_y) = step(xt, wa), compiled(xt, wb)
            np.testing.assert_array_equal(got_y.numpy(), want_y.numpy())  # the same kernels
            # the loss's sum: the compiled reduction's order may differ in the last bit
            tol = 1e-6 if dtype == "float32" else 1e-13
            np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=tol)
            np.testing.assert_array_equal(wb.grad.numpy(), wa.grad.numpy())
    assert compiled.captures == 1
