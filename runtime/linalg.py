"""``rt.linalg``: PyTorch's linear-algebra names. inv, det, slogdet's log|det| and cholesky
are primitives (``ops.linalg_ops``); solve, matrix_power and the norms are composites of them
and of matmul, so their gradients come from those primitives' formulas."""

from __future__ import annotations

import math
import re
from collections import namedtuple
from typing import Any

import numpy as np

from . import _dtype as D
from .ops import functional as F
from .ops import linalg_ops as L
from .ops import reductions as _red
from .ops.dispatch import apply
from .ops.math_ops import same_out_dtype, takes_out, takes_out_each
from .ops.shapes import wrap_dim
from .tensor import Tensor

SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])


@takes_out(check=same_out_dtype, name="linalg_vector_norm")
def vector_norm(x: Tensor, ord: Any = 2, dim: Any = None, keepdim: bool = False,  # noqa: A002
                *, dtype: Any = None) -> Tensor:
    """(sum |x|^ord)^(1/ord) over ``dim``; ``dtype``: x cast to it first, as PyTorch's."""
    if dtype is not None:
        x = F.cast(x, D.as_dtype(dtype))
    return _red.vector_norm(x, ord, dim, keepdim)


def _two_dims(x: Tensor, dim: Any, name: str) -> tuple[int, int]:
    if x.ndim < 2:
        raise RuntimeError(f"linalg.{name}: The input tensor A must have at least 2 "
                           f"dimensions.")
    d0, d1 = (wrap_dim(d, x.ndim) for d in dim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, "
                           f"{dim[1]})")
    return d0, d1


@takes_out(check=same_out_dtype, name="linalg_matrix_norm")
def matrix_norm(A: Tensor, ord: Any = "fro", dim: tuple[int, int] = (-2, -1),  # noqa: A002
                keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """'fro'; the max (min, for -1/-inf) absolute column (1) or row (inf) sum; 'nuc', 2, -2:
    the sum, largest and smallest of the singular values."""
    if dtype is not None:
        A = F.cast(A, D.as_dtype(dtype))
    if not A.dtype.is_floating_point:
        raise RuntimeError(f"linalg.matrix_norm: Expected a floating point or complex tensor "
                           f"as input. Got {L._TYPE.get(A.dtype.name, A.dtype.name)}")
    d0, d1 = _two_dims(A, dim, "matrix_norm")
    if ord == "fro":
        return _red.vector_norm(A, 2, (d0, d1), keepdim)
    if ord in ("nuc", 2, -2):
        moved = F.permute(A, *[i for i in range(A.ndim) if i not in (d0, d1)], d0, d1)
        s = svdvals(moved)
        out = F.sum(s, -1) if ord == "nuc" else F.amax(s, -1) if ord == 2 else F.neg(
            F.amax(F.neg(s), -1))
        if keepdim:
            out = F.unsqueeze(F.unsqueeze(out, min(d0, d1)), max(d0, d1))
        return out
    if ord not in (1, -1, math.inf, -math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    summed, kept = (d0, d1) if ord in (1, -1) else (d1, d0)
    sums = F.sum(F.abs(A), summed, keepdim=True)
    out = F.amax(sums, kept, keepdim=True) if ord > 0 else F.neg(
        F.amax(F.neg(sums), kept, keepdim=True))
    return out if keepdim else F.squeeze(out, (d0, d1))


@takes_out(check=same_out_dtype, name="linalg_norm")
def norm(input: Tensor, ord: Any = None, dim: Any = None, keepdim: bool = False,  # noqa: A002
         *, dtype: Any = None) -> Tensor:
    """A vector norm (dim an int, or ord None and no dim: all of A flattened) or a matrix
    norm (dim two ints, or A 2-D with ord given), as PyTorch's."""
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None and len(dim) == 2 or (dim is None and ord is not None and
                                              input.ndim == 2):
        return matrix_norm(input, "fro" if ord is None else ord, tuple(dim or (-2, -1)), keepdim,
                           dtype=dtype)
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.norm: If dim is specified, it mut be of length 1 or 2. "
                           f"Got {list(dim) if dim is not None else dim}")
    if dim is None and ord is not None and input.ndim != 1:
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must "
                           f"be 1D or 2D. Got {input.ndim}D.")
    return vector_norm(input, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


LinAlgError = L.LinAlgError


@takes_out(check=same_out_dtype, name="linalg_inv")
def inv(A: Tensor) -> Tensor:
    """The inverse of each square matrix in A."""
    L.check_square("inv", A)
    return apply(L.INV, A)


@takes_out(check=same_out_dtype, name="linalg_det")
def det(A: Tensor) -> Tensor:
    """The determinant of each square matrix in A."""
    L.check_square("det", A)
    return apply(L.DET, A)


@takes_out_each("linalg_slogdet")
def slogdet(A: Tensor) -> SlogdetResult:
    """(sign, log|det|): the sign from det (no gradient), log|det| a primitive (no overflow)."""
    L.check_square("slogdet", A)
    return SlogdetResult(F.sign(det(A.detach())), apply(L.LOGABSDET, A))


def logdet(A: Tensor) -> Tensor:
    """log det A: NaN where det < 0, -inf where 0, as PyTorch's; NaN for a matrix with a NaN
    (its det's sign is 0 there: it read as det 0)."""
    sign, logabs = slogdet(A)
    zero = F.logical_and(F.eq(sign, 0), F.eq(logabs, logabs))
    return F.where(F.lt(sign, 0), math.nan, F.where(zero, -math.inf, logabs))


EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])


