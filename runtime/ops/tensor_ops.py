"""PyTorch's tensor ops built from the registry's primitives: splits, triangles, repeat,
gather/scatter/index_select, masked_fill, sort/topk and the operators ``%``, ``//`` and ``~``
(reductions are in ``reductions``, products in ``products``). Written from primitives, their
backward comes from the primitives', and the elementwise parts fuse in a compiled step."""

from __future__ import annotations

import builtins
import inspect
import math
import operator
import warnings
from collections import namedtuple
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import _dtype as D
from ..amp.policy import autocast_exclude
from ..autograd.grad_mode import _state as _grad_state
from ..autograd.grad_mode import no_grad
from ..autograd.node import Meta, Node, gradient_edge
from ..return_types import returns
from .. import tensor as _tensor_module
from ..tensor import Tensor
from ..tracing import is_tracing
from . import functional as F
from .inplace import check_no_overlap
from . import prims as P
from .dispatch import apply, keeps_saved, named, named_backward
from .naming import renamed
from .shapes import broadcast_shapes, int_dim, wrap_dim, wrap_dims

# --- helpers ---------------------------------------------------------------------------------


def _dim(x: Tensor, dim: int) -> int:
    """One dimension of x, PyTorch's range check and error; a 0-d tensor has dim 0 or -1."""
    return wrap_dim(dim, x.ndim)


def sized_dim(x: Tensor, dim: int, wrapped_first: bool = False) -> int:
    """One dimension of x whose size the op reads: a 0-d tensor's is PyTorch's IndexError
    (its dims 0 and -1 wrap, but have no size), naming the dim as given or, where the op
    wraps it first (unbind), as wrapped."""
    if x.ndim == 0:
        named = wrap_dim(dim, 0) if wrapped_first else operator.index(dim)
        raise IndexError(f"Dimension specified as {named} but tensor has no dimensions")
    return wrap_dim(dim, x.ndim)


def _arange_along(n: int, axis: int, ndim: int, device: str) -> Tensor:
    """0..n-1 laid along ``axis`` of an ``ndim``-d shape of ones (an index grid)."""
    from ..creation import arange

    shape = [1] * ndim
    shape[axis] = n
    return F.reshape(arange(n, device=device), tuple(shape))


def int64_index(index: Tensor, message: str) -> Tensor:
    """An index tensor PyTorch takes as int32 or int64, as int64 (what the indexing
    primitives read); another dtype is PyTorch's error ``message``."""
    if index.dtype is D.int64:
        return index
    if index.dtype is not D.int32:
        raise RuntimeError(message)
    return F.cast(index, D.int64)


def _scatter_index(index: Tensor, kernel: str) -> Tensor:
    """gather's / scatter's index as int64 (PyTorch names every scatter ``scatter`` here);
    an empty one of any dtype, as PyTorch's, which checks the dtype of a non-empty one only."""
    if not index.numel():
        return F.cast(index, D.int64)
    return int64_index(index, f"{kernel}(): Expected dtype int32/int64 for index")


