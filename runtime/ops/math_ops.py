"""PyTorch's special and elementwise math functions written from primitives: xlogy, sinc,
logit, heaviside, copysign, signbit, logaddexp2, float_power, lgamma, digamma, erfinv,
ndtr/log_ndtr, entr, erfcx, i0/i1 (``erfc`` is a primitive: 1 - erf cancels).

lgamma, digamma, erfinv, erfcx, i0 and i1 have no numpy routine; they are evaluated in
float64 from primitives (so they capture, run on CuPy and differentiate like any composite)
and rounded once to the input's dtype. Measured over [-50, 50] against torch and mpmath, the
error relative to max(|value|, 1): lgamma 3.5e-15 (relative to the value near its zeros 1 and
2, by their Taylor series), digamma 2.4e-15 (its gradient 4e-16 against mpmath, where torch's
trigamma is 8e-10 off); erfinv 2.2e-16 relative on (-1, 1), tails included; i0 and i1 2e-15;
erfcx 1.7e-14.

At poles, infinities and NaN a composite's own gradient is 0 (a branch not taken) or NaN
(0 * inf); there each op takes PyTorch's derivative formula evaluated at the point
(``_with_edges``), so the gradient's NaN places and infinities' signs are PyTorch's
(tests/runtime/test_parity_edges_math.py)."""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from typing import Any

from .. import _dtype as D
from ..tensor import Tensor
from . import functional as F
from . import prims as P
from . import tensor_ops as T
from .dispatch import apply, named
from .naming import renamed_backward

_LN2 = math.log(2.0)
# below this |x| lgamma is -log|x| and digamma -1/x (the next terms are 1e-150 of them), and
# the series' own gradients would overflow (1 / x**2) into NaN
_TINY = 1e-150
_EULER = 0.57721566490153286
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _tensor(x: Any, like: Tensor | None = None) -> Tensor:
    if isinstance(x, Tensor):
        return x
    from ..creation import tensor

    return tensor(x, device=like.device if like is not None else None)


_as_float = F.as_float


def _in64(fn: Any, x: Tensor) -> Tensor:
    """fn evaluated in float64, rounded once to x's float dtype."""
    x = _as_float(x)
    out = fn(F.cast(x, D.float64) if x.dtype is not D.float64 else x)
    return out if x.dtype is D.float64 else F.cast(out, x.dtype)


def _with_edges(value: Tensor, x: Tensor | tuple[Tensor, ...], regular: Tensor, slope: Any,
                name: str) -> Tensor:
    """``value`` differentiated as itself where ``regular`` and as the incoming gradient times
    ``slope`` (PyTorch's derivative formula evaluated there, held constant) elsewhere: at a
    pole, an infinity or NaN, where a composite's own gradient is 0 (a branch not taken) or
    leaks (a where passing x through). ``value`` must be computed from ``_safe(x, regular,
    ...)`` (no inf or NaN in its gradient outside ``regular``), in a node named ``name``.
    Several inputs: ``x`` and ``slope`` are tuples, a slope for each."""
    from .composite import straight_through

    xs, slopes = (x, slope) if isinstance(x, tuple) else ((x,), (slope,))
    if not any(t.requires_grad for t in xs):
        return value
    edge = None
    for t, k in zip(xs, slopes):
        # -0 where regular: the zero this term adds to a regular gradient keeps its sign
        k = F.where(regular, -0.0, k.detach() if isinstance(k, Tensor) else k)
        edge = F.mul(t, k) if edge is None else F.add(edge, F.mul(t, k))
    return straight_through(value, F.where(regular, value, edge), name)


def _safe(x: Tensor, regular: Tensor, fill: float) -> Tensor:
    """x where ``regular``, else ``fill``, with a -0 gradient there (a where's would be +0,
    which turns the edge's -0 gradient that ``_with_edges`` adds to it into +0)."""
    return F.neg(F.where(regular, F.neg(x), -fill))


def takes_out(name: str, check: Callable[[Tensor, Tensor], None] | None = None
              ) -> Callable[[Callable[..., Tensor]], Callable[..., Tensor]]:
    """PyTorch's keyword-only ``out=`` for an op of one result: the result written into it
    (``F.written_to``, with PyTorch's checks and texts naming ``name``; ``check(out, result)``
    first where the op's own dtype rule is stricter); the signature shows it, as PyTorch's."""
    def decorate(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
        sig = inspect.signature(fn)

        @functools.wraps(fn)
        def op(*args: Any, out: Tensor | None = None, **kwargs: Any) -> Tensor:
            if out is None:
                return fn(*args, **kwargs)
            result = fn(*args, **kwargs)
            if check is not None and isinstance(out, Tensor) and not result.requires_grad:
                check(out, result)
            return F.written_to(out, result, name)

        out_param = inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None,
                                      annotation="Tensor | None")
        op.__signature__ = sig.replace(  # type: ignore[attr-defined]
            parameters=[*sig.parameters.values(), out_param])
        return op
    return decorate


def takes_out_each(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """PyTorch's keyword-only ``out=(a, b, ...)`` for an op of several results (linalg.qr,
    eigh, slogdet, svd): each written into its tensor (``F.written_to_each``, its checks and
    texts naming ``name``)."""
    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        sig = inspect.signature(fn)

        @functools.wraps(fn)
        def op(*args: Any, out: Any = None, **kwargs: Any) -> Any:
            if out is None:
                return fn(*args, **kwargs)
            outs = out if isinstance(out, (tuple, list)) else ()
            tensors = [t for t in (*outs, *args, *kwargs.values()) if isinstance(t, Tensor)]
            if any(t.requires_grad for t in tensors):
                from ..autograd.grad_mode import is_grad_enabled

                if is_grad_enabled():
                    raise RuntimeError(f"{name}(): functions with out=... arguments don't "
                                       "support automatic differentiation, but one of the "
                                       "arguments requires grad.")
            return F.written_to_each(out, fn(*args, **kwargs), name)

        out_param = inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None,
                                      annotation="tuple[Tensor, ...] | None")
        op.__signature__ = sig.replace(  # type: ignore[attr-defined]
            parameters=[*sig.parameters.values(), out_param])
        return op
    return decorate


