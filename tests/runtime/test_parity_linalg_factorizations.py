"""rt.linalg's triangular solves, LU family, *_ex variants, matrix_exp, Householder products,
tensorinv/tensorsolve, vander, and torch's top-level names (torch.svd, torch.lu, ...) against
PyTorch: values, float64 gradchecks (and PyTorch's gradients), batches, error texts."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt
from runtime.autograd import gradcheck, gradgradcheck

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(11)


def _arr(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


def _both(a: np.ndarray, grad: bool = False) -> tuple[Any, Any]:
    return (rt.tensor(a, dtype=rt.float64, requires_grad=grad),
            torch.tensor(a, dtype=torch.float64, requires_grad=grad))


def _close(ours: Any, theirs: Any, tol: float = 1e-10) -> None:
    if isinstance(theirs, (tuple, list)):
        assert len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            _close(o, t, tol)
        return
    got = ours.detach().numpy()
    want = theirs.detach().numpy()
    assert got.shape == want.shape
    if want.dtype.kind in "iu":
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype
    else:
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def _same_error(call: Callable[[Any], Any]) -> None:
    with pytest.raises(Exception) as expected:
        call(torch)
    with pytest.raises(Exception) as got:
        call(rt)
    assert str(got.value) == str(expected.value)
    kind = type(expected.value)
    if kind.__name__ == "_LinAlgError":
        assert isinstance(got.value, rt.linalg.LinAlgError)
    else:
        assert isinstance(got.value, kind)


def _grads_match(fn: Callable[[Any, Any], Any], *arrays: np.ndarray) -> None:
    """fn(lib, *tensors) summed with fixed weights: the same gradients as PyTorch's."""
    ours = [rt.tensor(a, dtype=rt.float64, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]

    def total(lib: Any, out: Any) -> Any:
        outs = out if isinstance(out, (tuple, list)) else (out,)
        s = 0
        for o in outs:
            if o.dtype.is_floating_point:
                w = np.cos(np.arange(o.numel())).reshape(tuple(o.shape))
                s = s + (o * lib.tensor(w, dtype=o.dtype)).sum()
        return s

    total(rt, fn(rt, *ours)).backward()
    total(torch, fn(torch, *theirs)).backward()
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=1e-8, atol=1e-9)


def _well_conditioned(*shape: int) -> np.ndarray:
    n = shape[-1]
    return _arr(*shape) + 3 * np.eye(n)


# ---- solve_triangular -----------------------------------------------------------------------

@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [True, False])
def test_solve_triangular(upper: bool, left: bool, unit: bool) -> None:
    a = _well_conditioned(2, 1, 4, 4)
    b = _arr(3, 4, 2) if left else _arr(3, 2, 4)
    fn = lambda lib, A, B: lib.linalg.solve_triangular(  # noqa: E731
        A, B, upper=upper, left=left, unitriangular=unit)
    _close(fn(rt, *(rt.tensor(x) for x in (a, b))), fn(torch, *(torch.tensor(x) for x in (a, b))))
    _grads_match(fn, a, b)
    A, B = rt.tensor(a, requires_grad=True), rt.tensor(b, requires_grad=True)
    assert gradcheck(lambda x, y: fn(rt, x, y), (A, B))


def test_solve_triangular_second_order_and_singular() -> None:
    a, b = _both(_well_conditioned(3, 3), True)[0], _both(_arr(3, 2), True)[0]
    assert gradgradcheck(lambda x, y: rt.linalg.solve_triangular(x, y, upper=True), (a, b))
    zero = np.zeros((2, 2))
    _close(rt.linalg.solve_triangular(rt.tensor(zero), rt.ones(2, 1, dtype=rt.float64),
                                      upper=True),
           torch.linalg.solve_triangular(torch.tensor(zero), torch.ones(2, 1, dtype=torch.float64),
                                         upper=True))


def test_solve_triangular_promotes_and_names_its_node() -> None:
    out = rt.linalg.solve_triangular(rt.eye(2, dtype=rt.float64), rt.ones(2, 1), upper=True)
    assert out.dtype is rt.float64
    a = rt.eye(2, dtype=rt.float64, requires_grad=True)
    node = rt.linalg.solve_triangular(a, rt.ones(2, 1, dtype=rt.float64), upper=False).grad_fn
    assert type(node).__name__ == "LinalgSolveTriangularBackward0"


@pytest.mark.parametrize("call", [
    lambda t: t.linalg.solve_triangular(t.randn(3, 3), t.randn(3, 2), upper=True, left=False),
    lambda t: t.linalg.solve_triangular(t.randn(3, 3), t.randn(3), upper=True),
    lambda t: t.linalg.solve_triangular(t.randn(3, 2), t.randn(3, 2), upper=True),
    lambda t: t.linalg.solve_triangular(t.randn(3, 3), t.randn(2, 2), upper=True),
    lambda t: t.linalg.solve_triangular(t.ones(3, 3, dtype=t.int64),
                                        t.ones(3, 2, dtype=t.int64), upper=True),
])
def test_solve_triangular_errors(call: Callable[[Any], Any]) -> None:
    _same_error(call)