def _check_dim_range(x: Tensor, index: Tensor, dim: int, name: str, src: Any = None) -> None:
    """PyTorch's shape rules for gather/scatter's index: same rank, and no dimension larger
    than the input's (the indexed one excepted), nor than src's (a scatter's tensor src), in
    PyTorch's order and texts (a scatter's: src's dtype first, no check of an empty index)."""
    if name == "gather":
        if index.ndim != x.ndim and not (index.ndim <= 1 and x.ndim <= 1):
            raise RuntimeError("Index tensor must have the same number of dimensions as input "
                               "tensor")
        for d in range(index.ndim):
            if d != dim and index.shape[d] > x.shape[d]:
                raise RuntimeError(f"Size does not match at dimension {d} expected index "
                                   f"{list(index.shape)} to be no larger than self "
                                   f"{list(x.shape)} apart from dimension {dim}")
        return
    tensor_src = isinstance(src, Tensor)
    if tensor_src and src.dtype is not x.dtype:
        # PyTorch's scatter, scatter_add and scatter_reduce share one check, named scatter
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if not index.numel():
        return
    if max(x.ndim, 1) != max(index.ndim, 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")

    def size(t: Tensor, d: int) -> int:
        return t.shape[wrap_dim(d, t.ndim)] if t.ndim else 1

    n = max(x.ndim, 1)
    wrong = builtins.any(d != dim and size(index, d) > size(x, d) for d in range(n))
    if not wrong and tensor_src:
        wrong = builtins.any(size(index, d) > size(src, d) for d in range(n))
    if wrong:
        tail = f" and to be no larger size than src {list(src.shape)}" if tensor_src else ""
        raise RuntimeError(f"Expected index {list(index.shape)} to be no larger than self "
                           f"{list(x.shape)} apart from dimension {dim}{tail}")
    if tensor_src and max(src.ndim, 1) != max(index.ndim, 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")


def _empty_of_other_rank(index: Tensor, x: Tensor) -> bool:
    """Whether ``index`` is empty and of another rank than ``x``: PyTorch checks no shape of
    an empty index and scatters nothing (x unchanged), where the index grid has no key."""
    return not index.numel() and index.ndim != x.ndim


def _grid_key(index: Tensor, dim: int) -> tuple[tuple[Any, ...], list[Tensor]]:
    """The advanced-indexing key that reads x[i0, .., index[i], .., in] for every position i
    of ``index``: a broadcast index grid per other dimension, ``index`` itself along ``dim``."""
    idx = [index if d == dim else _arange_along(n, d, index.ndim, index.device)
           for d, n in enumerate(index.shape)]
    return tuple(P.IndexArg(d) for d in range(index.ndim)), idx


def _check_index_values(index: Tensor, x: Tensor, dim: int) -> None:
    if index.numel():
        F.check_bounds(index, 0, x.shape[dim] if x.ndim else 1,
                       f"index {{}} is out of bounds for dimension {dim} with size "
                       f"{x.shape[dim] if x.ndim else 1}", error="RuntimeError")


def _as_1d(x: Tensor) -> Tensor:
    return F.reshape(x, (1,)) if x.ndim == 0 else x


# --- operators -------------------------------------------------------------------------------


remainder = F.remainder
floor_divide = F.floor_divide


def bitwise_not(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    if out is not None:
        return F.written_to(out, bitwise_not(input), "bitwise_not")
    if input.dtype is D.bool_:
        return F.eq(input, False)
    if input.dtype.is_floating_point:
        raise NotImplementedError('"bitwise_not_cpu" not implemented for '
                                  f"'{D.scalar_type_name(input.dtype)}'")
    # two's complement, wrapping round in x's dtype: ~x == -x - 1 (uint8's 255 - x), and both
    # fuse for int64
    return F.sub(F.neg(input), 1)


def invert(x: Tensor) -> Tensor:
    """``~x``: bitwise_not, with PyTorch's TypeError for a float x."""
    if x.dtype.is_floating_point:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors")
    return bitwise_not(x)


@named_backward("PowBackward0")
def square(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """x * x; of a bool x, PyTorch's pow(x, 2): int64."""
    if out is not None:
        return F.written_to(out, square(input), "square")
    return F.mul(input, input) if input.dtype is not D.bool_ else F.pow(input, 2)


@F.half_in_float32
@named_backward("RsqrtBackward0")
def rsqrt(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    if out is not None:
        return F.written_to(out, rsqrt(input), "rsqrt")
    return F.div(1.0, F.sqrt(input))


# --- shapes ----------------------------------------------------------------------------------


def split(tensor: Tensor, split_size_or_sections: int | Sequence[int], dim: int = 0
          ) -> tuple[Tensor, ...]:
    if tensor.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = _dim(tensor, dim)
    n = tensor.shape[d]
    if isinstance(split_size_or_sections, int):
        size = split_size_or_sections
        if size < 0:
            raise RuntimeError(f"split expects split_size be non-negative, but got split_size="
                               f"{size}")
        if size == 0 and n != 0:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got "
                               f"dimension size of {n}")
        # an empty dimension still splits into one (empty) piece
        sizes = [builtins.min(size, n - s) for s in range(0, n, size)] if size else []
        sizes = sizes or [0]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if builtins.any(s < 0 for s in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative "
                               f"entries, but got split_sizes={sizes}")
        if builtins.sum(sizes) != n:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} "
                               f"(input tensor's size at dimension {d}), but got split_sizes="
                               f"{sizes}")
    name = "SplitBackward0" if isinstance(split_size_or_sections, int) else \
        "SplitWithSizesBackward0"
    return split_pieces(tensor, sizes, d, name)


def split_pieces(tensor: Tensor, sizes: Sequence[int], d: int, name: str,
                 unsafe: bool = False) -> tuple[Tensor, ...]:
    """The views of ``tensor`` along ``d`` of these sizes, outputs of one node ``name``."""
    keys, start = [], 0
    for s in sizes:
        keys.append((slice(None),) * d + (slice(start, start + s),))
        start += s
    return multi_output_views(tensor, keys, d, name, stacked=False, unsafe=unsafe)


def multi_output_views(input: Tensor, keys: Sequence[Any], d: int, name: str,  # noqa: A002
                       stacked: bool, unsafe: bool = False) -> tuple[Tensor, ...]:
    """The views ``input[key]`` as PyTorch's multi-output view ops (split, chunk, unbind)
    return them: outputs 0..n-1 of one backward node ``name``, each marked so that an
    in-place write to one (or to a view of one) is PyTorch's error where grad is recorded.
    ``stacked``: the pieces are indexed out (unbind), their gradients stacked along ``d``;
    else sliced, their gradients concatenated. ``unsafe`` (unsafe_split): not tracked as
    views, writable in place. A capture records each piece as its own slice."""
    if is_tracing():
        outs = [named(F.getitem(input, k), name) for k in keys]
        if not unsafe and _grad_state.enabled and input.requires_grad:
            for o in outs:  # written in place with grad: eager's error (ops.inplace)
                o._creation = "multi_output"
        return tuple(outs)
    with no_grad():
        outs = [F.getitem(input, k) for k in keys]
    recorded = _grad_state.enabled and input.requires_grad
    node = multi_view_node(name)(input, outs, d, stacked) if recorded else None
    for i, o in enumerate(outs):
        if node is not None:
            o._grad_fn, o.output_nr, o._rg = node, i, True
        if unsafe:  # PyTorch's: not a view, a version counter of its own
            o._base = None
            o._view_chain = ()
            o._vc = _tensor_module._VersionCounter()  # a level's own, inside one
            o._creation = None
            o._rg = node is not None
        elif _grad_state.enabled:
            o._creation = "multi_output"
    return tuple(outs)


class MultiViewBackward(Node):
    """The backward of a multi-output view op: each output's gradient (zeros where it has
    none) in its place along ``dim``, concatenated (or stacked) into the input's."""

    __slots__ = ("dim", "stacked")

    def __init__(self, input: Tensor, outs: list[Tensor], dim: int,  # noqa: A002
                 stacked: bool) -> None:
        super().__init__([gradient_edge(input)], [Meta(o.shape, o.dtype, o.device) for o in outs])
        self.dim = dim
        self.stacked = stacked

    def apply(self, grads: list[Any]) -> list[Any]:
        if all(g is None for g in grads):
            return [None]
        from ..creation import zeros

        pieces = [g if g is not None else zeros(m.shape, dtype=m.dtype, device=m.device)
                  for g, m in zip(grads, self.input_metas)]
        return [F.stack(pieces, self.dim) if self.stacked else F.cat(pieces, self.dim)]


_MULTI_VIEW_NODES: dict[str, type[MultiViewBackward]] = {}


def multi_view_node(name: str) -> type[MultiViewBackward]:
    """The MultiViewBackward subclass called ``name`` (PyTorch's SplitBackward0 ...)."""
    cls = _MULTI_VIEW_NODES.get(name)
    if cls is None:
        cls = _MULTI_VIEW_NODES[name] = type(name, (MultiViewBackward,), {"__slots__": ()})
    return cls


def split_method(self: Tensor, split_size: int | Sequence[int], dim: int = 0
                 ) -> tuple[Tensor, ...]:
    """Tensor.split: split, its size parameter named ``split_size`` (as PyTorch's method)."""
    return split(self, split_size, dim)


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    if input.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    n = input.shape[_dim(input, dim)]
    if n == 0:  # PyTorch's: ``chunks`` empty pieces (of a split_with_sizes)
        return split(input, [0] * chunks, dim)
    return split(input, -(-n // chunks), dim)


def _triangle(x: Tensor, diagonal: int, name: str, lower: bool) -> Tensor:
    if x.ndim < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    rows = _arange_along(x.shape[-2], 0, 2, x.device)
    cols = _arange_along(x.shape[-1], 1, 2, x.device)
    offset = F.sub(cols, rows)
    keep = F.le(offset, diagonal) if lower else F.ge(offset, diagonal)
    return keeps_saved(F.where(keep, x, zero_of(x.dtype)))  # PyTorch's tril saves no mask


def zero_of(dt: D.DType) -> Any:
    """The Python zero that keeps ``dt`` in a where (False, 0 or 0.0)."""
    return False if dt is D.bool_ else 0 if dt.category == 1 else 0.0


@named_backward("TrilBackward0")
def tril(input: Tensor, diagonal: int = 0, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    if out is not None:
        return F.written_same(out, tril(input, diagonal), "tril", "expected")
    return _triangle(input, diagonal, "tril", lower=True)


@named_backward("TriuBackward0")
def triu(input: Tensor, diagonal: int = 0, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    if out is not None:
        return F.written_same(out, triu(input, diagonal), "triu", "expected")
    return _triangle(input, diagonal, "triu", lower=False)


@named_backward("RepeatBackward0")
def repeat(x: Tensor, *sizes: Any) -> Tensor:
    reps = F._shape_arg(sizes)
    if len(reps) < x.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    shape = (1,) * (len(reps) - x.ndim) + x.shape
    target = [r * s for r, s in zip(reps, shape)]
    negative = [n for n in target if n < 0]
    if negative:  # PyTorch's: the result's size checked (an empty dimension's any count)
        raise RuntimeError(f"Trying to create tensor with negative dimension {negative[0]}: "
                           f"{target}")
    reps = tuple(builtins.max(r, 0) for r in reps)
    # each axis of size s becomes (r, s), expanded, then merged: a tiling of the whole tensor
    interleaved = tuple(v for s in shape for v in (1, s))
    expanded = tuple(v for r, s in zip(reps, shape) for v in (r, s))
    tiled = F.expand(F.reshape(x, interleaved), expanded)
    return F.reshape(F.clone(tiled), tuple(r * s for r, s in zip(reps, shape)))


@named_backward("IndexSelectBackward0")
def index_select(input: Tensor, dim: int, index: Tensor, *,  # noqa: A002
                 out: Tensor | None = None) -> Tensor:
    if out is not None:
        return F.written_same(out, index_select(input, dim, index), "index_select", "same")
    index = int64_index(index, "index_select(): Expected dtype int32 or int64 for index")
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    d = _dim(input, dim)
    index = _as_1d(index)
    if input.ndim == 0 and index.numel() != 1:
        raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got "
                           f"{index.numel()} value(s)")
    if index.numel() and input.ndim > 1 and not input.shape[d]:
        raise RuntimeError("index_select(): self indexing axis dim should be positive")
    if index.numel():
        if d == 1:  # PyTorch's kernel along dim 1 has a check (and text) of its own
            F.check_bounds(index, 0, input.shape[d], "INDICES element is out of DATA bounds, "
                           f"id={{}} axis_dim={input.shape[d]}", error="RuntimeError")
        else:
            F.check_bounds(index, 0, input.shape[d] if input.ndim else 1,
                           "index out of range in self")
    if input.ndim == 0:
        return F.getitem_key(F.reshape(input, (1,)), index, key=(P.IndexArg(0),))[0]
    return F.getitem_key(input, index, key=(slice(None),) * d + (P.IndexArg(0),))


@named_backward("GatherBackward0")
def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False,  # noqa: A002
           out: Tensor | None = None) -> Tensor:
    if out is not None:
        result = gather(input, dim, index, sparse_grad=sparse_grad)
        check_no_overlap(out, input)  # PyTorch's assert_no_overlap of the result and self
        return F.written_same(out, result, "gather", "expected")
    if sparse_grad:
        raise NotImplementedError("gather(): sparse_grad=True is not supported (no sparse "
                                  "tensors here)")
    d = _dim(input, dim)
    index = _scatter_index(index, "gather")
    _check_dim_range(input, index, d, "gather")
    _check_index_values(index, input, d)
    if input.ndim == 0:
        return F.reshape(index_select(input, 0, index), index.shape)
    if index.ndim == 0:  # of a 1-d input (the dims check passed it): a 0-d result, as index
        return F.reshape(gather_in_range(input, d, F.reshape(index, (1,))), ())
    return gather_in_range(input, d, index)


def gather_in_range(x: Tensor, d: int, index: Tensor) -> Tensor:
    """``gather`` along a wrapped ``d`` of an ``x`` with dimensions, ``index`` known to be in
    range (an argmax's): no value check step."""
    key, idx = _grid_key(index, d)
    return F.getitem_key(x, *idx, key=key)


def _scatter_src(src: Any, index: Tensor, x: Tensor, name: str) -> Any:
    if not isinstance(src, Tensor):
        return src
    # (its dtype and shape checked with index's: _check_dim_range) only src's leading block, of index's shape, is read
    return F.getitem(src, tuple(slice(0, n) for n in index.shape)) if src.shape != index.shape \
        else src


def scatter(input: Tensor, dim: int, index: Tensor, src: Any = None, *, value: Any = None,
            reduce: str | None = None) -> Tensor:
    """x with x[..index[i]..] = src[i] (out of place); src may be a number (``value``).
    ``reduce`` ("add" or "multiply") folds src in instead, PyTorch's deprecated form,
    which (as there) has no derivative."""
    if (src is None) == (value is None):
        raise TypeError("scatter() expects exactly one of src (a tensor) and value (a number)")
    d = _dim(input, dim)
    index = _scatter_index(index, "scatter")
    _check_dim_range(input, index, d, "scatter", src if src is not None else value)
    _check_index_values(index, input, d)
    if _empty_of_other_rank(index, input):
        return F.clone(input)
    src = _scatter_src(src if src is not None else value, index, input, "scatter")
    if reduce is not None:
        if reduce not in ("add", "multiply"):
            raise RuntimeError("reduce argument must be either add or multiply.")
        if isinstance(src, Tensor):
            warnings.warn("The reduce argument of torch.scatter with Tensor src is deprecated "
                          "and will be removed in a future PyTorch release. Use "
                          "torch.scatter_reduce instead for more reduction options.",
                          UserWarning, stacklevel=2)
        else:
            from ..creation import full

            src = full(index.shape, src, dtype=input.dtype, device=input.device)
        return apply(P.SCATTER_REDUCE, input, index, src, dim=d,
                     reduce="sum" if reduce == "add" else "prod", include_self=True,
                     legacy=True)
    key, idx = _grid_key(index, d)
    return F.index_put(input, src, *idx, key=key)


_SCATTER_REDUCES = ("sum", "prod", "mean", "amax", "amin")


def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                   include_self: bool = True) -> Tensor:
    """x with each src[i] folded into x[..index[i]..] along ``dim`` by ``reduce`` (sum, prod,
    mean, amax, amin); x's own values take part unless ``include_self`` is False (a position
    nothing is scattered to keeps its value either way). An integer mean rounds down, as
    PyTorch's. Differentiable for every reduce, by PyTorch's formulas."""
    if reduce in ("max", "min"):  # PyTorch's parser takes these too, with no derivative
        from .composite import no_derivative

        result = scatter_reduce(input, dim, index, src, "a" + reduce, include_self=include_self)
        return no_derivative(result.detach(), (input, src), RuntimeError,
                             f"Expected 'reduce' to be one of 'sum', 'prod', 'mean', 'amax', "
                             f"'amin' but got {reduce}.", "ScatterReduceBackward0") \
            if result.requires_grad else result
    if reduce not in _SCATTER_REDUCES:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    d = _dim(input, dim)
    index = _scatter_index(index, "scatter")
    _check_dim_range(input, index, d, "scatter_reduce", src)
    _check_index_values(index, input, d)
    if _empty_of_other_rank(index, input):
        return F.clone(input)
    src = _scatter_src(src, index, input, "scatter_reduce")
    if reduce in ("sum", "mean"):
        base = input if include_self else scatter(input, d, index, value=0)
        total = scatter_add(base, d, index, src)
        if reduce == "sum":
            return total
        from ..creation import full

        count = scatter_add(full(input.shape, 1 if include_self else 0, dtype=input.dtype,
                                 device=input.device),
                            d, index, full(index.shape, 1, dtype=input.dtype, device=input.device))
        count = F.clamp(count, min=1)  # nothing scattered there: x's value, as it was
        if input.dtype.is_floating_point:
            return F.div(total, count)
        return F.floor_divide(total, count)
    return apply(P.SCATTER_REDUCE, input, index, src, dim=d, reduce=reduce,
                 include_self=bool(include_self), legacy=False)


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """x plus src added at x[..index[i]..] (repeated indices accumulate)."""
    d = _dim(input, dim)
    index = _scatter_index(index, "scatter")
    _check_dim_range(input, index, d, "scatter_add", src)
    _check_index_values(index, input, d)
    if _empty_of_other_rank(index, input):
        return F.clone(input)
    src = _scatter_src(src, index, input, "scatter_add")
    key, idx = _grid_key(index, d)
    return F.add(input, F.index_backward(src, *idx, key=key, shape=input.shape))


# how PyTorch's masked_fill error names a dtype

@named_backward("MaskedFillBackward0")
def masked_fill(input: Tensor, mask: Tensor, value: Any) -> Tensor:
    if not isinstance(mask, Tensor) or mask.dtype is not D.bool_:
        got = mask.dtype.name if isinstance(mask, Tensor) else type(mask).__name__
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{D.type_meta_name(D.as_dtype(got))}")
    return F.where(mask, fill_value(input, value, "masked_fill_"), input)


def fill_value(x: Tensor, value: Any, op: str) -> Any:
    """The value ``op`` (masked_fill_, index_fill_) writes into x, of x's dtype, so the result
    keeps it: a 0-d tensor cast, a Python scalar converted as PyTorch's (2.7 is 2 in int64)."""
    if not isinstance(value, Tensor):
        return D.scalar_as(value, x.dtype)
    if value.ndim:
        raise RuntimeError(f"{op} only supports a 0-dimensional value tensor, but got tensor "
                           f"with {value.ndim} dimension(s).")
    return F.cast(value, x.dtype)


def masked_select(input: Tensor, mask: Tensor, *,  # noqa: A002
                  out: Tensor | None = None) -> Tensor:
    """The elements of x (broadcast with mask) where mask holds, as a 1-D tensor in
    row-major order; the gradient goes back to those elements. Its length is the mask's
    count, so a compiled step runs it eagerly."""
    if out is not None:
        return F.written_same(out, masked_select(input, mask), "masked_select", "same")
    if not isinstance(mask, Tensor) or mask.dtype is not D.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    shape = broadcast_shapes(mask.shape, input.shape)
    return F.getitem(F.expand(input, shape), F.expand(mask, shape))


def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None, *,  # noqa: A002
                   out: Tensor | None = None) -> Tensor:
    """gather along ``dim`` with x and indices broadcast against each other along the other
    dims (without dim: of the flattened x, at the flattened indices)."""
    if out is not None:
        return F.written_to(out, take_along_dim(input, indices, dim), "take_along_dim")
    if indices.dtype is not D.int64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{D.scalar_type_name(indices.dtype)}")
    if dim is None:
        return gather(F.reshape(input, (-1,)), 0, F.reshape(indices, (-1,)))
    if input.ndim != indices.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same "
                           f"number of dimensions, but got {input.ndim} dimensions for input, and "
                           f"{indices.ndim} dimensions for indices")
    d = _dim(input, dim)
    sizes = list(input.shape)
    if input.ndim:
        sizes[d] = indices.shape[d]
    shape = list(broadcast_shapes(sizes, indices.shape))
    if input.ndim and input.shape[d]:  # along a dim, PyTorch 2.13 takes each index modulo
        # the dim's size (-1 is the last, as 4 is of 5; only the flattened form checks)
        indices = F.remainder(indices, input.shape[d])
    indices = F.expand(indices, shape)
    if input.ndim:
        shape[d] = input.shape[d]
    return gather(F.expand(input, shape), d, indices)


cumsum = F.cumsum
cumprod = F.cumprod

SortResult = namedtuple("SortResult", ["values", "indices"])
TopkResult = namedtuple("TopkResult", ["values", "indices"])


@returns("sort")
def _sort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False,  # noqa: A002
          *, out: Any = None) -> SortResult:
    """Values and indices along ``dim`` (ties keep their order: the sort is always stable)."""
    if out is not None:
        return F.written_to_each(out, _sort(input, dim, descending, stable), "sort")
    d = _dim(input, dim)
    indices = apply(P.ARGSORT, input, axis=d, descending=bool(descending))
    if input.ndim == 0:
        return SortResult(named(F.clone(input), "SortBackward0"), indices)
    return SortResult(named(gather(input, d, indices), "SortBackward0"), indices)


