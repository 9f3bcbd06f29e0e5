"""PyTorch's structured products and index builders, from primitives: cross, kron, cdist,
dist, the add-a-product family (addmv, addr, baddbmm, addbmm), tril/triu_indices,
cartesian_prod, combinations, tensor_split, take, diag_embed, block_diag, cov, corrcoef.

Index patterns come from shapes (numpy at trace time, constants in a compiled step); only
tensor_split with a tensor of split points reads values."""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import _dtype as D
from ..amp.policy import autocast_exclude, autocast_fp32, autocast_lower
from ..autograd.grad_mode import _state as _grad_state
from ..tensor import Tensor
from ..tracing import active_tracer
from . import functional as F
from . import tensor_ops as T
from .layouts import factory_options
from .naming import renamed_backward
from .shapes import broadcast_shapes, wrap_dim


def _const(arr: np.ndarray, device: Any) -> Tensor:
    return Tensor._of(arr, device=device)


def _scaled(t: Tensor, s: Any) -> Tensor:
    return t if isinstance(s, (int, float)) and s == 1 else F.mul(t, s)


def _kernel_scalar(s: Any, dtype: D.DType) -> Any:
    """beta or alpha as PyTorch's kernels take it: cast to the result's dtype (an integer
    result truncates 2.5 to 2, so it stays integer; a bool result takes its truth)."""
    if not isinstance(s, (bool, int, float)) or dtype.is_floating_point:
        return s
    return bool(s) if dtype is D.bool_ else int(s)


def _add_product(inp: Tensor, prod: Tensor, beta: Any, alpha: Any, name: str) -> Tensor:
    """beta * inp + alpha * prod, in one node named PyTorch's ``name`` (AddmmBackward0 ...),
    in the tensors' dtype (beta and alpha cast to it); beta == 0 ignores inp's values (its
    NaNs too), as PyTorch's, which still gives inp a (zero) gradient. A bool result is
    (beta and inp) or (alpha and prod)."""
    from .dispatch import named

    dtype = D.promote(inp.dtype, prod.dtype)
    beta, alpha = _kernel_scalar(beta, dtype), _kernel_scalar(alpha, dtype)
    if dtype is D.bool_:
        prod = prod if alpha else F.zeros_like(prod)
        inp = inp if beta else F.zeros_like(inp)
        return named(F.where(inp, True, prod), name)  # or
    prod = _scaled(prod, alpha)
    if isinstance(beta, (int, float)) and beta == 0:
        shape = broadcast_shapes(inp.shape, prod.shape)
        out = F.expand(prod, *shape)
        if inp.requires_grad and _grad_state.enabled:
            from .composite import _always

            out = F.where(_always(), out, F.mul(F.expand(inp, *shape), 0))
        return named(out, name)
    return named(F.add(_scaled(inp, beta), prod), name)


def no_bool_kernel(kernel: str, t: Tensor) -> None:
    """PyTorch's error for a product of bools (its CPU kernel has no bool case)."""
    if t.dtype is D.bool_:
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")


def _check_addr_scalars(dtype: D.DType, beta: Any, alpha: Any) -> None:
    """PyTorch's addr checks of beta and alpha against its result's dtype."""
    for name, s in (("beta", beta), ("alpha", alpha)):
        if isinstance(s, bool) and dtype is not D.bool_:
            raise RuntimeError(f"Boolean {name} only supported for Boolean results.")
        if isinstance(s, float) and not dtype.is_floating_point:
            raise RuntimeError(f"For integral input tensors, argument {name} must not be a "
                               "floating point number.")


@autocast_exclude
def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta: Any = 1,  # noqa: A002
          alpha: Any = 1, out: Tensor | None = None) -> Tensor:
    """beta * input + alpha * (mat @ vec)."""
    if out is not None:
        return F.written_to(out, addmv(input, mat, vec, beta=beta, alpha=alpha), "addmv")
    from .more_ops import mv

    _check_addmv(input, mat, vec)
    return _add_product(input, mv(mat, vec), beta, alpha, "AddmvBackward0")


