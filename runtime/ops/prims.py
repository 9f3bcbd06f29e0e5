"""Primitive definitions: forward (numpy/CuPy), shape/dtype rule and backward formula, side by
side. Backward formulas use only functional ops, so they run eagerly and capture alike."""

from __future__ import annotations

import functools
import math
import operator
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _dtype as D
from .. import _quiet
from ..autograd.node import Meta
from . import cephes
from . import functional as F
from .registry import (
    PROMOTE_BOOL_OUT,
    PROMOTE_FLOAT,
    PROMOTE_SAME,
    VALUE_FREE_DTYPES,
    ArgMetas,
    Attrs,
    FastPath,
    OutMeta,
    Primitive,
    Specializer,
    flops_elementwise,
    flops_matmul,
    flops_none,
    flops_reduce,
    generated_windows,
    is_array_meta,
    probe_ok,
    register,
    ufunc_specializer,
)
from .shapes import (
    DTypeError,
    ShapeError,
    broadcast_shapes,
    matmul_dtype_error,
    matmul_error,
)

if TYPE_CHECKING:
    from codegen.builder import KernelBuilder

# a lowering's argument: ("expr", expr index, dtype) or ("scalar", value, None)
LowerArg = tuple[str, Any, Any]
# the result dtypes the kernel IR's arithmetic takes (codegen.ir's op tables): pow of integers
# and the arithmetic of bools (True + True, abs, max) run as numpy steps; given to the IR, they
# failed the whole step's kernels, which then ran on the interpreter
_FLOATS = frozenset({"float32", "float64"})
_NUMERIC = _FLOATS | {"int64"}

# --- shape/dtype rules ---------------------------------------------------------------------


def _tensor_metas(metas: tuple[Any, ...]) -> list[Meta]:
    return [m for m in metas if isinstance(m, Meta)]


def _promoted(metas: tuple[Any, ...], promote: str) -> D.DType:
    tensors = [m for m in metas if isinstance(m, Meta)]
    scalars = [m for m in metas if not isinstance(m, Meta) and m is not None]
    rdt = D.result_dtype([m.dtype for m in tensors], scalars, [len(m.shape) for m in tensors])
    if promote == PROMOTE_FLOAT and not rdt.is_floating_point:
        rdt = D.default_float
    return D.bool_ if promote == PROMOTE_BOOL_OUT else rdt


def _elementwise_infer(promote: str, positions: tuple[int, ...] | None = None) -> Any:
    def infer(*metas: Any, **attrs: Any) -> tuple[tuple[int, ...], D.DType]:
        picked = metas if positions is None else tuple(metas[i] for i in positions)
        shape = broadcast_shapes(*(m.shape for m in _tensor_metas(metas)))
        return shape, _promoted(picked, promote)

    return infer


def _norm_axes(axes: tuple[int, ...] | None, ndim: int) -> tuple[int, ...]:
    return tuple(range(ndim)) if axes is None else axes


def _reduce_shape(shape: tuple[int, ...], axes: tuple[int, ...], keepdim: bool) -> tuple[int, ...]:
    if keepdim:
        return tuple(1 if i in axes else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in axes)


# --- registration helpers ----------------------------------------------------------------


# --- kernel-IR lowerings (for fused segments; kb is codegen.builder.KernelBuilder) --------


def _tensor_dtype(args: list[LowerArg]) -> str:
    return next(d for kind, _, d in args if kind == "expr")


def _operand(kb: KernelBuilder, arg: LowerArg, dtype: str) -> int:
    """An expr for an argument: scalars become constants of the tensors' dtype (weak)."""
    kind, value, _ = arg
    return value if kind == "expr" else kb.const(value, dtype)


def _lower_unary(op: str) -> Any:
    def lower(kb: KernelBuilder, args: list[LowerArg], attrs: dict[str, Any],
        dtype: str) -> int:
        return kb.unary(op, _operand(kb, args[0], dtype), dtype)

    return lower


def _lower_binary(op: str) -> Any:
    def lower(kb: KernelBuilder, args: list[LowerArg], attrs: dict[str, Any],
        dtype: str) -> int:
        t = _tensor_dtype(args)
        return kb.binary(op, _operand(kb, args[0], t), _operand(kb, args[1], t), dtype)

    return lower


def _lower_where(kb: KernelBuilder, args: list[LowerArg], attrs: dict[str, Any],
        dtype: str) -> int:
    return kb.where(_operand(kb, args[0], "bool"), _operand(kb, args[1], dtype),
                    _operand(kb, args[2], dtype), dtype)


def _lower_cast(kb: KernelBuilder, args: list[LowerArg], attrs: dict[str, Any],
        dtype: str) -> int:
    return kb.cast(_operand(kb, args[0], dtype), dtype)


def _lower_pow(kb: KernelBuilder, args: list[LowerArg], attrs: dict[str, Any],
        dtype: str) -> int:
    """x ** n for a small integer scalar n as multiplications (and one division for n < 0):
    what ML code raises to (squares, cubes), cheaper than pow and within an ulp of it."""
    base, exponent = args
    n = exponent[1]
    if base[0] == "expr" and exponent[0] == "scalar" and not isinstance(n, bool) \
            and n in (0.5, -0.5):  # PyTorch's sqrt and rsqrt (numpy's power takes 0.5 so)
        root = kb.unary("sqrt", _operand(kb, base, dtype), dtype)
        return root if n == 0.5 else kb.binary("div", kb.const(1.0, dtype), root, dtype)
    if base[0] != "expr" or exponent[0] != "scalar" or isinstance(n, bool) \
            or n not in (0, 1, 2, 3, 4, -1, -2) or n != int(n):
        return _lower_binary("pow")(kb, args, attrs, dtype)
    x = _operand(kb, base, dtype)
    one = kb.const(1.0, dtype)
    acc = one if n == 0 else x
    for _ in range(abs(int(n)) - 1):
        acc = kb.binary("mul", acc, x, dtype)
    return kb.binary("div", one, acc, dtype) if n < 0 else acc


def _lower_broadcast(kb: KernelBuilder, args: list[LowerArg], attrs: dict[str, Any],
        dtype: str) -> int:
    """expand inside a kernel: every value is already read broadcast over the domain."""
    return _operand(kb, args[0], dtype)


def _lower_tanh_backward(kb: KernelBuilder, args: list[LowerArg], attrs: dict[str, Any],
        dtype: str) -> int:
    g, y = _operand(kb, args[0], dtype), _operand(kb, args[1], dtype)
    one_minus = kb.binary("sub", kb.const(1.0, dtype), kb.binary("mul", y, y, dtype), dtype)
    return kb.binary("mul", g, one_minus, dtype)


def _xp_ufunc(fn: np.ufunc) -> Callable[..., Any]:
    """impl(xp, *args): the array module's ufunc of ``fn``'s name (numpy's is ``fn``; CuPy's
    runs on the device, where numpy's may not be forwarded)."""
    name = fn.__name__
    if fn.nin == 1:
        return lambda xp, x: getattr(xp, name)(x)
    return lambda xp, a, b: getattr(xp, name)(a, b)


def _unary(name: str, fn: Any, backward: Any, saves: tuple[int | str, ...],
           promote: str = PROMOTE_FLOAT, lower_dtypes: frozenset[str] | None = None
           ) -> Primitive:
    impl = _xp_ufunc(fn) if isinstance(fn, np.ufunc) else (lambda xp, x: fn(xp)(x))
    return register(Primitive(
        name, impl=impl, infer=_elementwise_infer(promote),
        backward=backward, saves=saves, promote=promote, lower=_lower_unary(name),
        lower_dtypes=lower_dtypes, ufunc=fn if isinstance(fn, np.ufunc) else None,
        elementwise=True, flops=flops_elementwise))


def _binary(name: str, fn: Any, backward: Any | None, saves: tuple[int | str, ...] = (),
            promote: str = PROMOTE_SAME, lower: Any = None,
            half_scalar_in_float32: bool = False, lower_dtypes: frozenset[str] | None = None,
            saves_if_grad: dict[int, tuple[int, ...]] | None = None) -> Primitive:
    impl, specializer = _xp_ufunc(fn), None
    if half_scalar_in_float32:
        impl, specializer = _half_scalar_impl(fn), _half_scalar_specializer(fn)
    return register(Primitive(
        name, impl=impl, infer=_elementwise_infer(promote),
        backward=backward, saves=saves, saves_if_grad=saves_if_grad, promote=promote,
        differentiable=backward is not None,
        lower=lower or _lower_binary(name), lower_dtypes=lower_dtypes, ufunc=fn,
        elementwise=True, flops=flops_elementwise, specializer=specializer))


_NUMBERS = (float, int)


def _half_scalar_impl(fn: np.ufunc) -> Callable[..., Any]:
    """mul's and div's impl: a float16 array and a Python number (after it, or before it in
    a product) computed in float32 and rounded once, as PyTorch's CPU kernels take the scalar
    as a float32; numpy rounds it to float16 first (then 450 of 2000 random halves times 0.3
    differ from PyTorch's by an ulp)."""
    name = fn.__name__
    commutes = name == "multiply"

    def impl(xp: Any, a: Any, b: Any) -> Any:
        f = getattr(xp, name)
        if type(b) in _NUMBERS and a.dtype == np.float16:
            return f(a.astype(np.float32), b).astype(np.float16)
        if commutes and type(a) in _NUMBERS and b.dtype == np.float16:
            return f(a, b.astype(np.float32)).astype(np.float16)
        return f(a, b)

    return impl


def _half_scalar_specializer(fn: np.ufunc) -> Specializer:
    """The ufunc as the fast path, but for a float16 result with a scalar argument (which
    the impl computes in float32)."""
    plain = ufunc_specializer(fn)

    def specialize(arg_metas: ArgMetas, attrs: Attrs, out_meta: OutMeta) -> FastPath:
        if out_meta[1] == np.float16 and not all(is_array_meta(m) for m in arg_metas):
            return None
        return plain(arg_metas, attrs, out_meta)

    return specialize


def _grads2(c: Any, ga: Any, gb: Any) -> tuple[Any, Any]:
    """Reduce broadcast gradients back to each argument's shape (None where not needed)."""
    return (_summed_to(ga, c.shape(0)) if c.needs(0) else None,
            _summed_to(gb, c.shape(1)) if c.needs(1) else None)


def _summed_to(g: Any, shape: tuple[int, ...]) -> Any:
    """``F.sum_to(g, shape)``, answered here where ``g`` has that shape (most gradients): its
    Size and tuple conversions cost more than the comparison of the array's shape."""
    return g if g._data.shape == shape else F.sum_to(g, shape)


# --- elementwise -------------------------------------------------------------------------

ADD = _binary("add", np.add, lambda c, g: _grads2(c, g, g), lower_dtypes=_NUMERIC)
SUB = _binary("sub", np.subtract,
              lambda c, g: _grads2(c, g, F.neg(g) if c.needs(1) else None),
              lower_dtypes=_NUMERIC)
MUL = _binary("mul", np.multiply,
              lambda c, g: _grads2(c, F.mul(g, c.input(1)) if c.needs(0) else None,
                                   F.mul(g, c.input(0)) if c.needs(1) else None),
              saves=(0, 1), saves_if_grad={0: (1,), 1: (0,)}, half_scalar_in_float32=True,
              lower_dtypes=_NUMERIC)


def _div_bwd(c: Any, g: Any) -> tuple[Any, Any]:
    b = c.input(1)
    ga = F.div(g, b) if c.needs(0) else None
    gb = F.neg(F.div(F.mul(g, c.output()), b)) if c.needs(1) else None
    return _grads2(c, ga, gb)


DIV = _binary("div", np.true_divide, _div_bwd, saves=(1, "out"),
              promote=PROMOTE_FLOAT, half_scalar_in_float32=True)


def _pow_bwd(c: Any, g: Any) -> tuple[Any, Any]:
    base, exp = c.input(0), c.input(1)
    ga = gb = None
    if c.needs(0):
        # PyTorch's convention: d(x**0)/dx = 0, also at x = 0 (0 * 0**-1 would be nan)
        if isinstance(exp, (int, float)) and exp == 0:
            ga = F.where(F.eq(g, g), 0.0, 0.0)  # zeros of g's shape, nan-free
        else:
            exp_m1 = exp - 1 if isinstance(exp, (int, float)) else F.sub(exp, 1)
            ga = F.mul(F.mul(g, exp), F.pow(base, exp_m1))
            if not isinstance(exp, (int, float)):
                ga = F.where(F.eq(exp, 0), 0.0, ga)
    if c.needs(1):
        out = c.output()
        if not isinstance(base, (int, float)):
            gb = F.mul(F.mul(g, out), F.log(base))
            # PyTorch's convention: d(0**e)/de = 0 for e >= 0
            gb = F.where(F.logical_and(F.eq(base, 0), F.ge(exp, 0)), 0.0, gb)
        elif base > 0:
            gb = F.mul(F.mul(g, out), math.log(base))
        elif base == 0:  # 0**e: d/de is 0 for e >= 0, -inf * 0**e (nan) below, as PyTorch
            gb = F.where(F.ge(exp, 0), 0.0, F.mul(F.mul(g, out), -math.inf))
        else:  # a negative base: log is nan
            gb = F.mul(F.mul(g, out), math.nan)
    return _grads2(c, ga, gb)


_RSQRT_DTYPES = frozenset({np.dtype(np.float32), np.dtype(np.float64), D.bfloat16.np})


def _is_rsqrt(a: Any, b: Any) -> bool:
    """Whether ``a ** b`` is PyTorch's rsqrt: a float32, float64 or bfloat16 array to the
    number -0.5 (a float16 one takes pow, as PyTorch's)."""
    return type(b) in _NUMBERS and b == -0.5 and getattr(a, "dtype", None) in _RSQRT_DTYPES


def _pow_impl(xp: Any, a: Any, b: Any) -> Any:
    """``power``, but x ** -0.5 is 1 / sqrt(x), as PyTorch's kernel computes it (-inf at -0.0,
    nan at -inf, where pow gives +inf and 0); numpy's power already takes x ** 0.5 as sqrt."""
    if _is_rsqrt(a, b):
        return xp.reciprocal(xp.sqrt(a))
    return xp.power(a, b)


