"""More of PyTorch's tensor ops, each a composition of the others (so its backward is theirs,
and a compiled step captures it): roll, repeat_interleave, nan_to_num, diag, logaddexp,
var_mean/std_mean, count_nonzero, logical_or/xor, the bitwise ops (integers: their
primitives), index_add, unflatten, and the in-place scatter_/scatter_add_/scatter_reduce_/
index_add_/nan_to_num_ (the out-of-place op, copied in); and the ops whose result's shape
their input's values decide (nonzero, argwhere, unique), which read the values, so a
compiled step runs them eagerly."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import ml_dtypes
import numpy as np

from .. import _dtype as D
from .._device import move_array
from ..tensor import Tensor
from ..tracing import GraphBreak, is_tracing
from . import functional as F
from . import prims as P
from .dispatch import apply, keeps_saved, named, named_backward
from .inplace import check_fits
from .math_ops import same_out_dtype, takes_out
from .naming import renamed_backward
from .reductions import std, var
from .shapes import broadcast_shapes
from .tensor_ops import (
    _dim,
    index_select,
    int64_index,
    logical_not,
    scatter,
    scatter_add,
    scatter_reduce,
    sized_dim,
    split,
    zero_of,
)


@named_backward("RollBackward0")
def roll(input: Tensor, shifts: int | Sequence[int], dims: int | Sequence[int] | None = None
         ) -> Tensor:
    """Elements shifted along ``dims`` (wrapping round); without dims, over the flattened
    tensor, then reshaped back. PyTorch's checks: some shift; dims, when given, one each."""
    if not isinstance(shifts, int) and not len(shifts):
        raise RuntimeError("`shifts` required")
    if dims is None or not isinstance(dims, int) and not len(dims):
        if not isinstance(shifts, int) and len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                               f"dims:0")
        shift = shifts if isinstance(shifts, int) else shifts[0]
        return roll(input.reshape(-1), shift, 0).reshape(*input.shape)
    shift_list = [shifts] if isinstance(shifts, int) else list(shifts)
    dim_list = [dims] if isinstance(dims, int) else list(dims)
    if len(shift_list) != len(dim_list):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shift_list)}, "
                           f"dims:{len(dim_list)}")
    out = input
    for shift, dim in zip(shift_list, dim_list):
        d = sized_dim(input, dim)
        n = input.shape[d]
        s = shift % n if n else 0
        if s:
            head = (slice(None),) * d
            out = F.cat([out[head + (slice(n - s, n),)], out[head + (slice(0, n - s),)]], d)
    return out if out is not input else F.clone(input)


def _repeat_counts(repeats: Tensor) -> list[int]:
    """The counts of a tensor of repeats, checked as PyTorch's."""
    if repeats.dtype not in (D.int64, D.int32):
        raise NotImplementedError('"repeat_interleave_cpu" not implemented for '
                                  f"'{D.scalar_type_name(repeats.dtype)}'")
    if repeats.ndim > 1:
        raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
    counts = [int(r) for r in repeats.tolist()] if repeats.ndim else [int(repeats.item())]
    if any(c < 0 for c in counts):
        raise RuntimeError("repeats can not be negative")
    return counts


def _repeated_positions(repeats: Tensor, output_size: int | None) -> Tensor:
    """PyTorch's ``repeat_interleave(repeats)``: each position i of the 1-D ``repeats``
    repeated repeats[i] times, in repeats' dtype."""
    if repeats.ndim != 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    counts = _repeat_counts(repeats)
    if output_size is not None and output_size != sum(counts):
        raise RuntimeError("allocated size does not match required size")
    from ..creation import tensor

    return tensor(np.repeat(np.arange(len(counts)), counts).astype(repeats.dtype.np),
                  device=repeats.device)