def _check_addmv(input: Tensor, mat: Tensor, vec: Tensor) -> None:  # noqa: A002
    """PyTorch's addmv checks: ranks, sizes (input: one element, or mat's rows), dtypes."""
    if not (mat.ndim == 2 and vec.ndim == 1 and input.ndim <= 1):
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.ndim}, {mat.ndim}, "
                           f"{vec.ndim}")
    if mat.shape[1] != vec.shape[0] or input.numel() not in (1, mat.shape[0]):
        raise RuntimeError(f"size mismatch, got input ({input.shape[0] if input.ndim else 1}), "
                           f"mat ({mat.shape[0]}x{mat.shape[1]}), vec ({vec.shape[0]})")
    if not input.dtype is mat.dtype is vec.dtype:
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got "
                           f"{D.scalar_type_name(input.dtype)}, {D.scalar_type_name(mat.dtype)}, "
                           f"and {D.scalar_type_name(vec.dtype)}")


def _check_expands(input: Tensor, target: Sequence[int]) -> None:  # noqa: A002
    """PyTorch's expand of a batched add-a-product's input to the product's shape."""
    from .shapes import expand_error

    err = expand_error(tuple(input.shape), tuple(target))
    if err is not None:
        raise RuntimeError(err)


@autocast_exclude
def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta: Any = 1,  # noqa: A002
         alpha: Any = 1, out: Tensor | None = None) -> Tensor:
    """beta * input + alpha * outer(vec1, vec2)."""
    if out is not None:
        return F.written_to(out, addr(input, vec1, vec2, beta=beta, alpha=alpha), "addr")
    T.check_vectors("addr", (("vec1", vec1), ("vec2", vec2)))
    _check_addr_scalars(D.promote(D.promote(input.dtype, vec1.dtype), vec2.dtype), beta, alpha)
    _check_expands(input, (vec1.shape[0], vec2.shape[0]))
    return _add_product(input, T.outer(vec1, vec2), beta, alpha, "AddrBackward0")


@autocast_lower
def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1,  # noqa: A002
            alpha: Any = 1, out: Tensor | None = None) -> Tensor:
    """beta * input + alpha * (batch1 @ batch2), batch by batch."""
    if out is not None:
        return F.written_to(out, baddbmm(input, batch1, batch2, beta=beta, alpha=alpha), "baddbmm")
    from .products import bmm

    no_bool_kernel("baddbmm", batch1)
    prod = bmm(batch1, batch2)
    _check_expands(input, prod.shape)
    if input.dtype is not batch1.dtype:
        raise RuntimeError(f"Input dtypes must be the same, got: input "
                           f"{D.type_meta_name(input.dtype)}, batch1: "
                           f"{D.type_meta_name(batch1.dtype)}, batch2: "
                           f"{D.type_meta_name(batch2.dtype)}")
    return _add_product(input, prod, beta, alpha, "BaddbmmBackward0")


@autocast_lower
def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1,  # noqa: A002
           alpha: Any = 1, out: Tensor | None = None) -> Tensor:
    """beta * input + alpha * the sum over the batch of batch1[i] @ batch2[i]."""
    if out is not None:
        return F.written_to(out, addbmm(input, batch1, batch2, beta=beta, alpha=alpha), "addbmm")
    from .products import bmm

    no_bool_kernel("addmm_impl_cpu_", batch1)
    if input.dtype is not batch2.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got "
                           f"{D.scalar_type_name(input.dtype)} and "
                           f"{D.scalar_type_name(batch2.dtype)}")
    # summed in the inputs' dtype: sum's own promotion would make an int32 addbmm int64
    prod = F.sum(bmm(batch1, batch2), 0, dtype=batch1.dtype)
    _check_expands(input, prod.shape)
    return _add_product(input, prod, beta, alpha, "AddbmmBackward0")


@autocast_exclude
def ger(input: Tensor, vec2: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """outer(vec1, vec2) (PyTorch's older name)."""
    if out is not None:
        return F.written_to(out, ger(input, vec2), "ger")
    return T.outer(input, vec2)


@renamed_backward("LinalgCrossBackward0")
def cross(input: Tensor, other: Tensor, dim: int | None = None, *,  # noqa: A002
          out: Tensor | None = None) -> Tensor:
    """The cross product of 3-vectors along ``dim`` (None: the first dim of size 3, with
    PyTorch's deprecation warning)."""
    if out is not None:
        return F.written_to(out, cross(input, other, dim), "cross")
    from .extra_ops import roll

    if input.ndim != other.ndim:  # PyTorch's: no broadcasting of the dims themselves
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    if dim is not None:
        d = wrap_dim(dim, input.ndim)
        if input.shape[d] != 3 and other.shape[d] != 3:  # its dim as given (-1)
            raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                               f"{input.shape[d]} and {other.shape[d]}")
    shape = broadcast_shapes(input.shape, other.shape)
    if input.dtype is not other.dtype:
        raise RuntimeError(f"expected scalar type {D.scalar_type_name(input.dtype)} but found "
                           f"{D.scalar_type_name(other.dtype)}")
    no_bool_kernel("cross", input)
    a, b = F.expand(input, *shape), F.expand(other, *shape)
    if dim is None:
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\n"
                      "Please either pass the dim explicitly or simply use torch.linalg.cross."
                      "\nThe default value of dim will change to agree with that of "
                      "linalg.cross in a future release.", UserWarning, stacklevel=2)
        dims = [i for i, n in enumerate(shape) if n == 3]
        if not dims:
            raise RuntimeError("no dimension of size 3 in input")
        d = dims[0]
    return F.sub(F.mul(roll(a, -1, d), roll(b, -2, d)), F.mul(roll(a, -2, d), roll(b, -1, d)))