def _pow_specializer(arg_metas: ArgMetas, attrs: Attrs, out_meta: OutMeta) -> FastPath:
    if len(arg_metas) == 2 and type(arg_metas[1]) in _NUMBERS and arg_metas[1] == -0.5 \
            and is_array_meta(arg_metas[0]) and np.dtype(arg_metas[0][1]) in _RSQRT_DTYPES:
        return None  # the impl's rsqrt
    return ufunc_specializer(np.power)(arg_metas, attrs, out_meta)


POW = register(Primitive(
    "pow", impl=_pow_impl, infer=_elementwise_infer(PROMOTE_SAME), backward=_pow_bwd,
    saves=(0, 1, "out"), promote=PROMOTE_SAME, lower=_lower_pow, lower_dtypes=_FLOATS,
    elementwise=True, flops=flops_elementwise, specializer=_pow_specializer))
MAXIMUM = _binary(
    "maximum", np.maximum,
    lambda c, g: _minmax_bwd(c, g, F.gt), saves=(0, 1), lower_dtypes=_NUMERIC)
MINIMUM = _binary(
    "minimum", np.minimum,
    lambda c, g: _minmax_bwd(c, g, F.lt), saves=(0, 1), lower_dtypes=_NUMERIC)


def _minmax_bwd(c: Any, g: Any, wins: Any) -> tuple[Any, Any]:
    """PyTorch's maximum/minimum backward: an operand gets the gradient where it does not
    lose, half of it on a tie; a NaN loses nowhere, so where either is NaN both get all of
    it (the winner's mask gave the other operand none)."""
    a, b = c.input(0), c.input(1)
    tie = F.mul(F.cast(F.eq(a, b), g.dtype), 0.5)
    ga = F.mul(g, F.sub(F.sub(1.0, F.cast(wins(b, a), g.dtype)), tie)) if c.needs(0) else None
    gb = F.mul(g, F.sub(F.sub(1.0, F.cast(wins(a, b), g.dtype)), tie)) if c.needs(1) else None
    return _grads2(c, ga, gb)


def _int_division_impl(fn: str) -> Callable[..., Any]:
    """numpy's remainder / floor_divide with Python's sign rule, as PyTorch's; an integer
    division by zero raises PyTorch's error where numpy would warn and give 0, bools
    PyTorch's error where numpy would give int8."""
    kernel = {"floor_divide": "div_floor"}.get(fn, fn)

    def impl(xp: Any, a: Any, b: Any) -> Any:
        # from dtypes, not arrays: numpy's result_type refuses device arrays
        kind = np.result_type(getattr(a, "dtype", a), getattr(b, "dtype", b)).kind
        if kind == "b":
            raise NotImplementedError(f'"{kernel}_cpu" not implemented for \'Bool\'')
        if kind in "iub" and not bool(xp.all(xp.asarray(b) != 0)):
            raise RuntimeError("ZeroDivisionError")
        with np.errstate(divide="ignore", invalid="ignore"):  # floats: inf and nan, as torch
            if fn == "remainder" and kind == "f":
                # PyTorch's: fmod, plus b where the signs differ; a zero keeps fmod's (a's)
                # sign, where numpy's takes b's
                mod = xp.fmod(a, b)
                flip = xp.logical_and(mod != 0, (xp.asarray(b) < 0) != (mod < 0))
                return xp.where(flip, mod + b, mod)
            return getattr(xp, fn)(a, b)

    return impl


def _remainder_bwd(c: Any, g: Any) -> tuple[Any, Any]:
    # PyTorch's formula: d/da = 1, d/db = -floor(a / b)
    # of the values (PyTorch's div(rounding_mode="floor"): no derivative of its own)
    gb = F.neg(F.mul(g, F.floor_divide(c.input(0).detach(), c.input(1).detach()))) \
        if c.needs(1) else None
    return _grads2(c, g if c.needs(0) else None, gb)


# remainder and floor_divide fuse for floats (the kernel IR's ops compute numpy's npy_divmod);
# integers run as numpy steps, whose division by zero raises
REMAINDER = register(Primitive(
    "remainder", impl=_int_division_impl("remainder"), infer=_elementwise_infer(PROMOTE_SAME),
    backward=_remainder_bwd, saves=(0, 1), promote=PROMOTE_SAME, elementwise=True,
    flops=flops_elementwise, lower=_lower_binary("remainder"), lower_dtypes=_FLOATS))
FLOOR_DIVIDE = register(Primitive(
    "floor_divide", impl=_int_division_impl("floor_divide"),
    infer=_elementwise_infer(PROMOTE_SAME), differentiable=False, promote=PROMOTE_SAME,
    elementwise=True, flops=flops_elementwise, lower=_lower_binary("floor_divide"),
    lower_dtypes=_FLOATS))


EQ = _binary("eq", np.equal, None, promote=PROMOTE_BOOL_OUT)
NE = _binary("ne", np.not_equal, None, promote=PROMOTE_BOOL_OUT)


def _lower_ordered(op: str) -> Any:
    """lt/le/gt/ge: the kernel IR orders numbers only, so bools compare as 0 and 1."""
    def lower(kb: KernelBuilder, args: list[LowerArg], attrs: dict[str, Any],
              dtype: str) -> int:
        t = _tensor_dtype(args)
        a, b = _operand(kb, args[0], t), _operand(kb, args[1], t)
        if t == "bool":
            a, b = kb.cast(a, "int64"), kb.cast(b, "int64")
        return kb.binary(op, a, b, dtype)

    return lower


def _lower_logical_and(kb: KernelBuilder, args: list[LowerArg], attrs: dict[str, Any],
                       dtype: str) -> int:
    """The kernel IR's logical_and takes bools: numbers are cast (nonzero, NaN too) first."""
    t = _tensor_dtype(args)
    a, b = _operand(kb, args[0], t), _operand(kb, args[1], t)
    if t != "bool":
        a, b = kb.cast(a, "bool"), kb.cast(b, "bool")
    return kb.binary("logical_and", a, b, dtype)


LT = _binary("lt", np.less, None, promote=PROMOTE_BOOL_OUT, lower=_lower_ordered("lt"))
LE = _binary("le", np.less_equal, None, promote=PROMOTE_BOOL_OUT, lower=_lower_ordered("le"))
GT = _binary("gt", np.greater, None, promote=PROMOTE_BOOL_OUT, lower=_lower_ordered("gt"))
GE = _binary("ge", np.greater_equal, None, promote=PROMOTE_BOOL_OUT,
             lower=_lower_ordered("ge"))
LOGICAL_AND = _binary("logical_and", np.logical_and, None, promote=PROMOTE_BOOL_OUT,
                      lower=_lower_logical_and)

NEG = _unary("neg", np.negative, lambda c, g: (F.neg(g),), (), PROMOTE_SAME, _NUMERIC)
EXP = _unary("exp", np.exp, lambda c, g: (F.mul(g, c.output()),), ("out",))
LOG = _unary("log", np.log, lambda c, g: (F.div(g, c.input(0)),), (0,))
SIN = _unary("sin", np.sin, lambda c, g: (F.mul(g, F.cos(c.input(0))),), (0,))
COS = _unary("cos", np.cos,
             lambda c, g: (F.mul(g, F.neg(F.sin(c.input(0)))),), (0,))
TANH = _unary("tanh", np.tanh, lambda c, g: (F.tanh_backward(g, c.output()),), ("out",))


def _tanh_backward_impl(xp: Any, g: Any, y: Any) -> Any:
    if g.shape != y.shape or y.ndim == 0:  # 0-d: y * y is a numpy scalar, not an out= target
        return g * (1 - y * y)
    out = y * y
    xp.subtract(1, out, out=out)
    return xp.multiply(g, out, out=out)


def _tanh_backward_bwd(c: Any, gg: Any) -> tuple[Any, Any]:
    # d/dg [g (1 - y^2)] = 1 - y^2;  d/dy = -2 g y
    g, y = c.input(0), c.input(1)
    return _grads2(c, F.tanh_backward(gg, y) if c.needs(0) else None,
                   F.mul(F.mul(gg, g), F.mul(y, -2.0)) if c.needs(1) else None)


# PyTorch's tanh_backward: one pass instead of three ops for the most common activation
TANH_BACKWARD = register(Primitive(
    "tanh_backward", impl=_tanh_backward_impl, infer=_elementwise_infer(PROMOTE_SAME),
    backward=_tanh_backward_bwd, saves=(0, 1), promote=PROMOTE_SAME,
    lower=_lower_tanh_backward, elementwise=True, flops=flops_elementwise))
SQRT = _unary("sqrt", np.sqrt,
              lambda c, g: (F.div(g, F.mul(c.output(), 2.0)),), ("out",))
ABS = _unary("abs", np.abs, lambda c, g: (F.mul(g, F.sign(c.input(0))),), (0,),
             PROMOTE_SAME, _NUMERIC)


def _numpy_unary(name: str, fn: np.ufunc, backward: Any, saves: tuple[int | str, ...],
                 promote: str = PROMOTE_FLOAT) -> Primitive:
    """An elementwise primitive numpy computes and the kernel IR has no op for: a plan runs
    it as a numpy step between its kernels (no ``lower``)."""
    return register(Primitive(
        name, impl=_xp_ufunc(fn), infer=_elementwise_infer(promote), backward=backward,
        saves=saves, promote=promote, ufunc=fn, elementwise=True, flops=flops_elementwise))


def _bitwise(name: str, fn: np.ufunc) -> Primitive:
    """An integer bitwise primitive: numpy's ufunc (its shifts give PyTorch's values for
    shifts past the width or negative: 0, or the sign for ``>>``); the kernel IR has no
    bitwise op, so a plan runs it as a numpy step. Bool masks take the logical ops."""
    return register(Primitive(
        name, impl=_xp_ufunc(fn), infer=_elementwise_infer(PROMOTE_SAME), differentiable=False,
        promote=PROMOTE_SAME, ufunc=fn, elementwise=True, flops=flops_elementwise))


BITWISE_AND = _bitwise("bitwise_and", np.bitwise_and)
BITWISE_OR = _bitwise("bitwise_or", np.bitwise_or)
BITWISE_XOR = _bitwise("bitwise_xor", np.bitwise_xor)
BITWISE_LEFT_SHIFT = _bitwise("bitwise_left_shift", np.left_shift)
BITWISE_RIGHT_SHIFT = _bitwise("bitwise_right_shift", np.right_shift)

_LN2, _LN10 = math.log(2.0), math.log(10.0)
LOG1P = _numpy_unary("log1p", np.log1p,
                     lambda c, g: (F.div(g, F.add(c.input(0), 1.0)),), (0,))
EXPM1 = _numpy_unary("expm1", np.expm1,
                     lambda c, g: (F.mul(g, F.add(c.output(), 1.0)),), ("out",))
LOG2 = _numpy_unary("log2", np.log2,
                    lambda c, g: (F.div(g, F.mul(c.input(0), _LN2)),), (0,))
LOG10 = _numpy_unary("log10", np.log10,
                     lambda c, g: (F.div(g, F.mul(c.input(0), _LN10)),), (0,))
TAN = _numpy_unary("tan", np.tan,
                   lambda c, g: (F.mul(g, F.add(F.mul(c.output(), c.output()), 1.0)),),
                   ("out",))
# the inverse and hyperbolic functions, with PyTorch's derivative formulas
ASIN = _numpy_unary("asin", np.arcsin, lambda c, g: (
    F.div(g, F.sqrt(F.sub(1.0, F.mul(c.input(0), c.input(0))))),), (0,))
ACOS = _numpy_unary("acos", np.arccos, lambda c, g: (
    F.neg(F.div(g, F.sqrt(F.sub(1.0, F.mul(c.input(0), c.input(0)))))),), (0,))
ATAN = _numpy_unary("atan", np.arctan, lambda c, g: (
    F.div(g, F.add(F.mul(c.input(0), c.input(0)), 1.0)),), (0,))
SINH = _numpy_unary("sinh", np.sinh, lambda c, g: (F.mul(g, F.cosh(c.input(0))),), (0,))
COSH = _numpy_unary("cosh", np.cosh, lambda c, g: (F.mul(g, F.sinh(c.input(0))),), (0,))
ASINH = _numpy_unary("asinh", np.arcsinh, lambda c, g: (
    F.div(g, F.sqrt(F.add(F.mul(c.input(0), c.input(0)), 1.0))),), (0,))
# acosh: PyTorch's rsqrt(x^2 - 1), with (x - 1)(x + 1) for x^2 - 1 (exact near 1; + 0 makes
# its -0 at -1 a +0): inf at -1 as at 1, finite below (sqrt(x - 1) sqrt(x + 1) was NaN there)
ACOSH = _numpy_unary("acosh", np.arccosh, lambda c, g: (F.div(g, F.sqrt(F.add(
    F.mul(F.sub(c.input(0), 1.0), F.add(c.input(0), 1.0)), 0.0))),), (0,))
ATANH = _numpy_unary("atanh", np.arctanh, lambda c, g: (
    F.div(g, F.sub(1.0, F.mul(c.input(0), c.input(0)))),), (0,))


def _atan2_bwd(c: Any, g: Any) -> tuple[Any, Any]:
    # PyTorch's g b / (a^2 + b^2), -g a / (a^2 + b^2), its 1 / (a^2 + b^2) taken as 0 where
    # a^2 + b^2 is (at (0, 0): signed zeros where 0 / 0 was NaN)
    a, b = c.input(0), c.input(1)
    den = F.add(F.mul(a, a), F.mul(b, b))
    recip = F.where(F.eq(den, 0.0), 0.0, F.div(1.0, den))
    return _grads2(c, F.mul(F.mul(g, b), recip) if c.needs(0) else None,
                   F.mul(F.mul(g, F.neg(a)), recip) if c.needs(1) else None)


def _fmod_bwd(c: Any, g: Any) -> tuple[Any, Any]:
    # PyTorch's formula: d/da = 1, d/db = -trunc(a / b)
    gb = F.neg(F.mul(g, F.trunc(F.div(c.input(0), c.input(1))))) if c.needs(1) else None
    return _grads2(c, g if c.needs(0) else None, gb)


def _numpy_binary(name: str, fn: np.ufunc, backward: Any, saves: tuple[int | str, ...],
                  promote: str) -> Primitive:
    """A binary elementwise primitive numpy computes (no ``lower``: a numpy step in a plan)."""
    return register(Primitive(
        name, impl=_xp_ufunc(fn), infer=_elementwise_infer(promote), backward=backward,
        saves=saves, promote=promote, ufunc=fn, elementwise=True, flops=flops_elementwise))


