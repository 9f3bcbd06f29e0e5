"""erf over numpy arrays, vectorized: fdlibm's s_erf.c in float64, the algorithm and tables
the LLVM kernels use (``codegen.llvm_math``); float32 inputs the polynomials of its float32
erf, computed in float64 and rounded once. Eager mode's erf was ``math.erf`` per element through
``np.frompyfunc``: about 0.2 us an element, the exact GELU of a small transformer's step
spent 0.2 s in it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# erf: fdlibm s_erf.c, four ranges of |x| (the LLVM kernels evaluate the same rationals in
# float for float32; erf below, in float64)
ERX = 8.45062911510467529297e-01
ERF_PP = [1.28379167095512558561e-01, -3.25042107247001499370e-01, -2.84817495755985104766e-02,
          -5.77027029648944159157e-03, -2.37630166566501626084e-05]
ERF_QQ = [1.0, 3.97917223959155352819e-01, 6.50222499887672944485e-02,
          5.08130628187576562776e-03, 1.32494738004321644526e-04, -3.96022827877536812320e-06]
ERF_PA = [-2.36211856075265944077e-03, 4.14856118683748331666e-01, -3.72207876035701323847e-01,
          3.18346619901161753674e-01, -1.10894694282396677476e-01, 3.54783043256182359371e-02,
          -2.16637559486879084300e-03]
ERF_QA = [1.0, 1.06420880400844228286e-01, 5.40397917702171048937e-01,
          7.18286544141962662868e-02, 1.26171219808761642112e-01, 1.36370839120290507362e-02,
          1.19844998467991074170e-02]
# erfc on [1.25, 1/0.35) and [1/0.35, 6); the shorter pair padded with a zero top coefficient
ERF_RA = [-9.86494403484714822705e-03, -6.93858572707181764372e-01, -1.05586262253232909814e+01,
          -6.23753324503260060396e+01, -1.62396669462573470355e+02, -1.84605092906711035994e+02,
          -8.12874355063065934246e+01, -9.81432934416914548592e+00]
ERF_SA = [1.0, 1.96512716674392571292e+01, 1.37657754143519042600e+02,
          4.34565877475229228821e+02, 6.45387271733267880336e+02, 4.29008140027567833386e+02,
          1.08635005541779435134e+02, 6.57024977031928170135e+00, -6.04244152148580987438e-02]
ERF_RB = [-9.86494292470009928597e-03, -7.99283237680523006574e-01, -1.77579549177547519889e+01,
          -1.60636384855821916062e+02, -6.37566443368389627722e+02, -1.02509513161107724954e+03,
          -4.83519191608651397019e+02, 0.0]
ERF_SB = [1.0, 3.03380607434824582924e+01, 3.25792512996573918826e+02,
          1.53672958608443695994e+03, 3.19985821950859553908e+03, 2.55305040643316442583e+03,
          4.74528541206955367215e+02, -2.24409524465858183362e+01, 0.0]
# low mantissa bits cleared so that z*z is exact
ERF_TRUNC_MASK = {"float32": 0xFFFFF000, "float64": 0xFFFFFFFF00000000}

# float32 erf in two ranges of polynomials, no division (fitted by weighted least squares on
# Chebyshev nodes, checked in float32 with fused multiply-adds; 1.1 ulp measured): below 1,
# erf(x) = x + x * P(x*x), P(z) = erf(x)/x - 1; from 1 to 4, erf(x) = 1 - exp(G(x) - x*x),
# G(x) = log(erfc(x)) + x*x = log(erfcx(x)), smooth there; past 4 erf rounds to 1
ERF32_SMALL = [0.12837916612625122, -0.37612637877464294, 0.11283782869577408,
               -0.026865437626838684, 0.005221053492277861, -0.0008484396385028958,
               0.00011268253729213029, -9.673591193859465e-06]
ERF32_LOG_ERFCX = [2.1600502805085853e-05, -1.1285343170166016, 0.36387866735458374,
                   -0.10371080785989761, 0.020260266959667206, -0.0006726314895786345,
                   -0.0013036938617005944, 0.0005746521055698395, -0.00013819134619552642,
                   2.073463474516757e-05, -1.8249781987833558e-06, 7.234360310803822e-08]
ERF32_ONE = 4.0


def _poly(x: np.ndarray, coeffs: list[float]) -> np.ndarray:
    """Horner evaluation of sum(coeffs[k] * x**k)."""
    acc = np.full_like(x, coeffs[-1])
    for c in reversed(coeffs[:-1]):
        acc *= x
        acc += c
    return acc


ERF32_BLOCK = 1 << 16  # elements a float32 erf evaluates at once: its float64 temporaries
# (512 KiB each) stay in the L2 cache (gpt's GELU over 16 x 64 x 512: 16.6 -> 10.0 ms)


def _erf32(x: np.ndarray) -> np.ndarray:
    """float32 erf: two ranges of polynomials (ERF32_SMALL, ERF32_LOG_ERFCX), evaluated in
    float64 over every element and rounded once (0.64 ulp on every 37th float32 below 4.5),
    ERF32_BLOCK elements at a time: 2.5x fdlibm's four masked ranges. The compiled kernels
    (``codegen.llvm_math._erf32``) split the same ranges with shorter polynomials of their own,
    fitted for float32 evaluation (1.07 ulp), so the two can differ by a last bit or two."""
    if x.size <= ERF32_BLOCK:
        return _erf32_block(x)
    flat = x.reshape(-1)
    out = np.empty(flat.shape, np.float32)
    for start in range(0, flat.size, ERF32_BLOCK):
        out[start:start + ERF32_BLOCK] = _erf32_block(flat[start:start + ERF32_BLOCK])
    return out.reshape(x.shape)


def _erf32_block(x: np.ndarray) -> np.ndarray:
    w = x.astype(np.float64)
    a = np.abs(w)
    ac = np.minimum(a, ERF32_ONE)
    with np.errstate(invalid="ignore", over="ignore"):  # the range not taken, at +-inf
        small = w + w * _poly(w * w, ERF32_SMALL)
        big = np.copysign(1.0 - np.exp(_poly(ac, ERF32_LOG_ERFCX) - ac * ac), w)
    return np.where(a < 1.0, small, big).astype(np.float32)  # a nan stays nan in big


def erf(x: np.ndarray) -> np.ndarray:
    """erf(x) elementwise for a float array (any shape, 0-d included), in x's dtype: within
    1 ulp of the true value in float64; float32 results are float64 ones rounded (``_erf32``).
    Each range of |x| is evaluated on its own elements only."""
    x = np.asarray(x)
    if x.dtype == np.float32:
        return _erf32(x)
    a = np.abs(x, dtype=np.float64).ravel()
    y = np.ones_like(a)  # |x| >= 6
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        small = a < 0.84375
        v = a[small]
        z = v * v
        y[small] = v + v * (_poly(z, ERF_PP) / _poly(z, ERF_QQ))
        near1 = (a >= 0.84375) & (a < 1.25)
        s = a[near1] - 1.0
        y[near1] = ERX + _poly(s, ERF_PA) / _poly(s, ERF_QA)
        for lo, hi, r, q in ((1.25, 1 / 0.35, ERF_RA, ERF_SA), (1 / 0.35, 6.0, ERF_RB, ERF_SB)):
            mid = (a >= lo) & (a < hi)
            v = a[mid]
            inv = 1.0 / (v * v)
            # erfc(v) = exp(-t*t - 0.5625) * exp((t - v)(t + v) + R/S) / v, t = v truncated
            t = (v.view(np.uint64) & np.uint64(ERF_TRUNC_MASK["float64"])).view(np.float64)
            y[mid] = 1.0 - (np.exp(-t * t - 0.5625)
                            * np.exp((t - v) * (t + v) + _poly(inv, r) / _poly(inv, q)) / v)
    nan = np.isnan(a)
    y[nan] = a[nan]
    return np.copysign(y.reshape(x.shape), x).astype(x.dtype, copy=False)


def erfc(xp: Any, x: Any) -> Any:
    """erfc(x) = 1 - erf(x) without the cancellation: fdlibm's s_erf.c erfc ranges, written
    with ``xp`` ufuncs and where (no boolean indexing, so CuPy runs it too), in float64 and
    rounded once. exp(-x*x) is taken directly (fdlibm splits x to make x*x exact): relative
    error against math.erfc 1.6e-14 below x = 10, 1.3e-13 up to 28; 0 past 28, as fdlibm."""
    w = xp.asarray(x).astype(np.float64)
    a = xp.abs(w)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        z = w * w
        y = w * (_poly_xp(xp, z, ERF_PP) / _poly_xp(xp, z, ERF_QQ))
        small = xp.where(w < 0.25, 1.0 - (w + y), 0.5 - (w - 0.5 + y))
        s = a - 1.0
        pq = _poly_xp(xp, s, ERF_PA) / _poly_xp(xp, s, ERF_QA)
        near1 = xp.where(w >= 0, 1.0 - ERX - pq, 1.0 + ERX + pq)
        inv = 1.0 / (a * a)
        ra = _poly_xp(xp, inv, ERF_RA) / _poly_xp(xp, inv, ERF_SA)
        rb = _poly_xp(xp, inv, ERF_RB) / _poly_xp(xp, inv, ERF_SB)
        tail = xp.exp(-a * a - 0.5625 + xp.where(a < 1 / 0.35, ra, rb)) / a
        tail = xp.where(a < 28.0, tail, 0.0)
        big = xp.where(w >= 0, tail, 2.0 - tail)
        out = xp.where(a < 0.84375, small, xp.where(a < 1.25, near1, big))
    out = xp.where(xp.isnan(w), w, out)
    dtype = x.dtype if x.dtype.kind == "f" else np.float32
    return out.astype(dtype)


def _poly_xp(xp: Any, x: Any, coeffs: list[float]) -> Any:
    acc = xp.zeros_like(x) + coeffs[-1]
    for c in reversed(coeffs[:-1]):
        acc = acc * x + c
    return acc
