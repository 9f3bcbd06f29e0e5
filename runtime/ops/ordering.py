"""Order statistics and scans, PyTorch's: median/nanmedian/kthvalue/mode, quantile and
nanquantile, cummax/cummin, logcumsumexp, searchsorted/bucketize, bincount, histc, aminmax.

All are written from primitives (a stable argsort, gathers, comparisons): the value-selecting
ones gather the input at the chosen index, so the gradient goes to that element as PyTorch's
does. Scans (cummax, logcumsumexp) run as log2(n) doubling steps of an associative combine,
which keeps logcumsumexp exact where exp(x - max) would underflow. Only bincount and histc
(output size from the values) read tensor values in Python."""

from __future__ import annotations

import functools
import math
from collections import namedtuple
from typing import Any

import numpy as np

from .. import _dtype as D
from ..amp.policy import autocast_fp32
from ..return_types import returns
from ..tensor import Tensor
from . import functional as F
from . import tensor_ops as T
from . import prims as P
from .dispatch import apply, named
from .naming import renamed
from .settings import is_warn_always_enabled
from .shapes import OMITTED, int_dim, wrap_dim

MedianResult = namedtuple("MedianResult", ["values", "indices"])
MinMax = namedtuple("MinMax", ["min", "max"])


def _float_like(x: Tensor) -> Tensor:
    return x if x.dtype.is_floating_point else F.cast(x, D.float64)


def _pick(x: Tensor, d: int, pos: Tensor, keepdim: bool) -> MedianResult:
    """The element at sorted position ``pos`` (kept dim) along ``d``, and its index."""
    order = T.argsort(x, d)
    idx = T.gather_in_range(order, d, pos)
    values = T.gather_in_range(x, d, idx)
    if not keepdim:
        values, idx = F.squeeze(values, d), F.squeeze(idx, d)
    return MedianResult(values, idx)


def _nan_count(x: Tensor, d: int) -> Tensor:
    if not x.dtype.is_floating_point:
        return F.mul(F.sum(F.cast(F.ne(x, x), D.int64), d, True), 0)
    return F.sum(F.cast(T.isnan(x), D.int64), d, True)


def _check_nonempty(x: Tensor, d: int | None, name: str) -> None:
    """PyTorch's error for a reduction over an empty dim (another dim empty gives an empty
    result; all of an empty tensor, median's NaN)."""
    if d is not None and x.ndim and x.shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


