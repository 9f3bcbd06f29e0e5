"""Vectorizable exp, log, sin, cos, tanh, sigmoid, sqrt and erf written in LLVM IR.

LLVM cannot vectorize a loop that calls scalar libm (``expf``), so each function here is pure
arithmetic, bitcasts, integer ops, ``select`` and intrinsics that vectorize natively (llvm.fma,
llvm.fabs, llvm.sqrt, llvm.copysign). Every function is an internal ``alwaysinline`` function,
created once per module and dtype, so after inlining the loop vectorizer sees only arithmetic.
A kernel with many of them calls them out of line instead (``declare_math(outlined=True)``):
a ``noinline`` scalar function whose call sites name vector variants (LLVM's
``vector-function-abi-variant``), each the same body written on vectors (``_Format.vector``:
the same instructions lane by lane), so the loop vectorizer calls one per vector of elements;
the results are the same, bit for bit.

One algorithm per function serves both float32 and float64; only the coefficient tables differ
(the exact sin/cos reduction below is float32's alone, and float32 erf is polynomials and an
exp without fdlibm's divisions: 3.5x faster).
Polynomials use llvm.fma (one instruction on x86-64-v3 and aarch64); Cody-Waite reductions rely on
its single rounding.

Accuracy (max error against numpy one precision higher, tests/codegen/test_llvm_math.py, same
for both dtypes): sqrt 0.5 ulp; exp, log <= 1 ulp; erf <= 1 ulp (float32: 1.07, measured on
every third float32 below 4.5); tanh <= 1.5 ulp (float32: 1.32, on every float32 of [0.5, 1]
where its branches meet, tests/codegen/test_llvm_math_tanh_h33.py); sin, cos <= 1.6 ulp
(float32's fast ones 1.67, on every 13th float32 below 2**20; the unit ones, for |x| <= 1, 0.89
and 1.07); sigmoid <= 2.1 ulp.

sin/cos reduce by pi/2 with a three-part Cody-Waite constant (tested band by band, 1e6 samples
per band): float32 within 1.7 ulp for |x| < 2**20 (FAST_SIN_COS_LIMIT), float64 within 1.5 ulp
for |x| < 2**49 (5.6e14), 4.9 ulp below 2**50, 50 ulp below 2**51; past 2**51 (float64) the
result is meaningless, though it stays in [-1, 1]. sin_exact/cos_exact (float32) reduce every
finite x exactly (x = m * 2**k, x * 2/pi mod 4 = m * T(k) from a 256-entry float64 table of T),
within 1.6 ulp on the whole range, but 5-6x slower: the table lookups are vector gathers on
every element; float64's are the C library's sin and cos (a call a lane). A kernel runs the
fast ones and, if any argument passed FAST_SIN_COS_LIMIT (a float64 one compared as float32),
runs again with the exact ones (codegen/llvm.py): a float64 sin of 1e30 was meaningless.
sin/cos of +-inf and nan are nan. ``sincos`` (and ``sincos_exact``) return both from one reduction, the same bits as
sin and cos each: a kernel with sin(x) and cos(x) calls it once (the chain workload's kernel:
105 -> 77 us a call, benchmarks/chain_kernel.py). An argument a kernel bounds by 1 (a tanh's
output) takes float32's unit variants: a polynomial each, no reduction, 11 vector operations
for both against 35 (the chain kernel: 68.2 -> 63.2 us, best of 1000 calls).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import struct
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from functools import partial

from llvmlite import ir
from llvmlite.ir.instructions import CallInstrAttributes

from codegen.target import HELPER_PREFIX, host
from runtime.ops.special import (
    ERF_PA as _ERF_PA,
    ERF_PP as _ERF_PP,
    ERF_QA as _ERF_QA,
    ERF_QQ as _ERF_QQ,
    ERF_RA as _ERF_RA,
    ERF_RB as _ERF_RB,
    ERF_SA as _ERF_SA,
    ERF_SB as _ERF_SB,
    ERF32_ONE as _ERF32_ONE,
    ERF_TRUNC_MASK as _ERF_TRUNC_MASK,
    ERX as _ERX,
)

V = ir.Value
MathFn = Callable[[ir.IRBuilder, V, str], V]

# enough digits for three double-precision parts of pi/2
_PI = Fraction("3.14159265358979323846264338327950288419716939937510582097494459230781640628621")


# |x| below which the fast float32 sin/cos is within 1.7 ulp (past 2**22 * pi/2 it is
# meaningless); a kernel with a larger argument reruns with sin_exact/cos_exact
FAST_SIN_COS_LIMIT = 2.0**20
EXACT_VARIANTS = {"sin": "sin_exact", "cos": "cos_exact",  # float32: our exact reduction;
                  "sincos": "sincos_exact"}  # float64: the C library's sin and cos
# the fast ones without their out-of-range clamp, for an argument whose magnitude is known to be
# at most FAST_SIN_COS_LIMIT (a kernel's sin of a tanh, codegen/llvm_emit.py): the same bits
BOUNDED_VARIANTS = {"sin": "sin_bounded", "cos": "cos_bounded", "sincos": "sincos_bounded"}
# |x| at most which the unit variants hold: for float32 one polynomial each on [-1, 1] with no
# reduction (11 vector operations for both, the reduced ones 35: the chain workload's sins of
# tanh outputs); float64's are the bounded ones
UNIT_SIN_COS_LIMIT = 1.0
UNIT_VARIANTS = {"sin": "sin_unit", "cos": "cos_unit", "sincos": "sincos_unit"}


@dataclass(frozen=True)
class _Format:
    dtype: str
    float: ir.Type
    int: ir.Type
    mantissa_bits: int
    bias: int
    pack: str  # struct code
    lanes: int = 0  # 0: scalar values; else vectors of this many lanes (``vector``)

    @property
    def width(self) -> int:
        """Bits of one element."""
        return 32 if self.pack == "f" else 64

    def vector(self, lanes: int) -> _Format:
        """This format with values that are vectors of ``lanes`` elements."""
        return dataclasses.replace(self, float=ir.VectorType(self.float, lanes),
                                   int=ir.VectorType(self.int, lanes), lanes=lanes)

    def typed(self, scalar: ir.Type) -> ir.Type:
        """``scalar``, or a vector of it where this format's values are vectors."""
        return ir.VectorType(scalar, self.lanes) if self.lanes else scalar

    def constant(self, scalar: ir.Type, value: float) -> ir.Constant:
        """``value`` as a ``scalar`` constant, splat where this format's values are vectors."""
        if self.lanes:
            return ir.Constant(ir.VectorType(scalar, self.lanes), [value] * self.lanes)
        return ir.Constant(scalar, value)

    def round(self, value: float) -> float:
        return struct.unpack(self.pack, struct.pack(self.pack, value))[0]

    def bits(self, value: float) -> int:
        code = {"f": "I", "d": "Q"}[self.pack]
        return struct.unpack(code, struct.pack(self.pack, value))[0]

    def split(self, value: Fraction, parts: int) -> list[float]:
        """Cody-Waite constant: ``parts`` floats of this format whose exact sum approximates value."""
        out = []
        for _ in range(parts):
            out.append(self.round(float(value)))
            value -= Fraction(out[-1])
        return out