def same_out_dtype(out: Tensor, result: Tensor) -> None:
    """linalg's rule: out of exactly the result's dtype (PyTorch's text)."""
    if out.dtype is not result.dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {D.type_meta_name(result.dtype)}, "
                           f"but got {D.type_meta_name(out.dtype)} instead")


def castable_out_dtype(name: str) -> Callable[[Tensor, Tensor], None]:
    """PyTorch's rule for the out= of some linalg ops (cond, pinv, matrix_power, matrix_rank,
    householder_product): a dtype the result safely casts to (a float64 result into a
    float32 out too, an int64 rank into an int32 one), its text naming ``name``."""
    def check(out: Tensor, result: Tensor) -> None:
        if result.dtype.category > out.dtype.category:
            raise RuntimeError(f"{name}: Expected result to be safely castable from "
                               f"{D.scalar_type_name(result.dtype)} dtype, but got result with "
                               f"dtype {D.scalar_type_name(out.dtype)}")
    return check


def exact_out_dtype(text: str) -> Callable[[Tensor, Tensor], None]:
    """An out= of exactly the result's dtype, PyTorch's ``text`` (its {out} and {result}
    names: Float, Double) where not."""
    def check(out: Tensor, result: Tensor) -> None:
        if out.dtype is not result.dtype:
            raise RuntimeError(text.format(out=D.scalar_type_name(out.dtype),
                                           result=D.scalar_type_name(result.dtype)))
    return check


def _or(a: Tensor, b: Tensor) -> Tensor:
    from .extra_ops import logical_or

    return logical_or(a, b)


def _pair(a: Any, b: Any) -> tuple[Tensor, Tensor]:
    if isinstance(a, Tensor):
        return a, _tensor(b, a) if not isinstance(b, Tensor) else b
    b = _tensor(b)
    return _tensor(a, b), b


# --- simple compositions ---------------------------------------------------------------------


@takes_out("erfc")
def erfc(input: Tensor) -> Tensor:
    """1 - erf(x), accurate in the tails."""
    return apply(P.ERFC, input)


def _x_log(x: Any, y: Any, log: Any, pole: float, name: str) -> Tensor:
    """x * log(y) as PyTorch's xlogy (``log`` = log, pole 0) and xlog1py (log1p, -1): NaN
    where y is, else +0 where x == 0 (-0 too, and beside log(y) = +-inf); the gradient log(y)
    for x, except 0 where x == 0 and y is at or below the pole, and x / y (x / (1 + y)) for
    y, as PyTorch's formulas. Both operands in their promoted dtype first (the default float
    for integers), as PyTorch's kernel reads them: float16 x and int y is float16, where
    log(int y) made it float32, and float32 x took the log of a bfloat16 y in bfloat16."""
    tensors = [t for t in (x, y) if isinstance(t, Tensor)]
    dt = D.result_dtype([t.dtype for t in tensors],
                        [v for v in (x, y) if not isinstance(v, Tensor)], [t.ndim for t in tensors])
    dt = dt if dt.is_floating_point else D.default_float
    x, y = (t if t.dtype is dt else F.cast(t, dt) for t in _pair(x, y))
    zero = F.eq(x.detach(), 0)
    path = F.mul(x, F.where(F.logical_and(zero, F.le(y.detach(), pole)), 0.0, log(y)))
    value = F.where(T.isnan(y.detach()), math.nan, F.where(zero, 0.0, path.detach()))
    if not (x.requires_grad or y.requires_grad):
        return value
    from .composite import straight_through

    return straight_through(value, path, name)


@takes_out("xlogy")
def xlogy(input: Any, other: Any) -> Tensor:
    """x * log(y), 0 where x == 0 (unless y is NaN), as PyTorch's."""
    return _x_log(input, other, F.log, 0.0, "XlogyBackward0")


@takes_out("special_xlog1py")
def xlog1py(input: Any, other: Any) -> Tensor:
    """x * log1p(y), 0 where x == 0 (unless y is NaN)."""
    return _x_log(input, other, F.log1p, -1.0, "SpecialXlog1PyBackward0")


_HALF = (D.float16, D.bfloat16)
_SINC_SERIES = 1e-4  # below, 1 - t/6 + t^2/120 - t^3/5040 (t = (pi x)^2) to 1e-25


@takes_out("sinc")
@renamed_backward("SincBackward0")
def sinc(input: Tensor) -> Tensor:
    """sin(pi x) / (pi x), 1 at 0; below |x| = 1e-4 its Taylor series, whose gradient keeps
    its digits (sin's and the division's cancel: 2.3e-8 at 1e-8, PyTorch's 2.1e-8, where
    -pi^2 x / 3 is 3.3e-8). Half dtypes in float32, rounded once, as PyTorch's."""
    x = _as_float(input)
    if x.dtype in _HALF:
        return F.cast(sinc(F.cast(x, D.float32)), x.dtype)
    small = F.le(F.abs(x), _SINC_SERIES)
    pxs = F.mul(F.where(small, x, 0.0), math.pi)
    series = _horner(F.mul(pxs, pxs), [1.0, -1 / 6, 1 / 120, -1 / 5040])
    px = F.mul(F.where(small, 1.0, x), math.pi)
    return F.where(small, series, F.div(F.sin(px), px))


