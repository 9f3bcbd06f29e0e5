"""``rt.linalg``: PyTorch's linear-algebra names. inv, det, slogdet's log|det| and cholesky
are primitives (``ops.linalg_ops``); solve, matrix_power and the norms are composites of them
and of matmul, so their gradients come from those primitives' formulas."""

from __future__ import annotations

import functools
import math
import re
import warnings
from collections import namedtuple
from collections.abc import Callable
from typing import Any

import numpy as np

from . import _dtype as D
from .amp.policy import autocast_exclude
from .ops import functional as F
from .ops import linalg_ops as L
from .ops import reductions as _red
from .ops.dispatch import apply
from .ops.int_arguments import int_list_error
from .ops.more_ops import diagonal as _diagonal
from .ops.naming import renamed
from .ops.math_ops import (castable_out_dtype, exact_out_dtype, same_out_dtype, takes_out,
                            takes_out_each)
from .ops.shapes import broadcast_shapes, wrap_dim
from .ops.tensor_ops import amin as _amin
from .tensor import Tensor

SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])


def _node_named(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """PyTorch's node name on each output with history (one node of the factorization or
    solve there, the last of a composite here); an output that is an argument, or an out=
    tensor, keeps its own."""
    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def op(*args: Any, **kwargs: Any) -> Any:
            result = fn(*args, **kwargs)
            if kwargs.get("out") is None:
                given = (*args, *kwargs.values())
                for t in result if isinstance(result, tuple) else (result,):
                    if isinstance(t, Tensor) and not any(t is a for a in given):
                        renamed(t, name)
            return result

        return op

    return decorate


def _check_norm_dtype(dtype: Any, input_dtype: D.DType, name: str) -> Any:
    """PyTorch's check of a norm's ``dtype``: a float at least as wide as the input's."""
    if dtype is None:
        return None
    dt = D.as_dtype(dtype)
    if not dt.is_floating_point:
        raise RuntimeError(f"{name}: dtype should be floating point or complex, but got "
                           f"{D.scalar_type_name(dt)}")
    if D.promote(input_dtype, dt) is not dt:
        raise RuntimeError(f"{name}: the dtype of the input ({D.scalar_type_name(input_dtype)}) "
                           f"should be convertible without narrowing to the specified dtype "
                           f"({D.scalar_type_name(dt)})")
    return dt


def _dim_list_checked(fn: Callable[..., Any]) -> Callable[..., Any]:
    """vector_norm's ``dim`` (``int[1]?``, its third parameter) checked as PyTorch's parser."""
    @functools.wraps(fn)
    def op(x: Any, *args: Any, **kwargs: Any) -> Any:
        given, position = (args[1], 3) if len(args) > 1 else (kwargs.get("dim"), None)
        err = None if given is None else int_list_error("linalg_vector_norm", "dim", (given,),
                                                        position)
        if err is not None:
            raise err
        return fn(x, *args, **kwargs)

    return op


@_dim_list_checked
@takes_out(check=same_out_dtype, name="linalg_vector_norm")
def vector_norm(x: Tensor, ord: Any = 2, dim: Any = None, keepdim: bool = False,  # noqa: A002
                *, dtype: Any = None) -> Tensor:
    """(sum |x|^ord)^(1/ord) over ``dim``; ``dtype``: x cast to it first, as PyTorch's (a
    float x, at most as wide)."""
    if isinstance(ord, (str, list, tuple)) or ord is None:
        raise TypeError(f"linalg_vector_norm(): argument 'ord' (position 2) must be Number, not "
                        f"{type(ord).__name__}")
    if dtype is not None:
        if not x.dtype.is_floating_point:
            _red.vector_norm(x, ord, dim, keepdim)  # its error
        x = F.cast(x, _check_norm_dtype(dtype, x.dtype, "linalg.vector_norm"))
    return _red.vector_norm(x, ord, dim, keepdim)


def _two_dims(x: Tensor, dim: Any, name: str) -> tuple[int, int]:
    if x.ndim < 2:
        raise RuntimeError(f"linalg.{name}: The input tensor A must have at least 2 "
                           f"dimensions.")
    d0, d1 = (wrap_dim(d, x.ndim) for d in dim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({d0}, {d1})")
    return d0, d1


@takes_out(check=exact_out_dtype("linalg.matrix_norm expected out tensor dtype {result} but got: "
                                  "{out}"), name="linalg_matrix_norm")
def matrix_norm(A: Tensor, ord: Any = "fro", dim: tuple[int, int] = (-2, -1),  # noqa: A002
                keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """'fro'; the max (min, for -1/-inf) absolute column (1) or row (inf) sum; 'nuc', 2, -2:
    the sum, largest and smallest of the singular values. PyTorch's checks, in its order:
    ord, A (float, at least 2-D; no half for those of the singular values), dim, dtype."""
    if isinstance(ord, str):
        if ord not in ("fro", "nuc"):
            raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
        low_precision = ord != "nuc"
    else:
        if abs(ord) not in (1, 2, math.inf):
            raise RuntimeError(f"linalg.matrix_norm: Order {ord:g} not supported.")
        low_precision = abs(ord) != 2
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    if not A.dtype.is_floating_point:
        raise RuntimeError(f"linalg.matrix_norm: Expected a floating point or complex tensor "
                           f"as input. Got {D.scalar_type_name(A.dtype)}")
    if not low_precision and A.dtype in (D.float16, D.bfloat16):
        raise RuntimeError(f"linalg.matrix_norm: Low precision dtypes not supported. Got "
                           f"{D.scalar_type_name(A.dtype)}")
    dim = tuple(dim)
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got "
                           f"{' '.join(str(d) for d in dim)}")
    d0, d1 = _two_dims(A, dim, "matrix_norm")
    if dtype is not None:
        A = F.cast(A, _check_norm_dtype(dtype, A.dtype, "linalg.matrix_norm"))
    if ord == "fro":
        return _red.vector_norm(A, 2, (d0, d1), keepdim)
    if ord in ("nuc", 2, -2):
        moved = F.permute(A, *[i for i in range(A.ndim) if i not in (d0, d1)], d0, d1)
        s = svdvals(moved)
        out = F.sum(s, -1) if ord == "nuc" else _largest_or_smallest(s, -1, ord > 0, False)
        if keepdim:
            out = F.unsqueeze(F.unsqueeze(out, min(d0, d1)), max(d0, d1))
        return out
    summed, kept = (d0, d1) if ord in (1, -1) else (d1, d0)
    if not keepdim and summed < kept:  # PyTorch's dim after the first reduction, in its error
        kept -= 1
    sums = F.sum(F.abs(A), summed, keepdim=keepdim)
    return _largest_or_smallest(sums, kept, ord > 0, keepdim)


def _largest_or_smallest(x: Tensor, dim: int, largest: bool, keepdim: bool) -> Tensor:
    """PyTorch's amax (amin) of a matrix norm's nonnegative sums or singular values: the amax
    of none is 0 there (its identity among nonnegative numbers); amin's error for none."""
    if not largest:
        return _amin(x, dim, keepdim)
    if x.shape[dim] == 0:
        return F.sum(x, dim, keepdim)
    return F.amax(x, dim, keepdim)


@takes_out(check=exact_out_dtype("linalg.norm expected out tensor dtype {result} but got: {out}"),
           name="linalg_norm")
def norm(input: Tensor, ord: Any = None, dim: Any = None, keepdim: bool = False,  # noqa: A002
         *, dtype: Any = None) -> Tensor:
    """A vector norm (dim an int, or ord None: over dim, all of A flattened by default) or a
    matrix norm (a string ord, dim two ints, or A 2-D with ord given), as PyTorch's."""
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None:
        dim = tuple(dim)
        if len(dim) not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. "
                               f"Got {list(dim)}")
    elif ord is not None and input.ndim not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must "
                           f"be 1D or 2D. Got {input.ndim}D.")
    if isinstance(ord, str) or ord is not None and (
            len(dim) == 2 if dim is not None else input.ndim == 2):
        return matrix_norm(input, ord, dim if dim is not None else (0, 1), keepdim, dtype=dtype)
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
@_node_named("LinalgSlogdetBackward0")
def slogdet(A: Tensor) -> SlogdetResult:
    """(sign, log|det|): the sign of det (with history but no gradient, as PyTorch's) and
    log|det|, each a primitive (no overflow)."""
    L.check_square("slogdet", A)
    return SlogdetResult(apply(L.DET_SIGN, A), apply(L.LOGABSDET, A))


def logdet(A: Tensor) -> Tensor:
    """log det A: NaN where det < 0, -inf where 0, as PyTorch's; NaN for a matrix with a NaN
    (its det's sign is 0 there: it read as det 0)."""
    L.check_low_precision("logdet", A)
    if not A.dtype.is_floating_point or A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        _logdet_error(A)
    sign, logabs = slogdet(A)
    zero = F.logical_and(F.eq(sign, 0), F.eq(logabs, logabs))
    return F.where(F.lt(sign, 0), math.nan, F.where(zero, -math.inf, logabs))


def _logdet_error(A: Tensor) -> None:
    """slogdet's error for A, named logdet as PyTorch's."""
    try:
        L.check_square("slogdet", A)
    except RuntimeError as e:
        raise RuntimeError(str(e).replace("linalg.slogdet:", "logdet:", 1)) from None


EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])


@takes_out_each("linalg_eigh")
@_node_named("LinalgEighBackward0")
def eigh(A: Tensor, UPLO: str = "L") -> EighResult:  # noqa: N803 - PyTorch's name
    """Eigenvalues (ascending) and orthonormal eigenvectors of symmetric matrices, from the
    triangle ``UPLO`` names (either case, as PyTorch's)."""
    if not isinstance(UPLO, str) or UPLO.upper() not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    L.check_square("eigh", A)
    packed = apply(L.EIGH, A, upper=UPLO.upper() == "U")
    return EighResult(F.getitem(packed, (Ellipsis, 0, slice(None))),
                      F.getitem(packed, (Ellipsis, slice(1, None), slice(None))))


@takes_out(check=same_out_dtype, name="linalg_eigvalsh")
def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:  # noqa: N803 - PyTorch's name
    """The eigenvalues of symmetric matrices, ascending."""
    return eigh(A, UPLO).eigenvalues


SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])