def _argsort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False,  # noqa: A002
             *, out: Tensor | None = None) -> Tensor:
    """The indices that sort x along ``dim``; stable either way (ties in input order)."""
    if out is not None:
        return F.written_to(out, _argsort(input, dim, descending), "argsort")
    return apply(P.ARGSORT, input, axis=_dim(input, dim), descending=bool(descending))


# PyTorch's two overloads of sort and argsort: (input, *, stable, dim, descending, out) and
# (input, dim, descending) (sort's with a keyword-only out): stable is keyword-only, and only
# with dim and descending as keywords too
_SORT_SIGNATURES = {
    ("argsort", False): " * (Tensor input, *, bool stable, int dim = -1, bool descending = "
                        "False, Tensor out = None)\n * (Tensor input, int dim = -1, bool "
                        "descending = False)\n",
    ("sort", False): " * (Tensor input, *, bool stable, int dim = -1, bool descending = False, "
                     "tuple of Tensors out = None)\n * (Tensor input, int dim = -1, bool "
                     "descending = False, *, tuple of Tensors out = None)\n",
    ("argsort", True): " * (*, bool stable, int dim = -1, bool descending = False)\n * (int dim "
                       "= -1, bool descending = False)\n",
    ("sort", True): " * (*, bool stable, int dim = -1, bool descending = False)\n * (int dim = "
                    "-1, bool descending = False)\n",
}