def _median_dim(x: Tensor, dim: int, keepdim: bool, ignore_nan: bool, name: str
                ) -> MedianResult:
    int_dim(name, dim, x.ndim)
    if x.ndim == 0:
        return MedianResult(F.clone(x), F.mul(F.cast(F.ne(x, x), D.int64), 0))
    d = wrap_dim(dim, x.ndim)
    _check_nonempty(x, d, "median")  # nanmedian says median() too, as PyTorch
    n = x.shape[d]
    nans = _nan_count(x, d)
    if ignore_nan:  # the lower median of the valid ones
        pos = F.clamp(F.floor_divide(F.sub(F.sub(n, nans), 1), 2), 0, None)
    else:  # any NaN: the first NaN (NaNs sort last, stably)
        pos = F.where(F.gt(nans, 0), F.sub(n, nans), (n - 1) // 2)
    if not (ignore_nan and x.dtype.is_floating_point):
        return _pick(x, d, pos, keepdim)
    # a row of NaNs only: the NaN std::nth_element leaves first among equivalent elements
    order = T.argsort(x, d)
    idx = F.where(F.eq(nans, n), _all_nan_pick(n), T.gather_in_range(order, d, pos))
    values = T.gather_in_range(x, d, idx)
    if not keepdim:
        values, idx = F.squeeze(values, d), F.squeeze(idx, d)
    return MedianResult(values, idx)


@functools.lru_cache(maxsize=256)
def _all_nan_pick(n: int) -> int:
    """The index PyTorch's nanmedian gives a row of n NaNs: its nth_element (libstdc++'s
    introselect) for the first position over elements its comparator holds equivalent,
    which moves the median of three to the front and partitions from both ends."""
    idx, first, last = list(range(n)), 0, n
    while last - first > 3:
        mid = first + (last - first) // 2
        idx[first], idx[mid] = idx[mid], idx[first]  # __move_median_to_first: all equal
        lo, hi = first + 1, last
        while True:  # __unguarded_partition, no element less than the pivot or above it
            hi -= 1
            if lo >= hi:
                break
            idx[lo], idx[hi] = idx[hi], idx[lo]
            lo += 1
        if lo <= 0:
            first = lo
        else:
            last = lo
    return idx[0]


@returns("median")
def median(input: Tensor, dim: Any = OMITTED, keepdim: bool = False, *,  # noqa: A002
           out: Any = None) -> Any:
    """The lower median (global: a value; along ``dim``: values and indices). NaN anywhere
    gives NaN, as PyTorch's."""
    if dim is None:  # PyTorch's overloads: median(input) and median(input, int dim, ...)
        raise TypeError("median(): argument 'dim' must be int, not NoneType")
    if out is not None:
        result = median(input, dim, keepdim)
        return F.written_to(out, result, "median") if dim is OMITTED else \
            F.written_to_each(out, result, "median")
    return _median(input, None if dim is OMITTED else dim, keepdim, False, "median")


@returns("nanmedian")
def nanmedian(input: Tensor, dim: Any = OMITTED, keepdim: bool = False, *,  # noqa: A002
              out: Any = None) -> Any:
    """median ignoring NaNs (NaN only where all are NaN)."""
    if dim is None:  # PyTorch's overloads: nanmedian(input) and nanmedian(input, int dim, ...)
        raise TypeError("nanmedian(): argument 'dim' must be int, not NoneType")
    if out is not None:
        result = nanmedian(input, dim, keepdim)
        return F.written_to(out, result, "nanmedian") if dim is OMITTED else \
            F.written_to_each(out, result, "nanmedian")
    return _median(input, None if dim is OMITTED else dim, keepdim, True, "nanmedian")


def _median(x: Tensor, dim: Any, keepdim: bool, skip_nan: bool, name: str) -> Any:
    if dim is not None:  # the argument first, as PyTorch's parser, then an empty dim
        d = int_dim(name, dim, x.ndim)
        _check_nonempty(x, d, "median")
    if x.dtype is D.bool_ and (dim is not None or x.numel()):
        kernel = "median_cpu" if dim is None else "median_out"
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")
    if dim is None:
        if not x.numel():
            return _empty_median(x, name)
        flat = F.reshape(x, (-1,))
        value = _median_dim(flat, 0, False, skip_nan, name).values
        if not x.dtype.is_floating_point:
            return value
        from .composite import spread_among

        return spread_among(flat, value, "MedianBackward0" if name == "median"
                            else "NanmedianBackward0")
    values, indices = _median_dim(x, dim, keepdim, skip_nan, name)
    return MedianResult(renamed(values, "MedianBackward1" if name == "median"
                                else "NanmedianBackward1"), indices)


def _empty_median(x: Tensor, name: str) -> Tensor:
    """PyTorch's median of nothing: NaN for floats (recorded: MedianBackward0), the dtype's
    least value for integers (its kernel's start), True for bools."""
    if x.dtype.is_floating_point:
        value = F.add(F.sum(x), math.nan)  # 0 + NaN, still of x's graph
        return named(value, "MedianBackward0" if name == "median" else "NanmedianBackward0")
    from ..creation import full

    fill = True if x.dtype is D.bool_ else int(np.iinfo(x.dtype.np).min)
    return full((), fill, dtype=x.dtype, device=x.device)


@returns("kthvalue")
def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False, *,  # noqa: A002
             out: Any = None) -> MedianResult:
    """The k-th smallest (1-based) along ``dim`` and its index."""
    if out is not None:
        return F.written_to_each(out, kthvalue(input, k, dim, keepdim), "kthvalue")
    if input.dtype is D.bool_:
        raise NotImplementedError("\"kthvalue_cpu\" not implemented for 'Bool'")
    d = int_dim("kthvalue", dim, input.ndim)
    _check_nonempty(input, d, "kthvalue")
    n = input.shape[d] if input.ndim else 1
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    if input.ndim == 0:
        return MedianResult(F.clone(input), F.mul(F.cast(F.ne(input, input), D.int64), 0))
    idx = T.gather_in_range(T.argsort(input.detach(), d), d, _const_pos(input, d, k - 1))
    values, idx = _pick_at(input, d, _quickselect_ties(input, d, k - 1, idx), keepdim)
    return MedianResult(renamed(values, "KthvalueBackward0"), idx)


