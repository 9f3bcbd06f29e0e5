"""PyTorch's remaining in-place Tensor methods (relu_, abs_, index_fill_, masked_scatter_,
fill_diagonal_, random_, unsqueeze_ ...), select and the NaN-skipping sums.

Each value-changing one is its out-of-place form written into the tensor through ``copy_``
or ``apply_inplace``, so version counters, leaf checks, views (CopySlices) and capture in
``planner.compile`` come from the one place that does them. Nothing here reads tensor values
in Python: index masks are built from shapes and compared on tensors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import warnings

import numpy as np

from .. import _dtype as D
from ..amp.policy import autocast_promote
from ..tensor import Tensor
from ..tracing import GraphBreak
from ..tracing import _state as _trace_state
from . import functional as F
from . import prims as P
from . import tensor_ops as T
from .composite import _inplace, relu, sigmoid
from .dispatch import named, named_backward
from .inplace import ERR_LEAF_INPLACE, apply_inplace, check_no_overlap
from .naming import renamed
from .shapes import ShapeError, broadcast_shapes, wrap_dim


def _prim_inplace(prim: Any, same_dtype: Any = None) -> Any:
    """``prim`` in place; a bool tensor of an op whose result keeps its dtype (``same_dtype``,
    the out-of-place function) takes that function's way: its error (abs_, floor_ ... raised
    none, and numpy wrote its int8 or float16 result back) or its bool result (sign_)."""
    def method(t: Tensor) -> Tensor:
        if same_dtype is not None and t.dtype is D.bool_:
            return F.copy_(t, same_dtype(t))
        return apply_inplace(prim, t)

    method.__name__ = prim.name + "_"
    method.__doc__ = f"In place: ``{prim.name}(self)``."
    return method


abs_ = _prim_inplace(P.ABS, F.abs)
log_ = _prim_inplace(P.LOG)
floor_ = _prim_inplace(P.FLOOR, F.floor)
ceil_ = _prim_inplace(P.CEIL, F.ceil)
trunc_ = _prim_inplace(P.TRUNC, F.trunc)
sign_ = _prim_inplace(P.SIGN, F.sign)
sin_ = _prim_inplace(P.SIN)
cos_ = _prim_inplace(P.COS)
log1p_ = _prim_inplace(P.LOG1P)
expm1_ = _prim_inplace(P.EXPM1)


def relu_(t: Tensor) -> Tensor:
    return _inplace(relu, t)


def sigmoid_(t: Tensor) -> Tensor:
    return _inplace(sigmoid, t)


def bitwise_not_(t: Tensor) -> Tensor:
    return F.copy_(t, T.bitwise_not(t))


def round_(t: Tensor, *, decimals: int = 0) -> Tensor:
    if decimals == 0 and t.dtype is not D.bool_:
        return apply_inplace(P.ROUND, t)
    return F.copy_(t, F.round(F.clone(t), decimals=decimals))  # (a bool's error: round's)


def clamp_min_(t: Tensor, min: Any) -> Tensor:  # noqa: A002 - PyTorch's name
    return F.clamp_(t, min, None)


def clamp_max_(t: Tensor, max: Any) -> Tensor:  # noqa: A002 - PyTorch's name
    return F.clamp_(t, None, max)


# --- in-place metadata changes ---------------------------------------------------------------


def _restride(t: Tensor, view: Tensor) -> Tensor:
    """t takes ``view``'s shape and history (PyTorch's unsqueeze_/t_ ...: same storage, new
    geometry). A captured step cannot rebind a traced value's shape: it falls back."""
    if _trace_state.tracer is not None:
        raise GraphBreak("in-place view op (unsqueeze_/squeeze_/t_/transpose_)")
    if t._rg and t._grad_fn is None and t._base is None:
        raise RuntimeError(ERR_LEAF_INPLACE)
    t._data = view._data
    if t._base is not None:  # a view: keep its record of its base in step with its shape
        t._base = view._base
        t._view_chain = view._view_chain
        t._view_version = view._view_version
    if view._rg:
        t._grad_fn = view.grad_fn
        t.output_nr = view.output_nr
    return t


def unsqueeze_(t: Tensor, dim: int) -> Tensor:
    return _restride(t, F.unsqueeze(t, dim))


def squeeze_(t: Tensor, dim: Any = None) -> Tensor:
    return _restride(t, F.squeeze(t, dim))


def t_inplace(t: Tensor) -> Tensor:
    return _restride(t, F.t_(t, "t_"))


