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
from .registry import Primitive, register



class LinAlgError(RuntimeError):
    """A singular or not positive-definite input (PyTorch's torch.linalg.LinAlgError)."""


def check_square(name: str, meta: Any) -> None:
    """PyTorch's checks: a floating dtype and batches of square matrices."""
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
    saves=("out",), flops=_cubic_flops))


def _det_impl(xp: Any, a: Any) -> Any:
    lib = _device_linalg(xp)
    out = lib.det(a) if lib is not None else _on_host(xp, np.linalg.det, a)
    return xp.asarray(out).astype(a.dtype)


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
    return xp.asarray(out).astype(a.dtype)


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

    phi = F.mul(phi, Tensor(half.astype(L.dtype.np), device=L.device))
    s = F.matmul(_mT(L_inv), F.matmul(phi, L_inv))
    return (F.mul(F.add(s, _mT(s)), 0.5),)


# the lower Cholesky factor (torch.linalg.cholesky's upper=True is its transpose)
CHOLESKY = register(Primitive(
    "linalg_cholesky", impl=_cholesky_impl, infer=_cholesky_infer, backward=_cholesky_bwd,
    saves=("out",), flops=_cubic_flops))


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

    eye = Tensor(np.eye(n, dtype=bool), device=V.device)
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

    eye = Tensor(np.eye(k, dtype=bool), device=u.device)
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
    if m > k:
        ga = F.add(ga, F.matmul(F.mul(F.sub(gu, F.matmul(u, uhgu)), s_inv), vh))
    if n > k:
        ga = F.add(ga, F.matmul(F.mul(u, s_inv), F.sub(gvh, F.matmul(_mT(vhgv), vh))))
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