_FORMATS = {
    "float32": _Format("float32", ir.FloatType(), ir.IntType(32), 23, 127, "f"),
    "float64": _Format("float64", ir.DoubleType(), ir.IntType(64), 52, 1023, "d"),
}

# Coefficient tables, lowest degree first, keyed by dtype where the two formats differ.
# exp(r) = 1 + r + r^2 * P(r) on |r| <= ln2/2: cephes expf; Taylor to 1/13! for float64.
_EXP_P = {
    "float32": [5.0000001201e-1, 1.6666665459e-1, 4.1665795894e-2, 8.3334519073e-3,
                1.3981999507e-3, 1.9875691500e-4],
    "float64": [1 / math.factorial(n) for n in range(2, 14)],
}
# cephes split of ln2: k * hi is exact for the exponents exp can reach
_LN2_SPLIT = {"float32": (0.693359375, -2.12194440e-4),
              "float64": (6.93145751953125e-1, 1.42860682030941723212e-6)}
# log: fdlibm/musl log(1+f) = f - hfsq + s*(hfsq + z*P(z)), s = f/(2+f), z = s^2
_LOG_P = {
    "float32": [0xaaaaaa * 2.0**-24, 0xccce13 * 2.0**-25, 0x91e9ee * 2.0**-25,
                0xf89e26 * 2.0**-26],
    "float64": [6.666666666666735130e-01, 3.999999999940941908e-01, 2.857142874366239149e-01,
                2.222219843214978396e-01, 1.818357216161805012e-01, 1.531383769920937332e-01,
                1.479819860511658591e-01],
}
_LOG_LN2_SPLIT = {"float32": (6.9313812256e-01, 9.0580006145e-06),
                  "float64": (6.93147180369123816490e-01, 1.90821492927058770002e-10)}
# sin(r) = r + r^3 * S(r^2), cos(r) = 1 - r^2/2 + r^4 * C(r^2) on |r| <= pi/4:
# cephes sinf/cosf for float32, fdlibm __kernel_sin/__kernel_cos for float64
_SIN_P = {
    "float32": [-1.6666654611e-1, 8.3321608736e-3, -1.9515295891e-4],
    "float64": [-1.66666666666666324348e-01, 8.33333333332248946124e-03,
                -1.98412698298579493134e-04, 2.75573137070700676789e-06,
                -2.50507602534068634195e-08, 1.58969099521155010221e-10],
}
_COS_P = {
    "float32": [4.166664568298827e-2, -1.388731625493765e-3, 2.443315711809948e-5],
    "float64": [4.16666666666666019037e-02, -1.38888888888741095749e-03,
                2.48015872894767294178e-05, -2.75573143513906633035e-07,
                2.08757232129817482790e-09, -1.13596475577881948265e-11],
}
# sin(x) = x + x^3 * S(x^2), cos(x) = 1 + x^2 * C(x^2) on |x| <= UNIT_SIN_COS_LIMIT, float32:
# least squares in relative error, reweighted toward minimax (Lawson), coefficients rounded to
# float32; within 0.89 and 1.07 ulp on every third float32 of [0, 1]
_SIN_UNIT_P = [-0.1666666716337204, 0.008333316072821617, -0.00019836115825455636,
               2.694810063985642e-06]
_COS_UNIT_P = [-0.4999999701976776, 0.041666459292173386, -0.0013882959028705955,
               2.4118644432746805e-05]
# exp(r) = 1 + r + r^2 * P(r) for tanh's large branch, 1 - 2/(exp(2|x|) + 1) for |x| >= 0.65:
# an error e of exp moves the result by at most 0.35e (2e/(exp + 1)**2 * exp), so float32 takes
# one coefficient fewer than exp itself, fitted for exp's relative error on |r| <= 0.3466
# (3.8e-9 with these float32 coefficients: 0.02 ulp of tanh)
_TANH_EXP_P = {
    "float32": [0.4999999403953552, 0.1666652113199234, 0.04166838899254799,
                0.008368715643882751, 0.0013814599951729178],
    "float64": _EXP_P["float64"],
}
# the same exp as a polynomial in s = r/2 (r = 2|x| - k*ln2, s = |x| - k*ln2/2), from its
# constant term: exp(2s) = 1 + 2s + 4s^2 * P(2s), each coefficient times a power of 2 (exact),
# for Horner's rule from 1 (no separate s^2 and 1 + ...: 2 operations fewer, and 2|x| is never
# formed)
_TANH_EXP_S = {dtype: [1.0, 2.0, *(c * 2.0 ** (n + 2) for n, c in enumerate(p))]
               for dtype, p in _TANH_EXP_P.items()}
# ln2/2 in Cody-Waite parts for s: float32 takes one part, float32(ln2)/2, off by 9.5e-10: k of
# them move exp(2|x|) by 1.9e-9 * k relatively, and the result by about 2**(1 - k) times that
# (k >= 2 past 0.65: under 0.03 ulp); float64 keeps exp's two (cephes' split, halved)
_TANH_LN2_HALF = {"float32": (0.6931471824645996 / 2,),
                  "float64": (_LN2_SPLIT["float64"][0] / 2, _LN2_SPLIT["float64"][1] / 2)}