def _gt_or_nan(a: Any, b: Any) -> bool:
    return bool((a != a and b == b) or a > b)


def _quickselect(values: np.ndarray, k: int) -> int:
    """The index PyTorch's kthvalue gives: its quick_select_template (median-of-three pivot,
    NaN largest) run on a row, indices swapped along with the values."""
    arr = values.tolist()
    order = list(range(len(arr)))

    def swap(i: int, j: int) -> None:
        arr[i], arr[j] = arr[j], arr[i]
        order[i], order[j] = order[j], order[i]

    lo, hi = 0, len(arr) - 1
    while hi > lo:
        if hi == lo + 1:
            if _gt_or_nan(arr[lo], arr[hi]):
                swap(lo, hi)
            break
        swap(lo + (hi - lo) // 2, lo + 1)
        if _gt_or_nan(arr[lo + 1], arr[hi]):
            swap(lo + 1, hi)
        if _gt_or_nan(arr[lo], arr[hi]):
            swap(lo, hi)
        if _gt_or_nan(arr[lo + 1], arr[lo]):
            swap(lo + 1, lo)
        i, j, pivot = lo + 1, hi, arr[lo]
        while True:
            i += 1
            while _gt_or_nan(pivot, arr[i]):
                i += 1
            j -= 1
            while _gt_or_nan(arr[j], pivot):
                j -= 1
            if j < i:
                break
            swap(i, j)
        swap(lo, j)
        if j <= k:
            lo = i
        if j >= k:
            hi = j - 1
    return order[k]


def _quickselect_ties(x: Tensor, d: int, k: int, idx: Tensor) -> Tensor:
    """``idx`` (kept dim ``d``: a stable sort's k-th) with PyTorch's pick among equal values
    instead (``quickselect_pick``): the stl_pick primitive, so a captured step picks as eager
    mode does at each replay."""
    return apply(P.STL_PICK, x.detach(), idx, idx, kind="kthvalue", dim=d, k=k,
                 largest=False, sort=False)


def quickselect_pick(x: np.ndarray, idx: np.ndarray, d: int, k: int) -> np.ndarray:
    """``idx`` with the rows whose k-th value occurs more than once given PyTorch's pick
    among the equal ones instead (its quickselect's); rows without ties keep it, which any
    selection agrees on."""
    rows = np.moveaxis(x, d, -1)
    picked = np.moveaxis(idx, d, -1)
    flat, flat_idx = rows.reshape(-1, rows.shape[-1]), picked.reshape(-1).copy()
    kth = np.take_along_axis(flat, flat_idx[:, None], 1)
    same = (flat == kth) | ((flat != flat) & (kth != kth))
    tied = np.nonzero(same.sum(1) > 1)[0]
    if not len(tied):
        return idx
    for r in tied:
        flat_idx[r] = _quickselect(flat[r], k)
    return np.ascontiguousarray(np.moveaxis(flat_idx.reshape(picked.shape), -1, d))


def _const_pos(x: Tensor, d: int, p: int) -> Tensor:
    from ..creation import full

    shape = list(x.shape)
    shape[d] = 1
    return full(tuple(shape), p, dtype=D.int64, device=x.device)


@returns("mode")
def mode(input: Tensor, dim: int = -1, keepdim: bool = False, *,  # noqa: A002
         out: Any = None) -> MedianResult:
    """The most frequent value along ``dim`` (the smallest among equally frequent ones) and
    the index of its last occurrence, as PyTorch's CPU kernel."""
    if out is not None:
        return F.written_to_each(out, mode(input, dim, keepdim), "mode")
    int_dim("mode", dim, input.ndim)
    if input.ndim == 0:
        return MedianResult(F.clone(input), F.mul(F.cast(F.ne(input, input), D.int64), 0))
    d = wrap_dim(dim, input.ndim)
    _check_nonempty(input, d, "mode")
    xm = T.movedim(input.detach(), d, -1)
    counts = F.sum(F.cast(F.eq(F.unsqueeze(xm, -1), F.unsqueeze(xm, -2)), D.int64), -1)
    best = F.amax(counts, -1, keepdim=True)
    big = math.inf if input.dtype.is_floating_point else int(np.iinfo(input.dtype.np).max) \
        if input.dtype is not D.bool_ else True
    value = T.amin(F.where(F.eq(counts, best), xm, big), -1, keepdim=True)
    n = input.shape[d]
    ar = T._arange_along(n, xm.ndim - 1, xm.ndim, input.device)
    idx = F.amax(F.where(F.eq(xm, value), ar, -1), -1, keepdim=True)
    if input.dtype.is_floating_point:  # a NaN mode (NaNs only) is at the first NaN, as
        # PyTorch's sort leaves it, not at -1 (a NaN equals nothing)
        first_nan = T.amin(F.where(F.ne(xm, xm), ar, n), -1, keepdim=True)
        idx = F.where(F.ne(value, value), first_nan, idx)
    idx = _std_sort_modes(input, d, T.movedim(idx, -1, d))
    values, idx = _pick_at(input, d, idx, keepdim)
    return MedianResult(renamed(values, "ModeBackward0"), idx)


def _std_sort_modes(x: Tensor, d: int, idx: Tensor) -> Tensor:
    """``idx`` (kept dim ``d``: the last occurrence of the smallest most frequent value)
    with PyTorch's pick instead where it differs (``std_sort_mode_pick``): the stl_pick
    primitive, so a captured step picks as eager mode does at each replay."""
    if not x.numel():
        return idx
    return apply(P.STL_PICK, x.detach(), idx, idx, kind="mode", dim=d, k=0, largest=False,
                 sort=False)


def std_sort_mode_pick(x: np.ndarray, idx: np.ndarray, d: int) -> np.ndarray:
    """``idx`` with PyTorch's mode index where it differs: its kernel std::sorts (value,
    index) pairs by value, unstably past 16 elements, and takes the last pair of the first
    longest run of equal values (a NaN equal to nothing, and unordered against every value in
    the sort)."""
    n = x.shape[d]
    rows = np.moveaxis(x, d, -1).reshape(-1, n)
    if n > 16:
        chosen = np.arange(len(rows))
    elif x.dtype.kind == "f" or x.dtype.name == "bfloat16":
        chosen = np.nonzero(np.isnan(rows.astype(np.float64)).any(1))[0]
    else:
        return idx
    if not len(chosen):
        return idx
    picked = np.moveaxis(idx, d, -1)
    flat = picked.reshape(-1).copy()
    from .stl import mode_row

    for r in chosen:
        flat[r] = mode_row(rows[r].tolist())
    return np.ascontiguousarray(np.moveaxis(flat.reshape(picked.shape), -1, d))


def _pick_at(x: Tensor, d: int, idx: Tensor, keepdim: bool) -> MedianResult:
    values = T.gather_in_range(x, d, idx)
    if not keepdim:
        values, idx = F.squeeze(values, d), F.squeeze(idx, d)
    return MedianResult(values, idx)


# --- quantiles -------------------------------------------------------------------------------

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(x: Tensor, q: Any, dim: Any, keepdim: bool, interpolation: str,
              ignore_nan: bool, name: str) -> Tensor:
    name = "quantile"  # nanquantile's errors say quantile() too, as PyTorch's
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")
    scalar_q = not isinstance(q, Tensor)
    if scalar_q:
        if not 0 <= q <= 1:
            raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {q:g}")
        qt = Tensor._of(np.asarray([q], dtype=x.dtype.np), device=x.device)
    else:
        if q.ndim > 1:
            raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
        if q.dtype is not x.dtype:
            raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
        qt = F.reshape(q, (-1,))
    if x.numel() == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    if dim is None:
        src, d = F.reshape(x, (-1,)), 0
    else:
        d = wrap_dim(dim, x.ndim) if x.ndim else 0
        src = x if x.ndim else F.reshape(x, (1,))
    v = T.movedim(T.sort(src, d).values, d, -1)  # (..., n), NaNs last
    n = v.shape[-1]
    nans = F.cast(_nan_count(v, v.ndim - 1), x.dtype)  # (..., 1)
    valid = F.sub(float(n), nans) if ignore_nan else F.where(F.gt(nans, 0), 0.0, float(n))
    rank = F.mul(F.unsqueeze(F.sub(valid, 1.0), -1), qt)  # (..., 1, nq)
    rank = F.reshape(rank, (*v.shape[:-1], qt.shape[0]))
    # no valid element (quantile: any NaN): PyTorch reads the last sorted place, a NaN, and
    # gives it the gradient
    rank = F.where(F.eq(valid, 0.0), float(n - 1), rank)
    lo_f = F.floor(rank)
    hi_f = F.ceil(rank)
    if interpolation == "nearest":  # round half to even, as PyTorch's
        lo_f = hi_f = F.round(rank)
    lo = F.cast(lo_f, D.int64)
    hi = F.cast(hi_f, D.int64)
    lo_v = T.gather_in_range(v, v.ndim - 1, lo)
    hi_v = T.gather_in_range(v, v.ndim - 1, hi)
    if interpolation in ("lower", "nearest"):
        out = lo_v
    elif interpolation == "higher":
        out = hi_v
    elif interpolation == "midpoint":
        out = F.lerp(lo_v, hi_v, 0.5)
    else:
        out = F.lerp(lo_v, hi_v, F.sub(rank, lo_f))
    out = T.movedim(out, -1, 0)  # (nq, ...)
    if keepdim:
        shape = [1] * x.ndim if dim is None else list(x.shape)
        if dim is not None and x.ndim:
            shape[d] = 1
        out = F.reshape(out, (qt.shape[0], *shape))
    if scalar_q or (isinstance(q, Tensor) and q.ndim == 0):
        out = F.squeeze(out, 0)
    return renamed(out, "SqueezeBackward4")  # PyTorch's last step squeezes a list of dims


@autocast_fp32
def quantile(input: Tensor, q: Any, dim: Any = None, keepdim: bool = False, *,  # noqa: A002
             interpolation: str = "linear", out: Tensor | None = None) -> Tensor:
    """The q-th quantiles along ``dim`` (all elements when None); NaN where a NaN is."""
    if out is not None:
        return F.written_to(out, quantile(input, q, dim, keepdim, interpolation=interpolation),
                            "quantile")
    return _quantile(input, q, dim, keepdim, interpolation, False, "quantile")


def nanquantile(input: Tensor, q: Any, dim: Any = None, keepdim: bool = False, *,  # noqa: A002
                interpolation: str = "linear", out: Tensor | None = None) -> Tensor:
    """quantile of the non-NaN elements."""
    if out is not None:
        result = nanquantile(input, q, dim, keepdim, interpolation=interpolation)
        return F.written_to(out, result, "nanquantile")
    return _quantile(input, q, dim, keepdim, interpolation, True, "nanquantile")


# --- scans -----------------------------------------------------------------------------------


def _shifted(v: Tensor, s: int, fill: Any) -> Tensor:
    """v moved ``s`` places along its last dim, the first ``s`` places ``fill``."""
    from ..creation import full

    n = v.shape[-1]
    pad = full((*v.shape[:-1], s), fill, dtype=v.dtype, device=v.device)
    return F.cat([pad, F.getitem(v, (Ellipsis, slice(0, n - s)))], -1)


def _cum_extreme(x: Tensor, dim: int, greater: bool) -> MedianResult:
    int_dim("cummax" if greater else "cummin", dim, x.ndim)
    if x.ndim == 0:
        return MedianResult(F.clone(x), F.mul(F.cast(F.ne(x, x), D.int64), 0))
    d = wrap_dim(dim, x.ndim)
    v = T.movedim(x.detach(), d, -1)
    n = v.shape[-1]
    idx = F.add(F.mul(F.cast(F.ne(v, v), D.int64), 0), T._arange_along(n, v.ndim - 1, v.ndim,
                                                                          x.device))
    floating = x.dtype.is_floating_point
    s = 1
    while s < n:  # Hillis-Steele: combine each place with the one s before it
        left_v = _shifted(v, s, 0)  # the pad is never taken: its index is -1
        left_i = _shifted(idx, s, -1)
        has_left = F.ge(left_i, 0)
        if floating:
            right_nan, left_nan = T.isnan(v), T.isnan(left_v)
            cmp = F.ge(v, left_v) if greater else F.le(v, left_v)
            keep = _or(right_nan, F.logical_and(T.logical_not(left_nan), cmp))
        else:
            keep = F.ge(v, left_v) if greater else F.le(v, left_v)
        take_left = F.logical_and(has_left, T.logical_not(keep))
        v = F.where(take_left, left_v, v)
        idx = F.where(take_left, left_i, idx)
        s *= 2
    idx = T.movedim(idx, -1, d)
    return MedianResult(named(T.gather_in_range(x, d, idx),
                              "CummaxBackward0" if greater else "CumminBackward0"), idx)


def _or(a: Tensor, b: Tensor) -> Tensor:
    return T.logical_not(F.logical_and(T.logical_not(a), T.logical_not(b)))


@returns("cummax")
def cummax(input: Tensor, dim: int, *, out: Any = None) -> MedianResult:  # noqa: A002
    """Running maximum along ``dim`` and where it was found (ties and NaNs: the latest); the
    gradient goes to that index."""
    if out is not None:
        return F.written_to_each(out, cummax(input, dim), "cummax")
    return _cum_extreme(input, dim, True)


@returns("cummin")
def cummin(input: Tensor, dim: int, *, out: Any = None) -> MedianResult:  # noqa: A002
    """Running minimum along ``dim`` and where it was found."""
    if out is not None:
        return F.written_to_each(out, cummin(input, dim), "cummin")
    return _cum_extreme(input, dim, False)


def logcumsumexp(input: Tensor, dim: int, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """log(cumsum(exp(x))) along ``dim``, by doubling steps of logaddexp: exact where the
    terms span more than exp's range."""
    if out is not None:
        return F.written_same(out, logcumsumexp(input, dim), "logcumsumexp", "scalar_type")
    from .extra_ops import logaddexp

    int_dim("logcumsumexp", dim, input.ndim)
    if not input.dtype.is_floating_point:  # PyTorch's kernel is for floats only
        raise NotImplementedError("\"logcumsumexp_out_cpu\" not implemented for "
                                  f"'{D.scalar_type_name(input.dtype)}'")
    if input.ndim == 0:
        return F.clone(input)
    d = wrap_dim(dim, input.ndim)
    v = T.movedim(input, d, -1)
    n = v.shape[-1]
    s = 1
    while s < n:
        v = logaddexp(v, _shifted(v, s, -math.inf))
        s *= 2
    result = T.movedim(v, -1, d)
    if not input.requires_grad:
        return result
    # PyTorch's gradient is NaN at a +inf (its exp(self - result) is exp(inf - inf)); the
    # doubling's is the count of outputs it tops: the same values, NaN added there
    from .composite import straight_through

    at_inf = F.where(F.eq(input.detach(), math.inf), math.nan, -0.0)
    return straight_through(result, F.add(result, F.mul(input, at_inf)),
                            "LogcumsumexpBackward0")


# --- searching and counting ------------------------------------------------------------------


def searchsorted(sorted_sequence: Tensor, values: Any, *, out_int32: bool = False,
                 right: bool = False, side: str | None = None, out: Tensor | None = None,
                 sorter: Tensor | None = None) -> Tensor:
    """For each value, the number of sequence elements before which it would go to keep the
    order: those < value (left) or <= value (right), counted on comparisons."""
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but "
                               f"got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, "
                               "got side of left while right was True")
        right = side == "right"
    seq = sorted_sequence
    scalar = not isinstance(values, Tensor)
    vals = Tensor._of(np.asarray(values, dtype=seq.dtype.np), device=seq.device) if scalar \
        else values
    _check_searchsorted(seq, vals, sorter)
    _check_bucket_out(out, out_int32)
    if out is not None:
        return F.written_to(out, searchsorted(sorted_sequence, values, out_int32=out_int32,
                                              right=right, sorter=sorter), "searchsorted")
    if sorter is not None:
        seq = T.gather(seq, seq.ndim - 1, sorter)
    if seq.dtype is D.bool_ and vals.numel():  # nothing to search: an empty result
        raise NotImplementedError("\"searchsorted_out_cpu\" not implemented for 'Bool'")
    _warn_noncontiguous(vals, "input value")
    _warn_noncontiguous(sorted_sequence, "boundary")
    counts = _binary_search(seq, vals, right)
    return F.cast(counts, D.int32) if out_int32 else counts


def _check_searchsorted(seq: Tensor, vals: Tensor, sorter: Tensor | None) -> None:
    """PyTorch's searchsorted_pre_check, in its order: the sorter (its size, dtype and
    values), then the boundaries' and values' dimensions (a scalar value first)."""
    if sorter is not None:
        if tuple(sorter.shape) != tuple(seq.shape):
            raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same "
                               f"size, but got boundary tensor {list(seq.shape)}and got sorter "
                               f"tensor {list(sorter.shape)}")
        if sorter.dtype is not D.int64:
            raise RuntimeError(f"torch.searchsorted(): sorter must be a tensor of long dtype but "
                               f"got dtype {D.scalar_type_name(sorter.dtype)}")
        if sorter.numel():
            F.check_bounds(F.reshape(sorter, (-1,)), 0, seq.shape[-1],
                           "torch.searchsorted(): sorter index out of range",
                           error="RuntimeError")
    if seq.ndim != 1 and vals.ndim == 0:
        raise RuntimeError(f"torch.searchsorted(): input value can be a scalar only when "
                           f"boundaries tensor dimension is 1, but we got boundaries tensor "
                           f"dim({seq.ndim}) and input value's dim({vals.ndim}) "
                           f"numel({vals.numel()})")
    if seq.ndim == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive "
                           "dimension, but got 0 dimension")
    if seq.ndim > 1 and (vals.ndim != seq.ndim or tuple(vals.shape[:-1]) !=
                         tuple(seq.shape[:-1])):
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or "
                           f"the first N-1 dimensions of boundaries tensor and input value "
                           f"tensor must match, but we got boundaries tensor "
                           f"{list(seq.shape)} and input value tensor {list(vals.shape)}")