@takes_out("logit")
def logit(input: Tensor, eps: float | None = None) -> Tensor:
    """log(x / (1 - x)), x first clamped to [eps, 1 - eps] when eps is given (a negative eps
    is none, as PyTorch's). The gradient is PyTorch's: 1 / (x (1 - x)) on [lo, hi], inf at 0
    and 1, 0 outside [eps, 1 - eps] (NaN outside [0, 1] without eps) and NaN at NaN."""
    input = _as_float(input)
    c = input.detach()
    clamps = eps is not None and eps >= 0
    lo, hi = (eps, 1 - eps) if clamps else (0.0, 1.0)
    clamped = F.clamp(c, lo, hi) if clamps else c
    value = F.log(F.div(clamped, F.sub(1.0, clamped)))
    inside = F.logical_and(F.ge(c, lo), F.le(c, hi))
    regular = F.logical_and(inside, F.logical_and(F.ne(c, 0.0), F.ne(c, 1.0)))
    safe = _safe(input, regular, 0.5)
    path = F.where(regular, F.log(F.div(safe, F.sub(1.0, safe))), value)
    # at 0 and 1 (-0 too) PyTorch's scalar loop gives grad * inf (its vectorized one
    # 1 / (x (1 - x)): -inf at -0); outside [lo, hi] 0 when clamped, else NaN
    slope = F.where(inside, math.inf, F.where(T.isnan(c), math.nan, 0.0 if clamps else math.nan))
    return _with_edges(path, input, regular, slope, "LogitBackward0")


@takes_out("heaviside")
def heaviside(input: Tensor, values: Any) -> Tensor:
    """0 below zero, 1 above, ``values`` at zero."""
    values = _tensor(values, input)
    if values.dtype is not input.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different "
                           "dtypes.")
    step = F.cast(F.gt(input.detach(), 0), input.dtype)
    result = F.where(F.eq(input.detach(), 0), values.detach(), step)
    from .composite import no_derivative  # recorded as PyTorch's: its backward raises

    return no_derivative(result, (input, values), RuntimeError,
                         "derivative for aten::heaviside is not implemented")


def bool_out(name: str) -> Callable[[Tensor, Tensor], None]:
    """The out= check of an op whose result is bool (isposinf, isneginf, signbit): PyTorch's
    error for another dtype (a cast would be allowed by out='s general rule)."""
    def check(out: Tensor, result: Tensor) -> None:
        if out.dtype is not D.bool_:
            raise RuntimeError(f"{name} does not support non-boolean outputs.")

    return check


@takes_out("signbit", bool_out("signbit"))
def signbit(input: Tensor) -> Tensor:
    """True where the sign bit is set (-0.0 included: atan2(-0, -1) is -pi)."""
    if not input.dtype.is_floating_point:
        return F.lt(input, 0)
    return F.lt(F.atan2(input.detach(), -1.0), 0)


@takes_out("copysign")
def copysign(input: Any, other: Any) -> Tensor:
    """|a| with b's sign (b's -0.0 counts as negative). The gradient is PyTorch's: to a,
    result / a (NaN at inf and NaN), 0 where a is 0; to b, zeros."""
    input, other = _pair(input, other)
    dt = D.result_dtype([input.dtype, other.dtype], [], [input.ndim, other.ndim])
    dt = dt if dt.is_floating_point else D.default_float  # float32 and float64: float64
    input, other = (t if t.dtype is dt else F.cast(t, dt) for t in (input, other))
    c = input.detach()
    mag = F.abs(c)
    value = F.where(signbit(other.detach()), F.neg(mag), mag)
    if not (input.requires_grad or other.requires_grad):
        return value
    from .composite import straight_through

    ratio = F.where(F.eq(c, 0), 0.0, F.div(value, c))
    return straight_through(value, F.add(F.mul(input, ratio), F.mul(other, 0.0)), "CopysignBackward0")


@takes_out("logaddexp2")
@F.binary_in_float32
@renamed_backward("Logaddexp2Backward0")
def logaddexp2(input: Tensor, other: Tensor) -> Tensor:
    """log2(2**a + 2**b) without overflow."""
    from .extra_ops import _float_pair, logaddexp

    _float_pair("logaddexp2", input, other)
    input, other = _pair(input, other)
    dt = D.result_dtype([input.dtype, other.dtype], [], [input.ndim, other.ndim])  # scaled in the result's
    input, other = (t if t.dtype is dt else F.cast(t, dt) for t in (input, other))
    return F.div(logaddexp(F.mul(input, _LN2), F.mul(other, _LN2)), _LN2)


@takes_out("float_power")
def float_power(input: Any, exponent: Any) -> Tensor:
    """a ** b in float64, whatever the inputs' dtypes."""
    if isinstance(input, Tensor):
        input = F.cast(input, D.float64)
    if isinstance(exponent, Tensor):
        exponent = F.cast(exponent, D.float64)
    elif not isinstance(input, Tensor):
        raise TypeError("float_power(): expected a tensor argument")
    if not isinstance(input, Tensor):
        input = _tensor(float(input), exponent)
        input = F.cast(input, D.float64)
    return F.pow(input, float(exponent) if not isinstance(exponent, Tensor) else exponent)


@takes_out("exp2")
@renamed_backward("Exp2Backward0")
def exp2(input: Tensor) -> Tensor:
    """2 ** x, as exp(x ln 2) in float64 (float32's x ln 2 rounds away 2**100's last 8 ulps)."""
    return _in64(lambda v: F.exp(F.mul(v, _LN2)), input)


@takes_out("special_entr")
def entr(input: Tensor) -> Tensor:
    """-x log x: 0 at 0, -inf below 0."""
    input = _as_float(input)
    c = input.detach()
    regular = F.logical_and(F.gt(c, 0), T.isfinite(c))
    safe = _safe(input, regular, 1.0)
    out = F.neg(F.mul(safe, F.log(safe)))
    # 0 at 0, -inf below 0 and at inf, NaN at NaN: in x's dtype (a where of two Python
    # numbers is float32's)
    out = F.where(regular, out, F.where(F.eq(c, 0), 0.0, F.where(
        T.isnan(c), c, F.mul(F.abs(c), -math.inf))))
    # PyTorch's -(1 + log x) beyond: inf at 0, -inf at inf, NaN below 0 and at NaN
    return _with_edges(out, input, regular, F.neg(F.add(F.log(c), 1.0)), "SpecialEntrBackward0")


@takes_out("special_ndtr")
def ndtr(input: Tensor) -> Tensor:
    """The standard normal CDF: erfc(-x / sqrt 2) / 2."""
    return F.mul(erfc(F.div(F.neg(_as_float(input)), math.sqrt(2.0))), 0.5)