# tanh(x) = x + x^3 * P(x^2) / Q(x^2) for |x| < _TANH_SMALL (cephes tanhf / tanh, fitted below
# 0.625), taken to 0.65, where they are still within 1.17 ulp (float32) and 0.82 (float64) and
# the cancellation in 1 - 2/(exp(2|x|) + 1) is smaller: at worst 1.32 ulp on every float32 of
# [0.5, 1] (1.36 switching at 0.625), float64 1.31 on 3e6 random points of [0.55, 0.8] (1.37)
_TANH_SMALL = 0.65
_TANH_ONE = 20.0  # tanh rounds to 1 past here in float32 (9.01) and float64 (19.06)
_TANH_PQ = {
    "float32": ([-3.33332819422e-1, 1.33314422036e-1, -5.37397155531e-2, 2.06390887954e-2,
                 -5.70498872745e-3], [1.0]),
    "float64": ([-1.61468768441708447952e3, -9.92877231001918586564e1,
                 -9.64399179425052238628e-1],
                [4.84406305325125486048e3, 2.23548839060100448583e3,
                 1.12811678491632931402e2, 1.0]),
}
# erf: fdlibm s_erf.c's tables, shared with eager mode's numpy erf (runtime.ops.special).
# float32's two polynomials are fitted for float32 evaluation (Lawson's iterated weighted least
# squares, coefficients rounded to float32), shorter than eager mode's float64 ones
# (runtime.ops.special.ERF32_SMALL, ERF32_LOG_ERFCX: 8 and 12 terms): erf(x) = x + x * S(x*x)
# for |x| < 1, to the relative error; erf(a) = 1 - exp(L(a) - a*a) on [1, 4], L ~ log(erfcx),
# to the error erf sees, erfc(a) times L's (7e-9 at 1, 2e-10 at 3): 7 terms do, and
# L(a) - a*a is one fused multiply-add, rounded once (as the exact split of a*a into two parts
# and two subtractions were). 23 fused multiply-adds of 44 instructions, not 29 of 53: gpt's
# GELU kernels (16 x 64 x 512) ran faster (forward 446 -> 373 us, backward 706 -> 646, best of
# 40 side by side). Max error on every 3rd float32 below 4.5: 1.067 ulp
# at 1.0743 (the 8- and 12-term tables: 1.107; tests/codegen/test_kernels_h44.py)
_ERF32_SMALL = [0.12837916612625122, -0.3761262595653534, 0.11283586919307709,
                -0.026853887364268303, 0.005188469309359789, -0.0008011432946659625,
                7.857945456635207e-05]
_ERF32_LOG_ERFCX = [-0.0003592774737626314, -1.1270170211791992, 0.3617352545261383,
                    -0.10300271213054657, 0.02178836241364479, -0.002935272641479969,
                    0.00018512201495468616]


class _Emitter:
    """Instruction helpers for one function body in one float format, of scalars or (a
    ``_Format.vector``) of vectors: the same instructions lane by lane, so the same bits."""

    def __init__(self, module: ir.Module, builder: ir.IRBuilder, fmt: _Format) -> None:
        self.module = module
        self.b = builder
        self.fmt = fmt

    def c(self, value: float) -> ir.Constant:
        return self.fmt.constant(ir.FloatType() if self.fmt.pack == "f" else ir.DoubleType(),
                                 value)

    def i(self, value: int) -> ir.Constant:
        return self.fmt.constant(ir.IntType(self.fmt.width), value)

    def intrinsic(self, name: str, *args: V) -> V:
        suffix = "f32" if self.fmt.dtype == "float32" else "f64"
        full = f"{name}.{f'v{self.fmt.lanes}' if self.fmt.lanes else ''}{suffix}"
        fn = self.module.globals.get(full)
        if fn is None:
            ty = self.fmt.float
            fn = ir.Function(self.module, ir.FunctionType(ty, [ty] * len(args)), full)
        return self.b.call(fn, list(args))

    def fma(self, a: V, b: V, c: V) -> V:
        return self.intrinsic("llvm.fma", a, b, c)

    def poly(self, x: V, coeffs: list[float]) -> V:
        """Horner evaluation of sum(coeffs[k] * x**k) with fused multiply-adds."""
        acc: V = self.c(coeffs[-1])
        for coeff in reversed(coeffs[:-1]):
            acc = self.fma(acc, x, self.c(coeff))
        return acc

    def select_poly(self, cond: V, x: V, if_true: list[float], if_false: list[float]) -> V:
        """Horner evaluation whose coefficients are chosen per element by ``cond``."""
        coeffs = [self.b.select(cond, self.c(t), self.c(f)) for t, f in zip(if_true, if_false)]
        acc = coeffs[-1]
        for coeff in reversed(coeffs[:-1]):
            acc = self.fma(acc, x, coeff)
        return acc

    def bits(self, x: V) -> V:
        return self.b.bitcast(x, self.fmt.int)

    def from_bits(self, n: V) -> V:
        return self.b.bitcast(n, self.fmt.float)

    def round_to_int(self, x: V, scale: float) -> tuple[V, V]:
        """rint(x * scale) as a float and as an integer, for |x * scale| < 2**(mantissa_bits-1).

        Adding 1.5 * 2**mantissa_bits rounds to an integer and leaves it in the low bits; the
        fused multiply-add rounds only once, so a product just below a half never rounds up.
        """
        magic = self.c(1.5 * 2.0**self.fmt.mantissa_bits)
        shifted = self.fma(x, self.c(scale), magic)
        as_int = self.b.sub(self.bits(shifted), self.bits(magic))
        return self.b.fsub(shifted, magic), as_int

    def lt(self, a: V, b: V) -> V:
        return self.b.fcmp_ordered("<", a, b)

    def is_nan(self, x: V) -> V:
        return self.b.fcmp_unordered("uno", x, x)

    def call(self, op: str, x: V) -> V:
        if self.fmt.lanes:  # a vector variant's body: the other function's written in place
            return _BODIES[op](self, x)
        return self.b.call(_function(self.module, op, self.fmt.dtype), [x])