@renamed_backward("UnsafeViewBackward0")
def kron(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The Kronecker product: every element of a times the whole of b, in blocks."""
    if out is not None:
        return F.written_to(out, kron(input, other), "kron")
    nd = max(input.ndim, other.ndim)
    sa = (1,) * (nd - input.ndim) + tuple(input.shape)
    sb = (1,) * (nd - other.ndim) + tuple(other.shape)
    ea = F.reshape(input, tuple(itertools.chain.from_iterable((n, 1) for n in sa)))
    eb = F.reshape(other, tuple(itertools.chain.from_iterable((1, n) for n in sb)))
    return F.reshape(F.mul(ea, eb), tuple(x * y for x, y in zip(sa, sb)))


def _safe_root(s: Tensor, p: float) -> Tensor:
    """s ** (1/p) with a zero gradient where s == 0 (PyTorch's cdist/norm backward)."""
    zero = F.eq(s, 0)
    safe = F.where(zero, 1.0, s)
    root = F.sqrt(safe) if p == 2 else F.pow(safe, 1.0 / p)
    return F.where(zero, 0.0, root)


def _pnorm_last(diff: Tensor, p: float) -> Tensor:
    if p == 0:
        from .reductions import count_nonzero_with_zero_gradient

        return count_nonzero_with_zero_gradient(diff, -1)
    if math.isinf(p):
        return F.amax(F.abs(diff), -1) if p > 0 else T.amin(F.abs(diff), -1)
    if p == 1:
        return F.sum(F.abs(diff), -1)
    if p == 2:
        return _safe_root(F.sum(F.mul(diff, diff), -1), 2)
    return _safe_root(F.sum(_safe_abs_pow(diff, p), -1), p)


def _safe_abs_pow(x: Tensor, p: float) -> Tensor:
    """|x| ** p with a zero gradient where x == 0: PyTorch's norm and cdist backward mask it
    there (|0| ** (p - 1) is inf for p < 1, times sign(0): NaN)."""
    zero = F.eq(x, 0)
    return F.where(zero, 0.0, F.pow(F.abs(F.where(zero, 1.0, x)), p))


_CDIST_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                "donot_use_mm_for_euclid_dist")


@autocast_fp32
@renamed_backward("CdistBackward0")
def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: str = _CDIST_MODES[0]
          ) -> Tensor:
    """p-norm distances between each row of x1 and each row of x2 (batched). For p = 2 with
    more than 25 rows (or compute_mode 'use_mm_for_euclid_dist') through a matrix product,
    |a|^2 + |b|^2 - 2 a.b, as PyTorch's: its values differ from the direct sum in the last
    bits, and this one matches them."""
    if x1.ndim < 2 or x2.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X{1 if x1.ndim < 2 else 2}"
                           f" got: {x1.ndim if x1.ndim < 2 else x2.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    for i, t in ((1, x1), (2, x2)):
        if not t.dtype.is_floating_point:
            raise RuntimeError(f"cdist only supports floating-point dtypes, X{i} got: "
                               f"{D.scalar_type_name(t.dtype)}")
    if x1.dtype is not x2.dtype:
        raise RuntimeError(f"expected scalar type {D.scalar_type_name(x1.dtype)} but found "
                           f"{D.scalar_type_name(x2.dtype)}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if compute_mode not in _CDIST_MODES:
        raise RuntimeError(f"{compute_mode} is not a valid value for compute_mode")
    batch = broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
    a = F.expand(x1, *batch, *x1.shape[-2:])
    b = F.expand(x2, *batch, *x2.shape[-2:])
    r1, r2 = x1.shape[-2], x2.shape[-2]
    use_mm = p == 2 and (compute_mode == _CDIST_MODES[1] or (
        compute_mode == _CDIST_MODES[0] and (r1 > 25 or r2 > 25)))
    if use_mm:
        from ..creation import ones

        n1 = F.sum(F.mul(a, a), -1, keepdim=True)
        n2 = F.sum(F.mul(b, b), -1, keepdim=True)
        o1 = ones(n1.shape, dtype=a.dtype, device=a.device)
        o2 = ones(n2.shape, dtype=b.dtype, device=b.device)
        left = F.cat([F.mul(a, -2.0), n1, o1], -1)
        right = F.cat([b, o2, n2], -1)
        sq = F.clamp(F.matmul(left, F.transpose(right, -1, -2)), 0.0, None)
        return _safe_root(sq, 2)
    diff = F.sub(F.unsqueeze(a, -2), F.unsqueeze(b, -3))
    return _pnorm_last(diff, float(p))


@renamed_backward("DistBackward0")
def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:  # noqa: A002
    """The p-norm of input - other."""
    diff = F.sub(input, other)
    if p == 0:  # PyTorch's dist of p = 0: a norm whose backward gives no gradient
        from .reductions import vector_norm

        return vector_norm(F.reshape(diff, (-1,)), 0)
    return _wide_pnorm_last(F.reshape(diff, (-1,)), float(p))


# a float16/bfloat16 difference's norm accumulated in float32 and rounded once, as PyTorch's
# norm kernel: its sum of |d|^p in float16 overflows to inf (dist of p = 4 at |d| ~ 10)
_wide_pnorm_last = F.half_in_float32(_pnorm_last)


# --- index builders --------------------------------------------------------------------------


def _tri_indices(lower: bool, row: int, col: int, offset: int, dtype: Any, device: Any
                 ) -> Tensor:
    if row < 0 or col < 0:
        raise RuntimeError(f"row must be non-negative, got{row}" if row < 0 else
                           f"col must be non-negative, got{col}")
    mask = np.tri(row, col, offset, dtype=bool)
    if not lower:
        mask = ~np.tri(row, col, offset - 1, dtype=bool)
    idx = np.stack(np.nonzero(mask)).astype(np.int64)
    out = _const(idx, device)
    return out if dtype is None else F.cast(out, D.as_dtype(dtype))


@factory_options()
def tril_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None,
                 device: Any = None) -> Tensor:
    """The (2, N) row and column indices of the lower triangle, row by row."""
    return _tri_indices(True, row, col, offset, dtype, device)


