"""PyTorch's tensor ops built from the registry's primitives: splits, triangles, repeat,
gather/scatter/index_select, masked_fill, sort/topk and the operators ``%``, ``//`` and ``~``
(reductions are in ``reductions``, products in ``products``). Written from primitives, their
backward comes from the primitives', and the elementwise parts fuse in a compiled step."""

from __future__ import annotations

import builtins
import math
import warnings
from collections import namedtuple
from collections.abc import Sequence
from typing import Any

from .. import _dtype as D
from ..amp.policy import autocast_exclude
from ..tensor import Tensor
from . import functional as F
from . import prims as P
from .dispatch import apply, keeps_saved, named, named_backward
from .shapes import broadcast_shapes, wrap_dim, wrap_dims

# --- helpers ---------------------------------------------------------------------------------


def _dim(x: Tensor, dim: int) -> int:
    """One dimension of x, PyTorch's range check and error; a 0-d tensor has dim 0 or -1."""
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
    """gather's / scatter's index as int64 (PyTorch names every scatter ``scatter`` here)."""
    return int64_index(index, f"{kernel}(): Expected dtype int32/int64 for index")


def _check_dim_range(x: Tensor, index: Tensor, dim: int, name: str) -> None:
    """PyTorch's shape rules for gather/scatter's index: same rank, and no dimension larger
    than the input's (the indexed one excepted)."""
    if index.ndim != x.ndim and not (index.ndim <= 1 and x.ndim <= 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as input "
                           "tensor")
    for d in range(index.ndim):
        if d != dim and index.shape[d] > x.shape[d]:
            raise RuntimeError(f"Size does not match at dimension {d} expected index "
                               f"{list(index.shape)} to be smaller than self {list(x.shape)} "
                               f"apart from dimension {dim}")


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


def bitwise_not(x: Tensor) -> Tensor:
    if x.dtype is D.bool_:
        return F.eq(x, False)
    if x.dtype.is_floating_point:
        raise NotImplementedError('"bitwise_not_cpu" not implemented for '
                                  f"'{D.scalar_type_name(x.dtype)}'")
    # two's complement, wrapping round in x's dtype: ~x == -x - 1 (uint8's 255 - x), and both
    # fuse for int64
    return F.sub(F.neg(x), 1)


def invert(x: Tensor) -> Tensor:
    """``~x``: bitwise_not, with PyTorch's TypeError for a float x."""
    if x.dtype.is_floating_point:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors")
    return bitwise_not(x)


@named_backward("PowBackward0")
def square(x: Tensor) -> Tensor:
    """x * x; of a bool x, PyTorch's pow(x, 2): int64."""
    return F.mul(x, x) if x.dtype is not D.bool_ else F.pow(x, 2)


@F.half_in_float32
@named_backward("RsqrtBackward0")
def rsqrt(x: Tensor) -> Tensor:
    return F.div(1.0, F.sqrt(x))


# --- shapes ----------------------------------------------------------------------------------


def split(x: Tensor, split_size_or_sections: int | Sequence[int], dim: int = 0
          ) -> tuple[Tensor, ...]:
    d = _dim(x, dim)
    n = x.shape[d]
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
        if builtins.sum(sizes) != n or builtins.any(s < 0 for s in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} "
                               f"(input tensor's size at dimension {d}), but got split_sizes="
                               f"{sizes}")
    name = "SplitBackward0" if isinstance(split_size_or_sections, int) else \
        "SplitWithSizesBackward0"
    out, start = [], 0
    for s in sizes:
        out.append(named(F.getitem(x, (slice(None),) * d + (slice(start, start + s),)), name))
        start += s
    return tuple(out)