@takes_out_each("linalg_svd")
@_node_named("LinalgSvdBackward0")
def svd(A: Tensor, full_matrices: bool = True, *, driver: str | None = None) -> SVDResult:
    """U, S, Vh with A = U diag(S) Vh (S descending); full_matrices: U and Vh square (the
    gradient reads their first min(m, n) columns and rows, as PyTorch's). ``driver`` picks
    a cuSOLVER routine in PyTorch: its error on the CPU, not implemented here on a GPU."""
    _check_matrix("svd", A)
    _check_svd_driver(A, driver)
    m, n = A.shape[-2], A.shape[-1]
    full = bool(full_matrices) and m != n  # square: the same factors
    packed = apply(L.SVD, A, full_matrices=full)
    return SVDResult(*L.unpack_svd(packed, m, n, full))


@takes_out(check=same_out_dtype, name="linalg_svdvals")
def svdvals(A: Tensor, *, driver: str | None = None) -> Tensor:
    """The singular values, descending."""
    return svd(A, full_matrices=False, driver=driver).S


def _check_svd_driver(A: Tensor, driver: str | None) -> None:
    if driver is None:
        return
    if A.device.type == "cpu":
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on "
                           "CUDA inputs with cuSOLVER backend.")
    raise NotImplementedError("torch.linalg.svd: driver= (a cuSOLVER routine) is not "
                              "implemented here; leave it None")


@takes_out(check=castable_out_dtype("linalg.pinv"), name="linalg_pinv")
def pinv(A: Tensor, rcond: float | None = None, hermitian: bool = False, *,
         atol: float | None = None, rtol: float | None = None) -> Tensor:
    """The pseudo-inverse V diag(1/S) U^T, singular values at or below max(atol, rtol *
    S_max) dropped (rtol default: eps * max(m, n), PyTorch's; ``rcond``: its older name of
    rtol); ``hermitian``: from eigh of A's lower triangle, V diag(1/L) V^T over the
    eigenvalues whose size is above the cut. A primitive: its gradient is PyTorch's
    pinv_backward (that of a general A, hermitian too)."""
    if A.ndim < 2 or A.dtype not in (D.float32, D.float64):
        raise RuntimeError(f"linalg.pinv({D.scalar_type_name(A.dtype)}{{{list(A.shape)}}}): "
                           f"expected a tensor with 2 or more dimensions of float, double, "
                           f"cfloat or cdouble types")
    rtol = rcond if rcond is not None else rtol
    if isinstance(atol, Tensor) or isinstance(rtol, Tensor):
        raise NotImplementedError("linalg.pinv: tensor atol/rtol are not supported here; "
                                  "pass numbers")
    rtol = _default_rtol(A, atol, rtol)
    if hermitian:
        L.check_square("eigh", A)
    return apply(L.PINV, A, atol=float(atol or 0.0), rtol=float(rtol), hermitian=bool(hermitian))


def _default_rtol(A: Tensor, atol: Any, rtol: Any) -> Any:
    """PyTorch's rtol of pinv and matrix_rank: eps * max(m, n), or 0 where atol > 0 is given
    (elementwise for a tensor atol)."""
    if rtol is not None:
        return rtol
    default = float(np.finfo(A.dtype.np).eps) * max(A.shape[-2], A.shape[-1])
    if isinstance(atol, Tensor):
        return F.where(F.gt(atol, 0), 0.0, default)
    if atol is not None and atol > 0:
        return 0.0
    return default


def _cutoff(sizes: Tensor, atol: Any, rtol: Any) -> Tensor:
    """max(atol, rtol * the largest size) of each matrix, kept for broadcasting (a tensor
    atol or rtol: one per matrix of the batch)."""
    largest = F.amax(sizes.detach(), -1, keepdim=True) if sizes.shape[-1] else sizes.detach()
    atol, rtol = (F.unsqueeze(t, -1) if isinstance(t, Tensor) else t for t in (atol, rtol))
    return F.maximum(F.mul(largest, rtol), atol if atol is not None else 0.0)


def _check_matrix(name: str, A: Tensor) -> None:
    """PyTorch's checkIsMatrix, then checkFloatingOrComplex, with their texts."""
    if A.ndim < 2:
        raise RuntimeError(f"linalg.{name}: The input tensor A must have at least 2 "
                           f"dimensions.")
    if not A.dtype.is_floating_point:
        raise RuntimeError(f"linalg.{name}: Expected a floating point or complex tensor as "
                           f"input. Got {D.scalar_type_name(A.dtype)}")
    L.check_low_precision(name, A)


QRResult = namedtuple("QRResult", ["Q", "R"])
LstsqResult = namedtuple("LstsqResult", ["solution", "residuals", "rank", "singular_values"])


@takes_out_each("linalg_qr")
@_node_named("LinalgQrBackward0")
def qr(A: Tensor, mode: str = "reduced") -> QRResult:
    """Q with orthonormal columns and upper-triangular R, A = QR ('reduced'; 'r': R only,
    Q empty; 'complete': Q square, R m x n, without a derivative where m > n)."""
    _check_matrix("qr", A)
    if mode not in ("reduced", "r", "complete"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           f"'reduced' (default), 'r', or 'complete'")
    m, n = A.shape[-2], A.shape[-1]
    if mode == "complete" and m > n:
        return _complete_qr(A)
    q, r = L.unpack_qr(apply(L.QR, A.detach() if mode == "r" else A), m, n)
    if mode == "r":  # no gradient: PyTorch's needs Q, which mode 'r' does not return
        from .creation import zeros

        return QRResult(zeros(0, dtype=A.dtype, device=A.device), r)
    return QRResult(q, r)


def _complete_qr(A: Tensor) -> QRResult:
    """The complete QR of a tall A (Q m x m, R m x n) from LAPACK's route, geqrf then orgqr
    of all m columns, so its signs are PyTorch's. No derivative, as PyTorch's."""
    from .ops.composite import no_derivative
    from .ops.tensor_ops import triu

    if not A.dtype.is_floating_point or A.dtype in (D.float16, D.bfloat16):
        raise RuntimeError(f"linalg.qr: Expected a floating point or complex tensor as input. "
                           f"Got {D.scalar_type_name(A.dtype)}")
    a, tau = (Tensor._of(v, device=A.device) for v in _geqrf_host(_host_values(A, "linalg.qr")))
    message = "The QR decomposition is not differentiable when mode='complete' and nrows > ncols."
    q, r = _householder_q(a, tau), triu(a)
    return QRResult(*(no_derivative(t, (A,), RuntimeError, message, "LinalgQrBackward0")
                      for t in (q, r)))


_LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


@autocast_exclude  # as solve
@_node_named("LinalgLstsqBackward0")
def lstsq(A: Tensor, B: Tensor, rcond: float | None = None, *, driver: str | None = None
          ) -> LstsqResult:
    """The least-squares solution X of A X = B by the pseudo-inverse (full-rank A: every
    driver's answer), with what PyTorch's ``driver`` reports beside it: the rank (not for
    'gels'), the singular values ('gelsd', 'gelss') and, for a tall A, the squared residuals
    of each column ('gels'; 'gelsd' and 'gelss' where A has full rank), else empty."""
    from .creation import zeros

    if driver is not None and driver not in _LSTSQ_DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, "
                           "gelsy, gelsd, gelss)")
    driver = driver or "gelsy"
    vector = _lstsq_checks(A, B)
    rhs = F.unsqueeze(B, -1) if vector else B
    pinv_a = pinv(A, rtol=rcond) if rcond is not None else pinv(A)
    X = F.matmul(pinv_a, rhs)
    S = svdvals(A.detach())
    tol = rcond if rcond is not None else float(np.finfo(A.dtype.np).eps) * max(A.shape[-2:])
    largest = _largest_or_smallest(S, -1, True, True)  # 0 for no singular values
    rank = F.sum(F.cast(F.gt(S, F.mul(largest, tol)), D.int64), -1)
    empty = zeros(0, dtype=A.dtype, device=A.device)
    m, n = A.shape[-2], A.shape[-1]
    # an empty residuals has history where the solution has, as PyTorch's (one node)
    residuals = F.reshape(X, (-1,))[:0] if X.requires_grad else empty
    if m > n and (driver == "gels" or driver in ("gelsd", "gelss") and bool(
            np.all(_host_values(rank, "lstsq's residuals") == n))):
        error = F.sub(F.matmul(A, X), rhs)
        residuals = F.sum(F.mul(error, error), -2)  # a vector B's keeps its 1, as torch's
    if driver == "gels":
        rank = zeros(0, dtype=D.int64, device=A.device)
    values = S if driver in ("gelsd", "gelss") else empty
    return LstsqResult(F.squeeze(X, -1) if vector else X, residuals, rank, values)


def _lstsq_checks(A: Tensor, B: Tensor) -> bool:
    """PyTorch's checks of lstsq's A and B, in its order and with its texts; whether B is a
    vector (one dimension less than A)."""
    if A.ndim < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    if B.ndim < 1:
        raise RuntimeError("torch.linalg.lstsq: other must have at least 1 dimension.")
    if A.dtype is not B.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same "
                           f"dtype, but got input's dtype {D.scalar_type_name(A.dtype)} and "
                           f"other's dtype {D.scalar_type_name(B.dtype)}")
    if A.ndim - B.ndim not in (0, 1):
        raise RuntimeError("torch.linalg.lstsq: input.dim() must be greater or equal to "
                           "other.dim() and (input.dim() - other.dim()) <= 1")
    vector = A.ndim - B.ndim == 1
    if A.shape[-2] != B.shape[-1 if vector else -2]:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match "
                           f"other.size({-1 if vector else -2})")
    if A.dtype not in (D.float32, D.float64):
        raise RuntimeError("This function doesn't handle types other than float and double")
    return vector


@takes_out(check=same_out_dtype, name="linalg_cross")
def cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """The cross product of 3-vectors along ``dim`` (last by default)."""
    from .ops.structured import cross as _cross

    return _cross(input, other, dim)


@takes_out(check=exact_out_dtype("linalg.vecdot: Expected out of dtype{result} but found {out}"),
           name="linalg_vecdot")