def repeat_interleave(input: Tensor | None = None, repeats: int | Tensor | None = None,  # noqa: A002
                      dim: int | None = None, *, output_size: int | None = None) -> Tensor:
    """Each element (each slice along ``dim``) repeated ``repeats`` times in place; without
    dim, over the flattened tensor. A tensor of repeats (one per slice) decides the shape
    from its values, so a compiled step reading one runs eagerly. One tensor alone (as
    ``repeats`` or as ``input``, Tensor.repeat_interleave()) is PyTorch's overload
    ``repeat_interleave(repeats)``: the positions of repeats, each repeated so often."""
    if input is None or repeats is None:
        if dim is not None or (input is None) == (repeats is None):
            raise TypeError("repeat_interleave() received an invalid combination of arguments")
        return _repeated_positions(input if repeats is None else repeats, output_size)
    if dim is None:
        input, dim = input.reshape(-1), 0
    d = _dim(input, dim)
    if isinstance(repeats, Tensor):
        counts = _repeat_counts(repeats)
        if len(counts) == 1:
            counts = counts * input.shape[d]
        if len(counts) != input.shape[d]:
            raise RuntimeError("repeats must have the same size as input along dim, but "
                               f"got repeats.size(0) = {len(counts)} and "
                               f"input.size({d}) = {input.shape[d]}")
        if output_size is not None and output_size != sum(counts):
            raise RuntimeError("allocated size does not match required size")
        from ..creation import tensor

        # PyTorch's: an index_select (IndexSelectBackward0) whatever the counts
        index = tensor(np.repeat(np.arange(len(counts)), counts), device=input.device)
        return index_select(input, d, index)
    if repeats < 0:
        raise RuntimeError("Repeats must be non-negative")
    shape = list(input.shape)
    if output_size is not None and shape[d] * repeats != output_size:
        raise RuntimeError(f"repeat_interleave: Invalid output_size, expected "
                           f"{shape[d] * repeats} but got {output_size}")
    expanded = input.unsqueeze(d + 1).expand(*shape[:d + 1], repeats, *shape[d + 1:])
    return expanded.reshape(*shape[:d], shape[d] * repeats, *shape[d + 1:])



def repeat_interleave_method(self: Tensor, repeats: int | Tensor, dim: int | None = None, *,
                             output_size: int | None = None) -> Tensor:
    """Tensor.repeat_interleave: its repeats are needed (the one-tensor overload is the
    function's alone)."""
    return repeat_interleave(self, repeats, dim, output_size=output_size)


repeat_interleave_method.__name__ = repeat_interleave_method.__qualname__ = "repeat_interleave"


def _same_dtype_as_input(out: Tensor, result: Tensor) -> None:
    """nan_to_num's out= rule, PyTorch's text: out of exactly the input's dtype."""
    if out.dtype is not result.dtype:
        raise RuntimeError(f"nan_to_num: dtype of out: {D.scalar_type_name(out.dtype)} should be "
                           f"same as input: {D.scalar_type_name(result.dtype)}")

@takes_out("nan_to_num", _same_dtype_as_input)
@renamed_backward("NanToNumBackward0")
def nan_to_num(input: Tensor, nan: float | None = None, posinf: float | None = None,
               neginf: float | None = None) -> Tensor:
    """nan, +inf and -inf replaced (by default with 0 and the dtype's largest and lowest
    finite values); the gradient passes where x was finite."""
    nan = 0.0 if nan is None else nan
    if not input.dtype.is_floating_point:
        return F.clone(input)
    info = ml_dtypes.finfo(input.dtype.np)  # numpy's finfo knows no bfloat16
    hi = float(info.max) if posinf is None else posinf
    lo = float(info.min) if neginf is None else neginf
    out = F.where(F.eq(input, math.inf), hi, input)
    out = F.where(F.eq(input, -math.inf), lo, out)
    return F.where(F.ne(input, input), nan, out)


