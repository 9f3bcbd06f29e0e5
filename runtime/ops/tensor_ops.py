"""PyTorch's tensor ops built from the registry's primitives: splits, triangles, reductions
(any/all, norm, var/std, logsumexp), gather/scatter, sort/topk, mm/bmm/einsum, and the
operators ``%``, ``//`` and ``~``. Written from primitives, their backward comes from the
primitives', and the elementwise parts fuse in a compiled step."""

from __future__ import annotations

import builtins
import math
import string
from collections import namedtuple
from collections.abc import Sequence
from typing import Any

from .. import _dtype as D
from ..tensor import Tensor
from . import functional as F
from . import prims as P
from .dispatch import apply

# --- helpers ---------------------------------------------------------------------------------


def _dim(x: Tensor, dim: int) -> int:
    """One dimension of x, PyTorch's range check and error; a 0-d tensor has dim 0 or -1."""
    return F._axes(dim, x.ndim)[0] if x.ndim else 0


def _arange_along(n: int, axis: int, ndim: int, device: str) -> Tensor:
    """0..n-1 laid along ``axis`` of an ``ndim``-d shape of ones (an index grid)."""
    from ..creation import arange

    shape = [1] * ndim
    shape[axis] = n
    return F.reshape(arange(n, device=device), tuple(shape))


def _check_dim_range(x: Tensor, index: Tensor, dim: int, name: str) -> None:
    """PyTorch's shape rules for gather/scatter's index: same rank, and no dimension larger
    than the input's (the indexed one excepted)."""
    if index.dtype is not D.int64:
        raise RuntimeError(f"{name}(): Expected dtype int64 for index")
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
    if x.dtype is D.int64:
        return F.sub(F.neg(x), 1)  # two's complement: ~x == -x - 1, and both fuse
    raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                    "tensors")


def square(x: Tensor) -> Tensor:
    return F.mul(x, x)


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
    out, start = [], 0
    for s in sizes:
        out.append(F.getitem(x, (slice(None),) * d + (slice(start, start + s),)))
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
    zero: Any = False if x.dtype is D.bool_ else 0 if x.dtype is D.int64 else 0.0
    return F.where(keep, x, zero)


def tril(x: Tensor, diagonal: int = 0) -> Tensor:
    return _triangle(x, diagonal, "tril", lower=True)


def triu(x: Tensor, diagonal: int = 0) -> Tensor:
    return _triangle(x, diagonal, "triu", lower=False)


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


def index_select(x: Tensor, dim: int, index: Tensor) -> Tensor:
    if index.dtype is not D.int64:
        raise RuntimeError("index_select(): Expected dtype int64 for index")
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    d = _dim(x, dim)
    index = _as_1d(index)
    if index.numel():
        F.check_bounds(index, 0, x.shape[d] if x.ndim else 1, "index out of range in self")
    if x.ndim == 0:
        return F.getitem_key(F.reshape(x, (1,)), index, key=(P.IndexArg(0),))[0]
    return F.getitem_key(x, index, key=(slice(None),) * d + (P.IndexArg(0),))


def gather(x: Tensor, dim: int, index: Tensor) -> Tensor:
    d = _dim(x, dim)
    _check_dim_range(x, index, d, "gather")
    _check_index_values(index, x, d)
    if x.ndim == 0:
        return F.reshape(index_select(x, 0, index), index.shape)
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


def scatter(x: Tensor, dim: int, index: Tensor, src: Any = None, *, value: Any = None
            ) -> Tensor:
    """x with x[..index[i]..] = src[i] (out of place); src may be a number (``value``)."""
    if (src is None) == (value is None):
        raise TypeError("scatter() expects exactly one of src (a tensor) and value (a number)")
    d = _dim(x, dim)
    _check_dim_range(x, index, d, "scatter")
    _check_index_values(index, x, d)
    src = _scatter_src(src if src is not None else value, index, x, "scatter")
    key, idx = _grid_key(index, d)
    return F.index_put(x, src, *idx, key=key)