def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """The dot product of x and y along ``dim`` (broadcast); PyTorch's checks: floating x,
    y of x's dtype."""
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"linalg.vecdot: Expected a floating point or complex tensor as "
                           f"input. Got {D.scalar_type_name(x.dtype)}")
    if x.dtype is not y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found "
                           f"x of type {D.scalar_type_name(x.dtype)} and y of type "
                           f"{D.scalar_type_name(y.dtype)} instead")
    return F.sum(F.mul(x, y), dim)


@takes_out(check=lambda out, result: _multi_dot_out_dtype(out, result), name="linalg_multi_dot")
def multi_dot(tensors: list[Tensor]) -> Tensor:
    """The product of the matrices in order (first may be 1-D: a row; last: a column)."""
    _check_multi_dot(tensors)
    out = tensors[0]
    for t in tensors[1:]:
        out = F.matmul(out, t)
    return out


def _matrix_power_out_dtype(out: Tensor, result: Tensor) -> None:
    """PyTorch's matrix_power out=: safely castable (its text), then of the very dtype."""
    castable_out_dtype("matrix_power")(out, result)
    same_out_dtype(out, result)


def _multi_dot_out_dtype(out: Tensor, result: Tensor) -> None:
    if out.dtype is not result.dtype:
        raise RuntimeError(f"multi_dot(): expected out tensor to have dtype "
                           f"{D.type_meta_name(result.dtype)} but got "
                           f"{D.type_meta_name(out.dtype)}")


def _check_multi_dot(tensors: list[Tensor]) -> None:
    """PyTorch's checks of multi_dot, in its order and with its texts: at least two
    tensors, the first and last 1-D or 2-D, the middle ones 2-D, one dtype, sizes that
    chain."""
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    for which, t in (("first", tensors[0]), ("last", tensors[-1])):
        if t.ndim not in (1, 2):
            raise RuntimeError(f"multi_dot(): the {which} tensor must be 1D or 2D but got "
                               f"{t.ndim}D")
    for i in range(1, n - 1):
        if tensors[i].ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {tensors[i].ndim}D")
    first = tensors[0].dtype
    for i in range(1, n):
        t, prev = tensors[i], tensors[i - 1]
        if t.dtype is not first:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but "
                               f"tensor 0 is {D.type_meta_name(first)} and tensor {i} "
                               f"{D.type_meta_name(t.dtype)}")
        if prev.shape[-1] != t.shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i - 1} and {i} with shapes "
                               f"{list(prev.shape)} and {list(t.shape)} cannot be multiplied")


@takes_out(check=castable_out_dtype("linalg.matrix_rank"), name="linalg_matrix_rank")
def matrix_rank(A: Tensor, tol: Any = None, hermitian: bool = False, *, atol: Any = None,
                rtol: Any = None) -> Tensor:
    """The number of singular values above max(atol, rtol * S_max) (rtol default: eps *
    max(m, n), PyTorch's; ``tol``: its older atol, with rtol 0; a tensor atol or rtol: one
    per matrix); ``hermitian``: of the eigenvalues' sizes (A's lower triangle)."""
    if A.ndim < 2:
        raise RuntimeError("torch.linalg.matrix_rank: The input tensor input must have at "
                           "least 2 dimensions.")
    if A.dtype not in (D.float32, D.float64):
        raise RuntimeError("This function doesn't handle types other than float and double")
    if tol is not None:
        atol, rtol = tol, 0.0
    rtol = _default_rtol(A, atol, rtol)
    S = F.abs(eigvalsh(A.detach())) if hermitian else svdvals(A.detach())
    return F.sum(F.cast(F.gt(S, _cutoff(S, atol, rtol)), D.int64), -1)


@takes_out(check=castable_out_dtype("linalg.cond"), name="linalg_cond")
def cond(A: Tensor, p: Any = None) -> Tensor:
    """The condition number, as PyTorch's (its checks in its order): S_max / S_min (p None or
    2; S_min / S_max for -2), the nuclear norms' product from the singular values ('nuc'),
    otherwise matrix_norm(A, p) * matrix_norm(inv(A), p), inf for a singular A; 0 for
    matrices of no elements."""
    if isinstance(p, str):
        L.check_square(f"cond(ord={p})", A)
        _check_cond_ord(p)
    else:
        if A.ndim < 2:
            raise RuntimeError("linalg.cond: The input tensor must have at least 2 dimensions.")
        p = 2 if p is None else p
        _check_cond_ord(p)
        if abs(p) != 2:
            L.check_square(f"cond(ord={_cond_ord_text(p)})", A)
    if A.numel() == 0:
        from .creation import zeros

        return zeros(tuple(A.shape[:-2]), dtype=A.dtype, device=A.device)
    if p in ("nuc", 2, -2):  # nuc not through inv: a matrix_norm of inf raises
        S = svdvals(A)
        if p == "nuc":
            return F.mul(F.sum(S, -1), F.sum(S.reciprocal(), -1))
        big, small = F.getitem(S, (Ellipsis, 0)), F.getitem(S, (Ellipsis, -1))
        return F.div(small, big) if p == -2 else F.div(big, small)
    inverse, info = inv_ex(A)
    inverse = F.where(F.unsqueeze(F.unsqueeze(F.gt(info, 0), -1), -1), math.inf, inverse)
    product = F.mul(matrix_norm(A, p), matrix_norm(inverse, p))
    return product.nan_to_num(math.inf, math.inf, -math.inf)  # 0 * inf: NumPy's inf


def _check_cond_ord(p: Any) -> None:
    if p not in ("fro", "nuc") if isinstance(p, str) else abs(p) not in (1, 2, math.inf):
        raise RuntimeError(f"linalg.cond got an invalid norm type: "
                           f"{p if isinstance(p, str) else format(p, 'g')}")


def _cond_ord_text(p: Any) -> str:
    """PyTorch's std::to_string of cond's ord in its errors: -1, -1.000000, inf, fro."""
    if isinstance(p, float) and math.isfinite(p):
        return f"{p:.6f}"
    return str(p)


@takes_out(check=same_out_dtype, name="linalg_cholesky")
def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """The lower Cholesky factor L (A = L L^T); ``upper``: its transpose."""
    L.check_square("cholesky", A)
    out = apply(L.CHOLESKY, A)
    return F.transpose(out, -1, -2) if upper else out


@takes_out(check=same_out_dtype, name="linalg_solve")
@autocast_exclude  # PyTorch's runs in its inputs' dtype (its products are not lowered)
@_node_named("LinalgSolveExBackward0")
def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """X with A X = B (``left`` False: X A = B); B a vector where its shape says so, as
    PyTorch's (B 1-D, or B with one dimension less than A and A's batch)."""
    vector = _solve_checks(A, B, left)
    if not left:
        return F.transpose(solve(F.transpose(A, -1, -2), F.transpose(B, -1, -2)), -1, -2)
    rhs = F.unsqueeze(B, -1) if vector else B
    try:
        A_inv = inv(A)
    except LinAlgError as e:  # PyTorch's text: its solver names itself, not the inverse
        batch = re.search(r"\(Batch element \d+\): ", str(e))
        raise LinAlgError(f"torch.linalg.solve: {batch.group(0) if batch else ''}The solver "
                          f"failed because the input matrix is singular.") from None
    X = F.matmul(A_inv, rhs)
    return F.squeeze(X, -1) if vector else X


def _solve_checks(A: Tensor, B: Tensor, left: bool) -> bool:
    """PyTorch's checks of linalg.solve(_ex), in its order and with its texts (A floating,
    A and B of one dtype, A square, B a matrix of A's size, B's batch broadcasting against
    A's); whether B is a vector (1-D, or A's batch of them)."""
    if not A.dtype.is_floating_point or A.dtype is D.float16:
        L.check_square("solve", A)  # its dtype error
    if A.dtype is not B.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found "
                           f"A of type {D.scalar_type_name(A.dtype)} and B of type "
                           f"{D.scalar_type_name(B.dtype)} instead")
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    rhs = (*B.shape, 1) if vector else tuple(B.shape)
    L.check_square("solve", A)
    if len(rhs) < 2:
        raise RuntimeError("linalg.solve: The input tensor B must have at least 2 dimensions.")
    if A.shape[-2 if left else -1] != rhs[-2 if left else -1]:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({A.shape[-2]}x{A.shape[-1]} and "
                           f"{rhs[-2]}x{rhs[-1]})")
    broadcast_shapes(rhs[:-2], tuple(A.shape[:-2]))  # its error names B's batch first
    if not left and vector:
        raise RuntimeError("linalg.solve: Vector broadcasting of the left hand side is not "
                           "supported for left=False. In this case linalg.solve is equivalent "
                           "to B / A.squeeze(-1)")
    return vector


@takes_out(check=lambda out, result: _matrix_power_out_dtype(out, result),
           name="linalg_matrix_power")
def matrix_power(A: Tensor, n: int) -> Tensor:
    """A multiplied by itself n times (by squaring; n < 0: of inv(A); 0: the identity)."""
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_power: The input tensor A must have at least 2 "
                           "dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but "
                           f"they are {A.shape[-2]} by {A.shape[-1]} matrices")
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


# ---- triangular solves and LU --------------------------------------------------------------

@takes_out(check=same_out_dtype, name="linalg_solve_triangular")
def solve_triangular(A: Tensor, B: Tensor, *, upper: bool | None = None, left: bool = True,
                     unitriangular: bool = False) -> Tensor:
    """X with A X = B (``left`` False: X A = B) for triangular A, only its ``upper`` or lower
    triangle read (``unitriangular``: its diagonal taken as ones); batch axes broadcast, a
    zero on the diagonal gives inf and NaN, as PyTorch's. ``upper`` is required (PyTorch's
    parser's text where it is missing)."""
    if upper is None:
        raise TypeError('linalg_solve_triangular() missing 1 required positional arguments: '
                        '"upper"')
    L.check_solve_triangular(A, B, left)
    if B.dtype is not A.dtype:  # PyTorch's result is in A's dtype (its shape rule's too)
        B = F.cast(B, A.dtype)
    return apply(L.SOLVE_TRIANGULAR, A, B, upper=bool(upper), left=bool(left),
                 unitriangular=bool(unitriangular))


LUFactorResult = namedtuple("LUFactorResult", ["LU", "pivots"])
LUFactorExResult = namedtuple("LUFactorExResult", ["LU", "pivots", "info"])
LUResult = namedtuple("LUResult", ["P", "L", "U"])
SolveExResult = namedtuple("SolveExResult", ["result", "info"])
InvExResult = namedtuple("InvExResult", ["inverse", "info"])
CholeskyExResult = namedtuple("CholeskyExResult", ["L", "info"])