@takes_out("diag", same_out_dtype)
def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """1-D: the square matrix with x on diagonal ``diagonal`` (above the main one when
    positive); 2-D: that diagonal, as a 1-D tensor."""
    from ..creation import arange, eye

    k = diagonal
    if input.ndim == 1:
        n = input.shape[0]
        # x where the eye is set, else 0 (x * eye made nan of an inf's row): nothing saved
        square = keeps_saved(F.where(eye(n, dtype=D.bool_, device=input.device), input,
                                     zero_of(input.dtype)))
        if k:
            from .conv import pad

            square = pad(square, (k, 0, 0, k) if k > 0 else (0, -k, -k, 0))
        return named(square, "DiagEmbedBackward0")
    if input.ndim != 2:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")
    rows, cols = input.shape
    r0, c0 = (0, k) if k >= 0 else (-k, 0)
    n = max(0, min(rows - r0, cols - c0))
    if n == 0:
        return input.reshape(-1)[:0]
    r = arange(r0, r0 + n, device=input.device)
    c = arange(c0, c0 + n, device=input.device)
    return named(keeps_saved(input[r, c]), "DiagonalBackward0_copy")  # PyTorch's: a copy


def _float_pair(name: str, a: Any, b: Any) -> None:
    """PyTorch's error for a binary op with float kernels only on operands that promote to
    an integer or bool dtype."""
    tensors = [t for t in (a, b) if isinstance(t, Tensor)]
    dt = D.result_dtype([t.dtype for t in tensors],
                        [v for v in (a, b) if not isinstance(v, Tensor)], [t.ndim for t in tensors])
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for "
                                  f"'{D.scalar_type_name(dt)}'")


@takes_out("logaddexp")
@F.binary_in_float32
def logaddexp(input: Tensor, other: Any) -> Tensor:
    """log(exp(a) + exp(b)) without overflow: m + log(exp(a - m) + exp(b - m)), m the larger
    (held constant: the formula is exact for any m, and its gradient is then softmax's) where
    both are finite."""
    _float_pair("logaddexp", input, other)
    if not isinstance(other, Tensor):
        from ..creation import full_like

        other = full_like(input, other)
    # in the result's float dtype (a bool or uint8 operand's negation below is not its own)
    dt = D.result_dtype([input.dtype, other.dtype], [], [input.ndim, other.ndim])
    input, other = (t if t.dtype is dt else F.cast(t, dt) for t in (input, other))
    from .math_ops import _safe, _with_edges
    from .tensor_ops import isfinite

    ad, bd = input.detach(), other.detach()
    regular = F.logical_and(isfinite(ad), isfinite(bd))
    sa, sb = _safe(input, regular, 0.0), _safe(other, regular, 0.0)
    m = F.maximum(sa, sb).detach()
    out = F.add(F.log(F.add(F.exp(F.sub(sa, m)), F.exp(F.sub(sb, m)))), m)
    # an infinite or NaN operand: PyTorch's value (an inf equal to the other is itself) and
    # gradient 1 / (1 + exp(b - a)) (0 or 1 beside one inf, NaN at inf and inf or NaN)
    edge = F.where(F.eq(ad, bd), ad, F.add(F.maximum(ad, bd),
                                           F.log1p(F.exp(F.neg(F.abs(F.sub(ad, bd)))))))
    slopes = (F.div(1.0, F.add(F.exp(F.sub(bd, ad)), 1.0)),
              F.div(1.0, F.add(F.exp(F.sub(ad, bd)), 1.0)))
    return _with_edges(F.where(regular, out, edge), (input, other), regular, slopes,
                       "LogaddexpBackward0")


def _check_float(name: str, x: Tensor) -> None:
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"{name} only support floating point and complex dtypes")


def var_mean(input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
             correction: Any = None) -> tuple[Tensor, Tensor]:
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    _check_float("var_mean", input)
    axes = F._axes(dim, input.ndim)
    from .composite import one_node

    from .reductions import dof_op

    with dof_op("var_mean"):
        out = (var(input, dim, unbiased, keepdim, correction=correction),
               F.mean(input, axes, keepdim))
    one_node(out, "VarMeanBackward0")
    return out


