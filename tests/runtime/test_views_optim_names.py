"""The backward nodes of linalg factorizations and solves, frexp and quantile carry torch 2.13's
names (``type(y.grad_fn).__name__`` of each output), and frexp's mantissa has torch's gradient
(it had none: the mantissa came from numpy, cut from the graph)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt
from runtime.autograd.gradcheck import gradcheck

torch = pytest.importorskip("torch")

R = np.random.default_rng(4)
A = R.standard_normal((4, 4))
S = A @ A.T + 4 * np.eye(4)
M = R.standard_normal((5, 3))
V = R.standard_normal(7)
CHOL = np.linalg.cholesky(S)
UPPER = np.triu(A) + 4 * np.eye(4)


def _lu(lib: Any, t: Callable[[Any], Any]) -> Any:
    return lib.linalg.lu_factor(t(A))


CASES: dict[str, Callable[[Any, Callable[[Any], Any]], Any]] = {
    "linalg.qr": lambda m, t: m.linalg.qr(t(M)),
    "linalg.qr_complete": lambda m, t: m.linalg.qr(t(M.T), mode="complete"),
    "qr": lambda m, t: m.qr(t(M)),
    "linalg.svd": lambda m, t: m.linalg.svd(t(M), full_matrices=False),
    "linalg.svd_full": lambda m, t: m.linalg.svd(t(M)),
    "svdvals": lambda m, t: m.linalg.svdvals(t(M)),
    "svd": lambda m, t: m.svd(t(M)),
    "svd_no_uv": lambda m, t: m.svd(t(M), compute_uv=False),
    "eigh": lambda m, t: m.linalg.eigh(t(S)),
    "eigvalsh": lambda m, t: m.linalg.eigvalsh(t(S)),
    "lu_factor": _lu,
    "lu_factor_ex": lambda m, t: m.linalg.lu_factor_ex(t(A)),
    "lu": lambda m, t: m.linalg.lu(t(A)),
    "torch.lu": lambda m, t: m.lu(t(A)),
    "inv_ex": lambda m, t: m.linalg.inv_ex(t(A)),
    "inv": lambda m, t: m.linalg.inv(t(A)),
    "slogdet.logabsdet": lambda m, t: m.linalg.slogdet(t(A)).logabsdet,
    "solve": lambda m, t: m.linalg.solve(t(A), t(M[:4])),
    "solve_vector": lambda m, t: m.linalg.solve(t(A), t(V[:4])),
    "solve_right": lambda m, t: m.linalg.solve(t(A), t(M[:4].T), left=False),
    "solve_ex": lambda m, t: m.linalg.solve_ex(t(A), t(M[:4])),
    "lstsq.solution": lambda m, t: m.linalg.lstsq(t(M), t(M[:, :1])).solution,
    "cholesky": lambda m, t: m.cholesky(t(S)),
    "cholesky_upper": lambda m, t: m.cholesky(t(S), upper=True),
    "linalg.cholesky": lambda m, t: m.linalg.cholesky(t(S)),
    "cholesky_solve": lambda m, t: m.cholesky_solve(t(M[:4]), t(CHOL)),
    "cholesky_inverse": lambda m, t: m.cholesky_inverse(t(CHOL)),
    "householder_product": lambda m, t: m.linalg.householder_product(t(M), t(V[:3])),
    "orgqr": lambda m, t: m.orgqr(t(M), t(V[:3])),
    "ormqr": lambda m, t: m.ormqr(t(M), t(V[:3]), t(M[:, :2])),
    "lu_solve": lambda m, t: m.linalg.lu_solve(*_lu(m, t), t(M[:4])),
    "torch.lu_solve": lambda m, t: m.lu_solve(t(M[:4]), *_lu(m, t)),
    "triangular_solve": lambda m, t: m.triangular_solve(t(M[:4]), t(UPPER)),
    "frexp": lambda m, t: m.frexp(t(V)),
    "quantile": lambda m, t: m.quantile(t(V), 0.3),
    "quantile_q": lambda m, t: m.quantile(t(V), m.tensor([0.2, 0.7], dtype=m.float64)),
    "quantile_dim": lambda m, t: m.quantile(t(M), 0.5, dim=1),
    "quantile_keepdim": lambda m, t: m.quantile(t(M), 0.5, dim=1, keepdim=True),
    "quantile_lower": lambda m, t: m.quantile(t(M), 0.5, dim=0, interpolation="lower"),
    "nanquantile": lambda m, t: m.nanquantile(t(V), 0.3),
}


def _names(lib: Any, name: str) -> tuple[Any, ...]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's deprecations (cholesky, qr, svd, lu)
        out = CASES[name](lib, lambda a: lib.tensor(a, requires_grad=True))
    outs = out if isinstance(out, tuple) else (out,)
    return tuple(type(t.grad_fn).__name__ if getattr(t, "grad_fn", None) is not None
                 else None for t in outs)


@pytest.mark.parametrize("name", sorted(CASES))
def test_node_names_as_torch(name: str) -> None:
    assert _names(rt, name) == _names(torch, name)


def test_an_output_that_is_an_argument_keeps_its_node() -> None:
    """A solve against the identity's factor returns a new tensor; the inputs' own nodes are
    untouched by the renaming."""
    a = rt.tensor(A, requires_grad=True) * 1.0
    b = rt.tensor(M[:4], requires_grad=True) * 1.0
    rt.linalg.solve(a, b)
    assert type(a.grad_fn).__name__ == type(b.grad_fn).__name__ == "MulBackward0"


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_frexp_mantissa_gradient_as_torch(dtype: str) -> None:
    values = np.array([3.0, -0.1, 0.0, -0.0, np.inf, np.nan, 1e-6, -7.5e3], dtype=dtype)
    got = []
    for lib in (rt, torch):
        x = lib.tensor(values, requires_grad=True)
        mantissa, exponent = lib.frexp(x)
        mantissa.backward(lib.tensor(np.linspace(0.5, 2.0, values.size).astype(dtype)))
        got.append([mantissa.detach().numpy(), exponent.numpy(), x.grad.numpy()])
    for ours, theirs in zip(*got):
        assert ours.dtype == theirs.dtype
        np.testing.assert_array_equal(ours, theirs)


def test_frexp_of_a_subnormal_keeps_its_exact_mantissa_and_gradient() -> None:
    """Beyond the dtype's range 2 ** -exponent is taken in two factors: exact values, and
    torch's gradient (2 ** 148 overflows float32 there too)."""
    got = []
    for lib in (rt, torch):
        x = lib.tensor(np.array([2.0 ** -149, 3 * 2.0 ** -140, 2.0 ** -120], np.float32),
                       requires_grad=True)
        mantissa, exponent = lib.frexp(x)
        mantissa.sum().backward()
        got.append((mantissa.tolist(), exponent.tolist(), x.grad.tolist()))
    assert got[0] == got[1]
    assert got[0][:2] == ([0.5, 0.75, 0.5], [-148, -138, -119])


def test_frexp_gradcheck() -> None:
    x = rt.tensor(R.standard_normal(6) * 10, requires_grad=True)
    assert gradcheck(lambda t: rt.frexp(t).mantissa, (x,))


def test_frexp_without_grad_has_no_history() -> None:
    with rt.no_grad():
        mantissa, _ = rt.frexp(rt.tensor([3.0], requires_grad=True))
    assert mantissa.grad_fn is None and not mantissa.requires_grad