def _no_half(kernel: str, x: Tensor) -> None:
    """PyTorch's error for a special function it has no half-precision kernel for."""
    if isinstance(x, Tensor) and x.dtype in _HALF:
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{D.scalar_type_name(x.dtype)}'")


@takes_out("special_log_ndtr")
def log_ndtr(input: Tensor) -> Tensor:
    """log of the normal CDF, accurate in both tails: log1p(-Q) above -1, log(erfc / 2)
    down to -20, the asymptotic series below (its next term 2.5e-12 relative at -20)."""
    _no_half("log_ndtr_cpu", input)
    def f(v: Tensor) -> Tensor:
        upper = F.log1p(F.mul(erfc(F.div(F.where(F.gt(v, -1.0), v, 0.0), math.sqrt(2.0))),
                              -0.5))
        mid_v = F.where(F.logical_and(F.le(v, -1.0), F.ge(v, -20.0)), v, -2.0)
        mid = F.log(F.mul(erfc(F.div(F.neg(mid_v), math.sqrt(2.0))), 0.5))
        tail_v = F.where(F.lt(v, -20.0), v, -30.0)
        z = F.div(1.0, F.mul(tail_v, tail_v))
        series = _horner(z, [1.0, -1.0, 3.0, -15.0, 105.0, -945.0])
        tail = F.sub(F.sub(F.mul(F.mul(tail_v, tail_v), -0.5), F.log(F.neg(tail_v))),
                     F.sub(_HALF_LOG_2PI, F.log(series)))
        out = F.where(F.gt(v, -1.0), upper, F.where(F.ge(v, -20.0), mid, tail))
        out = F.where(T.isnan(v), math.nan, out)  # NaN fails every comparison: the tail took it
        return _with_edges(out, v, T.logical_not(T.isnan(v.detach())), math.nan,
                           "SpecialLogNdtrBackward0")
    return _in64(f, input)


_ERFCX_ASYMPTOTIC = [1.0, -1.0, 3.0, -15.0, 105.0, -945.0, 10395.0, -135135.0]  # (2k-1)!!


def _erfcx_rational(x: Tensor, lo: float, hi: float, num: list[float], den: list[float]
                    ) -> tuple[Tensor, Tensor]:
    """fdlibm's erfc(x) = exp(-x^2 - 0.5625 + R/S) / x on [lo, hi), with its exp(-x^2) left
    out: erfcx there, and the mask of the range (x made safe outside it)."""
    inside = F.logical_and(F.ge(x, lo), F.lt(x, hi))
    xs = F.where(inside, x, (lo + hi) / 2 if math.isfinite(hi) else lo + 1.0)
    inv = F.div(1.0, F.mul(xs, xs))
    return F.div(F.exp(F.sub(F.div(_horner(inv, num), _horner(inv, den)), 0.5625)), xs), inside


@takes_out("special_erfcx")
def erfcx(input: Tensor) -> Tensor:
    """exp(x^2) erfc(x), the scaled complementary error function, without overflow: the
    product below 1.25 (inf past -26.64, as it is), fdlibm's erfc rationals with their
    exp(-x^2) left out on [1.25, 28), 1 / (x sqrt(pi)) (1 - 1/(2x^2) + 3/(4x^4) - ...) past 28
    (the 8th term 2e-18 there). Below -26.5 and at +-inf and NaN the gradient is PyTorch's
    2x erfcx(x) - 2/sqrt(pi) evaluated there (NaN at inf, -inf at -inf)."""
    from .special import ERF_RA, ERF_RB, ERF_SA, ERF_SB

    _no_half("erfcx_cpu", input)

    def f(v: Tensor) -> Tensor:
        c = v.detach()
        regular = F.logical_and(T.isfinite(c), F.gt(c, -26.5))
        x = _safe(v, regular, 0.0)
        near = F.lt(x, 1.25)
        xn = F.where(near, x, 0.0)
        out = F.mul(F.exp(F.mul(xn, xn)), erfc(xn))
        for lo, hi, num, den in ((1.25, 1 / 0.35, ERF_RA, ERF_SA), (1 / 0.35, 28.0, ERF_RB, ERF_SB)):
            part, inside = _erfcx_rational(x, lo, hi, num, den)
            out = F.where(inside, part, out)
        far = F.ge(x, 28.0)
        xf = F.where(far, x, 30.0)
        z = F.div(0.5, F.mul(xf, xf))
        out = F.where(far, F.div(_horner(z, _ERFCX_ASYMPTOTIC), F.mul(xf, math.sqrt(math.pi))),
                      out)
        edge = F.where(F.eq(c, math.inf), 0.0, F.mul(F.exp(F.mul(c, c)), erfc(c)))
        slope = F.sub(F.mul(F.mul(c, 2.0), edge), _TWO_OVER_SQRT_PI)
        return _with_edges(F.where(regular, out, edge), v, regular, slope,
                           "SpecialErfcxBackward0")
    return _in64(f, input)


# --- gamma family ----------------------------------------------------------------------------

# Lanczos g = 7, n = 9 (Godfrey's coefficients): 1e-15 relative for Gamma(x), x >= 0.5
_LANCZOS_G = 7.0
_LANCZOS = [0.99999999999980993, 676.5203681218851, -1259.1392167224028,
            771.32342877765313, -176.61502916214059, 12.507343278686905,
            -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7]


def _sinpi(x: Tensor) -> Tensor:
    """sin(pi x) with x first reduced to [-1, 1] exactly: 0 at the integers."""
    r = F.sub(x, F.mul(F.round(F.mul(x, 0.5)), 2.0))
    return F.sin(F.mul(r, math.pi))


def _lgamma_pos(x: Tensor) -> Tensor:
    """lgamma for x >= 0.5 by Lanczos' series."""
    z = F.sub(x, 1.0)
    acc = F.add(F.mul(z, 0.0), _LANCZOS[0])
    for i, c in enumerate(_LANCZOS[1:], 1):
        acc = F.add(acc, F.div(c, F.add(z, float(i))))
    t = F.add(z, _LANCZOS_G + 0.5)
    return F.add(F.add(F.mul(F.add(z, 0.5), F.log(t)), F.neg(t)),
                 F.add(F.log(acc), _HALF_LOG_2PI))