def _type_name(value: Any) -> str:
    if isinstance(value, Tensor):
        return "Tensor"
    kind = type(value)
    return f"numpy.{kind.__name__}" if kind.__module__ == "numpy" else kind.__name__


def _is_int(value: Any) -> bool:
    return isinstance(value, Tensor) or (isinstance(value, (int, np.integer))
                                         and not isinstance(value, (bool, np.bool_)))


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool)


def _sort_arguments(name: str, method: bool, args: tuple[Any, ...], kwargs: dict[str, Any]
                    ) -> dict[str, Any]:
    """``args`` (after the input) and ``kwargs`` of sort or argsort bound to one of PyTorch's
    overloads, with its argument parser's errors for a call that matches neither."""
    out = () if method else ("out",)
    positional = ("dim", "descending")[:len(args)]
    bound = dict(zip(positional, args)) | kwargs
    typed = (_is_int(bound.get("dim", 0)) and _is_bool(bound.get("descending", False))
             and (_is_bool(bound.get("stable", False))
                  or (name == "sort" and bound.get("stable", False) is None)))
    if typed and "stable" in kwargs and not args and {"stable", "dim", "descending",
                                                       *out}.issuperset(kwargs):
        return bound
    if typed and "stable" not in kwargs and len(args) <= 2 and not set(positional) & set(
            kwargs) and {"dim", "descending", *(out if name == "sort" else ())}.issuperset(
                kwargs):
        return bound
    given = len(args) + len(kwargs) + (0 if method else 1)
    # (min args, max args, max positional) of each overload, the input counted as PyTorch's
    first_counts = (1, 3, 0) if method else (2, 5, 1)
    second_counts = (0, 2, 2) if method else (1, 3 + (name == "sort"), 3)
    plausible = [c for c in (first_counts, second_counts) if c[0] <= given <= c[1]]
    npos = len(args) + (0 if method else 1)
    if len(plausible) == 1 and npos > plausible[0][2]:
        low, _, high = plausible[0]
        raise TypeError(f"{name}() takes from {low} to {high} positional arguments but {npos} "
                        "were given")
    shown = ", ".join(([] if method else ["Tensor"]) + [_type_name(a) for a in args])
    keywords = "".join(f"{k}={_type_name(v)}, " for k, v in sorted(kwargs.items()))
    got = shown + (", " + keywords[:-2] if shown and keywords else keywords)
    text = _SORT_SIGNATURES[(name, method)]
    wrong = [k for k in kwargs if k not in ("dim", "descending")]
    # the overload without a "*" says which keywords it lacks, given a positional dim
    if wrong and args and len(args) <= 2 and (method or name == "argsort"):
        text += f"      didn't match because some of the keywords were incorrect: " \
                f"{', '.join(wrong)}\n"
    raise TypeError(f"{name}() received an invalid combination of arguments - got ({got}), but "
                    f"expected one of:\n{text}")