@takes_out_each("linalg_eigh")
def eigh(A: Tensor, UPLO: str = "L") -> EighResult:  # noqa: N803 - PyTorch's name
    """Eigenvalues (ascending) and orthonormal eigenvectors of symmetric matrices, from the
    triangle ``UPLO`` names."""
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    L.check_square("eigh", A)
    packed = apply(L.EIGH, A, upper=UPLO == "U")
    return EighResult(F.getitem(packed, (Ellipsis, 0, slice(None))),
                      F.getitem(packed, (Ellipsis, slice(1, None), slice(None))))


@takes_out(check=same_out_dtype, name="linalg_eigvalsh")
def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:  # noqa: N803 - PyTorch's name
    """The eigenvalues of symmetric matrices, ascending."""
    return eigh(A, UPLO).eigenvalues


SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])


@takes_out_each("linalg_svd")
def svd(A: Tensor, full_matrices: bool = True) -> SVDResult:
    """U, S, Vh with A = U diag(S) Vh (S descending); full_matrices: U and Vh square (the
    gradient reads their first min(m, n) columns and rows, as PyTorch's)."""
    m, n = A.shape[-2], A.shape[-1]
    full = bool(full_matrices) and m != n  # square: the same factors
    packed = apply(L.SVD, A, full_matrices=full)
    return SVDResult(*L.unpack_svd(packed, m, n, full))


@takes_out(check=same_out_dtype, name="linalg_svdvals")
def svdvals(A: Tensor) -> Tensor:
    """The singular values, descending."""
    return svd(A, full_matrices=False).S


@takes_out(check=same_out_dtype, name="linalg_pinv")
def pinv(A: Tensor, *, atol: float | None = None, rtol: float | None = None,
         hermitian: bool = False) -> Tensor:
    """The pseudo-inverse V diag(1/S) U^T, singular values at or below max(atol, rtol *
    S_max) dropped (rtol default: eps * max(m, n), PyTorch's)."""
    U, S, Vh = svd(A, full_matrices=False)
    if rtol is None:
        rtol = 0.0 if atol is not None and atol > 0 else float(
            np.finfo(A.dtype.np).eps) * max(A.shape[-2], A.shape[-1])
    smax = F.amax(S.detach(), -1, keepdim=True) if S.shape[-1] else S
    cut = F.maximum(F.mul(smax, rtol), atol or 0.0)
    keep = F.gt(S, cut)
    s_inv = F.where(keep, F.div(1.0, F.where(keep, S, 1.0)), 0.0)
    return F.matmul(F.mul(F.transpose(Vh, -1, -2), F.unsqueeze(s_inv, -2)),
                    F.transpose(U, -1, -2))


QRResult = namedtuple("QRResult", ["Q", "R"])
LstsqResult = namedtuple("LstsqResult", ["solution", "residuals", "rank", "singular_values"])


@takes_out_each("linalg_qr")
def qr(A: Tensor, mode: str = "reduced") -> QRResult:
    """Q with orthonormal columns and upper-triangular R, A = QR ('reduced'; 'r': R only,
    Q empty; 'complete' only where it equals 'reduced', m <= n)."""
    if mode not in ("reduced", "r", "complete"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           f"'reduced' (default), 'r', or 'complete'")
    m, n = A.shape[-2], A.shape[-1]
    if mode == "complete" and m > n:
        raise NotImplementedError("linalg.qr(mode='complete') of a tall matrix")
    q, r = L.unpack_qr(apply(L.QR, A.detach() if mode == "r" else A), m, n)
    if mode == "r":  # no gradient: PyTorch's needs Q, which mode 'r' does not return
        from .creation import zeros

        return QRResult(zeros(0, dtype=A.dtype, device=A.device), r)
    return QRResult(q, r)


def lstsq(A: Tensor, B: Tensor, rcond: float | None = None, *, driver: str | None = None
          ) -> LstsqResult:
    """The least-squares solution X of A X = B by the pseudo-inverse (full-rank A: PyTorch's
    'gelsy' answer); residuals and singular_values empty, rank counted, as gelsy reports."""
    from .creation import zeros

    vector = B.ndim == A.ndim - 1
    rhs = F.unsqueeze(B, -1) if vector else B
    if rhs.shape[-2] != A.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    pinv_a = pinv(A, rtol=rcond) if rcond is not None else pinv(A)
    X = F.matmul(pinv_a, rhs)
    S = svdvals(A.detach())
    tol = rcond if rcond is not None else float(np.finfo(A.dtype.np).eps) * max(A.shape[-2:])
    rank = F.sum(F.cast(F.gt(S, F.mul(F.amax(S, -1, keepdim=True), tol)), D.int64), -1)
    empty = zeros(0, dtype=A.dtype, device=A.device)
    return LstsqResult(F.squeeze(X, -1) if vector else X, empty, rank, empty)