ATAN2 = _numpy_binary("atan2", np.arctan2, _atan2_bwd, (0, 1), PROMOTE_FLOAT)
# as remainder: an integer fmod by zero is PyTorch's error (numpy's would warn and give 0)
FMOD = register(Primitive(
    "fmod", impl=_int_division_impl("fmod"), infer=_elementwise_infer(PROMOTE_SAME),
    backward=_fmod_bwd, saves=(0, 1), promote=PROMOTE_SAME, elementwise=True,
    flops=flops_elementwise))


def _rounding(name: str, fn: np.ufunc) -> Primitive:
    """floor / ceil / trunc / round (half to even, as PyTorch's): an integer or bool tensor
    is its own result (numpy would make it float64), and the gradient is zero."""
    def impl(xp: Any, x: Any) -> Any:
        return getattr(xp, fn.__name__)(x) if x.dtype.kind == "f" else x.copy()

    return register(Primitive(
        name, impl=impl, infer=_elementwise_infer(PROMOTE_SAME),
        backward=lambda c, g: (F.mul(g, 0.0),), promote=PROMOTE_SAME,
        elementwise=True, flops=flops_elementwise))


FLOOR = _rounding("floor", np.floor)
CEIL = _rounding("ceil", np.ceil)
TRUNC = _rounding("trunc", np.trunc)
ROUND = _rounding("round", np.rint)


def _sign(xp: Any, x: Any) -> Any:
    """PyTorch's (0 < x) - (x < 0): a NaN's sign is 0 (numpy's is NaN)."""
    if x.dtype.kind != "f":
        return xp.sign(x)
    return xp.subtract(x > 0, x < 0, dtype=x.dtype)


SIGN = register(Primitive("sign", impl=_sign, infer=_elementwise_infer(PROMOTE_SAME),
                          backward=lambda c, g: (F.mul(g, 0.0),),  # PyTorch: zero gradient
                          promote=PROMOTE_SAME, lower=_lower_unary("sign"),
                          lower_dtypes=_NUMERIC, elementwise=True, flops=flops_elementwise))


def _erf(xp: Any) -> Any:
    if xp is np:
        from .special import erf

        return erf
    from cupyx.scipy.special import erf  # type: ignore[import-not-found]

    return erf


_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
ERF = _unary("erf", _erf, lambda c, g: (
    F.mul(g, F.mul(F.exp(F.neg(F.mul(c.input(0), c.input(0)))), _TWO_OVER_SQRT_PI)),), (0,))


def _erfc_impl(xp: Any, x: Any) -> Any:
    from .special import erfc

    return erfc(xp, x)


# erfc: its own primitive, as 1 - erf(x) cancels to 0 past x = 6 (PyTorch's log_ndtr and
# Gaussian tails need erfc(x) ~ 1e-16 and below); not lowered: a fused kernel calls it apart
ERFC = register(Primitive(
    "erfc", impl=_erfc_impl, infer=_elementwise_infer(PROMOTE_FLOAT),
    backward=lambda c, g: (F.mul(g, F.mul(F.exp(F.neg(F.mul(c.input(0), c.input(0)))),
                                          -_TWO_OVER_SQRT_PI)),),
    saves=(0,), promote=PROMOTE_FLOAT, elementwise=True, flops=flops_elementwise))


def _where_bwd(c: Any, g: Any) -> tuple[Any, Any, Any]:
    cond = c.input(0)
    ga = F.where(cond, g, 0.0) if c.needs(1) else None
    gb = F.where(cond, 0.0, g) if c.needs(2) else None
    return (None,
            F.sum_to(ga, c.shape(1)) if ga is not None else None,
            F.sum_to(gb, c.shape(2)) if gb is not None else None)


def _where_impl(xp: Any, cond: Any, a: Any, b: Any) -> Any:
    if cond.dtype != np.bool_:
        raise TypeError(f"where expected condition to be a bool tensor, got {cond.dtype}")
    da, db = getattr(a, "dtype", None), getattr(b, "dtype", None)
    if da is None and db is None:
        dt = D.default_float.np if isinstance(a, float) or isinstance(b, float) else np.dtype(
            np.int64)
    elif da is db:  # the common case (the dispatcher promoted them): no numpy call
        dt = da
    else:
        # from dtypes, not arrays: numpy's result_type refuses device arrays
        dt = np.result_type(a if da is None else da, b if db is None else db)
    if xp is np and dt in _SAME_SIZE_INTS and cond.size >= 1024 and _fills(cond.shape, a, b):
        return _where_bits(cond, a, b, dt)
    return xp.where(cond, a, b).astype(dt, copy=False)


def _fills(shape: tuple[int, ...], a: Any, b: Any) -> bool:
    """Whether ``shape`` is the broadcast shape of itself, ``a`` and ``b`` (their result's):
    without numpy's broadcast_shapes (costlier than a small where) where each is a scalar or
    of that very shape."""
    sa, sb = getattr(a, "shape", ()), getattr(b, "shape", ())
    if (not sa or sa == shape) and (not sb or sb == shape):
        return True
    return np.broadcast_shapes(shape, sa, sb) == shape


# a float dtype's bits as the signed integers of its size
_SAME_SIZE_INTS = {np.dtype(f): np.dtype(i) for f, i in
                   (("float16", "int16"), ("float32", "int32"), ("float64", "int64"))}


def _where_bits(cond: np.ndarray, a: Any, b: Any, dt: np.dtype) -> np.ndarray:
    """where(cond, a, b) for a float ``dt`` and a cond of the result's shape, as a select of
    the values' bits by a mask of all ones where cond holds: exact as numpy's where (a -0,
    a NaN and an inf kept as they are) without its branch per element, slow on the random
    masks of ReLU and friends. A scalar +0 (relu's where(x <= 0, 0, x)) is the mask alone."""
    it = _SAME_SIZE_INTS[dt]
    if _is_plus_zero(a):  # ones where cond does not hold: b's bits there, +0 elsewhere
        m = np.subtract(cond, 1, dtype=it)
        return np.bitwise_and(m, _bits(b, dt, it), out=m).view(dt)
    m = np.negative(cond, dtype=it)
    if _is_plus_zero(b):
        return np.bitwise_and(m, _bits(a, dt, it), out=m).view(dt)
    out = np.bitwise_and(m, _bits(a, dt, it))
    np.invert(m, out=m)
    np.bitwise_and(m, _bits(b, dt, it), out=m)
    return np.bitwise_or(out, m, out=out).view(dt)


def _is_plus_zero(v: Any) -> bool:
    return type(v) in (int, float) and v == 0 and math.copysign(1.0, v) > 0


def _bits(v: Any, dt: np.dtype, it: np.dtype) -> np.ndarray:
    """An array or scalar's values in ``dt``, viewed as the integers ``it`` of their bits."""
    return np.asarray(v, dt).view(it)


_where_broadcast_infer = _elementwise_infer(PROMOTE_SAME, (1, 2))


def _where_infer(cond: Any, a: Any, b: Any) -> tuple[tuple[int, ...], D.DType]:
    # the impl's check, from dtypes alone: a captured step raises it as eager does
    if isinstance(cond, Meta) and cond.dtype is not D.bool_:
        raise TypeError(f"where expected condition to be a bool tensor, got {cond.dtype.name}")
    return _where_broadcast_infer(cond, a, b)


def _where_fast(arg_metas: ArgMetas, attrs: Attrs, out_meta: OutMeta) -> FastPath:
    """_where_impl with its dtype, shape and masking decisions made from the metas."""
    if len(arg_metas) != 3 or not out_meta[0]:
        return None
    cm, am, b = arg_metas
    if not is_array_meta(cm) or cm[1] != np.bool_:
        return None
    a_array, b_array = is_array_meta(am), is_array_meta(b)
    if not (a_array or b_array):
        return None
    try:
        dt = np.result_type(np.zeros(1, am[1]) if a_array else am,
                            np.zeros(1, b[1]) if b_array else b)
        shape = np.broadcast_shapes(cm[0], am[0] if a_array else (), b[0] if b_array else ())
    except (TypeError, ValueError):
        return None  # the impl raises: let it
    if dt != out_meta[1] or tuple(shape) != tuple(out_meta[0]):
        return None
    if dt in _SAME_SIZE_INTS and math.prod(cm[0]) >= 1024 and tuple(cm[0]) == tuple(shape):
        return lambda cond, a, b: _where_bits(cond, a, b, dt)
    return lambda cond, a, b: np.where(cond, a, b).astype(dt, copy=False)


WHERE = register(Primitive(
    "where", impl=_where_impl, infer=_where_infer,
    backward=_where_bwd, saves=(0,), promote=PROMOTE_SAME, promote_args=(1, 2),
    lower=_lower_where, elementwise=True, flops=flops_elementwise, specializer=_where_fast))


def _cast_infer(x: Meta, *, dtype: D.DType) -> tuple[tuple[int, ...], D.DType]:
    return x.shape, dtype


def _cast_impl(xp: Any, x: Any, *, dtype: D.DType) -> Any:
    return cast_values(x, dtype.np)


def cast_values(x: Any, dtype: np.dtype) -> Any:
    """An array's values in ``dtype`` as PyTorch converts them: a float to uint8 through
    int64, as c10's static_cast_with_inter_type (C++ leaves a negative float to unsigned
    undefined): -2147483649. is 255, where numpy's route through int32 gave 0; NaN and inf
    to integers silent (PyTorch's values)."""
    if x.dtype.kind != "f" or dtype.kind == "f":
        return x.astype(dtype)
    with np.errstate(invalid="ignore"):
        if dtype == np.uint8:
            return x.astype(np.int64).astype(np.uint8)
        return x.astype(dtype)


def _cast_fast(arg_metas: ArgMetas, attrs: Attrs, out_meta: OutMeta) -> FastPath:
    """``x.astype(dtype)`` itself where cast_values makes that call and nothing else (not a
    float to an integer: numpy's warning silenced, uint8 through int64): a replay's cast of
    its float64 learning rate to float32 went through the impl and a check of its result
    (5,400 instructions of mlp_small's step). astype gives an ndarray, 0-d included."""
    if len(arg_metas) != 1 or not is_array_meta(arg_metas[0]):
        return None
    source, target = arg_metas[0][1], np.dtype(attrs["dtype"].np)
    if (source.kind == "f" and target.kind != "f") or target != out_meta[1]:
        return None
    return operator.methodcaller("astype", target)


CAST = register(Primitive(
    "cast", impl=_cast_impl, infer=_cast_infer,
    backward=lambda c, g: (F.cast(g, c.dtype(0)),), attrs=("dtype",), lower=_lower_cast,
    elementwise=True, flops=flops_none, node_name="ToCopyBackward0", specializer=_cast_fast))


def _clamp_bwd(c: Any, g: Any) -> tuple[Any]:
    x, lo, hi = c.input(0), c.attrs["min"], c.attrs["max"]
    mask = None
    if lo is not None:
        mask = F.ge(x, lo)
    if hi is not None:
        m = F.le(x, hi)
        mask = m if mask is None else F.logical_and(mask, m)
    return (g if mask is None else F.where(mask, g, 0.0),)


def _clamp(xp: Any, x: Any, *, min: Any, max: Any) -> Any:  # noqa: A002 - PyTorch's names
    if min is None and max is None:
        return x.copy()
    if x.dtype.kind != "f":
        return xp.clip(x, min, max)
    # x itself where it equals a bound, as PyTorch's: clamp(-0., min=0.) is -0. (numpy's clip
    # gives the bound)
    out = x if min is None else xp.maximum(min, x)
    return out if max is None else xp.minimum(max, out)


CLAMP = register(Primitive(
    "clamp", impl=_clamp,
    infer=lambda x, *, min, max: (x.shape, x.dtype), backward=_clamp_bwd, saves=(0,),
    attrs=("min", "max"), elementwise=True, flops=flops_elementwise,
    node_name="ClampBackward1"))

CLONE = register(Primitive(
    "clone", impl=lambda xp, x: x.copy(), infer=lambda x: (x.shape, x.dtype),
    backward=lambda c, g: (g,), elementwise=True, flops=flops_none))

FILL = register(Primitive(
    "fill", impl=lambda xp, x, *, value: xp.full(x.shape, value, dtype=x.dtype),
    infer=lambda x, *, value: (x.shape, x.dtype), backward=lambda c, g: (F.zeros_like(g),),
    attrs=("value",), flops=flops_none))


def _copy_impl(xp: Any, x: Any, src: Any) -> Any:
    out = xp.empty_like(x)
    out[...] = cast_values(src, out.dtype) if hasattr(src, "dtype") else src
    return out


COPY = register(Primitive(
    "copy", impl=_copy_impl, infer=lambda x, src: (x.shape, x.dtype),
    backward=lambda c, g: (F.zeros_like(g) if c.needs(0) else None,
                           F.sum_to(F.cast(g, c.dtype(1)), c.shape(1)) if c.needs(1) else None),
    flops=flops_none, node_name="CopyBackwards"))


def _to_device_impl(xp: Any, x: Any, *, device: str) -> Any:
    from .._device import move_array

    return move_array(x, device)


TO_DEVICE = register(Primitive(
    "to_device", impl=_to_device_impl, infer=lambda x, *, device: (x.shape, x.dtype),
    backward=lambda c, g: (F.to_device(g, c.metas[0].device),), attrs=("device",),
    transfer=True, flops=flops_none))

# --- lerp: PyTorch's CPU kernel, rounded once ----------------------------------------------
# PyTorch computes lerp as fma(weight, end - start, start) for |weight| < 0.5, else
# fma(weight - 1, end - start, end), a fused multiply-add (one rounding) in the opmath type
# (float for half and bfloat16); numpy has no fma, so it is emulated exactly below.


def _two_sum(a: Any, b: Any) -> tuple[Any, Any]:
    """a + b rounded, and its rounding error (exact: Knuth's TwoSum)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _rounded_to_odd(xp: Any, s: Any, e: Any) -> Any:
    """The exact sum s + e (s its rounding) rounded to odd: s moved one ulp toward e where
    the sum was inexact and s's last bit is even (a step of its bits: +1 is away from 0)."""
    it = np.int64 if s.dtype == np.float64 else np.int32
    bits = xp.asarray(s).view(it)
    step = xp.where((e > 0) == (s > 0), 1, -1).astype(it)
    inexact = (e != 0) & ((bits & 1) == 0) & xp.isfinite(s)
    moved = bits + xp.where(inexact, step, 0).astype(it)
    return moved.view(s.dtype)