def scatter_add(x: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """x plus src added at x[..index[i]..] (repeated indices accumulate)."""
    d = _dim(x, dim)
    _check_dim_range(x, index, d, "scatter_add")
    _check_index_values(index, x, d)
    src = _scatter_src(src, index, x, "scatter_add")
    key, idx = _grid_key(index, d)
    return F.add(x, F.index_backward(src, *idx, key=key, shape=x.shape))


# how PyTorch's masked_fill error names a dtype
_MASK_DTYPE_NAMES = {"float32": "float", "float64": "double", "int64": "long int",
                     "float16": "c10::Half"}


def masked_fill(x: Tensor, mask: Tensor, value: Any) -> Tensor:
    if not isinstance(mask, Tensor) or mask.dtype is not D.bool_:
        got = mask.dtype.name if isinstance(mask, Tensor) else type(mask).__name__
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{_MASK_DTYPE_NAMES.get(got, got)}")
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but "
                               f"got tensor with {value.ndim} dimension(s).")
        value = F.cast(value, x.dtype)
    return F.where(mask, value, x)


# --- reductions ------------------------------------------------------------------------------


def any(x: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    nonzero = F.cast(F.ne(x, 0 if x.dtype is not D.bool_ else False), D.int64)
    return F.gt(F.sum(nonzero, dim, keepdim), 0)


def all(x: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    zero = F.cast(F.eq(x, 0 if x.dtype is not D.bool_ else False), D.int64)
    return F.eq(F.sum(zero, dim, keepdim), 0)


def _torch_name(dt: D.DType) -> str:
    return {"int64": "Long", "bool": "Bool"}.get(dt.name, dt.name.capitalize())


def vector_norm(x: Tensor, ord: Any = 2, dim: Any = None, keepdim: bool = False) -> Tensor:  # noqa: A002
    """(sum |x|^ord)^(1/ord) over ``dim`` (all of x by default); ord inf/-inf: max/min |x|,
    0: the count of nonzeros."""
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {_torch_name(x.dtype)}")
    a = F.abs(x)
    if ord == math.inf:
        return F.amax(a, dim, keepdim)
    if ord == -math.inf:
        return F.neg(F.amax(F.neg(a), dim, keepdim))
    if ord == 0:
        return F.sum(F.cast(F.ne(x, 0), x.dtype), dim, keepdim)
    if ord == 1:
        return F.sum(a, dim, keepdim)
    if ord == 2:
        return _root(F.sum(F.mul(x, x), dim, keepdim), 2.0)
    return _root(F.sum(F.pow(a, float(ord)), dim, keepdim), float(ord))


def _root(s: Tensor, p: float) -> Tensor:
    """s ** (1/p) whose gradient at s == 0 is 0, as PyTorch's norm gives (the root's own
    derivative there is infinite): the root is taken of 1 there, and masked to 0."""
    zero = F.eq(s, 0.0)
    safe = F.where(zero, 1.0, s)
    root = F.sqrt(safe) if p == 2.0 else F.pow(safe, 1.0 / p)
    return F.where(zero, 0.0, root)


def norm(x: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False) -> Tensor:
    """Tensor.norm: the vector norm of x over ``dim`` ("fro" is the 2-norm)."""
    if p == "fro":
        p = 2
    if isinstance(p, str):
        raise RuntimeError(f"norm: p={p!r} is not supported here: only 'fro' and numbers")
    return vector_norm(x, p, dim, keepdim)


def _correction(unbiased: Any, correction: Any) -> float:
    if unbiased is not None and correction is not None:
        raise TypeError("var()/std(): pass either unbiased or correction, not both")
    if correction is not None:
        return float(correction)
    return 1.0 if unbiased is None or unbiased else 0.0


def var(x: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
        correction: Any = None) -> Tensor:
    if isinstance(dim, bool):  # var(unbiased) positionally, as PyTorch's overload
        dim, unbiased = None, dim
    if not x.dtype.is_floating_point:
        raise RuntimeError("std and var only support floating point and complex dtypes")
    axes = F._axes(dim, x.ndim)
    n = math.prod(x.shape[a] for a in axes)
    centered = F.sub(x, F.mean(x, axes, keepdim=True))
    total = F.sum(F.mul(centered, centered), axes, keepdim)
    # n <= correction: PyTorch divides by max(0, n - correction) (inf or nan, no error)
    return F.div(total, builtins.max(0.0, n - _correction(unbiased, correction)))


def std(x: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
        correction: Any = None) -> Tensor:
    return F.sqrt(var(x, dim, unbiased, keepdim, correction=correction))


def logsumexp(x: Tensor, dim: Any, keepdim: bool = False) -> Tensor:
    if not x.dtype.is_floating_point:
        x = F.cast(x, D.default_float)
    axes = F._axes(dim, x.ndim)
    if not x.numel():
        return F.log(F.sum(F.exp(x), axes, keepdim))
    m = F.amax(x.detach(), axes, keepdim=True)
    # an all -inf row (or +inf max) would give inf - inf: shift by 0 there, as PyTorch does
    m = F.where(F.eq(F.abs(m), math.inf), 0.0, m)
    out = F.log(F.sum(F.exp(F.sub(x, m)), axes, keepdim=True))
    out = F.add(out, m)
    return out if keepdim else F.squeeze(out, axes) if axes else out


cumsum = F.cumsum
SortResult = namedtuple("SortResult", ["values", "indices"])
TopkResult = namedtuple("TopkResult", ["values", "indices"])


def sort(x: Tensor, dim: int = -1, descending: bool = False, stable: bool = False
         ) -> SortResult:
    """Values and indices along ``dim`` (ties keep their order: the sort is always stable)."""
    d = _dim(x, dim)
    indices = apply(P.ARGSORT, x, axis=d, descending=bool(descending))
    if x.ndim == 0:
        return SortResult(F.clone(x), indices)
    return SortResult(gather(x, d, indices), indices)


def argsort(x: Tensor, dim: int = -1, descending: bool = False, stable: bool = False
            ) -> Tensor:
    return apply(P.ARGSORT, x, axis=_dim(x, dim), descending=bool(descending))


def topk(x: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True  # noqa: A002
         ) -> TopkResult:
    d = _dim(x, dim)
    n = x.shape[d] if x.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    order = apply(P.ARGSORT, x, axis=d, descending=bool(largest))
    if x.ndim == 0:
        return TopkResult(F.clone(x), order)
    indices = F.getitem(order, (slice(None),) * d + (slice(0, k),))
    return TopkResult(gather(x, d, indices), indices)


# --- products --------------------------------------------------------------------------------


def _same_dtype(a: Tensor, b: Tensor) -> None:
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{a.dtype.name} != {b.dtype.name}")


def mm(a: Tensor, b: Tensor) -> Tensor:
    if a.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if b.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x"
                           f"{a.shape[1]} and {b.shape[0]}x{b.shape[1]})")
    _same_dtype(a, b)
    return F.matmul(a, b)


def bmm(a: Tensor, b: Tensor) -> Tensor:
    if a.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if b.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if b.shape[:2] != (a.shape[0], a.shape[2]):
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{a.shape[0]}, {a.shape[2]}] but got: [{b.shape[0]}, "
                           f"{b.shape[1]}].")
    _same_dtype(a, b)
    return F.matmul(a, b)