@takes_out(check=same_out_dtype, name="linalg_cross")
def cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """The cross product of 3-vectors along ``dim`` (last by default)."""
    from .ops.structured import cross as _cross

    return _cross(input, other, dim)


@takes_out(check=same_out_dtype, name="linalg_vecdot")
def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """The dot product of x and y along ``dim`` (broadcast)."""
    return F.sum(F.mul(x, y), dim)


@takes_out(check=same_out_dtype, name="linalg_multi_dot")
def multi_dot(tensors: list[Tensor]) -> Tensor:
    """The product of the matrices in order (first may be 1-D: a row; last: a column)."""
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    out = tensors[0]
    for t in tensors[1:]:
        out = F.matmul(out, t)
    return out


@takes_out(check=same_out_dtype, name="linalg_matrix_rank")
def matrix_rank(A: Tensor, *, atol: float | None = None, rtol: float | None = None,
                hermitian: bool = False) -> Tensor:
    """The number of singular values above max(atol, rtol * S_max) (rtol default: eps *
    max(m, n), PyTorch's)."""
    S = svdvals(A.detach())
    if rtol is None:
        rtol = 0.0 if atol is not None and atol > 0 else float(
            np.finfo(A.dtype.np).eps) * max(A.shape[-2], A.shape[-1])
    smax = F.amax(S, -1, keepdim=True)
    cut = F.maximum(F.mul(smax, rtol), atol or 0.0)
    return F.sum(F.cast(F.gt(S, cut), D.int64), -1)


@takes_out(check=same_out_dtype, name="linalg_cond")
def cond(A: Tensor, p: Any = None) -> Tensor:
    """The condition number: S_max / S_min (p None or 2), S_min / S_max (-2), otherwise
    matrix_norm(A, p) * matrix_norm(inv(A), p)."""
    if p in (None, 2, -2):
        S = svdvals(A)
        ratio = F.div(F.getitem(S, (Ellipsis, 0)), F.getitem(S, (Ellipsis, -1)))
        return F.div(1.0, ratio) if p == -2 else ratio
    return F.mul(matrix_norm(A, p), matrix_norm(inv(A), p))


@takes_out(check=same_out_dtype, name="linalg_cholesky")
def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """The lower Cholesky factor L (A = L L^T); ``upper``: its transpose."""
    L.check_square("cholesky", A)
    out = apply(L.CHOLESKY, A)
    return F.transpose(out, -1, -2) if upper else out


@takes_out(check=same_out_dtype, name="linalg_solve")
def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """X with A X = B (``left`` False: X A = B); B a vector where its shape says so, as
    PyTorch's (B 1-D, or B with one dimension less than A and A's batch)."""
    if not left:
        return F.transpose(solve(F.transpose(A, -1, -2), F.transpose(B, -1, -2)), -1, -2)
    L.check_square("solve", A)
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    rhs = F.unsqueeze(B, -1) if vector else B
    if rhs.shape[-2] != A.shape[-1]:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"AX = B ({A.shape[-2]}x{A.shape[-1]} and {rhs.shape[-2]}x"
                           f"{rhs.shape[-1]})")
    try:
        A_inv = inv(A)
    except LinAlgError as e:  # PyTorch's text: its solver names itself, not the inverse
        batch = re.search(r"\(Batch element \d+\): ", str(e))
        raise LinAlgError(f"torch.linalg.solve: {batch.group(0) if batch else ''}The solver "
                          f"failed because the input matrix is singular.") from None
    X = F.matmul(A_inv, rhs)
    return F.squeeze(X, -1) if vector else X


@takes_out(check=same_out_dtype, name="linalg_matrix_power")
def matrix_power(A: Tensor, n: int) -> Tensor:
    """A multiplied by itself n times (by squaring; n < 0: of inv(A); 0: the identity)."""
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but "
                           f"they are {A.shape[-2] if A.ndim > 1 else 1} by "
                           f"{A.shape[-1] if A.ndim else 1} matrices")
    if n == 0:
        from .creation import eye

        return F.add(F.mul(A, 0), eye(A.shape[-1], dtype=A.dtype, device=A.device)) \
            if A.dtype.is_floating_point else F.expand(
                F.cast(eye(A.shape[-1], device=A.device), A.dtype), *A.shape)
    base = inv(A) if n < 0 else A
    k = abs(n)
    result: Tensor | None = None
    while k:
        if k & 1:
            result = base if result is None else F.matmul(result, base)
        k >>= 1
        if k:
            base = F.matmul(base, base)
    assert result is not None
    return result


__all__ = ["LinAlgError", "cholesky", "cond", "cross", "det", "eigh", "eigvalsh", "inv",
           "lstsq", "matrix_norm", "matrix_power", "matrix_rank", "multi_dot", "norm", "pinv",
           "qr", "slogdet", "solve", "svd", "svdvals", "vecdot", "vector_norm"]