# lgamma(1 + z) = -gamma z + sum_k>=2 (-1)^k zeta(k) / k z^k for |z| < 0.2 (the 26th term
# is below 1e-18 of it); lgamma(2 + z) = lgamma(1 + z) + log1p(z)
_LGAMMA_NEAR = 0.2
_ZETA = [1.6449340668482264, 1.2020569031595943, 1.0823232337111382, 1.0369277551433699,
         1.0173430619844491, 1.0083492773819228, 1.0040773561979443, 1.0020083928260822]
_ZETA += [sum(n ** -float(k) for n in range(1, 60)) for k in range(10, 28)]  # 60^-9 / 9 left
_LGAMMA_AT_1 = [0.0, -_EULER] + [(-1) ** k * _ZETA[k - 2] / k for k in range(2, 28)]


@takes_out("lgamma")
def lgamma(input: Tensor) -> Tensor:
    """log|Gamma(x)|: Lanczos for x >= 0.5, the reflection log(pi / |sin(pi x)|) -
    lgamma(1 - x) below; inf at the poles (0, -1, ...) and at +-inf."""
    def f(v: Tensor) -> Tensor:
        finite = T.isfinite(v)
        pole = F.logical_and(F.le(v, 0.0), F.eq(v, F.floor(v)))
        tiny = F.logical_and(F.lt(F.abs(v), _TINY), F.ne(v, 0.0))
        bad = T.logical_not(F.logical_and(finite, T.logical_not(pole)))
        safe = F.where(_or(bad, tiny), 1.5, v)
        low = F.lt(safe, 0.5)
        pos = _lgamma_pos(F.where(low, F.sub(1.0, safe), safe))
        refl_v = F.where(low, safe, 0.25)
        refl = F.sub(F.sub(math.log(math.pi), F.log(F.abs(_sinpi(refl_v)))), pos)
        out = F.where(low, refl, pos)
        # near its zeros 1 and 2 lgamma's Taylor series: Lanczos' 1e-16 absolute error is
        # 2e-12 relative at 0.999 (and 0 is exactly 0 there)
        near1 = F.lt(F.abs(F.sub(v, 1.0)), _LGAMMA_NEAR)
        near2 = F.lt(F.abs(F.sub(v, 2.0)), _LGAMMA_NEAR)
        z = F.where(near1, F.sub(v, 1.0), F.where(near2, F.sub(v, 2.0), 0.0))
        taylor = _horner(z, _LGAMMA_AT_1)
        out = F.where(near1, taylor, F.where(near2, F.add(taylor, F.log1p(z)), out))
        c = v.detach()
        # -log|x| at tiny x (its gradient -1/x, then 1/x^2: inf, as PyTorch's)
        out = F.where(tiny, F.neg(F.log(F.abs(F.where(tiny, v, 1.0)))), out)
        value = F.where(bad, F.where(T.isnan(c), math.nan, math.inf), out)
        if not v.requires_grad:
            return value
        # at the poles, +-inf and NaN PyTorch's gradient is digamma there (+-inf or NaN; the
        # constant branch gave 0): v times it, as the gradient path of those elements
        from .composite import straight_through

        at_bad = F.mul(v, digamma(F.where(bad, v.detach(), 1.5)))
        return straight_through(value, F.where(bad, at_bad, out), "LgammaBackward0")
    return _in64(f, input)


def _digamma_pos(x: Tensor) -> Tensor:
    """digamma for x >= 0.5: shifted up by 10 by the recurrence, then the asymptotic series
    to the y**-12 term (next term below 5e-16 at y >= 10.5)."""
    shift = F.mul(x, 0.0)
    for i in range(10):
        shift = F.add(shift, F.div(1.0, F.add(x, float(i))))
    y = F.add(x, 10.0)
    z = F.div(1.0, F.mul(y, y))
    series = F.mul(z, _horner(z, [1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760]))
    return F.sub(F.sub(F.sub(F.log(y), F.div(0.5, y)), series), shift)


@takes_out("digamma")
def digamma(input: Tensor) -> Tensor:
    """d/dx lgamma: the series for x >= 0.5, psi(1 - x) - pi / tan(pi x) below; -inf at 0
    (+inf at -0) and NaN at the negative integers, as PyTorch's."""
    def f(v: Tensor) -> Tensor:
        c = v.detach()
        pole = F.logical_and(F.le(c, 0.0), F.eq(c, F.floor(c)))
        tiny = F.logical_and(F.lt(F.abs(c), _TINY), F.ne(c, 0.0))
        ok = F.logical_and(F.logical_and(T.logical_not(pole), T.isfinite(c)),
                           T.logical_not(tiny))
        safe = _safe(v, ok, 1.5)
        low = F.lt(safe, 0.5)
        pos = _digamma_pos(F.where(low, F.sub(1.0, safe), safe))
        r = F.where(low, safe, 0.25)
        r = F.sub(r, F.round(r))  # tan(pi x) has period 1
        refl = F.sub(pos, F.div(math.pi, F.tan(F.mul(r, math.pi))))
        out = F.where(low, refl, pos)
        special = F.where(F.eq(v, 0.0), F.where(signbit(v), math.inf, -math.inf), math.nan)
        out = F.where(pole, special, out)
        out = F.where(T.isinf(v), F.where(F.gt(v, 0), math.inf, math.nan), out)
        out = F.where(T.isnan(v), math.nan, out)
        out = F.where(tiny, F.sub(F.div(-1.0, F.where(tiny, c, 1.0)), _EULER), out)
        # PyTorch's trigamma there: pi^2 / sin(pi x)^2 from its reflection (inf at +-0, ~1e32
        # at the negative integers, where sin(pi x) is a rounding's, 1 / x**2 at tiny x), 0 at
        # inf, NaN at -inf
        sin_pi = F.sin(F.mul(c, math.pi))
        slope = F.where(F.eq(c, math.inf), 0.0, F.div(math.pi * math.pi, F.mul(sin_pi, sin_pi)))
        return _with_edges(out, v, ok, slope, "DigammaBackward0")
    return _in64(f, input)


