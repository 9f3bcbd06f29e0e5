"""Linear-algebra primitives: inv, det, logabsdet and cholesky of (batches of) square
matrices, forward by numpy.linalg (CuPy's where it has one, else a host copy), backward by
PyTorch's formulas written with primitives. Solve, slogdet, matrix_power and the norms are
composites of these (``runtime.linalg``)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _dtype as D
from . import functional as F
from .dispatch import apply
from .prims import _on_host
from .registry import PROMOTE_SAME, Primitive, register


class LinAlgError(RuntimeError):
    """A singular or not positive-definite input (PyTorch's torch.linalg.LinAlgError)."""


# PyTorch's error for an input its op has no kernel for (a half or bfloat16 one; eigh's for
# an integer one too): the CPU kernel named in its NotImplementedError, or None for the op's
# own "Low precision dtypes not supported" check
LOW_PRECISION_KERNELS: dict[str, str | None] = {
    "det": "lu_cpu", "solve": "lu_cpu", "cholesky": "cholesky_cpu", "eigh": "linalg_eigh_cpu",
    "svd": "linalg_svd_cpu", "qr": "geqrf_cpu", "inv": None, "slogdet": None, "logdet": None}


def check_low_precision(name: str, meta: Any) -> None:
    """PyTorch's error for op ``name`` (a key of LOW_PRECISION_KERNELS) of a half or bfloat16
    input (an integer one too for eigh, whose kernel comes before the float check)."""
    dtype = meta.dtype
    if dtype not in (D.float16, D.bfloat16) and not (name == "eigh" and
                                                      not dtype.is_floating_point):
        return
    kernel = LOW_PRECISION_KERNELS[name]
    if kernel is not None:
        raise NotImplementedError(f"\"{kernel}\" not implemented for "
                                  f"'{D.scalar_type_name(dtype)}'")
    prefix = name if name == "logdet" else f"linalg.{name}"
    raise RuntimeError(f"{prefix}: Low precision dtypes not supported. Got "
                       f"{D.scalar_type_name(dtype)}")


def check_square(name: str, meta: Any) -> None:
    """PyTorch's checks: a floating dtype (a half or bfloat16 one: its op's own error) and
    batches of square matrices."""
    if name in LOW_PRECISION_KERNELS:
        check_low_precision(name, meta)
    if not meta.dtype.is_floating_point or meta.dtype is D.float16:
        raise RuntimeError(f"linalg.{name}: Expected a floating point or complex tensor as "
                           f"input. Got {D.scalar_type_name(meta.dtype)}")
    shape = tuple(meta.shape)
    if len(shape) < 2:
        raise RuntimeError(f"linalg.{name}: The input tensor A must have at least 2 "
                           f"dimensions.")
    if shape[-1] != shape[-2]:
        raise RuntimeError(f"linalg.{name}: A must be batches of square matrices, but they "
                           f"are {shape[-2]} by {shape[-1]} matrices")


def _cubic_flops(out_shape: Any, arg_shapes: Any, attrs: Any) -> int:
    shape = arg_shapes[0]
    n = shape[-1] if shape else 1
    return int(math.prod(shape[:-2]) * n ** 3) if len(shape) >= 2 else 1


def _mT(x: Any) -> Any:
    return F.transpose(x, -1, -2)


def _batch_prefix(a: np.ndarray, index: tuple[int, ...]) -> str:
    return f"(Batch element {int(np.ravel_multi_index(index, a.shape[:-2]))}): " \
        if a.ndim > 2 else ""


def _zero_pivot(m: np.ndarray) -> int:
    """The 1-based index of the first zero pivot of m's LU with partial pivoting (LAPACK
    getrf's info), 0 if none: PyTorch's text for a singular matrix names it."""
    u = m.astype(np.float64).copy()
    n = u.shape[0]
    first = 0
    for j in range(n):
        p = j + int(np.argmax(np.abs(u[j:, j])))
        if u[p, j] == 0:
            first = first or j + 1
            continue
        u[[j, p]] = u[[p, j]]
        u[j + 1:, j:] -= np.outer(u[j + 1:, j] / u[j, j], u[j, j:])
    return first


def _device_linalg(xp: Any) -> Any:
    """A device array module's own linalg (CuPy's), or None: numpy's arrays, or a module
    without one, go through numpy on the host (``_on_host``)."""
    return None if xp is np else getattr(xp, "linalg", None)


def _with_linalg(xp: Any, fn: Callable[[Any, Any, Any], Any], a: Any) -> Any:
    """``fn(linalg, array module, a)``: with the device's linalg where it has one, else with
    numpy's on a host copy (its result moved back)."""
    lib = _device_linalg(xp)
    if lib is not None:
        return fn(lib, xp, a)
    return _on_host(xp, lambda m: fn(np.linalg, np, m), a)


def _lu_inverse(m: np.ndarray) -> np.ndarray:
    """The inverse of m as PyTorch's (LAPACK's getrf, then getrs on the identity): for a
    matrix numpy's LAPACK finds singular (an exact zero pivot) where this elimination rounds
    to a tiny one, and PyTorch gives its huge inverse."""
    u = m.astype(np.float64).copy()
    n = u.shape[0]
    x = np.eye(n)
    for j in range(n):
        p = j + int(np.argmax(np.abs(u[j:, j])))
        u[[j, p]], x[[j, p]] = u[[p, j]], x[[p, j]]
        factors = u[j + 1:, j] / u[j, j]
        u[j + 1:, j:] -= np.outer(factors, u[j, j:])
        x[j + 1:] -= np.outer(factors, x[j])
    for j in range(n - 1, -1, -1):
        x[j] = (x[j] - u[j, j + 1:] @ x[j + 1:]) / u[j, j]
    return x.astype(m.dtype)


def _inv_impl(xp: Any, a: Any) -> Any:
    def host(m: np.ndarray) -> np.ndarray:
        try:
            out = np.linalg.inv(m)
        except np.linalg.LinAlgError:
            out = np.empty_like(m)
            for index in np.ndindex(*m.shape[:-2]):
                k = _zero_pivot(m[index])
                if k:
                    raise LinAlgError(
                        f"linalg.inv: {_batch_prefix(m, index)}The diagonal element {k} is "
                        f"zero, the inversion could not be completed because the input matrix "
                        f"is singular.") from None
                out[index] = _lu_inverse(m[index])
        # a NaN anywhere in a matrix is NaN in all of its inverse, as PyTorch's (LAPACK's
        # elimination carried it into some entries only)
        nan = np.isnan(m).any(axis=(-2, -1))
        if nan.any():
            out[nan] = np.nan
        return out

    lib = _device_linalg(xp)
    return lib.inv(a) if lib is not None else _on_host(xp, host, a)


def _inv_infer(meta: Any) -> tuple[tuple[int, ...], Any]:
    check_square("inv", meta)
    return tuple(meta.shape), meta.dtype


# (A^-1)' = -A^-T g A^-T, from the saved output
INV = register(Primitive(
    "linalg_inv", impl=_inv_impl, infer=_inv_infer,
    backward=lambda c, g: (F.neg(F.matmul(_mT(c.output()), F.matmul(g, _mT(c.output())))),),
    saves=("out",), flops=_cubic_flops, node_name="LinalgInvExBackward0"))


def _nan_where_nan(xp: Any, a: Any, out: Any) -> Any:
    """``out`` (per matrix of ``a``) NaN where the matrix holds a NaN, as PyTorch's LU gives
    (LAPACK's pivot search skips a NaN, so numpy's det of one read 0 or -inf in places)."""
    return xp.where(xp.isnan(a).any(axis=(-2, -1)), xp.asarray(math.nan, out.dtype), out)


def _det_impl(xp: Any, a: Any) -> Any:
    lib = _device_linalg(xp)
    out = lib.det(a) if lib is not None else _on_host(xp, np.linalg.det, a)
    return _nan_where_nan(xp, a, xp.asarray(out).astype(a.dtype))


def _det_infer(meta: Any) -> tuple[tuple[int, ...], Any]:
    check_square("det", meta)
    return tuple(meta.shape[:-2]), meta.dtype


def _expand2(x: Any) -> Any:
    return F.unsqueeze(F.unsqueeze(x, -1), -1)


def _singular_safe(a: Any, singular: Any) -> Any:
    """a with each matrix where ``singular`` (its batch shape) replaced by the identity, so
    that its inverse is defined (the caller masks what that gives there)."""
    from ..creation import eye

    return F.where(_expand2(singular), eye(a.shape[-1], dtype=a.dtype, device=a.device), a)


def _det_bwd(c: Any, g: Any) -> tuple[Any]:
    """g det A^-T, as PyTorch's (its LU solve of det g I): 0 where det is 0 (PyTorch's
    first-order gradient there; its SVD formula under create_graph is not taken); a 1 x 1
    matrix's is g."""
    a, det = c.input(0), c.output()
    if a.shape[-1] == 1:
        return (F.expand(_expand2(g), *a.shape),)
    singular = F.eq(det, 0.0)
    inv_t = _mT(apply(INV, _singular_safe(a, singular)))
    return (F.mul(_expand2(F.mul(g, det)), inv_t),)


DET = register(Primitive(
    "linalg_det", impl=_det_impl, infer=_det_infer, backward=_det_bwd,
    saves=(0, "out"), flops=_cubic_flops))


def _logabsdet_impl(xp: Any, a: Any) -> Any:
    def host(m: np.ndarray) -> np.ndarray:
        return np.linalg.slogdet(m)[1]

    lib = _device_linalg(xp)
    out = lib.slogdet(a)[1] if lib is not None else _on_host(xp, host, a)
    return _nan_where_nan(xp, a, xp.asarray(out).astype(a.dtype))


def _logabsdet_infer(meta: Any) -> tuple[tuple[int, ...], Any]:
    check_square("slogdet", meta)
    return tuple(meta.shape[:-2]), meta.dtype


def _logabsdet_bwd(c: Any, g: Any) -> tuple[Any]:
    """g A^-T; NaN where A is singular (log|det| is -inf there: PyTorch's LU solve by a zero
    pivot gives a mix of +-inf and NaN; the inverse's error was raised)."""
    a = c.input(0)
    singular = F.eq(c.output(), -math.inf)
    inv_t = _mT(apply(INV, _singular_safe(a, singular)))
    return (F.where(_expand2(singular), math.nan, F.mul(_expand2(g), inv_t)),)


# log|det A|' = g A^-T
LOGABSDET = register(Primitive(
    "linalg_logabsdet", impl=_logabsdet_impl, infer=_logabsdet_infer,
    backward=_logabsdet_bwd, saves=(0, "out"), flops=_cubic_flops))


def _det_sign_impl(xp: Any, a: Any) -> Any:
    det = _det_impl(xp, a)
    return xp.where(xp.isnan(det), xp.asarray(0, det.dtype), xp.sign(det))  # torch.sign(nan)


# slogdet's sign: an output with history, as PyTorch's (it requires grad where A does), whose
# gradient is undefined (PyTorch's formula ignores a real sign's): a backward through it
# alone leaves A.grad None
DET_SIGN = register(Primitive(
    "linalg_det_sign", impl=_det_sign_impl, infer=_logabsdet_infer,
    backward=lambda c, g: (None,), flops=_cubic_flops))


def _cholesky_impl(xp: Any, a: Any) -> Any:
    def host(m: np.ndarray) -> np.ndarray:
        try:
            out = np.linalg.cholesky(m)
            if not np.isnan(out).any():
                return out
            # LAPACK's potrf stops at a NaN pivot, as at a negative one (numpy's returned
            # the NaNs): PyTorch's error names its order
            raise np.linalg.LinAlgError
        except np.linalg.LinAlgError:
            for index in np.ndindex(*m.shape[:-2]):
                sub = m[index]
                for k in range(1, sub.shape[-1] + 1):
                    try:
                        if np.isnan(np.linalg.cholesky(sub[:k, :k])).any():
                            raise np.linalg.LinAlgError
                    except np.linalg.LinAlgError:
                        raise LinAlgError(
                            f"linalg.cholesky: {_batch_prefix(m, index)}The factorization "
                            f"could not be completed because the input is not "
                            f"positive-definite (the leading minor of order {k} is not "
                            f"positive-definite).") from None
            raise

    lib = _device_linalg(xp)
    return lib.cholesky(a) if lib is not None else _on_host(xp, host, a)


def _cholesky_infer(meta: Any) -> tuple[tuple[int, ...], Any]:
    check_square("cholesky", meta)
    return tuple(meta.shape), meta.dtype


def _cholesky_bwd(c: Any, g: Any) -> tuple[Any]:
    """PyTorch's cholesky_backward: phi = tril(L^T gL) with its diagonal halved,
    gA = L^-T phi L^-1, symmetrized."""
    from .tensor_ops import tril

    L = c.output()
    L_inv = apply(INV, L)
    phi = tril(F.matmul(_mT(L), tril(g)))
    n = L.shape[-1]
    half = np.ones((n, n))
    np.fill_diagonal(half, 0.5)
    from ..tensor import Tensor

    phi = F.mul(phi, Tensor._of(half.astype(L.dtype.np), device=L.device))
    s = F.matmul(_mT(L_inv), F.matmul(phi, L_inv))
    return (F.mul(F.add(s, _mT(s)), 0.5),)


# the lower Cholesky factor (torch.linalg.cholesky's upper=True is its transpose)
CHOLESKY = register(Primitive(
    "linalg_cholesky", impl=_cholesky_impl, infer=_cholesky_infer, backward=_cholesky_bwd,
    saves=("out",), flops=_cubic_flops, node_name="LinalgCholeskyExBackward0"))


def _eigh_impl(xp: Any, a: Any, upper: bool) -> Any:
    """Eigenvalues (ascending) and eigenvectors packed as one array (..., n + 1, n): row 0
    the values, the rest the vectors as columns (one output per primitive)."""
    def packed(lib: Any, xm: Any, m: Any) -> Any:
        w, v = lib.eigh(m, UPLO="U" if upper else "L")
        return xm.concatenate([w[..., None, :], v], -2)

    return _with_linalg(xp, packed, a)


def _eigh_infer(meta: Any, upper: bool) -> tuple[tuple[int, ...], Any]:
    check_square("eigh", meta)
    n = meta.shape[-1]
    return (*meta.shape[:-2], n + 1, n), meta.dtype


def _eigh_bwd(c: Any, g: Any) -> tuple[Any]:
    """PyTorch's hermitian eig backward: gA = V (diag(gL) + skew(V^T gV) / (L_j - L_i)) V^T,
    the skew part halved (only the triangle read matters, the result is symmetric)."""
    out = c.output()
    n = out.shape[-1]
    lam = F.getitem(out, (Ellipsis, 0, slice(None)))
    V = F.getitem(out, (Ellipsis, slice(1, None), slice(None)))
    g_lam = F.getitem(g, (Ellipsis, 0, slice(None)))
    g_V = F.getitem(g, (Ellipsis, slice(1, None), slice(None)))
    from ..tensor import Tensor

    eye = Tensor._of(np.eye(n, dtype=bool), device=V.device)
    vgv = F.matmul(_mT(V), g_V)
    skew = F.mul(F.sub(vgv, _mT(vgv)), 0.5)
    gap = F.sub(F.unsqueeze(lam, -2), F.unsqueeze(lam, -1))  # L_j - L_i
    # a zero numerator is 0 whatever the gap: eigvalsh's gradient (no gV) is defined at
    # repeated eigenvalues, as PyTorch's (which forms no quotient then)
    from .extra_ops import logical_or

    inner = F.where(logical_or(eye, F.eq(skew, 0.0)), 0.0, F.div(skew, F.where(eye, 1.0, gap)))
    inner = F.add(inner, F.mul(F.unsqueeze(g_lam, -2), F.cast(eye, V.dtype)))
    return (F.matmul(V, F.matmul(inner, _mT(V))),)


EIGH = register(Primitive(
    "linalg_eigh", impl=_eigh_impl, infer=_eigh_infer, backward=_eigh_bwd,
    saves=("out",), attrs=("upper",), flops=_cubic_flops))


def _svd_sizes(shape: tuple[int, ...], full: bool = False) -> tuple[int, int, int, int, int]:
    """m, n, k = min(m, n), and the columns of U and rows of Vh (k, or m and n when full)."""
    m, n = shape[-2], shape[-1]
    k = min(m, n)
    return m, n, k, (m if full else k), (n if full else k)


def _svd_impl(xp: Any, a: Any, full_matrices: bool) -> Any:
    """The SVD packed along one last axis: U (m*mu), S (k), Vh (nv*n), row-major (one output
    per primitive; ``runtime.linalg.svd`` unpacks it)."""
    m, n, k, mu, nv = _svd_sizes(a.shape, full_matrices)
    batch = a.shape[:-2]

    def packed(lib: Any, xm: Any, x: Any) -> Any:
        # PyTorch's: a NaN is its error, an inf makes NaN singular values (numpy's raised
        # for both); here NaN throughout that matrix's U, S and Vh
        if bool(xm.isnan(x).any()):
            raise LinAlgError("linalg.svd: The algorithm failed to converge because the input "
                              "matrix contained non-finite values.")
        infinite = xm.isinf(x).any(axis=(-2, -1))
        u, s, vh = lib.svd(xm.where(infinite[..., None, None], 0, x),
                           full_matrices=full_matrices)
        out = xm.concatenate([u.reshape(*batch, m * mu), s, vh.reshape(*batch, nv * n)], -1)
        return xm.where(infinite[..., None], xm.nan, out)

    return _with_linalg(xp, packed, a)


def _svd_infer(meta: Any, full_matrices: bool) -> tuple[tuple[int, ...], Any]:
    if not meta.dtype.is_floating_point or meta.dtype is D.float16:
        raise RuntimeError(f"linalg.svd: Expected a floating point or complex tensor as "
                           f"input. Got {D.scalar_type_name(meta.dtype)}")
    if len(meta.shape) < 2:
        raise RuntimeError("linalg.svd: The input tensor A must have at least 2 dimensions.")
    m, n, k, mu, nv = _svd_sizes(tuple(meta.shape), full_matrices)
    return (*meta.shape[:-2], m * mu + k + nv * n), meta.dtype


def unpack_svd(packed: Any, m: int, n: int, full: bool = False) -> tuple[Any, Any, Any]:
    _, _, k, mu, nv = _svd_sizes((m, n), full)
    batch = tuple(packed.shape[:-1])
    u = F.reshape(F.getitem(packed, (Ellipsis, slice(0, m * mu))), (*batch, m, mu))
    s = F.getitem(packed, (Ellipsis, slice(m * mu, m * mu + k)))
    vh = F.reshape(F.getitem(packed, (Ellipsis, slice(m * mu + k, None))), (*batch, nv, n))
    return u, s, vh


def _svd_bwd(c: Any, g: Any) -> tuple[Any]:
    """PyTorch's svd_backward (real): gA = U [skew(U^T gU)/E S + S skew(V^T gV)/E + diag(gS)]
    Vh, plus the parts of gU, gV outside the column spaces when A is not square;
    E_jk = S_k^2 - S_j^2 (distinct singular values assumed, as PyTorch's). Full matrices:
    only their first k columns (rows) count, as PyTorch's narrow."""
    m, n = c.shape(0)[-2], c.shape(0)[-1]
    full = c.attrs["full_matrices"]
    k = min(m, n)
    u, s, vh = unpack_svd(c.output(), m, n, full)
    gu, gs, gvh = unpack_svd(g, m, n, full)
    if full:
        cols, rows = (Ellipsis, slice(None), slice(0, k)), (Ellipsis, slice(0, k), slice(None))
        u, gu, vh, gvh = (F.getitem(u, cols), F.getitem(gu, cols), F.getitem(vh, rows),
                          F.getitem(gvh, rows))
    from ..tensor import Tensor

    eye = Tensor._of(np.eye(k, dtype=bool), device=u.device)
    uhgu = F.matmul(_mT(u), gu)
    vhgv = F.matmul(vh, _mT(gvh))
    s2 = F.mul(s, s)
    e = F.where(eye, 1.0, F.sub(F.unsqueeze(s2, -2), F.unsqueeze(s2, -1)))
    # a zero numerator is 0 whatever E: svdvals' gradient (no gU, gV) is defined at repeated
    # singular values, as PyTorch's (which forms no quotient then)
    e = F.where(F.logical_and(F.eq(uhgu, _mT(uhgu)), F.eq(vhgv, _mT(vhgv))), 1.0, e)
    inner = F.add(F.mul(F.div(F.sub(uhgu, _mT(uhgu)), e), F.unsqueeze(s, -2)),
                  F.mul(F.unsqueeze(s, -1), F.div(F.sub(vhgv, _mT(vhgv)), e)))
    inner = F.where(eye, F.unsqueeze(gs, -2), inner)
    ga = F.matmul(u, F.matmul(inner, vh))
    s_inv = F.unsqueeze(F.div(1.0, s), -2)

    def over_s(x: Any) -> Any:
        # x / S, a zero numerator 0 whatever S: svdvals' gradient (no gU, gV) is defined at a
        # zero singular value of a non-square A, as PyTorch's (which forms no quotient then)
        return F.where(F.eq(x, 0), 0.0, F.mul(x, s_inv))

    if m > k:
        ga = F.add(ga, F.matmul(over_s(F.sub(gu, F.matmul(u, uhgu))), vh))
    if n > k:
        outside = F.sub(gvh, F.matmul(_mT(vhgv), vh))  # S^-1 outside: its rows over S
        ga = F.add(ga, F.matmul(u, _mT(over_s(_mT(outside)))))
    return (ga,)


SVD = register(Primitive(
    "linalg_svd", impl=_svd_impl, infer=_svd_infer, backward=_svd_bwd, saves=("out",),
    attrs=("full_matrices",), flops=_cubic_flops))


def _qr_impl(xp: Any, a: Any) -> Any:
    """The reduced QR packed along one last axis: Q (m*k), R (k*n), row-major."""
    m, n, k, _, _ = _svd_sizes(a.shape)
    batch = a.shape[:-2]

    def packed(lib: Any, xm: Any, x: Any) -> Any:
        q, r = lib.qr(x, mode="reduced")
        return xm.concatenate([q.reshape(*batch, m * k), r.reshape(*batch, k * n)], -1)

    return _with_linalg(xp, packed, a)


def _qr_infer(meta: Any) -> tuple[tuple[int, ...], Any]:
    if not meta.dtype.is_floating_point or meta.dtype is D.float16:
        raise RuntimeError(f"linalg.qr: Expected a floating point or complex tensor as "
                           f"input. Got {D.scalar_type_name(meta.dtype)}")
    if len(meta.shape) < 2:
        raise RuntimeError("linalg.qr: The input tensor A must have at least 2 dimensions.")
    m, n, k, _, _ = _svd_sizes(tuple(meta.shape))
    return (*meta.shape[:-2], m * k + k * n), meta.dtype


def unpack_qr(packed: Any, m: int, n: int) -> tuple[Any, Any]:
    k = min(m, n)
    batch = tuple(packed.shape[:-1])
    q = F.reshape(F.getitem(packed, (Ellipsis, slice(0, m * k))), (*batch, m, k))
    r = F.reshape(F.getitem(packed, (Ellipsis, slice(m * k, None))), (*batch, k, n))
    return q, r


def _qr_square_or_tall(q: Any, r: Any, gq: Any, gr: Any) -> Any:
    """m >= n (Walter and Seeger's formula, as PyTorch's): M = R gR^T - gQ^T Q,
    gA = (gQ + Q copyltu(M)) R^-T, copyltu mirroring M's lower triangle upward."""
    from .tensor_ops import tril

    big_m = F.sub(F.matmul(r, _mT(gr)), F.matmul(_mT(gq), q))
    copyltu = F.add(tril(big_m), _mT(tril(big_m, -1)))
    return F.matmul(F.add(gq, F.matmul(q, copyltu)), _mT(apply(INV, r)))


def _qr_bwd(c: Any, g: Any) -> tuple[Any]:
    """Reduced QR. Wide A = [X | Y] (m < n): X = Q R1 is square and Y = Q R2, so gY = Q gR2
    and X's gradient is the square case with gQ + Y gR2^T (PyTorch's split)."""
    m, n = c.shape(0)[-2], c.shape(0)[-1]
    q, r = unpack_qr(c.output(), m, n)
    gq, gr = unpack_qr(g, m, n)
    if m >= n:
        return (_qr_square_or_tall(q, r, gq, gr),)
    left, right = (Ellipsis, slice(None), slice(0, m)), (Ellipsis, slice(None), slice(m, None))
    r1, gr1, gr2 = F.getitem(r, left), F.getitem(gr, left), F.getitem(gr, right)
    y = F.matmul(q, F.getitem(r, right))
    gx = _qr_square_or_tall(q, r1, F.add(gq, F.matmul(y, _mT(gr2))), gr1)
    return (F.cat([gx, F.matmul(q, gr2)], -1),)


QR = register(Primitive(
    "linalg_qr", impl=_qr_impl, infer=_qr_infer, backward=_qr_bwd, saves=("out",),
    flops=_cubic_flops))


def _check_float(name: str, kernel: str, meta: Any) -> None:
    """PyTorch's NotImplementedError for an integer, bool or half input of a LAPACK kernel."""
    if not meta.dtype.is_floating_point or meta.dtype in (D.float16, D.bfloat16):
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{D.scalar_type_name(meta.dtype)}'")


def _triangle(a: np.ndarray, upper: bool, unit: bool) -> np.ndarray:
    t = np.triu(a) if upper else np.tril(a)
    if unit:
        n = a.shape[-1]
        t = t.copy()
        t[..., np.arange(n), np.arange(n)] = 1
    return t


def _substitute(a: np.ndarray, b: np.ndarray, upper: bool) -> np.ndarray:
    """X with T X = B for triangular T (batch axes broadcast), by substitution row by row as
    LAPACK's trsm: a zero on T's diagonal gives inf and NaN, as PyTorch's (no error)."""
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, (*batch, *a.shape[-2:]))
    x = np.array(np.broadcast_to(b, (*batch, *b.shape[-2:])))
    n = a.shape[-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in (range(n - 1, -1, -1) if upper else range(n)):
            done = slice(i + 1, n) if upper else slice(0, i)
            if i != (n - 1 if upper else 0):
                x[..., i, :] -= (a[..., i:i + 1, done] @ x[..., done, :])[..., 0, :]
            x[..., i, :] /= a[..., i, i][..., None]
    return x


def _solve_triangular_impl(xp: Any, a: Any, b: Any, upper: bool, left: bool,
                           unitriangular: bool) -> Any:
    def host(m: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        t = _triangle(m, upper, unitriangular)
        if left:
            return _substitute(t, rhs, upper)
        # X A = B  is  A^T X^T = B^T
        return np.swapaxes(_substitute(np.swapaxes(t, -1, -2), np.swapaxes(rhs, -1, -2),
                                       not upper), -1, -2)

    return _on_host(xp, host, a, b).astype(np.result_type(a.dtype, b.dtype), copy=False)


def check_solve_triangular(a: Any, b: Any, left: bool) -> None:
    """PyTorch's checks of linalg.solve_triangular's arguments (metas or tensors)."""
    _check_float("solve_triangular", "triangular_solve_cpu", a)
    sa, sb = tuple(a.shape), tuple(b.shape)
    if len(sa) < 2:
        raise RuntimeError("linalg.solve_triangular: The input tensor A must have at least 2 "
                           "dimensions.")
    if len(sb) < 2:
        raise RuntimeError("linalg.solve_triangular: The input tensor B must have at least 2 "
                           "dimensions.")
    if sa[-1] != sa[-2]:
        raise RuntimeError(f"linalg.solve_triangular: A must be batches of square matrices, but "
                           f"they are {sa[-2]} by {sa[-1]} matrices")
    if (sb[-2] if left else sb[-1]) != sa[-1]:
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the "
                           f"equation {'AX' if left else 'XA'} = B ({sa[-2]}x{sa[-1]} and "
                           f"{sb[-2]}x{sb[-1]})")


def _solve_triangular_infer(a: Any, b: Any, upper: bool, left: bool, unitriangular: bool
                            ) -> tuple[tuple[int, ...], Any]:
    from .shapes import broadcast_shapes

    check_solve_triangular(a, b, left)
    sa, sb = tuple(a.shape), tuple(b.shape)
    return (*broadcast_shapes(sa[:-2], sb[:-2]), *sb[-2:]), a.dtype


def _batched_to(g: Any, shape: tuple[int, ...]) -> Any:
    return F.sum_to(g, shape) if tuple(g.shape) != tuple(shape) else g


def _solve_triangular_bwd(c: Any, g: Any) -> tuple[Any, Any]:
    """PyTorch's linalg_solve_triangular_backward: gB = A^-H gX (the same solve with A^H),
    gA = -gB X^H (left) or -X^H gB (right), kept to A's triangle (strictly, unitriangular)."""
    from .tensor_ops import tril, triu

    a, x = c.input(0), c.output()
    upper, left, unit = c.attrs["upper"], c.attrs["left"], c.attrs["unitriangular"]
    gb = apply(SOLVE_TRIANGULAR, _mT(a), g, upper=not upper, left=left, unitriangular=unit)
    ga = None
    if c.needs(0):
        ga = F.neg(F.matmul(gb, _mT(x)) if left else F.matmul(_mT(x), gb))
        ga = _batched_to(triu(ga, int(unit)) if upper else tril(ga, -int(unit)), c.shape(0))
    return ga, _batched_to(gb, c.shape(1)) if c.needs(1) else None


SOLVE_TRIANGULAR = register(Primitive(
    "linalg_solve_triangular", impl=_solve_triangular_impl, infer=_solve_triangular_infer,
    backward=_solve_triangular_bwd, saves=(0, "out"), promote=PROMOTE_SAME,
    attrs=("upper", "left", "unitriangular"), flops=_cubic_flops))


# the width of the panels factored column by column; between panels the rest of the matrix is
# updated by one product (LAPACK getrf's right-looking blocking): a 512 x 512 LU took 139 ms
# column by column, 54 ms blocked (shared 2-core VM, BLAS on one thread; even below 256)
_LU_PANEL = 32


def _swap_rows(x: np.ndarray, pivots: np.ndarray) -> None:
    """Rows i and pivots[:, i] of each matrix of x swapped, in turn (LAPACK laswp): the swaps
    composed into one permutation of the rows, applied at once."""
    at = np.arange(x.shape[0])
    order = np.tile(np.arange(x.shape[1]), (x.shape[0], 1))
    for i in range(pivots.shape[1]):
        p = pivots[:, i]
        order[:, i], order[at, p] = order[at, p], order[:, i].copy()
    x[:] = x[at[:, None], order]


def _getf2(x: np.ndarray) -> np.ndarray:
    """LAPACK getf2 on each matrix of x (count, m, n) in place: column by column, partial
    pivoting; a zero pivot column is left unscaled, as LAPACK's. The 0-based pivots."""
    m, n = x.shape[1:]
    k = min(m, n)
    pivots = np.zeros((x.shape[0], k), np.int64)
    at = np.arange(x.shape[0])
    for j in range(k):
        p = j + np.argmax(np.abs(x[:, j:, j]), axis=1)
        pivots[:, j] = p
        top = x[at, p].copy()
        x[at, p] = x[:, j]
        x[:, j] = top
        pivot = x[:, j, j]
        nonzero = (pivot != 0)[:, None]
        x[:, j + 1:, j] = np.where(nonzero, x[:, j + 1:, j] / np.where(nonzero, pivot[:, None],
                                                                         1), x[:, j + 1:, j])
        x[:, j + 1:, j + 1:] -= x[:, j + 1:, j, None] * x[:, j, None, j + 1:]
    return pivots


def _getrf_blocked(x: np.ndarray) -> np.ndarray:
    """LAPACK getrf's blocked LU of each matrix of x (count, m, n) in place: a panel of
    columns factored (getf2), its interchanges applied to the columns beside it, U's rows
    beside it solved by its unit lower L, the rest updated by one product. 0-based pivots."""
    m, n = x.shape[1:]
    k = min(m, n)
    pivots = np.zeros((x.shape[0], k), np.int64)
    for j in range(0, k, _LU_PANEL):
        end = min(j + _LU_PANEL, k)
        swaps = _getf2(x[:, j:, j:end])
        pivots[:, j:end] = swaps + j
        _swap_rows(x[:, j:, :j], swaps)
        if end < n:
            _swap_rows(x[:, j:, end:], swaps)
            x[:, j:end, end:] = _substitute(_triangle(x[:, j:end, j:end], False, True),
                                            x[:, j:end, end:], False)
            # contiguous operands: numpy's matmul of strided views does not reach BLAS
            x[:, end:, end:] -= (np.ascontiguousarray(x[:, end:, j:end])
                                 @ np.ascontiguousarray(x[:, j:end, end:]))
    return pivots


def _getrf(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """LAPACK getrf's LU with partial pivoting of each matrix of a (batched, any m x n): the
    packed factors (L's unit diagonal implied) and the 1-based pivots, k = min(m, n) of them.
    A zero pivot column is skipped, as LAPACK's (its info names it)."""
    m, n = a.shape[-2:]
    count = math.prod(a.shape[:-2])
    flat = np.array(a, dtype=a.dtype, copy=True).reshape(count, m, n)
    with np.errstate(divide="ignore", invalid="ignore"):
        pivots = _getrf_blocked(flat)
    return flat.reshape(a.shape), pivots.reshape(*a.shape[:-2], min(m, n)) + 1


def _lu_factor_impl(xp: Any, a: Any) -> Any:
    """LU and pivots packed as one array (..., m + 1, n): rows :m the factors, row m the
    pivots (as floats, exact) in its first min(m, n) places (one output per primitive)."""
    def host(m: np.ndarray) -> np.ndarray:
        lu, piv = _getrf(m)
        row = np.zeros((*m.shape[:-2], 1, m.shape[-1]), m.dtype)
        row[..., 0, :piv.shape[-1]] = piv
        return np.concatenate([lu, row], -2)

    return _on_host(xp, host, a)


def check_lu_factor(a: Any) -> None:
    """PyTorch's checks of linalg.lu_factor's argument (a meta or a tensor)."""
    if len(tuple(a.shape)) < 2:
        raise RuntimeError(f"torch.lu_factor: Expected tensor with 2 or more dimensions. Got "
                           f"size: {list(a.shape)} instead")
    _check_float("lu_factor", "lu_cpu", a)


def _lu_factor_infer(a: Any) -> tuple[tuple[int, ...], Any]:
    check_lu_factor(a)
    shape = tuple(a.shape)
    return (*shape[:-2], shape[-2] + 1, shape[-1]), a.dtype


def unpack_lu_factor(packed: Any) -> tuple[Any, Any]:
    """(LU, pivots as floats) of LU_FACTOR's packed output."""
    m, n = packed.shape[-2] - 1, packed.shape[-1]
    lu = F.getitem(packed, (Ellipsis, slice(0, m), slice(None)))
    return lu, F.getitem(packed, (Ellipsis, m, slice(0, min(m, n))))


def unpack_lu(lu: Any, pivots: Any, data: bool = True, perm: bool = True
              ) -> tuple[Any, Any, Any]:
    """P, L, U of packed factors and pivots (A = P L U), PyTorch's lu_unpack; P is None
    where not ``perm``, L and U None where not ``data``."""
    from ..creation import eye
    from .tensor_ops import tril, triu

    m, n = lu.shape[-2], lu.shape[-1]
    k = min(m, n)
    p = apply(LU_PERMUTATION, F.cast(pivots, lu.dtype), rows=m) if perm else None
    if not data:
        return p, None, None
    unit = eye(m, k, dtype=lu.dtype, device=lu.device)
    lower = F.add(tril(F.getitem(lu, (Ellipsis, slice(None), slice(0, k))), -1), unit)
    upper = triu(F.getitem(lu, (Ellipsis, slice(0, k), slice(None))))
    return p, lower, upper


def _lu_backward(gl: Any, gu: Any, p: Any, lower: Any, upper: Any) -> Any:
    """PyTorch's linalg_lu_backward (real, pivoted): square, wide and tall A = P L U."""
    from .tensor_ops import tril, triu

    m, n = lower.shape[-2], upper.shape[-1]
    k = min(m, n)

    def solve(a: Any, b: Any, up: bool, left: bool, unit: bool = False) -> Any:
        return apply(SOLVE_TRIANGULAR, a, b, upper=up, left=left, unitriangular=unit)

    if m == n:
        ga = F.add(tril(F.matmul(_mT(lower), gl), -1), triu(F.matmul(gu, _mT(upper))))
        ga = solve(_mT(upper), ga, False, False)
        ga = solve(_mT(lower), ga, True, True, True)
    elif m < n:
        cols1, cols2 = (Ellipsis, slice(None), slice(0, k)), (Ellipsis, slice(None), slice(k, n))
        u1 = F.getitem(upper, cols1)
        ga = F.sub(F.matmul(_mT(lower), gl), F.matmul(triu(gu), _mT(upper)))
        ga = solve(_mT(u1), tril(ga, -1), False, False)
        ga = F.cat([F.add(ga, triu(F.getitem(gu, cols1))), F.getitem(gu, cols2)], -1)
        ga = solve(_mT(lower), ga, True, True, True)
    else:
        rows1, rows2 = (Ellipsis, slice(0, k), slice(None)), (Ellipsis, slice(k, m), slice(None))
        l1 = F.getitem(lower, rows1)
        ga = F.sub(F.matmul(gu, _mT(upper)), F.matmul(_mT(lower), tril(gl, -1)))
        ga = solve(_mT(l1), triu(ga), True, True, True)
        ga = F.cat([F.add(ga, tril(F.getitem(gl, rows1), -1)), F.getitem(gl, rows2)], -2)
        ga = solve(_mT(upper), ga, False, False)
    return F.matmul(p, ga)


def _lu_factor_bwd(c: Any, g: Any) -> tuple[Any]:
    """PyTorch's lu_factor_ex_backward: the packed gradient split into L's strict lower part
    and U's upper part, then linalg_lu_backward."""
    from .tensor_ops import tril, triu

    lu, pivots = unpack_lu_factor(c.output())
    glu, _ = unpack_lu_factor(g)
    p, lower, upper = unpack_lu(lu, pivots)
    m, n = lu.shape[-2], lu.shape[-1]
    k = min(m, n)
    gl = tril(F.getitem(glu, (Ellipsis, slice(None), slice(0, k))), -1)
    gu = triu(F.getitem(glu, (Ellipsis, slice(0, k), slice(None))))
    return (_lu_backward(gl, gu, p, lower, upper),)


LU_FACTOR = register(Primitive(
    "linalg_lu_factor_ex", impl=_lu_factor_impl, infer=_lu_factor_infer,
    backward=_lu_factor_bwd, saves=("out",), flops=_cubic_flops))


def _permutation_impl(xp: Any, pivots: Any, rows: int) -> Any:
    """The permutation matrix P (A = P L U) of LAPACK's 1-based pivots (row i swapped with
    pivot i, in turn), in the pivots' (float) dtype."""
    def host(piv: np.ndarray) -> np.ndarray:
        batch = piv.shape[:-1]
        flat = piv.reshape(math.prod(batch), piv.shape[-1]).astype(np.int64) - 1
        perm = np.tile(np.arange(rows), (flat.shape[0], 1))
        at = np.arange(flat.shape[0])
        for i in range(flat.shape[1]):
            j = flat[:, i]
            perm[at, i], perm[at, j] = perm[at, j], perm[at, i].copy()
        p = np.zeros((flat.shape[0], rows, rows), piv.dtype)
        p[at[:, None], perm, np.arange(rows)] = 1
        return p.reshape(*batch, rows, rows)

    return _on_host(xp, host, pivots)


def _permutation_infer(pivots: Any, rows: int) -> tuple[tuple[int, ...], Any]:
    return (*tuple(pivots.shape)[:-1], rows, rows), pivots.dtype


LU_PERMUTATION = register(Primitive(
    "lu_permutation", impl=_permutation_impl, infer=_permutation_infer, differentiable=False,
    attrs=("rows",), flops=lambda out, args, attrs: 0))


# Pade approximant of degree 13 with scaling and squaring (Higham 2005, as SciPy's expm)
_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
           129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
           40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


def _expm(a: np.ndarray) -> np.ndarray:
    """exp of one square matrix: A / 2^s with |A / 2^s|_1 <= theta13, its [13/13] Pade
    approximant, squared s times."""
    n = a.shape[-1]
    if n == 0:
        return a.copy()
    work = a.astype(np.float64)
    norm = np.abs(work).sum(axis=0).max()
    if not np.isfinite(norm):
        return np.full_like(a, np.nan)
    s = max(0, int(np.ceil(np.log2(norm / _THETA13)))) if norm > 0 else 0
    work = work / 2.0 ** s
    b = _PADE13
    ident = np.eye(n)
    a2 = work @ work
    a4 = a2 @ a2
    a6 = a4 @ a2
    u = work @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2
                + b[1] * ident)
    v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 \
        + b[0] * ident
    r = np.linalg.solve(v - u, v + u)
    for _ in range(s):
        r = r @ r
    return r.astype(a.dtype)


def _matrix_exp_impl(xp: Any, a: Any) -> Any:
    def host(m: np.ndarray) -> np.ndarray:
        out = np.empty_like(m)
        for index in np.ndindex(*m.shape[:-2]):
            out[index] = _expm(m[index])
        return out

    return _on_host(xp, host, a)


def check_matrix_exp(a: Any) -> None:
    """PyTorch's checks of linalg.matrix_exp's argument (a meta or a tensor)."""
    shape = tuple(a.shape)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise RuntimeError("linalg.matrix_exp: The input tensor A must have at least 2 "
                           "dimensions." if len(shape) < 2 else
                           f"linalg.matrix_exp: A must be batches of square matrices, but "
                           f"they are {shape[-2]} by {shape[-1]} matrices")
    if not a.dtype.is_floating_point:
        raise RuntimeError(f"linalg.matrix_exp: Expected a floating point or complex tensor as "
                           f"input. Got {D.scalar_type_name(a.dtype)}")
    _check_float("matrix_exp", "matrix_exp_cpu", a)


def _matrix_exp_infer(a: Any) -> tuple[tuple[int, ...], Any]:
    check_matrix_exp(a)
    return tuple(a.shape), a.dtype


def _matrix_exp_bwd(c: Any, g: Any) -> tuple[Any]:
    """PyTorch's: the upper-right block of exp([[A^H, G], [0, A^H]]) (the Frechet derivative
    of exp at A^H in direction G), by this same primitive: twice differentiable too."""
    a = c.input(0)
    at = _mT(a)
    top = F.cat([at, g], -1)
    bottom = F.cat([F.mul(g, 0.0), at], -1)
    n = a.shape[-1]
    big = apply(MATRIX_EXP, F.cat([top, bottom], -2))
    return (F.getitem(big, (Ellipsis, slice(0, n), slice(n, 2 * n))),)


MATRIX_EXP = register(Primitive(
    "linalg_matrix_exp", impl=_matrix_exp_impl, infer=_matrix_exp_infer,
    backward=_matrix_exp_bwd, saves=(0,), flops=_cubic_flops))


def _pinv_impl(xp: Any, a: Any, atol: float, rtol: float, hermitian: bool) -> Any:
    """The pseudo-inverse: over the singular values (``hermitian``: the eigenvalues of the
    lower triangle, by size) above max(atol, rtol * the largest), inverted."""
    def host(m: np.ndarray) -> np.ndarray:
        if m.shape[-1] == 0 or m.shape[-2] == 0:
            return np.zeros((*m.shape[:-2], m.shape[-1], m.shape[-2]), m.dtype)
        if hermitian:
            values, left = np.linalg.eigh(m)
            sizes, right = np.abs(values), left
        else:
            if np.isnan(m).any():  # PyTorch's SVD error (an inf gives NaN values: zeros)
                raise LinAlgError("linalg.svd: The algorithm failed to converge because the "
                                  "input matrix contained non-finite values.")
            with np.errstate(invalid="ignore"):
                left, values, vh = np.linalg.svd(m, full_matrices=False)
            sizes, right = values, np.swapaxes(vh, -1, -2)
        cut = np.maximum(sizes.max(-1, keepdims=True) * rtol, atol)
        keep = sizes > cut
        inverse = np.where(keep, 1.0 / np.where(keep, values, 1.0), 0.0)
        return ((right * inverse[..., None, :]) @ np.swapaxes(left, -1, -2)).astype(m.dtype)

    return _on_host(xp, host, a)


def _pinv_infer(a: Any, atol: float, rtol: float, hermitian: bool
                ) -> tuple[tuple[int, ...], Any]:
    shape = tuple(a.shape)
    return (*shape[:-2], shape[-1], shape[-2]), a.dtype


def _pinv_bwd(c: Any, g: Any) -> tuple[Any]:
    """PyTorch's pinv_backward (Golub and Pereyra's derivative of the pseudo-inverse), for
    ``hermitian`` too: the gradient of a general A, as PyTorch's."""
    a, p = c.input(0), c.output()
    m, n = a.shape[-2], a.shape[-1]
    gh, ph = _mT(g), _mT(p)
    if m <= n:
        k = F.matmul(gh, p)
        kph = F.matmul(k, ph)
        ga = F.add(F.sub(kph, _mT(F.matmul(p, k))), F.sub(
            F.matmul(F.matmul(ph, p), F.sub(gh, F.matmul(k, a))),
            F.matmul(F.matmul(a, p), kph)))
    else:
        k = F.matmul(p, gh)
        phk = F.matmul(ph, k)
        ga = F.add(F.sub(phk, _mT(F.matmul(k, p))), F.sub(
            F.matmul(F.matmul(F.sub(gh, F.matmul(a, k)), p), ph),
            F.matmul(F.matmul(phk, p), a)))
    return (ga,)


PINV = register(Primitive(
    "linalg_pinv", impl=_pinv_impl, infer=_pinv_infer, backward=_pinv_bwd, saves=(0, "out"),
    attrs=("atol", "rtol", "hermitian"), flops=_cubic_flops))
