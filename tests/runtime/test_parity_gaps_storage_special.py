"""Tensor.share_memory_/is_shared (a CPU storage moved into a shared mapping that a forked
process writes through), Tensor.set_, and polygamma / special.zeta against PyTorch (values,
their gradients and errors)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")


def test_share_memory_is_seen_by_a_forked_process() -> None:
    t = rt.ones(3)
    assert not t.is_shared()
    assert t.share_memory_() is t and t.is_shared() and t[1:].is_shared()
    if not hasattr(os, "fork") or sys.platform != "linux":
        pytest.fail("runs where os.fork exists: Linux")
    pid = os.fork()
    if pid == 0:  # the child writes through the shared mapping, then leaves at once
        t.add_(5)
        os._exit(0)
    os.waitpid(pid, 0)
    assert t.tolist() == [6.0, 6.0, 6.0]


def test_share_memory_refuses_a_view() -> None:
    t = rt.ones(4)
    with pytest.raises(RuntimeError, match="share_memory_: this tensor's storage is also"):
        t[1:].share_memory_()


def test_module_share_memory_moves_parameters() -> None:
    m = rt.nn.Linear(3, 2)
    before = m.weight.detach().numpy().copy()
    assert m.share_memory() is m
    assert all(p.is_shared() for p in m.parameters())
    np.testing.assert_array_equal(m.weight.detach().numpy(), before)
    m(rt.ones(1, 3)).sum().backward()
    rt.optim.SGD(m.parameters(), lr=0.1).step()
    assert m.weight.is_shared()


def _set_outcome(m: Any, f: Callable[[Any], Any]) -> Any:
    try:
        r = f(m)
    except (RuntimeError, TypeError) as e:
        return type(e).__name__, str(e).split("\n")[0].split(", but expected")[0]
    return tuple(r.shape), r.tolist()


SET_CASES: dict[str, Callable[[Any], Any]] = {
    "shares": lambda m: (lambda s: (m.ones(5).set_(s).add_(1), s)[1])(m.zeros(2, 2)),
    "empty": lambda m: m.ones(2).set_(),
    "dtype": lambda m: m.ones(2).set_(m.ones(2, dtype=m.float64)),
    "leaf": lambda m: m.ones(2, requires_grad=True).set_(m.zeros(2)),
    "not_a_tensor": lambda m: m.ones(2).set_([1]),
}


@pytest.mark.parametrize("name", list(SET_CASES))
def test_set_(name: str) -> None:
    assert _set_outcome(rt, SET_CASES[name]) == _set_outcome(torch, SET_CASES[name])


def test_set_bumps_the_version() -> None:
    a = rt.ones(2)
    v = a._version
    a.set_(rt.zeros(3))
    assert a._version == v + 1 and a.tolist() == [0.0, 0.0, 0.0]


X = np.array([0.5, 1.0, 2.5, -1.5, 0.0, -2.0, 10.0, np.inf, np.nan, 1e-3, -0.3, 100.0, 1e5])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("n", range(6))
def test_polygamma_values(n: int, dtype: str) -> None:
    ours = rt.polygamma(n, rt.tensor(X, dtype=getattr(rt, dtype))).numpy()
    theirs = torch.polygamma(n, torch.tensor(X, dtype=getattr(torch, dtype))).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-6 if dtype == "float32" else 1e-13,
                               equal_nan=True)


S = np.array([2.0, 3.0, 1.0, 0.5, 2.0, 2.0, 3.0, np.inf, 4.5, 1.0001, 50.0, 2.0])
Q = np.array([1.0, 2.0, 1.0, 1.0, 0.0, -1.5, -2.5, 2.0, 0.3, 3.0, 1e-3, 1e8])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_zeta_values(dtype: str) -> None:
    ours = rt.special.zeta(rt.tensor(S, dtype=getattr(rt, dtype)),
                           rt.tensor(Q, dtype=getattr(rt, dtype))).numpy()
    theirs = torch.special.zeta(torch.tensor(S, dtype=getattr(torch, dtype)),
                                torch.tensor(Q, dtype=getattr(torch, dtype))).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-6 if dtype == "float32" else 1e-13,
                               equal_nan=True)


CALLS: dict[str, Callable[[Any], Any]] = {
    "zeta_scalar_x": lambda m: m.special.zeta(2, m.tensor([1.0, 2.0])),
    "zeta_scalar_q": lambda m: m.special.zeta(m.tensor([2.0, 3.0]), 1.5),
    "zeta_ints": lambda m: m.special.zeta(m.tensor([2, 3]), m.tensor([1, 2])),
    "zeta_broadcast": lambda m: m.special.zeta(m.tensor([[2.0], [3.0]]), m.tensor([1.0, 2.0])),
    "method": lambda m: m.tensor([1.0, 2.0]).polygamma(2),
    "special": lambda m: m.special.polygamma(3, m.tensor([1.0, 2.0])),
    "ints": lambda m: m.polygamma(1, m.tensor([1, 2])),
    "in_place": lambda m: m.tensor([1.0, 2.0]).polygamma_(1),
    "negative_n": lambda m: m.polygamma(-1, m.tensor([1.0])),
    "float_n": lambda m: m.polygamma(2.0, m.tensor([1.0])),
}


def _outcome(m: Any, f: Callable[[Any], Any]) -> Any:
    try:
        r = f(m)
    except (RuntimeError, TypeError) as e:
        return type(e).__name__, str(e)
    return np.asarray(r.numpy()).round(5).tolist(), str(r.dtype).split(".")[-1]


@pytest.mark.parametrize("name", list(CALLS))
def test_calls(name: str) -> None:
    assert _outcome(rt, CALLS[name]) == _outcome(torch, CALLS[name])


@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_polygamma_gradients(n: int) -> None:
    got = []
    for m in (rt, torch):
        x = m.tensor([0.7, 2.2, -1.3], dtype=m.float64, requires_grad=True)
        y = m.polygamma(n, x)
        assert type(y.grad_fn).__name__ == "PolygammaBackward0"
        g, = m.autograd.grad(y.sum(), x, create_graph=True)
        g2, = m.autograd.grad(g.sum(), x)
        got.append((g.detach().numpy(), g2.numpy()))
    for a, b in zip(*got):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    x = rt.tensor([0.7, 2.2], dtype=rt.float64, requires_grad=True)
    assert rt.autograd.gradcheck(lambda v: rt.polygamma(n, v), (x,))


def test_zeta_gradient_of_q_and_refusal_of_x() -> None:
    got = []
    for m in (rt, torch):
        q = m.tensor([1.5, 3.0], dtype=m.float64, requires_grad=True)
        y = m.special.zeta(m.tensor([2.0, 3.5], dtype=m.float64), q)
        assert type(y.grad_fn).__name__ == "SpecialZetaBackward0"
        y.sum().backward()
        got.append(q.grad.numpy())
        s = m.tensor([2.0, 3.0], dtype=m.float64, requires_grad=True)
        with pytest.raises(NotImplementedError, match="the derivative for 'zeta' is not "
                                                      "implemented."):
            m.special.zeta(s, q).sum().backward()
    np.testing.assert_allclose(got[0], got[1], rtol=1e-13)
    q = rt.tensor([0.7, 2.2], dtype=rt.float64, requires_grad=True)
    assert rt.autograd.gradcheck(
        lambda v: rt.special.zeta(rt.tensor([2.5, 3.0], dtype=rt.float64), v), (q,))
