"""Window functions, histogram, gradient, mvlgamma and igamma/igammac against PyTorch:
values, dtypes, gradients and errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")

g = np.random.default_rng(3)


def _error(fn: Callable[[Any], Any]) -> None:
    texts = []
    for m in (rt, torch):
        with pytest.raises(Exception) as info:
            fn(m)
        texts.append((info.type.__name__, str(info.value)))
    assert texts[0][0] == texts[1][0]
    assert texts[0][1].split(",")[0] == texts[1][1].split(",")[0]


@pytest.mark.parametrize("name", ["hann", "hamming", "blackman", "bartlett", "kaiser"])
@pytest.mark.parametrize("n", [0, 1, 2, 7, 16])
@pytest.mark.parametrize("periodic", [True, False])
def test_windows(name: str, n: int, periodic: bool) -> None:
    ours = getattr(rt, f"{name}_window")(n, periodic)
    theirs = getattr(torch, f"{name}_window")(n, periodic)
    assert ours.dtype is rt.float32 and tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), atol=1e-6)


def test_window_options() -> None:
    np.testing.assert_allclose(rt.hamming_window(9, False, 0.6, 0.4, dtype=rt.float64).numpy(),
                               torch.hamming_window(9, False, 0.6, 0.4,
                                                    dtype=torch.float64).numpy())
    np.testing.assert_allclose(rt.kaiser_window(9, True, 5.0).numpy(),
                               torch.kaiser_window(9, True, 5.0).numpy(), atol=1e-6)
    w = rt.hann_window(4, requires_grad=True)
    assert w.requires_grad and w.is_leaf
    _error(lambda m: m.hann_window(4, dtype=m.int64))


@pytest.mark.parametrize("kwargs", [{"bins": 10}, {"bins": 4, "range": (-1.0, 1.0)},
                                    {"bins": 5, "density": True}, {"bins": 3, "weight": True},
                                    {"bins": "tensor"}])
def test_histogram(kwargs: dict[str, Any]) -> None:
    x = g.standard_normal(60)
    w = g.uniform(0, 2, 60)
    results = []
    for m in (rt, torch):
        kw = dict(kwargs)
        if kw.get("weight"):
            kw["weight"] = m.tensor(w)
        if kw["bins"] == "tensor":
            kw["bins"] = m.tensor([-3.0, -0.5, 0.0, 0.7, 3.0], dtype=m.float64)
        results.append(m.histogram(m.tensor(x), **kw))
    for a, b in zip(results[0], results[1]):
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)
    assert results[0].hist is results[0][0]


def test_histogram_method_and_errors() -> None:
    x = rt.tensor([1.0, 2.0, 2.0, 5.0])
    hist, edges = x.histogram(3)
    assert hist.tolist() == [3.0, 0.0, 1.0] and edges.numel() == 4
    _error(lambda m: m.histogram(m.tensor([1, 2]), 3))


@pytest.mark.parametrize("kwargs", [{}, {"spacing": 2.0}, {"dim": 1}, {"edge_order": 2},
                                    {"spacing": [0.5, 2.0]}, {"dim": (0,), "edge_order": 2},
                                    {"spacing": "coords"}, {"spacing": "coords",
                                                            "edge_order": 2}])
def test_gradient(kwargs: dict[str, Any]) -> None:
    f = g.standard_normal((5, 6))
    coords = (np.cumsum(g.uniform(0.5, 1.5, 5)), np.cumsum(g.uniform(0.5, 1.5, 6)))
    results = []
    for m in (rt, torch):
        kw = dict(kwargs)
        if kw.get("spacing") == "coords":
            kw["spacing"] = [m.tensor(c) for c in coords]
        x = m.tensor(f, requires_grad=True)
        outs = m.gradient(x, **kw)
        sum((o * (i + 1)).sum() for i, o in enumerate(outs)).backward()
        results.append((outs, x.grad))
    assert len(results[0][0]) == len(results[1][0])
    for a, b in zip(results[0][0], results[1][0]):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10,
                                   atol=1e-12)
    np.testing.assert_allclose(results[0][1].numpy(), results[1][1].numpy(), atol=1e-12)


def test_gradient_integer_and_errors() -> None:
    ours = rt.gradient(rt.tensor([1, 4, 9, 16]))[0]
    theirs = torch.gradient(torch.tensor([1, 4, 9, 16]))[0]
    assert ours.dtype is rt.float32 and ours.tolist() == theirs.tolist()
    _error(lambda m: m.gradient(m.tensor([1.0, 2.0]), edge_order=2))
    _error(lambda m: m.gradient(m.tensor([1.0, 2.0, 3.0]), edge_order=3))


def test_mvlgamma() -> None:
    x = g.uniform(1.6, 4.0, (3, 4))
    for p in (1, 2, 3):
        ours = rt.tensor(x, requires_grad=True)
        theirs = torch.tensor(x, requires_grad=True)
        a, b = rt.mvlgamma(ours, p), torch.mvlgamma(theirs, p)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10)
        assert a.grad_fn.name() == b.grad_fn.name()
        a.sum().backward()
        b.sum().backward()
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-8)
    assert rt.autograd.gradcheck(lambda t: t.mvlgamma(2), (rt.tensor(x, requires_grad=True),))
    assert rt.mvlgamma(rt.tensor([2, 3]), 2).dtype is rt.float32
    y = rt.tensor(x)
    y.mvlgamma_(3)
    np.testing.assert_allclose(y.numpy(), torch.tensor(x).mvlgamma_(3).numpy(), rtol=1e-10)
    _error(lambda m: m.mvlgamma(m.tensor([2.2]), 0))


A = np.array([0.5, 1.5, 3.0, 10.0, 0.1, 100.0, 2.0, 40.0])
X = np.array([0.2, 2.0, 1.0, 12.0, 3.0, 90.0, 0.0, 41.0])


@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_incomplete_gamma(name: str) -> None:
    ours = getattr(rt, name)(rt.tensor(A), rt.tensor(X))
    theirs = getattr(torch, name)(torch.tensor(A), torch.tensor(X))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-9, atol=1e-14)
    edges_a = [0.0, 1.0, -1.0, float("inf"), 2.0, 0.0, 1.0]
    edges_x = [1.0, 0.0, 1.0, 1.0, float("inf"), 0.0, -1.0]
    np.testing.assert_array_equal(
        getattr(rt, name)(rt.tensor(edges_a), rt.tensor(edges_x)).numpy(),
        getattr(torch, name)(torch.tensor(edges_a), torch.tensor(edges_x)).numpy())
    method = getattr(rt.tensor(A[:3], dtype=rt.float32), name)(rt.tensor(X[:3]))
    assert method.dtype is rt.float64


@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_incomplete_gamma_gradients(name: str) -> None:
    grads = []
    for m in (rt, torch):
        x = m.tensor(X[X > 0], requires_grad=True)
        out = getattr(m, name)(m.tensor(A[X > 0]), x)
        assert out.grad_fn.name() == f"{name.capitalize()}Backward0"
        out.sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-8)
    x = rt.tensor(X[X > 0][:4], requires_grad=True)
    assert rt.autograd.gradcheck(lambda t: getattr(rt, name)(rt.tensor(A[:4]), t), (x,))
    for m in (rt, torch):
        a = m.tensor(A[:2], requires_grad=True)
        out = getattr(m, name)(a, m.tensor(X[:2]))
        with pytest.raises(NotImplementedError,
                           match=f"the derivative for '{name}: input' is not implemented"):
            out.sum().backward()


def test_incomplete_gamma_inplace_and_errors() -> None:
    ours = rt.tensor(A)
    ours.igamma_(rt.tensor(X))
    theirs = torch.tensor(A)
    theirs.igamma_(torch.tensor(X))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-9, atol=1e-14)
    _error(lambda m: m.igamma(m.tensor([1, 2]), m.tensor([1, 2])))
    _error(lambda m: m.igammac(m.tensor([1.0]), 1.0))


def test_histogram_bins_dtype_error() -> None:
    _error(lambda m: m.histogram(m.tensor([1.0, 2.0], dtype=m.float64), m.tensor([0.0, 3.0])))


@pytest.mark.parametrize("pow_,dim", [(2, 0), (2, 1), (3, 2), (2, -1), (1, -2)])
def test_norm_except_dim(pow_: float, dim: int) -> None:
    v = g.standard_normal((3, 4, 5))
    results = []
    for m in (rt, torch):
        x = m.tensor(v, requires_grad=True)
        out = m.norm_except_dim(x, pow_, dim)
        out.sum().backward()
        results.append((out.detach().numpy(), x.grad.numpy()))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-10)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-9)


@pytest.mark.parametrize("kwargs", [{"bins": [3, 4]}, {"bins": 3, "range": [0.0, 1.0, -1.0, 2.0]},
                                    {"bins": [2, 5], "density": True}, {"bins": "tensors"},
                                    {"bins": 4, "weight": True}])
def test_histogramdd(kwargs: dict[str, Any]) -> None:
    x = g.uniform(-0.5, 1.5, (30, 2))
    w = g.uniform(0, 2, 30)
    results = []
    for m in (rt, torch):
        kw = dict(kwargs)
        if kw.get("weight"):
            kw["weight"] = m.tensor(w)
        if kw["bins"] == "tensors":
            kw["bins"] = [m.tensor([-1.0, 0.0, 0.5, 2.0], dtype=m.float64),
                          m.tensor([-1.0, 1.0, 2.0], dtype=m.float64)]
        results.append(m.histogramdd(m.tensor(x), **kw))
    np.testing.assert_allclose(results[0].hist.numpy(), results[1].hist.numpy(), rtol=1e-12)
    assert len(results[0].bin_edges) == len(results[1].bin_edges) == 2
    for a, b in zip(results[0].bin_edges, results[1].bin_edges):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)
    _error(lambda m: m.histogramdd(m.tensor(x[:, 0]), 3))


@pytest.mark.parametrize("name", ["hann", "hamming", "blackman", "bartlett"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_windows_bitwise_in_low_and_double_precision(name: str, dtype: str) -> None:
    """PyTorch computes a window by in-place ops on a tensor of the dtype: the same roundings
    give its half, bfloat16 and double windows bit for bit."""
    for n in (2, 3, 8, 17, 64, 101):
        for periodic in (True, False):
            ours = getattr(rt, f"{name}_window")(n, periodic, dtype=getattr(rt, dtype))
            theirs = getattr(torch, f"{name}_window")(n, periodic, dtype=getattr(torch, dtype))
            np.testing.assert_array_equal(ours.float().numpy(), theirs.float().numpy())