def transpose_(t: Tensor, dim0: int, dim1: int) -> Tensor:
    return _restride(t, F.transpose(t, dim0, dim1))


# --- index writes ----------------------------------------------------------------------------


def _check_index(index: Tensor, name: str) -> None:
    if index.dtype is not D.int64:
        raise IndexError(f"{name}(): Expected dtype int64 for index.")
    if index.ndim > 1:
        raise RuntimeError("Index has to be a vector/scalar")


def _check_values(index: Tensor, x: Tensor, d: int, prefix: str, lowest: int) -> None:
    """PyTorch's IndexError for an index outside [lowest * n, n) along ``d``."""
    n = x.shape[d] if x.ndim else 1
    if index.numel():
        F.check_bounds(index, lowest * n, n, f"{prefix}index {{}} is out of bounds for "
                       f"dimension {d} with size {n}", error="IndexError")


def _hit_mask(x: Tensor, d: int, index: Tensor) -> Tensor:
    """True on the slices of x along ``d`` that ``index`` names (negative indices wrap)."""
    n = x.shape[d] if x.ndim else 1
    idx = F.reshape(index, (-1,))
    idx = F.where(F.lt(idx, 0), F.add(idx, n), idx)
    rows = T._arange_along(n, 0, 2, x.device)
    hit = F.amax(F.cast(F.eq(rows, F.reshape(idx, (1, -1))), D.int64), 1) if idx.numel() \
        else F.mul(F.reshape(rows, (n,)), 0)
    shape = [1] * x.ndim
    if x.ndim:
        shape[d] = n
    return F.reshape(F.gt(hit, 0), tuple(shape))


@named_backward("IndexFillBackward0")
def index_fill(input: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    """x with ``value`` on the slices along ``dim`` that ``index`` names."""
    _check_index(index, "index_fill_")
    if isinstance(value, (complex, np.complexfloating)):  # no tensor here is complex
        raise RuntimeError("index_fill_(): Converting complex Scalar to non-complex type is not "
                           "supported")
    d = wrap_dim(dim, input.ndim) if input.ndim else 0
    _check_values(index, input, d, "", -1)
    return F.where(_hit_mask(input, d, index), T.fill_value(input, value, "index_fill_"), input)


def index_fill_(x: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    result = index_fill(x, dim, index, value)
    if x.ndim and F.write_expanded(x, result, lambda: (slice(None),) * wrap_dim(dim, x.ndim)
                                   + (index._data.reshape(-1),), "index_fill_"):
        return x
    return F.overwrite(x, result)


@autocast_promote
def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor, *,  # noqa: A002
               out: Tensor | None = None) -> Tensor:
    """x with ``source``'s slices at the places along ``dim`` that ``index`` names."""
    if out is not None:
        return F.written_to(out, index_copy(input, dim, index, source), "index_copy")
    from .extra_ops import index_add

    d = wrap_dim(dim, input.ndim) if input.ndim else 0
    _check_index_copy(input, d, index, source)
    if input.dtype is D.bool_:  # no gradient: through uint8, as index_add has no bool sum
        return F.cast(index_copy(F.cast(input, D.uint8), d, index, F.cast(source, D.uint8)),
                      D.bool_)
    if not input.ndim:  # one element: as a vector of one
        return F.reshape(index_copy(F.reshape(input, (1,)), 0, index, F.reshape(source, (1,))),
                         ())
    if not source.ndim:  # into a vector: one slice of one
        source = F.reshape(source, (1,))
    _check_values(index, input, d, "index_copy_(): ", 0)
    source = F.cast(source, input.dtype)
    zeros = F.mul(input.detach(), 0)
    placed = index_add(zeros, d, index, source)
    k = index.numel()
    if k > 1:  # a repeated index: its last slice is written, as PyTorch's CPU loop (each
        # slice's gradient still its place's, PyTorch's index_select of it)
        idx = F.reshape(index, (-1,))
        later = F.gt(T._arange_along(k, 1, 2, idx.device), T._arange_along(k, 0, 2, idx.device))
        again = F.logical_and(F.eq(F.unsqueeze(idx, 1), F.unsqueeze(idx, 0)), later)
        last = F.eq(F.amax(F.cast(again, D.int64), 1), 0)
        shape = [1] * source.ndim
        shape[d] = k
        written = index_add(zeros, d, index, F.where(F.reshape(last, tuple(shape)), source,
                                                     F.mul(source.detach(), 0)))
        from .composite import straight_through

        placed = straight_through(written, placed, "IndexAddBackward0")
    return named(F.where(_hit_mask(input, d, index), placed, input), "IndexCopyBackward0")


def _check_index_copy(x: Tensor, d: int, index: Tensor, source: Tensor) -> None:
    """PyTorch's checks of index_copy (its meta function's), in its order and texts."""
    if index.ndim > 1:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {index.ndim})")
    n = index.numel()
    if not source.ndim and n != 1:
        raise IndexError(f"index_copy_(): When source is scalar, index should have one element "
                         f"(got {n})")
    if source.ndim != x.ndim and source.ndim and x.ndim:
        raise IndexError(f"index_copy_(): When source and destination are not scalars, their "
                         f"dimensionality must match. Source dimensionality ({source.ndim}), "
                         f"destination dimensionality ({x.ndim})")
    if index.dtype is not D.int64:
        raise RuntimeError("index_copy_(): Expected a long tensor for index, but got "
                           f"{D.scalar_type_name(index.dtype)}")
    if source.dtype is not x.dtype:  # no promotion, as PyTorch
        raise RuntimeError("index_copy_(): self and source expected to have the same dtype, "
                           f"but got (self) {D.scalar_type_name(x.dtype)} and (source) "
                           f"{D.scalar_type_name(source.dtype)}")
    x_slice, src_slice = list(x.shape), list(source.shape)
    if x_slice:
        del x_slice[d]
    if src_slice:
        del src_slice[d]
    if x_slice != src_slice:
        raise RuntimeError(f"index_copy_(): Source/destination tensor must have same slice "
                           f"shapes. Destination slice shape: {' '.join(map(str, x_slice))} at "
                           f"dimension {d} and source slice shape: "
                           f"{' '.join(map(str, src_slice))} at dimension 0.")
    if source.ndim and n != source.shape[d]:
        raise IndexError(f"index_copy_(): Number of indices ({n}) should be equal to "
                         f"source.size(dim) ({source.shape[d]})")