def _exp(e: _Emitter, x: V) -> V:
    """exp(x) = 2**k * exp(r), x = k*ln2 + r, |r| <= ln2/2."""
    b, fmt = e.b, e.fmt
    # beyond these exp is inf / rounds to 0, and k stays small enough for the two-step scaling
    hi, lo = (89.0, -104.0) if fmt.dtype == "float32" else (710.0, -746.0)
    # below lo (and nan) the result is 0 (nan, fixed below): computed from x = 0 instead and
    # replaced, since computing it from lo ends in an underflowing multiply, a microcode assist
    # of about 100 cycles per element on x86 (half of a causal softmax's exps are of -inf)
    under = b.fcmp_unordered("<", x, e.c(lo))
    xc = b.select(under, e.c(0.0), x)
    xc = b.select(b.fcmp_ordered(">", xc, e.c(hi)), e.c(hi), xc)
    k, ki = e.round_to_int(xc, 1 / math.log(2))
    ln2_hi, ln2_lo = _LN2_SPLIT[fmt.dtype]
    r = e.fma(b.fneg(k), e.c(ln2_hi), xc)
    r = e.fma(b.fneg(k), e.c(ln2_lo), r)
    p = b.fadd(e.c(1.0), e.fma(b.fmul(r, r), e.poly(r, _EXP_P[fmt.dtype]), r))
    # 2**k in two factors, each a normal number, so subnormal results round only once
    k1 = b.ashr(ki, e.i(1))
    k2 = b.sub(ki, k1)
    scale1 = e.from_bits(b.shl(b.add(k1, e.i(fmt.bias)), e.i(fmt.mantissa_bits)))
    scale2 = e.from_bits(b.shl(b.add(k2, e.i(fmt.bias)), e.i(fmt.mantissa_bits)))
    result = b.select(under, e.c(0.0), b.fmul(b.fmul(p, scale1), scale2))
    return b.select(e.is_nan(x), x, result)


def _exp_of_moderate(e: _Emitter, x: V) -> V:
    """exp(x) for -80 <= x <= 80 (float32 erf's tail; tanh's large branch has its own): ``_exp``
    without the selects for overflow and underflow, which cannot happen there (a nan gives a
    nan); 2**k is one normal number in both formats."""
    b, fmt = e.b, e.fmt
    k, ki = e.round_to_int(x, 1 / math.log(2))
    ln2_hi, ln2_lo = _LN2_SPLIT[fmt.dtype]
    r = e.fma(b.fneg(k), e.c(ln2_hi), x)
    r = e.fma(b.fneg(k), e.c(ln2_lo), r)
    p = b.fadd(e.c(1.0), e.fma(b.fmul(r, r), e.poly(r, _EXP_P[fmt.dtype]), r))
    return b.fmul(p, e.from_bits(b.shl(b.add(ki, e.i(fmt.bias)), e.i(fmt.mantissa_bits))))


def _log(e: _Emitter, x: V) -> V:
    """log(x) = k*ln2 + log(m), x = 2**k * m with m in [sqrt(1/2), sqrt(2))."""
    b, fmt = e.b, e.fmt
    mbits = fmt.mantissa_bits
    tiny = e.lt(x, e.c(2.0 ** (1 - fmt.bias)))  # subnormal: scale into the normal range
    xs = b.select(tiny, b.fmul(x, e.c(2.0**mbits)), x)
    k_adjust = b.select(tiny, e.i(-mbits), e.i(0))
    sqrt_half = fmt.bits(math.sqrt(0.5))
    ix = b.add(e.bits(xs), e.i(fmt.bits(1.0) - sqrt_half))
    k = b.add(b.sub(b.ashr(ix, e.i(mbits)), e.i(fmt.bias)), k_adjust)
    m = e.from_bits(b.add(b.and_(ix, e.i((1 << mbits) - 1)), e.i(sqrt_half)))
    f = b.fsub(m, e.c(1.0))
    s = b.fdiv(f, b.fadd(e.c(2.0), f))
    z = b.fmul(s, s)
    big_r = b.fmul(z, e.poly(z, _LOG_P[fmt.dtype]))
    hfsq = b.fmul(b.fmul(e.c(0.5), f), f)
    dk = b.sitofp(k, fmt.float)
    ln2_hi, ln2_lo = _LOG_LN2_SPLIT[fmt.dtype]
    y = e.fma(s, b.fadd(hfsq, big_r), b.fmul(dk, e.c(ln2_lo)))
    y = b.fadd(b.fsub(y, hfsq), f)
    y = e.fma(dk, e.c(ln2_hi), y)
    y = b.select(b.fcmp_ordered("==", x, e.c(math.inf)), x, y)
    y = b.select(b.fcmp_ordered("==", x, e.c(0.0)), e.c(-math.inf), y)
    return b.select(b.fcmp_unordered("<", x, e.c(0.0)), e.c(math.nan), y)  # x < 0 or nan


def _cody_waite(e: _Emitter, x: V, clamp: bool = True) -> tuple[V, V]:
    """(r, q) with x = q*pi/2 + r, |r| <= pi/4: a three-part Cody-Waite subtraction, exact
    while q*pi/2 needs no more bits than the parts hold (the float64 range in the docstring).
    ``clamp``: keep r within [-1.6, 1.6] (a no-op below FAST_SIN_COS_LIMIT)."""
    b, fmt = e.b, e.fmt
    q, qi = e.round_to_int(x, 2 / math.pi)
    # -q twice: -0 and +0 where q is 0, so that a zero x keeps its sign through each step,
    # x - q*part: its product must be a zero of x's sign (-0 + +0 is +0), -0 for a positive
    # part and +0 for a negative one (the parts' signs differ)
    minus_q = {True: b.fneg(q), False: b.fsub(e.c(0.0), q)}
    r = x
    for part in fmt.split(_PI / 2, 3):
        r = e.fma(minus_q[part > 0], e.c(part), r)
    if not clamp:
        return r, qi
    # no-op in range (|r| <= pi/4 plus the error of rint(x * 2/pi)); out of range it keeps
    # the polynomials within [-1, 1]
    bound = e.c(1.6)
    r = b.select(b.fcmp_ordered(">", r, bound), bound, r)
    return b.select(e.lt(r, b.fneg(bound)), b.fneg(bound), r), qi