def sort(input: Tensor, *args: Any, **kwargs: Any) -> SortResult:  # noqa: A002
    """PyTorch's ``torch.sort`` (its overloads: ``_sort_arguments``)."""
    return _sort(input, **_sort_arguments("sort", False, args, kwargs))


def argsort(input: Tensor, *args: Any, **kwargs: Any) -> Tensor:  # noqa: A002
    """PyTorch's ``torch.argsort`` (its overloads: ``_sort_arguments``)."""
    return _argsort(input, **_sort_arguments("argsort", False, args, kwargs))


def sort_method(self: Tensor, *args: Any, **kwargs: Any) -> SortResult:
    """``Tensor.sort``."""
    return _sort(self, **_sort_arguments("sort", True, args, kwargs))


def argsort_method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """``Tensor.argsort``."""
    return _argsort(self, **_sort_arguments("argsort", True, args, kwargs))


# the parameters (dim's place: numpy_aliases) as PyTorch's overloads take them
for _fn, _impl in ((sort, _sort), (argsort, _argsort), (sort_method, _sort),
                   (argsort_method, _argsort)):
    _fn.__signature__ = inspect.signature(_impl)  # type: ignore[attr-defined]


@returns("topk")
def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True,  # noqa: A002
         sorted: bool = True, *, out: Any = None) -> TopkResult:
    """The k largest (smallest) along ``dim``, always in sorted order: what sorted=True asks,
    and one of the orders sorted=False allows."""
    if out is not None:
        return F.written_to_each(out, topk(input, k, dim, largest, sorted), "topk")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer, Tensor)):
        raise TypeError(f"topk(): argument 'k' (position 2) must be int, not {_type_name(k)}")
    d = int_dim("topk", dim, input.ndim)
    if input.dtype is D.bool_:
        raise RuntimeError("topk does not support bool dtypes on CPU")
    n = input.shape[d] if input.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    order = apply(P.ARGSORT, input, axis=d, descending=bool(largest))
    if input.ndim == 0:
        return TopkResult(named(F.clone(input), "TopkBackward0"), order)
    indices = F.getitem(order, (slice(None),) * d + (slice(0, k),))
    indices = _stl_topk(input, d, k, bool(largest), bool(sorted), order, indices)
    return TopkResult(named(gather(input, d, indices), "TopkBackward0"), indices)