def std_mean(input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
             correction: Any = None) -> tuple[Tensor, Tensor]:
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    _check_float("std_mean", input)
    axes = F._axes(dim, input.ndim)
    from .composite import one_node

    from .reductions import dof_op

    with dof_op("std_mean"):
        out = (std(input, dim, unbiased, keepdim, correction=correction),
               F.mean(input, axes, keepdim))
    one_node(out, "StdMeanBackward0")
    return out


def count_nonzero(input: Tensor, dim: Any = None) -> Tensor:
    return F.sum(F.cast(F.ne(input, 0), D.int64), F._axes(dim, input.ndim))


def _as_bool(x: Any) -> Any:
    return x if not isinstance(x, Tensor) or x.dtype is D.bool_ else F.ne(x, 0)


def _as_bools(a: Any, b: Any) -> tuple[Any, Any]:
    """Two operands of a logical op as bools, each tensor first in their promoted dtype, as
    PyTorch's comparison-op iterator reads them: a 0-d int64 2 ** 40 beside an int8 tensor is
    0 (False), and a 0-d float64 1e-8 beside float16 is 0."""
    tensors = [t for t in (a, b) if isinstance(t, Tensor)]
    dt = D.result_dtype([t.dtype for t in tensors],
                        [v for v in (a, b) if not isinstance(v, Tensor)], [t.ndim for t in tensors])
    a, b = (F.cast(v, dt) if isinstance(v, Tensor) and v.dtype is not dt else v for v in (a, b))
    return _as_bool(a), _as_bool(b)


@takes_out("logical_or")
def logical_or(input: Tensor, other: Any) -> Tensor:
    a, b = _as_bools(input, other)
    return logical_not(F.logical_and(logical_not(a), logical_not(b)))


@takes_out("logical_xor")
def logical_xor(input: Tensor, other: Any) -> Tensor:
    return F.ne(*_as_bools(input, other))


def bitwise_dtype(kernel: str, a: Any, b: Any, bools: bool = True) -> D.DType:
    """The promoted dtype of a bitwise op's operands (tensors or Python scalars, a tensor
    among them); a float one, or a bool one for a shift (``bools`` False), is PyTorch's
    error naming its CPU kernel (``"lshift_cpu" not implemented for 'Float'``)."""
    tensors = [t for t in (a, b) if isinstance(t, Tensor)]
    if not tensors:
        raise TypeError(f"{kernel}() expects at least one tensor argument")
    rdt = D.result_dtype([t.dtype for t in tensors],
                         [v for v in (a, b) if not isinstance(v, Tensor)],
                         [t.ndim for t in tensors])
    if rdt.is_floating_point or (rdt is D.bool_ and not bools):
        raise NotImplementedError(f'"{kernel}_cpu" not implemented for '
                                  f"'{D.scalar_type_name(rdt)}'")
    return rdt


def _tensor_first(a: Any, b: Any) -> tuple[Tensor, Any]:
    """The operands of a commuting op, a tensor first."""
    return (a, b) if isinstance(a, Tensor) else (b, a)


@takes_out("bitwise_and")
def bitwise_and(input: Any, other: Any) -> Tensor:
    """``a & b``: of bools, logical and (which fuses in a compiled step); of integers,
    bitwise."""
    if bitwise_dtype("bitwise_and", input, other) is D.bool_:
        return F.logical_and(*_tensor_first(input, other))
    return apply(P.BITWISE_AND, input, other)


@takes_out("bitwise_or")
def bitwise_or(input: Any, other: Any) -> Tensor:
    """``a | b``: of bools, not (not a and not b); of integers, bitwise."""
    if bitwise_dtype("bitwise_or", input, other) is D.bool_:
        input, other = _tensor_first(input, other)
        return logical_not(F.logical_and(logical_not(input), logical_not(other) if isinstance(
            other, Tensor) else not other))
    return apply(P.BITWISE_OR, input, other)