def index_copy_(x: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    result = index_copy(x, dim, index, source)
    check_no_overlap(x, index, source)  # PyTorch's, after its other checks
    return F.overwrite(x, result)




def index_put(input: Tensor, indices: Sequence[Any], values: Any, accumulate: bool = False
              ) -> Tensor:
    """A copy of x with ``x[indices] = values`` (``+=`` with ``accumulate``, repeated indices
    summing)."""
    out = F.clone(input)
    return index_put_(out, indices, values, accumulate)


def _check_put_shape(values: Tensor, target: tuple[int, ...]) -> None:
    """PyTorch's index_put_ error for values that do not broadcast to the indexed part: its
    leading ones are not dropped (``x[i] = v`` drops them)."""
    shape = tuple(values.shape)
    if len(shape) > len(target) or any(v != 1 and v != t for v, t in zip(reversed(shape),
                                                                         reversed(target))):
        raise ShapeError(f"shape mismatch: value tensor of shape {list(shape)} cannot be "
                         f"broadcast to indexing result of shape {list(target)}")


def _check_indices(x: Tensor, indices: Any) -> None:
    """PyTorch's errors for index_put's ``indices``: a tuple (or list) of tensors only (no
    None, int or slice: indexing's), no more of them than x has dims."""
    if isinstance(indices, Tensor):
        raise TypeError("index_put(): argument 'indices' (position 1) must be tuple of Tensors, "
                        "not Tensor")
    for i, k in enumerate(indices):
        if not isinstance(k, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(k).__name__}")
    consumed = sum(k.ndim if k.dtype in (D.bool_, D.uint8) else 1 for k in indices)
    if consumed > x.ndim and all(k.dtype not in (D.bool_, D.uint8) for k in indices):
        raise IndexError(f"too many indices for tensor of dimension {x.ndim} (got "
                         f"{len(indices)})")


def index_put_(x: Tensor, indices: Sequence[Any], values: Any, accumulate: bool = False
               ) -> Tensor:
    _check_indices(x, indices)
    key = tuple(indices)
    if isinstance(values, Tensor) and values.dtype is not x.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{D.scalar_type_name(x.dtype)} for the destination and "
                           f"{D.scalar_type_name(values.dtype)} for the source.")
    check_no_overlap(x, values, *key)  # PyTorch's, with the values and indices
    if not accumulate:
        masked = _trace_state.tracer is not None and any(
            isinstance(k, Tensor) and k.dtype is D.bool_ for k in key)  # setitem's masked_fill_
        if isinstance(values, Tensor) and values.ndim and not masked:
            template, idx, masks = F._norm_key(F._index_items(key), x.device)
            F._check_key(x.shape, template, idx, masks)
            _check_put_shape(values, P._key_shape(x.shape, [i.shape for i in idx], template))
        F.setitem(x, key, values)
        return x
    template, idx, masks = F._norm_key(F._index_items(key), x.device)
    F._check_key(x.shape, template, idx, masks)  # PyTorch's IndexError, a check step compiled
    if not isinstance(values, Tensor):
        values = Tensor._of(np.asarray(values, dtype=x.dtype.np), device=x.device)
    shape = P._key_shape(x.shape, [i.shape for i in idx], template)
    _check_put_shape(values, shape)
    values = F.expand(F.cast(values, x.dtype), *shape)
    return F.add_(x, F.index_backward(values, *idx, key=template, shape=x.shape))


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """x with source's leading elements, in order, written where ``mask`` is True; x and
    mask broadcast against each other, as PyTorch's (its in-place form keeps x's shape)."""
    _check_masked_scatter(input, mask, source)
    shape = broadcast_shapes(mask.shape, input.shape)
    if shape != input.shape:
        input = F.expand(input, *shape)
    m = F.expand(mask, *input.shape)
    flat = F.reshape(F.cast(m, D.int64), (-1,))
    pos = F.sub(F.cumsum(flat, 0), 1)
    src = F.reshape(F.cast(source, input.dtype), (-1,))
    if flat.numel():  # a check step: capture keeps it, and no value is read in Python
        F.check_bounds(F.reshape(F.sum(flat), (1,)), 0, src.numel() + 1,
                       "Number of elements of source < number of ones in mask",
                       error="RuntimeError")
    if src.numel() == 0:
        return F.where(m, F.mul(input, 0), input)
    pos = F.clamp(pos, 0, src.numel() - 1)
    picked = F.reshape(T.index_select(src, 0, pos), input.shape)
    return F.where(m, picked, input)