def chunk(x: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    n = x.shape[_dim(x, dim)]
    return split(x, -(-n // chunks), dim)


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
def tril(x: Tensor, diagonal: int = 0) -> Tensor:
    return _triangle(x, diagonal, "tril", lower=True)


@named_backward("TriuBackward0")
def triu(x: Tensor, diagonal: int = 0) -> Tensor:
    return _triangle(x, diagonal, "triu", lower=False)


@named_backward("RepeatBackward0")
def repeat(x: Tensor, *sizes: Any) -> Tensor:
    reps = F._shape_arg(sizes)
    if len(reps) < x.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    if builtins.any(r < 0 for r in reps):
        raise RuntimeError(f"Trying to create tensor with negative dimension "
                           f"{builtins.min(reps)}: {list(reps)}")
    shape = (1,) * (len(reps) - x.ndim) + x.shape
    # each axis of size s becomes (r, s), expanded, then merged: a tiling of the whole tensor
    interleaved = tuple(v for s in shape for v in (1, s))
    expanded = tuple(v for r, s in zip(reps, shape) for v in (r, s))
    tiled = F.expand(F.reshape(x, interleaved), expanded)
    return F.reshape(F.clone(tiled), tuple(r * s for r, s in zip(reps, shape)))


@named_backward("IndexSelectBackward0")
def index_select(x: Tensor, dim: int, index: Tensor) -> Tensor:
    index = int64_index(index, "index_select(): Expected dtype int32 or int64 for index")
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    d = _dim(x, dim)
    index = _as_1d(index)
    if index.numel():
        F.check_bounds(index, 0, x.shape[d] if x.ndim else 1, "index out of range in self")
    if x.ndim == 0:
        return F.getitem_key(F.reshape(x, (1,)), index, key=(P.IndexArg(0),))[0]
    return F.getitem_key(x, index, key=(slice(None),) * d + (P.IndexArg(0),))


@named_backward("GatherBackward0")
def gather(x: Tensor, dim: int, index: Tensor) -> Tensor:
    d = _dim(x, dim)
    index = _scatter_index(index, "gather")
    _check_dim_range(x, index, d, "gather")
    _check_index_values(index, x, d)
    if x.ndim == 0:
        return F.reshape(index_select(x, 0, index), index.shape)
    return gather_in_range(x, d, index)


def gather_in_range(x: Tensor, d: int, index: Tensor) -> Tensor:
    """``gather`` along a wrapped ``d`` of an ``x`` with dimensions, ``index`` known to be in
    range (an argmax's): no value check step."""
    key, idx = _grid_key(index, d)
    return F.getitem_key(x, *idx, key=key)


def _scatter_src(src: Any, index: Tensor, x: Tensor, name: str) -> Any:
    if not isinstance(src, Tensor):
        return src
    if src.dtype is not x.dtype:
        raise RuntimeError(f"{name}(): Expected self.dtype to be equal to src.dtype")
    for d in range(index.ndim):
        if index.shape[d] > src.shape[d]:
            raise RuntimeError(f"Size does not match at dimension {d} expected index "
                               f"{list(index.shape)} to be smaller than src {list(src.shape)}")
    # only src's leading block, of index's shape, is read
    return F.getitem(src, tuple(slice(0, n) for n in index.shape)) if src.shape != index.shape \
        else src


def scatter(x: Tensor, dim: int, index: Tensor, src: Any = None, *, value: Any = None,
            reduce: str | None = None) -> Tensor:
    """x with x[..index[i]..] = src[i] (out of place); src may be a number (``value``).
    ``reduce`` ("add" or "multiply") folds src in instead, PyTorch's deprecated form,
    which (as there) has no derivative."""
    if (src is None) == (value is None):
        raise TypeError("scatter() expects exactly one of src (a tensor) and value (a number)")
    d = _dim(x, dim)
    index = _scatter_index(index, "scatter")
    _check_dim_range(x, index, d, "scatter")
    _check_index_values(index, x, d)
    src = _scatter_src(src if src is not None else value, index, x, "scatter")
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

            src = full(index.shape, src, dtype=x.dtype, device=x.device)
        return apply(P.SCATTER_REDUCE, x, index, src, dim=d,
                     reduce="sum" if reduce == "add" else "prod", include_self=True,
                     legacy=True)
    key, idx = _grid_key(index, d)
    return F.index_put(x, src, *idx, key=key)


_SCATTER_REDUCES = ("sum", "prod", "mean", "amax", "amin")


def scatter_reduce(x: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                   include_self: bool = True) -> Tensor:
    """x with each src[i] folded into x[..index[i]..] along ``dim`` by ``reduce`` (sum, prod,
    mean, amax, amin); x's own values take part unless ``include_self`` is False (a position
    nothing is scattered to keeps its value either way). An integer mean rounds down, as
    PyTorch's. Differentiable for every reduce, by PyTorch's formulas."""
    if reduce not in _SCATTER_REDUCES:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    d = _dim(x, dim)
    index = _scatter_index(index, "scatter")
    _check_dim_range(x, index, d, "scatter_reduce")
    _check_index_values(index, x, d)
    src = _scatter_src(src, index, x, "scatter_reduce")
    if reduce in ("sum", "mean"):
        base = x if include_self else scatter(x, d, index, value=0)
        total = scatter_add(base, d, index, src)
        if reduce == "sum":
            return total
        from ..creation import full

        count = scatter_add(full(x.shape, 1 if include_self else 0, dtype=x.dtype,
                                 device=x.device),
                            d, index, full(index.shape, 1, dtype=x.dtype, device=x.device))
        count = F.clamp(count, min=1)  # nothing scattered there: x's value, as it was
        if x.dtype.is_floating_point:
            return F.div(total, count)
        return F.floor_divide(total, count)
    return apply(P.SCATTER_REDUCE, x, index, src, dim=d, reduce=reduce,
                 include_self=bool(include_self), legacy=False)


def scatter_add(x: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """x plus src added at x[..index[i]..] (repeated indices accumulate)."""
    d = _dim(x, dim)
    index = _scatter_index(index, "scatter")
    _check_dim_range(x, index, d, "scatter_add")
    _check_index_values(index, x, d)
    src = _scatter_src(src, index, x, "scatter_add")
    key, idx = _grid_key(index, d)
    return F.add(x, F.index_backward(src, *idx, key=key, shape=x.shape))


# how PyTorch's masked_fill error names a dtype

@named_backward("MaskedFillBackward0")
def masked_fill(x: Tensor, mask: Tensor, value: Any) -> Tensor:
    if not isinstance(mask, Tensor) or mask.dtype is not D.bool_:
        got = mask.dtype.name if isinstance(mask, Tensor) else type(mask).__name__
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{D.type_meta_name(D.as_dtype(got))}")
    return F.where(mask, fill_value(x, value, "masked_fill_"), x)


def fill_value(x: Tensor, value: Any, op: str) -> Any:
    """The value ``op`` (masked_fill_, index_fill_) writes into x, of x's dtype, so the result
    keeps it: a 0-d tensor cast, a Python scalar converted as PyTorch's (2.7 is 2 in int64)."""
    if not isinstance(value, Tensor):
        return D.scalar_as(value, x.dtype)
    if value.ndim:
        raise RuntimeError(f"{op} only supports a 0-dimensional value tensor, but got tensor "
                           f"with {value.ndim} dimension(s).")
    return F.cast(value, x.dtype)


def masked_select(x: Tensor, mask: Tensor) -> Tensor:
    """The elements of x (broadcast with mask) where mask holds, as a 1-D tensor in
    row-major order; the gradient goes back to those elements. Its length is the mask's
    count, so a compiled step runs it eagerly."""
    if not isinstance(mask, Tensor) or mask.dtype is not D.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    shape = broadcast_shapes(mask.shape, x.shape)
    return F.getitem(F.expand(x, shape), F.expand(mask, shape))


def take_along_dim(x: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    """gather along ``dim`` with x and indices broadcast against each other along the other
    dims (without dim: of the flattened x, at the flattened indices)."""
    if indices.dtype is not D.int64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{D.scalar_type_name(indices.dtype)}")
    if dim is None:
        return gather(F.reshape(x, (-1,)), 0, F.reshape(indices, (-1,)))
    if x.ndim != indices.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same "
                           f"number of dimensions, but got {x.ndim} dimensions for input, and "
                           f"{indices.ndim} dimensions for indices")
    d = _dim(x, dim)
    sizes = list(x.shape)
    if x.ndim:
        sizes[d] = indices.shape[d]
    shape = list(broadcast_shapes(sizes, indices.shape))
    indices = F.expand(indices, shape)
    if x.ndim:
        shape[d] = x.shape[d]
    return gather(F.expand(x, shape), d, indices)


cumsum = F.cumsum
cumprod = F.cumprod

SortResult = namedtuple("SortResult", ["values", "indices"])
TopkResult = namedtuple("TopkResult", ["values", "indices"])


def sort(x: Tensor, dim: int = -1, descending: bool = False, stable: bool = False
         ) -> SortResult:
    """Values and indices along ``dim`` (ties keep their order: the sort is always stable)."""
    d = _dim(x, dim)
    indices = apply(P.ARGSORT, x, axis=d, descending=bool(descending))
    if x.ndim == 0:
        return SortResult(named(F.clone(x), "SortBackward0"), indices)
    return SortResult(named(gather(x, d, indices), "SortBackward0"), indices)


def argsort(x: Tensor, dim: int = -1, descending: bool = False, stable: bool = False
            ) -> Tensor:
    """The indices that sort x along ``dim``; stable either way (ties in input order)."""
    return apply(P.ARGSORT, x, axis=_dim(x, dim), descending=bool(descending))


def topk(x: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True  # noqa: A002
         ) -> TopkResult:
    """The k largest (smallest) along ``dim``, always in sorted order: what sorted=True asks,
    and one of the orders sorted=False allows."""
    if x.dtype is D.bool_:
        raise RuntimeError("topk does not support bool dtypes on CPU")
    d = _dim(x, dim)
    n = x.shape[d] if x.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    order = apply(P.ARGSORT, x, axis=d, descending=bool(largest))
    if x.ndim == 0:
        return TopkResult(named(F.clone(x), "TopkBackward0"), order)
    indices = F.getitem(order, (slice(None),) * d + (slice(0, k),))
    return TopkResult(named(gather(x, d, indices), "TopkBackward0"), indices)


# --- small compositions PyTorch has as free functions -----------------------------------------


def logical_not(x: Tensor) -> Tensor:
    return F.eq(x, False if x.dtype is D.bool_ else 0)


@named_backward("ReciprocalBackward0")
def reciprocal(x: Tensor) -> Tensor:
    return F.div(1.0, x)


def isnan(x: Tensor) -> Tensor:
    return F.ne(x, x)


def isinf(x: Tensor) -> Tensor:
    return F.eq(F.abs(x), math.inf) if x.dtype.is_floating_point else F.ne(x, x)


def isfinite(x: Tensor) -> Tensor:
    # an integer is always finite; a float is when |x| < inf (False for nan, too)
    return F.eq(x, x) if not x.dtype.is_floating_point else F.lt(F.abs(x), math.inf)


def clamp_min(x: Tensor, min: Any) -> Tensor:  # noqa: A002
    return F.clamp(x, min=min)


def clamp_max(x: Tensor, max: Any) -> Tensor:  # noqa: A002
    return F.clamp(x, max=max)


@named_backward("FlipBackward0")
def flip(x: Tensor, *dims: Any) -> Tensor:
    """A copy with ``dims`` reversed (PyTorch's flip copies; a reversed slice would alias);
    ``flip((0, 1))`` or ``flip(0, 1)``."""
    if not dims:
        raise TypeError('flip() missing 1 required positional arguments: "dims"')
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    axes = wrap_dims(dims, x.ndim) if x.ndim else F._axes(dims, 0)
    key = tuple(slice(None, None, -1) if d in axes else slice(None) for d in range(x.ndim))
    return F.clone(F.getitem(x, key)) if axes else F.clone(x)


@named_backward("SliceBackward0")
def narrow(x: Tensor, dim: int, start: int, length: int) -> Tensor:
    d = _dim(x, dim)
    n = x.shape[d]
    start = start + n if start < 0 else start
    if not 0 <= start <= n or length < 0 or start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return F.getitem(x, (slice(None),) * d + (slice(start, start + length),))


def unbind(x: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    d = _dim(x, dim)
    return tuple(named(F.getitem(x, (slice(None),) * d + (i,)), "UnbindBackward0")
                 for i in range(x.shape[d]))


def movedim(x: Tensor, source: int | Sequence[int], destination: int | Sequence[int]
            ) -> Tensor:
    """x with its dims ``source`` moved to the places ``destination`` (one each), the
    others keeping their order."""
    sources = [source] if isinstance(source, int) else list(source)
    destinations = [destination] if isinstance(destination, int) else list(destination)
    if len(sources) != len(destinations):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({sources} "
                           f"dims) should contain the same number of dims as destination "
                           f"({destinations} dims)")
    src, dst = wrap_dims(sources, x.ndim), wrap_dims(destinations, x.ndim)
    if x.ndim == 0:
        return x
    order: list[int | None] = [None] * x.ndim
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(x.ndim) if d not in src)
    return F.permute(x, *(next(rest) if o is None else o for o in order))


def tile(x: Tensor, *dims: Any) -> Tensor:
    """x repeated ``dims`` times (a sequence, or sizes: ``x.tile(2, 1)``), leading ones
    filled in where dims is shorter than x's rank."""
    reps = F._shape_arg(dims)
    return repeat(x, *((1,) * (x.ndim - len(reps)) + reps))


@autocast_exclude
def outer(a: Tensor, b: Tensor) -> Tensor:
    return F.mul(F.unsqueeze(a, 1), F.unsqueeze(b, 0))


@autocast_exclude
@named_backward("DotBackward0")
def dot(a: Tensor, b: Tensor) -> Tensor:
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    if a.shape != b.shape:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src "
                           f"[{b.shape[0]}] to have the same number of elements, but got "
                           f"{a.shape[0]} and {b.shape[0]} elements respectively")
    return F.matmul(a, b)


@named_backward("AminBackward0")
def amin(x: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    F._check_reduced_nonempty("amin", x, dim)  # its own name in the error, not amax's
    return F.reversed_order(F.amax(F.reversed_order(x), dim, keepdim))


def _either(x: Tensor, y: Tensor) -> Tensor:
    return logical_not(F.logical_and(logical_not(x), logical_not(y)))


def isclose(a: Tensor, b: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Tensor:
    """|a - b| <= atol + rtol * |b| elementwise, as PyTorch's: equal values (infinities
    included) are close; a nan is close to a nan only with ``equal_nan``."""
    for name, t in (("input", a), ("other", b)):
        if not isinstance(t, Tensor):
            raise TypeError(f"isclose(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"{a.dtype.name} did not match {b.dtype.name}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    near = F.le(F.abs(F.sub(a, b)), F.add(F.mul(F.abs(b), rtol), atol))
    if a.dtype.is_floating_point:  # an infinity is close only to itself
        near = F.logical_and(near, F.logical_and(isfinite(a), isfinite(b)))
    close = _either(F.eq(a, b), near)
    if equal_nan and a.dtype.is_floating_point:
        close = _either(close, F.logical_and(isnan(a), isnan(b)))
    return close


def allclose(a: Tensor, b: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> bool:
    return bool(isclose(a, b, rtol, atol, equal_nan).all().item())


def equal(a: Tensor, b: Tensor) -> bool:
    """Same shape and the same values (a nan equals nothing), as PyTorch's."""
    if tuple(a.shape) != tuple(b.shape):
        return False
    return bool(F.eq(a, b).all().item())
