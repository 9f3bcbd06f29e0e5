"""Tensor functions over the registry's primitives (what Tensor methods and nn call)."""

from __future__ import annotations

import builtins
import functools
import math
import warnings
from collections import namedtuple
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import _dtype as D
from ..amp.policy import autocast_lower, autocast_promote
from ..autograd.grad_mode import _state as _grad_state
from ..return_types import returns
from ..tensor import Tensor
from ..tracing import GraphBreak, MetaArray, active_tracer, is_tracing, stands_for_number
from . import prims as P
from .naming import renamed
from .dispatch import apply, keeps_saved, named, named_backward, refuse_saved_inference
from .inplace import (apply_inplace, check_no_overlap, check_no_partial_overlap,
                      overlaps_internally, writable_alias)
from .shapes import ShapeError, broadcast_shapes, expand_error, int_dim, wrap_dim, wrap_dims

# numpy's floating-point warnings (a log of 0, 0/0, an overflow) from the runtime's own calls
# are not shown: PyTorch computes the same inf and nan silently. Scoped by message and module
# (the warning names the frame that called the ufunc), so a user's own ufuncs still warn; a
# filter the user sets later (``-W error``, pytest's) goes first. Measured: np.errstate around
# each call costs 1.9 us, more than a small op itself, this nothing until a warning fires.
warnings.filterwarnings(
    "ignore", message=r"(divide by zero|invalid value|overflow|underflow) encountered in ",
    category=RuntimeWarning, module=r"runtime\.")
# (sums, means, running sums and products are silent through prims.quietly, numpy's
# floating-point state set for the call alone: no filter here hides the user's own np.sum or
# np.mean warnings, as one on numpy's modules did)

# --- helpers -------------------------------------------------------------------------------


def written_to(out: Any, result: Tensor, name: str) -> Tensor:
    """``result`` written into ``out`` and ``out`` returned, as PyTorch's ``out=``: no graph
    through it (its error where one would be recorded), the result's dtype castable to out's
    (its category no higher), and an out of another shape resized (with PyTorch's warning
    unless out was empty)."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if result._rg or out._rg and _grad_state.enabled:
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")
    if result.dtype.category > out.dtype.category:
        raise RuntimeError(f"result type {D.scalar_type_name(result.dtype)} can't be cast to the "
                           f"desired output type {D.scalar_type_name(out.dtype)}")
    if tuple(out.shape) != tuple(result.shape):
        _resize_out(out, tuple(result.shape))
    prev = _grad_state.enabled
    _grad_state.enabled = False
    try:
        copy_(out, result)
    finally:
        _grad_state.enabled = prev
    return out


# PyTorch's texts where an op's out must be of its result's very dtype, by the kind of check
# its kernel makes: TensorIterator's same-dtype unary ops ("found"), structured kernels'
# ("expected"), amax/amin's, and the index kernels' ("same")
_OUT_DTYPE_TEXTS = {
    "found": "Found dtype {out} but expected {result}",
    "expected": "Expected out tensor to have dtype {result_meta}, but got {out_meta} instead",
    "amax": "Expected the dtype for input and out to match, but got {result} for input's dtype "
            "and {out} for out's dtype.",
    "same": "{name}(): self and result must have the same scalar type",
    "scalar_type": "expected scalar_type {result} but found {out}",
}


def _castable_into(out: Any, result: Tensor) -> Tensor:
    """cat's and stack's check of ``out=``: PyTorch's TypeError (naming cat for both) where
    the inputs' dtype cannot be cast into out's."""
    if isinstance(out, Tensor) and result.dtype.category > out.dtype.category:
        raise TypeError("torch.cat(): input types can't be cast to the desired output type "
                        f"{D.scalar_type_name(out.dtype)}")
    return result


def written_same(out: Any, result: Tensor, name: str, kind: str = "found") -> Tensor:
    """``written_to`` for an op whose ``out`` must be of exactly the result's dtype (PyTorch's
    check, with the text of the ``kind`` of kernel: ``_OUT_DTYPE_TEXTS``)."""
    if isinstance(out, Tensor) and out.dtype is not result.dtype and not result._rg:
        raise RuntimeError(_OUT_DTYPE_TEXTS[kind].format(
            out=D.scalar_type_name(out.dtype), result=D.scalar_type_name(result.dtype),
            out_meta=D.type_meta_name(out.dtype), result_meta=D.type_meta_name(result.dtype),
            name=name))
    return written_to(out, result, name)


def written_to_each(out: Any, results: tuple[Tensor, ...], name: str) -> Any:
    """``out=(values, indices)`` of an op with two results (max along a dim, sort, topk):
    each written as ``written_to`` does, of exactly the result's dtype (PyTorch's check), and
    the results' named tuple returned over them."""
    if not isinstance(out, (tuple, list)):
        raise TypeError(f"{name}(): argument 'out' must be tuple of Tensors, not "
                        f"{type(out).__name__}")
    if len(out) != len(results):
        raise TypeError(f"expected tuple of {len(results)} elements but got {len(out)}")
    for which, o, r in zip(("values", "indices"), out, results):
        if isinstance(o, Tensor) and o.dtype is not r.dtype:
            raise RuntimeError(_pair_dtype_error(name, which, r.dtype, o.dtype))
    return type(results)(*(written_to(o, r, name) for o, r in zip(out, results)))


def _legacy(dtype: D.DType) -> str:
    return f"torch.{D.scalar_type_name(dtype)}Tensor"


# PyTorch's texts for an out=(values, indices) of the wrong dtype, by the kernel's own check
# (the others: the structured kernels' "Expected out tensor to have dtype ...")
_PAIR_DTYPE_TEXTS: dict[str, dict[str, Callable[[D.DType, D.DType], str]]] = {
    "mode": {w: (lambda want, got, w=w: f"expected scalar type '{D.scalar_type_name(want)}' but "
                 f"got '{D.scalar_type_name(got)}' for {w} output") for w in ("values", "indices")},
    "median": {
        "values": lambda want, got: (
            f"Expected tensor for 'values' to have the same type as tensor for argument #2 "
            f"'self'; but type {_legacy(got)} does not equal {_legacy(want)} (while checking "
            "arguments for median)"),
        "indices": lambda want, got: (
            f"Expected tensor for argument #1 'indices' to have scalar type Long; but got "
            f"{_legacy(got)} instead (while checking arguments for median)")},
    "kthvalue": {"values": lambda want, got: "output values must be of same type as input",
                 "indices": lambda want, got: "output indices must be of scalar type Long"},
    "cummax": {w: (lambda want, got: f"expected scalar_type {D.scalar_type_name(want)} but "
                   f"found {D.scalar_type_name(got)}") for w in ("values", "indices")},
}
_PAIR_DTYPE_TEXTS["nanmedian"] = _PAIR_DTYPE_TEXTS["median"]
_PAIR_DTYPE_TEXTS["cummin"] = _PAIR_DTYPE_TEXTS["cummax"]


def _pair_dtype_error(name: str, which: str, want: D.DType, got: D.DType) -> str:
    texts = _PAIR_DTYPE_TEXTS.get(name)
    if texts is not None:
        return texts[which](want, got)
    return (f"Expected out tensor to have dtype {D.type_meta_name(want)}, but got "
            f"{D.type_meta_name(got)} instead")


def _out_dtype(dtype: Any, out: Tensor) -> Any:
    """The dtype a sum or product into ``out`` is made in: out's (PyTorch's), or ``dtype``
    where given, which out must then be."""
    if dtype is None:
        return out.dtype if isinstance(out, Tensor) else None
    dtype = D.as_dtype(dtype)
    if isinstance(out, Tensor) and out.dtype is not dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {D.type_meta_name(dtype)}, but "
                           f"got {D.type_meta_name(out.dtype)} instead")
    return dtype


def _caller_outside_runtime() -> int:
    """The stacklevel, for a warning its caller gives, of the first frame outside runtime (the
    user's line, as PyTorch's C++ warnings point at, through any wrappers of the op)."""
    import os
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    level, frame = 2, sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(root):
        frame, level = frame.f_back, level + 1
    return level


def _resize_out(out: Tensor, shape: tuple[int, ...]) -> None:
    if is_tracing():
        raise GraphBreak("an out= tensor resized")
    if out.numel():
        warnings.warn(
            f"An output with one or more elements was resized since it had shape "
            f"{list(out.shape)}, which does not match the required output shape {list(shape)}. "
            "This behavior is deprecated, and in a future PyTorch release outputs will not be "
            "resized unless they have zero elements. You can explicitly reuse an out tensor t by "
            "resizing it, inplace, to zero elements with t.resize_(0).", UserWarning,
            stacklevel=_caller_outside_runtime())
    out._data = out.xp.empty(shape, dtype=out._data.dtype)


def as_float(x: Tensor) -> Tensor:
    """x, or an integer or bool x in the default float dtype (the input of exp, sigmoid...)."""
    return x if x.dtype.is_floating_point else cast(x, D.default_float)


