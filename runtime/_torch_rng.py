"""PyTorch's CPU random numbers, bit for bit, from the same Mersenne Twister stream.

A ``Generator``'s source is an MT19937 seeded as PyTorch seeds ``at::mt19937`` (numpy's legacy
seeding: the seed's low 32 bits), so after the same ``manual_seed`` both libraries hold the
same state (``get_state`` gives PyTorch's 5056 bytes). What PyTorch's CPU kernels make of the
stream is reproduced here (PyTorch 2.13; ``aten/src/ATen/core/DistributionsHelper.h``,
``TransformationHelper.h`` and ``native/cpu/DistributionTemplates.h``), so ``rand``,
``randn``, ``randint``, ``uniform_`` and ``normal_`` (and the ``nn.init`` functions and layer
initialisations built on them) give PyTorch's numbers:

- a float32 uniform is one 32-bit draw: its low 24 bits times 2**-24, then
  ``x * (to - from) + from`` with one rounding (PyTorch's vectorized build contracts it to a
  fused multiply-add); float64 takes two draws (high word first) and 53 bits; float16 and
  bfloat16 one draw and 11 or 8 bits;
- ``randn`` of 16 or more float32 numbers is ``normal_fill``: every element a uniform first,
  then Box-Muller over each block of 16 (pairs j, j + 8) through ``avx_mathfun.h``'s Cephes
  ``log256_ps`` and ``sincos256_ps`` as the compiler fused them (emulated here with exact
  float32 fused multiply-adds); a size that is no multiple of 16 redraws 16 uniforms for the
  last 16 elements. float64 (and float16, bfloat16) blocks take libm's ``log``, ``cos`` and
  ``sin`` (Python's ``math``: the same libm);
- fewer than 16 numbers are drawn one at a time by ``normal_distribution<double>``: two
  float64 uniforms, ``sqrt(-2 log1p(-u2))`` and ``2 pi u1``, the cosine's value returned and the
  sine's kept in the generator for the next such draw (``Generator._normal_cache``);
- ``randint(low, high)`` is ``draw % (high - low) + low``, of one 32-bit draw, or of two where
  the range reaches 2**32;
- ``bernoulli_(p)`` (dropout's masks), ``exponential_``, ``cauchy_``, ``geometric_`` take a
  float64 uniform an element, ``log_normal_`` a ``normal_distribution<double>`` draw, and
  ``multinomial`` exponential keys (without replacement) or a float64 uniform a sample searched
  in the running sum (with).

Checked against PyTorch in ``tests/runtime/test_torch_rng.py``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import _dtype as D

F32 = np.float32
_TWO_PI_F32 = F32(2 * math.pi)
# log256_ps's polynomial and constants (float32, as the header declares them)
_LOG_P = tuple(F32(c) for c in (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1,
                                -1.2420140846e-1, 1.4249322787e-1, -1.6668057665e-1,
                                2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1))
_LOG_Q1, _LOG_Q2 = F32(-2.12194440e-4), F32(0.693359375)
_SQRTHF = F32(0.707106781186547524)
_MIN_NORM = np.int32(0x00800000).view(F32)
# sincos256_ps's
_DP = (F32(-0.78515625), F32(-2.4187564849853515625e-4), F32(-3.77489497744594108e-8))
_SIN_P = (F32(-1.9515295891e-4), F32(8.3321608736e-3), F32(-1.6666654611e-1))
_COS_P = (F32(2.443315711809948e-5), F32(-1.388731625493765e-3), F32(4.166664568298827e-2))
_FOPI = F32(1.27323954473516)  # 4 / pi


def _fma(a: Any, b: Any, c: Any) -> np.ndarray:
    """a * b + c of float32 values (arrays or numbers) with one rounding
    (``ops.prims._fma32``)."""
    from .ops.prims import _fma32

    return _fma32(np, *(np.asarray(v, F32) for v in (a, b, c)))


def _fma64(a: Any, b: Any, c: Any) -> np.ndarray:
    """a * b + c in float64 with one rounding (PyTorch's build fuses them): the product's
    rounding error exactly (Veltkamp and Dekker), then the sum's (Knuth), added to the rounded
    sum; the last addition rounds again only where the errors' sum is inexact (rare), so
    this is the fused result but for rare cases one unit in the last place apart."""
    a, b, c = np.broadcast_arrays(*(np.asarray(v, np.float64) for v in (a, b, c)))
    p = a * b
    split = 134217729.0  # 2**27 + 1
    ta, tb = a * split, b * split
    ah, bh = ta - (ta - a), tb - (tb - b)
    al, bl = a - ah, b - bh
    err = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    s = p + c
    bb = s - p
    t = (p - (s - bb)) + (c - bb)
    with np.errstate(invalid="ignore", over="ignore"):
        out = s + (t + err)
    # an infinite product or sum (an infinite c, an overflow) is the fused result itself:
    # its error terms are inf - inf, NaN
    return np.where(np.isfinite(p) & np.isfinite(s), out, s)


def raw32(rng: Any, n: int) -> np.ndarray:
    """``n`` 32-bit draws (PyTorch's ``random()``), as uint64."""
    return rng.bit_generator.random_raw(n) if n else np.zeros(0, np.uint64)


def raw64(rng: Any, n: int) -> np.ndarray:
    """``n`` 64-bit draws (PyTorch's ``random64()``: two 32-bit draws, the first high)."""
    pairs = raw32(rng, 2 * n).reshape(n, 2)
    return (pairs[:, 0] << np.uint64(32)) | pairs[:, 1]


def unit_uniform(rng: Any, n: int, dtype: D.DType) -> np.ndarray:
    """``n`` uniforms on [0, 1) as PyTorch's ``uniform_real_distribution(0, 1)`` draws them:
    float64 ones of 53 bits, the others float32 ones of 24 bits (float16 and bfloat16 are
    drawn as float32 and rounded, as PyTorch's CPU kernels draw them)."""
    if dtype is D.float64:
        return (raw64(rng, n) & np.uint64((1 << 53) - 1)).astype(np.float64) * 2.0 ** -53
    return (raw32(rng, n) & np.uint64((1 << 24) - 1)).astype(F32) * F32(2.0 ** -24)


def uniform(rng: Any, shape: tuple[int, ...], dtype: D.DType, low: float = 0.0,
            high: float = 1.0) -> np.ndarray:
    """PyTorch's ``uniform_(low, high)`` of a tensor of ``shape`` and ``dtype``."""
    n = math.prod(shape)
    x = unit_uniform(rng, n, dtype)
    if (low, high) == (0.0, 1.0):
        out = x
    elif dtype is D.float64:
        out = _fma64(x, np.float64(high) - np.float64(low), np.float64(low))
    else:
        lo, hi = (np.asarray(v, dtype.np).astype(F32) for v in (low, high))
        out = _fma(x, hi - lo, lo)
    out = np.asarray(out).astype(dtype.np, copy=False)
    # a value rounded up to ``high`` (bfloat16's above 1 - 2**-9) is ``low``, as PyTorch's
    top = np.asarray(high, dtype.np)
    if (out == top).any():
        out = np.where(out == top, np.asarray(low, dtype.np), out)
    return out.reshape(shape)


def integers(rng: Any, shape: tuple[int, ...], low: int, high: int,
             dtype: D.DType = D.int64) -> np.ndarray:
    """PyTorch's ``random_(low, high)`` (``randint``): a draw modulo the range, plus low; the
    draw is 64-bit where the range reaches 2**32 for the dtypes PyTorch does that for."""
    n, span = math.prod(shape), high - low
    wide = span >= 1 << 32 and dtype in (D.int64, D.float64, D.float32, D.bfloat16)
    draws = raw64(rng, n) if wide else raw32(rng, n)
    values = (draws % np.uint64(span)).astype(np.int64) + np.int64(low) if span < 1 << 63 \
        else np.array([int(v) % span + low for v in draws], np.int64)
    return values.astype(dtype.np, copy=False).reshape(shape)


def exponential(rng: Any, shape: tuple[int, ...], dtype: D.DType, lambd: float) -> np.ndarray:
    """PyTorch's CPU ``exponential_(lambd)``: ``-1 / lambd * log1p(-u)`` of a float64 uniform an
    element, libm's log1p (``math``'s: numpy's differs from it in the last place)."""
    u = unit_uniform(rng, math.prod(shape), D.float64)
    scale = -1.0 / lambd
    values = np.fromiter((scale * math.log1p(-v) for v in u.tolist()), np.float64, u.size)
    return values.astype(dtype.np).reshape(shape)


def _per_element(fn: Any, u: np.ndarray, shape: tuple[int, ...], dtype: D.DType) -> np.ndarray:
    return np.fromiter(map(fn, u.tolist()), np.float64, u.size).astype(dtype.np).reshape(shape)


def cauchy(rng: Any, shape: tuple[int, ...], dtype: D.DType, median: float,
           sigma: float) -> np.ndarray:
    """PyTorch's CPU ``cauchy_``: ``median + sigma * tan(pi * (u - 0.5))`` of a float64
    uniform an element (libm's tan)."""
    u = unit_uniform(rng, math.prod(shape), D.float64)
    tans = np.fromiter((math.tan(math.pi * (v - 0.5)) for v in u.tolist()), np.float64, u.size)
    return _fma64(tans, sigma, median).astype(dtype.np).reshape(shape)


def geometric(rng: Any, shape: tuple[int, ...], dtype: D.DType, p: float) -> np.ndarray:
    """PyTorch's CPU ``geometric_``: ``ceil(log(u) / log1p(-p))`` of a float64 uniform an
    element."""
    u = unit_uniform(rng, math.prod(shape), D.float64)
    scale = math.log1p(-p)
    return _per_element(lambda v: math.ceil(math.log(v) / scale) if v > 0 else math.inf, u,
                        shape, dtype)


def log_normal(generator: Any, shape: tuple[int, ...], dtype: D.DType, mean: float,
               std: float) -> np.ndarray:
    """PyTorch's CPU ``log_normal_``: exp of a ``normal_distribution<double>(mean, std)`` draw
    an element (Box-Muller pairs, the kept sample first)."""
    rng = generator._rng
    draws = [math.exp(_box_muller_double(generator, rng, mean, std))
             for _ in range(math.prod(shape))]
    return np.array(draws, np.float64).astype(dtype.np).reshape(shape)


def multinomial(rng: Any, rows: np.ndarray, num_samples: int, replacement: bool) -> np.ndarray:
    """PyTorch's CPU ``multinomial`` of the weights ``rows`` (2-D, float32 or float64, checked
    by the caller): without replacement (or one sample) the top ``num_samples`` of
    ``weight / q``, q an exponential draw of the weights' dtype for every weight; with, a float64
    uniform a sample, row after row, found in the row's running sum (in the weights' dtype)
    divided by its total, the last made 1."""
    n_rows, n = rows.shape
    if not replacement or num_samples == 1:
        q = exponential(rng, rows.shape, D.from_numpy_dtype(rows.dtype), 1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            keys = rows / q
        if num_samples == 1:
            return np.argmax(keys, axis=1)[:, None]
        return np.argsort(-keys, axis=1, kind="stable")[:, :num_samples]
    cum = np.cumsum(rows, axis=1, dtype=rows.dtype)
    cum = cum / cum[:, -1:]
    cum[:, -1] = 1
    u = unit_uniform(rng, n_rows * num_samples, D.float64).reshape(n_rows, num_samples)
    return np.stack([np.searchsorted(c.astype(np.float64), s, side="left")
                     for c, s in zip(cum, u)]).astype(np.int64)


# ----------------------------------------------------------------------------- normals


def _log_cephes(x: np.ndarray) -> np.ndarray:
    """``log256_ps`` of positive float32 numbers, as PyTorch's build computes it."""
    x = np.maximum(x, _MIN_NORM)
    bits = x.view(np.int32)
    e = ((bits.view(np.uint32) >> 23).astype(np.int32) - 0x7F).astype(F32) + F32(1)
    x = ((bits & np.int32(~0x7F800000)) | np.float32(0.5).view(np.int32)).view(F32)
    small = x < _SQRTHF
    x = (x - F32(1)) + np.where(small, x, F32(0))
    e = e - np.where(small, F32(1), F32(0))
    z = x * x
    y = np.full_like(x, _LOG_P[0])
    for p in _LOG_P[1:]:
        y = _fma(y, x, p)
    y = y * x
    y = _fma(y, z, e * _LOG_Q1)
    y = y - z * F32(0.5)
    return _fma(e, _LOG_Q2, x + y)


def _sincos_cephes(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``sincos256_ps`` of float32 numbers, as PyTorch's build computes it."""
    sign_sin = x.view(np.uint32) & np.uint32(0x80000000)
    x = np.abs(x)
    j = (x * _FOPI).astype(np.int32)  # truncation, as cvttps
    j = (j + 1) & ~1
    y = j.astype(F32)
    swap_sin = ((j & 4) << 29).view(np.uint32)
    sign_cos = ((~(j - 2)) & 4).view(np.uint32) << np.uint32(29)
    first = (j & 2) == 0
    for d in _DP:
        x = _fma(y, d, x)
    z = x * x
    yc = _fma(_fma(np.full_like(z, _COS_P[0]), z, _COS_P[1]), z, _COS_P[2]) * z
    yc = _fma(yc, z, -(z * F32(0.5))) + F32(1)
    ys = _fma(_fma(np.full_like(z, _SIN_P[0]), z, _SIN_P[1]), z, _SIN_P[2]) * z
    ys = _fma(ys, x, x)
    s, c = np.where(first, ys, yc), np.where(first, yc, ys)
    return ((s.view(np.uint32) ^ sign_sin ^ swap_sin).view(F32),
            (c.view(np.uint32) ^ sign_cos).view(F32))


def _fill_float32(d: np.ndarray, mean: float, std: float) -> np.ndarray:
    """``normal_fill_16_AVX2`` over rows of 16 uniforms."""
    u1, u2 = F32(1) - d[:, :8], d[:, 8:]
    radius = np.sqrt(F32(-2) * _log_cephes(u1))
    s, c = _sincos_cephes(_TWO_PI_F32 * u2)
    n = np.concatenate([radius * c, radius * s], axis=1)
    # fmadd(n, std, mean): with std 1 and mean 0, n + 0 (a -0 becomes +0 there too)
    return n + F32(0) if (mean, std) == (0.0, 1.0) else _fma(n, F32(std), F32(mean))


def _fill_scalar(d: np.ndarray, dtype: D.DType, mean: float, std: float) -> np.ndarray:
    """``normal_fill_16<scalar_t>`` over rows of 16 uniforms: libm's float64 functions (each
    element's, through ``math``); float16 and bfloat16 rounded as their arithmetic does."""
    narrow = dtype is not D.float64
    t = dtype.np

    def rounded(v: Any) -> Any:
        return np.asarray(v, F32).astype(t).astype(np.float64) if narrow else v

    u1, u2 = rounded(1.0 - d[:, :8]), d[:, 8:].astype(np.float64)
    f = np.frompyfunc
    radius = rounded(np.sqrt(-2.0 * f(math.log, 1, 1)(u1).astype(np.float64)))
    theta = rounded(2.0 * math.pi * u2)
    cos = f(math.cos, 1, 1)(theta).astype(np.float64)
    sin = f(math.sin, 1, 1)(theta).astype(np.float64)
    n = np.concatenate([radius * cos, radius * sin], axis=1)
    return n + 0.0 if (mean, std) == (0.0, 1.0) else _fma64(n, std, mean)


def _normal_fill(rng: Any, n: int, dtype: D.DType, mean: float, std: float) -> np.ndarray:
    d = unit_uniform(rng, n, dtype)
    fill = ((lambda blocks: _fill_float32(blocks, mean, std)) if dtype is D.float32 else
            (lambda blocks: _fill_scalar(blocks, dtype, mean, std)))
    out = np.empty(n, np.float64 if dtype is D.float64 else F32)
    whole = n - n % 16
    out[:whole] = fill(d[:whole].reshape(-1, 16)).reshape(-1)
    if n % 16:  # PyTorch draws 16 more and makes the last 16 of them
        out[n - 16:] = fill(unit_uniform(rng, 16, dtype).reshape(1, 16)).reshape(-1)
    return out


def _box_muller_double(generator: Any, rng: Any, mean: float, std: float) -> float:
    """One ``normal_distribution<double>(mean, std)`` draw: the generator's kept sine first."""
    cached = generator.__dict__.get("_normal_cache")
    if cached is not None:
        generator._normal_cache = None
        return _scaled(cached, mean, std)
    u1, u2 = (float(v) for v in unit_uniform(rng, 2, D.float64))
    r = math.sqrt(-2.0 * math.log1p(-u2))
    theta = 2.0 * math.pi * u1
    generator._normal_cache = r * math.sin(theta)
    return _scaled(r * math.cos(theta), mean, std)


def _scaled(x: float, mean: float, std: float) -> float:
    """x * std + mean with one rounding (PyTorch's build fuses it)."""
    return x if (mean, std) == (0.0, 1.0) else float(_fma64(x, std, mean))


def normal(generator: Any, shape: tuple[int, ...], dtype: D.DType, mean: float = 0.0,
           std: float = 1.0) -> np.ndarray:
    """PyTorch's ``normal_(mean, std)`` of a contiguous tensor of ``shape`` and ``dtype``
    (``randn``: mean 0, std 1), drawn from ``generator``'s source."""
    rng = generator._rng
    n = math.prod(shape)
    if n >= 16:
        out = _normal_fill(rng, n, dtype, mean, std)
    else:
        out = np.array([_box_muller_double(generator, rng, mean, std) for _ in range(n)],
                       np.float64)
    return out.astype(dtype.np, copy=False).reshape(shape)


# ------------------------------------------------------------------------------ state

# PyTorch's CPUGeneratorImplState: the legacy THGeneratorState (initial seed, left, seeded,
# next, the 624 words as uint64, three doubles, normal_is_valid), padded to 8, then a float
# and a bool, padded to 8
STATE_BYTES = 5056
_STATE_WORDS, _NORMAL_Y, _NORMAL_VALID, _FLOAT_NORMAL = 24, 5024, 5040, 5048


def state_bytes(seed: int, rng: Any, normal_cache: float | None) -> bytes:
    """The source's state in PyTorch's ``get_rng_state`` layout."""
    st = rng.bit_generator.state
    if st["bit_generator"] != "MT19937":
        raise RuntimeError(f"get_state: a {st['bit_generator']} source has no PyTorch state")
    key, pos = st["state"]["key"], int(st["state"]["pos"])
    # PyTorch's engine counts down `left` to its regeneration; numpy's counts `pos` up
    left, nxt = (1, 0) if pos >= 624 else (625 - pos, pos)
    out = bytearray(STATE_BYTES)
    out[0:8] = (seed % (1 << 64)).to_bytes(8, "little")
    out[8:12] = left.to_bytes(4, "little")
    out[12:16] = (1).to_bytes(4, "little")
    out[16:24] = nxt.to_bytes(8, "little")
    out[_STATE_WORDS:_STATE_WORDS + 624 * 8] = np.asarray(key, np.uint64).tobytes()
    if normal_cache is not None:
        out[_NORMAL_Y:_NORMAL_Y + 8] = np.float64(normal_cache).tobytes()
        out[_NORMAL_VALID:_NORMAL_VALID + 4] = (1).to_bytes(4, "little")
    return bytes(out)


def from_state_bytes(raw: bytes) -> tuple[int, dict[str, Any], float | None]:
    """(initial seed, numpy MT19937 state, kept normal) of bytes in PyTorch's layout."""
    seed = int.from_bytes(raw[0:8], "little")
    left = int.from_bytes(raw[8:12], "little")
    nxt = int.from_bytes(raw[16:24], "little")
    words = np.frombuffer(raw[_STATE_WORDS:_STATE_WORDS + 624 * 8], np.uint64)
    if left < 1 or left > 624 or (left > 1 and nxt != 625 - left) or words.max() >= 1 << 32:
        raise RuntimeError("Invalid mt19937 state")
    pos = 624 if left == 1 else nxt
    state = {"bit_generator": "MT19937",
             "state": {"key": words.astype(np.uint32), "pos": pos}}
    valid = int.from_bytes(raw[_NORMAL_VALID:_NORMAL_VALID + 4], "little")
    cache = float(np.frombuffer(raw[_NORMAL_Y:_NORMAL_Y + 8], np.float64)[0]) if valid else None
    return seed, state, cache