@factory_options()
def triu_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None,
                 device: Any = None) -> Tensor:
    """The (2, N) row and column indices of the upper triangle, row by row."""
    return _tri_indices(False, row, col, offset, dtype, device)


def cartesian_prod(*tensors: Tensor) -> Tensor:
    """Every combination of one element from each 1-D tensor, as rows."""
    from .more_ops import meshgrid

    for t in tensors:
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return F.stack([F.reshape(g, (-1,)) for g in grids], 1)


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False  # noqa: A002
                 ) -> Tensor:
    """The length-r combinations of a 1-D tensor's elements, as rows (itertools' order)."""
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return F.reshape(input[:0], (0,))
    n = input.shape[0]
    pick = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    idx = np.array(list(pick(range(n), r)), dtype=np.int64).reshape(-1, r)
    if idx.shape[0] == 0:
        return F.reshape(input[:0], (0, r))
    flat = T.index_select(input, 0, _const(idx.reshape(-1), input.device))
    return F.reshape(flat, idx.shape)


def tensor_split(input: Tensor, indices_or_sections: Any = None, dim: int = 0, *,  # noqa: A002
                 sections: int | None = None, indices: Sequence[int] | None = None,
                 tensor_indices_or_sections: Tensor | None = None) -> tuple[Tensor, ...]:
    """Views split along ``dim``: into n nearly equal parts (the first n % size one longer),
    or at the given indices (PyTorch's overloads name them ``sections=``, ``indices=`` and,
    a tensor of either, ``tensor_indices_or_sections=``)."""
    if tensor_indices_or_sections is not None and not isinstance(tensor_indices_or_sections,
                                                                  Tensor):
        raise TypeError(f"tensor_split(): argument 'tensor_indices_or_sections' must be Tensor, "
                        f"not {type(tensor_indices_or_sections).__name__}")
    given = [v for v in (indices_or_sections, sections, indices, tensor_indices_or_sections)
             if v is not None]
    if len(given) != 1:
        raise TypeError("tensor_split() takes one of indices_or_sections, sections, indices or "
                        "tensor_indices_or_sections")
    indices_or_sections = given[0]
    if input.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    d = wrap_dim(dim, input.ndim)
    size = input.shape[d]
    spec = indices_or_sections
    if isinstance(spec, Tensor):
        if spec.dtype is not D.int64:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to have "
                               f"dtype of long, but got {D.scalar_type_name(spec.dtype)}")
        if spec.ndim > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a "
                               "zero-dimensional or one-dimensional tensor, but got a tensor "
                               f"with {spec.ndim} dims")
        values = spec.cpu().numpy()
        spec = int(values) if spec.ndim == 0 else [int(v) for v in values]
    if isinstance(spec, int):
        if spec <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {spec}")
        small, extra = divmod(size, spec)
        bounds = [0]
        for i in range(spec):
            bounds.append(bounds[-1] + small + (1 if i < extra else 0))
    else:
        bounds = [0, *(max(0, min(size, i if i >= 0 else size + i)) for i in spec), size]
    key = (slice(None),) * d
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        out.append(F.getitem(input, key + (slice(lo, max(lo, hi)),)))
    return tuple(out)