def _two_over_pi_table(module: ir.Module) -> tuple[ir.GlobalVariable, ir.GlobalVariable]:
    """For each float32 biased exponent k (subnormals use k = 1): T(k) = 2**(k-150) * 2/pi
    mod 4, as a double T_hi and the double T_lo nearest to the rest, once per module."""
    f64 = ir.DoubleType()
    tables = []
    for part in ("hi", "lo"):
        name = f"{HELPER_PREFIX}two_over_pi_mod4.{part}"
        existing = module.globals.get(name)
        if existing is None:
            values = []
            for k in range(256):
                t = Fraction(2) ** (max(k, 1) - 150) * 2 / _PI
                t -= 4 * (t // 4)
                hi = float(t)
                values.append(hi if part == "hi" else float(t - Fraction(hi)))
            existing = ir.GlobalVariable(module, ir.ArrayType(f64, 256), name)
            existing.initializer = ir.Constant(ir.ArrayType(f64, 256), values)
            existing.global_constant = True
            existing.linkage = "internal"
        tables.append(existing)
    return tables[0], tables[1]


def _float32_exact_reduction(e: _Emitter, x: V) -> tuple[V, V]:
    """(r, q) with x = q*pi/2 + r, |r| <= pi/4, for every finite float32 x, in float64.

    x = m * 2**(k-150) with a 24-bit integer m, so x * 2/pi = m * T(k) modulo 4 (a table by
    exponent, ``_two_over_pi_table``, 106 bits of T). m * T_hi is p + pe exactly (one fma);
    p mod 4 is exact; what is left, under 1 in size, holds about 80 bits, enough for the
    float32 arguments nearest a multiple of pi/2.
    """
    b = e.b
    d = _Emitter(e.module, b, _FORMATS["float64"])
    if e.fmt.lanes:
        d = _Emitter(e.module, b, d.fmt.vector(e.fmt.lanes))
    bits = e.bits(x)
    k = b.and_(b.lshr(bits, e.i(23)), e.i(0xFF))
    mantissa = b.and_(bits, e.i(0x7FFFFF))
    normal = b.icmp_unsigned("!=", k, e.i(0))
    m = b.or_(mantissa, b.select(normal, e.i(1 << 23), e.i(0)))
    index = b.zext(b.select(normal, k, e.i(1)), d.fmt.int)
    t_hi, t_lo = (_lookup(b, table, index) for table in _two_over_pi_table(e.module))
    md = d.intrinsic("llvm.copysign", b.uitofp(m, d.fmt.float), b.fpext(x, d.fmt.float))
    p = b.fmul(md, t_hi)
    pe = d.fma(md, t_hi, b.fneg(p))
    p_mod4 = d.fma(d.intrinsic("llvm.rint", b.fmul(p, d.c(0.25))), d.c(-4.0), p)
    q = d.intrinsic("llvm.rint", p_mod4)
    f = b.fadd(b.fsub(p_mod4, q), d.fma(md, t_lo, pe))
    r = b.fptrunc(b.fmul(f, d.c(math.pi / 2)), e.fmt.float)
    # +-0 keeps its sign (the reduction yields +0 for both)
    return b.select(b.fcmp_ordered("==", x, e.c(0.0)), x, r), b.fptosi(q, e.fmt.int)


def _lookup(b: ir.IRBuilder, table: ir.GlobalVariable, index: V) -> V:
    """``table[index]`` for an i64 index, or lane by lane for a vector of them."""
    i64 = ir.IntType(64)
    if not isinstance(index.type, ir.VectorType):
        return b.load(b.gep(table, [i64(0), index], inbounds=True))
    element = table.type.pointee.element
    out: V = ir.Constant(ir.VectorType(element, index.type.count), ir.Undefined)
    for lane in range(index.type.count):
        at = ir.Constant(ir.IntType(32), lane)
        value = b.load(b.gep(table, [i64(0), b.extract_element(index, at)], inbounds=True))
        out = b.insert_element(out, value, at)
    return out


def _times_plus_zero(e: _Emitter, a: V, b: V) -> V:
    """a * b rounded once, as a fused multiply-add of +0: +0 where a * b is -0 (what LLVM's
    fmul of a = +0 and a negative b would give), so r + r * (a * b) keeps a zero r's sign."""
    return e.fma(a, b, e.c(0.0))


def _sin_cos(e: _Emitter, x: V, exact: bool = False, bounded: bool = False
             ) -> tuple[V, V]:
    """(sin(x), cos(x)) from one quadrant q and r = x - q*pi/2 (``exact``: the float32
    reduction for every finite x, else Cody-Waite's; ``bounded``: Cody-Waite's without its
    clamp, for |x| <= FAST_SIN_COS_LIMIT or nan, where it gives the same bits): both
    polynomials are computed and each result picks one by its quadrant (q for sin, q + 1 for
    cos), so sin alone costs nearly what both do (a kernel with both of one argument calls
    ``sincos`` once)."""
    b, fmt = e.b, e.fmt
    if exact and fmt.dtype == "float64":
        # the C library's, reducing every finite x exactly (LLVM calls sin and cos a lane
        # at a time): a float64 kernel's rerun where an argument passed FAST_SIN_COS_LIMIT
        return e.intrinsic("llvm.sin", x), e.intrinsic("llvm.cos", x)
    if exact and fmt.dtype != "float32":
        raise TypeError(f"no exact sin/cos reduction for {fmt.dtype}")
    r, qi = _float32_exact_reduction(e, x) if exact else _cody_waite(e, x, clamp=not bounded)
    z = b.fmul(r, r)
    # r + r * (z * S(z)), z * S(z) a fused multiply-add of +0: +0 where z is, so that r = -0
    # gives -0 (with (z * r) * S(z) + r the negative S made the product +0, and -0 + +0 = +0)
    sin_r = e.fma(r, _times_plus_zero(e, z, e.poly(z, _SIN_P[fmt.dtype])), r)
    if fmt.dtype == "float32":  # cephes cosf's sum: 4 operations, not 9, as accurate here
        cos_r = e.fma(z, e.poly(z, [-0.5, *_COS_P[fmt.dtype]]), e.c(1.0))
    else:  # fdlibm's: w = 1 - z/2 and its rounding error added back
        half_z = b.fmul(e.c(0.5), z)
        w = b.fsub(e.c(1.0), half_z)
        tail = e.fma(b.fmul(z, z), e.poly(z, _COS_P[fmt.dtype]),
                     b.fsub(b.fsub(e.c(1.0), w), half_z))
        cos_r = b.fadd(w, tail)
    # x is +-inf or nan: the exact reduction's r is finite; Cody-Waite's is nan (inf - inf), and
    # a nan r gives a nan result (the clamps keep it: an ordered comparison with nan is false)
    not_finite = e.is_nan(b.fsub(x, x)) if exact else None

    def place(quadrant_offset: int) -> V:
        quadrant = b.add(qi, e.i(quadrant_offset))
        odd = b.icmp_unsigned("!=", b.and_(quadrant, e.i(1)), e.i(0))
        value = b.select(odd, cos_r, sin_r)
        # quadrants 2 and 3 negate: move bit 1 of the quadrant into the sign bit
        sign = b.shl(b.and_(quadrant, e.i(2)), e.i(fmt.width - 2))
        value = e.from_bits(b.xor(e.bits(value), sign))
        return value if not_finite is None else b.select(not_finite, e.c(math.nan), value)

    return place(0), place(1)


def _sin_or_cos(e: _Emitter, x: V, quadrant_offset: int, exact: bool = False,
                bounded: bool = False) -> V:
    """sin(x + offset*pi/2): ``_sin_cos``'s sin (offset 0) or cos (offset 1)."""
    return _sin_cos(e, x, exact, bounded)[quadrant_offset]


def _sin_cos_unit(e: _Emitter, x: V) -> tuple[V, V]:
    """(sin(x), cos(x)) for |x| <= UNIT_SIN_COS_LIMIT or nan: float32's from a polynomial each,
    with no reduction (a zero keeps its sign in sin, as in ``_sin_cos``); float64's are
    ``_sin_cos``'s bounded ones."""
    if e.fmt.dtype != "float32":
        return _sin_cos(e, x, bounded=True)
    z = e.b.fmul(x, x)
    sin = e.fma(x, _times_plus_zero(e, z, e.poly(z, _SIN_UNIT_P)), x)
    return sin, e.fma(z, e.poly(z, _COS_UNIT_P), e.c(1.0))


def _tanh(e: _Emitter, x: V) -> V:
    """tanh(|x|) with x's sign: |x| + |x|^3 * P(x^2) / Q(x^2) below _TANH_SMALL, else
    1 - 2/(exp(2|x|) + 1); both computed and one selected. float32's vector variant on AVX-512:
    26 vector instructions besides constant broadcasts, a division among them (30 with 2|x|
    formed, a two-part ln2 and exp's own 1 + r + r^2 * P(r))."""
    b, fmt = e.b, e.fmt
    a = e.intrinsic("llvm.fabs", x)
    z = b.fmul(a, a)
    p, q = _TANH_PQ[fmt.dtype]
    ratio = e.poly(z, p) if q == [1.0] else b.fdiv(e.poly(z, p), e.poly(z, q))
    small = e.fma(b.fmul(a, z), ratio, a)  # of |x|: copysign gives -0 its sign back
    # |x| clamped where tanh is 1 in both formats, so exp needs no special cases (9% off the
    # chain workload); a nan passes the clamp and every step after
    clamped = b.select(b.fcmp_ordered(">", a, e.c(_TANH_ONE)), e.c(_TANH_ONE), a)
    # exp(2|x|) = 2**k * exp(2s), |x| = k*ln2/2 + s, |s| <= ln2/4
    k, ki = e.round_to_int(clamped, 2 / math.log(2))
    s = clamped
    for part in _TANH_LN2_HALF[fmt.dtype]:
        s = e.fma(b.fneg(k), e.c(part), s)
    scale = e.from_bits(b.shl(b.add(ki, e.i(fmt.bias)), e.i(fmt.mantissa_bits)))
    # exp(2|x|) + 1 in one fused multiply-add
    denominator = e.fma(e.poly(s, _TANH_EXP_S[fmt.dtype]), scale, e.c(1.0))
    big = b.fsub(e.c(1.0), b.fdiv(e.c(2.0), denominator))
    return e.intrinsic("llvm.copysign", b.select(e.lt(a, e.c(_TANH_SMALL)), small, big), x)


def _sigmoid(e: _Emitter, x: V) -> V:
    """1/(1+exp(-x)) for x >= 0 and exp(x)/(1+exp(x)) below, so exp never overflows."""
    b = e.b
    t = e.call("exp", b.fneg(e.intrinsic("llvm.fabs", x)))
    d = b.fadd(e.c(1.0), t)
    return b.select(b.fcmp_ordered(">=", x, e.c(0.0)), b.fdiv(e.c(1.0), d), b.fdiv(t, d))


def _sqrt(e: _Emitter, x: V) -> V:
    return e.intrinsic("llvm.sqrt", x)




def _erf32(e: _Emitter, x: V) -> V:
    """float32 erf without divisions: 4x fdlibm's speed (gpt's GELU kernels), 1.07 ulp."""
    b = e.b
    a = e.intrinsic("llvm.fabs", x)
    small = e.fma(x, e.poly(b.fmul(x, x), _ERF32_SMALL), x)
    # a clamped at 4 (a nan passes): the exp's argument stays in [-18, -1.8], where
    # _exp_of_moderate is exact to 1 ulp
    ac = b.select(b.fcmp_ordered(">", a, e.c(_ERF32_ONE)), e.c(_ERF32_ONE), a)
    erfc = _exp_of_moderate(e, e.fma(b.fneg(ac), ac, e.poly(ac, _ERF32_LOG_ERFCX)))
    big = e.intrinsic("llvm.copysign", b.fsub(e.c(1.0), erfc), x)
    return b.select(e.lt(a, e.c(1.0)), small, big)


def _erf(e: _Emitter, x: V) -> V:
    """fdlibm erf; every range is computed and the right one selected, as vector code must
    (float32: ``_erf32``)."""
    if e.fmt.dtype == "float32":
        return _erf32(e, x)
    b, fmt = e.b, e.fmt
    a = e.intrinsic("llvm.fabs", x)
    z = b.fmul(a, a)
    near0 = e.fma(a, b.fdiv(e.poly(z, _ERF_PP), e.poly(z, _ERF_QQ)), a)
    s = b.fsub(a, e.c(1.0))
    near1 = b.fadd(e.c(_ERX), b.fdiv(e.poly(s, _ERF_PA), e.poly(s, _ERF_QA)))
    # erfc(a) = exp(-t*t - 0.5625) * exp((t-a)(t+a) + R/S) / a, t = a truncated
    inv = b.fdiv(e.c(1.0), z)
    first = e.lt(a, e.c(1 / 0.35))
    ratio = b.fdiv(e.select_poly(first, inv, _ERF_RA, _ERF_RB),
                   e.select_poly(first, inv, _ERF_SA, _ERF_SB))
    t = e.from_bits(b.and_(e.bits(a), e.i(_ERF_TRUNC_MASK[fmt.dtype])))
    head = e.call("exp", b.fsub(b.fneg(b.fmul(t, t)), e.c(0.5625)))
    body = e.call("exp", e.fma(b.fsub(t, a), b.fadd(t, a), ratio))
    tail = b.fsub(e.c(1.0), b.fdiv(b.fmul(head, body), a))
    y = b.select(e.lt(a, e.c(6.0)), tail, e.c(1.0))
    y = b.select(e.lt(a, e.c(1.25)), near1, y)
    y = b.select(e.lt(a, e.c(0.84375)), near0, y)
    return b.select(e.is_nan(x), x, e.intrinsic("llvm.copysign", y, x))


_BODIES: dict[str, Callable[[_Emitter, V], V]] = {
    "exp": _exp,
    "log": _log,
    "sin": partial(_sin_or_cos, quadrant_offset=0),
    "cos": partial(_sin_or_cos, quadrant_offset=1),
    "sin_exact": partial(_sin_or_cos, quadrant_offset=0, exact=True),
    "cos_exact": partial(_sin_or_cos, quadrant_offset=1, exact=True),
    "sin_bounded": partial(_sin_or_cos, quadrant_offset=0, bounded=True),
    "cos_bounded": partial(_sin_or_cos, quadrant_offset=1, bounded=True),
    "sin_unit": lambda e, x: _sin_cos_unit(e, x)[0],
    "cos_unit": lambda e, x: _sin_cos_unit(e, x)[1],
    "tanh": _tanh,
    "sigmoid": _sigmoid,
    "sqrt": _sqrt,
    "erf": _erf,
}


# the ops a kernel calls a function for (sqrt is an instruction)
MATH_OPS = frozenset(_BODIES) - {"sqrt"}

# functions of two results, returned as a literal struct {T, T}: sin and cos of one argument
# from one argument reduction (a kernel's sin(x) and cos(x), as in sin's forward and backward)
_PAIR_BODIES: dict[str, Callable[[_Emitter, V], tuple[V, V]]] = {
    "sincos": _sin_cos,
    "sincos_exact": partial(_sin_cos, exact=True),
    "sincos_bounded": partial(_sin_cos, bounded=True),
    "sincos_unit": _sin_cos_unit,
}
# each op of a pair: the pair's op and the op's place in its struct
PAIRED = {"sin": ("sincos", 0), "cos": ("sincos", 1)}


def _return_type(op: str, fmt: _Format) -> ir.Type:
    return ir.LiteralStructType([fmt.float, fmt.float]) if op in _PAIR_BODIES else fmt.float


def _emit_body(module: ir.Module, builder: ir.IRBuilder, fmt: _Format, op: str, x: V) -> V:
    """``op``'s body at ``x`` (a pair's results in its struct)."""
    e = _Emitter(module, builder, fmt)
    if op not in _PAIR_BODIES:
        return _BODIES[op](e, x)
    out: V = ir.Constant(_return_type(op, fmt), ir.Undefined)
    for place, value in enumerate(_PAIR_BODIES[op](e, x)):
        out = builder.insert_value(out, value, place)
    return out


def _function(module: ir.Module, op: str, dtype: str) -> ir.Function:
    """The internal always-inline function for ``op`` at ``dtype``, emitted on first use."""
    name = f"{HELPER_PREFIX}{op}.{dtype}"
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    fmt = _FORMATS[dtype]
    fn = ir.Function(module, ir.FunctionType(_return_type(op, fmt), [fmt.float]), name)
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline")
    fn.attributes.add("nounwind")
    builder = ir.IRBuilder(fn.append_basic_block("entry"))
    builder.ret(_emit_body(module, builder, fmt, op, fn.args[0]))
    return fn


class _VariantAttribute(CallInstrAttributes):
    """A call site's ``"vector-function-abi-variant"`` attribute (llvmlite knows only
    keyword attributes)."""

    def add(self, name: str) -> None:
        if not name.startswith('"vector-function-abi-variant"='):
            raise ValueError(f"not a vector variant attribute: {name!r}")
        set.add(self, name)


@functools.cache
def vector_widths(dtype: str) -> tuple[int, ...]:
    """Lane counts of the vector variants a math call offers the loop vectorizer: those of
    the host's vector registers (128-bit; 256 with AVX; 512 with AVX-512, where LLVM may still
    prefer 256-bit vectors). Kept per dtype: a plan's products ask it hundreds of times."""
    _, features = host()
    bits = [128]
    if "+avx" in features.split(","):
        bits.append(256)
    if "+avx512f" in features.split(","):
        bits.append(512)
    size = 32 if dtype == "float32" else 64
    return tuple(b // size for b in bits)


def lanes(dtype: str) -> int:
    """Elements of ``dtype`` (a name) in one of the host's widest vector registers."""
    return vector_widths(dtype)[-1]


def _outlined(module: ir.Module, op: str, dtype: str) -> tuple[ir.Function, str]:
    """The out-of-line function a kernel calls for ``op`` at ``dtype``, and the call-site
    attribute naming its vector variants. Each variant is the body written on vectors (the
    same instructions as the scalar body, lane by lane). The loop vectorizer calls a variant
    for a vector of elements instead of inlining the scalar body into every loop (and every
    loop's scalar remainder) that uses it: that inlining, of 16 sins and 32 tanhs in the chain
    workload's kernel, took seconds of LLVM time. (Variants made of the scalar body inlined
    once a lane, for the SLP vectorizer to join, took 104 ms of the chain kernel's 254 ms of
    optimization: its five functions' 28 lanes each.) Those the vectorizer does not choose
    are dropped after optimization (``codegen.target.emit``)."""
    name = f"{HELPER_PREFIX}{op}.{dtype}.call"
    fmt = _FORMATS[dtype]
    variants = []
    for lanes in vector_widths(dtype):
        vname = f"{HELPER_PREFIX}{op}.{dtype}.v{lanes}"
        variants.append(f"_ZGV_LLVM_N{lanes}v_{name}({vname})")
        if vname in module.globals:
            continue
        vfmt = fmt.vector(lanes)
        vfn = ir.Function(module, ir.FunctionType(_return_type(op, vfmt), [vfmt.float]), vname)
        vfn.attributes.add("nounwind")
        vfn.attributes.add("readnone")
        b = ir.IRBuilder(vfn.append_basic_block("entry"))
        b.ret(_emit_body(module, b, vfmt, op, vfn.args[0]))
    attribute = '"vector-function-abi-variant"="' + ",".join(variants) + '"'
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(_return_type(op, fmt), [fmt.float]), name)
        fn.attributes.add("noinline")
        fn.attributes.add("nounwind")
        fn.attributes.add("readnone")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        b.ret(b.call(_function(module, op, dtype), [fn.args[0]]))
    return fn, attribute


# inlined in a kernel that calls the others out of line: sqrt is an instruction, and the unit
# variants are a few operations, less than a call's spills of the registers live across it
# (the chain kernel, 16 sincos_unit among 32 calls: 66.4 -> 57.6 us, best of 30 rounds side by
# side in one process)
_ALWAYS_INLINED = frozenset({"sqrt", "sin_unit", "cos_unit", "sincos_unit"})


def _call(module: ir.Module, op: str, outlined: bool, builder: ir.IRBuilder, x: V,
          dtype: str) -> V:
    fmt = _FORMATS.get(dtype)
    if fmt is None or x.type != fmt.float:
        raise TypeError(f"math op {op!r}: needs a float32/float64 value, got dtype {dtype!r} "
                        f"and LLVM type {x.type}")
    if not outlined or op in _ALWAYS_INLINED:
        return builder.call(_function(module, op, dtype), [x], name=op)
    fn, attribute = _outlined(module, op, dtype)
    call = builder.call(fn, [x], name=op)
    call.attributes = _VariantAttribute([attribute])
    return call


def declare_math(module: ir.Module, outlined: bool = False) -> dict[str, MathFn]:
    """Emitters keyed by op name: ``table[op](builder, x, dtype)`` returns op(x), inlined, or
    (``outlined``) as a call the loop vectorizer turns into calls of a vector variant
    (``_outlined``): a kernel with many transcendental ops compiles several times faster
    that way, and runs 10-15% slower (each call spills the vector registers live across it).
    ``sincos`` and ``sincos_exact`` return the struct {sin(x), cos(x)} (``PAIRED``): one
    argument reduction for both, and one call out of line (LLVM vectorizes calls returning
    a literal struct of floats into their variants returning a struct of vectors)."""
    return {op: partial(_call, module, op, outlined) for op in (*_BODIES, *_PAIR_BODIES)}


def _pow_f32(module: ir.Module) -> ir.Function:
    """float32 pow(x, y) as exp(y * log|x|) in float64 (an error of at most 0.5 ulp plus
    double rounding), with C99's cases: pow(x, 0) = pow(1, y) = 1, pow(-1, +-inf) = 1, a
    negative finite base with a non-integer exponent gives nan, and an odd integer exponent
    keeps the base's sign (also of zeros and infinities)."""
    name = f"{HELPER_PREFIX}pow.float32"
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    f32, f64 = ir.FloatType(), ir.DoubleType()
    fn = ir.Function(module, ir.FunctionType(f32, [f32, f32]), name)
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline")
    fn.attributes.add("nounwind")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    e = _Emitter(module, b, _FORMATS["float64"])
    x, y = (b.fpext(a, f64) for a in fn.args)
    ax = e.intrinsic("llvm.fabs", x)
    r = b.call(_function(module, "exp", "float64"),
               [b.fmul(y, b.call(_function(module, "log", "float64"), [ax]))])
    is_int = b.fcmp_ordered("==", e.intrinsic("llvm.floor", y), y)
    half = b.fmul(y, e.c(0.5))
    odd = b.and_(is_int, b.fcmp_ordered("!=", e.intrinsic("llvm.floor", half), half))
    r = b.select(odd, e.intrinsic("llvm.copysign", r, x), r)
    finite_neg = b.and_(b.fcmp_ordered("<", x, e.c(0.0)),
                        b.fcmp_ordered("!=", ax, e.c(math.inf)))
    r = b.select(b.and_(finite_neg, b.not_(is_int)), e.c(math.nan), r)
    one = b.or_(b.fcmp_ordered("==", y, e.c(0.0)), b.fcmp_ordered("==", x, e.c(1.0)))
    one = b.or_(one, b.and_(b.fcmp_ordered("==", ax, e.c(1.0)),
                            b.fcmp_ordered("==", e.intrinsic("llvm.fabs", y), e.c(math.inf))))
    b.ret(b.fptrunc(b.select(one, e.c(1.0), r), f32))
    return fn


def power(module: ir.Module, builder: ir.IRBuilder, x: V, y: V) -> V:
    """pow(x, y): vectorizable for float32 (``_pow_f32``); float64 calls llvm.pow, which
    becomes libm's pow (no float64 pow is written here yet)."""
    if x.type == ir.FloatType():
        return builder.call(_pow_f32(module), [x, y], name="pow")
    full = "llvm.pow.f64"
    fn = module.globals.get(full) or ir.Function(
        module, ir.FunctionType(x.type, [x.type, x.type]), full)
    return builder.call(fn, [x, y], name="pow")