def _check_pivot(A: Tensor, pivot: bool) -> None:
    """PyTorch's refusal of an LU without pivoting on the CPU; on a GPU, where PyTorch has
    one, this runtime factors on the host, which has none either."""
    if not pivot:
        where = "the CPU" if A.device == "cpu" else "the host, where this runtime factors"
        raise RuntimeError(f"linalg.lu_factor: LU without pivoting is not implemented on "
                           f"{where}")


def _lu_info(lu: Tensor) -> Tensor:
    """LAPACK getrf's info of packed factors: the 1-based index of U's first zero diagonal
    element, 0 where none (int32, one per matrix)."""
    diag = _diagonal(lu, 0, -2, -1)
    zero = F.cast(F.eq(diag, 0), D.int32)
    if diag.shape[-1] == 0:
        return F.cast(F.sum(zero, -1), D.int32)
    first = F.add(F.cast(F.argmax(zero, -1), D.int32), 1)
    return F.cast(F.mul(first, F.amax(zero, -1)), D.int32)


def _host_values(t: Tensor, what: str) -> np.ndarray:
    """t's values on the host, for a check that reads them (not capturable)."""
    from .tracing import GraphBreak, active_tracer

    if active_tracer() is not None:
        raise GraphBreak(f"{what} inside a captured step")
    return np.asarray(t.detach().cpu().numpy())


def _raise_at_info(info: Tensor, message: Callable[[int], str], name: str,
                   error: type[Exception] = LinAlgError) -> None:
    """PyTorch's error for the first matrix whose info is not 0 (``message(info)``, after
    "(Batch element i): " for a batch)."""
    values = _host_values(info, name).reshape(-1)
    bad = np.flatnonzero(values)
    if bad.size:
        i = int(bad[0])
        batch = f"(Batch element {i}): " if info.ndim else ""
        raise error(f"{name}: {batch}{message(int(values[i]))}")


def _lu_singular(k: int) -> str:
    return (f"U[{k},{k}] is zero and using it on lu_solve would result in a division by zero. "
            f"If you still want to perform the factorization, consider calling "
            f"linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")


@takes_out_each("linalg_lu_factor_ex")
@_node_named("LinalgLuFactorExBackward0")
def lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False
                 ) -> LUFactorExResult:
    """LAPACK's LU with partial pivoting, A = P L U: the factors packed in one matrix (L's
    unit diagonal implied), 1-based int32 pivots and getrf's info (0, or the index of U's
    first zero diagonal element; ``check_errors``: that is an error)."""
    _check_pivot(A, pivot)
    L.check_lu_factor(A)
    lu, pivots = L.unpack_lu_factor(apply(L.LU_FACTOR, A))
    info = _lu_info(lu.detach())
    if check_errors:
        _raise_at_info(info, _lu_singular, "torch.linalg.lu_factor_ex", RuntimeError)
    return LUFactorExResult(lu, F.cast(pivots.detach(), D.int32), info)


@takes_out_each("linalg_lu_factor")
def lu_factor(A: Tensor, *, pivot: bool = True) -> LUFactorResult:
    """``lu_factor_ex``'s factors and pivots; a singular U is PyTorch's error."""
    lu, pivots, info = lu_factor_ex(A, pivot=pivot)
    _raise_at_info(info, _lu_singular, "torch.linalg.lu_factor",
                   RuntimeError)
    return LUFactorResult(lu, pivots)


@takes_out_each("linalg_lu")
@_node_named("LinalgLuBackward0")
def lu(A: Tensor, *, pivot: bool = True) -> LUResult:
    """P, L, U with A = P L U (L unit lower m x k, U upper k x n, k = min(m, n)); the
    gradient is PyTorch's linalg_lu_backward (through the factorization's)."""
    _check_pivot(A, pivot)
    L.check_lu_factor(A)
    lu_, pivots = L.unpack_lu_factor(apply(L.LU_FACTOR, A))
    return LUResult(*L.unpack_lu(lu_, pivots))


def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True,  # noqa: N803
              unpack_pivots: bool = True, *, out: Any = None) -> LUResult:
    """P, L, U of ``lu_factor``'s packed factors and pivots (empty tensors for what is not
    unpacked), as torch.lu_unpack."""
    from .creation import zeros

    if LU_pivots.dtype is not D.int32:
        raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor "
                           "of torch.int32 dtype.\nNote: this function is intended to be used "
                           "with the output produced by torch.linalg.lu_factor")
    p, lower, upper = L.unpack_lu(LU_data, LU_pivots, unpack_data, unpack_pivots)
    empty = zeros(0, dtype=LU_data.dtype, device=LU_data.device)
    result = LUResult(p if p is not None else empty, lower if lower is not None else empty,
                      upper if upper is not None else empty)
    return F.written_to_each(out, result, "lu_unpack") if out is not None else result


def _check_lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, left: bool) -> None:  # noqa: N803
    if B.ndim < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor B must have at least 2 "
                           "dimensions.")
    if LU.ndim < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor LU must have at least 2 "
                           "dimensions.")
    if LU.shape[-1] != LU.shape[-2]:
        raise RuntimeError(f"linalg.lu_solve: A must be batches of square matrices, but they "
                           f"are {LU.shape[-2]} by {LU.shape[-1]} matrices")
    n = LU.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation "
                           f"{'AX' if left else 'XA'} = B ({n}x{n} and {B.shape[-2]}x"
                           f"{B.shape[-1]})")
    if pivots.dtype is not D.int32:
        raise RuntimeError("linalg.lu_solve: pivots should be a Tensor of scalar type "
                           "torch.int32")
    if LU.dtype is not B.dtype:
        raise RuntimeError(f"linalg.lu_solve: Expected LU and B to have the same dtype, but "
                           f"found LU of type {D.scalar_type_name(LU.dtype)} and B of type "
                           f"{D.scalar_type_name(B.dtype)} instead")
    if pivots.ndim == 0 or pivots.shape[-1] != n:
        raise RuntimeError("linalg.lu_solve: Number of pivots per batch should be same as the "
                           "dimension of the matrix")
    if tuple(pivots.shape) != tuple(LU.shape[:-1]):
        raise RuntimeError(f"linalg.lu_solve: Expected LU.shape[:-1] and pivots.shape to be the "
                           f"same, but got pivots with shape {list(pivots.shape)} instead")


@takes_out(check=same_out_dtype, name="linalg_lu_solve")
@_node_named("LinalgLuSolveBackward0")
def lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True,  # noqa: N803
             adjoint: bool = False) -> Tensor:
    """X with A X = B (``left`` False: X A = B; ``adjoint``: A^T in place of A) for A = P L U
    given by ``lu_factor``: two triangular solves and the permutation, so the gradient
    reaches LU and B through theirs."""
    _check_lu_solve(LU, pivots, B, left)
    P = apply(L.LU_PERMUTATION, F.cast(pivots, LU.dtype), rows=LU.shape[-1])

    def tri(a: Tensor, b: Tensor, up: bool, side: bool, unit: bool = False) -> Tensor:
        return apply(L.SOLVE_TRIANGULAR, a, b, upper=up, left=side, unitriangular=unit)

    lu_t = F.transpose(LU, -1, -2)
    if left and not adjoint:  # U^-1 L^-1 P^T B
        X = F.matmul(F.transpose(P, -1, -2), B)
        return tri(LU, tri(LU, X, False, True, True), True, True)
    if left:  # A^T = U^T L^T P^T: P L^-T U^-T B
        return F.matmul(P, tri(lu_t, tri(lu_t, B, False, True), True, True, True))
    if not adjoint:  # B U^-1 L^-1 P^T
        X = tri(LU, tri(LU, B, True, False), False, False, True)
        return F.matmul(X, F.transpose(P, -1, -2))
    # X P L^T... : X A^T = B, A^T = U^T L^T P^T: B P L^-T U^-T
    X = F.matmul(B, P)
    return tri(lu_t, tri(lu_t, X, True, False, True), False, False)


@takes_out_each("linalg_solve_ex")
@_node_named("LinalgSolveExBackward0")
def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False
             ) -> SolveExResult:
    """``solve``'s X through LAPACK's route (LU, then its solves) and getrf's info: a
    singular A gives inf and NaN and a nonzero info, PyTorch's error with ``check_errors``."""
    vector = _solve_checks(A, B, left)
    if not left:
        result, info = solve_ex(F.transpose(A, -1, -2), F.transpose(B, -1, -2),
                                check_errors=check_errors)
        return SolveExResult(F.transpose(result, -1, -2), info)
    rhs = F.unsqueeze(B, -1) if vector else B
    lu_, pivots, info = lu_factor_ex(A)
    if check_errors:
        _raise_at_info(info, lambda k: "The solver failed because the input matrix is "
                       "singular.", "torch.linalg.solve_ex")
    batch = tuple(np.broadcast_shapes(tuple(lu_.shape[:-2]), tuple(rhs.shape[:-2])))
    n = lu_.shape[-1]
    X = lu_solve(F.expand(lu_, *batch, n, n), F.expand(pivots, *batch, n), F.expand(
        rhs, *batch, *rhs.shape[-2:]))
    return SolveExResult(F.squeeze(X, -1) if vector else X, info)


@takes_out_each("linalg_inv_ex")
@_node_named("LinalgInvExBackward0")
def inv_ex(A: Tensor, *, check_errors: bool = False) -> InvExResult:
    """The inverse through LAPACK's route (LU, then solves on the identity) and getrf's info:
    a singular A gives inf and NaN and a nonzero info, PyTorch's error with
    ``check_errors``."""
    from .creation import eye

    L.check_square("inv", A)
    lu_, pivots, info = lu_factor_ex(A)
    if check_errors:
        _raise_at_info(info, lambda k: f"The diagonal element {k} is zero, the inversion could "
                       f"not be completed because the input matrix is singular.",
                       "linalg.inv_ex")
    ident = F.expand(eye(A.shape[-1], dtype=A.dtype, device=A.device), *A.shape)
    return InvExResult(lu_solve(lu_, pivots, ident), info)