@takes_out("bitwise_xor")
def bitwise_xor(input: Any, other: Any) -> Tensor:
    """``a ^ b``: of bools, a != b; of integers, bitwise."""
    if bitwise_dtype("bitwise_xor", input, other) is D.bool_:
        return F.ne(*_tensor_first(input, other))
    return apply(P.BITWISE_XOR, input, other)


@takes_out("bitwise_left_shift")
def bitwise_left_shift(input: Any, other: Any) -> Tensor:
    """``a << b`` of integers: 0 where b is negative or past a's width, as PyTorch's."""
    bitwise_dtype("lshift", input, other, bools=False)
    return apply(P.BITWISE_LEFT_SHIFT, input, other)


@takes_out("bitwise_right_shift")
def bitwise_right_shift(input: Any, other: Any) -> Tensor:
    """``a >> b`` of integers, arithmetic (the sign fills); a's sign where b is negative or
    past its width, as PyTorch's."""
    bitwise_dtype("rshift", input, other, bools=False)
    return apply(P.BITWISE_RIGHT_SHIFT, input, other)


def in_place(fn: Any) -> Any:
    """The in-place method of the binary op ``fn`` (``__iand__``, ``bitwise_left_shift_``):
    its result, which must fit self (PyTorch's errors), written into self."""

    def method(self: Tensor, other: Any) -> Tensor:
        tensors = [self, other] if isinstance(other, Tensor) else [self]
        check_fits(self, broadcast_shapes(*(t.shape for t in tensors)), D.result_dtype(
            [t.dtype for t in tensors], [] if isinstance(other, Tensor) else [other],
            [t.ndim for t in tensors]))
        return F.copy_(self, fn(self, other))

    method.__name__ = fn.__name__ + "_"
    method.__doc__ = f"In place: ``{fn.__name__}(self, other)``."
    return method


@takes_out("fmax")
@renamed_backward("FmaxBackward0")
def fmax(input: Tensor, other: Tensor) -> Tensor:
    """The larger of a and b elementwise, NaN only where both are (numpy's fmax); the gradient
    goes to a where a >= b or b is NaN, else to b, as PyTorch's."""
    return F.where(logical_or(F.ge(input, other), F.ne(other, other)), input, other)


@takes_out("fmin")
@renamed_backward("FminBackward0")
def fmin(input: Tensor, other: Tensor) -> Tensor:
    """The smaller of a and b elementwise, NaN only where both are (numpy's fmin)."""
    return F.where(logical_or(F.le(input, other), F.ne(other, other)), input, other)


def check_index_source(func: str, x: Tensor, d: int, index: Tensor, source: Tensor) -> None:
    """PyTorch's checks of index_add / index_reduce (index_func_meta_impl), in its order and
    texts: a vector index of int32/int64, source of x's dtype, as many slices along ``d`` as
    indices, and the same slice shape as x's."""
    if index.ndim > 1:
        raise IndexError(f"{func}_(): Index is supposed to be a vector, but got dim: "
                         f"{index.ndim} with type: {D.scalar_type_name(index.dtype)} and size: "
                         f"{list(index.shape)}")
    if index.dtype not in (D.int64, D.int32):
        raise RuntimeError(f"{func}_(): Expected dtype int32/int64 for index but got: "
                           f"{D.scalar_type_name(index.dtype)}")
    if source.dtype is not x.dtype:
        raise RuntimeError(f"{func}_(): self ({D.scalar_type_name(x.dtype)}) and source "
                           f"({D.scalar_type_name(source.dtype)}) must have the same scalar type")
    if d != 0 and d >= source.ndim:
        raise RuntimeError(f"{func}_(): Indexing dim {d} is out of bounds of the source tensor "
                           f"with dim {source.ndim}")
    n = index.numel()
    src_n = source.shape[d] if source.ndim else 1
    if n != src_n:
        raise RuntimeError(f"{func}_(): Number of indices ({n}) should be equal to "
                           f"source.size(dim): ({src_n}), for dim: {d}")
    x_slice, src_slice = list(x.shape), list(source.shape)
    if x.ndim and source.ndim:
        del x_slice[d], src_slice[d]
    if x_slice != src_slice:
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(x.shape)} "
                           f"source.shape = {list(source.shape)}")