# ---- LU -------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3), (3, 5), (5, 3), (2, 2, 4, 3),
                                   (70, 70), (2, 80, 45), (45, 80)])  # wider than a panel
def test_lu_factor_and_lu_match_torch(shape: tuple[int, ...]) -> None:
    a = _arr(*shape)
    ours, theirs = _both(a)
    _close(rt.linalg.lu_factor(ours), torch.linalg.lu_factor(theirs))
    _close(rt.linalg.lu_factor_ex(ours), torch.linalg.lu_factor_ex(theirs))
    _close(rt.linalg.lu(ours), torch.linalg.lu(theirs))
    P, L, U = rt.linalg.lu(ours)
    np.testing.assert_allclose((P @ L @ U).numpy(), a, atol=1e-12)


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3), (3, 5), (5, 3)])
def test_lu_gradients(shape: tuple[int, ...]) -> None:
    a = _arr(*shape)
    _grads_match(lambda lib, x: lib.linalg.lu_factor(x).LU, a)
    _grads_match(lambda lib, x: lib.linalg.lu(x)[1:], a)
    x = rt.tensor(a, requires_grad=True)
    assert gradcheck(lambda y: rt.linalg.lu(y)[1:], (x,))


def test_lu_factor_second_order() -> None:
    x = rt.tensor(_arr(3, 3), requires_grad=True)
    assert gradgradcheck(lambda y: rt.linalg.lu_factor(y).LU, (x,))


def test_lu_factor_ex_info_and_singular_errors() -> None:
    a = _arr(3, 4, 4)
    a[1] = 0
    a[2, :, 1:] = 0  # an exact zero pivot after the first
    ours, theirs = _both(a)
    _close(rt.linalg.lu_factor_ex(ours), torch.linalg.lu_factor_ex(theirs))
    big = _arr(50, 50)
    big[:, 40:] = 0  # zero pivots in the second panel
    _close(rt.linalg.lu_factor_ex(rt.tensor(big)), torch.linalg.lu_factor_ex(torch.tensor(big)))
    ours, theirs = _both(a)
    _close(rt.linalg.lu_factor_ex(ours), torch.linalg.lu_factor_ex(theirs))
    _same_error(lambda t: t.linalg.lu_factor(t.tensor(a)))
    _same_error(lambda t: t.linalg.lu_factor_ex(t.zeros(2, 2), check_errors=True))
    _same_error(lambda t: t.linalg.lu_factor(t.ones(2, 3)))


@pytest.mark.parametrize("call", [
    lambda t: t.linalg.lu_factor(t.randn(3, 3), pivot=False),
    lambda t: t.linalg.lu(t.randn(3, 3), pivot=False),
    lambda t: t.linalg.lu_factor(t.ones(3)),
    lambda t: t.linalg.lu_factor(t.ones(3, 3, dtype=t.int64)),
])
def test_lu_factor_errors(call: Callable[[Any], Any]) -> None:
    _same_error(call)


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [True, False])
def test_lu_solve(left: bool, adjoint: bool) -> None:
    a = _arr(2, 4, 4)
    b = _arr(2, 4, 3) if left else _arr(2, 3, 4)

    def fn(lib: Any, x: Any, y: Any) -> Any:
        lu, piv = lib.linalg.lu_factor(x)
        return lib.linalg.lu_solve(lu, piv, y, left=left, adjoint=adjoint)

    _close(fn(rt, *(rt.tensor(v) for v in (a, b))), fn(torch, *(torch.tensor(v) for v in (a, b))))
    _grads_match(fn, a, b)
    at = np.swapaxes(a, -1, -2)
    if left:
        want = np.linalg.solve(at if adjoint else a, b)
    else:  # X A = B: A^T X^T = B^T (adjoint: A X^T = B^T)
        want = np.swapaxes(np.linalg.solve(a if adjoint else at, np.swapaxes(b, -1, -2)), -1, -2)
    np.testing.assert_allclose(fn(rt, rt.tensor(a), rt.tensor(b)).numpy(), want, atol=1e-10)


@pytest.mark.parametrize("call", [
    lambda t: t.linalg.lu_solve(*t.linalg.lu_factor(t.eye(3)), t.randn(2, 3)),
    lambda t: t.linalg.lu_solve(*t.linalg.lu_factor(t.eye(3)), t.randn(3)),
    lambda t: t.linalg.lu_solve(t.linalg.lu_factor(t.eye(3))[0],
                                t.linalg.lu_factor(t.eye(3))[1].long(), t.randn(3, 1)),
    lambda t: t.linalg.lu_solve(*t.linalg.lu_factor(t.eye(3)), t.randn(3, 1).double()),
])
def test_lu_solve_errors(call: Callable[[Any], Any]) -> None:
    _same_error(call)