# --- erfinv ----------------------------------------------------------------------------------

_GILES_CENTRAL = [1.50140941, 0.246640727, -0.00417768164, -0.00125372503, 0.00021858087,
                  -4.39150654e-06, -3.5233877e-06, 3.43273939e-07, 2.81022636e-08]
_GILES_TAIL = [2.83297682, 1.00167406, 0.00943887047, -0.0076224613, 0.00573950773,
               -0.00367342844, 0.00134934322, 0.000100950558, -0.000200214257]


def _horner(x: Tensor, coeffs: list[float]) -> Tensor:
    acc = F.add(F.mul(x, 0.0), coeffs[-1])
    for c in reversed(coeffs[:-1]):
        acc = F.add(F.mul(acc, x), c)
    return acc


def _erfinv_core(s: Tensor, q: Tensor) -> Tensor:
    """y with erf(y) = s, |s| < 1, given q = 1 - |s| exactly (it carries the tails: a caller
    that has 1 - |s| without rounding, as ndtri does, keeps the precision s cannot hold).
    Giles' approximation, then Newton steps: on erf in the centre, on log erfc(|y|) = log q
    in the tails (nearly linear there; plain Newton on erfc crawls). No gradient."""
    w = F.neg(F.log(F.mul(q, F.sub(2.0, q))))  # -log((1 - s)(1 + s))
    central = _horner(F.sub(w, 2.5), _GILES_CENTRAL)
    tail = _horner(F.sub(F.sqrt(w), 3.0), _GILES_TAIL)
    sign = F.sign(s)
    # past Giles' range (w > 16, q below 1e-7) erfc(y) ~ exp(-y^2) / (y sqrt(pi)) gives
    # y^2 ~ L - log(L) / 2, L = -log(q sqrt(pi))
    big_l = F.neg(F.log(F.mul(F.where(F.gt(w, 16.0), q, 1e-8), math.sqrt(math.pi))))
    far = F.mul(F.sqrt(F.sub(big_l, F.mul(F.log(big_l), 0.5))), sign)
    y = F.where(F.gt(w, 16.0), far, F.mul(F.where(F.lt(w, 5.0), central, tail), s))
    half_sqrt_pi = math.sqrt(math.pi) / 2
    tail_side = F.le(q, 0.5)
    log_q = F.log(F.where(tail_side, q, 1.0))
    for _ in range(3):
        central_y = F.sub(y, F.mul(F.sub(F.erf(y), s), F.mul(F.exp(F.mul(y, y)),
                                                             half_sqrt_pi)))
        ay = F.where(tail_side, F.abs(y), 1.0)
        # past y = 26 erfc(y) is subnormal (its digits lost): log erfc(y) by its asymptotic
        # series there; erfc(y) e^(y^2) as one exp (e^(y^2) alone overflows past y = 26.6)
        far_y = F.gt(ay, 26.0)
        fy = F.where(far_y, ay, 27.0)
        z = F.div(1.0, F.mul(F.mul(fy, fy), 2.0))  # 1 / (2 y^2)
        log_far = F.sub(F.add(F.mul(F.mul(fy, fy), -1.0), F.log1p(F.mul(z, _horner(
            z, [-1.0, 3.0, -15.0, 105.0, -945.0, 10395.0, -135135.0])))),
            F.log(F.mul(fy, math.sqrt(math.pi))))
        log_ec = F.where(far_y, log_far, F.log(erfc(F.where(far_y, 1.0, ay))))
        tail_y = F.add(ay, F.mul(F.sub(log_ec, log_q),
                                 F.mul(F.exp(F.add(log_ec, F.mul(ay, ay))), half_sqrt_pi)))
        y = F.where(tail_side, F.mul(tail_y, sign), central_y)
    return y


def _second_order(y: Tensor, d: Tensor, slope: Any, zero: Tensor) -> Tensor:
    """y + d (S0 + S(y + d S0)) / 2, d = x - x0 (0 in value, 1 in gradient), S0 = slope(y) held
    constant: y in value, slope(y) as its gradient and slope's derivative as its second (the
    half sum gives each half of it), for an inverse function whose y is computed without a
    gradient (Newton steps). Where ``zero``, y (+-0) is left out: y + 0 would make -0 a +0."""
    s0 = slope(y)
    t = F.mul(F.mul(d, F.add(s0, slope(F.add(y, F.mul(d, s0))))), 0.5)
    return F.where(zero, t, F.add(y, t))


@takes_out("erfinv")
def erfinv(input: Tensor) -> Tensor:
    """The inverse of erf on [-1, 1] (``_erfinv_core`` in float64), differentiated to second
    order by ``_second_order``: sqrt(pi)/2 exp(y**2), then its derivative."""
    def f(v: Tensor) -> Tensor:
        c = v.detach()
        inside = F.lt(F.abs(c), 1.0)
        s = F.where(inside, c, 0.0)
        y = _erfinv_core(s, F.sub(1.0, F.abs(s)))
        zero = F.eq(c, 0.0)  # d is x itself there: x - x would make -0 a +0
        d = F.where(zero, v, F.sub(F.where(inside, v, 0.0), s))
        out = _second_order(y, d, lambda t: F.mul(F.exp(F.mul(t, t)), math.sqrt(math.pi) / 2),
                            zero)
        edge = F.where(F.eq(c, 1.0), math.inf, F.where(F.eq(c, -1.0), -math.inf, math.nan))
        # PyTorch's sqrt(pi)/2 exp(erfinv(x)^2) beyond: inf at +-1, NaN past them and at NaN
        slope = F.where(F.eq(F.abs(c), 1.0), math.inf, math.nan)
        return _with_edges(F.where(inside, out, edge), v, inside, slope, "ErfinvBackward0")
    return _in64(f, input)