def _potf2(a: np.ndarray) -> tuple[np.ndarray, int]:
    """LAPACK potf2's lower Cholesky of one matrix, left-looking, stopping at the first pivot
    that is not positive (stored there, the rest of the input's lower triangle kept): the
    factor and info (0, or that pivot's 1-based order)."""
    out = np.tril(a).astype(a.dtype)
    for j in range(a.shape[-1]):
        ajj = out[j, j] - out[j, :j] @ out[j, :j]
        if not ajj > 0:
            out[j, j] = ajj
            return out, j + 1
        out[j, j] = np.sqrt(ajj)
        out[j + 1:, j] = (out[j + 1:, j] - out[j + 1:, :j] @ out[j, :j]) / out[j, j]
    return out, 0


def _positive_definite(values: np.ndarray) -> bool:
    """Whether every matrix has a Cholesky factor (LAPACK's, without a NaN)."""
    try:
        with np.errstate(invalid="ignore"):
            return not np.isnan(np.linalg.cholesky(values)).any()
    except np.linalg.LinAlgError:
        return False


@takes_out_each("linalg_cholesky_ex")
def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False
                ) -> CholeskyExResult:
    """``cholesky``'s factor and potrf's info (0, or the order of the first leading minor that
    is not positive-definite): a matrix that is not gives LAPACK's partial factor (no
    gradient) and its info, PyTorch's error with ``check_errors``."""
    L.check_square("cholesky", A)
    values = _host_values(A, "cholesky_ex")
    batch = values.shape[:-2]
    factors = np.empty_like(values)
    infos = np.zeros(batch, np.int32)
    if not _positive_definite(values):  # LAPACK's partial factors, one matrix at a time
        for index in np.ndindex(*batch):
            factors[index], infos[index] = _potf2(values[index])
    info = Tensor._of(infos, device=A.device)
    if check_errors:
        _raise_at_info(info, lambda k: f"The factorization could not be completed because the "
                       f"input is not positive-definite (the leading minor of order {k} is not "
                       f"positive-definite).", "linalg.cholesky_ex")
    if not infos.any():
        return CholeskyExResult(cholesky(A, upper=upper), info)
    factor = Tensor._of(factors, device=A.device)
    return CholeskyExResult(F.transpose(factor, -1, -2) if upper else factor, info)


def matrix_exp(A: Tensor) -> Tensor:
    """exp(A) = sum A^k / k! of each square matrix (scaling and squaring of a Pade
    approximant); its gradient is PyTorch's block-matrix formula."""
    L.check_matrix_exp(A)
    return apply(L.MATRIX_EXP, A)


# ---- Householder products -------------------------------------------------------------------

def _reflectors(A: Tensor, k: int) -> Tensor:
    """The Householder vectors v_i of LAPACK's compact form, as columns: below the diagonal
    of A's first k columns, 1 on it, 0 above."""
    from .creation import eye
    from .ops.tensor_ops import tril

    m = A.shape[-2]
    return F.add(tril(F.getitem(A, (Ellipsis, slice(None), slice(0, k))), -1),
                 eye(m, k, dtype=A.dtype, device=A.device))


def _householder_q(A: Tensor, tau: Tensor) -> Tensor:
    """The m x m product H_1 ... H_k, H_i = I - tau_i v_i v_i^T (composite: its gradient
    comes from matmul's)."""
    from .creation import eye

    m, k = A.shape[-2], tau.shape[-1]
    V = _reflectors(A, k)
    Q = F.add(F.mul(F.sum(A, (-2, -1), keepdim=True), 0.0),
              eye(m, dtype=A.dtype, device=A.device)) if A.ndim > 2 else eye(
        m, dtype=A.dtype, device=A.device)
    for i in range(k):
        v = F.getitem(V, (Ellipsis, slice(None), slice(i, i + 1)))
        t = F.unsqueeze(F.unsqueeze(F.getitem(tau, (Ellipsis, i)), -1), -1)
        Q = F.sub(Q, F.matmul(F.mul(F.matmul(Q, v), t), F.transpose(v, -1, -2)))
    return Q


def _check_householder(A: Tensor, tau: Tensor, name: str) -> None:
    if A.ndim < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if A.shape[-2] < A.shape[-1]:
        raise RuntimeError(f"{name}: input.shape[-2] must be greater than or equal to "
                           f"input.shape[-1]")
    if tau.ndim == 0:  # PyTorch reads tau.size(-1) next
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    if A.shape[-1] < tau.shape[-1]:
        raise RuntimeError(f"{name}: input.shape[-1] must be greater than or equal to "
                           f"tau.shape[-1]")
    if tau.ndim != A.ndim - 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but "
                           f"got tau.ndim equal to {tau.ndim} and input.ndim is equal to "
                           f"{A.ndim}")
    if tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(f"{name}: Expected batch dimensions of tau to be equal to "
                           f"input.shape[:-2], but got {list(tau.shape[:-1])}")
    if tau.dtype is not A.dtype:
        raise RuntimeError(f"{name}: tau dtype {D.scalar_type_name(tau.dtype)} does not match "
                           f"input dtype {D.scalar_type_name(A.dtype)}")
    if not A.dtype.is_floating_point:
        raise NotImplementedError(f"\"orgqr_cpu\" not implemented for "
                                  f"'{D.scalar_type_name(A.dtype)}'")


@takes_out(check=castable_out_dtype("torch.linalg.householder_product"), name="linalg_householder_product")
@_node_named("LinalgHouseholderProductBackward0")
def householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """The first n columns of H_1 ... H_k (LAPACK's orgqr): Q of ``geqrf``'s compact QR."""
    _check_householder(A, tau, "torch.linalg.householder_product")
    Q = _householder_q(A, tau)
    return F.getitem(Q, (Ellipsis, slice(None), slice(0, A.shape[-1])))


# ---- LDL^T (Bunch-Kaufman) -------------------------------------------------------------------

LDLFactorResult = namedtuple("LDLFactorResult", ["LD", "pivots"])
LDLFactorExResult = namedtuple("LDLFactorExResult", ["LD", "pivots", "info"])

_BUNCH_KAUFMAN_ALPHA = (1.0 + math.sqrt(17.0)) / 8.0


def _sytf2_pivot(a: np.ndarray, k: int) -> tuple[int, int]:
    """Bunch-Kaufman's choice at column k of the (lower) working matrix: the row to swap in
    and the block size (1 or 2), or (-1, 1) for a zero column (LAPACK sytf2)."""
    n = a.shape[0]
    absakk = abs(a[k, k])
    imax, colmax = k, 0.0
    if k < n - 1:
        imax = k + 1 + int(np.argmax(np.abs(a[k + 1:, k])))
        colmax = abs(a[imax, k])
    if max(absakk, colmax) == 0 or np.isnan(absakk):
        return -1, 1
    if absakk >= _BUNCH_KAUFMAN_ALPHA * colmax:
        return k, 1
    rowmax = float(np.abs(a[imax, k:imax]).max())
    if imax < n - 1:
        rowmax = max(rowmax, float(np.abs(a[imax + 1:, imax]).max()))
    if absakk >= _BUNCH_KAUFMAN_ALPHA * colmax * (colmax / rowmax):
        return k, 1
    if abs(a[imax, imax]) >= _BUNCH_KAUFMAN_ALPHA * rowmax:
        return imax, 1
    return imax, 2


def _sytf2_swap(a: np.ndarray, k: int, kk: int, kp: int, kstep: int) -> None:
    """Rows and columns kk and kp of the trailing lower triangle interchanged."""
    a[kp + 1:, [kk, kp]] = a[kp + 1:, [kp, kk]]
    between = a[kk + 1:kp, kk].copy()
    a[kk + 1:kp, kk] = a[kp, kk + 1:kp]
    a[kp, kk + 1:kp] = between
    a[kk, kk], a[kp, kp] = a[kp, kp], a[kk, kk]
    if kstep == 2:
        a[k + 1, k], a[kp, k] = a[kp, k], a[k + 1, k]