def _check_bucket_out(out: Any, out_int32: bool) -> None:
    """searchsorted's and bucketize's out=: int32 with ``out_int32``, else int64 (PyTorch's
    text; it names searchsorted for both)."""
    if isinstance(out, Tensor) and out.dtype is not (D.int32 if out_int32 else D.int64):
        raise RuntimeError(f"torch.searchsorted(): output tensor's dtype is wrong, it can only "
                           f"be Int(int32) or Long(int64) depending on whether out_int32 flag "
                           f"is True, but we got output tensor's dtype "
                           f"{D.scalar_type_name(out.dtype)} and out_int32 flag is "
                           f"{'True' if out_int32 else 'False'}")


# the searchsorted warnings given so far (PyTorch's TORCH_WARN_ONCE: once a process)
_SEARCHSORTED_WARNED: set[str] = set()


def _warn_noncontiguous(t: Tensor, what: str) -> None:
    """PyTorch's warning, once a process, for a non-contiguous searchsorted operand (its
    kernel copies it)."""
    if t.is_contiguous() or (what in _SEARCHSORTED_WARNED and not is_warn_always_enabled()):
        return  # TORCH_WARN_ONCE's rule: once a process, each time under set_warn_always
    _SEARCHSORTED_WARNED.add(what)
    import warnings

    warnings.warn(f"torch.searchsorted(): {what} tensor is non-contiguous, this will lower the "
                  "performance due to extra data copy when converting non-contiguous tensor to "
                  f"contiguous, please use contiguous {what} tensor if possible. This message "
                  "will only appear once per program.", UserWarning,
                  stacklevel=F._caller_outside_runtime())