def _split(a: Any) -> tuple[Any, Any]:
    """a as a high and a low half of 26 bits each (Veltkamp)."""
    t = a * 134217729.0  # 2**27 + 1
    h = t - (t - a)
    return h, a - h


def _fma(xp: Any, a: Any, b: Any, c: Any) -> Any:
    """a * b + c rounded once, for float32 or float64 operands. float32: the product is exact
    in float64 and the sum rounded to odd there, so rounding it to float32 is the one
    rounding; float64: Boldo and Melquiond's emulated FMA (exact product, TwoSum, a sum
    rounded to odd). Where that overflows, the plain a * b + c. On the host the machine's
    own fma does it where it can (codegen.windows.fma: 16 times as fast on 1M float32), on a
    GPU CUDA's (a CuPy elementwise kernel)."""
    if xp is np and type(a) is np.ndarray and type(b) is np.ndarray and type(c) is np.ndarray:
        windows = generated_windows(c.dtype)
        if windows is not None:
            out = windows.fma(a, b, c)
            if out is not None:
                return out
    elif xp is not np:
        kernel = _device_fma(xp)
        if kernel is not None:
            return kernel(a, b, c)
    quiet = _quiet.current()  # np.errstate's cost (3 us) was most of a small update's
    try:
        _quiet.ignore()
        if c.dtype == np.float32:
            return _fma32(xp, a, b, c)
        uh = a * b
        ah, al = _split(a)
        bh, bl = _split(b)
        ul = ((ah * bh - uh) + ah * bl + al * bh) + al * bl
        th, tl = _two_sum(c, uh)
        v = _rounded_to_odd(xp, *_two_sum(tl, ul))
        z = xp.where(v == 0, th, th + v)  # an exact sum keeps its zero's sign
        # an infinite c with a finite product stays c (a*b may overflow where fma's does not)
        plain = xp.where(xp.isinf(c) & xp.isfinite(a) & xp.isfinite(b), c, uh + c)
        z = xp.where(xp.isfinite(z), z, plain)
        if xp is np:
            z = _fma_tiny_products(a, b, c, uh, z)
        return z
    finally:
        _quiet.restore(quiet)


# a float64 sum whose 29 bits below float32's mantissa are this pattern lies halfway between
# two float32 numbers: rounding it again may round twice; below float32's smallest normal,
# fewer of its bits are float32's
_HALFWAY, _LOW_BITS = 1 << 28, (1 << 29) - 1
_F32_TINY = float(np.finfo(np.float32).tiny)


def _fma32(xp: Any, a: Any, b: Any, c: Any) -> Any:
    """``_fma`` of float32 arrays: the product is exact in float64 and the sum rounded there
    once, so rounding it to float32 is the one rounding, except where the float64 sum lies
    exactly halfway between two float32 numbers or below float32's normal range (rare): there
    the sum is rounded to odd first (a few passes over the arrays, where rounding every sum to
    odd took 24 times what numpy's own multiply and add do)."""
    p = a.astype(np.float64) * b.astype(np.float64)
    c64 = c.astype(np.float64)
    s = xp.asarray(p + c64)  # an array where 0-d operands give a numpy scalar
    bits = s.view(np.int64)
    doubtful = ((bits & _LOW_BITS) == _HALFWAY) | (xp.abs(s) < _F32_TINY)
    if xp is not np:  # no branch on device values: no host sync (a CUDA graph captures this)
        p, c64 = xp.broadcast_to(p, s.shape), xp.broadcast_to(c64, s.shape)
        s = xp.where(doubtful, _rounded_to_odd(xp, *_two_sum(p, c64)), s)
    elif doubtful.any():
        p, c64 = xp.broadcast_to(p, s.shape), xp.broadcast_to(c64, s.shape)
        s = s.copy()
        s[doubtful] = _rounded_to_odd(xp, *_two_sum(p[doubtful], c64[doubtful]))
    return s.astype(np.float32)


_device_fmas: dict[int, Any] = {}


def _device_fma(xp: Any) -> Any:
    """A device module's fused multiply-add of arrays of one float dtype (broadcast), or
    None where it has no elementwise kernels to build one with (the fake CuPy of the tests:
    the emulation runs there)."""
    found = _device_fmas.get(id(xp))
    if found is None and id(xp) not in _device_fmas:
        make = getattr(xp, "ElementwiseKernel", None)
        # CUDA's fma is overloaded for float and double: one rounding, as the CPU's
        found = None if make is None else make("T a, T b, T c", "T out",
                                               "out = fma(a, b, c)", "backplan_fma")
        _device_fmas[id(xp)] = found
    return found


_TINY_PRODUCT = 2.0 ** -969  # below it, a float64 product's rounding error underflows
# from it on, Veltkamp's split of an operand (times 2**27 + 1) overflows
_HUGE_OPERAND = 2.0 ** 996


def _fma_tiny_products(a: Any, b: Any, c: Any, uh: Any, z: Any) -> Any:
    """z with its elements whose product is nonzero and below _TINY_PRODUCT, or that have an
    operand of _HUGE_OPERAND or more (where the emulation's exact product is not exact),
    computed exactly, as fractions (rare: subnormal and near-overflow ranges); an exact zero
    keeps z's sign."""
    tiny = ((uh != 0) & (np.abs(uh) < _TINY_PRODUCT)) | ((uh == 0) & (a != 0) & (b != 0))
    huge = ((np.abs(a) >= _HUGE_OPERAND) | (np.abs(b) >= _HUGE_OPERAND)) \
        & np.isfinite(a) & np.isfinite(b)
    tiny = (tiny | huge) & np.isfinite(c)
    if not tiny.any():
        return z
    a, b, c = np.broadcast_arrays(a, b, c)
    z = np.array(z, dtype=np.float64)
    for i in zip(*np.nonzero(np.broadcast_to(tiny, z.shape))):
        exact = Fraction(float(a[i])) * Fraction(float(b[i])) + Fraction(float(c[i]))
        if exact:
            try:
                z[i] = exact.numerator / exact.denominator  # int division: rounded once
            except OverflowError:  # beyond float64's range: rounds to an infinity
                z[i] = math.inf if exact > 0 else -math.inf
    return z


def _lerp_values(xp: Any, start: Any, end: Any, weight: Any) -> Any:
    """PyTorch's lerp kernel on arrays of one float dtype (weight: an array of it, or a
    number); half in float32, rounded once at the end."""
    dt = start.dtype
    op = np.dtype(np.float64) if dt == np.float64 else np.dtype(np.float32)
    start, end = xp.asarray(start, op), xp.asarray(end, op)
    if isinstance(weight, (int, float)):  # a number: its formula chosen once
        w = op.type(weight)
        small = abs(w) < 0.5
        coeff, base = (w, start) if small else (w - op.type(1), end)
        out = _fma(xp, xp.asarray(coeff), end - start, base)
        return out.astype(dt, copy=False)
    w = xp.asarray(weight, op)
    small = xp.abs(w) < 0.5
    coeff = xp.where(small, w, w - op.type(1))
    base = xp.where(small, start, end)
    out = _fma(xp, xp.asarray(coeff, op), end - start, xp.asarray(base, op))
    return out.astype(dt, copy=False)


def _first_dtype_infer(*metas: Any, **attrs: Any) -> tuple[tuple[int, ...], D.DType]:
    """The broadcast shape, and the first argument's dtype (its arguments share it)."""
    return broadcast_shapes(*(m.shape for m in _tensor_metas(metas))), metas[0].dtype


def _lerp_bwd(c: Any, g: Any) -> tuple[Any, Any]:
    """PyTorch's: start gets grad * (1 - weight), end grad * weight (weight a number)."""
    w = c.attrs["weight"]
    return _grads2(c, F.mul(g, 1 - w) if c.needs(0) else None,
                   F.mul(g, w) if c.needs(1) else None)


def _lerp_tensor_bwd(c: Any, g: Any) -> tuple[Any, Any, Any]:
    """As _lerp_bwd, and weight gets grad * (end - start)."""
    w = c.input(2)
    gs = F.mul(g, F.sub(1, w)) if c.needs(0) else None
    ge = F.mul(g, w) if c.needs(1) else None
    gw = F.mul(g, F.sub(c.input(1), c.input(0))) if c.needs(2) else None
    return (*_grads2(c, gs, ge), _summed_to(gw, c.shape(2)) if gw is not None else None)


# The fused multiply-adds below lower to the kernel IR's Fma, rounded once in a kernel as in
# eager mode (a bfloat16 result computes in float32 and rounds once when stored, as eager's)


def _lower_lerp(kb: KernelBuilder, args: list[LowerArg], attrs: dict[str, Any],
                dtype: str) -> int:
    """PyTorch's lerp with a number weight: its formula chosen once, the weight and w - 1
    rounded to ``dtype`` as the kernel's opmath rounds them."""
    start, end = (_operand(kb, a, dtype) for a in args)
    w = np.dtype(dtype).type(attrs["weight"])
    small = abs(w) < 0.5
    coeff, base = (w, start) if small else (w - np.dtype(dtype).type(1), end)
    return kb.fma(kb.const(coeff, dtype), kb.binary("sub", end, start, dtype), base, dtype)


def _lower_lerp_tensor(kb: KernelBuilder, args: list[LowerArg], attrs: dict[str, Any],
                       dtype: str) -> int:
    start, end, w = (_operand(kb, a, dtype) for a in args)
    small = kb.binary("lt", kb.unary("abs", w, dtype), kb.const(0.5, dtype), "bool")
    coeff = kb.where(small, w, kb.binary("sub", w, kb.const(1.0, dtype), dtype), dtype)
    base = kb.where(small, start, end, dtype)
    return kb.fma(coeff, kb.binary("sub", end, start, dtype), base, dtype)


def _lower_addcmul(kb: KernelBuilder, args: list[LowerArg], attrs: dict[str, Any],
                   dtype: str) -> int:
    """fma(value * t1, t2, input), PyTorch's kernel: the product by value rounded first."""
    x, t1, t2 = (_operand(kb, a, dtype) for a in args)
    scaled = kb.binary("mul", t1, kb.const(np.dtype(dtype).type(attrs["value"]), dtype), dtype)
    return kb.fma(scaled, t2, x, dtype)


def _lower_scaled_sum(sign: int) -> Any:
    def lower(kb: KernelBuilder, args: list[LowerArg], attrs: dict[str, Any],
              dtype: str) -> int:
        x, other = (_operand(kb, a, dtype) for a in args)
        alpha = kb.const(np.dtype(dtype).type(sign * attrs["alpha"]), dtype)
        return kb.fma(alpha, other, x, dtype)

    return lower


LERP = register(Primitive(
    "lerp", impl=lambda xp, start, end, *, weight: _lerp_values(xp, start, end, weight),
    infer=_first_dtype_infer, backward=_lerp_bwd, attrs=("weight",), promote=PROMOTE_SAME,
    elementwise=True, lower=_lower_lerp, lower_dtypes=_FLOATS,
    flops=flops_elementwise, node_name="LerpBackward0"))
LERP_TENSOR = register(Primitive(
    "lerp_tensor", impl=_lerp_values, infer=_first_dtype_infer, backward=_lerp_tensor_bwd,
    saves=(0, 1, 2), promote=PROMOTE_SAME, elementwise=True, flops=flops_elementwise,
    lower=_lower_lerp_tensor, lower_dtypes=_FLOATS, node_name="LerpBackward1"))

def _addcmul_values(xp: Any, input: Any, t1: Any, t2: Any, *, value: Any) -> Any:  # noqa: A002
    """PyTorch's addcmul kernel on arrays of one float dtype: fma(value * t1, t2, input),
    half in float32, rounded once at the end."""
    dt = input.dtype
    op = np.dtype(np.float64) if dt == np.float64 else np.dtype(np.float32)
    t1, t2 = xp.asarray(t1, op), xp.asarray(t2, op)
    if value in (1, -1):  # exact on either factor: on the smaller (a captured lr's 0-d)
        if t1.size < t2.size:
            t1, t2 = t2, t1
        scaled, t2 = t1, t2 if value == 1 else -t2
    else:
        scaled = t1 * op.type(value)
    out = _fma(xp, xp.asarray(scaled, op), xp.asarray(t2, op), xp.asarray(input, op))
    return out.astype(dt, copy=False)


def _addcmul_bwd(c: Any, g: Any) -> tuple[Any, Any, Any]:
    """PyTorch's: input gets grad, tensor1 grad * tensor2 * value, tensor2 grad * tensor1 *
    value."""
    v = c.attrs["value"]
    g1 = F.mul(g, F.mul(c.input(2), v)) if c.needs(1) else None
    g2 = F.mul(g, F.mul(c.input(1), v)) if c.needs(2) else None
    return (_summed_to(g, c.shape(0)) if c.needs(0) else None,
            _summed_to(g1, c.shape(1)) if g1 is not None else None,
            _summed_to(g2, c.shape(2)) if g2 is not None else None)


ADDCMUL = register(Primitive(
    "addcmul", impl=_addcmul_values,
    infer=_first_dtype_infer, backward=_addcmul_bwd, saves=(1, 2), attrs=("value",),
    promote=PROMOTE_SAME, elementwise=True, lower=_lower_addcmul, lower_dtypes=_FLOATS,
    flops=flops_elementwise))

def _scaled_sum(sign: int) -> Callable[..., Any]:
    """add's (sign 1) or sub's (-1) impl with an alpha: PyTorch's kernel, input + alpha *
    other rounded once (fma), half in float32 (alpha already in the tensors' dtype)."""

    def impl(xp: Any, input: Any, other: Any, *, alpha: Any) -> Any:  # noqa: A002
        dt = input.dtype
        op = np.dtype(np.float64) if dt == np.float64 else np.dtype(np.float32)
        a = xp.asarray(op.type(sign * alpha))
        out = _fma(xp, a, xp.asarray(other, op), xp.asarray(input, op))
        return out.astype(dt, copy=False)

    return impl


def _scaled_sum_bwd(sign: int) -> Callable[..., tuple[Any, Any]]:
    def backward(c: Any, g: Any) -> tuple[Any, Any]:
        """PyTorch's: input gets grad, other grad * alpha (sub: -grad * alpha)."""
        alpha = c.attrs["alpha"]
        return _grads2(c, g, F.mul(F.neg(g) if sign < 0 else g, alpha) if c.needs(1) else None)

    return backward