def test_lu_unpack_and_torch_lu() -> None:
    a = _arr(2, 4, 3)
    ours, theirs = _both(a)
    lu, piv = rt.linalg.lu_factor(ours)
    tlu, tpiv = torch.linalg.lu_factor(theirs)
    _close(rt.lu_unpack(lu, piv), torch.lu_unpack(tlu, tpiv))
    _close(rt.lu_unpack(lu, piv, unpack_data=False), torch.lu_unpack(tlu, tpiv, unpack_data=False))
    _close(rt.lu_unpack(lu, piv, unpack_pivots=False),
           torch.lu_unpack(tlu, tpiv, unpack_pivots=False))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _close(rt.lu(ours), torch.lu(theirs))
        _close(rt.lu(ours, get_infos=True), torch.lu(theirs, get_infos=True))
        _close(ours.lu(), theirs.lu())
        zero = rt.zeros(2, 2)
        assert rt.lu(zero, get_infos=True)[2].item() == 1  # no error, as torch.lu's
        b = _arr(2, 4, 2)
        sq, tsq = _both(_arr(2, 4, 4))
        _close(rt.lu_solve(rt.tensor(b), *rt.linalg.lu_factor(sq)),
               torch.lu_solve(torch.tensor(b), *torch.linalg.lu_factor(tsq)))
    _same_error(lambda t: t.lu_unpack(t.ones(2, 2), t.ones(2, dtype=t.int64)))


# ---- the *_ex variants ----------------------------------------------------------------------

def test_solve_ex_and_inv_ex() -> None:
    a, b = _well_conditioned(2, 3, 3), _arr(2, 3)
    ours, theirs = _both(a)
    _close(rt.linalg.solve_ex(ours, rt.tensor(b)), torch.linalg.solve_ex(theirs, torch.tensor(b)))
    _close(rt.linalg.solve_ex(ours, rt.tensor(_arr(2, 2, 3)), left=False),
           torch.linalg.solve_ex(theirs, torch.tensor(_arr(2, 2, 3)), left=False), 1e6)
    _close(rt.linalg.inv_ex(ours), torch.linalg.inv_ex(theirs))
    _grads_match(lambda lib, x, y: lib.linalg.solve_ex(x, y).result, a, b)
    _grads_match(lambda lib, x: lib.linalg.inv_ex(x).inverse, a)


def test_ex_variants_on_singular_input() -> None:
    a = _well_conditioned(2, 3, 3)
    a[1] = 0
    ours, theirs = _both(a)
    _close(rt.linalg.inv_ex(ours), torch.linalg.inv_ex(theirs))  # NaN and inf as torch's
    b = np.ones((2, 3, 1))
    _close(rt.linalg.solve_ex(ours, rt.tensor(b)).info,
           torch.linalg.solve_ex(theirs, torch.tensor(b)).info)
    _same_error(lambda t: t.linalg.inv_ex(t.tensor(a), check_errors=True))
    _same_error(lambda t: t.linalg.solve_ex(t.tensor(a), t.tensor(b), check_errors=True))
    _same_error(lambda t: t.linalg.solve_ex(t.tensor(a), t.ones(2, 3, 1), check_errors=True))
    _same_error(lambda t: t.linalg.inv_ex(t.ones(2, 3)))


def test_cholesky_ex() -> None:
    s = _arr(2, 3, 3)
    spd = s @ np.swapaxes(s, -1, -2) + np.eye(3)
    ours, theirs = _both(spd)
    _close(rt.linalg.cholesky_ex(ours), torch.linalg.cholesky_ex(theirs))
    _close(rt.linalg.cholesky_ex(ours, upper=True), torch.linalg.cholesky_ex(theirs, upper=True))
    _grads_match(lambda lib, x: lib.linalg.cholesky_ex(x).L, spd)
    # not positive-definite: LAPACK's partial factor and its info, no error
    for bad in ([[1.0, 2.0], [2.0, 1.0]], [[4.0, 2, 1], [2, 1, 3], [1, 3, 5]], -np.eye(2)):
        _close(rt.linalg.cholesky_ex(rt.tensor(bad)), torch.linalg.cholesky_ex(torch.tensor(bad)))
    _same_error(lambda t: t.linalg.cholesky_ex(t.stack([t.eye(2), -t.eye(2)]),
                                               check_errors=True))
    _same_error(lambda t: t.linalg.cholesky_ex(t.ones(2, 2, dtype=t.int64)))


# ---- matrix_exp -----------------------------------------------------------------------------

@pytest.mark.parametrize("scale", [0.01, 1.0, 8.0])
def test_matrix_exp(scale: float) -> None:
    a = _arr(2, 4, 4) * scale
    ours, theirs = _both(a)
    want = torch.linalg.matrix_exp(theirs)
    got = rt.linalg.matrix_exp(ours)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-11,
                               atol=1e-11 * np.abs(want.numpy()).max())
    _close(rt.matrix_exp(ours), want, 1e-9 * max(1.0, np.abs(want.numpy()).max()))
    _close(ours.matrix_exp(), want, 1e-9 * max(1.0, np.abs(want.numpy()).max()))


def test_matrix_exp_gradients_and_identities() -> None:
    a = _arr(3, 3)
    _grads_match(lambda lib, x: lib.linalg.matrix_exp(x), a)
    x = rt.tensor(a, requires_grad=True)
    assert gradcheck(rt.linalg.matrix_exp, (x,))
    assert gradgradcheck(rt.linalg.matrix_exp, (x,))
    skew = a - a.T  # exp of a skew-symmetric matrix is orthogonal
    q = rt.linalg.matrix_exp(rt.tensor(skew)).numpy()
    np.testing.assert_allclose(q @ q.T, np.eye(3), atol=1e-12)
    np.testing.assert_allclose(rt.linalg.matrix_exp(rt.zeros(0, 0)).numpy(), np.zeros((0, 0)))
    _same_error(lambda t: t.linalg.matrix_exp(t.ones(2, 3)))