@takes_out("special_ndtri")
def ndtri(input: Tensor) -> Tensor:
    """The inverse of the normal CDF: sqrt(2) erfinv(2p - 1), with 1 - |2p - 1| taken as 2p
    or 2(1 - p), exact, so tiny p keep their precision (ndtri(1e-300) = -37.0470963)."""
    _no_half("ndtri_cpu", input)
    def f(v: Tensor) -> Tensor:
        c = v.detach()
        inside = F.logical_and(F.gt(c, 0.0), F.lt(c, 1.0))
        pc = F.where(inside, c, 0.5)
        q = F.where(F.lt(pc, 0.5), F.mul(pc, 2.0), F.mul(F.sub(1.0, pc), 2.0))
        y = F.mul(_erfinv_core(F.sub(F.mul(pc, 2.0), 1.0), q), math.sqrt(2.0))

        def slope(t: Tensor) -> Tensor:
            return F.mul(F.exp(F.mul(F.mul(t, t), 0.5)), math.sqrt(2 * math.pi))

        # the gradient overflows below p = 1e-308 or so (subnormal p): y there, inf its slope
        regular = F.logical_and(inside, T.isfinite(slope(y)))
        out = _second_order(y, F.sub(F.where(regular, v, pc), pc), slope, F.eq(c, 0.5))
        edge = F.where(F.eq(c, 1.0), math.inf, F.where(F.eq(c, 0.0), -math.inf, math.nan))
        # PyTorch's sqrt(2 pi) exp(ndtri(p)^2 / 2) beyond: inf at 0 and 1, NaN past them
        edge_slope = F.where(_or(inside, _or(F.eq(c, 0.0), F.eq(c, 1.0))), math.inf, math.nan)
        return _with_edges(F.where(regular, out, F.where(inside, y, edge)), v, regular,
                           edge_slope, "SpecialNdtriBackward0")
    return _in64(f, input)


# --- Bessel I0 ---------------------------------------------------------------------------------

_I0_SERIES_TERMS = 60  # (x/2)^2k / k!^2 for |x| <= 30: the terms fall below 1e-17 of the sum
_I0_SWITCH = 30.0
# past 709 I0's gradient is not its expansion's: exp(|x| + log(series)) times its slope
# sums inf and -inf once I0 / series overflows; I1's own expansion gives it there
_I0_REGULAR = 709.0


def _bessel_asymptotic(nu: int) -> list[float]:
    """The coefficients of I_nu(x) ~ e^x / sqrt(2 pi x) sum_k c_k (1 / 8x)^k: c_k =
    -c_{k-1} (4 nu^2 - (2k - 1)^2) / k ((2k-1)!!^2 / k! for nu = 0: 1, 1, 9/2, 225/6, ...);
    24 terms put the truncation below 1e-17 at |x| = 30."""
    coeffs = [1.0]
    for k in range(1, 24):
        coeffs.append(-coeffs[-1] * (4 * nu * nu - (2 * k - 1) ** 2) / k)
    return coeffs


_I0_ASYMPTOTIC = _bessel_asymptotic(0)
_I1_ASYMPTOTIC = _bessel_asymptotic(1)


def _bessel_far(a: Tensor, coeffs: list[float]) -> Tensor:
    """e^a / sqrt(2 pi a) times the expansion, as one exp (I0 overflows at 713.9848, where
    e^a alone does at 709.78); a > 30, inf included."""
    series = _horner(F.div(1.0, F.mul(a, 8.0)), coeffs)
    return F.exp(F.sub(F.add(a, F.log(series)), F.mul(F.log(F.mul(a, 2 * math.pi)), 0.5)))


def _i0_parts(v: Tensor, scaled: bool) -> Tensor:
    """I0(v), or e^-|v| I0(v) where ``scaled`` (the asymptotic branch then skips its
    exponential, so the scaled form never overflows)."""
    a = F.abs(v)
    small = F.le(a, _I0_SWITCH)
    sa = F.where(small, a, 0.0)
    sv = F.where(small, v, 0.0)
    q = F.mul(F.mul(sv, sv), 0.25)  # x^2, not |x|^2: abs's second derivative at 0 is 0
    term = F.add(F.mul(q, 0.0), 1.0)
    total = term
    for k in range(1, _I0_SERIES_TERMS):
        term = F.div(F.mul(term, q), float(k * k))
        total = F.add(total, term)
    big = F.where(small, _I0_SWITCH + 1.0, a)
    series = _horner(F.div(1.0, F.mul(big, 8.0)), _I0_ASYMPTOTIC)
    asym = F.div(series, F.sqrt(F.mul(big, 2 * math.pi)))
    if scaled:
        return F.where(small, F.mul(total, F.exp(F.neg(sa))), asym)
    return F.where(small, total, F.mul(asym, F.exp(big)))


def _i1_parts(v: Tensor, scaled: bool) -> Tensor:
    """I1(v), or e^-|v| I1(v) where ``scaled``: (x/2) sum (x^2/4)^k / (k! (k+1)!) up to
    |x| = 30, sign(x) times the asymptotic expansion beyond (I1 is odd)."""
    a = F.abs(v)
    small = F.le(a, _I0_SWITCH)
    sa = F.where(small, a, 0.0)
    sv = F.where(small, v, 0.0)
    q = F.mul(F.mul(sv, sv), 0.25)
    term = F.add(F.mul(q, 0.0), 1.0)
    total = term
    for k in range(1, _I0_SERIES_TERMS):
        term = F.div(F.mul(term, q), float(k * (k + 1)))
        total = F.add(total, term)
    total = F.mul(total, F.mul(F.add(sv, 0.0), 0.5))  # + 0: I1(-0) is +0, as PyTorch's
    big = F.where(small, _I0_SWITCH + 1.0, a)
    asym = F.mul(F.div(_horner(F.div(1.0, F.mul(big, 8.0)), _I1_ASYMPTOTIC),
                       F.sqrt(F.mul(big, 2 * math.pi))), F.sign(v))
    if scaled:
        return F.where(small, F.mul(total, F.exp(F.neg(sa))), asym)
    return F.where(small, total, F.mul(asym, F.exp(big)))