def half_in_float32(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """fn of a float16 tensor (and float16 tensor arguments) computed in float32 and rounded to
    float16 once, as PyTorch's kernels compute half (its opmath type); fn's own steps would
    each round to float16, an ulp or more off (sigmoid, softmax, layer_norm, cumsum)."""

    def wide(a: Any) -> Any:
        return cast(a, D.float32) if isinstance(a, Tensor) and a.dtype in D.LOW_FLOATS else a

    @functools.wraps(fn)
    def run(input: Tensor, *args: Any, **kwargs: Any) -> Tensor:  # noqa: A002 - as torch
        if input.dtype not in D.LOW_FLOATS:
            return fn(input, *args, **kwargs)
        if kwargs.get("out") is not None:  # written into as it is, after the half result
            return fn(input, *args, **kwargs)
        result = fn(wide(input), *map(wide, args), **{k: wide(v) for k, v in kwargs.items()})
        return cast(result, input.dtype) if result.dtype is D.float32 else result

    return run


def binary_in_float32(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """fn(input, other) whose result would be float16 or bfloat16 computed in float32 and
    rounded once, as PyTorch's kernels compute them (the opmath type), its backward node
    keeping fn's name; fn's own steps each rounded (hypot, logaddexp: a third of float16
    results an ulp off)."""

    @functools.wraps(fn)
    def run(input: Any, other: Any, *args: Any, **kwargs: Any) -> Tensor:  # noqa: A002
        tensors = [t for t in (input, other) if isinstance(t, Tensor)]
        if not any(t.dtype in D.LOW_FLOATS for t in tensors):
            return fn(input, other, *args, **kwargs)
        dtype = D.result_dtype([t.dtype for t in tensors],
                               [v for v in (input, other) if not isinstance(v, Tensor)],
                               [t.ndim for t in tensors])
        if dtype not in D.LOW_FLOATS:
            return fn(input, other, *args, **kwargs)
        wide = (cast(v, D.float32) if isinstance(v, Tensor) else v for v in (input, other))
        result = fn(*wide, *args, **kwargs)
        node = result.grad_fn
        out = cast(result, dtype)
        return renamed(out, node.name()) if node is not None else out

    return run


def _axes(dim: Any, ndim: int) -> tuple[int, ...]:
    """The reduced axes of a reduction over ``dim`` (None or an empty list: all), wrapped
    and sorted; PyTorch's errors for a dim out of range or named twice."""
    if dim is None:
        return tuple(range(ndim))
    dims = (dim,) if not isinstance(dim, (tuple, list)) else dim
    if not dims:
        return tuple(range(ndim))
    axes = wrap_dims(dims, ndim)
    return tuple(sorted(axes)) if ndim else ()


def _shape_arg(shape: Sequence[Any]) -> tuple[int, ...]:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return tuple(int(s) for s in shape)


def is_expandable_to(shape: tuple[int, ...], desired: tuple[int, ...]) -> bool:
    if len(shape) > len(desired):
        return False
    for s, d in zip(reversed(shape), reversed(desired)):
        if s != d and s != 1:
            return False
    return True


def sum_to(g: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Sum a broadcast gradient back down to ``shape``."""
    shape = tuple(shape)
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, s in enumerate(shape) if s == 1 and g.shape[lead + i] != 1)
    r = _sum_in_two(g, axes)
    return r if r.shape == shape else apply(P.RESHAPE, r, shape=shape)


def _sum_in_two(g: Tensor, axes: tuple[int, ...]) -> Tensor:
    """The sum of ``g`` over ``axes`` (not keeping them). Where they are some trailing axes
    and others before a kept one (a per-channel sum of (N, C, H, W): axes 0, 2, 3), the
    trailing ones first (a row reduction, which a compiled plan fuses into the kernel that
    computes ``g``), then the rest over what is left: a sum numpy would run over strided
    axes as one slow pass."""
    nd = g.ndim
    tail = 0
    while tail < len(axes) and axes[len(axes) - 1 - tail] == nd - 1 - tail:
        tail += 1
    if tail == 0 or tail == len(axes) or tail == nd:
        return apply(P.SUM, g, axes=axes, keepdim=False)
    rows = apply(P.SUM, g, axes=axes[len(axes) - tail:], keepdim=False)
    return apply(P.SUM, rows, axes=axes[:len(axes) - tail], keepdim=False)


# --- elementwise ---------------------------------------------------------------------------


def add(input: Any, other: Any, *, alpha: Any = 1,  # noqa: A002
        out: Tensor | None = None) -> Tensor:
    if out is not None:
        return written_to(out, add(input, other, alpha=alpha), "add")
    _check_alpha(input, other, alpha)
    if stands_for_number(alpha):
        return _add_number_alpha(input, other, alpha)
    if alpha != 1 and _is_bool(input) and _is_bool(other) and not isinstance(alpha, float):
        # bools: alpha as a bool, as PyTorch's
        return apply(P.ADD, input, other if alpha else False)
    if alpha != 1:
        other = _promoted_other(input, other)
    if alpha != 1 and _fused_alpha(input, other, alpha):
        return apply(P.ADD_SCALED, input, other, alpha=_alpha_in(input.dtype, alpha))
    return apply(P.ADD, input, other if alpha == 1 else _scaled(other, alpha))


def _check_alpha(input: Any, other: Any, alpha: Any) -> None:  # noqa: A002
    """PyTorch's alpha_check of add/sub (and their in-place forms) against the operands'
    promoted dtype: a bool alpha for a bool result only, an integral alpha for an integer
    or bool one, and alpha converted into it checked (int8's 200 overflows); rt ignored a
    float alpha of integers and a bool one of floats."""
    if type(alpha) is int and alpha == 1:
        return  # the default: nothing to check
    if isinstance(alpha, Tensor) or stands_for_number(alpha):  # (a compiled step's number
        return  # argument: its value is not read)
    if type(alpha) is float and isinstance(input, Tensor) and input.dtype.is_floating_point \
            and (not isinstance(other, Tensor) or other.dtype is input.dtype):
        D.scalar_as(alpha, input.dtype)  # an optimizer's p.add_(g, alpha=-lr): its range only
        return
    tensors = [t for t in (input, other) if isinstance(t, Tensor)]
    dtype = D.result_dtype([t.dtype for t in tensors],
                           [v for v in (input, other) if not isinstance(v, Tensor)],
                           [t.ndim for t in tensors])
    if isinstance(alpha, (bool, np.bool_)) and dtype is not D.bool_:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if not dtype.is_floating_point and not isinstance(alpha, (int, np.integer, np.bool_)):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")
    if dtype is not D.bool_:
        D.scalar_as(alpha, dtype)  # (its overflow error)


def _check_alpha_inplace(t: Tensor, other: Any, alpha: Any) -> None:
    """add_'s/sub_'s checks in PyTorch's order: the result's cast into ``t`` first (its
    iterator's), then alpha's (none for the default: apply_inplace checks the cast)."""
    if type(alpha) is int and alpha == 1:
        return
    result = D.result_dtype([t.dtype], [other]) if not isinstance(other, Tensor) else \
        D.result_dtype([t.dtype, other.dtype], [], [t.ndim, other.ndim])
    if result.category > t.dtype.category:
        raise RuntimeError(f"result type {D.scalar_type_name(result)} can't be cast to the "
                           f"desired output type {D.scalar_type_name(t.dtype)}")
    _check_alpha(t, other, alpha)


def _promoted_other(input: Any, other: Any) -> Any:  # noqa: A002
    """add's/sub's ``other`` tensor in the two tensors' promoted dtype, before alpha scales
    it, as PyTorch's kernel computes input + alpha * other: int16 7 - 2 * uint8 255 is -503
    (scaled in uint8 first, 2 * 255 wrapped to 254)."""
    if not (isinstance(input, Tensor) and isinstance(other, Tensor)) or input.dtype is other.dtype:
        return other
    dtype = D.result_dtype([input.dtype, other.dtype], [], [input.ndim, other.ndim])
    return other if other.dtype is dtype else cast(other, dtype)


def _fused_alpha(input: Any, other: Any, alpha: Any) -> bool:  # noqa: A002
    """Whether add/sub with this alpha runs as PyTorch's float kernel, input + alpha * other
    rounded once (fma): two tensors of one float dtype on one device, a number alpha (a
    compiled step's kernels fuse it, rounded once: the kernel IR's Fma)."""
    return (isinstance(input, Tensor) and isinstance(other, Tensor)
            and input.dtype.is_floating_point and other.dtype is input.dtype
            and other.device == input.device and type(alpha) in (int, float))


def _add_number_alpha(input: Any, other: Any, alpha: Tensor, inplace: bool = False  # noqa: A002
                      ) -> Tensor:
    """add (or add_) with an alpha standing for a number argument (``p.add_(g,
    alpha=-lr)`` with ``lr`` passed per call): where PyTorch's float kernel rounds input +
    alpha * other once, that fma as an addcmul by the alpha (rounded to the tensors' dtype,
    as the kernel takes it); elsewhere other scaled, then added."""
    run = apply_inplace if inplace else apply
    if _fused_alpha(input, other, 1.0):
        return run(P.ADDCMUL, input, other, alpha, value=1)
    return run(P.ADD, input, _scaled(other, alpha) if isinstance(other, Tensor)
               else mul(alpha, other))


def _alpha_in(dtype: D.DType, alpha: Any) -> float:
    """alpha as PyTorch's kernel takes it: rounded to a half dtype, else as it is."""
    return float(np.asarray(alpha, dtype.np)) if dtype in D.LOW_FLOATS else alpha


def _scaled(b: Tensor, scalar: Any) -> Tensor:
    """``b * scalar`` for a scalar PyTorch keeps as an attribute, not a saved tensor (add's
    alpha, lerp's weight): a second backward through it does not raise. A Python number
    ``b`` is scaled as a number (``add(t, 3.0, alpha=2)`` is ``t + 6.0``)."""
    if not isinstance(b, Tensor):
        return b * scalar
    return keeps_saved(mul(b, scalar))


_BOOL_MINUS = ("the `-` operator, {} a bool tensor is not supported. If you are trying to "
               "invert a mask, use the `~` or `logical_not()` operator instead.")


def _is_bool(v: Any) -> bool:
    return v.dtype is D.bool_ if isinstance(v, Tensor) else isinstance(v, (bool, np.bool_))


def sub(input: Any, other: Any, *, alpha: Any = 1,  # noqa: A002
        out: Tensor | None = None) -> Tensor:
    if out is not None:
        return written_to(out, sub(input, other, alpha=alpha), "sub")
    _check_bool_sub(input, other)
    _check_alpha(input, other, alpha)
    if stands_for_number(alpha):
        return _add_number_alpha(input, other, neg(alpha))
    if alpha != 1:
        other = _promoted_other(input, other)
    if alpha != 1 and _fused_alpha(input, other, alpha):
        return apply(P.SUB_SCALED, input, other, alpha=_alpha_in(input.dtype, alpha))
    return apply(P.SUB, input, other if alpha == 1 else _scaled(other, alpha))


def _check_bool_sub(input: Any, other: Any) -> None:
    """PyTorch's errors for a subtraction with a bool operand (sub and sub_ alike)."""
    if _is_bool(input) and _is_bool(other):
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if _is_bool(input) or _is_bool(other):
        raise RuntimeError("Subtraction, " + _BOOL_MINUS.format("with"))


def neg(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    if out is not None:
        return written_same(out, neg(input), "neg")
    if input.dtype is D.bool_:
        raise RuntimeError("Negation, " + _BOOL_MINUS.format("on"))
    return apply(P.NEG, input)


def reversed_order(x: Tensor) -> Tensor:
    """A map reversing x's order exactly: -x for floats, ~x (-x - 1, which cannot overflow) for
    integers, not x for bools; min is reversed_order(max(reversed_order(x)))."""
    return neg(x) if x.dtype.is_floating_point else bitwise_not(x)


def _op(prim: Any, name: str, doc: str | None = None) -> Any:
    """The functional form of a primitive, with PyTorch's parameters: ``name(input)`` or
    ``name(input, other)`` runs ``prim`` on them (``torch.tanh(input=x)`` works, so does this)."""
    if name == "tanh_backward":
        def fn(grad_output: Any, output: Any) -> Tensor:
            return apply(prim, grad_output, output)
    elif name in _BINARY_OPS:
        def fn(input: Any, other: Any, *, out: Tensor | None = None  # noqa: A002
               ) -> Tensor:
            if out is None:
                return apply(prim, input, other)
            return written_to(out, apply(prim, input, other), name)
    else:
        def fn(input: Any, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
            if out is None:
                return apply(prim, input)
            return written_to(out, apply(prim, input), name)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc or f"The {prim.name} primitive."
    return fn


_BINARY_OPS = frozenset("mul maximum minimum eq ne lt le gt ge logical_and atan2 fmod remainder "
                        "floor_divide".split())


def _op_no_bool(prim: Any, name: str, kernel: str) -> Any:
    """_op for a primitive PyTorch has no bool kernel for: a bool tensor is its error."""
    def fn(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
        if isinstance(input, Tensor) and input.dtype is D.bool_:
            raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")
        if out is None:
            return apply(prim, input)
        return written_same(out, apply(prim, input), name)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"The {prim.name} primitive."
    return fn


mul = _op(P.MUL, "mul")


def pow(input: Any, exponent: Any, *,  # noqa: A001, A002 - PyTorch's names
        out: Tensor | None = None) -> Tensor:
    if out is not None:
        return written_to(out, pow(input, exponent), "pow")
    if isinstance(input, Tensor):
        _check_scalar_exponent(input, exponent)
    if isinstance(exponent, Tensor) and exponent.dtype is D.bool_ and _is_bool(input):
        raise NotImplementedError("\"pow\" not implemented for 'Bool'")
    if isinstance(input, Tensor) and input.dtype is D.bool_ and type(exponent) is bool:
        # PyTorch's bool result (numpy's int8)
        return ne(input, False) if exponent else eq(input, input)
    result = _int_pow(input, exponent) if _is_int_pow(input, exponent) else \
        apply(P.POW, input, exponent)
    # PyTorch's overloads: pow(Tensor, Scalar), pow(Tensor, Tensor), pow(Scalar, Tensor)
    if not isinstance(exponent, Tensor):
        return result
    return named(result, "PowBackward1" if isinstance(input, Tensor) else "PowBackward2")


# integer dtypes an int exponent is converted into, checked (int64's takes any int)
_CHECKED_INT_EXPONENTS = frozenset((D.uint8, D.int8, D.int16, D.int32))


def _check_scalar_exponent(t: Tensor, exponent: Any) -> None:
    """PyTorch's errors for pow(Tensor, Scalar) and pow_: a negative int exponent of an integer
    or bool tensor, and an exponent out of the range of the dtype it is converted into (a
    float16's or bfloat16's number, a narrow integer tensor's int: uint8 ** 256 and
    int8 ** 128 raise, where rt wrapped them)."""
    if type(exponent) is int and exponent < 0 and not t.dtype.is_floating_point:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    if (t.dtype in D.LOW_FLOATS and type(exponent) in (int, float)) or (
            t.dtype in _CHECKED_INT_EXPONENTS and type(exponent) is int):
        D.scalar_as(exponent, t.dtype)  # (its overflow error)


def _is_int_pow(a: Any, b: Any) -> bool:
    """An integer power whose exponent tensor may hold negatives (numpy raises for them)."""
    if not isinstance(b, Tensor) or b.dtype.category != 1 or not b.dtype.is_signed:
        return False
    return not isinstance(a, float) and not (isinstance(a, Tensor) and a.dtype.is_floating_point)


def _int_pow(a: Any, b: Tensor) -> Tensor:
    """a ** b in integers, PyTorch's rule where b < 0: 1 for a == 1, +-1 by b's parity for
    a == -1, 0 for any other a (numpy raises); from primitives alone, no value read. The
    exponent is first cast to the result dtype, as PyTorch's kernel reads it: an int64 -2
    raising a uint8 tensor is 254 (3 ** 254 wraps to 57), and no rule for negatives applies."""
    a_dtypes = [a.dtype] if isinstance(a, Tensor) else []
    dtype = D.result_dtype([*a_dtypes, b.dtype], [] if a_dtypes else [a],
                           [a.ndim, b.ndim] if a_dtypes else [b.ndim])
    if b.dtype is not dtype:
        b = cast(b, dtype)
    if not dtype.is_signed:
        return apply(P.POW, a, b)
    negative = lt(b, 0)
    p = apply(P.POW, a, where(negative, remainder(b, 2), b))
    unit = logical_and(ne(a, 1), ne(a, -1)) if isinstance(a, Tensor) else \
        builtins.abs(int(a)) != 1
    return where(logical_and(negative, unit), 0, p)


maximum = _op(P.MAXIMUM, "maximum")
minimum = _op(P.MINIMUM, "minimum")
eq = _op(P.EQ, "eq")
ne = _op(P.NE, "ne")
lt = _op(P.LT, "lt")
le = _op(P.LE, "le")
gt = _op(P.GT, "gt")
ge = _op(P.GE, "ge")
logical_and = _op(P.LOGICAL_AND, "logical_and")
exp = _op(P.EXP, "exp")
log = _op(P.LOG, "log")
sin = _op(P.SIN, "sin")
cos = _op(P.COS, "cos")
tanh = _op(P.TANH, "tanh")
tanh_backward = _op(P.TANH_BACKWARD, "tanh_backward",
                    "g * (1 - y * y), the gradient through y = tanh(x).")
sqrt = _op(P.SQRT, "sqrt")
abs = _op_no_bool(P.ABS, "abs", "abs_cpu")  # noqa: A001


def sign(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """-1, 0 or 1 by x's sign; a bool x is its own sign, as PyTorch's."""
    if out is not None:
        return written_same(out, sign(input), "sign")
    return apply(P.SIGN, input) if input.dtype is not D.bool_ else clone(input)


@named_backward("SgnBackward0")
def sgn(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """PyTorch's sgn: sign, for real tensors."""
    if out is not None:
        return written_to(out, sgn(input), "sgn")
    return sign(input)


erf = _op(P.ERF, "erf")
log1p = _op(P.LOG1P, "log1p")
expm1 = _op(P.EXPM1, "expm1")
log2 = _op(P.LOG2, "log2")
log10 = _op(P.LOG10, "log10")
tan = _op(P.TAN, "tan")
asin = _op(P.ASIN, "asin")
acos = _op(P.ACOS, "acos")
atan = _op(P.ATAN, "atan")
sinh = _op(P.SINH, "sinh")
cosh = _op(P.COSH, "cosh")
asinh = _op(P.ASINH, "asinh")
acosh = _op(P.ACOSH, "acosh")
atanh = _op(P.ATANH, "atanh")
atan2 = _op(P.ATAN2, "atan2", "The angle of the point (b, a): arctan(a / b) in its quadrant.")
_fmod = _op(P.FMOD, "fmod", "a % b with the sign of a (C's fmod), as PyTorch's fmod.")
floor = _op_no_bool(P.FLOOR, "floor", "floor_vml_cpu")
ceil = _op_no_bool(P.CEIL, "ceil", "ceil_vml_cpu")
trunc = _op_no_bool(P.TRUNC, "trunc", "trunc_vml_cpu")
_remainder = _op(P.REMAINDER, "remainder",
                 "a % b with the sign of b (Python's rule, as PyTorch's).")


def _by_other(op: Callable[..., Tensor], node: str) -> Callable[..., Tensor]:
    """``op(input, other)`` whose node is PyTorch's overload's: ``node`` + 0 for a number
    ``other``, + 1 for a tensor (FmodBackward1)."""
    def fn(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
        if out is not None:
            return written_to(out, fn(input, other), op.__name__)
        result = op(input, other)
        return named(result, f"{node}{1 if isinstance(other, Tensor) else 0}") \
            if result is not input else result

    fn.__name__ = fn.__qualname__ = op.__name__
    fn.__doc__ = op.__doc__
    return fn


fmod = _by_other(_fmod, "FmodBackward")
_remainder_of = _by_other(_remainder, "RemainderBackward")


def remainder(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """a % b with the sign of b (Python's rule, as PyTorch's). A number's remainder by a
    tensor (``3 % t``, PyTorch's Scalar_Tensor overload) has no derivative there: a float
    result of a tensor that requires grad raises in backward, as its."""
    result = _remainder_of(input, other, out=out)
    if out is not None or isinstance(input, Tensor) or not _grad_state.enabled:
        return result
    from .composite import no_derivative

    return no_derivative(result, (other,), RuntimeError,
                         "derivative for aten::remainder is not implemented")
_floor_divide = _op(P.FLOOR_DIVIDE, "floor_divide", "a // b rounded toward minus infinity.")


def floor_divide(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """a // b rounded toward minus infinity. PyTorch records it with no derivative: a float
    result of an input that requires grad raises in backward, as its."""
    result = _floor_divide(input, other, out=out)
    if out is not None or not _grad_state.enabled:
        return result
    from .composite import no_derivative

    return no_derivative(result, (input, other), RuntimeError,
                         "derivative for aten::floor_divide is not implemented")


def div(input: Any, other: Any, *, rounding_mode: str | None = None,  # noqa: A002
        out: Tensor | None = None) -> Any:
    """a / b (true division: integers give float32); ``rounding_mode`` "trunc" rounds the
    quotient toward zero, "floor" toward minus infinity, in the operands' promoted dtype (an
    integer quotient stays integer, and dividing one by zero is PyTorch's error). A rounded
    quotient passes a zero gradient, as PyTorch's."""
    if out is not None:
        return written_to(out, div(input, other, rounding_mode=rounding_mode), "div")
    if rounding_mode is None:
        result = apply(P.DIV, input, other)
        if isinstance(other, Tensor) and other._rg:  # PyTorch's DivBackward0 then saves a
            refuse_saved_inference(result, input)
        return result
    if rounding_mode not in ("trunc", "floor"):
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                           f"but found '{rounding_mode}'")
    tensors = [t for t in (input, other) if isinstance(t, Tensor)]
    dtype = D.result_dtype([t.dtype for t in tensors],
                           [v for v in (input, other) if not isinstance(v, Tensor)],
                           [t.ndim for t in tensors])
    if dtype is D.bool_:
        raise NotImplementedError(f"\"div_{rounding_mode}_cpu\" not implemented for 'Bool'")
    if dtype.is_floating_point:
        # a rounded quotient has no derivative (numpy's floor_divide, Python's //, as
        # PyTorch's div_floor, none at all): PyTorch's zeros reach each operand that asks for
        # one, the quotient's values kept (-0 too); trunc's zero times the quotient's gradient
        # was NaN where b is 0 or NaN
        plain = [t.detach() if isinstance(t, Tensor) else t for t in (input, other)]
        result = trunc(apply(P.DIV, *plain)) if rounding_mode == "trunc" \
            else floor_divide(*plain)
        zeros = [mul(sign(t), 0.0) for t in tensors if t._rg]
        if not zeros:
            return result
        from .composite import straight_through

        return straight_through(result, zeros[0] if len(zeros) == 1 else add(*zeros),
                                "DivBackward2")
    q = floor_divide(input, other)
    if rounding_mode == "floor":
        return q
    # the floor is one below the truncation where the quotient is negative and inexact; a
    # number or 0-d tensor takes the quotient's dtype first (-2 is 254 for a uint8 tensor, as
    # PyTorch's)
    input, other = (cast(v, dtype) if isinstance(v, Tensor) and v.dtype is not dtype else v
                    for v in (input, other))
    negative = ne(*(lt(v, 0) if isinstance(v, Tensor) else
                    bool(np.array(v).astype(dtype.np) < 0) for v in (input, other)))
    inexact = ne(remainder(input, other), 0)
    return add(q, cast(logical_and(inexact, negative), q.dtype))


def where(condition: Tensor, input: Any = None, other: Any = None, *,  # noqa: A002
          out: Tensor | None = None) -> Any:
    """input where condition holds, else other; ``where(condition)`` alone is
    ``nonzero(condition, as_tuple=True)``."""
    if input is None and other is None:
        from .extra_ops import nonzero

        return nonzero(condition, as_tuple=True)
    if out is not None:  # the out= overload takes tensors only (PyTorch's parser's error)
        for arg, position in ((input, "input' (position 2"), (other, "other' (position 3")):
            if not isinstance(arg, Tensor):
                raise TypeError(f"where(): argument '{position}) must be Tensor, not "
                                f"{type(arg).__name__}")
    if isinstance(condition, Tensor) and condition.dtype is not D.bool_ \
            and condition.dtype is not D.uint8:
        raise RuntimeError("where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {D.scalar_type_name(condition.dtype)}")
    if isinstance(condition, Tensor) and condition.dtype is D.uint8:
        warnings.warn("where received a uint8 condition tensor. This behavior is deprecated and "
                      "will be removed in a future version of PyTorch. Use a boolean condition "
                      "instead.", UserWarning, stacklevel=2)
        condition = ne(condition, 0)
    tensor = other if type(input) is int else input if type(other) is int else None
    if isinstance(tensor, Tensor) and tensor.dtype.category == 1:
        # an int operand converts into the integer result checked, as PyTorch's where (its
        # overflow error; uint8's -1 is 255), not wrapped round as arithmetic's
        input, other = (D.scalar_as(v, tensor.dtype) if type(v) is int else v
                        for v in (input, other))
    result = apply(P.WHERE, condition, input, other)
    if type(input) is bool and type(other) is bool:  # two bools: a bool result, as PyTorch
        result = cast(result, D.bool_)
    return result if out is None else written_to(out, result, "where")


def clamp(input: Tensor, min: Any = None, max: Any = None, *,  # noqa: A002
          out: Tensor | None = None) -> Tensor:
    """x limited to [min, max]; tensor bounds broadcast, and take the gradient where they
    are the result (as PyTorch's: x's where min <= x <= max)."""
    if out is not None:
        return written_same(out, clamp(input, min, max), "clamp")
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        result = input
        for bound, past in ((min, lt), (max, gt)):
            if bound is not None:
                result = _clamped_to(result, bound, past)
        refuse_saved_inference(result, input, min, max)  # PyTorch's ClampBackward1 saves them
        return named(result, "ClampBackward0") if result is not input else result
    rdt = _clamp_dtype(input, min, max)
    min, max = _clamp_bounds(rdt, min, max)
    return apply(P.CLAMP, input if rdt is input.dtype else cast(input, rdt), min=min, max=max)


def _clamp_bounds(rdt: D.DType, lo: Any, hi: Any) -> tuple[Any, Any]:
    """Integer bounds converted into an integer ``rdt`` as PyTorch's clamp does: its overflow
    error out of range, uint8's negatives wrapped round (-5 is 251); a bool result (a bool
    tensor between bool bounds) PyTorch's error naming its kernel (rt clamped the bools)."""
    if rdt is D.bool_:
        kernel = "clamp_scalar_cpu" if lo is not None and hi is not None else \
            "clamp_min_scalar_cpu" if lo is not None else "clamp_max_scalar_cpu"
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")
    if rdt.category != 1:
        return lo, hi
    return tuple(D.scalar_as(b, rdt) if type(b) is int else b  # type: ignore[return-value]
                 for b in (lo, hi))


def _clamped_to(x: Tensor, bound: Any, past: Callable[[Any, Any], Tensor]) -> Tensor:
    """x clamped to one bound (a tensor among clamp's bounds): the bound where x is ``past``
    it, and a nan bound's nan, as PyTorch's clamp_min/clamp_max kernels propagate it (x
    itself there before); no gradient reaches either there, as PyTorch's masks give none."""
    clamped = where(past(x, bound), bound, x)
    if not isinstance(bound, Tensor) or not bound.dtype.is_floating_point:
        return clamped
    fixed = bound.detach()
    return where(fixed.isnan(), fixed, clamped)




def _clamp_dtype(x: Tensor, lo: Any, hi: Any) -> D.DType:
    """clamp's result dtype with scalar bounds: an integer x with float bounds is float32."""
    return D.result_dtype([x.dtype], [b for b in (lo, hi) if b is not None])


def cast(x: Tensor, dtype: Any) -> Tensor:
    return apply(P.CAST, x, dtype=D.as_dtype(dtype))


def to_device(x: Tensor, device: str) -> Tensor:
    return apply(P.TO_DEVICE, x, device=str(device))  # a plain string in plans and attrs


def clone(input: Tensor, *, memory_format: Any = None) -> Tensor:  # noqa: A002
    """A copy of input; ``memory_format`` is checked as PyTorch's, the copy row-major
    whatever it is (as ``contiguous`` takes it)."""
    if memory_format is not None:
        from .layouts import check_memory_format

        check_memory_format("clone", memory_format, input.ndim)
    return apply(P.CLONE, input)


# --- reductions ----------------------------------------------------------------------------


def sum(input: Tensor, dim: Any = None, keepdim: bool = False, *,  # noqa: A001, A002
        dtype: Any = None, out: Tensor | None = None) -> Tensor:
    if out is not None:
        return written_to(out, sum(input, dim, keepdim, dtype=_out_dtype(dtype, out)), "sum")
    if dtype is not None:
        return in_dtype(sum, input, dtype, dim, keepdim)
    result = apply(P.SUM, input, axes=_axes(dim, input.ndim), keepdim=keepdim)
    return result if dim is None else named(result, "SumBackward1")


def in_dtype(fn: Callable[..., Tensor], x: Tensor, dtype: Any, *args: Any) -> Tensor:
    """``fn(x, *args, dtype=dtype)``: x cast to ``dtype``, the result of ``dtype`` too (an
    integer sum or product, made in int64, wrapped round into int32 as PyTorch's)."""
    dt = D.as_dtype(dtype)
    out = fn(cast(x, dt), *args)
    return out if out.dtype is dt else cast(out, dt)


def _check_scan_dtype(name: str, x: Tensor, dtype: Any) -> None:
    """PyTorch's cumsum and cumprod have no bool kernel: a bool ``dtype=`` (or out=) raises
    where one would run (not for a 0-dim or empty x, which it copies; a bool x without a
    dtype is scanned in int64)."""
    if D.as_dtype(dtype) is D.bool_ and x.ndim and x.numel():
        raise NotImplementedError(f'"{name}_out_cpu" not implemented for \'Bool\'')


def cumsum(input: Tensor, dim: int, *, dtype: Any = None,  # noqa: A002
           out: Tensor | None = None) -> Tensor:
    if out is not None:
        return written_to(out, cumsum(input, dim, dtype=_out_dtype(dtype, out)), "cumsum")
    if dtype is not None:
        _check_scan_dtype("cumsum", input, dtype)
        return in_dtype(cumsum, input, dtype, dim)
    return _cumsum(input, dim)


@half_in_float32
def _cumsum(x: Tensor, dim: int) -> Tensor:
    return apply(P.CUMSUM, x, axis=int_dim("cumsum", dim, x.ndim))


def cumprod(input: Tensor, dim: int, *, dtype: Any = None,  # noqa: A002
            out: Tensor | None = None) -> Tensor:
    """The running product along ``dim`` (integers and bools in int64); its gradient is
    exact where x has zeros, as PyTorch's."""
    if out is not None:
        return written_to(out, cumprod(input, dim, dtype=_out_dtype(dtype, out)), "cumprod")
    if dtype is not None:
        _check_scan_dtype("cumprod", input, dtype)
        return in_dtype(cumprod, input, dtype, dim)
    return apply(P.CUMPROD, input, axis=int_dim("cumprod", dim, input.ndim))


def mean(input: Tensor, dim: Any = None, keepdim: bool = False, *,  # noqa: A002
         dtype: Any = None, out: Tensor | None = None) -> Tensor:
    """The mean over ``dim`` (all by default), of a floating point x or ``dtype``: an integer
    or bool mean is PyTorch's error, as it has no result dtype to infer."""
    if out is not None:
        return written_to(out, mean(input, dim, keepdim, dtype=dtype), "mean")
    rdt = input.dtype if dtype is None else D.as_dtype(dtype)
    if not rdt.is_floating_point:
        which = "Input" if dtype is None else "Optional"
        raise RuntimeError(f"mean(): could not infer output dtype. {which} dtype must be either "
                           f"a floating point or complex dtype. Got: {D.scalar_type_name(rdt)}")
    if rdt is not input.dtype:
        input = cast(input, rdt)
    result = apply(P.MEAN, input, axes=_axes(dim, input.ndim), keepdim=keepdim)
    return result if dim is None else named(result, "MeanBackward1")


def _check_reduced_nonempty(name: str, x: Tensor, dim: Any, as_given: bool = False) -> None:
    """PyTorch's errors for a reduction without an identity (max, argmax) over nothing. Its
    amax/amin (``as_given``) name the first empty dim as it was given (-1, not 1), before
    any dim named twice. A function of shapes, so a captured step raises them as eager does."""
    if x.numel():
        return
    dims = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    if dim is None or not dims:
        if name.startswith("arg"):
            raise IndexError(f"{name}(): Expected reduction dim to be specified for "
                             "input.numel() == 0.")
        raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() "
                           "== 0. Specify the reduction dim with the 'dim' argument.")
    if not as_given:
        dims = _axes(dim, x.ndim)
    for d in dims:
        if x.ndim and x.shape[wrap_dim(d, x.ndim)] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


def amax(input: Tensor, dim: Any = None, keepdim: bool = False, *,  # noqa: A002
         out: Tensor | None = None) -> Tensor:
    if out is not None:
        return written_same(out, amax(input, dim, keepdim), "amax", "amax")
    _check_reduced_nonempty("amax", input, dim, as_given=True)
    return apply(P.AMAX, input, axes=_axes(dim, input.ndim), keepdim=keepdim)


MaxResult = namedtuple("MaxResult", ["values", "indices"])


def _arg_axis(x: Tensor, dim: Any, name: str = "argmax") -> int | None:
    if dim is None:
        return None
    d = int_dim(name, dim, x.ndim)  # a 0-d tensor's dims -1 and 0 only
    return d if x.ndim else None


def _check_not_bool(name: str, x: Tensor) -> None:
    if x.dtype is D.bool_:
        raise RuntimeError(f"{name}(): does not support bool input")


def argmax(input: Tensor, dim: Any = None, keepdim: bool = False, *,  # noqa: A002
           out: Tensor | None = None) -> Tensor:
    if out is not None:
        return written_same(out, argmax(input, dim, keepdim), "argmax", "expected")
    if isinstance(dim, (tuple, list)):  # the parser's error first
        int_dim("argmax", dim, input.ndim)
    _check_not_bool("argmax", input)
    axis = _arg_axis(input, dim)
    _check_reduced_nonempty("argmax", input, dim)
    return apply(P.ARGMAX, input, axis=axis, keepdim=keepdim)


def argmin(input: Tensor, dim: Any = None, keepdim: bool = False, *,  # noqa: A002
           out: Tensor | None = None) -> Tensor:
    if out is not None:
        return written_same(out, argmin(input, dim, keepdim), "argmin", "expected")
    if isinstance(dim, (tuple, list)):  # the parser's error first
        int_dim("argmin", dim, input.ndim)
    _check_not_bool("argmin", input)
    axis = _arg_axis(input, dim, "argmin")
    _check_reduced_nonempty("argmin", input, dim)
    return apply(P.ARGMIN, input, axis=axis, keepdim=keepdim)


_MINMAX_OVERLOADS = (
    (" * (Tensor input, *, Tensor out = None)\n", " * (Tensor input, Tensor other, *, Tensor out "
     "= None)\n", " * (Tensor input, int dim, bool keepdim = False, *, tuple of Tensors out = "
     "None)\n"),
    (" * ()\n", " * (Tensor other)\n", " * (int dim, bool keepdim = False)\n"))


def _none_dim_error(name: str, method: bool, args: tuple[Any, ...], kwargs: dict[str, Any]
                    ) -> TypeError:
    """PyTorch's error for max's or min's ``dim=None``, or a keepdim without a dim (none of
    its overloads takes them): ``args`` and ``kwargs`` as given, after the tensor
    (``method``: Tensor.max's)."""
    if method and (len(args) + len(kwargs) > 1):  # only (int dim, bool keepdim) takes two
        where = " (position 1)" if args else ""
        return TypeError(f"{name}(): argument 'dim'{where} must be int, not NoneType")
    keywords = list(reversed(kwargs))  # PyTorch's parser lists them last given first
    got = [] if method else ["Tensor"]
    got += [type(a).__name__ for a in args] + [f"{k}={type(kwargs[k]).__name__}"
                                              for k in keywords]
    shown = ", ".join(got) + (", " if method and not args else "")
    first, other, along = _MINMAX_OVERLOADS[method]
    if method:  # the overloads of no argument and of a tensor say why not
        why = ("      didn't match because some of the arguments have invalid types: "
               "(!NoneType!)\n" if args else
               "      didn't match because some of the keywords were incorrect: "
               + ", ".join(keywords) + "\n")
        first, other = first + why, other + why
    elif len(args) + len(kwargs) > 1:  # more than (Tensor input, *, Tensor out) takes
        first += (
            "      didn't match because some of the arguments have invalid types: (Tensor, "
            + ", ".join(f"!{type(a).__name__}!" for a in args) + ")\n" if len(args) > 1 else
            "      didn't match because some of the keywords were incorrect: "
            + ", ".join(keywords) + "\n")
    return TypeError(f"{name}() received an invalid combination of arguments - got ({shown}), "
                     f"but expected one of:\n{first}{other}{along}")


def _refuses_none_dim(name: str, method: bool
                      ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """max or min (``method``: Tensor's) refusing ``dim=None`` and a keepdim without a dim,
    as PyTorch's parser (its overloads: all of input, another tensor, an int dim)."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def op(input: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A002
            if (args[0] is None) if args else (kwargs.get("dim", 0) is None or (
                    "keepdim" in kwargs and "dim" not in kwargs)):
                raise _none_dim_error(name, method, args, kwargs)
            return fn(input, *args, **kwargs)

        op.__name__ = op.__qualname__ = name
        return op

    return decorate


@returns("max")
def _max(input: Tensor, dim: Any = None, keepdim: bool = False, *,  # noqa: A002
        other: Tensor | None = None, out: Any = None) -> Any:
    """PyTorch's three maxs: over all of input, along ``dim`` (values and indices), and
    ``max(input, other)``, which is ``maximum``."""
    if isinstance(dim, Tensor) or other is not None:
        return maximum(input, dim if other is None else other, out=out)
    if out is not None:
        result = _max(input, dim, keepdim)
        return written_to(out, result, "max") if dim is None else \
            written_to_each(out, result, "max")
    _check_max_dim("max", input, dim)
    _check_reduced_nonempty("max", input, dim)
    if dim is None:
        # PyTorch's max() shares the gradient among ties, NaNs included (amax's mask misses
        # them: its gradient would be NaN)
        return _over_all(amax(input.detach() if input._rg else input), input, "MaxBackward1")
    # bools too, unlike argmax
    index = apply(P.ARGMAX, input, axis=_arg_axis(input, dim), keepdim=True)
    return _extreme_at(input, dim, keepdim, index, "MaxBackward0")


@returns("min")
def _min(input: Tensor, dim: Any = None, keepdim: bool = False, *,  # noqa: A002
        other: Tensor | None = None, out: Any = None) -> Any:
    """PyTorch's three mins: over all of input, along ``dim`` (values and indices), and
    ``min(input, other)``, which is ``minimum``."""
    if isinstance(dim, Tensor) or other is not None:
        return minimum(input, dim if other is None else other, out=out)
    if out is not None:
        result = _min(input, dim, keepdim)
        return written_to(out, result, "min") if dim is None else \
            written_to_each(out, result, "min")
    _check_max_dim("min", input, dim)
    _check_reduced_nonempty("min", input, dim)
    if dim is None:
        value = reversed_order(amax(reversed_order(input.detach() if input._rg else input)))
        return _over_all(value, input, "MinBackward1")
    index = apply(P.ARGMIN, input, axis=_arg_axis(input, dim), keepdim=True)
    return _extreme_at(input, dim, keepdim, index, "MinBackward0")


max = _refuses_none_dim("max", False)(_max)  # noqa: A001
min = _refuses_none_dim("min", False)(_min)  # noqa: A001
max_method = _refuses_none_dim("max", True)(_max)
min_method = _refuses_none_dim("min", True)(_min)


def _check_max_dim(name: str, x: Tensor, dim: Any) -> None:
    """max's and min's dim: an int (PyTorch's overloads' error for a tuple), in range (a 0-d
    tensor's: -1 or 0)."""
    if isinstance(dim, (tuple, list)):
        raise TypeError(
            f"{name}() received an invalid combination of arguments - got (Tensor, dim="
            f"{type(dim).__name__}), but expected one of:\n * (Tensor input, *, Tensor out = "
            "None)\n * (Tensor input, Tensor other, *, Tensor out = None)\n * (Tensor input, "
            "int dim, bool keepdim = False, *, tuple of Tensors out = None)\n")
    if dim is not None:
        wrap_dim(dim, x.ndim)


def _over_all(value: Tensor, x: Tensor, name: str) -> Tensor:
    """max() / min(): ``value`` with its gradient shared among the elements equal to it."""
    if not (x._rg and x.dtype.is_floating_point):
        return value
    from .composite import spread_among

    return spread_among(x, value, name)


def _extreme_at(x: Tensor, dim: Any, keepdim: bool, index: Tensor, name: str) -> MaxResult:
    """max(dim) / min(dim) from the index of the extreme (kept dim): the value is x there, so
    the gradient goes to that one element, as PyTorch's (amax shares it among ties: a row of
    ReLU zeros gave each a share)."""
    from .tensor_ops import gather_in_range

    if x.ndim == 0:
        values = named(clone(x), name)
        return MaxResult(values, index if keepdim else reshape(index, ()))
    d = wrap_dim(dim, x.ndim)
    values = gather_in_range(x, d, index)
    if not keepdim:
        values, index = squeeze(values, d), squeeze(index, d)
    return MaxResult(named(values, name), index)


# --- shapes --------------------------------------------------------------------------------


def _new_shape(x: Tensor, shape: Sequence[Any]) -> tuple[int, ...]:
    """The shape reshape(x, *shape) gives: a -1 inferred, the size checked (PyTorch's
    errors, as ShapeError: a RuntimeError, as PyTorch's, and the ValueError it was here)."""
    shp = list(_shape_arg(shape))
    if shp.count(-1) > 1:
        raise ShapeError("only one dimension can be inferred")
    for i, s in enumerate(shp):
        if s < -1:
            raise ShapeError(f"invalid shape dimension {s} at index {i} of shape {shp}")
    numel = x.numel()
    known = math.prod(s for s in shp if s != -1)
    if -1 in shp:
        if known == 0 and numel == 0:
            raise ShapeError(f"cannot reshape tensor of 0 elements into shape {shp} because "
                             "the unspecified dimension size -1 can be any value and is "
                             "ambiguous")
        if known == 0 or numel % known:
            raise ShapeError(f"shape '{shp}' is invalid for input of size {numel}")
        shp[shp.index(-1)] = numel // known
    elif known != numel:
        raise ShapeError(f"shape '{shp}' is invalid for input of size {numel}")
    return tuple(shp)


def sizes_or(args: tuple[Any, ...], keyword: Any, name: str, keyword_name: str
             ) -> tuple[Any, ...]:
    """The sizes a ``name(input, *sizes)`` got, or the one sequence given as ``keyword_name=``
    (``torch.reshape(input=x, shape=(2, 3))``, ``x.permute(dims=(1, 0))``)."""
    if keyword is None:
        return args
    if args:
        raise TypeError(f"{name}() got multiple values for argument '{keyword_name}'")
    return (keyword,)


def reshape(input: Tensor, *sizes: Any, shape: Any = None) -> Tensor:  # noqa: A002
    new = _new_shape(input, sizes if shape is None else sizes_or(sizes, shape, "reshape",
                                                                 "shape"))
    return apply(P.RESHAPE, input, shape=new)


_VIEW_ERROR = ("view size is not compatible with input tensor's size and stride (at least one "
               "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")


def _viewable(arr: Any, shape: tuple[int, ...]) -> bool:
    """Whether ``arr`` reshapes to ``shape`` without a copy (PyTorch's view rule: strides of
    merged dimensions must chain). A captured array knows its layout only as far as the
    tracer keeps it (a transposed matrix), so it is checked by that."""
    if isinstance(arr, MetaArray):
        return arr.flags.c_contiguous or tuple(shape[-2:]) == tuple(arr.shape[-2:])
    if not isinstance(arr, np.ndarray):  # a device array: numpy judges its strides alike
        arr = np.lib.stride_tricks.as_strided(np.zeros((), arr.dtype), arr.shape, arr.strides)
    try:
        arr.reshape(shape, copy=False)
    except ValueError:
        return False
    return True


def view(x: Tensor, *shape: Any, size: Any = None, dtype: Any = None) -> Tensor:
    """reshape that shares storage: PyTorch's error where the layout needs a copy;
    ``view(dtype)``: the same memory read as ``dtype`` (its two overloads take ``size=`` and
    ``dtype=`` by keyword too, one of them alone)."""
    if size is not None or dtype is not None:
        if shape or (size is not None and dtype is not None):
            raise TypeError(_view_overload_error(shape, size, dtype))
        shape = (dtype,) if dtype is not None else (size,)
    if len(shape) == 1 and isinstance(shape[0], D.DType):
        return _view_dtype(x, shape[0])
    new = _new_shape(x, shape)
    if new != x.shape and not _viewable(x._data, new):
        raise RuntimeError(_VIEW_ERROR)
    # always a new view, of the same shape too (PyTorch's view_as(x)._base is x), where
    # reshape may hand back x itself
    return apply(P.RESHAPE, x, shape=new)


def _view_overload_error(shape: tuple[Any, ...], size: Any, dtype: Any) -> str:
    """PyTorch's parser text for a view() call that matches neither overload."""
    got = [type(a).__name__ for a in shape]
    got += [f"{k}={'torch.dtype' if k == 'dtype' else type(v).__name__}"
            for k, v in (("size", size), ("dtype", dtype)) if v is not None]
    return (f"view() received an invalid combination of arguments - got ({', '.join(got)}), "
            "but expected one of:\n * (torch.dtype dtype)\n * (tuple of ints size)\n")


def _view_dtype(x: Tensor, dtype: D.DType) -> Tensor:
    """PyTorch's ``Tensor.view(dtype)``: x's bytes as ``dtype`` (the last dim scaled by the
    ratio of the element sizes), sharing x's storage and version counter, without history;
    PyTorch's errors where the sizes differ and the last dim cannot be reinterpreted."""
    if is_tracing():
        raise GraphBreak("Tensor.view(dtype) reinterprets memory")
    old, new = x._data.dtype.itemsize, np.dtype(dtype.np).itemsize
    data = x._data
    if old != new:
        _check_view_dtype(x, dtype, old, new)
        if data.size == 0:  # numpy strides an empty array 0 and its view(dtype) only the last
            data = x.xp.lib.stride_tricks.as_strided(data, strides=tuple(
                s * old for s in x.stride()))
    return Tensor._make(data.view(dtype.np), dtype, x.device, vc=x._vc)


def _check_view_dtype(x: Tensor, dtype: D.DType, old: int, new: int) -> None:
    """PyTorch's view_dtype checks, in its order: a smaller element needs stride(-1) 1; a
    larger one a last size and a storage offset divisible by the ratio, stride(-1) 1, then
    the other strides divisible (strides as PyTorch reads them: an empty tensor's are
    contiguous)."""
    what = (f"to view {D.scalar_type_name(x.dtype)} as {D.scalar_type_name(dtype)} "
            "(different element sizes)")
    if x.ndim == 0:
        raise RuntimeError(f"self.dim() cannot be 0 {what}")
    strides = x.stride()
    last = (f"self.stride(-1) must be 1 {what}, but got {strides[-1]}")
    if new < old:
        if strides[-1] != 1:
            raise RuntimeError(last)
        return
    ratio = new // old
    for name, value in (("self.size(-1)", x.shape[-1]), ("self.storage_offset()",
                                                          x.storage_offset())):
        if value % ratio:
            raise RuntimeError(f"{name} must be divisible by {ratio} {what}, but got {value}")
    if strides[-1] != 1:
        raise RuntimeError(last)
    for d, stride in enumerate(strides[:-1]):
        if stride % ratio:
            raise RuntimeError(f"self.stride({d}) must be divisible by {ratio} {what}, but got "
                               f"{stride}")


def view_as(x: Tensor, other: Tensor) -> Tensor:
    return view(x, other.shape)


def permute(input: Tensor, *sizes: Any, dims: Any = None) -> Tensor:  # noqa: A002
    d = _shape_arg(sizes_or(sizes, dims, "permute", "dims"))
    if len(d) != input.ndim:
        raise ShapeError(f"permute(sparse_coo): number of dimensions in the tensor input does "
                         f"not match the length of the desired ordering of dimensions i.e. "
                         f"input.dim() = {input.ndim} is not equal to len(dims) = {len(d)}")
    wrapped = tuple(wrap_dim(a, input.ndim) for a in d)
    if len(set(wrapped)) != len(wrapped):
        raise ShapeError("permute(): duplicate dims are not allowed.")
    return apply(P.PERMUTE, input, dims=wrapped)


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    if input.ndim == 0:
        wrap_dim(dim0, 0), wrap_dim(dim1, 0)
        return input
    dims = list(range(input.ndim))
    dim0, dim1 = wrap_dim(dim0, input.ndim), wrap_dim(dim1, input.ndim)
    dims[dim0], dims[dim1] = dims[dim1], dims[dim0]
    return named(apply(P.PERMUTE, input, dims=tuple(dims)), "TransposeBackward0")


def swapaxes(input: Tensor, axis0: int, axis1: int) -> Tensor:  # noqa: A002
    """transpose, with numpy's parameter names (PyTorch's swapaxes)."""
    return transpose(input, axis0, axis1)


def t_(input: Tensor, name: str = "t") -> Tensor:
    if input.ndim > 2:
        raise RuntimeError(f"{name}() expects a tensor with <= 2 dimensions, but self is "
                           f"{input.ndim}D")
    if input.ndim < 2:  # a view of its own, as PyTorch's
        return named(apply(P.RESHAPE, input, shape=input.shape), "TBackward0")
    return named(transpose(input, 0, 1), "TBackward0")


def expand(input: Tensor, *sizes: Any) -> Tensor:
    shp = _shape_arg(sizes)
    err = expand_error(input.shape, shp, _TENSOR_TYPES.get(input.dtype.name, "FloatTensor"))
    if err is not None:
        raise ShapeError(err)
    lead = len(shp) - input.ndim
    full = tuple(input.shape[i - lead] if s == -1 else s for i, s in enumerate(shp))
    if full == input.shape:
        return input
    return apply(P.EXPAND, input, shape=full)


def expand_view(input: Tensor, *sizes: Any, size: Any = None,  # noqa: A002
                implicit: bool = False) -> Tensor:
    """``Tensor.expand`` as PyTorch's: a view of its own also where the shape stays (the
    runtime's own ``expand`` returns input itself there); the sizes also as ``size=``
    (``implicit``, for PyTorch's tracer, changes nothing)."""
    if size is not None:
        if sizes:
            raise TypeError("expand() got multiple values for argument 'size'")
        sizes = (size,)
    out = expand(input, *sizes)
    return named(apply(P.RESHAPE, input, shape=input.shape), "ExpandBackward0") \
        if out is input else out


def expand_as_view(x: Tensor, other: Tensor) -> Tensor:
    return expand_view(x, other.shape)


# how PyTorch's expand error names a tensor's type
_TENSOR_TYPES = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
                 "int64": "LongTensor", "bool": "BoolTensor"}


def expand_as(x: Tensor, other: Tensor) -> Tensor:
    return expand(x, other.shape)


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    d = wrap_dim(dim, input.ndim + 1)
    return named(apply(P.RESHAPE, input, shape=input.shape[:d] + (1,) + input.shape[d:]),
                 "UnsqueezeBackward0")


def squeeze(input: Tensor, dim: Any = None) -> Tensor:
    # squeeze(dim=()) names no dim and squeezes none (a reduction's empty dims mean all)
    axes = () if isinstance(dim, (tuple, list)) and not dim else _axes(dim, input.ndim)
    shape = tuple(s for i, s in enumerate(input.shape) if not (i in axes and s == 1))
    if shape == input.shape:
        return input
    # PyTorch's overloads: squeeze(), squeeze(dim), squeeze(dims)
    which = 0 if dim is None else 1 if isinstance(dim, int) else 2
    return named(apply(P.RESHAPE, input, shape=shape), f"SqueezeBackward{which}")


def squeeze_view(input: Tensor, dim: Any = None) -> Tensor:  # noqa: A002
    """``Tensor.squeeze`` as PyTorch's: a view of its own also where no dim is squeezed (the
    runtime's own ``squeeze`` returns input itself there)."""
    out = squeeze(input, dim)
    if out is not input:
        return out
    which = 0 if dim is None else 1 if isinstance(dim, int) else 2
    return named(apply(P.RESHAPE, input, shape=input.shape), f"SqueezeBackward{which}")


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    s, e = wrap_dim(start_dim, input.ndim), wrap_dim(end_dim, input.ndim)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if input.ndim == 0:
        return reshape(input, (1,))
    if s == e:  # nothing to flatten: input itself, as PyTorch's
        return input
    shape = input.shape[:s] + (math.prod(input.shape[s:e + 1]),) + input.shape[e + 1:]
    return reshape(input, shape)


class IndexTypeError(IndexError, TypeError):
    """An index of a type that cannot index: PyTorch's IndexError, and a TypeError as this
    runtime raised before (as numpy's AxisError is both a ValueError and an IndexError)."""


def _index_tensor(a: Any, device: str) -> Tensor:
    """An int64 index tensor on ``device`` from an integer array (numpy or CuPy)."""
    from .._device import move_array

    return Tensor._make(move_array(a.astype(np.int64, copy=False), device), D.int64, device)


def _norm_key(key: Any, device: str
              ) -> tuple[Any, list[Tensor], dict[int, tuple[int, ...]]]:
    """Split an index into (template, index tensors, masks): each array index (a Tensor, list
    or ndarray) becomes an int64 tensor argument, named in the template by ``P.IndexArg(i)``.
    Bool masks become the int arrays of their nonzero() (read from data: eager only); masks
    maps each mask's first index argument to the mask's shape."""
    items = key if isinstance(key, tuple) else (key,)
    out: list[Any] = []
    idx: list[Tensor] = []
    masks: dict[int, tuple[int, ...]] = {}

    def add(t: Tensor) -> None:
        out.append(P.IndexArg(len(idx)))
        idx.append(t)

    for k in items:
        if isinstance(k, Tensor):
            if k.dtype is D.bool_:
                if is_tracing():
                    # the mask's values decide the result's shape; a capture would bake the
                    # first call's mask in (an input's data is at hand), so the step runs eagerly
                    raise GraphBreak("indexing with a bool mask tensor reads its values "
                                     "(its count is the result's shape; rt.where(mask, x, 0)"
                                     ".sum() / mask.sum() and masked_fill keep a step "
                                     "compiled)")
                if k.ndim:  # a 0-d mask indexes no dimension
                    masks[len(idx)] = k.shape
                for a in k._data.nonzero():
                    add(_index_tensor(a, device))
                continue
            if k.dtype is not D.int64:
                raise IndexTypeError("tensors used as indices must be long, int, byte or "
                                     "bool tensors")
            add(k if k.device == device else to_device(k, device))
            continue
        if isinstance(k, Sequence) and not isinstance(k, (str, bytes)):
            # a list, or any other sequence PyTorch makes a tensor of: a tuple inside the key
            # (x[(0, 2), :]), a range (forward_forward's x_[range(n), y]), a deque
            k = np.asarray(k)
            if k.size == 0:
                k = k.astype(np.int64)
        if isinstance(k, (bool, np.bool_)):
            k = np.asarray(k)
        if hasattr(k, "dtype") and hasattr(k, "ndim"):
            if k.dtype == np.bool_:
                if k.ndim:
                    masks[len(idx)] = tuple(k.shape)
                for a in k.nonzero():
                    add(_index_tensor(a, device))
                continue
            if k.dtype.kind not in "iu":
                raise IndexTypeError("tensors used as indices must be long, int, byte or "
                                     "bool tensors")
            add(_index_tensor(k, device))
        elif isinstance(k, (int, np.integer)):
            out.append(int(k))
        elif k is None or k is Ellipsis or isinstance(k, slice):
            out.append(k)
        elif isinstance(k, (str, bytes)):  # PyTorch makes it a tensor, which refuses it
            raise TypeError(f"new(): invalid data type '{type(k).__name__}'")
        else:
            raise IndexTypeError("only integers, slices (`:`), ellipsis (`...`), None and long "
                                 f"or byte Variables are valid indices (got {type(k).__name__})")
    return tuple(out), idx, masks


def check_bounds(x: Tensor, low: int, high: int, message: str, error: str = "IndexError"
                 ) -> None:
    """Raise IndexError (or ``error``: "RuntimeError") with message.format(v) for the first
    element v of the int64 tensor x outside [low, high). A primitive, so a compiled step
    checks it as eager does."""
    apply(P.CHECK_BOUNDS, x, low=int(low), high=int(high), message=message, error=error)


def _check_key(shape: tuple[int, ...], template: tuple[Any, ...], idx: list[Tensor],
               masks: dict[int, tuple[int, ...]]) -> None:
    """PyTorch's checks of an index against the indexed shape: integers, each bool mask's
    shape (``masks``: its first index argument -> its shape) and each index tensor's values."""
    consumed = len([k for k in template if k is not None and k is not Ellipsis])
    if consumed > len(shape):
        first = next(k for k in template if k is not None and k is not Ellipsis)
        if not shape and isinstance(first, int) and template[0] is not Ellipsis:
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python "
                             "or `tensor.item<T>()` in C++ to convert a 0-dim tensor to a "
                             "number")
        if not shape and isinstance(first, slice):
            raise IndexError("slice() cannot be applied to a 0-dim tensor.")
        raise IndexError(f"too many indices for tensor of dimension {len(shape)}")
    dim = 0
    for position, k in enumerate(template):
        if k is Ellipsis:
            dim += len(shape) - consumed
            continue
        if k is None or dim >= len(shape):  # too many indices: getitem names the error
            continue
        if isinstance(k, int) and not -shape[dim] <= k < shape[dim]:
            # PyTorch names the dimension by the integer's place in the key
            raise IndexError(f"index {k} is out of bounds for dimension {position} with size "
                             f"{shape[dim]}")
        if isinstance(k, P.IndexArg):
            mask = masks.get(k.position)
            if mask is not None:
                for j, m in enumerate(mask):
                    if dim + j >= len(shape) or m != shape[dim + j]:
                        raise IndexError(
                            f"The shape of the mask {list(mask)} at index {j} does not match "
                            f"the shape of the indexed tensor {list(shape)} at index {dim + j}")
            elif not any(k.position in range(p, p + len(m)) for p, m in masks.items()):
                # PyTorch names the dimension by the index tensor's place among them; a 0-d
                # one it takes as the integer it holds, by its place in the key
                size = shape[dim]
                named = position if idx[k.position].ndim == 0 else k.position
                if size == 0 and idx[k.position].ndim and idx[k.position].numel():
                    # PyTorch's index kernel checks an empty dimension before any value
                    raise IndexError("index is out of bounds for dimension with size 0")
                check_bounds(idx[k.position], -size, size, f"index {{}} is out of bounds for "
                             f"dimension {named} with size {size}")
        dim += 1


def _is_scalar_bool(k: Any) -> bool:
    if isinstance(k, (bool, np.bool_)):
        return True
    return isinstance(k, (Tensor, np.ndarray)) and k.ndim == 0 and (
        k.dtype is D.bool_ if isinstance(k, Tensor) else k.dtype == np.bool_)


def _consumed(k: Any) -> int:
    """The dimensions of x a key item indexes (a scalar bool not yet lifted: none)."""
    if k is None or _is_scalar_bool(k):
        return 0
    if isinstance(k, (Tensor, np.ndarray)) and (k.dtype is D.bool_ or k.dtype == np.bool_):
        return k.ndim
    if isinstance(k, (list, tuple)):  # a nested sequence of bools is a mask of its depth
        try:
            arr = np.asarray(k)
        except ValueError:  # ragged: not a mask
            return 1
        return arr.ndim if arr.dtype == np.bool_ else 1
    return 1


def _lift_scalar_bools(x: Tensor, key: Any) -> tuple[Tensor, Any]:
    """x and key with each 0-d bool of the key (True, False, a 0-d bool tensor) an index on a
    new axis of x of length one there, [0] where true, [] where false: numpy's and PyTorch's
    reading (``x[True]`` is x[None]; ``x[False]`` has a first dimension of 0)."""
    items = list(key) if isinstance(key, tuple) else [key]
    for i, k in enumerate(items):
        if not _is_scalar_bool(k):
            continue
        before, after = items[:i], items[i + 1:]
        if any(b is Ellipsis for b in before):
            dim = x.ndim - builtins.sum(_consumed(a) for a in after if a is not Ellipsis)
        else:
            dim = builtins.sum(_consumed(b) for b in before)
        x = unsqueeze(x, dim)
        items[i] = [0] if bool(k) else []
    return x, tuple(items)


def _index_item(k: Any) -> Any:
    """A key item as PyTorch reads it: a 0-d integer tensor (or numpy array) as its int
    (PyTorch's select: ``x[t(1), :, idx]`` keeps its dims in order; a capture, which reads
    no value, keeps it an index tensor, the same but beside a separated index tensor), an
    int32 index tensor (or a 0-d one of any integer dtype) as int64, a uint8 one as a bool
    mask (deprecated: PyTorch's warning); int8 and int16 ones stay, for _norm_key's
    error."""
    if isinstance(k, np.ndarray) and k.ndim == 0 and k.dtype.kind in "iu":
        return int(k)
    if not isinstance(k, Tensor) or k.dtype is D.bool_:
        return k
    if k.ndim == 0 and k.dtype.category == 1 and k.dtype is not D.uint8 and not is_tracing():
        return int(k.item())
    if k.dtype is D.int64:
        return k
    if k.dtype is D.uint8:
        warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a dtype "
                      "torch.bool instead.", UserWarning, stacklevel=4)
        return ne(k, 0)
    return cast(k, D.int64) if k.dtype is D.int32 or (k.dtype.category == 1 and not k.ndim) \
        else k


_SEQUENCE_KEY_WARNING = (
    "Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed "
    "in pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be "
    "interpreted as tensor index, x[torch.tensor(seq)], which will result either in an error "
    "or a different result")


def _user_key(key: Any) -> Any:
    """A key of ``t[key]`` as PyTorch's Python indexing reads it before indexing: a list of
    fewer than 32 items holding a sequence, a tensor, a slice, ``...`` or None is the tuple of
    them (with its deprecation warning; ``x[[[0, 1], [1, 0]]]`` picks two elements; any
    sequence counts, as PySequence_Check: a range, a str); a slice
    step must be positive (the runtime's own functions index with negative steps)."""
    kind = type(key)
    if kind is slice:
        if key.step is not None:
            _check_step(key.step)
        return key
    if (kind is list and len(key) < 32 and any(
            isinstance(k, (Tensor, Sequence, np.ndarray, slice)) or k is None
            or k is Ellipsis for k in key)) or (kind is str and 0 < len(key) < 32):
        warnings.warn(_SEQUENCE_KEY_WARNING, UserWarning, stacklevel=3)
        key = tuple(key)
    if type(key) is tuple:
        for k in key:
            if type(k) is slice and k.step is not None:
                _check_step(k.step)
    return key


def _check_step(step: Any) -> None:
    if isinstance(step, (int, np.integer)) and not isinstance(step, bool) and step <= 0:
        raise ValueError("slice step cannot be zero" if step == 0 else
                         "step must be greater than zero")


def tensor_getitem(self: Tensor, key: Any) -> Tensor:
    """``Tensor.__getitem__``: PyTorch's Python indexing (_user_key), then getitem."""
    return getitem(self, _user_key(key))


def tensor_setitem(self: Tensor, key: Any, value: Any) -> None:
    """``Tensor.__setitem__``: PyTorch's Python indexing (_user_key), then setitem."""
    key = _user_key(key)
    if isinstance(value, Tensor) and value.dtype is not self.dtype:
        _check_index_put_dtype(self, key, value)
    setitem(self, key, value)


def _check_index_put_dtype(t: Tensor, key: Any, value: Tensor) -> None:
    """PyTorch's index_put_ check of ``t[key] = value``, value a tensor of another dtype: an
    advanced index (a tensor, a sequence) makes it index_put_, which refuses the mismatch,
    unless it dispatches to masked_fill_ (one bool mask, a one-element value); basic indexing
    is a copy_, which casts (a number value is made in t's dtype)."""
    items = key if isinstance(key, tuple) else (key,)
    advanced = [k for k in items if isinstance(k, (Tensor, np.ndarray)) and k.ndim
                or isinstance(k, (list, tuple))]
    if not advanced:
        return
    if len(advanced) == 1 and value.numel() == 1 and _is_mask(advanced[0]):
        return
    raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                       f"{D.scalar_type_name(t.dtype)} for the destination and "
                       f"{D.scalar_type_name(value.dtype)} for the source.")


def _is_mask(k: Any) -> bool:
    if isinstance(k, Tensor):
        return k.dtype in (D.bool_, D.uint8)
    return np.asarray(k).dtype in (np.bool_, np.uint8)


def _index_items(key: Any) -> Any:
    return tuple(map(_index_item, key)) if isinstance(key, tuple) else _index_item(key)


def getitem(x: Tensor, key: Any) -> Tensor:
    """``x[key]`` for any PyTorch-style index."""
    key = _index_items(key)
    if any(_is_scalar_bool(k) for k in (key if isinstance(key, tuple) else (key,))):
        x, key = _lift_scalar_bools(x, key)
    template, idx, masks = _norm_key(key, x.device)
    _check_key(x.shape, template, idx, masks)
    if is_tracing() and any(i.ndim == 0 for i in idx) and any(i.ndim for i in idx):
        x, template, idx = _zero_d_selects(x, template, idx)
    split = _selects_first(template, idx)
    if split is not None:  # PyTorch's order: the ints' selects, then the index tensors
        x = named(getitem_key(x, key=split[0]), _index_node_name(split[0], []))
        template = split[1]
    out = named(getitem_key(x, *idx, key=template), _index_node_name(template, idx))
    if idx and is_tracing() and all(not i.ndim for i in idx):
        _note_select_by_tensor(x, out)
    return out


def _note_select_by_tensor(x: Tensor, out: Tensor) -> None:
    """A capture's ``x[i]`` whose index tensors are all 0-d: eager mode reads them as ints
    (_index_item), so its result is a view of x (PyTorch's select), where the plan's is a
    copy (a gather by a value the capture cannot read). Noted as the tracer notes ``x[n]`` of
    an int argument (its ``weak_views``): a write through it, or a read of it after x or the
    storage x is a view of was written in place, breaks the graph (the plan's copy would not
    show the write; runtime.ops.dispatch.stale_weak_view)."""
    if type(out._data) is not MetaArray:
        return
    tracer = active_tracer()
    base = tracer.storage_of(x)
    while base.view_of is not None:  # any write into x's storage moves its root's value
        base = base.view_of
    tracer.weak_views[id(out._data)] = (base, base.node)


def _zero_d_selects(x: Tensor, template: Any, idx: list[Tensor]
                    ) -> tuple[Tensor, tuple[Any, ...], list[Tensor]]:
    """A capture's ``x[key]`` with 0-d index tensors beside others (eager mode reads them as
    ints: _index_item): each taken first as a lone index on its dimension (PyTorch's select,
    which a capture cannot read the value of), then the rest of the key on that result."""
    items = template if isinstance(template, tuple) else (template,)
    consumed = builtins.sum(1 for k in items if k is not None and k is not Ellipsis)
    dim, picks, rest, kept = 0, [], [], []
    for k in items:
        if k is Ellipsis:
            dim += x.ndim - consumed
            rest.append(k)
        elif isinstance(k, P.IndexArg) and idx[k.position].ndim == 0:
            picks.append((dim, idx[k.position]))
            dim += 1
        else:
            if isinstance(k, P.IndexArg):
                rest.append(P.IndexArg(len(kept)))
                kept.append(idx[k.position])
            else:
                rest.append(k)
            dim += 0 if k is None else 1  # (x's dims: a None has none)
    for d, index in reversed(picks):  # the last first: the dims before keep their places
        x = getitem_key(x, index, key=(*(_FULL_SLICE,) * d, P.IndexArg(0)))
    return x, tuple(rest), kept


def _selects_first(template: Any, idx: list[Tensor]) -> tuple[tuple[Any, ...],
                                                             tuple[Any, ...]] | None:
    """A key of index tensors and ints as PyTorch applies it, in two steps: the key's basic
    items (each index tensor's dimension whole), then the index tensors on that view, ints
    dropped (the index tensors' dims go first where they are apart there: numpy counts an int
    as an index array, so ``x[1, :, idx]`` kept idx's dims first); None where no int meets an
    index tensor."""
    items = template if isinstance(template, tuple) else (template,)
    if not idx or not any(type(k) is int for k in items):
        return None
    basic = tuple(_FULL_SLICE if isinstance(k, P.IndexArg) else k for k in items)
    rest = tuple(k if isinstance(k, P.IndexArg) or k is Ellipsis else _FULL_SLICE
                 for k in items if type(k) is not int)
    return basic, rest


def _index_node_name(template: tuple[Any, ...], idx: list[Tensor]) -> str:
    """PyTorch's node of ``x[key]``: its last step that does something (an index tensor makes
    it Index, else an int Select, a None Unsqueeze, a slice Slice; ``:`` and ``...`` none)."""
    if idx:
        return "IndexBackward0"
    name = None
    for k in template:
        if type(k) is int:
            name = "SelectBackward0"
        elif k is None:
            name = "UnsqueezeBackward0"
        elif type(k) is slice and k != _FULL_SLICE:
            name = "SliceBackward0"
    if name is not None:
        return name
    return "AliasBackward0" if any(k is Ellipsis for k in template) else "SliceBackward0"


_FULL_SLICE = slice(None)


def getitem_key(x: Tensor, *idx: Tensor, key: Any) -> Tensor:
    """The getitem primitive on a key template and its index tensors."""
    return apply(P.GETITEM, x, *idx, key=key)


def index_backward(g: Tensor, *idx: Tensor, key: Any, shape: tuple[int, ...]) -> Tensor:
    """Zeros of ``shape`` with ``g`` scatter-added at ``key`` (getitem's adjoint)."""
    return apply(P.INDEX_BACKWARD, g, *idx, key=key, shape=tuple(shape))


def index_put(x: Tensor, value: Any, *idx: Tensor, key: Any) -> Tensor:
    """Out-of-place setitem primitive: a copy of ``x`` with ``x[key] = value``."""
    return apply(P.SETITEM, x, value, *idx, key=key)


@autocast_promote
def cat(tensors: Sequence[Tensor], dim: int = 0, *, out: Tensor | None = None) -> Tensor:
    """``tensors`` joined along ``dim``, PyTorch's checks and texts; 1-D empty tensors are
    skipped whatever the others' shape (PyTorch's legacy rule, which lets a loop start from
    ``tensor([])``), their dtype still promoting the result's."""
    if out is not None:
        result = _castable_into(out, cat(tensors, dim))
        check_no_overlap(out, *tensors)
        return written_to(out, result, "cat")
    if isinstance(tensors, Tensor):
        raise TypeError("cat(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        "Tensor")
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if t.ndim == 0:
            raise ShapeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    kept = [(i, t) for i, t in enumerate(tensors) if t.shape != (0,)]
    if not kept:  # all legacy empties: joined along dim 0, whatever dim says (PyTorch's)
        return apply(P.CAT, *tensors, axis=0)
    first = kept[0][1]
    d = wrap_dim(dim, first.ndim)
    for i, t in kept[1:]:
        if t.ndim != first.ndim:
            raise ShapeError(f"Tensors must have same number of dimensions: got {first.ndim} "
                             f"and {t.ndim}")
        for a in range(first.ndim):
            if a != d and t.shape[a] != first.shape[a]:
                raise ShapeError(f"Sizes of tensors must match except in dimension {d}. "
                                 f"Expected size {first.shape[a]} but got size {t.shape[a]} "
                                 f"for tensor number {i} in the list.")
    result = apply(P.CAT, *(t for _, t in kept), axis=d)
    if len(kept) < len(tensors):
        dtype = D.result_dtype([t.dtype for t in tensors], [])
        if dtype is not result.dtype:
            result = cast(result, dtype)
    return result


def concatenate(tensors: Sequence[Tensor], axis: int = 0, *, dim: int | None = None,
                out: Tensor | None = None) -> Tensor:
    """cat with numpy's name and ``axis`` (PyTorch's concatenate; ``dim=`` is taken too)."""
    return cat(tensors, axis if dim is None else dim, out=out)


@autocast_promote
def stack(tensors: Sequence[Tensor], dim: int = 0, *, out: Tensor | None = None) -> Tensor:
    if out is not None:
        return written_to(out, _castable_into(out, stack(tensors, dim)), "stack")
    if isinstance(tensors, Tensor):  # PyTorch's argument parser (rt read a tensor's truth)
        raise TypeError("stack(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        "Tensor")
    if not tensors:
        raise ShapeError("stack expects a non-empty TensorList")
    shape = tensors[0].shape
    for i, t in enumerate(tensors):
        if t.shape != shape:
            raise ShapeError(f"stack expects each tensor to be equal size, but got "
                             f"{list(shape)} at entry 0 and {list(t.shape)} at entry {i}")
    d = wrap_dim(dim, len(shape) + 1)
    return named(cat([unsqueeze(t, d) for t in tensors], d), "StackBackward0")


@autocast_lower
def matmul(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    if out is not None:
        return written_same(out, matmul(input, other), "matmul", "expected")
    if not (input.ndim and other.ndim) and input.device == other.device:  # devices first
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{input.ndim}D and {other.ndim}D")
    if input.dtype is D.bool_ and other.dtype is D.bool_:
        raise NotImplementedError(f"\"{_bool_matmul_kernel(input.ndim, other.ndim)}\" not "
                                  "implemented for 'Bool'")
    if input.dtype is not other.dtype:  # PyTorch's kernels check the shapes first (a dot
        # its dtypes), and name the tensors' dtypes (a bfloat16 one's kernel runs in float32)
        from .shapes import DTypeError, matmul_dtype_error, matmul_error

        err = None if input.ndim == other.ndim == 1 else matmul_error(input.shape, other.shape)
        if err is not None:
            raise ShapeError(err)
        raise DTypeError(matmul_dtype_error(input.shape, other.shape, input.dtype,
                                            other.dtype))
    return named(apply(P.MATMUL, input, other),
                 _MATMUL_NODES.get((input.ndim, other.ndim), "UnsafeViewBackward0"))


def _bool_matmul_kernel(a: int, b: int) -> str:
    """The CPU kernel PyTorch's matmul of bool operands of ranks a and b reaches, which has
    no bool case."""
    if b == 1:
        return "dot" if a == 1 else "addmv_impl_cpu"
    return "addmm_impl_cpu_" if b == 2 else "bmm"


# PyTorch's node of a matmul by the operands' ranks: the kernel it runs (a batched one
# reshapes its bmm's result: UnsafeView)
_MATMUL_NODES = {(2, 2): "MmBackward0", (1, 1): "DotBackward0", (2, 1): "MvBackward0",
                 (1, 2): "SqueezeBackward4"}


# --- in place ------------------------------------------------------------------------------


def add_(t: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
    _check_alpha_inplace(t, other, alpha)
    if t.dtype is D.bool_ and _is_bool(other) and type(alpha) is not float and alpha != 1:
        return apply_inplace(P.ADD, t, other if alpha else False)  # add's: alpha as a bool
    if stands_for_number(alpha):
        return _add_number_alpha(t, other, alpha, inplace=True)
    if alpha != 1:
        other = _promoted_other(t, other)
    if alpha != 1 and _fused_alpha(t, other, alpha):
        return apply_inplace(P.ADD_SCALED, t, other, alpha=_alpha_in(t.dtype, alpha))
    return apply_inplace(P.ADD, t, other if alpha == 1 else _scaled(other, alpha)
                         if isinstance(other, Tensor) else other * alpha)


def sub_(t: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
    _check_bool_sub(t, other)  # sub's errors (rt subtracted a bool tensor in place)
    _check_alpha_inplace(t, other, alpha)
    if stands_for_number(alpha):
        return _add_number_alpha(t, other, neg(alpha), inplace=True)
    if alpha != 1:
        other = _promoted_other(t, other)
    if alpha != 1 and _fused_alpha(t, other, alpha):
        return apply_inplace(P.SUB_SCALED, t, other, alpha=_alpha_in(t.dtype, alpha))
    return apply_inplace(P.SUB, t, other if alpha == 1 else _scaled(other, alpha)
                         if isinstance(other, Tensor) else other * alpha)


def mul_(t: Tensor, other: Any) -> Tensor:
    return apply_inplace(P.MUL, t, other)


def div_(t: Tensor, other: Any, *, rounding_mode: str | None = None) -> Tensor:
    if rounding_mode is not None:
        return copy_(t, div(t, other, rounding_mode=rounding_mode))
    return apply_inplace(P.DIV, t, other)


def true_divide(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """PyTorch's true_divide: div without a rounding mode."""
    if out is not None:
        return written_to(out, true_divide(input, other), "true_divide")
    return div(input, other)


def true_divide_(t: Tensor, other: Any) -> Tensor:
    return div_(t, other)


def pow_(t: Tensor, exponent: Any) -> Tensor:
    _check_scalar_exponent(t, exponent)  # pow's errors
    if t.dtype is D.bool_ and type(exponent) is bool:  # pow's bool result (numpy's int8)
        return copy_(t, pow(t, exponent))
    if isinstance(exponent, Tensor) and exponent.dtype is D.bool_ and t.dtype is D.bool_:
        raise NotImplementedError("\"pow\" not implemented for 'Bool'")  # pow's
    if isinstance(exponent, Tensor) and _is_int_pow(t, exponent):
        # pow's integer power (numpy raised for a negative exponent), its result's cast into
        # t checked first, as PyTorch's iterator
        result = D.result_dtype([t.dtype, exponent.dtype], [], [t.ndim, exponent.ndim])
        if result.category > t.dtype.category or (result is not D.bool_ and t.dtype is D.bool_):
            raise RuntimeError(f"result type {D.scalar_type_name(result)} can't be cast to "
                               f"the desired output type {D.scalar_type_name(t.dtype)}")
        return copy_(t, pow(t, exponent))
    return apply_inplace(P.POW, t, exponent)


def fill_(t: Tensor, value: Any) -> Tensor:
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError("fill_ only supports 0-dimension value tensor but got tensor "
                               f"with {value.ndim} dimensions.")
        if value.requires_grad:  # its gradient is the sum of t's
            return named(copy_(t, value), "FillBackward3")
        value = value.item()
    elif not is_tracing() and not (_grad_state.enabled and t._rg) \
            and overlaps_internally(t._data):
        # (a capture's values have no strides to read)
        return _fill_overlapping(t, D.scalar_as(value, t.dtype))
    return named(apply_inplace(P.FILL, t, value=D.scalar_as(value, t.dtype)), "FillBackward2")


def _fill_overlapping(t: Tensor, value: Any) -> Tensor:
    """``fill_`` (and ``zero_``) of a tensor whose elements share memory, as PyTorch allows
    for a number: every element gets it, its storage's shared ones once. numpy's broadcast
    views are read-only: the write goes through a writable alias of the storage's root."""
    writable_alias(t._data)[...] = value
    t._vc.v += 1
    return t


def zeros_like(x: Tensor) -> Tensor:
    """Zeros of x's shape, dtype and device, as a graph op: the gradient of an input a
    backward formula's output does not depend on (PyTorch's zeros, not None)."""
    return apply(P.FILL, x, value=D.scalar_as(0, x.dtype))


def zero_(t: Tensor) -> Tensor:
    return named(fill_(t, 0), "ZeroBackward0")


def written_apart(x: Tensor, result: Tensor, *inputs: Any) -> Tensor:
    """``result`` (an in-place op's, computed out of place) copied into x, after PyTorch's
    error where x shares memory with an input tensor (assert_no_overlap: the op would read
    what it had already written; the copy made that silently a read of the old values)."""
    check_no_overlap(x, *inputs)
    return copy_(x, result)


def copy_(t: Tensor, src: Tensor, non_blocking: bool = False) -> Tensor:
    """src's values written into t (broadcast, cast); the copy is always synchronous, which
    ``non_blocking`` (a permission to return early) allows."""
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' must be Tensor, not {type(src).__name__}")
    if src.shape != t.shape and broadcast_shapes(t.shape, src.shape) != t.shape:
        raise RuntimeError(f"output with shape {list(t.shape)} doesn't match the broadcast "
                           f"shape {list(broadcast_shapes(t.shape, src.shape))}")
    if src.device != t.device:
        src = to_device(src, t.device)
    check_no_partial_overlap(t, src)
    return apply_inplace(P.COPY, t, src)


def clamp_(t: Tensor, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
    if min is None and max is None:  # clamp's error (rt returned t unchanged)
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        result = clamp(t, min, max)
        if result.dtype.category > t.dtype.category:  # PyTorch's iterator's text (copy_ cast)
            raise RuntimeError(f"result type {D.scalar_type_name(result.dtype)} can't be cast "
                               f"to the desired output type {D.scalar_type_name(t.dtype)}")
        return copy_(t, result)
    rdt = _clamp_dtype(t, min, max)
    if rdt.category > t.dtype.category:  # PyTorch's text (its C++ name of t's type, here)
        raise RuntimeError(f"result type {D.scalar_type_name(rdt)} can't be cast to the desired "
                           f"output type {D.type_meta_name(t.dtype)}")
    min, max = _clamp_bounds(rdt, min, max)
    return apply_inplace(P.CLAMP, t, min=min, max=max)


def sqrt_(t: Tensor) -> Tensor:
    return apply_inplace(P.SQRT, t)


def neg_(t: Tensor) -> Tensor:
    if t.dtype is D.bool_:  # neg's error (numpy's TypeError before)
        raise RuntimeError("Negation, " + _BOOL_MINUS.format("on"))
    return apply_inplace(P.NEG, t)


def exp_(t: Tensor) -> Tensor:
    return apply_inplace(P.EXP, t)


def tanh_(t: Tensor) -> Tensor:
    return apply_inplace(P.TANH, t)


def round(input: Tensor, *, decimals: int = 0,  # noqa: A001, A002 - PyTorch's names
          out: Tensor | None = None) -> Tensor:
    """Half to even, as PyTorch's; ``decimals``: at that many places, as PyTorch computes it
    (x scaled by a power of ten, rounded, scaled back)."""
    if out is not None:
        return written_same(out, round(input, decimals=decimals), "round")
    if input.dtype is D.bool_ or (decimals and not input.dtype.is_floating_point):
        kernel = "round_cpu" if decimals else "round_vml_cpu"
        raise NotImplementedError(f"\"{kernel}\" not implemented for "
                                  f"'{D.scalar_type_name(input.dtype)}'")
    if decimals == 0:
        return apply(P.ROUND, input)
    return _round_decimals(input, decimals)


@half_in_float32
def _round_decimals(input: Tensor, decimals: int) -> Tensor:  # noqa: A002 - as round's
    """x scaled by a power of ten, rounded and scaled back; a float16 or bfloat16 x in float32
    and rounded to its dtype once, as PyTorch's kernel (its opmath type): 255.5 scaled in
    float16 was 2556, and came back 255.625."""
    if decimals > 0:
        scale = 10.0 ** decimals
        return div(apply(P.ROUND, mul(input, scale)), scale)
    scale = 10.0 ** -decimals
    return mul(apply(P.ROUND, div(input, scale)), scale)


def frac(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """x - trunc(x), as PyTorch's (the gradient passes unchanged); floats only."""
    if out is not None:
        return written_same(out, frac(input), "frac")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"frac_cpu\" not implemented for "
                                  f"'{D.scalar_type_name(input.dtype)}'")
    return named(sub(input, trunc(input)), "FracBackward0")


def lerp(input: Tensor, end: Any, weight: Any, *,  # noqa: A002
         out: Tensor | None = None) -> Tensor:
    """start + weight * (end - start) as PyTorch's CPU kernel computes it: a fused
    multiply-add (rounded once) from ``start`` where |weight| < 0.5, from ``end`` otherwise
    (a compiled step's kernels too: the kernel IR's Fma)."""
    if out is not None:
        check_no_partial_overlap(out, input, end, weight)
        return written_to(out, lerp(input, end, weight), "lerp")
    _check_lerp(input, end, weight)
    if isinstance(weight, Tensor) and weight.ndim == 0 and weight.dtype is not input.dtype:
        weight = cast(weight, input.dtype)  # a 0-d weight of another float dtype: converted
    if isinstance(weight, Tensor):
        return apply(P.LERP_TENSOR, input, end, weight)
    _check_lerp_weight(input, weight)
    return apply(P.LERP, input, end, weight=weight)


def _check_lerp_weight(input: Tensor, weight: Any) -> None:  # noqa: A002
    """PyTorch's error for a number weight beyond float's range (the kernel's opmath type
    but for a double tensor)."""
    if input.dtype is not D.float64 and math.isfinite(weight) and builtins.abs(weight) > _F32_MAX:
        raise RuntimeError("value cannot be converted to type float without overflow")


_F32_MAX = float(np.finfo(np.float32).max)


def _check_lerp(input: Tensor, end: Any, weight: Any) -> None:  # noqa: A002
    """PyTorch's errors: end a tensor, weight a tensor or a number, of input's dtype, a
    floating one."""
    if not isinstance(end, Tensor) or not isinstance(weight, (Tensor, bool, int, float)):
        got = ", ".join("Tensor" if isinstance(a, Tensor) else type(a).__name__
                        for a in (input, end, weight))
        raise TypeError(f"lerp() received an invalid combination of arguments - got ({got}), "
                        "but expected one of:\n"
                        " * (Tensor input, Tensor end, Tensor weight, *, Tensor out = None)\n"
                        " * (Tensor input, Tensor end, Number weight, *, Tensor out = None)\n")
    if end.dtype is not input.dtype:  # no promotion, as PyTorch
        raise RuntimeError(f"expected dtype {D.type_meta_name(input.dtype)} for `end` but got "
                           f"dtype {D.type_meta_name(end.dtype)}")
    if isinstance(weight, Tensor) and weight.ndim and weight.dtype is not input.dtype:
        raise RuntimeError(f"expected dtype {D.type_meta_name(input.dtype)} for `weight` but "
                           f"got dtype {D.type_meta_name(weight.dtype)}")
    if not input.dtype.is_floating_point:
        kernel = "lerp_kernel_tensor" if isinstance(weight, Tensor) else "lerp_kernel_scalar"
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{D.scalar_type_name(input.dtype)}'")  # floats only


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1,  # noqa: A002
            out: Tensor | None = None) -> Tensor:
    """t + value * t1 * t2."""
    if out is not None:
        check_no_partial_overlap(out, input, tensor1, tensor2)
        return written_to(out, addcmul(input, tensor1, tensor2, value=value), "addcmul")
    if _fused_addcmul(input, tensor1, tensor2):
        return apply(P.ADDCMUL, input, tensor1, tensor2, value=value)
    return _addcmul_composite(input, tensor1, tensor2, value=value)


@half_in_float32
@named_backward("AddcmulBackward0")
def _addcmul_composite(input: Tensor, tensor1: Tensor, tensor2: Tensor, *,  # noqa: A002
                       value: Any = 1) -> Tensor:
    tensor1, tensor2 = _promoted_with(input, tensor1, tensor2)
    value = _addcmul_value(tensor1.dtype, value)
    return add(input, mul(mul(tensor1, value), tensor2) if value != 1 else mul(tensor1, tensor2))


def _fused_addcmul(input: Tensor, tensor1: Any, tensor2: Any) -> bool:  # noqa: A002
    """Whether addcmul runs as PyTorch's float kernel, one rounding (fma): three tensors of
    one float dtype, on one device (fused in a compiled step, rounded once)."""
    return (isinstance(tensor1, Tensor) and isinstance(tensor2, Tensor)
            and input.dtype.is_floating_point and tensor1.dtype is input.dtype
            and tensor2.dtype is input.dtype and tensor1.device == input.device
            and tensor2.device == input.device)


def _addcmul_value(dtype: D.DType, value: Any) -> Any:
    """addcmul's value as its kernel takes it: in the integer dtype of an integer product
    (0.5 is 0); a bool product has no kernel."""
    if dtype is D.bool_:
        raise NotImplementedError("\"addcmul_cpu_out\" not implemented for 'Bool'")
    return int(value) if dtype.category == 1 and isinstance(value, float) else value


def _check_addcdiv(tensor1: Tensor, tensor2: Tensor) -> None:
    if not (tensor1.dtype.is_floating_point or tensor2.dtype.is_floating_point):
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future  release "
            "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
            "behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2))."
            "to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for "
            "float inputs. The future addcdiv behavior is just the latter implementation: "
            "(input + value * tensor1 / tensor2), for all dtypes.")


def _promoted_with(t: Tensor, t1: Tensor, t2: Tensor) -> tuple[Tensor, Tensor]:
    """t1 and t2 in the dtype of the three, as PyTorch's addcmul multiplies them (int8
    factors of a float32 t multiply in float32, not wrapping round in int8)."""
    rdt = D.result_dtype([t.dtype, t1.dtype, t2.dtype], [], [t.ndim, t1.ndim, t2.ndim])
    return (t1 if t1.dtype is rdt else cast(t1, rdt)), (t2 if t2.dtype is rdt else cast(t2, rdt))


@half_in_float32
def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1,  # noqa: A002
            out: Tensor | None = None) -> Tensor:
    """t + value * t1 / t2."""
    if out is not None:
        check_no_partial_overlap(out, input, tensor1, tensor2)
        return written_to(out, addcdiv(input, tensor1, tensor2, value=value), "addcdiv")
    _check_addcdiv(tensor1, tensor2)
    return named(add(input, div(mul(tensor1, value), tensor2) if value != 1 else
                     div(tensor1, tensor2)), "AddcdivBackward0")


def lerp_(t: Tensor, end: Tensor, weight: Any) -> Tensor:
    _check_lerp(t, end, weight)
    if isinstance(weight, Tensor):
        if weight.ndim == 0 and weight.dtype is not t.dtype:
            weight = cast(weight, t.dtype)
        return apply_inplace(P.LERP_TENSOR, t, end, weight)
    _check_lerp_weight(t, weight)
    return apply_inplace(P.LERP, t, end, weight=weight)


def addcmul_(t: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    if _fused_addcmul(t, tensor1, tensor2):
        return apply_inplace(P.ADDCMUL, t, tensor1, tensor2, value=value)
    tensor1, tensor2 = _promoted_with(t, tensor1, tensor2)
    value = _addcmul_value(tensor1.dtype, value)
    return named(add_(t, mul(mul(tensor1, value), tensor2) if value != 1 else
                      mul(tensor1, tensor2)),
                 "AddcmulBackward0")


def addcdiv_(t: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    _check_addcdiv(tensor1, tensor2)
    return named(add_(t, div(mul(tensor1, value), tensor2) if value != 1 else
                      div(tensor1, tensor2)),
                 "AddcdivBackward0")


def overwrite(t: Tensor, value: Tensor, kept: bool = False) -> Tensor:
    """``t.copy_(value)`` for an in-place op computed out of place: its node is named as
    value's (PyTorch's relu_ is ReluBackward0, not CopyBackwards); ``kept``: PyTorch's error
    where value's dtype cannot be cast into t's (a float result into an integer tensor)."""
    if kept and value.dtype.category > t.dtype.category:
        raise RuntimeError(f"result type {D.scalar_type_name(value.dtype)} can't be cast to the "
                           f"desired output type {D.scalar_type_name(t.dtype)}")
    out = copy_(t, value)
    fn = value._grad_fn
    return out if fn is None else named(out, fn.name())


def setitem(t: Tensor, key: Any, value: Any) -> None:
    if isinstance(value, Tensor) and value.device != t.device:
        value = to_device(value, t.device)
    if is_tracing() and _mask_fill(t, key, value):
        return
    _check_byte_mask_fill(key, value)
    key = _index_items(key)
    if any(_is_scalar_bool(k) for k in (key if isinstance(key, tuple) else (key,))):
        t, key = _lift_scalar_bools(t, key)  # (a view of t, as getitem's)
    template, idx, masks = _norm_key(key, t.device)
    _check_key(t.shape, template, idx, masks)
    split = _selects_first(template, idx)
    if split is not None:  # PyTorch's order: index_put_ on the ints' select view
        t, template = getitem_key(t, key=split[0]), split[1]
    if not isinstance(value, Tensor) and not t.dtype.is_floating_point:
        value = D.scalar_as(value, t.dtype)  # PyTorch's error for nan or 1e30 (a half: inf)
    if isinstance(value, Tensor) and value.ndim:
        _check_value_shape(value, P._key_shape(t.shape, [i.shape for i in idx], template),
                           advanced=bool(idx))
    if idx and not is_tracing() and _expanded_before_index(t, template):
        _warn_expanded("index_put_", "tensor[indices] = tensor")
        if masks and (not isinstance(value, Tensor) or value.numel() == 1):
            _warn_expanded("masked_fill_", "tensor[mask] = scalar")
    apply_inplace(P.SETITEM, t, value, *idx, key=template)
    if idx and t._base is None:  # PyTorch's index_put_ (a view's node is its base's write)
        named(t, "IndexPutBackward0")


def _expanded_before_index(t: Tensor, template: Any) -> bool:
    """Whether PyTorch's index_put_ of ``t[key] = v`` writes a tensor whose elements share
    memory: t's view through the key's basic items (an int, a slice; PyTorch applies them
    first), each index tensor's dimension whole."""
    if not overlaps_internally(t._data):
        return False
    items = template if isinstance(template, tuple) else (template,)
    basic = tuple(slice(None) if isinstance(k, P.IndexArg) else k for k in items)
    return overlaps_internally(t._data[basic])


def write_expanded(t: Tensor, result: Tensor, region: Callable[[], Any], op: str) -> bool:
    """``op`` (masked_fill_, index_fill_) writing ``result`` (its out-of-place value) into a
    ``t`` whose elements share memory (an expand()), as PyTorch does, with its deprecation
    warning: only ``region()`` (a key: the mask, the index along a dim) is written, through
    the storage, so each shared element gets the value once. False (nothing done) where t
    has no shared element, or the write records history (PyTorch's refusal stays)."""
    if is_tracing() or not overlaps_internally(t._data) or (
            _grad_state.enabled and (t._rg or result._rg)):
        return False
    _warn_expanded(op, "tensor[mask] = scalar")
    key = region()
    writable_alias(t._data)[key] = result._data[key]
    t._vc.v += 1
    return True


def _warn_expanded(op: str, example: str) -> None:
    """PyTorch's deprecation warning for ``op`` writing an expand()ed tensor (it still does)."""
    warnings.warn(f"Use of {op} on expanded tensors is deprecated. Please clone() the tensor "
                  f"before performing this operation. This also applies to advanced indexing "
                  f"e.g. {example}", UserWarning, stacklevel=3)


def _check_byte_mask_fill(key: Any, value: Any) -> None:
    """PyTorch's error for ``t[uint8_mask] = v`` with a one-element ``v``: its index_put_
    makes that a masked_fill_, which takes bool masks only (a longer ``v`` is index_put's,
    with the deprecation warning)."""
    items = key if isinstance(key, tuple) else (key,)
    tensors = [k for k in items if isinstance(k, (Tensor, list))]
    if len(tensors) != 1 or not isinstance(tensors[0], Tensor) or tensors[0].dtype is not D.uint8:
        return
    if tensors[0].ndim == 0:  # a 0-d mask is a scalar bool to PyTorch's indexing: no index_put
        return
    if isinstance(value, Tensor) and (value.numel() != 1 or value.device != "cpu"):
        return
    raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype "
                       "unsigned char")


def _mask_fill(t: Tensor, mask: Any, value: Any) -> bool:
    """``t[mask] = value`` with one bool mask over t's leading dims and a number (or a 0-d
    tensor that records no history), made ``masked_fill_`` (done: True): the same values,
    with no read of the mask's values, so a compiled step captures it (``x[x < 0] = 0``);
    anything else is left to index_put (False)."""
    if not (isinstance(mask, Tensor) and mask.dtype is D.bool_ and 0 < mask.ndim <= t.ndim
            and tuple(mask.shape) == tuple(t.shape[:mask.ndim]) and mask.device == t.device):
        return False
    if isinstance(value, Tensor):
        if value.ndim or value.requires_grad:
            return False
    elif not isinstance(value, (bool, int, float)):
        return False
    elif not t.dtype.is_floating_point:
        value = D.scalar_as(value, t.dtype)
    t.masked_fill_(reshape(mask, (*mask.shape, *(1,) * (t.ndim - mask.ndim))), value)
    return True


def _check_value_shape(value: Tensor, target: tuple[int, ...], advanced: bool) -> None:
    """PyTorch's errors for ``x[key] = value`` where value does not broadcast to the indexed
    part (of shape ``target``): its leading ones dropped, then expanded (a basic key), or
    broadcast (an advanced one, index_put's text)."""
    shape = tuple(value.shape)
    while shape and shape[0] == 1:
        shape = shape[1:]
    if advanced:
        if len(shape) > len(target) or any(
                v != 1 and v != t for v, t in zip(reversed(shape), reversed(target))):
            raise ShapeError(f"shape mismatch: value tensor of shape {list(value.shape)} cannot "
                             f"be broadcast to indexing result of shape {list(target)}")
        return
    err = expand_error(shape, target, _TENSOR_TYPES.get(value.dtype.name, "FloatTensor"))
    if err is not None:
        raise ShapeError(err)


from .composite import log_softmax, relu, sigmoid, softmax  # noqa: E402, F401
from .tensor_ops import bitwise_not, masked_fill  # noqa: E402, F401
