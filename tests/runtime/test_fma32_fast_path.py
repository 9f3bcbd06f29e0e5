"""runtime.ops.prims' float32 fma: the float64 sum rounded to float32 once, except where that
sum lies halfway between two float32 numbers or below float32's normal range, where the sum
is first rounded to odd (numpy has no fma: lerp, addcmul and add/sub with alpha round once
as PyTorch's CPU kernels)."""

from __future__ import annotations

import numpy as np
import pytest

from runtime.ops.prims import _fma, _rounded_to_odd, _two_sum


def _exact(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The reference: every float64 sum rounded to odd, then to float32."""
    p = a.astype(np.float64) * b.astype(np.float64)
    return _rounded_to_odd(np, *_two_sum(p, c.astype(np.float64))).astype(np.float32)


def test_a_sum_rounded_to_halfway_in_float64_rounds_once() -> None:
    # a * b = 2**-24 + 2**-60 exactly; 1 + that rounds to 1 + 2**-24 in float64 (halfway
    # between 1 and the next float32) and then to 1 by ties-to-even: fma gives 1 + 2**-23
    a = np.array([1 + 2.0 ** -12], np.float32)
    b = np.array([(1 - 2.0 ** -12 + 2.0 ** -24) * 2.0 ** -24], np.float32)
    c = np.ones(1, np.float32)
    assert (a.astype(np.float64) * b + c).astype(np.float32)[0] == 1  # twice rounded
    assert _fma(np, a, b, c)[0] == np.float32(1 + 2.0 ** -23)
    assert _fma(np, -a, b, -c)[0] == -np.float32(1 + 2.0 ** -23)


@pytest.mark.parametrize("scale", [1.0, 2.0 ** -130, 2.0 ** 100])
def test_random_and_tiny_operands_match_rounding_every_sum_to_odd(scale: float) -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal(20000).astype(np.float32)
    b = (rng.standard_normal(20000) * scale).astype(np.float32)
    c = (rng.standard_normal(20000) * scale).astype(np.float32)
    c[::7] = -(a[::7].astype(np.float64) * b[::7]).astype(np.float32)  # near cancellations
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(_fma(np, a, b, c), _exact(a, b, c))
        np.testing.assert_array_equal(_fma(np, np.float32(0.1), b, c),
                                      _exact(np.float32(0.1), b, c))


def test_0d_operands_whose_sum_is_rounded_to_odd() -> None:
    """0-d operands (an addcmul of scalars, a 0-d loss's update): their float64 sum is a numpy
    scalar, which the halfway case rounded to odd in place (it raised TypeError: a fuzzed
    step found it)."""
    a, b, c = (np.array(v, np.float32) for v in (-0.1, -2.0, -0.5))
    got = _fma(np, a, b, c)
    assert isinstance(got, np.ndarray) and got.shape == () and got.dtype == np.float32
    exact = np.float64(a) * np.float64(b) + np.float64(c)  # exact here: no rounding to doubt
    assert got == np.float32(exact)