def _sytf2(m: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """LAPACK sytf2's lower Bunch-Kaufman factorization P A P^T = L D L^T of one symmetric
    matrix (its lower triangle read): L below D's 1x1 and 2x2 blocks, the 1-based pivots
    (negative for a 2x2 block), info (the first zero 1x1 pivot, 0 if none)."""
    a = np.tril(m).astype(np.float64)
    n = a.shape[0]
    pivots = np.zeros(n, np.int32)
    info, k = 0, 0
    while k < n:
        kp, kstep = _sytf2_pivot(a, k)
        if kp < 0:
            info = info or k + 1
            pivots[k] = k + 1
            k += 1
            continue
        if kp != k + kstep - 1:
            _sytf2_swap(a, k, k + kstep - 1, kp, kstep)
        if kstep == 1:
            d11 = 1.0 / a[k, k]
            x = a[k + 1:, k].copy()
            a[k + 1:, k + 1:] -= np.tril(np.outer(x, x * d11))
            a[k + 1:, k] = x * d11
            pivots[k] = kp + 1
        else:
            if k < n - 2:
                d21 = a[k + 1, k]
                d11, d22 = a[k + 1, k + 1] / d21, a[k, k] / d21
                d21 = 1.0 / (d11 * d22 - 1.0) / d21
                ck, ck1 = a[k + 2:, k].copy(), a[k + 2:, k + 1].copy()
                wk, wkp1 = d21 * (d11 * ck - ck1), d21 * (d22 * ck1 - ck)
                a[k + 2:, k + 2:] -= np.tril(np.outer(ck, wk) + np.outer(ck1, wkp1))
                a[k + 2:, k], a[k + 2:, k + 1] = wk, wkp1
            pivots[k] = pivots[k + 1] = -(kp + 1)
        k += kstep
    return a.astype(m.dtype), pivots, info


def _sytrs(ld: np.ndarray, pivots: np.ndarray, b: np.ndarray) -> np.ndarray:
    """LAPACK sytrs (lower): X with A X = B from sytf2's factors, by L D (then L^T) solved
    with the pivots' interchanges in turn."""
    x = b.astype(np.float64, copy=True)
    n = ld.shape[0]
    k = 0
    while k < n:  # L D Y = P B
        if pivots[k] > 0:
            kp = pivots[k] - 1
            x[[k, kp]] = x[[kp, k]]
            x[k + 1:] -= np.outer(ld[k + 1:, k], x[k])
            x[k] /= ld[k, k]
            k += 1
            continue
        kp = -pivots[k] - 1
        x[[k + 1, kp]] = x[[kp, k + 1]]
        x[k + 2:] -= np.outer(ld[k + 2:, k], x[k]) + np.outer(ld[k + 2:, k + 1], x[k + 1])
        akm1k = ld[k + 1, k]
        akm1, ak = ld[k, k] / akm1k, ld[k + 1, k + 1] / akm1k
        denom = akm1 * ak - 1.0
        bkm1, bk = x[k] / akm1k, x[k + 1] / akm1k
        x[k], x[k + 1] = (ak * bkm1 - bk) / denom, (akm1 * bk - bkm1) / denom
        k += 2
    k = n - 1
    while k >= 0:  # L^T P^T X = Y
        if pivots[k] > 0:
            x[k] -= ld[k + 1:, k] @ x[k + 1:]
            kp = pivots[k] - 1
            x[[k, kp]] = x[[kp, k]]
            k -= 1
            continue
        x[k] -= ld[k + 1:, k] @ x[k + 1:]
        x[k - 1] -= ld[k + 1:, k - 1] @ x[k + 1:]
        kp = -pivots[k] - 1
        x[[k, kp]] = x[[kp, k]]
        k -= 2
    return x.astype(b.dtype)


def _check_ldl(A: Tensor, name: str) -> None:
    if A.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    if not A.dtype.is_floating_point or A.dtype in (D.float16, D.bfloat16):
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{D.scalar_type_name(A.dtype)}")


@takes_out_each("linalg_ldl_factor_ex")
def ldl_factor_ex(A: Tensor, *, hermitian: bool = False, check_errors: bool = False
                  ) -> LDLFactorExResult:
    """LAPACK sytrf's Bunch-Kaufman LDL^T of symmetric A (its lower triangle read): L and D
    packed (D's 1x1 and 2x2 blocks on and beside the diagonal), 1-based int32 pivots (a 2x2
    block's pair negative) and info (the first exactly zero pivot of D). Real: ``hermitian``
    changes nothing. No derivative, as PyTorch's."""
    from .ops.composite import no_derivative

    _check_ldl(A, "torch.linalg.ldl_factor_ex")
    values = _host_values(A, "ldl_factor")
    batch = values.shape[:-2]
    ld, pivots = np.empty_like(values), np.empty(values.shape[:-1], np.int32)
    infos = np.zeros(batch, np.int32)
    for index in np.ndindex(*batch):
        ld[index], pivots[index], infos[index] = _sytf2(values[index])
    info = Tensor._of(infos, device=A.device)
    if check_errors:
        _raise_at_info(info, _ldl_singular, "torch.linalg.ldl_factor_ex", RuntimeError)
    packed = no_derivative(Tensor._of(ld, device=A.device), (A,), RuntimeError,
                           "derivative for aten::linalg_ldl_factor_ex is not implemented")
    return LDLFactorExResult(packed, Tensor._of(pivots, device=A.device), info)


def _ldl_singular(k: int) -> str:
    return (f"D[{k},{k}] is zero and using it on ldl_solve would result in a division by zero. "
            f"If you still want to perform the factorization, consider calling "
            f"linalg.ldl_factor_ex(A)")


@takes_out_each("linalg_ldl_factor")
def ldl_factor(A: Tensor, *, hermitian: bool = False) -> LDLFactorResult:
    """``ldl_factor_ex``'s factors and pivots; an exactly singular D is an error (PyTorch
    2.13's is an internal assertion)."""
    LD, pivots, info = ldl_factor_ex(A, hermitian=hermitian)  # noqa: N806
    _raise_at_info(info, _ldl_singular, "torch.linalg.ldl_factor", RuntimeError)
    return LDLFactorResult(LD, pivots)


@takes_out(check=same_out_dtype, name="linalg_ldl_solve")
def ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False  # noqa: N803
              ) -> Tensor:
    """X with A X = B from ``ldl_factor``'s LD and pivots (LAPACK sytrs), batch axes
    broadcast. No derivative, as PyTorch's."""
    from .ops.composite import no_derivative

    if B.dtype is not LD.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{D.scalar_type_name(B.dtype)} and A of type "
                           f"{D.scalar_type_name(LD.dtype)} instead.")
    if B.ndim < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [-{B.ndim}, "
                         f"{B.ndim - 1}], but got -2)")
    _check_ldl(LD, "torch.linalg.ldl_solve")
    if pivots.dtype.is_floating_point or pivots.dtype is D.bool_:
        raise RuntimeError(f"torch.linalg.ldl_solve: Expected pivots to be integers. Got "
                           f"{D.scalar_type_name(pivots.dtype)}")
    if tuple(pivots.shape) != tuple(LD.shape[:-1]):
        raise RuntimeError(f"torch.linalg.ldl_solve: Expected LD.shape[:-1] and pivots.shape "
                           f"to be the same, but got pivots with shape {list(pivots.shape)} "
                           f"instead")
    n = LD.shape[-1]
    if B.shape[-2] != n:
        raise RuntimeError(f"Incompatible matrix sizes for torch.linalg.ldl_solve: each A "
                           f"matrix is {n} by {n} but each b matrix is {B.shape[-2]} by "
                           f"{B.shape[-1]}")
    ld, piv = _host_values(LD, "ldl_solve"), _host_values(pivots, "ldl_solve")
    b = _host_values(B, "ldl_solve")
    batch = np.broadcast_shapes(ld.shape[:-2], b.shape[:-2])
    ld = np.broadcast_to(ld, (*batch, n, n))
    piv = np.broadcast_to(piv, (*batch, n))
    b = np.broadcast_to(b, (*batch, *b.shape[-2:]))
    x = np.empty(b.shape, b.dtype)
    for index in np.ndindex(*batch):
        x[index] = _sytrs(ld[index], piv[index], b[index])
    return no_derivative(Tensor._of(x, device=B.device), (LD, B), RuntimeError,
                         "derivative for aten::linalg_ldl_solve is not implemented")


# ---- tensors as matrices, Vandermonde, aliases -----------------------------------------------

@takes_out(check=same_out_dtype, name="linalg_tensorinv")
def tensorinv(A: Tensor, ind: int = 2) -> Tensor:
    """The inverse of A read as a matrix of its first ``ind`` axes by the rest, shaped
    A.shape[ind:] + A.shape[:ind]."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = math.prod(A.shape[:ind]), math.prod(A.shape[ind:])
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) "
                           f"== prod(self.shape[:ind]), but got {cols} != {rows}")
    out = inv(F.reshape(A, (rows, cols)))
    return F.reshape(out, (*A.shape[ind:], *A.shape[:ind]))


@takes_out(check=same_out_dtype, name="linalg_tensorsolve")
def tensorsolve(A: Tensor, B: Tensor, dims: Any = None) -> Tensor:
    """X with tensordot(A, X, X.ndim) = B: A's axes ``dims`` moved last first, then A read as
    a matrix of B's axes by the rest."""
    if dims is not None:
        moved = [wrap_dim(d, A.ndim) for d in dims]
        kept = [i for i in range(A.ndim) if i not in moved]
        A = F.permute(A, *kept, *moved)
    rows, cols = B.numel(), math.prod(A.shape[B.ndim:])
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim"
                           f":]) == prod(self.shape[:other.ndim]), but got {cols} != {rows}")
    X = solve(F.reshape(A, (rows, cols)), F.reshape(B, (rows,)))
    return F.reshape(X, tuple(A.shape[B.ndim:]))


def vander(x: Tensor, *, N: int | None = None) -> Tensor:  # noqa: N803 - PyTorch's name
    """The Vandermonde matrix of the last axis: column j is x^j, j = 0 .. N - 1 (N: its
    length), by a running product, as PyTorch's."""
    n = x.shape[-1] if x.ndim else 1
    N = n if N is None else N  # noqa: N806
    if N <= 1 or not x.ndim:
        raise RuntimeError("N must be greater than 1.")
    dtype = x.dtype if x.dtype is not D.bool_ else D.int64
    ones = F.cast(F.mul(F.unsqueeze(x, -1), 0), dtype)
    ones = F.add(ones, 1)
    powers = F.cumprod(F.expand(F.unsqueeze(F.cast(x, dtype), -1), *x.shape, N - 1), -1)
    return F.cat([ones, powers], -1)


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """torch.diagonal with the last two axes by default."""
    return _diagonal(A, offset, dim1, dim2)