def take(input: Tensor, index: Tensor) -> Tensor:  # noqa: A002
    """input flattened, read at ``index`` (negative from the end), in index's shape."""
    if index.dtype is not D.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got "
                           f"{D.scalar_type_name(index.dtype)}")
    n = input.numel()
    flat = F.reshape(input, (-1,))
    if index.numel() and not n:
        raise IndexError("take(): tried to take from an empty tensor")
    if index.numel():
        F.check_bounds(index, -n, n, f"out of range: tried to access index {{}} on a tensor "
                       f"of {n} elements.", error="IndexError")
    idx = F.reshape(index, (-1,))
    idx = F.where(F.lt(idx, 0), F.add(idx, n), idx)
    return F.reshape(T.index_select(flat, 0, idx), tuple(index.shape))


@renamed_backward("DiagEmbedBackward0")
def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1  # noqa: A002
               ) -> Tensor:
    """A (batch of) matrices with input's last dim on the ``offset`` diagonal of the
    (dim1, dim2) planes of the result, zeros elsewhere."""
    nd = input.ndim + 1
    d1, d2 = wrap_dim(dim1, nd), wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    m = input.shape[-1]
    n = m + abs(offset)
    from ..creation import zeros

    pad = zeros(*input.shape[:-1], abs(offset), dtype=input.dtype, device=input.device)
    x = F.cat([input, pad], -1) if offset else input
    mask = _const(np.eye(n, k=offset, dtype=bool), input.device)
    x = F.unsqueeze(x, -1) if offset >= 0 else F.unsqueeze(x, -2)
    out = F.where(mask, x, 0)  # (..., n, n): rows i, columns i + offset
    out = F.cast(out, input.dtype) if out.dtype is not input.dtype else out
    rest = [i for i in range(nd) if i not in (d1, d2)]
    order = [0] * nd
    for src, dst in zip(range(nd - 2), rest):
        order[dst] = src
    order[d1], order[d2] = nd - 2, nd - 1
    return F.permute(out, *order)


@renamed_backward("BlockDiagBackward0")
def block_diag(*tensors: Tensor) -> Tensor:
    """The tensors (0-, 1- or 2-D) as the blocks of a block-diagonal matrix."""
    from ..creation import zeros

    mats = []
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {i} has {t.ndim} dimensions")
        mats.append(F.reshape(t, (1, 1)) if t.ndim == 0 else F.unsqueeze(t, 0)
                    if t.ndim == 1 else t)
    if not mats:
        return zeros(1, 0)
    dtype = D.result_dtype([t.dtype for t in mats], [])
    cols = sum(t.shape[1] for t in mats)
    rows, left = [], 0
    for t in mats:
        r, c = t.shape
        parts = []
        if left:
            parts.append(zeros(r, left, dtype=dtype, device=t.device))
        parts.append(F.cast(t, dtype) if t.dtype is not dtype else t)
        if cols - left - c:
            parts.append(zeros(r, cols - left - c, dtype=dtype, device=t.device))
        rows.append(F.cat(parts, 1) if len(parts) > 1 else parts[0])
        left += c
    return F.cat(rows, 0)


# --- covariance --------------------------------------------------------------------------------