@takes_out("special_i1")
def i1(input: Tensor) -> Tensor:
    """The modified Bessel function of the first kind, order 1, as ``i0``: its power series up
    to |x| = 30, the asymptotic expansion beyond, both in float64; from |x| = 709 its value
    and gradient (I0 - I1 / x) from the expansions as one exp (finite to 713.98, where
    PyTorch's overflows at 709.78). At +-inf NaN, at NaN the gradient 0.5, as PyTorch's (its
    i1_backward's tiny-x branch takes NaN)."""
    def f(v: Tensor) -> Tensor:
        c = v.detach()
        regular = F.le(F.abs(c), _I0_REGULAR)
        out = _i1_parts(_safe(v, regular, 0.0), False)
        finite = T.isfinite(c)
        a = F.where(F.logical_and(finite, T.logical_not(regular)), F.abs(c), _I0_REGULAR + 1.0)
        i1_far = _bessel_far(a, _I1_ASYMPTOTIC)
        far = F.where(finite, F.mul(i1_far, F.sign(c)), math.nan)
        slope = F.sub(_bessel_far(a, _I0_ASYMPTOTIC), F.div(i1_far, a))
        slope = F.where(finite, slope, F.where(T.isnan(c), 0.5, math.nan))
        return _with_edges(F.where(regular, out, far), v, regular, slope,
                           "SpecialI1Backward0")
    return _in64(f, input)


@takes_out("special_i1e")
def i1e(input: Tensor) -> Tensor:
    """e^-|x| I1(x): finite for every finite x, +-0 at +-inf; the gradient 0.5 at NaN, as
    PyTorch's."""
    def f(v: Tensor) -> Tensor:
        c = v.detach()
        regular = T.logical_not(T.isnan(c))
        out = _i1_parts(_safe(v, regular, 0.0), True)
        return _with_edges(F.where(regular, out, math.nan), v, regular, 0.5,
                           "SpecialI1EBackward0")
    return _in64(f, input)


@takes_out("i0")
def i0(input: Tensor) -> Tensor:
    """The modified Bessel function of the first kind, order 0, in float64: its power series
    up to |x| = 30, the asymptotic expansion e^|x| / sqrt(2 pi |x|) (1 + 1/(8|x|) + ...)
    beyond; 2e-15 relative against mpmath on [-50, 50] (its gradient, I1, too). From where
    I0 nears float64's end (|x| = 709; I0 overflows at 713.9848) the gradient is I1's own
    expansion, inf past 713.9, as PyTorch's (whose I0 overflows at 709.78); NaN at +-inf, as
    PyTorch's."""
    def f(v: Tensor) -> Tensor:
        c = v.detach()
        regular = F.le(F.abs(c), _I0_REGULAR)
        out = _i0_parts(_safe(v, regular, 0.0), False)
        # NaN at +-inf, as PyTorch's (its e^x times a series of 1 / x there)
        finite = T.isfinite(c)
        a = F.where(F.logical_and(finite, T.logical_not(regular)), F.abs(c), _I0_REGULAR + 1.0)
        far = F.where(finite, _bessel_far(a, _I0_ASYMPTOTIC), math.nan)
        slope = F.where(finite, F.mul(_bessel_far(a, _I1_ASYMPTOTIC), F.sign(c)), math.nan)
        return _with_edges(F.where(regular, out, far), v, regular, slope, "I0Backward0")
    return _in64(f, input)


@takes_out("special_i0e")
@renamed_backward("SpecialI0EBackward0")
def i0e(input: Tensor) -> Tensor:
    """e^-|x| I0(x): finite for every finite x."""
    return _in64(lambda v: _i0_parts(v, True), input)


# --- small elementwise ops of PyTorch's --------------------------------------------------------


def positive(input: Tensor) -> Tensor:  # noqa: A002
    """``+x``: x itself (a bool tensor is PyTorch's error)."""
    if input.dtype is D.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


@takes_out("deg2rad")
def deg2rad(input: Tensor) -> Tensor:  # noqa: A002
    """Degrees to radians (integers and bools: in the default float dtype)."""
    return named(F.mul(_as_float(input), math.pi / 180.0), "Deg2RadBackward0")


@takes_out("rad2deg")
def rad2deg(input: Tensor) -> Tensor:  # noqa: A002
    """Radians to degrees (integers and bools: in the default float dtype)."""
    return named(F.mul(_as_float(input), 180.0 / math.pi), "Rad2DegBackward0")


@takes_out("angle")
def angle(input: Tensor) -> Tensor:  # noqa: A002
    """The argument of a real number: pi below zero, else 0 (NaN stays NaN); its gradient is
    0, as PyTorch's."""
    from .composite import straight_through

    x = _as_float(input)
    c = x.detach()
    # pi times the sign bit, in x's own dtype: a where of two Python floats would be float32
    # (a float16 input's angle float32, a float64 one's pi rounded to float32)
    negative_pi = F.mul(F.cast(F.lt(c, 0), x.dtype), math.pi)
    value = F.where(F.ne(c, c), c, negative_pi)
    if not x.requires_grad:
        return value
    return straight_through(value, F.mul(x, 0.0), "AngleBackward0")


def isreal(input: Tensor) -> Tensor:  # noqa: A002
    """True everywhere: runtime has real dtypes only."""
    from ..creation import ones

    return ones(tuple(input.shape), dtype=D.bool_, device=input.device)


def isposinf(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    if out is not None:
        bool_out("isposinf")(out, out)
        return F.written_to(out, isposinf(input), "isposinf")
    return F.eq(input, math.inf) if input.dtype.is_floating_point else F.ne(input, input)


def isneginf(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    if out is not None:
        bool_out("isneginf")(out, out)
        return F.written_to(out, isneginf(input), "isneginf")
    return F.eq(input, -math.inf) if input.dtype.is_floating_point else F.ne(input, input)