# ---- Householder: householder_product, geqrf, orgqr, ormqr, complete QR ----------------------

def test_householder_product_and_geqrf() -> None:
    a = _arr(2, 5, 3)
    ours, theirs = _both(a)
    _close(rt.geqrf(ours), torch.geqrf(theirs))
    ra, rtau = rt.geqrf(ours)
    ta, ttau = torch.geqrf(theirs)
    _close(rt.linalg.householder_product(ra, rtau), torch.linalg.householder_product(ta, ttau))
    _close(rt.orgqr(ra, rtau), torch.orgqr(ta, ttau))
    _close(ra.orgqr(rtau), ta.orgqr(ttau))
    _grads_match(lambda lib, x, t: lib.linalg.householder_product(x, t), a, _arr(2, 2))
    x, t = rt.tensor(a, requires_grad=True), rt.tensor(_arr(2, 3), requires_grad=True)
    assert gradcheck(rt.linalg.householder_product, (x, t))
    g = rt.geqrf(rt.tensor(a, requires_grad=True)).a
    with pytest.raises(NotImplementedError, match="the derivative for 'geqrf' is not impl"):
        g.sum().backward()


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [True, False])
def test_ormqr(left: bool, transpose: bool) -> None:
    ra, rtau = rt.geqrf(rt.tensor(_arr(5, 3)))
    ta, ttau = torch.tensor(ra.numpy()), torch.tensor(rtau.numpy())
    c = _arr(5, 2) if left else _arr(2, 5)
    _close(rt.ormqr(ra, rtau, rt.tensor(c), left, transpose),
           torch.ormqr(ta, ttau, torch.tensor(c), left, transpose))


@pytest.mark.parametrize("call", [
    lambda t: t.ormqr(t.ones(4, 3), t.ones(3), t.ones(5, 2)),
    lambda t: t.ormqr(t.ones(4, 3), t.ones(3), t.ones(2, 5), left=False),
    lambda t: t.ormqr(t.ones(4, 3), t.ones(4), t.ones(4, 2)),
    lambda t: t.ormqr(t.ones(4, 3), t.ones(3), t.ones(4, 2).double()),
    lambda t: t.linalg.householder_product(t.ones(2, 3), t.ones(1)),
    lambda t: t.linalg.householder_product(t.ones(3, 2), t.ones(3)),
    lambda t: t.linalg.householder_product(t.ones(3, 2), t.ones(2).double()),
    lambda t: t.linalg.householder_product(t.ones(2, 3, 2), t.ones(3, 2)),
    lambda t: t.geqrf(t.ones(3)),
])
def test_householder_errors(call: Callable[[Any], Any]) -> None:
    _same_error(call)