_STL_UNSORTED_MAX = 1 << 16


def _stl_topk(x: Tensor, d: int, k: int, largest: bool, sort: bool, order: Tensor,
              indices: Tensor) -> Tensor:
    """``indices`` (a stable sort's first k) with PyTorch's instead where its kernel's
    libstdc++ selection decides them (``stl_topk_pick``): the stl_pick primitive, so a
    captured step picks as eager mode does at each replay."""
    if k == 0 or not x.numel():
        return indices
    return apply(P.STL_PICK, x.detach(), indices, order, kind="topk", dim=d, k=k,
                 largest=largest, sort=sort)


def stl_topk_pick(x: np.ndarray, indices: np.ndarray, order: np.ndarray, d: int, k: int,
                  largest: bool, sort: bool) -> np.ndarray:
    """``indices`` with PyTorch's in the rows where its kernel's libstdc++ selection decides
    them (runtime.ops.stl): where equal values (or NaNs) meet among the first k + 1 sorted,
    and every row of an unsorted selection by nth_element (k * 64 > n), whose order is the
    one it leaves, up to _STL_UNSORTED_MAX elements (a row at a time in Python: 6.5 s for
    1000 rows of 5000, sorted=False's 0.74 s before; past it the sorted order, which
    sorted=False allows too)."""
    n = x.shape[d]
    unsorted = not sort and k * 64 > n and k > 1 and x.size <= _STL_UNSORTED_MAX
    rows = np.moveaxis(x, d, -1).reshape(-1, n)
    if unsorted:
        chosen = np.arange(len(rows))
    else:
        top = np.moveaxis(order, d, -1).reshape(-1, n)[:, :k + 1]
        sv = np.take_along_axis(rows, top, 1)
        same = sv[:, :-1] == sv[:, 1:]
        if x.dtype.kind == "f" or x.dtype.name == "bfloat16":
            nan = sv != sv
            same |= nan[:, :-1] & nan[:, 1:]
        chosen = np.nonzero(same.any(1))[0]
    if not len(chosen):
        return indices
    from .stl import topk_row

    picked = np.moveaxis(indices, d, -1)
    flat = picked.reshape(-1, k).copy()
    for r in chosen:
        flat[r] = topk_row(rows[r].tolist(), k, largest, sort)
    return np.ascontiguousarray(np.moveaxis(flat.reshape(picked.shape), -1, d))