@takes_out("index_add")
def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1
              ) -> Tensor:
    """x with ``alpha * source[.., i, ..]`` added at x[.., index[i], ..] along ``dim``
    (repeated indices accumulate)."""
    d = _dim(input, dim)
    check_index_source("index_add", input, d, index, source)
    index = int64_index(index, "")
    n = index.numel()
    if not source.ndim:  # a 0-d source into a 0-d x: one element
        source = F.reshape(source, (1,) * max(input.ndim, 1))
        if not input.ndim:
            return F.reshape(index_add(F.reshape(input, (1,)), 0, index, source, alpha=alpha),
                             ())
    shape = [1] * source.ndim
    shape[d] = n
    grid = index.reshape(*shape).expand(*source.shape)
    if isinstance(alpha, float) and not (input.dtype.is_floating_point or input.dtype.is_complex):
        alpha = bool(alpha) if input.dtype is D.bool_ else int(alpha)  # in input's dtype, as
        # PyTorch's kernel takes it (1.5 into int64: 1)
    if not (isinstance(alpha, (int, float)) and alpha == 1):
        source = F.mul(source, alpha)
    return scatter_add(input, d, grid, source)


def unflatten(input: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    if not len(sizes):  # PyTorch checks this first, before the dim
        raise RuntimeError("unflatten: sizes must be non-empty")
    d = _dim(input, dim)
    if input.ndim == 0:  # PyTorch's text, its C++ trace left out
        raise RuntimeError(f"unflatten got an unexpected error:\nDimension specified as {d} but "
                           "tensor has no dimensions")
    sizes = list(sizes)
    given = list(sizes)
    if sizes.count(-1) > 1:  # PyTorch's text, its C++ trace left out
        raise RuntimeError("unflatten got an unexpected error:\nonly one dimension can be "
                           "inferred")
    known = math.prod(s for s in sizes if s != -1)
    if -1 in sizes and not known and not input.shape[d]:  # its C++ trace left out
        raise RuntimeError(f"unflatten got an unexpected error:\ncannot reshape tensor of 0 "
                           f"elements into shape {given} because the unspecified dimension size "
                           "-1 can be any value and is ambiguous")
    if -1 in sizes:
        sizes[sizes.index(-1)] = input.shape[d] // known if known else 0
    if math.prod(sizes) != input.shape[d]:
        raise RuntimeError(f"unflatten: Provided sizes {given} don't multiply up to the "
                           f"size of dim {d} ({input.shape[d]}) in the input tensor")
    return input.reshape(*input.shape[:d], *sizes, *input.shape[d + 1:])


def split_with_sizes(x: Tensor, split_sizes: Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    return tuple(split(x, list(split_sizes), dim))


def scatter_(x: Tensor, dim: int, index: Tensor, src: Any = None, *, value: Any = None,
             reduce: str | None = None) -> Tensor:
    return F.written_apart(x, scatter(x, dim, index, src, value=value, reduce=reduce), index, src)


def scatter_reduce_(x: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                    include_self: bool = True) -> Tensor:
    return F.written_apart(x, scatter_reduce(x, dim, index, src, reduce,
                                             include_self=include_self), index, src)


def scatter_add_(x: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    return F.written_apart(x, scatter_add(x, dim, index, src), index, src)


def index_add_(x: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1
               ) -> Tensor:
    return F.written_apart(x, index_add(x, dim, index, source, alpha=alpha), index, source)


def nan_to_num_(x: Tensor, nan: float | None = None, posinf: float | None = None,
                neginf: float | None = None) -> Tensor:
    return F.copy_(x, nan_to_num(x, nan, posinf, neginf))


# --- ops whose result's shape the values decide ------------------------------------------------


def _host_values(x: Tensor, name: str) -> np.ndarray:
    """x's values on the host; a captured step cannot know them, so it runs eagerly."""
    if is_tracing():
        raise GraphBreak(f"{name}'s result has a shape its input's values decide")
    return np.asarray(move_array(x.detach()._data, "cpu"))


def _int64(a: np.ndarray, device: str) -> Tensor:
    # (ascontiguousarray makes a 0-d array 1-d: unique's inverse of a 0-d input is 0-d)
    return Tensor._make(move_array(np.ascontiguousarray(a, dtype=np.int64).reshape(np.shape(a)),
                                   device), D.int64, device)


def nonzero(input: Tensor, *, out: Tensor | None = None, as_tuple: bool = False) -> Any:
    """The indices of x's nonzero elements: an (n, ndim) int64 tensor, one row each in
    row-major order; ``as_tuple``: one 1-D tensor per dimension (a 0-d x counts as 1-D).
    ``out`` must be int64 and is refused with ``as_tuple`` (PyTorch's texts)."""
    if out is not None:
        if as_tuple:
            raise RuntimeError("nonzero does not support the out kwarg when as_tuple is True")
        if isinstance(out, Tensor) and out.dtype is not D.int64:
            raise RuntimeError(f"nonzero: Expected out tensor to have scalar type Long but got "
                               f"scalar type{D.scalar_type_name(out.dtype)}")
        return F.written_to(out, nonzero(input), "nonzero")
    values = _host_values(input, "nonzero")
    if as_tuple:
        return tuple(_int64(a, input.device) for a in np.nonzero(values.reshape(values.shape or 1)))
    if not values.ndim:
        return _int64(np.zeros((int(values != 0), 0)), input.device)
    return _int64(np.argwhere(values), input.device)


def argwhere(input: Tensor) -> Tensor:
    """``nonzero(x)``: the (n, ndim) indices of x's nonzero elements."""
    return nonzero(input)


def check_unique_dim(x: Tensor, axis: int | None) -> None:
    """PyTorch's checks of an empty x's unique slices along ``axis``: one dimension of size
    0, and it the one selected."""
    if axis is None or x.numel():
        return
    if list(x.shape).count(0) != 1:
        raise RuntimeError("Number of zero sized dimensions is more than one, so unique cannot "
                           "be applied ")
    if x.shape[axis] != 0:
        raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique "
                           "cannot be applied")


def unique(x: Tensor, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
           return_counts: bool = False, dim: int | None = None) -> Any:
    """x's distinct values in ascending order (whatever ``sorted`` asks, as PyTorch's CPU
    op; each nan distinct), or its distinct slices along ``dim``; with ``return_inverse``,
    where each element (slice) of x is among them; with ``return_counts``, how often each
    occurs. Not differentiable, as PyTorch's."""
    axis = None if dim is None else sized_dim(x, dim, wrapped_first=True)
    check_unique_dim(x, axis)
    values = _host_values(x, "unique")
    if x.dtype is D.bfloat16:  # numpy's sort of ml_dtypes' bfloat16 misplaces a nan (and
        values = values.astype(np.float32)  # the values after it): exactly, in float32
    out, inverse, counts = np.unique(values, return_inverse=True, return_counts=True,
                                     axis=axis, equal_nan=False)
    out = out.astype(x.dtype.np, copy=False)
    from .composite import no_derivative

    name = "_unique2" if axis is None else "unique_dim"
    result = [no_derivative(Tensor._make(move_array(np.ascontiguousarray(out), x.device),
                                         x.dtype, x.device), (x,), NotImplementedError,
                            f"the derivative for '{name}' is not implemented.",
                            "Unique2Backward0" if axis is None else "UniqueDimBackward0")]
    if return_inverse:
        result.append(_int64(inverse.reshape(x.shape if axis is None else -1), x.device))
    if return_counts:
        result.append(_int64(counts, x.device))
    return result[0] if len(result) == 1 else tuple(result)