def _parse_einsum(equation: str, ndims: list[int]) -> tuple[list[str], str]:
    eq = equation.replace(" ", "")
    lhs, arrow, out = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ndims):
        raise RuntimeError("einsum(): more operands were provided than specified in the "
                           "equation" if len(ndims) > len(terms) else
                           "einsum(): fewer operands were provided than specified in the "
                           "equation")
    free = sorted(set(string.ascii_letters) - set(eq))
    ell: str | None = None
    parsed = []
    for term, nd in zip(terms, ndims):
        if "..." in term:
            head, _, tail = term.partition("...")
            n_ell = nd - len(head) - len(tail)
            if ell is None:
                ell = "".join(free[:builtins.max(n_ell, 0)])
            term = head + ell[len(ell) - n_ell:] + tail if n_ell else head + tail
        for c in term:
            if c not in string.ascii_letters:
                raise RuntimeError(f"einsum(): invalid subscript given at index "
                                   f"{eq.index(c)} in the equation string, subscripts must be "
                                   f"in [a-zA-Z]")
        if len(term) != nd:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation "
                               f"({len(term)}) does not match the number of dimensions ({nd}) "
                               f"for operand {len(parsed)}"
                               + ("" if ell is not None else " and no ellipsis was given"))
        parsed.append(term)
    if not arrow:
        counts = {c: "".join(parsed).count(c) for c in "".join(parsed)}
        out = (ell or "") + "".join(sorted(c for c, k in counts.items()
                                           if k == 1 and c not in (ell or "")))
    else:
        out = out.replace("...", ell or "")
    return parsed, out