def _check_masked_scatter(x: Tensor, mask: Tensor, source: Tensor) -> None:
    if source.dtype is not x.dtype:  # PyTorch's text, its missing space kept
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but "
                           f"got{D.scalar_type_name(x.dtype)} and "
                           f"{D.scalar_type_name(source.dtype)}")
    if mask.dtype is not D.bool_:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with "
                           f"dtype {D.scalar_type_name(mask.dtype)}")


def masked_scatter_(x: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    _check_masked_scatter(x, mask, source)
    F.expand(mask, *x.shape)  # the mask broadcasts to x (PyTorch's error where it does not)
    return F.copy_(x, masked_scatter(x, mask, source))


def fill_diagonal_(x: Tensor, fill_value: Any, wrap: bool = False) -> Tensor:
    """The main diagonal (every index equal) set to ``fill_value``; a tall matrix with
    ``wrap`` restarts the diagonal every ncols + 1 rows, as PyTorch's."""
    if x.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    if x.ndim > 2 and len(set(x.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    mask = np.zeros(x.shape, dtype=bool)
    if x.ndim == 2:
        rows, cols = x.shape
        n = rows if wrap and rows > cols + 1 else min(rows, cols)
        flat = mask.reshape(-1)
        stride = cols + 1
        k = np.arange(0, n * cols if wrap else min(rows, cols) * stride, stride)
        flat[k[k < rows * cols]] = True
    else:
        ii = np.arange(x.shape[0])
        mask[(ii,) * x.ndim] = True
    return x.masked_fill_(Tensor._of(mask, device=x.device), fill_value)


# the float dtypes' mantissa digits: the integers each holds exactly, [-2**d, 2**d]
_RANDOM_DIGITS = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}


def _check_random_args(from_: Any, to: Any) -> None:
    """PyTorch's parser: random_'s bounds are ints (its TypeError lists the overloads)."""
    def is_int(v: Any) -> bool:
        return isinstance(v, (int, np.integer)) and not isinstance(v, bool)

    if is_int(from_) and (to is None or is_int(to)):
        return
    args = (from_,) if to is None else (from_, to)
    got = ", ".join(type(a).__name__ for a in args)
    marks = ", ".join(f"!{type(a).__name__}!" for a in args)
    raise TypeError(f"random_() received an invalid combination of arguments - got ({got}), "
                    f"but expected one of:\n * (*, torch.Generator generator = None)\n      "
                    f"didn't match because some of the arguments have invalid types: ({marks})"
                    f"\n * (int from, int to, *, torch.Generator generator = None)\n * (int to, "
                    f"*, torch.Generator generator = None)\n")


def _check_random_bounds(dtype: D.DType, low: int, high: int) -> None:
    """PyTorch's check_from_to: ``from`` and ``to - 1`` inside the dtype's range (its
    RuntimeError), and for a float dtype inside the integers it holds exactly (its warning)."""
    if dtype.is_floating_point:
        info = D.np_finfo(dtype)
        lowest, highest = float(info.min), float(info.max)
    elif dtype is D.bool_:
        lowest, highest = 0, 1
    else:
        lowest, highest = int(np.iinfo(dtype.np).min), int(np.iinfo(dtype.np).max)
    for value, name in ((low, "from"), (high, "to - 1")):
        if not lowest <= value <= highest:
            raise RuntimeError(f"{name} is out of bounds for {D.type_meta_name(dtype)}")
    if dtype.is_floating_point:
        digits = _RANDOM_DIGITS[dtype.name]
        for value, name in ((low, "from"), (high, "to - 1")):
            if not -(2 ** digits) <= value <= 2 ** digits:
                warnings.warn(f"{name} is out of bounds [-(2^{digits}), 2^{digits}]. Due to "
                              f"precision limitations {D.type_meta_name(dtype)} can support "
                              "discrete uniform distribution only within this range. This "
                              "warning will become an error in version 1.7 release, please fix "
                              "the code in advance", UserWarning, stacklevel=4)


def random_(x: Tensor, from_: int = 0, to: int | None = None, *, generator: Any = None
            ) -> Tensor:
    """Integers drawn uniformly from [from, to); no ``to``: [0, 2**mantissa] for floats (as
    PyTorch's), the dtype's maximum + 1 for integers."""
    from ..creation import randint

    _check_random_args(from_, to)
    given = to is not None or from_ != 0
    if to is None and from_ != 0:  # random_(to)
        from_, to = 0, from_
    if to is None:
        if x.dtype.is_floating_point:
            to = 2 ** _RANDOM_DIGITS[x.dtype.name] + 1
        elif x.dtype is D.bool_:
            to = 2
        else:
            to = int(np.iinfo(x.dtype.np).max) + 1
    if from_ >= to:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got "
                           f"from={from_} >= to={to}")
    if given:
        _check_random_bounds(x.dtype, int(from_), int(to) - 1)
    r = randint(from_, to, tuple(x.shape), generator=generator, device=x.device)
    return F.copy_(x, F.cast(r, x.dtype))


# --- views and NaN-skipping reductions -------------------------------------------------------


def select(input: Tensor, dim: int, index: int) -> Tensor:
    """``x[..., index, ...]`` along ``dim`` (that dim removed)."""
    if input.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, input.ndim)
    n = input.shape[d]
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(input.shape)} at dimension {d}")
    return F.getitem(input, (slice(None),) * d + (index,))