ADD_SCALED = register(Primitive(
    "add_scaled", impl=_scaled_sum(1), infer=_first_dtype_infer, backward=_scaled_sum_bwd(1),
    attrs=("alpha",), promote=PROMOTE_SAME, elementwise=True, flops=flops_elementwise,
    lower=_lower_scaled_sum(1), lower_dtypes=_FLOATS, node_name="AddBackward0"))
SUB_SCALED = register(Primitive(
    "sub_scaled", impl=_scaled_sum(-1), infer=_first_dtype_infer, backward=_scaled_sum_bwd(-1),
    attrs=("alpha",), promote=PROMOTE_SAME, elementwise=True, flops=flops_elementwise,
    lower=_lower_scaled_sum(-1), lower_dtypes=_FLOATS, node_name="SubBackward0"))

# --- reductions ----------------------------------------------------------------------------


def _reduce_infer(x: Meta, *, axes: tuple[int, ...], keepdim: bool) -> tuple[Any, D.DType]:
    dt = D.int64 if not x.dtype.is_floating_point else x.dtype  # PyTorch's integer sums
    return _reduce_shape(x.shape, axes, keepdim), dt


def _int64_unless_float(dt: np.dtype) -> np.dtype:
    """The dtype PyTorch sums and multiplies ``dt`` in: integers and bools in int64."""
    return dt if dt.kind == "f" else np.dtype(np.int64)


def _keepdim_grad(c: Any, g: Any) -> Any:
    """g reshaped so it broadcasts against the reduced input."""
    if c.attrs["keepdim"]:
        return g
    return F.reshape(g, _reduce_shape(c.shape(0), c.attrs["axes"], True))


def _reduce_fast(ufunc: np.ufunc, floats_only: bool, non_empty: bool) -> Specializer:
    """ufunc.reduce(x, axis, keepdims=): what np.sum / np.amax of a plain ndarray call
    (numpy's _wrapreduction), where the probe shows the planned dtype."""
    reduce = ufunc.reduce

    def specialize(arg_metas: ArgMetas, attrs: Attrs, out_meta: OutMeta) -> FastPath:
        if len(arg_metas) != 1 or not is_array_meta(arg_metas[0]):
            return None
        if floats_only and out_meta[1].kind != "f":
            return None
        if non_empty and not math.prod(arg_metas[0][0]):
            return None  # no identity: the impl raises, let it
        axes, keep = attrs["axes"], attrs["keepdim"]
        if not probe_ok(reduce, arg_metas, out_meta, axis=axes, keepdims=keep):
            return None
        return lambda x: reduce(x, axes, keepdims=keep)

    return specialize


_sum_fast = _reduce_fast(np.add, floats_only=True, non_empty=False)


def _sum_specializer(arg_metas: ArgMetas, attrs: Attrs, out_meta: OutMeta) -> FastPath:
    """A float sum over one axis with two or more elements after it (max pooling's sum over
    a window's taps): generated code (``codegen.windows.axis_summer``: numpy's order and
    bits) on a C-contiguous array, numpy's reduce on any other; else numpy's reduce."""
    if out_meta[1] == np.float16:
        return None  # accumulated in float32 (_sum_impl)
    fast = _sum_fast(arg_metas, attrs, out_meta)
    axes, keep = attrs["axes"], attrs["keepdim"]
    if fast is None or len(axes) != 1:
        return fast
    shape, dtype = arg_metas[0]
    axis = axes[0] % len(shape)
    windows = generated_windows(dtype)
    if windows is None or not all(shape) or math.prod(shape[axis + 1:]) < 2 \
            or dtype != out_meta[1]:
        return fast
    native = windows.axis_summer(tuple(shape), axis, dtype, keep)

    def run(x: Any) -> Any:
        return native(x) if x.flags.c_contiguous else fast(x)

    run.native = getattr(native, "native", None)  # type: ignore[attr-defined]
    return run


try:  # numpy 2's floating-point error state (np.errstate's): a context variable, set directly
    # by quietly (np.errstate costs 1.5 to 4 us a call here, more than a small sum)
    from numpy._core._ufunc_config import _extobj_contextvar as _FP_STATE
    with np.errstate(all="ignore"):
        _FP_IGNORED = _FP_STATE.get()
except ImportError:  # another numpy: np.errstate itself
    _FP_STATE = None