# --- small compositions PyTorch has as free functions -----------------------------------------


def logical_not(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    if out is not None:
        return F.written_to(out, logical_not(input), "logical_not")
    return F.eq(input, False if input.dtype is D.bool_ else 0)


@named_backward("ReciprocalBackward0")
def reciprocal(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    if out is not None:
        return F.written_to(out, reciprocal(input), "reciprocal")
    return F.div(1.0, input)


def isnan(input: Tensor) -> Tensor:
    return F.ne(input, input)


def isinf(input: Tensor) -> Tensor:
    return F.eq(F.abs(input), math.inf) if input.dtype.is_floating_point else F.ne(input, input)


def isfinite(input: Tensor) -> Tensor:
    # an integer is always finite; a float is when |x| < inf (False for nan, too)
    return F.eq(input, input) if not input.dtype.is_floating_point else F.lt(F.abs(input), math.inf)


def clamp_min(input: Tensor, min: Any) -> Tensor:  # noqa: A002
    node = f"ClampMinBackward{int(isinstance(min, Tensor))}"  # PyTorch's, by min's overload
    return renamed(F.clamp(input, min=min), node)


def clamp_max(input: Tensor, max: Any) -> Tensor:  # noqa: A002
    return renamed(F.clamp(input, max=max), f"ClampMaxBackward{int(isinstance(max, Tensor))}")


@named_backward("FlipBackward0")
def flip(input: Tensor, *sizes: Any, dims: Any = None) -> Tensor:  # noqa: A002
    """A copy with ``dims`` reversed (PyTorch's flip copies; a reversed slice would alias);
    ``flip((0, 1))``, ``flip(0, 1)`` or ``flip(dims=(0, 1))``."""
    dims = F.sizes_or(sizes, dims, "flip", "dims")
    if not dims:
        raise TypeError('flip() missing 1 required positional arguments: "dims"')
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    axes = wrap_dims(dims, input.ndim) if input.ndim else F._axes(dims, 0)
    key = tuple(slice(None, None, -1) if d in axes else slice(None) for d in range(input.ndim))
    return F.clone(F.getitem(input, key)) if axes else F.clone(input)


def _narrow_start(start: Any) -> Any:
    """narrow's start given as a tensor (PyTorch's narrow.Tensor overload): a 0-dim integer
    tensor's value; a float, bool or sized tensor is refused as PyTorch refuses it."""
    if not isinstance(start, Tensor):
        return start
    if start.ndim != 0 or start.dtype.is_floating_point or start.dtype.is_complex \
            or start.dtype == D.bool_:
        raise RuntimeError("start must be an 0-dim integral Tensor.")
    return int(start.item())


@named_backward("SliceBackward0")
def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    if input.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = _dim(input, dim)
    n = input.shape[d]
    start = _narrow_start(start)
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got "
                         f"{int(start)})")
    start = start + n if start < 0 else start
    if start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return F.getitem(input, (slice(None),) * d + (slice(start, start + length),))


def unbind(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    d = sized_dim(input, dim, wrapped_first=True)
    return multi_output_views(input, [(slice(None),) * d + (i,) for i in range(input.shape[d])],
                              d, "UnbindBackward0", stacked=True)


def movedim(input: Tensor, source: int | Sequence[int], destination: int | Sequence[int]
            ) -> Tensor:
    """x with its dims ``source`` moved to the places ``destination`` (one each), the
    others keeping their order."""
    sources = [source] if isinstance(source, int) else list(source)
    destinations = [destination] if isinstance(destination, int) else list(destination)
    if len(sources) != len(destinations):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({sources} "
                           f"dims) should contain the same number of dims as destination "
                           f"({destinations} dims)")
    for name, given in (("source", sources), ("destination", destinations)):
        wrapped = [wrap_dim(d, input.ndim) for d in given]
        if len(set(wrapped)) != len(wrapped):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({given})")
    src, dst = wrap_dims(sources, input.ndim), wrap_dims(destinations, input.ndim)
    if input.ndim == 0:
        return input
    order: list[int | None] = [None] * input.ndim
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(input.ndim) if d not in src)
    return F.permute(input, *(next(rest) if o is None else o for o in order))


def tile(input: Tensor, *sizes: Any, dims: Any = None) -> Tensor:  # noqa: A002
    """input repeated ``dims`` times (a sequence, or sizes: ``x.tile(2, 1)``), leading ones
    filled in where dims is shorter than input's rank."""
    reps = F._shape_arg(F.sizes_or(sizes, dims, "tile", "dims"))
    return repeat(input, *((1,) * (input.ndim - len(reps)) + reps))


@autocast_exclude
def outer(input: Tensor, vec2: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    if out is not None:
        return F.written_to(out, outer(input, vec2), "outer")
    check_vectors("outer", (("self", input), ("vec2", vec2)))
    return F.mul(F.unsqueeze(input, 1), F.unsqueeze(vec2, 0))


def check_vectors(name: str, args: Sequence[tuple[str, Tensor]]) -> None:
    """PyTorch's error where an argument of outer / addr is not 1-D."""
    for arg, v in args:
        if v.ndim != 1:
            raise RuntimeError(f"{name}: Expected 1-D argument {arg}, but got {v.ndim}-D")


@autocast_exclude
@named_backward("DotBackward0")
def dot(input: Tensor, tensor: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    if out is not None:
        result = dot(input, tensor)
        if out.dtype is not result.dtype:  # PyTorch's dot: out of the inputs' very dtype
            raise RuntimeError(f"result dtype {D.scalar_type_name(out.dtype)} does not match "
                               f"input dtype {D.scalar_type_name(result.dtype)}")
        return F.written_to(out, result, "dot")
    if input.ndim != 1 or tensor.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {tensor.ndim}D tensors")
    if input.shape != tensor.shape:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{input.shape[0]}] and src "
                           f"[{tensor.shape[0]}] to have the same number of elements, but got "
                           f"{input.shape[0]} and {tensor.shape[0]} elements respectively")
    return F.matmul(input, tensor)


@named_backward("AminBackward0")
def amin(input: Tensor, dim: Any = None, keepdim: bool = False, *,  # noqa: A002
         out: Tensor | None = None) -> Tensor:
    if out is not None:
        return F.written_same(out, amin(input, dim, keepdim), "amin", "amax")
    F._check_reduced_nonempty("amin", input, dim, as_given=True)  # its own name, not amax's
    return F.reversed_order(F.amax(F.reversed_order(input), dim, keepdim))


def _either(x: Tensor, y: Tensor) -> Tensor:
    return logical_not(F.logical_and(logical_not(x), logical_not(y)))


def _double_arg(fn: str, name: str, position: int, value: Any) -> Any:
    """PyTorch's parser for a double argument: a one-element tensor that requires no grad is
    read as its number, one that requires grad is its TypeError."""
    if not isinstance(value, Tensor):
        return value
    if value.requires_grad or value.numel() != 1:
        raise TypeError(f"{fn}(): argument '{name}' (position {position}) must be float, not "
                        "Tensor")
    return value.item()


def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Tensor:
    """|a - b| <= atol + rtol * |b| elementwise, as PyTorch's: equal values (infinities
    included) are close; a nan is close to a nan only with ``equal_nan``."""
    for name, t in (("input", input), ("other", other)):
        if not isinstance(t, Tensor):
            raise TypeError(f"isclose(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"{D.scalar_type_name(input.dtype)} did not match "
                           f"{D.scalar_type_name(other.dtype)}")
    rtol = _double_arg("isclose", "rtol", 3, rtol)
    atol = _double_arg("isclose", "atol", 4, atol)
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    a, b = input, other
    if not input.dtype.is_floating_point:  # bools and ints: their error in the default float
        # dtype, as PyTorch's (no wrap-around of uint8's 1 - 3, no bool subtraction)
        a, b = F.cast(input, D.default_float), F.cast(other, D.default_float)
    near = F.le(F.abs(F.sub(a, b)), F.add(F.mul(F.abs(b), rtol), atol))
    if input.dtype.is_floating_point:  # an infinity is close only to itself
        near = F.logical_and(near, F.logical_and(isfinite(input), isfinite(other)))
    close = _either(F.eq(input, other), near)
    if equal_nan and input.dtype.is_floating_point:
        close = _either(close, F.logical_and(isnan(input), isnan(other)))
    return close


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> bool:
    return bool(isclose(input, other, rtol, atol, equal_nan).all().item())


def equal(input: Tensor, other: Tensor) -> bool:
    """Same shape and the same values (a nan equals nothing), as PyTorch's."""
    if tuple(input.shape) != tuple(other.shape):
        return False
    return bool(F.eq(input, other).all().item())