def nansum(input: Tensor, dim: Any = None, keepdim: bool = False, *,  # noqa: A002
           dtype: Any = None, out: Tensor | None = None) -> Tensor:
    """sum with NaNs counted as zero."""
    if out is not None:
        return F.written_to(out, nansum(input, dim, keepdim, dtype=F._out_dtype(dtype, out)),
                            "nansum")
    if not input.dtype.is_floating_point:
        return F.sum(input, dim, keepdim, dtype=dtype)
    return renamed(F.sum(F.where(T.isnan(input), 0.0, input), dim, keepdim, dtype=dtype),
                   "NansumBackward0")


def nanmean(input: Tensor, dim: Any = None, keepdim: bool = False, *,  # noqa: A002
            dtype: Any = None, out: Tensor | None = None) -> Tensor:
    """mean of the non-NaN elements (NaN where there are none)."""
    if out is not None:
        return F.written_to(out, nanmean(input, dim, keepdim, dtype=dtype), "nanmean")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex "
                           f"dtype but got {D.scalar_type_name(input.dtype)}")
    if dtype is not None:
        input = F.cast(input, D.as_dtype(dtype))
    count = F.sum(F.cast(T.logical_not(T.isnan(input)), input.dtype), dim, keepdim)
    return F.div(nansum(input, dim, keepdim), count)