def quietly(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` with numpy's floating-point warnings off in this thread and
    context only (inf + -inf, 0 / 0 in a reduction: PyTorch is silent), the user's own
    numpy calls warning as ever (a warnings filter on numpy's modules hid those too)."""
    if _FP_STATE is None:
        with np.errstate(all="ignore"):
            return fn(*args, **kwargs)
    token = _FP_STATE.set(_FP_IGNORED)
    try:
        return fn(*args, **kwargs)
    finally:
        _FP_STATE.reset(token)


def _sum_impl(xp: Any, x: Any, *, axes: tuple[int, ...], keepdim: bool) -> Any:
    """numpy's sum, integers and bools in int64, float16 in float32 (PyTorch's CPU kernels
    accumulate half in float, where numpy adds in float16: a (64, 48) column sum differed
    from PyTorch's in 38 of its 48 values), rounded once; silent (quietly)."""
    if xp is not np:
        return _sum_of(xp.sum, x, axes, keepdim)
    return quietly(_sum_of, np.add.reduce, x, axes, keepdim)


def _sum_of(total: Callable[..., Any], x: Any, axes: tuple[int, ...], keepdim: bool) -> Any:
    if x.dtype == np.float16:
        return total(x, axis=axes, keepdims=keepdim, dtype=np.float32).astype(np.float16)
    return total(x, axis=axes, keepdims=keepdim, dtype=_int64_unless_float(x.dtype))


SUM = register(Primitive(
    "sum", impl=_sum_impl,
    infer=_reduce_infer,
    backward=lambda c, g: (F.expand(_keepdim_grad(c, g), c.shape(0)),),
    attrs=("axes", "keepdim"), reduction=True, flops=flops_reduce,
    specializer=_sum_specializer))


def _mean_bwd(c: Any, g: Any) -> tuple[Any]:
    n = 1
    for a in c.attrs["axes"]:
        n *= c.shape(0)[a]
    g = _keepdim_grad(c, g)
    # n == 0: the input is empty, and so is its gradient (no division by zero to warn of)
    return (F.expand(F.div(g, float(n)) if n else g, c.shape(0)),)


_MEAN_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _mean_fast(arg_metas: ArgMetas, attrs: Attrs, out_meta: OutMeta) -> FastPath:
    """numpy 2's np.mean (numpy/_core/_methods.py ``_mean``) of a float32/float64 array over
    a nonzero count: the sum, then a division by the count, without its argument handling."""
    if not VALUE_FREE_DTYPES or len(arg_metas) != 1 or not is_array_meta(arg_metas[0]):
        return None
    shape, dtype = arg_metas[0]
    axes, keep = attrs["axes"], attrs["keepdim"]
    count = math.prod(shape[a % len(shape)] for a in axes) if shape else 1
    if dtype not in _MEAN_DTYPES or not count or dtype != out_meta[1]:
        return None
    n, scalar, reduce = np.intp(count), dtype.type, np.add.reduce

    def mean(x: np.ndarray) -> np.ndarray:
        ret = reduce(x, axes, None, None, keep, where=True)
        if isinstance(ret, np.ndarray):
            return np.true_divide(ret, n, out=ret, casting="unsafe", subok=False)
        return np.asarray(scalar(ret / n))  # numpy's 0-d mean is a scalar: the plan's an array

    return mean


def _mean_impl(xp: Any, x: Any, *, axes: tuple[int, ...], keepdim: bool) -> Any:
    """numpy's mean (numpy/_core/_methods.py ``_mean``: float16 summed in float32, the sum
    divided by the count) from its ufuncs, quietly: the mean of nothing is NaN without
    numpy's "Mean of empty slice" warning, as PyTorch's."""
    if xp is not np:
        return xp.mean(x, axis=axes, keepdims=keepdim)
    return quietly(_np_mean, x, axes, keepdim)


def _np_mean(x: Any, axes: tuple[int, ...], keepdim: bool) -> Any:
    half = x.dtype == np.float16
    total = np.add.reduce(x, axis=axes, dtype=np.float32 if half else None, keepdims=keepdim)
    n = np.intp(math.prod(x.shape[a] for a in axes))  # numpy's count: an exact division by it
    if isinstance(total, np.ndarray):
        mean = np.true_divide(total, n, out=total, casting="unsafe")
    else:
        mean = total.dtype.type(total / n)
    return np.asarray(mean, dtype=x.dtype)


MEAN = register(Primitive(
    "mean", impl=_mean_impl,
    infer=lambda x, *, axes, keepdim: (_reduce_shape(x.shape, axes, keepdim), x.dtype),
    backward=_mean_bwd, promote=PROMOTE_FLOAT, attrs=("axes", "keepdim"), reduction=True,
    flops=flops_reduce, specializer=_mean_fast))


def _amax_bwd(c: Any, g: Any) -> tuple[Any]:
    x, out = c.input(0), c.output()
    axes = c.attrs["axes"]
    if not c.attrs["keepdim"]:
        out = F.reshape(out, _reduce_shape(c.shape(0), axes, True))
    mask = F.cast(F.eq(x, out), g.dtype)
    count = F.sum(mask, axes, keepdim=True)  # ties share the gradient evenly
    return (F.mul(F.div(mask, count), _keepdim_grad(c, g)),)


def _amax_impl(xp: Any, x: Any, *, axes: tuple[int, ...], keepdim: bool) -> Any:
    # an empty reduced axis has no maximum: functional.amax raises PyTorch's error first
    return xp.amax(x, axis=axes, keepdims=keepdim)


AMAX = register(Primitive(
    "amax", impl=_amax_impl,
    infer=lambda x, *, axes, keepdim: (_reduce_shape(x.shape, axes, keepdim), x.dtype),
    backward=_amax_bwd, saves=(0, "out"), attrs=("axes", "keepdim"), reduction=True,
    flops=flops_reduce, specializer=_reduce_fast(np.maximum, floats_only=False, non_empty=True)))


def _arg_infer(x: Meta, *, axis: int | None, keepdim: bool) -> tuple[Any, D.DType]:
    if axis is None or not x.shape:
        return ((1,) * len(x.shape) if keepdim else ()), D.int64
    return _reduce_shape(x.shape, (axis,), keepdim), D.int64


def _arg_impl(fn: str) -> Any:
    def impl(xp: Any, x: Any, *, axis: int | None, keepdim: bool) -> Any:
        # over an empty axis: functional.argmax/argmin raise PyTorch's error first
        if x.ndim == 0:
            axis = None
        return getattr(xp, fn)(x, axis=axis, keepdims=keepdim).astype(np.int64, copy=False)

    return impl


def _arg_specializer(fn: str) -> Any:
    """A compiled plan's argmax/argmin of a float array along an axis: generated code
    (``codegen.windows.arg_reducer``), numpy's indices, NaN rule included."""

    def specialize(arg_metas: Any, attrs: Any, out_meta: Any) -> Any:
        (shape, dtype), = arg_metas
        axis = attrs["axis"]
        windows = generated_windows(dtype)
        if windows is None or axis is None or not shape or not all(shape):
            return None
        return windows.arg_reducer(fn, tuple(shape), axis % len(shape), dtype,
                                   attrs["keepdim"])

    return specialize


# index of the first max / min along ``axis`` (None: of the flattened tensor); int64, no grad
ARGMAX = register(Primitive(
    "argmax", impl=_arg_impl("argmax"), infer=_arg_infer, differentiable=False,
    attrs=("axis", "keepdim"), reduction=True, flops=flops_reduce,
    specializer=_arg_specializer("argmax")))
ARGMIN = register(Primitive(
    "argmin", impl=_arg_impl("argmin"), infer=_arg_infer, differentiable=False,
    attrs=("axis", "keepdim"), reduction=True, flops=flops_reduce,
    specializer=_arg_specializer("argmin")))


def _cumsum_infer(x: Meta, *, axis: int) -> tuple[Any, D.DType]:
    return x.shape, D.int64 if not x.dtype.is_floating_point else x.dtype


def _cumsum_impl(xp: Any, x: Any, *, axis: int) -> Any:
    dt = _int64_unless_float(x.dtype)
    if not x.ndim:
        return x.astype(dt)
    if xp is not np:
        return xp.cumsum(x, axis=axis, dtype=dt)
    return quietly(np.add.accumulate, x, axis=axis, dtype=dt)


def _flip(x: Any, axis: int) -> Any:
    return F.getitem(x, (slice(None),) * axis + (slice(None, None, -1),))


def _cumsum_bwd(c: Any, g: Any) -> tuple[Any]:
    # each input adds to every later output: the reversed cumulative sum of g
    axis = c.attrs["axis"]
    if not c.shape(0):
        return (g,)
    return (_flip(F.cumsum(_flip(g, axis), axis), axis),)


# cumulative sum along ``axis`` (integers and bools sum in int64, as PyTorch's)
CUMSUM = register(Primitive(
    "cumsum", impl=_cumsum_impl, infer=_cumsum_infer, backward=_cumsum_bwd,
    attrs=("axis",), flops=flops_elementwise))


def _on_host(xp: Any, fn: Callable[..., Any], *arrays: Any) -> Any:
    """numpy's ``fn`` on host copies of device arrays, its result moved back: for a call a
    device array module lacks (an explicit copy each way; numpy arrays are used as they are)."""
    if xp is np:
        return fn(*arrays)
    return xp.asarray(fn(*(xp.asnumpy(a) for a in arrays)))


def _cumprod_impl(xp: Any, x: Any, *, axis: int) -> Any:
    dt = _int64_unless_float(x.dtype)
    if not x.ndim:
        return x.astype(dt)
    if not hasattr(xp, "cumprod"):
        return _on_host(xp, lambda a: quietly(np.cumprod, a, axis=axis, dtype=dt), x)
    if xp is not np:
        return xp.cumprod(x, axis=axis, dtype=dt)
    return quietly(np.multiply.accumulate, x, axis=axis, dtype=dt)


def _reversed_cumsum(v: Any, axis: int) -> Any:
    return _flip(F.cumsum(_flip(v, axis), axis), axis)


def _cumprod_bwd(c: Any, g: Any) -> tuple[Any]:
    """out_j = prod_{k <= j} x_k, so dx_i = sum_{j >= i} g_j prod_{k <= j, k != i} x_k. Before
    the first zero along the axis that is the reversed cumsum of g * out over x_i; at the first
    zero, the reversed cumsum of g times the cumprod of x with that zero made 1; after it, 0
    (every product holds the zero). No branch on values, so a captured step computes it too,
    and each piece is differentiable (PyTorch's double backward)."""
    axis = c.attrs["axis"]
    if not c.shape(0) or c.shape(0)[axis] <= 1:
        return (g,)
    x, out = c.input(0), c.output()
    zero = F.eq(x, 0)
    zeros_so_far = F.cumsum(F.cast(zero, D.int64), axis)
    before = F.eq(zeros_so_far, 0)
    first = F.logical_and(zero, F.eq(zeros_so_far, 1))
    at_nonzero = F.div(_reversed_cumsum(F.mul(g, out), axis), F.where(before, x, 1.0))
    without_first = F.cumprod(F.where(first, 1.0, x), axis)
    at_first = _reversed_cumsum(F.mul(g, without_first), axis)
    return (F.where(before, at_nonzero, F.where(first, at_first, 0.0)),)


# cumulative product along ``axis`` (integers and bools multiply in int64, as PyTorch's)
CUMPROD = register(Primitive(
    "cumprod", impl=_cumprod_impl, infer=_cumsum_infer, backward=_cumprod_bwd,
    saves=(0, "out"), attrs=("axis",), flops=flops_elementwise))


def _scatter_grid(xp: Any, index: Any, dim: int) -> tuple[Any, ...]:
    """The advanced-indexing key that names x[i0, .., index[i], .., in] for every position
    i of ``index``: ``index`` along ``dim``, a broadcast range along every other axis."""
    grid = []
    for d, n in enumerate(index.shape):
        if d == dim:
            grid.append(index)
        else:
            shape = [1] * index.ndim
            shape[d] = n
            grid.append(xp.arange(n).reshape(shape))
    return tuple(grid)


_SCATTER_UFUNCS = {"sum": "add", "prod": "multiply", "amax": "maximum", "amin": "minimum"}


def _scatter_identity(reduce: str, dtype: np.dtype) -> Any:
    """The value a position starts from where ``include_self=False`` leaves x out."""
    if reduce in ("sum", "prod"):
        return 0 if reduce == "sum" else 1
    low = reduce == "amax"
    if dtype.kind == "f":
        return -np.inf if low else np.inf
    if dtype.kind == "b":
        return not low
    info = np.iinfo(dtype)
    return info.min if low else info.max


def _order_keys(xp: Any, v: Any, reduce: str) -> Any:
    """Unsigned integers in the order ``reduce`` ranks ``v``'s values (amax: the largest value
    the largest key; amin: the smallest), NaN above every number in both, as PyTorch's
    scatter_reduce lets NaN win: a device's scatter max of these keys is exact. (CuPy's
    float64 ``maximum.at`` rounds through float32, its atomicMax calling ``fmaxf``, and its
    float atomics drop NaN.)"""
    if v.dtype.kind in "fV":  # the floats (bfloat16 is of numpy's kind V), widened exactly
        wide = np.dtype(np.float64 if v.dtype == np.float64 else np.float32)
        w = v.astype(wide)
        if reduce == "amin":
            w = -w
        w = xp.where(xp.isnan(w), wide.type(np.nan), w)  # one NaN, positive: the largest
        bits = w.view(np.uint64 if wide.itemsize == 8 else np.uint32)
        top = bits.dtype.type(1 << (8 * wide.itemsize - 1))
        # IEEE order: a positive float's bits rank as they are above every negative one's,
        # whose bits rank reversed
        return xp.where((bits & top) != 0, ~bits, bits | top)
    if v.dtype == np.uint64:
        keys = v.copy()
    else:  # the integers and bool through int64, its sign bit flipped
        keys = v.astype(np.int64).view(np.uint64) ^ np.uint64(1 << 63)
    return ~keys if reduce == "amin" else keys


def _from_order_keys(xp: Any, keys: Any, reduce: str, dtype: np.dtype) -> Any:
    """The values ``_order_keys`` made ``keys`` of, as ``dtype``."""
    top = keys.dtype.type(1 << (8 * keys.dtype.itemsize - 1))
    if dtype.kind in "fV":
        bits = xp.where((keys & top) != 0, keys ^ top, ~keys)
        w = bits.view(np.float64 if keys.dtype.itemsize == 8 else np.float32)
        return (-w if reduce == "amin" else w).astype(dtype)
    keys = ~keys if reduce == "amin" else keys
    if dtype == np.uint64:
        return keys
    return (keys ^ top).view(np.int64).astype(dtype)


def _scatter_reduce_impl(xp: Any, x: Any, index: Any, src: Any, *, dim: int, reduce: str,
                         include_self: bool, legacy: bool) -> Any:
    ufunc = getattr(xp, _SCATTER_UFUNCS[reduce])
    on_host = functools.partial(_scatter_reduce_impl, np, dim=dim, reduce=reduce,
                                include_self=include_self, legacy=legacy)
    if not hasattr(ufunc, "at"):  # a device module without it
        return _on_host(xp, on_host, x, index, src)
    out = x.copy()
    if not index.size:
        return out
    key = _scatter_grid(xp, index, dim)
    if not include_self:
        out[key] = _scatter_identity(reduce, x.dtype)
    try:
        if xp is not np and reduce in ("amax", "amin"):  # exact, and NaN wins, as on the host
            keys = _order_keys(xp, out, reduce)
            xp.maximum.at(keys, key, _order_keys(xp, src, reduce))
            return _from_order_keys(xp, keys, reduce, x.dtype)
        ufunc.at(out, key, src)
    except (NotImplementedError, TypeError):
        if xp is np:
            raise
        # CuPy's ufuncs all have ``at``, but only some run it (multiply's raises, and
        # maximum's for some dtypes): the host's, as for a module without it
        return _on_host(xp, on_host, x, index, src)
    return out


def _scatter_reduce_infer(x: Meta, index: Meta, src: Meta, *, dim: int, reduce: str,
                          include_self: bool, legacy: bool) -> tuple[Any, D.DType]:
    if reduce not in _SCATTER_UFUNCS:
        raise ValueError(f"scatter_reduce: reduce must be one of {sorted(_SCATTER_UFUNCS)}, "
                         f"got {reduce!r}")
    if tuple(src.shape) != tuple(index.shape) or src.dtype is not x.dtype:
        raise ValueError("scatter_reduce: src must be of index's shape and x's dtype")
    return x.shape, x.dtype


def _scatter_reduce_bwd(c: Any, g: Any) -> tuple[Any, None, Any]:
    """PyTorch's scatter_reduce_backward for prod, amax and amin (sum and mean are
    compositions, differentiated through theirs); scatter's ``reduce=`` form (``legacy``) has
    no derivative in PyTorch, and none here."""
    from . import tensor_ops as T

    a = c.attrs
    if a["legacy"]:
        raise RuntimeError("derivative for aten::scatter is not implemented")
    dim, reduce, include_self = a["dim"], a["reduce"], a["include_self"]
    x, index, src, out = c.input(0), c.input(1), c.input(2), c.output()
    if reduce == "prod":
        masked_x = F.where(F.eq(x, 0), 1.0, x)
        masked_x_out = T.scatter_reduce(masked_x, dim, index, src, "prod",
                                        include_self=include_self)
        gx = F.div(F.mul(g, masked_x_out), masked_x)
        src_zero = F.eq(src, 0)
        zeros_there = T.gather(T.scatter_add(F.mul(x, 0.0), dim, index,
                                             F.cast(src_zero, x.dtype)), dim, index)
        single_zero = F.logical_and(src_zero, F.eq(zeros_there, 1))
        masked_src_out = T.scatter_reduce(x, dim, index, F.where(single_zero, 1.0, src),
                                          "prod", include_self=include_self)
        gsrc = F.where(single_zero, T.gather(F.mul(g, masked_src_out), dim, index),
                       F.div(T.gather(F.mul(g, out), dim, index), F.where(src_zero, 1.0, src)))
    else:  # amax, amin: the gradient shared evenly by the values equal to the result
        x_is = F.cast(F.eq(x, out), g.dtype)
        src_is = F.cast(F.eq(src, T.gather(out, dim, index)), g.dtype)
        shared = F.div(g, T.scatter_add(x_is, dim, index, src_is))
        gx = F.mul(x_is, shared)
        gsrc = F.mul(src_is, T.gather(shared, dim, index))
    if not include_self:
        gx = T.scatter(gx, dim, index, value=0.0)
    return (gx if c.needs(0) else None, None, gsrc if c.needs(2) else None)


# scatter_reduce(x, index, src, dim=, reduce=, include_self=, legacy=): x with each src[i]
# folded into x[.., index[i], ..] along dim by reduce ("sum", "prod", "amax", "amin"), x's
# own values left out of the scattered positions unless include_self; src of index's shape
SCATTER_REDUCE = register(Primitive(
    "scatter_reduce", impl=_scatter_reduce_impl, infer=_scatter_reduce_infer,
    backward=_scatter_reduce_bwd, saves=(0, 1, 2, "out"),
    attrs=("dim", "reduce", "include_self", "legacy"),
    flops=lambda out_shape, arg_shapes, attrs: math.prod(arg_shapes[2] or ())))


def _argsort_impl(xp: Any, x: Any, *, axis: int, descending: bool) -> Any:
    if x.ndim == 0:
        return xp.zeros((), dtype=np.int64)
    if descending:
        if x.dtype.kind == "f" and bool(xp.isnan(x).any()):
            # PyTorch's NaN is the largest value: first, ties (NaNs too) in input order
            order = xp.lexsort((-x, ~xp.isnan(x)), axis=axis)
            return order.astype(np.int64, copy=False)
        # a stable sort of keys in reversed order keeps ties in input order, as an ascending
        # one: -x for floats, ~x (-x - 1, which neither overflows nor wraps) for integers
        x = -x if x.dtype.kind == "f" else ~x
    return xp.argsort(x, axis=axis, kind="stable").astype(np.int64, copy=False)


# the permutation that sorts ``x`` along ``axis`` (stable); sort and topk gather by it
ARGSORT = register(Primitive(
    "argsort", impl=_argsort_impl, infer=lambda x, *, axis, descending: (x.shape, D.int64),
    differentiable=False, attrs=("axis", "descending"), flops=flops_reduce))


def _stl_pick_impl(xp: Any, x: Any, idx: Any, order: Any, *, kind: str, dim: int, k: int,
                   largest: bool, sort: bool) -> Any:
    host = (lambda a: a) if xp is np else xp.asnumpy
    x, idx, order = np.asarray(host(x)), np.asarray(host(idx)), np.asarray(host(order))
    if kind == "topk":
        from .tensor_ops import stl_topk_pick

        out = stl_topk_pick(x, idx, order, dim, k, largest, sort)
    elif kind == "kthvalue":
        from .ordering import quickselect_pick

        out = quickselect_pick(x, idx, dim, k)
    else:
        from .ordering import std_sort_mode_pick

        out = std_sort_mode_pick(x, idx, dim)
    return out if xp is np else xp.asarray(out)


def _stl_pick_infer(x: Meta, idx: Meta, order: Meta, *, kind: str, dim: int, k: int,
                    largest: bool, sort: bool) -> tuple[Any, D.DType]:
    if kind not in ("topk", "kthvalue", "mode"):
        raise ValueError(f"stl_pick: kind must be topk, kthvalue or mode, got {kind!r}")
    return idx.shape, D.int64


# stl_pick(x, idx, order, kind=, dim=, k=, largest=, sort=): ``idx`` (a stable sort's pick:
# topk's first k of ``order``, kthvalue's k-th, mode's last occurrence) with PyTorch's CPU
# kernel's pick among equal values instead (its libstdc++ selection, quickselect or unstable
# std::sort, emulated in runtime.ops.stl on the host): where values tie, which index PyTorch
# returns. A primitive, so a captured step picks as eager mode does at each replay
STL_PICK = register(Primitive(
    "stl_pick", impl=_stl_pick_impl, infer=_stl_pick_infer, differentiable=False,
    attrs=("kind", "dim", "k", "largest", "sort"), flops=flops_reduce))


def _special_host_impl(xp: Any, *args: Any, fn: str, n: int, dtype: D.DType) -> Any:
    host = [np.asarray(a if xp is np else xp.asnumpy(a)) for a in args]
    if fn == "polygamma":
        from .zeta import polygamma_array

        x, = host
        if x.dtype not in (np.float32, np.float64):  # half and bfloat16: in float32
            x = x.astype(np.float32)
        out = polygamma_array(n, x)
    elif fn == "zeta":
        from .zeta import zeta_array

        s, q = (a.astype(np.float64) for a in host)
        out = np.broadcast_to(zeta_array(s, q), np.broadcast_shapes(s.shape, q.shape))
    elif fn in cephes.UNARY:  # in the dtype, as PyTorch's kernels (a float32 in float32)
        out = cephes.UNARY[fn](host[0].astype(dtype.np, copy=False))
    elif fn in cephes.POLYNOMIAL:
        out = cephes.POLYNOMIAL[fn](*(a.astype(dtype.np, copy=False) for a in host))
    else:
        from .numeric_names import _igamma_array

        out = _igamma_array(host[0], host[1], fn == "igammac")
    out = np.ascontiguousarray(out, dtype=dtype.np).reshape(
        np.broadcast_shapes(*(a.shape for a in host)))
    return out if xp is np else xp.asarray(out)


def _special_host_infer(*args: Meta, fn: str, n: int, dtype: D.DType
                        ) -> tuple[tuple[int, ...], D.DType]:
    if fn not in SPECIAL_HOST_FUNCTIONS:
        raise ValueError(f"special_host: fn must be one of {sorted(SPECIAL_HOST_FUNCTIONS)}, "
                         f"got {fn!r}")
    return tuple(np.broadcast_shapes(*(tuple(a.shape) for a in args))), dtype


SPECIAL_HOST_FUNCTIONS = ("polygamma", "zeta", "igamma", "igammac", *cephes.UNARY,
                          *cephes.POLYNOMIAL)

# special_host(*xs, fn=, n=, dtype=): a special function computed on the host by its numpy
# series (runtime.ops.zeta, runtime.ops.numeric_names, runtime.ops.cephes): polygamma(n, x)
# for n >= 1, the Hurwitz zeta(s, q), the regularized incomplete gammas igamma/igammac(a, x),
# torch.special's Airy and Bessel functions of x and orthogonal polynomials of (x, n),
# broadcast, in ``dtype``. A primitive (not differentiable: the callers' nodes give the gradients), so a
# captured step computes it at each replay, not once at capture
SPECIAL_HOST = register(Primitive(
    "special_host", impl=_special_host_impl, infer=_special_host_infer, differentiable=False,
    attrs=("fn", "n", "dtype"), flops=flops_elementwise))

# --- shape and views -----------------------------------------------------------------------


def _reshape_impl(xp: Any, x: Any, *, shape: tuple[int, ...]) -> Any:
    return x.reshape(shape)


def _reshape_infer(x: Meta, *, shape: tuple[int, ...]) -> tuple[Any, D.DType]:
    if math.prod(shape) != math.prod(x.shape):
        raise ValueError(f"shape {list(shape)} is invalid for input of size {math.prod(x.shape)}")
    return shape, x.dtype


def _view_fast(make: Callable[[Attrs], Callable[..., Any]]) -> Specializer:
    """A view primitive's fast path: make(attrs) -> f(x), the numpy call its impl makes (a
    view of an ndarray is an ndarray of its dtype, 0-d included)."""

    def specialize(arg_metas: ArgMetas, attrs: Attrs, out_meta: OutMeta) -> FastPath:
        if len(arg_metas) != 1 or not is_array_meta(arg_metas[0]) \
                or arg_metas[0][1] != out_meta[1]:
            return None
        return make(attrs)

    return specialize


def _reshape_fast(attrs: Attrs) -> Callable[..., Any]:
    shape = attrs["shape"]
    return lambda x: x.reshape(shape)


RESHAPE = register(Primitive(
    "reshape", impl=_reshape_impl, infer=_reshape_infer,
    backward=lambda c, g: (F.reshape(g, c.shape(0)),), view=True, attrs=("shape",),
    flops=flops_none, specializer=_view_fast(_reshape_fast), node_name="ViewBackward0"))


def _diagonal_impl(xp: Any, x: Any, *, offset: int, dim1: int, dim2: int) -> Any:
    """numpy's diagonal view, writable where x is (numpy's is read-only, a legacy caution:
    PyTorch's is a view one writes through)."""
    out = x.diagonal(offset, dim1, dim2)
    if xp is np and x.flags.writeable and not out.flags.writeable:
        out.flags.writeable = True
    return out


def _diagonal_infer(x: Meta, *, offset: int, dim1: int, dim2: int) -> tuple[Any, D.DType]:
    rows, cols = x.shape[dim1], x.shape[dim2]
    n = max(0, min(rows - max(-offset, 0), cols - max(offset, 0)))
    rest = tuple(s for d, s in enumerate(x.shape) if d not in (dim1, dim2))
    return (*rest, n), x.dtype


def _diagonal_bwd(c: Any, g: Any) -> tuple[Any]:
    """The diagonal's gradient: zeros of x's shape with g on that diagonal (an index scatter
    into the matrices moved last, moved back)."""
    a, shape = c.attrs, c.shape(0)
    d1, d2, offset = a["dim1"], a["dim2"], a["offset"]
    rest = [d for d in range(len(shape)) if d not in (d1, d2)]
    order = (*rest, d1, d2)
    n = g.shape[-1]
    r0, c0 = (0, offset) if offset >= 0 else (-offset, 0)
    from ..creation import arange

    rows = arange(r0, r0 + n, device=g.device)
    cols = arange(c0, c0 + n, device=g.device)
    moved = F.index_backward(g, rows, cols, key=(Ellipsis, IndexArg(0), IndexArg(1)),
                             shape=tuple(shape[d] for d in order))
    return (F.permute(moved, *np.argsort(order).tolist()),)


DIAGONAL = register(Primitive(
    "diagonal", impl=_diagonal_impl, infer=_diagonal_infer, backward=_diagonal_bwd,
    view=True, attrs=("offset", "dim1", "dim2"), flops=flops_none))


def _permute_infer(x: Meta, *, dims: tuple[int, ...]) -> tuple[Any, D.DType]:
    return tuple(x.shape[d] for d in dims), x.dtype


def _permute_fast(attrs: Attrs) -> Callable[..., Any]:
    dims = attrs["dims"]
    return lambda x: x.transpose(dims)


def _permute_impl(xp: Any, x: Any, *, dims: tuple[int, ...]) -> Any:
    """A numpy array's own transpose: np.transpose's dispatch cost a capture's layout probe
    of each permuted view (planner.layouts.view_made) about 1 us more."""
    return x.transpose(dims) if type(x) is np.ndarray else xp.transpose(x, dims)


def _permute_bwd(c: Any, g: Any) -> tuple[Any]:
    """The gradient permuted back: the inverse permutation as np.argsort gives it (the dims
    are distinct), without making an array of the dims (2 to 3 us a backward node)."""
    dims = c.attrs["dims"]
    return (F.permute(g, *sorted(range(len(dims)), key=dims.__getitem__)),)


PERMUTE = register(Primitive(
    "permute", impl=_permute_impl, infer=_permute_infer, backward=_permute_bwd,
    view=True, attrs=("dims",), flops=flops_none, specializer=_view_fast(_permute_fast)))


def _expand_impl(xp: Any, x: Any, *, shape: tuple[int, ...]) -> Any:
    """numpy's broadcast, strided as PyTorch strides it: numpy gives every dim of size 1
    stride 0, PyTorch keeps a kept dim's stride and gives a new one of size 1 the next
    dim's size times its stride (``x.expand(1, 1, 5)`` strides (5, 5, 1), as
    ``x[None, None]``'s). The read-only view is remade over x's storage with those."""
    out = xp.broadcast_to(x, shape)
    strides = _expand_strides(x, tuple(shape))
    if xp is not np or strides == out.strides or not out.size:
        return out
    from .memory_names import _storage_geometry

    geometry = _storage_geometry(x)
    if geometry is None:
        return out
    root, offset, _ = geometry
    flat = root.reshape(-1, order="A").view(x.dtype)
    view = np.ndarray(out.shape, x.dtype, buffer=flat, offset=offset * x.itemsize,
                      strides=strides)
    view.flags.writeable = False
    return view


def _expand_strides(x: Any, shape: tuple[int, ...]) -> tuple[int, ...]:
    """PyTorch's inferExpandGeometry, in bytes."""
    lead = len(shape) - x.ndim
    strides = [0] * len(shape)
    below = x.itemsize
    for i in range(len(shape) - 1, -1, -1):
        size, stride = (x.shape[i - lead], x.strides[i - lead]) if i >= lead else (1, below)
        strides[i] = stride if size == shape[i] else 0
        below = shape[i] * strides[i]
    return tuple(strides)


EXPAND = register(Primitive(
    "expand", impl=_expand_impl,
    infer=lambda x, *, shape: (tuple(np.broadcast_shapes(x.shape, shape)), x.dtype),
    backward=lambda c, g: (F.sum_to(g, c.shape(0)),), view=True, attrs=("shape",),
    lower=_lower_broadcast, flops=flops_none,
    specializer=_view_fast(lambda attrs: functools.partial(_expand_impl, np, shape=attrs["shape"]))))


@dataclass(frozen=True)
class IndexArg:
    """Placeholder in an indexing key template: the array index passed as the primitive's
    ``position``-th index argument (the tensor arguments after the data argument(s))."""

    position: int

    def __repr__(self) -> str:
        return f"IndexArg({self.position})"


def index_arg_count(key: Any) -> int:
    """How many index tensors a key template takes."""
    items = key if isinstance(key, tuple) else (key,)
    return sum(1 for k in items if isinstance(k, IndexArg))


def fill_key(key: Any, arrays: Any) -> Any:
    """The key template with each ``IndexArg(i)`` replaced by ``arrays[i]``."""
    if not isinstance(key, tuple):
        return arrays[key.position] if isinstance(key, IndexArg) else key
    return tuple(arrays[k.position] if isinstance(k, IndexArg) else k for k in key)


def _check_index_metas(idx: tuple[Meta, ...], key: Any) -> None:
    if len(idx) != index_arg_count(key):
        raise ValueError(f"key {key!r} takes {index_arg_count(key)} index tensors, got {len(idx)}")
    for m in idx:
        if not isinstance(m, Meta) or m.dtype is not D.int64:
            raise TypeError(f"index arguments must be int64 tensors, got {m!r}")


def _index_shape(shape: tuple[int, ...], idx: tuple[Meta, ...], key: Any) -> tuple[int, ...]:
    """The shape ``x[key]`` has for ``x`` of ``shape``, from shapes alone (numpy's rules)."""
    _check_index_metas(idx, key)
    return _key_shape(shape, [m.shape for m in idx], key)


def _key_shape(shape: tuple[int, ...], idx_shapes: Any, key: Any) -> tuple[int, ...]:
    probe = np.broadcast_to(np.zeros((), dtype=np.int8), shape)
    return probe[fill_key(key, [np.zeros(s, dtype=np.intp) for s in idx_shapes])].shape


def _indexed_metas(arg_metas: ArgMetas, key: Any, data_args: int) -> bool:
    """Whether a planned indexing call's arguments are arrays, its index arguments int64 and
    as many as the key's IndexArg placeholders name (each naming one that exists)."""
    idx = arg_metas[data_args:]
    items = key if isinstance(key, tuple) else (key,)
    places = [k.position for k in items if isinstance(k, IndexArg)]
    return (all(is_array_meta(m) for m in arg_metas) and len(places) == len(idx)
            and sorted(p for p in places if type(p) is int) == list(range(len(idx)))
            and all(m[1] == np.int64 for m in idx))


def _key_filler(key: Any) -> Callable[[Sequence[Any]], Any]:
    """f(idx) -> the key with its IndexArg placeholders filled: fill_key with the template's
    walk done once."""
    if not isinstance(key, tuple):
        return operator.itemgetter(key.position) if isinstance(key, IndexArg) else (
            lambda idx: key)
    slots = [(i, k.position) for i, k in enumerate(key) if isinstance(k, IndexArg)]
    template = list(key)

    def fill(idx: Sequence[Any]) -> tuple[Any, ...]:
        items = template.copy()
        for i, p in slots:
            items[i] = idx[p]
        return tuple(items)

    return fill


def _getitem_infer(x: Meta, *idx: Meta, key: Any) -> tuple[Any, D.DType]:
    return _index_shape(x.shape, idx, key), x.dtype


def _getitem_impl(xp: Any, x: Any, *idx: Any, key: Any) -> Any:
    # an all-integer key makes numpy return a scalar copy; a trailing Ellipsis keeps a 0-d view
    if isinstance(key, tuple) and all(isinstance(k, int) for k in key):
        key = (*key, Ellipsis)
    if is_basic_key(key):
        return x[key]
    return _gathered(x[fill_key(key, idx)])


def _gathered(out: Any) -> Any:
    """An array-indexed result laid out row-major, as PyTorch's index kernel writes it
    (numpy's x[:, i] has the indexed dim innermost: its .view(-1) would fail)."""
    return out if out.flags.c_contiguous else out.copy(order="C")


def _index_inputs(c: Any, first: int) -> list[Any]:
    return [c.input(first + i) for i in range(index_arg_count(c.attrs["key"]))]


def _getitem_bwd(c: Any, g: Any) -> tuple[Any, ...]:
    idx = _index_inputs(c, 1)
    return (F.index_backward(g, *idx, key=c.attrs["key"], shape=c.shape(0)),
            *(None for _ in idx))


def _getitem_fast(arg_metas: ArgMetas, attrs: Attrs, out_meta: OutMeta) -> FastPath:
    """The one subscript _getitem_impl makes: a view for a basic key, a gather (always a new
    array of x's dtype) for array indices."""
    key = attrs["key"]
    if not arg_metas or not _indexed_metas(arg_metas, key, 1) or arg_metas[0][1] != out_meta[1]:
        return None
    x_shape, idx_shapes = arg_metas[0][0], [m[0] for m in arg_metas[1:]]
    try:
        if _key_shape(x_shape, idx_shapes, key) != tuple(out_meta[0]):
            return None
    except (IndexError, ValueError, TypeError):
        return None  # the impl raises: let it
    if is_basic_key(key):
        if isinstance(key, tuple) and all(isinstance(k, int) for k in key):
            key = (*key, Ellipsis)  # as the impl: a 0-d view, not a numpy scalar
        elif not out_meta[0]:
            return None  # numpy makes a scalar of this one: keep the planner's check
        return lambda x: x[key]
    if not out_meta[0]:
        return None  # a gather to 0-d gives a numpy scalar
    fill = _key_filler(key)
    return lambda x, *idx: _gathered(x[fill(idx)])


def is_basic_key(key: Any) -> bool:
    items = key if isinstance(key, tuple) else (key,)
    return all(isinstance(k, (int, slice, type(None), type(Ellipsis))) for k in items)


# getitem(x, *index_tensors, key=template): basic keys (ints, slices, None, Ellipsis) give a
# view; array indices are int64 tensor arguments named in ``key`` by IndexArg placeholders
GETITEM = register(Primitive(
    "getitem", impl=_getitem_impl, infer=_getitem_infer, backward=_getitem_bwd,
    saves_from=1, view=True, view_if=lambda attrs: is_basic_key(attrs["key"]), attrs=("key",),
    flops=flops_none, specializer=_getitem_fast))


def _row_pick(index_shape: Sequence[int], shape: Sequence[int], g_shape: Sequence[int]
              ) -> bool:
    """Whether one index array of ``index_shape`` picks rows of ``shape`` from ``g``'s (an
    embedding's backward), rows of at least 8 elements: generated code's case."""
    return (len(shape) >= 2 and math.prod(shape[1:]) >= 8
            and tuple(g_shape) == tuple(index_shape) + tuple(shape[1:]))


def scatter_add(out: np.ndarray, key: Any, g: np.ndarray) -> None:
    """``np.add.at(out, key, g)`` into zeros ``out``: repeated indices accumulate, each
    index's terms in their order from +0.0. Where ``key`` is one integer array picking rows
    (an embedding's backward) this is generated code (``codegen.windows.row_scatterer``,
    the same bits): np.add.at took 2 ms of the gpt workload's step for 1024 rows of 128."""
    k = key[0] if isinstance(key, tuple) and len(key) == 1 else key
    if (isinstance(k, np.ndarray) and k.dtype == np.int64 and out.flags.c_contiguous
            and _row_pick(k.shape, out.shape, g.shape)):
        windows = generated_windows(out.dtype)
        if windows is not None:
            rows = windows.row_scatterer(k.size, out.shape[0], math.prod(out.shape[1:]),
                                         out.dtype)(np.ascontiguousarray(g),
                                                    np.ascontiguousarray(k))
            if rows is not None:  # else an index is out of range: numpy raises below
                out += rows.reshape(out.shape)  # + 0.0: the same bits
                return
    np.add.at(out, key, g)


def _index_backward_impl(xp: Any, g: Any, *idx: Any, key: Any, shape: tuple[int, ...]) -> Any:
    out = xp.zeros(shape, dtype=g.dtype)
    if is_basic_key(key):
        out[key] = g
    elif xp is np:
        scatter_add(out, fill_key(key, idx), g)  # repeated indices accumulate
    else:
        full = fill_key(key, idx)
        try:  # (cupyx.scatter_add, the same scatter, is deprecated in CuPy 14)
            xp.add.at(out, full, g)
        except (NotImplementedError, TypeError):  # a dtype CuPy's atomics lack (bfloat16)
            return _on_host(xp, functools.partial(_index_backward_impl, np, key=key,
                                                  shape=shape), g, *idx)
    return out


def _index_backward_infer(g: Meta, *idx: Meta, key: Any,
                          shape: tuple[int, ...]) -> tuple[Any, D.DType]:
    _check_index_metas(idx, key)
    return tuple(shape), g.dtype


def _index_backward_bwd(c: Any, gg: Any) -> tuple[Any, ...]:
    idx = _index_inputs(c, 1)
    return (F.getitem_key(gg, *idx, key=c.attrs["key"]), *(None for _ in idx))


# index_backward(g, *index_tensors, key=template, shape=x_shape): scatter-add g into zeros
def _index_backward_fast(arg_metas: ArgMetas, attrs: Attrs, out_meta: OutMeta) -> FastPath:
    """With array indices, the two calls _index_backward_impl makes: zeros of the input's
    shape, then scatter_add (repeated indices accumulate)."""
    key, shape = attrs["key"], tuple(attrs["shape"])
    if is_basic_key(key) or not arg_metas or not _indexed_metas(arg_metas, key, 1):
        return None
    dtype = arg_metas[0][1]
    if dtype != out_meta[1] or shape != tuple(out_meta[0]):
        return None
    fill, add, zeros = _key_filler(key), scatter_add, np.zeros

    def scatter(g: np.ndarray, *idx: np.ndarray) -> np.ndarray:
        out = zeros(shape, dtype)
        add(out, fill(idx), g)
        return out

    # one index array picking rows (an embedding's backward): generated code
    # (codegen.windows.row_scatterer), numpy's path where it declines (an index out of
    # range raises numpy's error there)
    windows = generated_windows(dtype)
    if not isinstance(key[0] if isinstance(key, tuple) and len(key) == 1 else key, IndexArg) \
            or windows is None or len(arg_metas) != 2 \
            or not _row_pick(arg_metas[1][0], shape, arg_metas[0][0]):
        return scatter
    native = windows.row_scatterer(math.prod(arg_metas[1][0]), shape[0],
                                   math.prod(shape[1:]), dtype)

    def scatter_rows(g: np.ndarray, index: np.ndarray) -> np.ndarray:
        out = native(g, index)
        return scatter(g, index) if out is None else out.reshape(shape)

    return scatter_rows


INDEX_BACKWARD = register(Primitive(
    "index_backward", impl=_index_backward_impl, infer=_index_backward_infer,
    backward=_index_backward_bwd, saves_from=1, attrs=("key", "shape"), flops=flops_reduce,
    specializer=_index_backward_fast))


def _setitem_impl(xp: Any, x: Any, v: Any, *idx: Any, key: Any) -> Any:
    out = x.copy()
    out[fill_key(key, idx) if idx else key] = cast_values(v, out.dtype) \
        if hasattr(v, "dtype") else v
    return out


def _setitem_infer(x: Meta, v: Any, *idx: Meta, key: Any) -> tuple[Any, D.DType]:
    _index_shape(x.shape, idx, key)  # validates the key against x's shape
    return x.shape, x.dtype


def _setitem_bwd(c: Any, g: Any) -> tuple[Any, ...]:
    key = c.attrs["key"]
    idx = _index_inputs(c, 2)
    gx = F.index_put(g, 0.0, *idx, key=key) if c.needs(0) else None
    gv = F.sum_to(F.getitem_key(g, *idx, key=key), c.shape(1)) if c.needs(1) else None
    return (gx, gv, *(None for _ in idx))


# setitem(x, v, *index_tensors, key=template): x with x[key] = v (out of place; the in-place
# ``x[key] = v`` writes this result back)
SETITEM = register(Primitive(
    "setitem", impl=_setitem_impl, infer=_setitem_infer, backward=_setitem_bwd,
    saves_from=2, attrs=("key",), flops=flops_none))


def _cat_infer(*xs: Meta, axis: int) -> tuple[Any, D.DType]:
    shape = list(xs[0].shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    return tuple(shape), _promoted(xs, PROMOTE_SAME)


def _cat_bwd(c: Any, g: Any) -> tuple[Any, ...]:
    axis = c.attrs["axis"]
    out: list[Any] = []
    start = 0
    for i in range(len(c.metas)):
        n = c.shape(i)[axis]
        if c.needs(i):
            key = (slice(None),) * axis + (slice(start, start + n),)
            out.append(F.getitem(g, key))
        else:
            out.append(None)
        start += n
    return tuple(out)


CAT = register(Primitive(
    "cat", impl=lambda xp, *xs, axis: xp.concatenate(xs, axis=axis), infer=_cat_infer,
    backward=_cat_bwd, promote=PROMOTE_SAME, attrs=("axis",), flops=flops_none))

# --- checks of values ------------------------------------------------------------------------


_CHECK_ERRORS = {"IndexError": IndexError, "RuntimeError": RuntimeError,
                 "ValueError": ValueError}


def _check_bounds_infer(x: Meta, *, low: int, high: int, message: str,
                        error: str = "IndexError") -> tuple[Any, D.DType]:
    if error not in _CHECK_ERRORS:
        raise ValueError(f"check_bounds: error must be one of {sorted(_CHECK_ERRORS)}, got "
                         f"{error!r}")
    if x.dtype is not D.int64:
        raise TypeError(f"expected an int64 tensor of indices, got {x.dtype.name}")
    return (), D.bool_


def _out_of_bounds(x: Any, low: int, high: int) -> bool:
    """Whether an element of ``x`` lies outside [low, high). For a numpy integer array, one
    reduction: low <= v < high exactly where (v - low) modulo 2**bits, read unsigned, is below
    high - low (1.1 us for a batch of 128 class targets against 2.4 for a min and a max)."""
    if not x.size:
        return False
    if type(x) is np.ndarray and x.dtype.kind == "i" and low < high:
        info = np.iinfo(x.dtype)
        if info.min <= low and high <= info.max + 1:  # the window within the dtype's range
            shifted = x if low == 0 else x - np.asarray(low, x.dtype)
            return int(shifted.view(f"u{x.dtype.itemsize}").max()) >= high - low
    return int(x.min()) < low or int(x.max()) >= high


# while planner.cuda_graph records a CUDA graph on this thread, ``record(xp, x, low, high,
# message, error)``: the check made around each replay instead (a graph cannot read values)
deferred_checks = threading.local()


def _check_bounds_impl(xp: Any, x: Any, *, low: int, high: int, message: str,
                       error: str = "IndexError") -> Any:
    record = getattr(deferred_checks, "record", None)
    if record is not None and xp is not np:
        return record(xp, x, low, high, message, error)
    if _out_of_bounds(x, low, high):
        flat = x.reshape(-1)
        first = int(((flat < low) | (flat >= high)).argmax())  # the first bad one, as torch
        raise _CHECK_ERRORS[error](message.format(int(flat[first])))
    return xp.asarray(True)


# check_bounds(x, low=, high=, message=, error=): raises IndexError (or the error named, as
# PyTorch's op raises) with message.format(v) for the first
# element v of x outside [low, high), e.g. a class index or an index tensor out of range;
# returns a placeholder. Eager and captured steps alike call it (a captured one is a plan step)
CHECK_BOUNDS = register(Primitive(
    "check_bounds", impl=_check_bounds_impl, infer=_check_bounds_infer, differentiable=False,
    attrs=("low", "high", "message", "error"), check=True,
    flops=flops_elementwise))  # one for its 0-d placeholder, as plan summaries count it

# --- matmul --------------------------------------------------------------------------------


def _matmul_infer(a: Meta, b: Meta) -> tuple[Any, D.DType]:
    sa, sb = tuple(a.shape), tuple(b.shape)
    if not sa or not sb:
        raise ValueError("both arguments to matmul need to be at least 1D")
    err = matmul_dtype_error(sa, sb, a.dtype, b.dtype)
    if err is not None:
        raise DTypeError(err)
    err = matmul_error(sa, sb)
    if err is not None:
        raise ShapeError(err)
    a2 = (1,) + sa if len(sa) == 1 else sa
    b2 = sb + (1,) if len(sb) == 1 else sb
    batch = broadcast_shapes(a2[:-2], b2[:-2])
    out = batch + (a2[-2],) * (len(sa) > 1) + (b2[-1],) * (len(sb) > 1)
    return out, a.dtype


def _matmul_impl(xp: Any, a: Any, b: Any) -> Any:
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("both arguments to matmul need to be at least 1D")
    if a.dtype != b.dtype:
        raise DTypeError(matmul_dtype_error(a.shape, b.shape, D.from_numpy_dtype(a.dtype),
                                            D.from_numpy_dtype(b.dtype)))
    err = matmul_error(a.shape, b.shape)
    if err is not None:
        raise ShapeError(err)
    return xp.matmul(a, b)


def _matmul_bwd(c: Any, g: Any) -> tuple[Any, Any]:
    a, b = c.input(0), c.input(1)
    sa, sb = c.shape(0), c.shape(1)
    if len(sa) == 1 and len(sb) == 1:
        return (F.mul(g, b) if c.needs(0) else None, F.mul(g, a) if c.needs(1) else None)
    if len(sa) == 2 and len(sb) == 2:
        ga = F.matmul(g, F.transpose(b, 0, 1)) if c.needs(0) else None
        gb = None
        if c.needs(1):
            if _is_transposed(b):
                # b is a transposed view (a Linear weight): compute the gradient in the
                # weight's own layout, so the weight's grad comes out contiguous
                gb = F.transpose(F.matmul(F.transpose(g, 0, 1), a), 0, 1)
            else:
                gb = F.matmul(F.transpose(a, 0, 1), g)
        return ga, gb
    a2 = F.reshape(a, (1, sa[0])) if len(sa) == 1 else a
    b2 = F.reshape(b, (sb[0], 1)) if len(sb) == 1 else b
    g2 = g
    if len(sa) == 1:
        g2 = F.unsqueeze(g2, -2)
    if len(sb) == 1:
        g2 = F.unsqueeze(g2, -1)
    ga = gb = None
    if c.needs(0):
        ga = F.reshape(F.sum_to(F.matmul(g2, F.transpose(b2, -1, -2)), a2.shape), sa)
    if c.needs(1):
        gb = F.reshape(F.sum_to(F.matmul(F.transpose(a2, -1, -2), g2), b2.shape), sb)
    return ga, gb


def _is_transposed(t: Any) -> bool:
    flags = t._data.flags
    return bool(flags.f_contiguous and not flags.c_contiguous)


def _matmul_fast(arg_metas: ArgMetas, attrs: Attrs, out_meta: OutMeta) -> FastPath:
    """np.matmul where _matmul_impl's checks pass (same dtype, no 0-d operand) and the result
    is an array of the planned dtype."""
    if len(arg_metas) != 2 or not all(is_array_meta(m) for m in arg_metas):
        return None
    (sa, ta), (sb, tb) = arg_metas
    if ta != tb or not sa or not sb or not probe_ok(np.matmul, arg_metas, out_meta):
        return None
    return np.matmul


MATMUL = register(Primitive(
    "matmul", impl=_matmul_impl, infer=_matmul_infer, backward=_matmul_bwd, saves=(0, 1),
    extern=True, flops=flops_matmul, specializer=_matmul_fast))


# matmul(a, b) + d as one step: ``addmm`` (PyTorch's name) records it, and the LLVM backend's
# fusion makes it of an add whose one operand is a matmul read by nothing else
# (planner.fusion), so that a generated product adds d as it stores its result
# (codegen.gemm) instead of a pass of its own. The same numbers as the two steps: the
# product is rounded, then d added.
def _matmul_add_infer(a: Meta, b: Meta, d: Meta) -> tuple[Any, D.DType]:
    shape, dtype = _matmul_infer(a, b)
    if d.dtype is not dtype or tuple(np.broadcast_shapes(tuple(shape), tuple(d.shape))) != \
            tuple(shape):
        raise ValueError(f"matmul_add: an addend of shape {list(d.shape)} and dtype "
                         f"{d.dtype.name} does not fit a product of shape {list(shape)} and "
                         f"dtype {dtype.name}")
    return shape, dtype


def _matmul_add_impl(xp: Any, a: Any, b: Any, d: Any) -> Any:
    return xp.add(_matmul_impl(xp, a, b), d)


def _matmul_add_flops(out_shape: Any, arg_shapes: Any, attrs: Any) -> int:
    return flops_matmul(out_shape, arg_shapes[:2], attrs) + flops_elementwise(
        out_shape, arg_shapes, attrs)


def _matmul_add_bwd(c: Any, g: Any) -> tuple[Any, Any, Any]:
    ga, gb = _matmul_bwd(c, g)
    return ga, gb, F.sum_to(g, c.shape(2)) if c.needs(2) else None


MATMUL_ADD = register(Primitive(
    "matmul_add", impl=_matmul_add_impl, infer=_matmul_add_infer, backward=_matmul_add_bwd,
    saves=(0, 1), extern=True, flops=_matmul_add_flops, node_name="AddmmBackward0"))

