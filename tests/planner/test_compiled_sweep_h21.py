"""Compiled training steps with linear algebra against eager mode (h21's port of PyTorch's
test_linalg.py): norms of every order, cholesky/solve/triangular solves, inv/det/slogdet,
einsum/tensordot/multi_dot, eigh/svd gauge-invariant losses, a spectral-norm power
iteration, orthogonal regularization, pinv/lstsq, matrix_power and the add-a-product
family: the same losses, parameters and gradients after every call, and no fallback."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt

Loss = Callable[[dict[str, rt.Tensor], rt.Tensor], rt.Tensor]


def _spd(p: dict[str, rt.Tensor]) -> rt.Tensor:
    W = p["W"]
    return W @ W.mT + 4 * rt.eye(4, dtype=W.dtype)


def _norms(p: dict[str, rt.Tensor], x: rt.Tensor) -> rt.Tensor:
    y = x @ p["W"]
    return (
        rt.linalg.vector_norm(y, 3, dim=1).sum()
        + rt.linalg.norm(y, -1.5, 1).sum()
        + rt.linalg.matrix_norm(p["W"], "fro")
        + rt.linalg.matrix_norm(p["W"], 1)
        + rt.linalg.matrix_norm(p["W"], -float("inf"))
        + rt.linalg.vector_norm(y, 0.5)
        + rt.linalg.vector_norm(y, float("inf"), dim=0).sum()
    )


def _nuclear_and_spectral(p: dict[str, rt.Tensor], x: rt.Tensor) -> rt.Tensor:
    y = x @ p["W"]
    return (
        rt.linalg.matrix_norm(y, "nuc")
        + rt.linalg.matrix_norm(p["W"], 2)
        - 0.1 * rt.linalg.matrix_norm(p["W"], -2)
        + rt.linalg.svdvals(y).pow(2).sum()
    )


def _cholesky_solve(p: dict[str, rt.Tensor], x: rt.Tensor) -> rt.Tensor:
    A = _spd(p)
    L = rt.linalg.cholesky(A)
    z = rt.linalg.solve_triangular(L, x.mT, upper=False)
    sol = rt.linalg.solve(A, x.mT)
    return z.pow(2).sum() + sol.sum() + rt.cholesky_solve(x.mT, L).sum()


def _inverse_det(p: dict[str, rt.Tensor], x: rt.Tensor) -> rt.Tensor:
    A = _spd(p)
    sign, logabsdet = rt.linalg.slogdet(A)
    return (
        rt.linalg.inv(A).sum()
        + rt.linalg.det(p["W"] + 3 * rt.eye(4))
        + sign * logabsdet
        + (x @ rt.linalg.inv_ex(A).inverse).sum()
        + rt.logdet(A)
    )


def _einsum(p: dict[str, rt.Tensor], x: rt.Tensor) -> rt.Tensor:
    W, v = p["W"], p["v"]
    bilinear = rt.einsum("bi,ij,bj->b", x, W, x)
    traced = rt.einsum("ii", W) + rt.einsum("...i,i->...", x, v).sum()
    return (
        bilinear.pow(2).mean()
        + traced
        + rt.tensordot(x, W, dims=([1], [0])).sum()
        + rt.linalg.multi_dot([x, W, W.mT, v]).sum()
        + rt.einsum(W, [0, 1], v, [1], [0]).sum()
        + rt.einsum("i,j->ij", v, W[0]).pow(2).sum()  # nothing contracted: a mul
    )


def _eigh_svd(p: dict[str, rt.Tensor], x: rt.Tensor) -> rt.Tensor:
    A = _spd(p)
    w, V = rt.linalg.eigh(A)
    U, S, Vh = rt.linalg.svd(x @ p["W"], full_matrices=False)
    # gauge invariant: eigenvector and singular vector signs cancel
    return (
        w.pow(2).sum()
        + (V * V).mul(p["v"]).sum()
        + (U @ rt.diag_embed(S) @ Vh).sum()
        + rt.linalg.eigvalsh(A, UPLO="U").sum()
        + S.sum()
    )


def _power_iteration(p: dict[str, rt.Tensor], x: rt.Tensor) -> rt.Tensor:
    """Spectral normalization (torch.nn.utils.spectral_norm's): two power iterations without
    gradient, then sigma = u^T W v with gradient."""
    W = p["W"]
    with rt.no_grad():
        u = rt.ones(4, dtype=W.dtype) / 2
        for _ in range(2):
            v = rt.nn.functional.normalize(W.mT @ u, dim=0)
            u = rt.nn.functional.normalize(W @ v, dim=0)
    sigma = rt.dot(u, rt.mv(W, v))
    return (x @ (W / sigma)).pow(2).sum()


def _orthogonal_regularization(p: dict[str, rt.Tensor], x: rt.Tensor) -> rt.Tensor:
    W = p["W"]
    gram = W.mT @ W - rt.eye(4, dtype=W.dtype)
    return rt.linalg.matrix_norm(gram) ** 2 + (x @ W).tanh().sum() + rt.trace(gram).abs()


def _pinv_lstsq(p: dict[str, rt.Tensor], x: rt.Tensor) -> rt.Tensor:
    A = x @ p["W"]
    return (
        rt.linalg.pinv(A).sum()
        + rt.linalg.lstsq(A, x).solution.sum()
        + rt.linalg.matrix_rank(A.detach()).sum() * 0.0
        + rt.linalg.cond(_spd(p))
    )


def _powers_and_products(p: dict[str, rt.Tensor], x: rt.Tensor) -> rt.Tensor:
    W, v = p["W"], p["v"]
    A = W / 4 + rt.eye(4, dtype=W.dtype)
    return (
        rt.linalg.matrix_power(A, 3).sum()
        + rt.linalg.matrix_power(A, -2).sum()
        + rt.addmm(v, x, W, beta=0.5, alpha=2).sum()
        + rt.addmv(v, W, v, beta=0).sum()
        + rt.addr(W, v, v, alpha=0.5).sum()
        + rt.baddbmm(W, W.expand(2, 4, 4), W.expand(2, 4, 4)).sum()
        + rt.kron(W, v).sum()
        + rt.linalg.cross(W[:, :3], x[:4, :3]).sum()
        + rt.outer(v, v).sum()
        + rt.inner(x, W).sum()
        + rt.vdot(v, v)
    )


def _qr_householder(p: dict[str, rt.Tensor], x: rt.Tensor) -> rt.Tensor:
    A = x @ p["W"]
    Q, R = rt.linalg.qr(A)
    return R.abs().sum() + (Q @ R).pow(2).sum() + rt.linalg.vecdot(A, A).sum()


def _both(first: Loss, second: Loss) -> Loss:
    """One step of two losses (a compile each is the cost that counts here)."""
    return lambda p, x: first(p, x) + second(p, x)


_CASES: dict[str, Loss] = {
    "norms": _both(_norms, _nuclear_and_spectral),
    "solves": _both(_cholesky_solve, _inverse_det),
    "einsum_products": _both(_einsum, _powers_and_products),
    "spectral": _both(_eigh_svd, _qr_householder),
    "regularizers": _both(_power_iteration, _orthogonal_regularization),
    "pinv_lstsq": _pinv_lstsq,
}


def _train(
    loss_fn: Loss, compiled: bool, dtype: Any = rt.float32
) -> tuple[list[float], list[np.ndarray]]:
    rt.manual_seed(0)
    params = {
        "W": (rt.randn(4, 4) * 0.5).to(dtype).requires_grad_(),
        "v": rt.randn(4).to(dtype).requires_grad_(),
    }
    opt = rt.optim.SGD(list(params.values()), lr=0.01)

    def step(x: rt.Tensor) -> rt.Tensor:
        opt.zero_grad()
        loss = loss_fn(params, x)
        loss.backward()
        opt.step()
        return loss

    run = planner.compile(step) if compiled else step
    losses = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback to eager warns: fail on it
        for i in range(3):
            x = (rt.arange(24.0).reshape(6, 4).sin() * (i + 1)).to(dtype)
            losses.append(float(run(x)))
    state = [t.detach().numpy().copy() for t in params.values()]
    state += [t.grad.numpy().copy() for t in params.values() if t.grad is not None]
    return losses, state


@pytest.mark.parametrize("name", sorted(_CASES))
def test_compiled_linalg_step_equals_eager(name: str) -> None:
    eager_losses, eager_state = _train(_CASES[name], compiled=False, dtype=rt.float64)
    compiled_losses, compiled_state = _train(_CASES[name], compiled=True, dtype=rt.float64)
    np.testing.assert_allclose(compiled_losses, eager_losses, rtol=1e-10, atol=1e-10)
    assert len(compiled_state) == len(eager_state)
    for c, e in zip(compiled_state, eager_state, strict=True):
        np.testing.assert_allclose(c, e, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("name", ["solves"])
def test_compiled_linalg_step_equals_eager_float32(name: str) -> None:
    eager_losses, eager_state = _train(_CASES[name], compiled=False)
    compiled_losses, compiled_state = _train(_CASES[name], compiled=True)
    np.testing.assert_allclose(compiled_losses, eager_losses, rtol=1e-5, atol=1e-5)
    for c, e in zip(compiled_state, eager_state, strict=True):
        np.testing.assert_allclose(c, e, rtol=1e-4, atol=1e-5)


def _fallbacks(caught: list[warnings.WarningMessage]) -> list[str]:
    return [
        str(w.message)
        for w in caught
        if w.category is RuntimeWarning and str(w.message).startswith("planner")
    ]


def test_compiled_fixed_edge_cases_equal_eager() -> None:
    """The values h21 fixed, compiled as eager: cond of a batch with a singular matrix (inf,
    from inv_ex's info), a negative-order norm of infinities (inf), an empty matrix's
    positive-order norm (0), integer addmm/baddbmm with float beta and alpha (truncated,
    integer), a bool addr."""

    def step(a: rt.Tensor, v: rt.Tensor, m: rt.Tensor, b: rt.Tensor) -> tuple[rt.Tensor, ...]:
        return (
            rt.linalg.cond(a, 1),
            rt.linalg.cond(a, "fro"),
            rt.linalg.cond(a),
            rt.linalg.vector_norm(v, -2),
            rt.linalg.matrix_norm(a[:, :0], 1),
            rt.addmm(m, m, m, beta=2.5, alpha=1.7),
            rt.baddbmm(m.expand(2, 3, 3), m.expand(2, 3, 3), m.expand(2, 3, 3), beta=-1.5),
            rt.addr(b, b[0], b[1], beta=False),
        )

    compiled = planner.compile(step)
    for scale in (1.0, 2.0, 3.0):
        a = rt.eye(3).repeat(2, 1, 1) * scale
        a[1, 2, 2] = 0
        args = (
            a,
            rt.tensor([float("inf"), -float("inf")]) * scale,
            rt.arange(9).reshape(3, 3) * int(scale),
            rt.eye(3, dtype=rt.bool),
        )
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = compiled(*args)
        assert not _fallbacks(caught)
        want = step(*args)
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_array_equal(g.numpy(), w.numpy())


def test_compiled_rank_with_tensor_tolerances_and_right_solves_equal_eager() -> None:
    """matrix_rank with one atol per matrix and solve(left=False), compiled as eager."""

    def step(a: rt.Tensor, atol: rt.Tensor, b: rt.Tensor) -> tuple[rt.Tensor, ...]:
        return (
            rt.linalg.matrix_rank(a, atol=atol),
            rt.linalg.solve(a, b, left=False),
            rt.linalg.solve_ex(a, b, left=False).result,
        )

    compiled = planner.compile(step)
    for scale in (1.0, 2.0, 3.0):
        a = rt.eye(3).repeat(2, 1, 1) * rt.tensor([scale, 2 * scale]).reshape(2, 1, 1)
        args = (a, rt.tensor([1.5, 2.5]), rt.ones(2, 4, 3))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = compiled(*args)
        assert not _fallbacks(caught)
        for g, w in zip(got, step(*args), strict=True):
            assert g.dtype == w.dtype
            np.testing.assert_array_equal(g.numpy(), w.numpy())
