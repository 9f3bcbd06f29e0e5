"""Eager mode's numpy erf (runtime.ops.special): within 1 ulp of math.erf in float64, the
correctly rounded float32, on every range of fdlibm's algorithm and of float32's
polynomials, with erf's special values in both dtypes."""

from __future__ import annotations

import math

import numpy as np
import pytest

import runtime as rt
from runtime.ops.special import erf


def _ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    return np.abs(got.astype(np.float64) - want) / np.spacing(np.abs(want).astype(want.dtype))


@pytest.mark.parametrize("lo,hi", [(0, 1e-8), (1e-8, 0.84375), (0.84375, 1.25),
                                   (1.25, 1 / 0.35), (1 / 0.35, 6.0), (6.0, 30.0),
                                   (0.9, 1.1), (3.5, 4.5)])
def test_every_range_within_one_ulp(lo: float, hi: float) -> None:
    rng = np.random.default_rng(0)
    x = rng.uniform(lo, hi, 20000) * rng.choice([-1.0, 1.0], 20000)
    want = np.array([math.erf(v) for v in x])
    assert _ulps(erf(x), want).max() <= 1.0
    x32 = x.astype(np.float32)
    want32 = np.array([math.erf(float(v)) for v in x32]).astype(np.float32)
    got32 = erf(x32)
    assert got32.dtype == np.float32
    assert _ulps(got32, want32).max() <= 1.0


def test_special_values_and_shapes() -> None:
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -1e-300])
    got = erf(x)
    np.testing.assert_array_equal(got[:4], [0.0, -0.0, 1.0, -1.0])
    assert np.signbit(got[1]) and np.isnan(got[4])
    assert got[5] == 5e-324 and got[6] == math.erf(-1e-300)
    assert erf(np.array(0.5, np.float32)).shape == () and erf(np.zeros((2, 0))).shape == (2, 0)
    grid = np.linspace(-4, 4, 24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(erf(grid), erf(grid.ravel()).reshape(2, 3, 4))


def test_tensor_erf_and_its_gradient() -> None:
    x = rt.tensor(np.linspace(-3, 3, 13), requires_grad=True)
    y = rt.erf(x)
    np.testing.assert_allclose(y.detach().numpy(), [math.erf(v) for v in np.linspace(-3, 3, 13)],
                               rtol=1e-15, atol=1e-16)
    assert rt.autograd.gradcheck(lambda t: t.erf(), (x,))


def test_float32_special_values() -> None:
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-38, 3.4e38, -4.0],
                 np.float32)
    got = erf(x)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got[[0, 1, 2, 3, 7, 8]], [0.0, -0.0, 1.0, -1.0, 1.0, -1.0])
    assert np.signbit(got[1]) and np.isnan(got[4])
    want = np.array([math.erf(float(v)) for v in x[5:7]]).astype(np.float32)
    assert _ulps(got[5:7], want).max() <= 1.0


def test_float32_past_one_block_is_the_same_as_element_by_element() -> None:
    """An array of more than ERF32_BLOCK elements (any layout) is evaluated block by block:
    each element as it would be alone."""
    from runtime.ops import special

    rng = np.random.default_rng(5)
    x = (rng.standard_normal((3, special.ERF32_BLOCK + 7)) * 2).astype(np.float32)[:, ::-1]
    got = erf(x)
    assert got.shape == x.shape and got.dtype == np.float32
    singles = np.array([erf(np.float32(v)) for v in x.ravel()[::4099]], np.float32)
    np.testing.assert_array_equal(got.ravel()[::4099], singles)
    want = np.array([math.erf(float(v)) for v in x.ravel()[::97]]).astype(np.float32)
    assert _ulps(got.ravel()[::97], want).max() <= 1.0