def _diagonals(t: Tensor, term: str, i: int) -> tuple[Tensor, str]:
    """t with each subscript repeated in ``term`` reduced to its diagonal (``ii->i``): the
    repeated axes moved to the front and indexed by one shared arange."""
    from ..creation import arange

    while len(set(term)) != len(term):
        c = next(c for c in term if term.count(c) > 1)
        places = [j for j, d in enumerate(term) if d == c]
        sizes = {t.shape[j] for j in places}
        if len(sizes) != 1:
            raise RuntimeError(f"einsum(): subscript {c} is repeated for operand {i} but the "
                               f"sizes don't match, {max(sizes)} != {min(sizes)}")
        rest = [j for j in range(len(term)) if j not in places]
        t = F.permute(t, *places, *rest)
        ar = arange(t.shape[0], device=t.device)
        t = F.getitem_key(t, *[ar] * len(places),
                          key=tuple(P.IndexArg(k) for k in range(len(places))))
        term = c + "".join(term[j] for j in rest)
    return t, term


def _sum_private(t: Tensor, term: str, keep: str) -> tuple[Tensor, str]:
    """t summed over the subscripts of ``term`` not in ``keep``, and the subscripts left."""
    axes = tuple(i for i, c in enumerate(term) if c not in keep)
    if not axes:
        return t, term
    return F.sum(t, axes), "".join(c for c in term if c in keep)


def _einsum_matmul(a: Tensor, b: Tensor, ta: str, tb: str, out: str) -> Tensor:
    """Two operands as one batched matmul: (batch, left, contracted) @ (batch, contracted,
    right), then the output's order; no intermediate holds every subscript at once."""
    a, ta = _sum_private(a, ta, tb + out)
    b, tb = _sum_private(b, tb, ta + out)
    batch = [c for c in out if c in ta and c in tb]
    left = [c for c in out if c in ta and c not in tb]
    right = [c for c in out if c in tb and c not in ta]
    contracted = [c for c in ta if c in tb and c not in out]
    size = dict(zip(ta, a.shape)) | dict(zip(tb, b.shape))
    lead = tuple(size[c] for c in batch)
    am = F.reshape(F.permute(a, *[ta.index(c) for c in batch + left + contracted]),
                   lead + (math.prod(size[c] for c in left),
                           math.prod(size[c] for c in contracted)))
    bm = F.reshape(F.permute(b, *[tb.index(c) for c in batch + contracted + right]),
                   lead + (math.prod(size[c] for c in contracted),
                           math.prod(size[c] for c in right)))
    order = batch + left + right
    r = F.reshape(F.matmul(am, bm), tuple(size[c] for c in order))
    return F.permute(r, *[order.index(c) for c in out]) if order != list(out) else r


def einsum(equation: str, *operands: Any) -> Tensor:
    """Einstein summation. Two operands whose shared subscripts agree in size map onto one
    batched matmul; otherwise each operand is laid out over every subscript (permute, then
    reshape to insert size-1 axes), the operands multiplied with broadcasting, and the
    subscripts not in the output summed (a product and a reduction that fuse)."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    terms, out = _parse_einsum(equation, [t.ndim for t in operands])
    letters = list(dict.fromkeys(out + "".join(terms)))
    sizes: dict[str, int] = {}
    aligned = []
    diagonal = [_diagonals(t, term, i) for i, (t, term) in enumerate(zip(operands, terms))]
    operands, terms = tuple(t for t, _ in diagonal), [term for _, term in diagonal]
    for i, (t, term) in enumerate(zip(operands, terms)):
        for c, n in zip(term, t.shape):
            if n != 1 and sizes.get(c, 1) not in (1, n):
                raise RuntimeError(f"einsum(): subscript {c} has size {n} for operand {i} "
                                   f"which does not broadcast with previously seen size "
                                   f"{sizes[c]}")
            if n != 1 or c not in sizes:
                sizes[c] = n
        present = [c for c in letters if c in term]
        t = F.permute(t, *[term.index(c) for c in present]) if present else t
        aligned.append(F.reshape(t, tuple(t.shape[present.index(c)] if c in term else 1
                                          for c in letters)))
    if len(operands) == 2 and builtins.all(
            operands[0].shape[terms[0].index(c)] == operands[1].shape[terms[1].index(c)]
            for c in set(terms[0]) & set(terms[1])):
        return _einsum_matmul(*operands, *terms, out)
    prod = aligned[0]
    for t in aligned[1:]:
        prod = F.mul(prod, t)
    summed = tuple(i for i, c in enumerate(letters) if c not in out)
    if summed:
        prod = F.sum(prod, summed)
    prod = F.expand(prod, tuple(sizes[c] for c in letters if c in out))
    return prod