def cov(input: Tensor, *, correction: int = 1, fweights: Tensor | None = None,  # noqa: A002
        aweights: Tensor | None = None) -> Tensor:
    """The covariance of the rows (variables) over the columns (observations), with
    frequency and/or importance weights, as PyTorch's (numpy.cov's formula)."""
    _check_cov(input, "cov")
    x = F.reshape(input, (1, -1)) if input.ndim < 2 else input
    n = x.shape[1]
    # the weights as given, as PyTorch's: float32 aweights make a float16 input's cov float32
    w: Tensor | None = fweights
    if aweights is not None:
        w = aweights if w is None else F.mul(w, aweights)
    if w is None:  # an integer input's sum divided in the default float dtype, as PyTorch's
        avg = F.div(F.sum(x, 1, keepdim=True), n)
        if n - correction <= 0:
            _warn_cov_dof()
        norm: Any = max(0, n - correction)
    else:
        w_sum = F.sum(w)
        avg = F.div(F.sum(F.mul(x, w), 1, keepdim=True), w_sum)
        if correction == 0:
            norm = w_sum
        elif aweights is None:
            norm = F.sub(w_sum, correction)
        elif fweights is None and n == 1 and correction == 1:
            norm = 0.0  # PyTorch's exact 0 here (its formula rounds to +-1 ulp), as numpy's
        else:
            norm = F.sub(w_sum, F.div(F.mul(F.sum(F.mul(w, aweights)), correction), w_sum))
        if isinstance(norm, Tensor):
            if active_tracer() is None and bool(F.le(norm, 0)):  # a captured step reads none
                _warn_cov_dof()
            norm = F.clamp(norm, 0.0, None)
        else:
            _warn_cov_dof()
    if n == 1 and (fweights is None) != (aweights is None):
        # PyTorch's: one observation with one kind of weights is its own weighted mean, so
        # x - avg is exactly 0 (an integer input's in float32), as numpy's
        xm = F.zeros_like(x if x.dtype.is_floating_point else F.cast(x, D.float32))
    else:
        xm = F.sub(x, avg)
    xw = xm if w is None else F.mul(xm, w)
    c = F.div(F.matmul(xw, F.transpose(xm, 0, 1)), norm)
    return F.reshape(c, ()) if x.shape[0] == 1 else c  # one variable: 0-d, as PyTorch's


def _warn_cov_dof() -> None:
    warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than "
                  "the number of observations.", UserWarning, stacklevel=3)


def _check_cov(input: Tensor, name: str) -> None:  # noqa: A002
    """PyTorch's checks of cov's and corrcoef's input."""
    if input.ndim > 2:
        raise RuntimeError(f"{name}(): expected input to have two or fewer dimensions but got "
                           f"an input with {input.ndim} dimensions")
    if input.dtype is D.bool_:
        raise RuntimeError("cov(): bool dtype is not supported for input")


def corrcoef(input: Tensor) -> Tensor:  # noqa: A002
    """Pearson correlation coefficients of the rows, clipped to [-1, 1]."""
    _check_cov(input, "corrcoef")
    c = cov(input)
    if c.ndim == 0:
        return F.div(c, c)
    d = F.sqrt(_diag(c))
    c = F.div(F.div(c, F.unsqueeze(d, 1)), F.unsqueeze(d, 0))
    return F.clamp(c, -1.0, 1.0)


def _diag(c: Tensor) -> Tensor:
    from .more_ops import diagonal

    return diagonal(c)



# --- linalg's functions under PyTorch's top-level names, with those names' parameters -------


def det(input: Tensor) -> Tensor:  # noqa: A002
    """torch.det: linalg.det."""
    from .. import linalg

    return linalg.det(input)


def logdet(input: Tensor) -> Tensor:  # noqa: A002
    """torch.logdet: log det, NaN where det < 0."""
    from .. import linalg

    return linalg.logdet(input)


def slogdet(input: Tensor) -> Any:  # noqa: A002
    """torch.slogdet: linalg.slogdet."""
    from .. import linalg

    return linalg.slogdet(input)


def inverse(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """torch.inverse: linalg.inv."""
    from .. import linalg

    if out is not None:
        return F.written_to(out, linalg.inv(input), "inverse")
    return linalg.inv(input)


def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:  # noqa: A002
    """torch.pinverse: linalg.pinv with singular values at or below rcond * the largest
    dropped (its rtol, no atol)."""
    from .. import linalg

    return linalg.pinv(input, atol=0.0, rtol=rcond)


def matrix_power(input: Tensor, n: int, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """torch.matrix_power: linalg.matrix_power."""
    from .. import linalg

    if out is not None:
        return F.written_to(out, linalg.matrix_power(input, n), "matrix_power")
    return linalg.matrix_power(input, n)