def test_complete_qr_of_a_tall_matrix() -> None:
    a = _arr(2, 5, 3)
    ours, theirs = _both(a, True)
    _close(rt.linalg.qr(ours, mode="complete"), torch.linalg.qr(theirs, mode="complete"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _close(rt.qr(ours, some=False), torch.qr(theirs, some=False))
    q, r = rt.linalg.qr(ours, mode="complete")
    with pytest.raises(RuntimeError, match="not differentiable when mode='complete'"):
        (q.sum() + r.sum()).backward()


# ---- torch-level names ------------------------------------------------------------------------

def test_torch_svd() -> None:
    a = _arr(2, 4, 3)
    ours, theirs = _both(a)
    for some in (True, False):
        U, S, V = rt.svd(ours, some=some)
        tU, tS, tV = torch.svd(theirs, some=some)
        assert U.shape == tU.shape and V.shape == tV.shape
        _close(S, tS)
        k = 3
        recon = (U[..., :k] * S[..., None, :]) @ V[..., :k].mT
        np.testing.assert_allclose(recon.numpy(), a, atol=1e-12)
    _close(rt.svd(ours, compute_uv=False), torch.svd(theirs, compute_uv=False))
    _close(ours.svd().S, theirs.svd().S)
    _grads_match(lambda lib, x: lib.svd(x)[1], a)


def test_torch_cholesky_family() -> None:
    s = _arr(2, 3, 3)
    spd = s @ np.swapaxes(s, -1, -2) + np.eye(3)
    ours, theirs = _both(spd)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        L, tL = rt.cholesky(ours), torch.cholesky(theirs)
        _close(L, tL)
        _close(rt.cholesky(ours, upper=True), torch.cholesky(theirs, upper=True))
        _close(ours.cholesky(), theirs.cholesky())
        _same_error(lambda t: t.cholesky(-t.eye(2)))
    _close(rt.cholesky_inverse(L), torch.cholesky_inverse(tL))
    _close(rt.cholesky_inverse(L.mT, upper=True), torch.cholesky_inverse(tL.mT, upper=True))
    _close(L.cholesky_inverse(), tL.cholesky_inverse())
    b = _arr(2, 3, 2)
    _close(rt.cholesky_solve(rt.tensor(b), L), torch.cholesky_solve(torch.tensor(b), tL))
    _close(rt.cholesky_solve(rt.tensor(b), L.mT, upper=True),
           torch.cholesky_solve(torch.tensor(b), tL.mT, upper=True))
    _close(rt.tensor(b).cholesky_solve(L), torch.tensor(b).cholesky_solve(tL))
    lower = np.linalg.cholesky(spd)
    _grads_match(lambda lib, x: lib.cholesky_inverse(lib.tril(x)), lower)
    _grads_match(lambda lib, y, x: lib.cholesky_solve(y, lib.tril(x)), b, lower)


@pytest.mark.parametrize("call", [
    lambda t: t.cholesky_solve(t.ones(3), t.eye(3)),
    lambda t: t.cholesky_solve(t.ones(2, 1), t.eye(3)),
    lambda t: t.cholesky_solve(t.ones(3, 1).double(), t.eye(3)),
    lambda t: t.cholesky_inverse(t.ones(2, 3)),
    lambda t: t.cholesky_inverse(t.ones(3)),
    lambda t: t.matrix_rank(t.ones(2, 2)),
    lambda t: t.lstsq(t.ones(2, 2), t.ones(2, 2)),
    lambda t: t.ones(2, 2).lstsq(t.ones(2, 2)),
])
def test_torch_level_errors(call: Callable[[Any], Any]) -> None:
    _same_error(call)


@pytest.mark.parametrize("transpose", [True, False])
@pytest.mark.parametrize("upper", [True, False])
def test_triangular_solve(transpose: bool, upper: bool) -> None:
    a, b = _well_conditioned(2, 3, 3), _arr(2, 3, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _close(rt.triangular_solve(rt.tensor(b), rt.tensor(a), upper, transpose),
               torch.triangular_solve(torch.tensor(b), torch.tensor(a), upper, transpose))
        _grads_match(lambda lib, y, x: lib.triangular_solve(y, x, upper, transpose).solution,
                     b, a)
        _same_error(lambda t: t.triangular_solve(t.randn(2, 3), t.randn(3, 3)))


def test_deprecation_warnings_as_torch() -> None:
    a = rt.eye(2, dtype=rt.float64)
    for call, name in ((lambda: rt.qr(a), "torch.qr is deprecated"),
                       (lambda: rt.lu(a), "torch.lu is deprecated"),
                       (lambda: rt.cholesky(a), "torch.cholesky is deprecated"),
                       (lambda: rt.triangular_solve(a, a), "torch.triangular_solve is deprec"),
                       (lambda: rt.lu_solve(a, *rt.linalg.lu_factor(a)), "torch.lu_solve is dep"),
                       (lambda: rt.nuclear_norm(a), "at::nuclear_norm is deprecated"),
                       (lambda: rt.frobenius_norm(a, (0, 1)), "at::frobenius_norm is deprec")):
        with pytest.warns(UserWarning, match=name):
            call()


@pytest.mark.filterwarnings("ignore:at::")
def test_norms() -> None:
    a = _arr(2, 3, 4)
    ours, theirs = _both(a)
    _close(rt.nuclear_norm(ours), torch.nuclear_norm(theirs))
    _close(rt.nuclear_norm(ours, True), torch.nuclear_norm(theirs, True))
    _close(rt.nuclear_norm(ours, (0, 1)), torch.nuclear_norm(theirs, (0, 1)))
    _close(rt.nuclear_norm(ours, (0, 2), True), torch.nuclear_norm(theirs, (0, 2), True))
    _close(rt.frobenius_norm(ours, (0, 1)), torch.frobenius_norm(theirs, (0, 1)))
    _close(rt.frobenius_norm(ours, (1,), True), torch.frobenius_norm(theirs, (1,), True))
    _grads_match(lambda lib, x: lib.nuclear_norm(x), a)


def test_lowrank_reconstructs_and_is_seeded() -> None:
    low = _arr(20, 4) @ _arr(4, 30)
    rt.manual_seed(3)
    U, S, V = rt.svd_lowrank(rt.tensor(low), q=6)
    assert tuple(U.shape) == (20, 6) and tuple(S.shape) == (6,) and tuple(V.shape) == (30, 6)
    np.testing.assert_allclose(((U * S) @ V.mT).numpy(), low, atol=1e-9)
    np.testing.assert_allclose(S.numpy()[:4], np.linalg.svd(low, compute_uv=False)[:4],
                               rtol=1e-10)
    rt.manual_seed(3)
    again = rt.svd_lowrank(rt.tensor(low), q=6)[0]
    np.testing.assert_array_equal(U.numpy(), again.numpy())
    wide = rt.svd_lowrank(rt.tensor(low.T), q=6)
    np.testing.assert_allclose(((wide[0] * wide[1]) @ wide[2].mT).numpy(), low.T, atol=1e-9)
    data = _arr(50, 5) @ np.diag([5.0, 3.0, 1.0, 0.1, 0.01]) + 7.0
    U, S, V = rt.pca_lowrank(rt.tensor(data), q=3)
    centered = data - data.mean(0)
    np.testing.assert_allclose(S.numpy(), np.linalg.svd(centered, compute_uv=False)[:3],
                               rtol=1e-3)
    _same_error(lambda t: t.pca_lowrank(t.ones(5, 4), q=5))


# ---- tensorinv, tensorsolve, vander, aliases, eig -------------------------------------------

def test_tensorinv_and_tensorsolve() -> None:
    a = (_arr(24, 24) + 5 * np.eye(24)).reshape(4, 6, 8, 3)
    ours, theirs = _both(a)
    _close(rt.linalg.tensorinv(ours), torch.linalg.tensorinv(theirs), 1e-9)
    b = _arr(4, 6)
    _close(rt.linalg.tensorsolve(ours, rt.tensor(b)),
           torch.linalg.tensorsolve(theirs, torch.tensor(b)), 1e-9)
    small = (_arr(4, 4) + 3 * np.eye(4)).reshape(2, 2, 4)
    _grads_match(lambda lib, x: lib.linalg.tensorinv(x, ind=2), small)
    _same_error(lambda t: t.linalg.tensorinv(t.ones(2, 3, 4)))
    _same_error(lambda t: t.linalg.tensorinv(t.ones(4, 2, 2), ind=0))
    _same_error(lambda t: t.linalg.tensorsolve(t.ones(2, 3, 6), t.ones(3)))


def test_tensorsolve_dims() -> None:
    a = (_arr(12, 12) + 6 * np.eye(12)).reshape(3, 4, 2, 6)
    b = _arr(3, 4)
    ours, theirs = _both(a)
    _close(rt.linalg.tensorsolve(ours, rt.tensor(b), dims=(2,)),
           torch.linalg.tensorsolve(theirs, torch.tensor(b), dims=(2,)), 1e-9)


def test_vander() -> None:
    for x in ([1, 2, 3], [1.5, -2.0, 0.5, 3.0]):
        _close(rt.linalg.vander(rt.tensor(x)), torch.linalg.vander(torch.tensor(x)))
        _close(rt.linalg.vander(rt.tensor(x), N=5), torch.linalg.vander(torch.tensor(x), N=5))
    batch = _arr(2, 3)
    _close(rt.linalg.vander(rt.tensor(batch), N=4), torch.linalg.vander(torch.tensor(batch), N=4))
    _grads_match(lambda lib, x: lib.linalg.vander(x, N=4), batch)
    _same_error(lambda t: t.linalg.vander(t.tensor([1.0, 2.0]), N=1))
    _same_error(lambda t: t.linalg.vander(t.tensor(2.0)))


def test_aliases_and_eig() -> None:
    a = _arr(2, 3, 4)
    ours, theirs = _both(a)
    _close(rt.linalg.diagonal(ours), torch.linalg.diagonal(theirs))
    _close(rt.linalg.diagonal(ours, offset=1, dim1=0, dim2=2),
           torch.linalg.diagonal(theirs, offset=1, dim1=0, dim2=2))
    np.testing.assert_allclose(rt.linalg.matmul(ours, rt.tensor(np.eye(4))).numpy(), a)
    for fn in (rt.linalg.eig, rt.linalg.eigvals):
        with pytest.raises(NotImplementedError, match="complex"):
            fn(rt.eye(2))


def test_every_torch_linalg_name_exists() -> None:
    missing = [n for n in dir(torch.linalg) if not n.startswith("_")
               and not hasattr(rt.linalg, n) and n not in ("common_notes",)]
    assert not missing


def test_a_compiled_step_matches_eager() -> None:
    """The new primitives capture (their shape rules, their backward formulas) into a plan."""
    planner = pytest.importorskip("planner")
    a = rt.tensor(_well_conditioned(4, 4) + 1.0, requires_grad=True)
    b = rt.tensor(_arr(4, 2))

    def step(rhs: Any) -> Any:
        x = rt.linalg.solve_triangular(a, rhs, upper=True)
        lu, piv, info = rt.linalg.lu_factor_ex(a)
        y = rt.linalg.lu_solve(lu, piv, rhs, adjoint=True)
        z = rt.linalg.matrix_exp(a * 0.1)
        _, lower, upper = rt.linalg.lu(a)
        loss = (x ** 2).sum() + (y ** 2).sum() + z.sum() + (lower * upper[:1]).sum() + info.sum()
        loss.backward()
        return loss

    results = []
    for run in (step, planner.compile(step)):
        for _ in range(2):
            a.grad = None
            with warnings.catch_warnings():
                warnings.simplefilter("error", RuntimeWarning)  # no eager fallback
                loss = run(b)
        results.append((loss.item(), a.grad.numpy().copy()))
    assert results[0][0] == pytest.approx(results[1][0], rel=1e-12)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-10, atol=1e-12)


# ---- LDL^T ------------------------------------------------------------------------------------

def _symmetric(n: int, trial: int) -> np.ndarray:
    a = _arr(n, n)
    a = a + a.T
    if trial % 3 == 0:  # small diagonal: 2x2 pivots and interchanges
        a[np.diag_indices(n)] *= 0.01
    if trial % 4 == 1 and n > 2:
        a[0, 0] = a[1, 1] = 0.0
    return a


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_ldl_factor_and_solve_match_lapack(n: int) -> None:
    """LAPACK sytrf's pivots exactly (Bunch-Kaufman's choices), its factors and sytrs' solve."""
    for trial in range(12):
        a = _symmetric(n, trial)
        ours, theirs = rt.linalg.ldl_factor(rt.tensor(a)), torch.linalg.ldl_factor(
            torch.tensor(a))
        np.testing.assert_array_equal(ours.pivots.numpy(), theirs.pivots.numpy())
        assert ours.pivots.dtype is rt.int32
        _close(ours.LD, theirs.LD, 1e-9)
        b = _arr(n, 3)
        x = rt.linalg.ldl_solve(ours.LD, ours.pivots, rt.tensor(b))
        _close(x, torch.linalg.ldl_solve(theirs.LD, theirs.pivots, torch.tensor(b)), 1e-8)
        np.testing.assert_allclose(a @ x.numpy(), b, atol=1e-9)


def test_ldl_batches_info_and_no_derivative() -> None:
    a = np.stack([_symmetric(4, 0), np.zeros((4, 4)), _symmetric(4, 1)])
    ours, theirs = _both(a, True)
    got, want = rt.linalg.ldl_factor_ex(ours), torch.linalg.ldl_factor_ex(theirs)
    _close(got, want, 1e-10)
    good = [0, 2]
    b = _arr(2, 4, 2)
    _close(rt.linalg.ldl_solve(got.LD[good], got.pivots[good], rt.tensor(b)),
           torch.linalg.ldl_solve(want.LD[good].detach(), want.pivots[good], torch.tensor(b)),
           1e-9)
    # batch axes broadcast (torch 2.13's ldl_solve crashes on that: compared with numpy)
    b = _arr(3, 1, 4, 2)
    x = rt.linalg.ldl_solve(got.LD[good].detach(), got.pivots[good], rt.tensor(b))
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(a[good], b), atol=1e-9)
    with pytest.raises(RuntimeError, match="derivative for aten::linalg_ldl_factor_ex is not"):
        got.LD.sum().backward()
    rhs = rt.tensor(_arr(4, 2), requires_grad=True)
    x = rt.linalg.ldl_solve(got.LD[0].detach(), got.pivots[0], rhs)
    with pytest.raises(RuntimeError, match="derivative for aten::linalg_ldl_solve is not"):
        x.sum().backward()
    with pytest.raises(RuntimeError, match=r"\(Batch element 1\): D\[1,1\] is zero"):
        rt.linalg.ldl_factor(ours)


@pytest.mark.parametrize("call", [
    lambda t: t.linalg.ldl_factor(t.ones(2, 3)),
    lambda t: t.linalg.ldl_factor(t.ones(3)),
    lambda t: t.linalg.ldl_factor(t.ones(3, 3, dtype=t.int64)),
    lambda t: t.linalg.ldl_solve(*t.linalg.ldl_factor(t.eye(4)), t.randn(3, 2)),
    lambda t: t.linalg.ldl_solve(*t.linalg.ldl_factor(t.eye(4)), t.randn(4)),
    lambda t: t.linalg.ldl_solve(*t.linalg.ldl_factor(t.eye(4)), t.randn(4, 2).double()),
    lambda t: t.linalg.ldl_solve(t.eye(4), t.linalg.ldl_factor(t.eye(4))[1].float(),
                                 t.randn(4, 2)),
    lambda t: t.linalg.ldl_solve(t.eye(4), t.linalg.ldl_factor(t.eye(4))[1][:3],
                                 t.randn(4, 2)),
])
def test_ldl_errors(call: Callable[[Any], Any]) -> None:
    _same_error(call)


@pytest.mark.parametrize(("call", "shapes"), [
    (lambda m, a: m.linalg.lu_factor_ex(a), [(0, 0)]),
    (lambda m, a: m.linalg.lu_factor_ex(a), [(2, 0, 3)]),
    (lambda m, a: m.linalg.lu_factor_ex(a), [(0, 3, 3)]),
    (lambda m, a: m.linalg.lu(a), [(3, 0)]),
    (lambda m, a: m.linalg.lu(a), [(0, 3)]),
    (lambda m, a, b: m.linalg.solve_triangular(a, b, upper=True), [(0, 0), (0, 2)]),
    (lambda m, a, b: m.linalg.solve_triangular(a, b, upper=True), [(3, 3), (3, 0)]),
    (lambda m, a: m.linalg.matrix_exp(a), [(0, 3, 3)]),
    (lambda m, a: m.linalg.inv_ex(a), [(0, 0)]),
    (lambda m, a: m.linalg.cholesky_ex(a), [(0, 0)]),
    (lambda m, a: m.linalg.ldl_factor_ex(a), [(0, 0)]),
    (lambda m, a: m.geqrf(a), [(0, 3)]),
    (lambda m, a: m.linalg.qr(a, mode="complete"), [(4, 0)]),
    (lambda m, a: m.svd(a), [(3, 0)]),
])
def test_empty_shapes_and_dtypes_as_torch(call: Callable[..., Any], shapes: list[Any]) -> None:
    arrays = [np.zeros(s, np.float32) for s in shapes]

    def described(m: Any) -> list[tuple[Any, str]]:
        out = call(m, *(m.tensor(a) for a in arrays))
        outs = out if isinstance(out, tuple) else (out,)
        return [(tuple(o.shape), str(o.dtype).rsplit(".", 1)[-1]) for o in outs]

    assert described(rt) == described(torch)


def test_out_arguments_as_torch() -> None:
    a = _well_conditioned(3, 3)
    b = _arr(3, 2)
    sums = []
    for m in (rt, torch):
        A, B = m.tensor(a), m.tensor(b)
        lu, piv = m.empty(3, 3, dtype=m.float64), m.empty(3, dtype=m.int32)
        m.linalg.lu_factor(A, out=(lu, piv))
        x = m.empty(3, 2, dtype=m.float64)
        m.linalg.lu_solve(lu, piv, B, out=x)
        t = m.empty(3, 2, dtype=m.float64)
        m.linalg.solve_triangular(A, B, upper=True, out=t)
        ld, pv = m.empty(3, 3, dtype=m.float64), m.empty(3, dtype=m.int32)
        m.linalg.ldl_factor(A + A.mT, out=(ld, pv))
        h = m.empty(3, 3, dtype=m.float64)
        m.linalg.householder_product(A, B[:, 0], out=h)
        sums.append([v.sum().item() for v in (lu, x, t, ld, h)] + piv.tolist())
        with pytest.raises(TypeError):
            m.linalg.matrix_exp(A, out=m.empty(3, 3, dtype=m.float64))
    np.testing.assert_allclose(sums[0], sums[1], rtol=1e-10)


@pytest.mark.parametrize("driver", [None, "gelsy", "gelsd", "gelss", "gels"])
@pytest.mark.parametrize(("shape_a", "shape_b", "deficient"), [
    ((5, 3), (5, 2), False), ((2, 5, 3), (2, 5, 2), False), ((3, 5), (3, 2), False),
    ((5, 3), (5,), False), ((5, 3), (5, 2), True)])
def test_lstsq_reports_what_each_driver_does(driver: str | None, shape_a: tuple[int, ...],
                                             shape_b: tuple[int, ...], deficient: bool) -> None:
    if deficient and driver == "gels":
        return  # gels assumes full rank: LAPACK's answer is then not defined
    a, b = _arr(*shape_a), _arr(*shape_b)
    if deficient:
        a[..., 2] = a[..., 1]
    ours = rt.linalg.lstsq(rt.tensor(a), rt.tensor(b), driver=driver)
    theirs = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)
    fields = ("residuals", "rank", "singular_values") if deficient else (
        "solution", "residuals", "rank", "singular_values")
    for name in fields:
        _close(getattr(ours, name), getattr(theirs, name), 1e-10)