def matmul(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """torch.matmul."""
    return F.matmul(input, other, out=out)


def _no_complex(name: str) -> NotImplementedError:
    return NotImplementedError(
        f"linalg.{name}: the eigenvalues of a general matrix are complex, and this runtime has "
        f"no complex dtypes; for a symmetric matrix use linalg.eigh / linalg.eigvalsh")


def eig(A: Tensor, *, out: Any = None) -> Any:
    """Refused: complex eigenvalues and eigenvectors need complex dtypes (none here)."""
    raise _no_complex("eig")


def eigvals(A: Tensor, *, out: Any = None) -> Any:
    """Refused: complex eigenvalues need complex dtypes (none here)."""
    raise _no_complex("eigvals")


# ---- torch-level names (torch.svd, torch.lu, ...): TORCH_FUNCTIONS, exported by runtime ----

_DEPRECATED = {
    "lu": "torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex "
          "and will be removed in a future PyTorch release.\nLU, pivots = torch.lu(A, "
          "compute_pivots)\nshould be replaced with\nLU, pivots = torch.linalg.lu_factor(A, "
          "compute_pivots)\nand\nLU, pivots, info = torch.lu(A, compute_pivots, get_infos=True)"
          "\nshould be replaced with\nLU, pivots, info = torch.linalg.lu_factor_ex(A, "
          "compute_pivots)",
    "cholesky": "torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be "
                "removed in a future PyTorch release.\nL = torch.cholesky(A)\nshould be "
                "replaced with\nL = torch.linalg.cholesky(A)\nand\nU = torch.cholesky(A, "
                "upper=True)\nshould be replaced with\nU = torch.linalg.cholesky(A).mH\nThis "
                "transform will produce equivalent results for all valid (symmetric positive "
                "definite) inputs.",
    "qr": "torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a future "
          "PyTorch release.\nThe boolean parameter 'some' has been replaced with a string "
          "parameter 'mode'.\nQ, R = torch.qr(A, some)\nshould be replaced with\nQ, R = "
          "torch.linalg.qr(A, 'reduced' if some else 'complete')",
    "triangular_solve": "torch.triangular_solve is deprecated in favor of "
                        "torch.linalg.solve_triangularand will be removed in a future PyTorch "
                        "release.\ntorch.linalg.solve_triangular has its arguments reversed and "
                        "does not return a copy of one of the inputs.\nX = "
                        "torch.triangular_solve(B, A).solution\nshould be replaced with\nX = "
                        "torch.linalg.solve_triangular(A, B).",
    "lu_solve": "torch.lu_solve is deprecated in favor of torch.linalg.lu_solveand will be "
                "removed in a future PyTorch release.\nNote that torch.linalg.lu_solve has its "
                "arguments reversed.\nX = torch.lu_solve(B, LU, pivots)\nshould be replaced "
                "with\nX = torch.linalg.lu_solve(LU, pivots, B)",
    "nuclear_norm": "at::nuclear_norm is deprecated and it is just left for JIT compatibility. "
                    "It will be removed in a future PyTorch release. Please use "
                    "`linalg.matrix_norm(A, 'nuc', dim, keepdim)` instead",
    "frobenius_norm": "at::frobenius_norm is deprecated and it is just left for JIT "
                      "compatibility. It will be removed in a future PyTorch release. Please "
                      "use `linalg.vector_norm(A, 2., dim, keepdim)` instead",
}


def _deprecated(name: str) -> None:
    warnings.warn(_DEPRECATED[name], UserWarning, stacklevel=3)


SVDOldResult = namedtuple("SVDOldResult", ["U", "S", "V"])
TriangularSolveResult = namedtuple("TriangularSolveResult", ["solution", "cloned_coefficient"])
GeqrfResult = namedtuple("GeqrfResult", ["a", "tau"])


def _torch_svd(input: Tensor, some: bool = True, compute_uv: bool = True,  # noqa: A002
               *, out: Any = None) -> SVDOldResult:
    """torch.svd: U, S, V (not V^T); ``some`` False: U and V square; without ``compute_uv``
    U and V zero-filled square matrices, as PyTorch's."""
    from .creation import zeros

    if compute_uv:
        U, S, Vh = svd(input, full_matrices=not some)
        result = SVDOldResult(U, S, F.transpose(Vh, -1, -2))
    else:
        m, n = input.shape[-2], input.shape[-1]
        batch = tuple(input.shape[:-2])
        result = SVDOldResult(zeros(*batch, m, m, dtype=input.dtype, device=input.device),
                              svdvals(input),
                              zeros(*batch, n, n, dtype=input.dtype, device=input.device))
    return F.written_to_each(out, result, "svd") if out is not None else result


def _torch_qr(input: Tensor, some: bool = True, *, out: Any = None) -> QRResult:  # noqa: A002
    """torch.qr: linalg.qr's reduced (``some``) or complete factors."""
    _deprecated("qr")
    return qr(input, "reduced" if some else "complete", out=out)


@_node_named("CholeskyBackward0")
def _torch_cholesky(input: Tensor, upper: bool = False, *,  # noqa: A002
                    out: Tensor | None = None) -> Tensor:
    """torch.cholesky: linalg.cholesky, its errors named "cholesky"."""
    _deprecated("cholesky")
    try:
        return cholesky(input, upper=upper, out=out)
    except LinAlgError as e:
        raise LinAlgError(str(e).replace("linalg.cholesky: ", "cholesky: ", 1)) from None


def _torch_lu(A: Tensor, pivot: bool = True, get_infos: bool = False, out: Any = None
              ) -> tuple[Tensor, ...]:
    """torch.lu: (LU, pivots), and getrf's info with ``get_infos``; no error on a singular
    matrix."""
    _deprecated("lu")
    lu_, pivots, info = lu_factor_ex(A, pivot=pivot)
    result = (lu_, pivots, info) if get_infos else (lu_, pivots)
    return F.written_to_each(out, result, "lu") if out is not None else result


def _torch_lu_solve(b: Tensor, LU_data: Tensor, LU_pivots: Tensor, *,  # noqa: N803
                    out: Tensor | None = None) -> Tensor:
    """torch.lu_solve(b, LU, pivots): linalg.lu_solve with its arguments in the old order."""
    _deprecated("lu_solve")
    return lu_solve(LU_data, LU_pivots, b, out=out)


@_node_named("CholeskyInverseBackward0")
def cholesky_inverse(L: Tensor, upper: bool = False, *,  # noqa: N803
                     out: Tensor | None = None) -> Tensor:
    """(L L^T)^-1 from the Cholesky factor L (``upper``: (U^T U)^-1), by a triangular solve
    on the identity: L^-T L^-1."""
    from .creation import eye

    if L.ndim < 2:
        raise RuntimeError("cholesky_inverse: The input tensor A must have at least 2 "
                           "dimensions.")
    if L.shape[-1] != L.shape[-2]:
        raise RuntimeError(f"cholesky_inverse: A must be batches of square matrices, but they "
                           f"are {L.shape[-2]} by {L.shape[-1]} matrices")
    if L.dtype not in (D.float32, D.float64):  # PyTorch's kernel has these only
        raise NotImplementedError(f"\"cholesky_inverse_out_cpu\" not implemented for "
                                  f"'{D.scalar_type_name(L.dtype)}'")
    ident = eye(L.shape[-1], dtype=L.dtype, device=L.device)
    inv_factor = solve_triangular(L, ident, upper=upper)  # L^-1 (U^-1)
    t = F.transpose(inv_factor, -1, -2)
    result = F.matmul(inv_factor, t) if upper else F.matmul(t, inv_factor)
    return F.written_to(out, result, "cholesky_inverse") if out is not None else result


@_node_named("CholeskySolveBackward0")
def cholesky_solve(input: Tensor, input2: Tensor, upper: bool = False, *,  # noqa: A002
                   out: Tensor | None = None) -> Tensor:
    """X with (L L^T) X = B (``upper``: (U^T U) X = B), B = ``input``, the Cholesky factor
    L = ``input2`` (PyTorch's names): two triangular solves, batch axes broadcast."""
    B, L = input, input2  # noqa: N806
    if B.ndim < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {B.ndim} dimensions "
                           f"instead")
    if L.ndim < 2:
        raise RuntimeError(f"u should have at least 2 dimensions, but has {L.ndim} dimensions "
                           f"instead")
    if L.shape[-1] != L.shape[-2] or B.shape[-2] != L.shape[-1]:
        raise RuntimeError(f"Incompatible matrix sizes for cholesky_solve: each A matrix is "
                           f"{L.shape[-2]} by {L.shape[-1]} but each b matrix is {B.shape[-2]} "
                           f"by {B.shape[-1]}")
    if B.dtype is not L.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{D.scalar_type_name(B.dtype)} and A of type "
                           f"{D.scalar_type_name(L.dtype)} instead.")
    t = F.transpose(L, -1, -2)
    if upper:  # U^T U X = B
        result = solve_triangular(L, solve_triangular(t, B, upper=False), upper=True)
    else:
        result = solve_triangular(t, solve_triangular(L, B, upper=False), upper=True)
    return F.written_to(out, result, "cholesky_solve") if out is not None else result


@_node_named("TriangularSolveBackward0")
def triangular_solve(b: Tensor, A: Tensor, upper: bool = True, transpose: bool = False,
                     unitriangular: bool = False, *, out: Any = None
                     ) -> TriangularSolveResult:
    """torch.triangular_solve: X with A X = b (``transpose``: A^T X = b) and a copy of A."""
    _deprecated("triangular_solve")
    if b.ndim < 2 or A.ndim < 2 or A.shape[-1] != A.shape[-2] or b.shape[-2] != A.shape[-1]:
        if b.ndim >= 2 and A.ndim >= 2:
            raise RuntimeError(f"Incompatible matrix sizes for triangular_solve: each A matrix "
                               f"is {A.shape[-2]} by {A.shape[-1]} but each b matrix is "
                               f"{b.shape[-2]} by {b.shape[-1]}")
        which, t = ("b", b) if b.ndim < 2 else ("A", A)
        raise RuntimeError(f"torch.triangular_solve: Expected {which} to have at least 2 "
                           f"dimensions, but it has {t.ndim} dimensions instead")
    coefficient = F.transpose(A, -1, -2) if transpose else A
    solution = solve_triangular(coefficient, b, upper=upper != bool(transpose),
                                unitriangular=unitriangular)
    batch = broadcast_shapes(tuple(b.shape[:-2]), tuple(A.shape[:-2]))
    result = TriangularSolveResult(solution, F.clone(F.expand(A, *batch, *A.shape[-2:])))
    return F.written_to_each(out, result, "triangular_solve") if out is not None else result