def _binary_search(seq: Tensor, vals: Tensor, right: bool) -> Tensor:
    """PyTorch's lower (upper, ``right``) bound search of each value in the sequence's last
    axis, step by step on tensors (no value read): lo moves past mid where !(seq[mid] >= v)
    (!(seq[mid] > v)), else hi comes down to mid. Beside a NaN each such test holds, so a
    NaN value goes after every element, and a NaN met on the way sends the search right
    (counting the elements below the value put the value 1.5 at 1 in [1, 2, nan, nan],
    PyTorch's 4)."""
    n = seq.shape[-1] if seq.ndim else 0
    lo = F.cast(F.zeros_like(vals), D.int64)
    hi = F.add(lo, n)
    if n == 0 or vals.numel() == 0:
        return lo
    from .structured import take

    flat = seq.ndim == 1
    for _ in range(n.bit_length()):
        mid = F.floor_divide(F.add(lo, hi), 2)
        at = F.clamp(mid, None, n - 1)
        probe = take(seq, at) if flat else T.gather(seq, -1, at)
        moves = T.logical_not(F.gt(probe, vals) if right else F.ge(probe, vals))
        active = F.lt(lo, hi)
        lo = F.where(F.logical_and(active, moves), F.add(mid, 1), lo)
        hi = F.where(F.logical_and(active, T.logical_not(moves)), mid, hi)
    return lo