def test_lstsq_residual_gradient_and_driver_error() -> None:
    _grads_match(lambda lib, x, y: lib.linalg.lstsq(x, y, driver="gelsd")[:2],
                 _arr(2, 5, 3), _arr(2, 5, 2))
    _same_error(lambda t: t.linalg.lstsq(t.ones(3, 2), t.ones(3, 1), driver="foo"))


@pytest.mark.parametrize(("shape", "hermitian"), [((4, 4), True), ((2, 4, 4), True),
                                                  ((4, 4), False), ((3, 5), False),
                                                  ((2, 5, 3), False)])
def test_pinv_values_and_gradients_as_torch(shape: tuple[int, ...], hermitian: bool) -> None:
    """hermitian: only the lower triangle read, and PyTorch's gradient is that of a general A
    (not symmetrized), pinv_backward's."""
    a = _arr(*shape)
    if hermitian:
        a[..., 0, 1:] = 0.0  # not symmetric: the upper triangle is not read
    ours, theirs = _both(a)
    _close(rt.linalg.pinv(ours, hermitian=hermitian), torch.linalg.pinv(theirs, hermitian=hermitian))
    _close(rt.linalg.pinv(ours, atol=0.5, hermitian=hermitian),
           torch.linalg.pinv(theirs, atol=0.5, hermitian=hermitian))
    _close(rt.linalg.matrix_rank(ours, rtol=0.3, hermitian=hermitian),
           torch.linalg.matrix_rank(theirs, rtol=0.3, hermitian=hermitian))
    sym = a + np.swapaxes(a, -1, -2) if hermitian else a
    _grads_match(lambda lib, x: lib.linalg.pinv(x, hermitian=hermitian), sym)
    x = rt.tensor(sym, requires_grad=True)
    assert type(rt.linalg.pinv(x, hermitian=hermitian).grad_fn).__name__ == "LinalgPinvBackward0"
    if not hermitian:
        assert gradcheck(rt.linalg.pinv, (x,))


def test_pinv_of_non_finite_matrices() -> None:
    for hermitian in (False, True):
        for bad in (float("inf"), float("nan")):
            m = [[bad, 1.0], [1.0, 1.0]]
            try:
                want = torch.linalg.pinv(torch.tensor(m), hermitian=hermitian)
            except Exception:  # noqa: BLE001 - torch's error is the expectation
                _same_error(lambda t, m=m: t.linalg.pinv(t.tensor(m), hermitian=hermitian))
                continue
            _close(rt.linalg.pinv(rt.tensor(m), hermitian=hermitian), want)