def _geqrf_host(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """LAPACK geqr2's Householder QR of each matrix (batched): R on and above the diagonal,
    the reflectors' tails below it (their first element 1 implied), and their taus. A
    reflector of a zero tail is the identity (tau 0), as dlarfg's."""
    out = np.array(a, dtype=np.float64, copy=True)
    m, n = out.shape[-2:]
    k = min(m, n)
    flat = out.reshape(math.prod(out.shape[:-2]), m, n)
    tau = np.zeros((flat.shape[0], k))
    for j in range(k):
        alpha = flat[:, j, j].copy()
        tail = flat[:, j + 1:, j]
        xnorm = np.sqrt((tail * tail).sum(axis=1))
        moved = xnorm != 0
        beta = np.where(moved, -np.copysign(np.hypot(alpha, xnorm), alpha), alpha)
        with np.errstate(divide="ignore", invalid="ignore"):
            tau[:, j] = np.where(moved, (beta - alpha) / beta, 0.0)
            scale = np.where(moved, 1.0 / (alpha - beta), 0.0)
        flat[:, j + 1:, j] = tail * scale[:, None]
        flat[:, j, j] = beta
        v = np.concatenate([np.ones((flat.shape[0], 1)), flat[:, j + 1:, j]], axis=1)
        rest = flat[:, j:, j + 1:]
        w = np.einsum("bi,bij->bj", v, rest)
        rest -= tau[:, j, None, None] * v[:, :, None] * w[:, None, :]
    return (out.reshape(a.shape).astype(a.dtype),
            tau.reshape(*a.shape[:-2], k).astype(a.dtype))


def geqrf(input: Tensor, *, out: Any = None) -> GeqrfResult:  # noqa: A002
    """LAPACK's geqrf: A = QR as R above the diagonal and Householder reflectors below it,
    with their taus (``householder_product`` / ``ormqr`` apply them). No derivative, as
    PyTorch's."""
    from .ops.composite import no_derivative

    if input.ndim < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    if not input.dtype.is_floating_point or input.dtype in (D.float16, D.bfloat16):
        raise NotImplementedError(f'"geqrf_cpu" not implemented for '
                                  f"'{D.scalar_type_name(input.dtype)}'")
    a, tau = _geqrf_host(_host_values(input, "geqrf"))
    message = "the derivative for 'geqrf' is not implemented."
    result = GeqrfResult(*(no_derivative(Tensor._of(v, device=input.device), (input,),
                                         NotImplementedError, message, "GeqrfBackward0")
                           for v in (a, tau)))
    return F.written_to_each(out, result, "geqrf") if out is not None else result


def orgqr(input: Tensor, input2: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """torch.orgqr(input, tau): ``householder_product`` (tau is PyTorch's ``input2``)."""
    return householder_product(input, input2, out=out)


@_node_named("OrmqrBackward0")
def ormqr(input: Tensor, input2: Tensor, input3: Tensor, left: bool = True,  # noqa: A002
          transpose: bool = False, *, out: Tensor | None = None) -> Tensor:
    """Q C, Q^T C, C Q or C Q^T (``left``, ``transpose``) for Q = H_1 ... H_k of ``geqrf``'s
    reflectors ``input`` and taus ``input2``, C = ``input3`` (PyTorch's names; LAPACK's
    ormqr), Q formed whole."""
    tau, other = input2, input3
    if input.ndim < 2 or other.ndim < 2:
        raise RuntimeError("torch.ormqr: input must have at least 2 dimensions." if
                           input.ndim < 2 else
                           "torch.ormqr: other must have at least 2 dimensions.")
    m = input.shape[-2]
    side = other.shape[-2] if left else other.shape[-1]
    if side != m:
        raise RuntimeError(f"torch.ormqr: other.shape[{-2 if left else -1}] must be equal to "
                           f"input.shape[-2]")
    if tau.shape[-1] > min(side, input.shape[-1]):
        raise RuntimeError(f"torch.ormqr: tau.shape[-1] must be equal to min(other.shape["
                           f"{-2 if left else -1}], input.shape[-1])")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"torch.ormqr: Expected input and other to have the same dtype, but "
                           f"input has dtype{D.scalar_type_name(input.dtype)} and other has "
                           f"dtype {D.scalar_type_name(other.dtype)}")
    Q = _householder_q(input, tau)
    if transpose:
        Q = F.transpose(Q, -1, -2)
    result = F.matmul(Q, other) if left else F.matmul(other, Q)
    return F.written_to(out, result, "ormqr") if out is not None else result


def nuclear_norm(input: Tensor, *args: Any, dim: Any = None, keepdim: bool = False,  # noqa: A002
                 out: Tensor | None = None) -> Tensor:
    """The sum of the singular values over the last two axes (or ``dim``): PyTorch's two
    overloads, (input, keepdim=False) and (input, dim, keepdim=False)."""
    _deprecated("nuclear_norm")
    if len(args) > 2:
        raise TypeError(f"nuclear_norm() takes from 1 to 3 positional arguments but "
                        f"{len(args) + 1} were given")
    if args and isinstance(args[0], bool):
        keepdim = args[0]
    elif args:
        dim, keepdim = args[0], args[1] if len(args) > 1 else keepdim
    return matrix_norm(input, "nuc", tuple(dim) if dim is not None else (-2, -1), keepdim,
                       out=out)


def frobenius_norm(input: Tensor, dim: Any, keepdim: bool = False, *,  # noqa: A002
                   out: Tensor | None = None) -> Tensor:
    """sqrt(sum x^2) over ``dim`` (one or two axes)."""
    _deprecated("frobenius_norm")
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if len(dims) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dims)} dimensions "
                           f"instead.")
    return vector_norm(input, 2, dims, keepdim, out=out)


def _removed(text: str) -> RuntimeError:
    return RuntimeError(f"This function was deprecated since version 1.9 and is now removed"
                        f"{text}")


def _matrix_rank_removed(input: Tensor, tol: float | None = None,  # noqa: A002
                         symmetric: bool = False, *, out: Tensor | None = None) -> Tensor:
    """torch.matrix_rank, removed: PyTorch's error."""
    raise _removed(_MATRIX_RANK_REMOVED)


def _lstsq_removed(input: Tensor, A: Tensor, *, out: Any = None) -> Any:  # noqa: A002, N803
    """torch.lstsq, removed: PyTorch's error."""
    raise _removed(_LSTSQ_REMOVED)


def _lstsq_method_removed(self: Tensor, other: Tensor) -> Any:
    """Tensor.lstsq, removed: PyTorch's error."""
    raise _removed(_LSTSQ_REMOVED)


_MATRIX_RANK_REMOVED = (".\nPlease use the `torch.linalg.matrix_rank` function instead. The "
    "parameter 'symmetric' was renamed in `torch.linalg.matrix_rank()` to 'hermitian'.")
_LSTSQ_REMOVED = (
    ". `torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n"
    "`torch.linalg.lstsq` has reversed arguments and does not return the QR decomposition in "
    "the returned tuple (although it returns other information about the problem).\n\nTo get "
    "the QR decomposition consider using `torch.linalg.qr`.\n\nThe returned solution in "
    "`torch.lstsq` stored the residuals of the solution in the last m - n columns of the "
    "returned value whenever m > n. In torch.linalg.lstsq, the residuals are in the field "
    "'residuals' of the returned named tuple.\n\nThe unpacking of the solution, as in\nX, _ "
    "= torch.lstsq(B, A).solution[:A.size(1)]\nshould be replaced with:\nX = "
    "torch.linalg.lstsq(A, B).solution")


def _approximate_basis(A: Tensor, q: int, niter: int, M: Tensor | None) -> Tensor:
    """Halko et al.'s range finder (PyTorch's get_approximate_basis): an orthonormal Q of q
    columns whose span nearly holds A's (minus M's) range, from a Gaussian draw of the
    default generator and ``niter`` power iterations."""
    from .creation import randn

    dtype = A.dtype if A.dtype.is_floating_point else D.float32
    R = randn(A.shape[-1], q, dtype=dtype, device=A.device)

    def times(x: Tensor, adjoint: bool = False) -> Tensor:
        a = F.transpose(A, -1, -2) if adjoint else A
        out = F.matmul(a, x)
        if M is not None:
            out = F.sub(out, F.matmul(F.transpose(M, -1, -2) if adjoint else M, x))
        return out

    Q = qr(times(R)).Q
    for _ in range(niter):
        Q = qr(times(Q, adjoint=True)).Q
        Q = qr(times(Q)).Q
    return Q


def svd_lowrank(A: Tensor, q: int | None = 6, niter: int | None = 2,
                M: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:  # noqa: N803
    """U, S, V of a rank-q approximation of A - M (Halko et al.'s algorithm 5.1, PyTorch's):
    random, from the default generator (``rt.manual_seed``)."""
    q = 6 if q is None else q
    niter = 2 if niter is None else niter
    m, n = A.shape[-2], A.shape[-1]
    if M is not None:
        M = F.expand(M, *A.shape)
    if m < n:
        A = F.transpose(A, -1, -2)
        M = F.transpose(M, -1, -2) if M is not None else None
    Q = _approximate_basis(A, q, niter, M)
    B = F.matmul(F.transpose(Q, -1, -2), A)
    if M is not None:
        B = F.sub(B, F.matmul(F.transpose(Q, -1, -2), M))
    U, S, Vh = svd(B, full_matrices=False)
    V, U = F.transpose(Vh, -1, -2), F.matmul(Q, U)
    return (V, S, U) if m < n else (U, S, V)


def pca_lowrank(A: Tensor, q: int | None = None, center: bool = True, niter: int = 2
                ) -> tuple[Tensor, Tensor, Tensor]:
    """``svd_lowrank`` of A with its column means subtracted (``center``), q at most
    min(m, n) (default min(6, m, n))."""
    m, n = A.shape[-2], A.shape[-1]
    if q is None:
        q = min(6, m, n)
    elif not 0 <= q <= min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, "
                         f"n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return svd_lowrank(A, q, niter=niter)
    return svd_lowrank(F.sub(A, F.mean(A, (-2,), keepdim=True)), q, niter=niter)


TORCH_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "svd": _torch_svd, "qr": _torch_qr, "cholesky": _torch_cholesky, "lu": _torch_lu,
    "lu_solve": _torch_lu_solve, "lu_unpack": lu_unpack, "cholesky_inverse": cholesky_inverse,
    "cholesky_solve": cholesky_solve, "triangular_solve": triangular_solve,
    "matrix_exp": matrix_exp, "matrix_rank": _matrix_rank_removed, "lstsq": _lstsq_removed,
    "geqrf": geqrf, "orgqr": orgqr, "ormqr": ormqr, "nuclear_norm": nuclear_norm,
    "frobenius_norm": frobenius_norm, "svd_lowrank": svd_lowrank, "pca_lowrank": pca_lowrank,
}

for _name in ("svd", "qr", "cholesky", "lu_solve", "cholesky_inverse", "cholesky_solve",
              "triangular_solve", "matrix_exp", "geqrf", "orgqr", "ormqr"):
    setattr(Tensor, _name, TORCH_FUNCTIONS[_name])
Tensor.lu = _torch_lu  # type: ignore[attr-defined]
Tensor.lstsq = _lstsq_method_removed  # type: ignore[attr-defined]


__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eig",
           "eigh", "eigvals", "eigvalsh", "householder_product", "inv", "inv_ex", "ldl_factor", "ldl_factor_ex", "ldl_solve",
           "lstsq", "lu",
           "lu_factor", "lu_factor_ex", "lu_solve", "matmul", "matrix_exp", "matrix_norm",
           "matrix_power", "matrix_rank", "multi_dot", "norm", "pinv", "qr", "slogdet", "solve",
           "solve_ex", "solve_triangular", "svd", "svdvals", "tensorinv", "tensorsolve", "vander",
           "vecdot", "vector_norm"]