def bucketize(input: Tensor, boundaries: Tensor, *, out_int32: bool = False,  # noqa: A002
              right: bool = False, out: Tensor | None = None) -> Tensor:
    """The bucket of each element: i with boundaries[i-1] < x <= boundaries[i] (right:
    boundaries[i-1] <= x < boundaries[i])."""
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim("
                           f"{boundaries.ndim})")
    _check_bucket_out(out, out_int32)
    if out is not None:
        result = bucketize(input, boundaries, out_int32=out_int32, right=right)
        return F.written_to(out, result, "bucketize")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0  # noqa: A002
             ) -> Tensor:
    """How often each value 0..max occurs (or the sum of its weights); the length depends on
    the values, so this reads them."""
    if input.dtype.is_floating_point or input.dtype is D.bool_:  # its dispatch, first
        raise NotImplementedError(f'"bincount_cpu" not implemented for '
                                  f"'{D.scalar_type_name(input.dtype)}'")
    if input.ndim != 1:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if weights is not None and tuple(weights.shape) != tuple(input.shape):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    if not input.numel():  # PyTorch's early return: int64 zeros, with weights or without
        from ..creation import zeros

        return zeros(minlength, dtype=D.int64, device=input.device)
    data = input.detach().cpu().numpy()
    if data.min() < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    size = max(int(data.max()) + 1 if data.size else 0, minlength)
    hits = F.eq(F.unsqueeze(input, 1), T._arange_along(size, 1, 2, input.device))
    if weights is None:
        return F.sum(F.cast(hits, D.int64), 0)
    w = weights.detach()  # PyTorch defines no derivative for bincount
    w = w if w.dtype.is_floating_point else F.cast(w, D.float64)
    w = w if w.dtype in (D.float32, D.float64) else F.cast(w, D.float64)
    return F.sum(F.where(hits, F.unsqueeze(w, 1), 0.0), 0)


def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0, *,  # noqa: A002
          out: Tensor | None = None) -> Tensor:
    """Counts in ``bins`` equal bins over [min, max] (min == max: the data's range); the
    last bin includes max, elements outside are left out."""
    if out is not None:
        return F.written_to(out, histc(input, bins, min, max), "histc")
    if not input.dtype.is_floating_point:  # a bool one fails first in its bin edges
        kernel = "linspace_cpu" if input.dtype is D.bool_ else "histogram_cpu"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '"
                                  f"{D.scalar_type_name(input.dtype)}'")
    if bins <= 0:
        raise RuntimeError("torch.histc: bins must be > 0, but got " + str(bins) + " for bins")
    if min > max:
        raise RuntimeError("max must be larger than min")
    lo, hi = float(min), float(max)
    if lo == hi and input.numel():
        data = input.detach().cpu().numpy()
        lo, hi = float(data.min()), float(data.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    x = F.reshape(input.detach(), (-1,))
    scaled = F.mul(F.div(F.sub(x, lo), hi - lo), float(bins))
    b = F.cast(F.floor(scaled), D.int64)
    b = F.where(F.eq(x, hi), bins - 1, b)
    inside = F.logical_and(F.ge(x, lo), F.le(x, hi))
    hits = F.logical_and(F.eq(F.unsqueeze(b, 1), T._arange_along(bins, 1, 2, x.device)),
                         F.unsqueeze(inside, 1))
    return F.cast(F.sum(F.cast(hits, D.int64), 0), input.dtype)




@returns("aminmax")
def aminmax(input: Tensor, *, dim: int | None = None, keepdim: bool = False,  # noqa: A002
            out: Any = None) -> MinMax:
    """amin and amax at once (each shares its gradient among ties, as amin/amax)."""
    if out is not None:
        return F.written_to_each(out, aminmax(input, dim=dim, keepdim=keepdim), "aminmax")
    if dim is not None:
        d = int_dim("aminmax", dim, input.ndim)
        if input.ndim and input.shape[d] == 0:
            raise IndexError(f"aminmax: Expected reduction dim {d} to have non-zero size.")
    elif input.numel() == 0:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                           "operation has no identity.")
    if dim is None:
        mn, mx = T.amin(input), F.amax(input)
        if keepdim:
            shape = (1,) * input.ndim
            mn, mx = F.reshape(mn, shape), F.reshape(mx, shape)
    else:
        mn, mx = T.amin(input, dim, keepdim), F.amax(input, dim, keepdim)
    from .composite import one_node

    one_node((mn, mx), "AminmaxBackward0")
    return MinMax(mn, mx)
