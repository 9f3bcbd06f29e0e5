"""runtime.sampling against PyTorch: normal's four overloads, bernoulli, poisson, binomial and
the in-place fills cauchy_, log_normal_, geometric_: shapes, dtypes, error texts, gradients
(zero or PyTorch's error), reproducibility through the generators, and moments within
statistical tolerance at a fixed seed (N draws: a mean within 5 standard errors)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")

N = 200_000


def _same_error(ours: Callable[[], Any], theirs: Callable[[], Any]) -> None:
    with pytest.raises(Exception) as expected:
        theirs()
    with pytest.raises(type(expected.value)) as got:
        ours()
    assert str(got.value) == str(expected.value)


def _near(sample: Any, mean: float, std: float) -> None:
    values = np.asarray(sample.numpy(), dtype=np.float64)
    assert abs(values.mean() - mean) < 5 * std / math.sqrt(values.size)


@pytest.fixture(autouse=True)
def _seeded() -> None:
    rt.manual_seed(1234)


def test_normal_tensor_tensor_broadcasts_with_mean_dtype() -> None:
    out = rt.normal(rt.ones(2, 3), rt.ones(3, dtype=rt.float64))
    ref = torch.normal(torch.ones(2, 3), torch.ones(3, dtype=torch.float64))
    assert tuple(out.shape) == tuple(ref.shape) and out.dtype.name == "float32"


@pytest.mark.parametrize("dt", ["float64", "float16"])
def test_normal_float_tensor_takes_std_dtype(dt: str) -> None:
    out = rt.normal(2.0, rt.ones(4, dtype=getattr(rt, dt)))
    assert out.dtype is getattr(rt, dt) and tuple(out.shape) == (4,)


def test_normal_moments_each_overload() -> None:
    _near(rt.normal(rt.full((N,), 3.0), rt.full((N,), 2.0)), 3.0, 2.0)
    _near(rt.normal(rt.full((N,), -1.0), 0.5), -1.0, 0.5)
    _near(rt.normal(4.0, rt.full((N,), 3.0)), 4.0, 3.0)
    x = rt.normal(1.5, 2.5, (N,), dtype=rt.float64)
    assert x.dtype is rt.float64
    _near(x, 1.5, 2.5)
    # the spread: the variance of N(0, 2^2) draws
    sq = rt.normal(0.0, 2.0, (N,), dtype=rt.float64) ** 2
    _near(sq, 4.0, 4.0 * math.sqrt(2.0))


def test_normal_default_std_and_keywords() -> None:
    assert tuple(rt.normal(mean=rt.zeros(5)).shape) == (5,)
    x = rt.normal(0.0, 1.0, size=(2, 3), requires_grad=True)
    assert x.requires_grad and x.is_leaf and tuple(x.shape) == (2, 3)


def test_normal_reproducible_through_seed_and_generator() -> None:
    rt.manual_seed(7)
    a = rt.normal(rt.zeros(6), rt.ones(6))
    rt.manual_seed(7)
    b = rt.normal(rt.zeros(6), rt.ones(6))
    assert np.array_equal(a.numpy(), b.numpy())
    g1, g2 = rt.Generator().manual_seed(3), rt.Generator().manual_seed(3)
    assert np.array_equal(rt.normal(0.0, 1.0, (5,), generator=g1).numpy(),
                          rt.normal(0.0, 1.0, (5,), generator=g2).numpy())
    assert not np.array_equal(rt.normal(0.0, 1.0, (5,), generator=g1).numpy(),
                              rt.normal(0.0, 1.0, (5,), generator=g1).numpy())


def test_normal_out() -> None:
    out = rt.empty(4)
    got = rt.normal(rt.zeros(4), rt.ones(4), out=out)
    assert got is out
    out = rt.empty(3, dtype=rt.float64)
    rt.normal(1.0, 2.0, (3,), out=out)
    assert out.dtype is rt.float64


def test_normal_gradient_is_zero_as_torch() -> None:
    m = rt.tensor([[1.0, 2.0]], requires_grad=True)
    s = rt.tensor([1.0, 3.0], requires_grad=True)
    tm = torch.tensor([[1.0, 2.0]], requires_grad=True)
    ts = torch.tensor([1.0, 3.0], requires_grad=True)
    cases = [(rt.normal(m, s), torch.normal(tm, ts)), (rt.normal(m, 2.0), torch.normal(tm, 2.0)),
             (rt.normal(1.0, s), torch.normal(1.0, ts))]
    for ours, theirs in cases:
        assert type(ours.grad_fn).__name__ == type(theirs.grad_fn).__name__
        ours.sum().backward()
        theirs.sum().backward()
    assert np.array_equal(m.grad.numpy(), tm.grad.numpy())
    assert np.array_equal(s.grad.numpy(), ts.grad.numpy())
    assert tuple(m.grad.shape) == (1, 2)


@pytest.mark.parametrize("case", [
    lambda t: t.normal(t.ones(2), -t.ones(2)),
    lambda t: t.normal(t.ones(2), t.tensor([math.nan, 1.0])),
    lambda t: t.normal(t.ones(2), -1.0),
    lambda t: t.normal(1.0, -1.0, (2,)),
    lambda t: t.normal(t.ones(2, dtype=t.int32), t.ones(2)),
    lambda t: t.normal(2.0, 3.0, (2,), dtype=t.int64),
    lambda t: t.normal(1.0, 2.0),
    lambda t: t.normal(1.0, 2.0, 3),
    lambda t: t.normal(t.ones(2), 1.0, (3,)),
    lambda t: t.normal(t.ones(2), t.ones(3)),
])
def test_normal_errors_as_torch(case: Callable[[Any], Any]) -> None:
    _same_error(lambda: case(rt), lambda: case(torch))


def test_bernoulli_tensor_moments_dtype_and_zero_gradient() -> None:
    p = rt.full((N,), 0.3, dtype=rt.float64)
    x = rt.bernoulli(p)
    assert x.dtype is rt.float64 and set(np.unique(x.numpy())) <= {0.0, 1.0}
    _near(x, 0.3, math.sqrt(0.3 * 0.7))
    q = rt.tensor([0.0, 1.0, 0.5], requires_grad=True)
    y = q.bernoulli()
    assert type(y.grad_fn).__name__ == "BernoulliBackward0"
    assert y.detach().numpy()[:2].tolist() == [0.0, 1.0]
    y.sum().backward()
    assert np.array_equal(q.grad.numpy(), np.zeros(3, np.float32))


def test_bernoulli_float_p_keeps_input_dtype_and_has_no_derivative() -> None:
    x = rt.bernoulli(rt.zeros(N, dtype=rt.int64), 0.25)
    assert x.dtype is rt.int64
    _near(x, 0.25, math.sqrt(0.25 * 0.75))
    assert rt.ones(3).bernoulli(0.0).numpy().tolist() == [0.0, 0.0, 0.0]
    q = rt.tensor([0.2, 0.7], requires_grad=True)
    tq = torch.tensor([0.2, 0.7], requires_grad=True)
    _same_error(lambda: rt.bernoulli(q, 0.3).sum().backward(),
                lambda: torch.bernoulli(tq, 0.3).sum().backward())


def test_bernoulli_out_takes_its_dtype() -> None:
    out = rt.empty(4, dtype=rt.int64)
    rt.bernoulli(rt.full((4,), 1.0), out=out)
    assert out.dtype is rt.int64 and out.numpy().tolist() == [1, 1, 1, 1]


@pytest.mark.parametrize("case", [
    lambda t: t.bernoulli(t.tensor([1.5])),
    lambda t: t.bernoulli(t.tensor([math.nan])),
    lambda t: t.bernoulli(t.tensor([1])),
    lambda t: t.bernoulli(t.tensor([True])),
    lambda t: t.bernoulli(t.tensor([1.0]), 1.5),
])
def test_bernoulli_errors_as_torch(case: Callable[[Any], Any]) -> None:
    _same_error(lambda: case(rt), lambda: case(torch))


def test_poisson_moments_and_zero_gradient() -> None:
    x = rt.poisson(rt.full((N,), 4.0, dtype=rt.float64))
    assert x.dtype is rt.float64 and np.all(x.numpy() == np.round(x.numpy()))
    _near(x, 4.0, 2.0)
    _near((x - 4.0) ** 2, 4.0, math.sqrt(2 * 16 + 4))  # the variance: rate
    rate = rt.tensor([0.0, 2.0], requires_grad=True)
    y = rt.poisson(rate, rt.Generator().manual_seed(1))
    assert y.detach().numpy()[0] == 0.0 and type(y.grad_fn).__name__ == "PoissonBackward0"
    y.sum().backward()
    assert rate.grad.numpy().tolist() == [0.0, 0.0]


@pytest.mark.parametrize("case", [
    lambda t: t.poisson(t.tensor([-1.0])),
    lambda t: t.poisson(t.tensor([math.nan])),
    lambda t: t.poisson(t.tensor([1])),
])
def test_poisson_errors_as_torch(case: Callable[[Any], Any]) -> None:
    _same_error(lambda: case(rt), lambda: case(torch))


def test_binomial_moments_and_edge_rules() -> None:
    x = rt.binomial(rt.full((N,), 10.0), rt.tensor([0.3]))
    _near(x, 3.0, math.sqrt(10 * 0.3 * 0.7))
    _near(rt.binomial(rt.full((N,), 3.5), rt.tensor([0.5])), 1.5, math.sqrt(0.75))  # floored
    edge = rt.binomial(rt.tensor([-3.0, 4.0, 0.0, 5.0, 5.0]),
                       rt.tensor([0.5, 2.0, 0.5, math.nan, -0.1]))
    ref = torch.binomial(torch.tensor([-3.0, 4.0, 0.0, 5.0, 5.0]),
                         torch.tensor([0.5, 2.0, 0.5, math.nan, -0.1]))
    np.testing.assert_array_equal(edge.numpy(), ref.numpy())


def test_binomial_has_no_derivative() -> None:
    p = rt.tensor([0.2, 0.7], requires_grad=True)
    tp = torch.tensor([0.2, 0.7], requires_grad=True)
    _same_error(lambda: rt.binomial(rt.full((2,), 5.0), p).sum().backward(),
                lambda: torch.binomial(torch.full((2,), 5.0), tp).sum().backward())


@pytest.mark.parametrize("case", [
    lambda t: t.binomial(t.tensor([3, 4]), t.tensor([0.5, 0.2])),
    lambda t: t.binomial(t.tensor([3.0]), t.tensor([1])),
    lambda t: t.binomial(t.tensor([3.0]), t.tensor([0.5], dtype=t.float64)),
    lambda t: t.binomial(t.tensor([3.0]), 0.5),
])
def test_binomial_errors_as_torch(case: Callable[[Any], Any]) -> None:
    _same_error(lambda: case(rt), lambda: case(torch))


def test_cauchy_median_and_quartiles() -> None:
    x = rt.empty(N, dtype=rt.float64).cauchy_(2.0, 3.0)
    q1, med, q3 = np.quantile(x.numpy(), [0.25, 0.5, 0.75])
    # quantiles of Cauchy(2, 3): 2 -+ 3; a sample quantile's standard error ~ 3 pi / sqrt(4N)
    tol = 5 * 3 * math.pi / math.sqrt(4 * N)
    assert abs(med - 2.0) < tol and abs(q1 + 1.0) < 2 * tol and abs(q3 - 5.0) < 2 * tol


def test_log_normal_moments() -> None:
    x = rt.empty(N, dtype=rt.float64).log_normal_(0.5, 0.25)
    mean = math.exp(0.5 + 0.25 ** 2 / 2)
    std = math.sqrt((math.exp(0.25 ** 2) - 1) * math.exp(1 + 0.25 ** 2))
    _near(x, mean, std)
    _near(rt.log(x), 0.5, 0.25)


def test_geometric_moments_and_integer_dtype() -> None:
    x = rt.empty(N, dtype=rt.int64).geometric_(0.25)
    assert x.dtype is rt.int64 and x.numpy().min() >= 1
    _near(x, 4.0, math.sqrt(0.75) / 0.25)


def test_fills_reproducible_with_generator() -> None:
    for fill, args in (("cauchy_", ()), ("log_normal_", ()), ("geometric_", (0.5,))):
        a = getattr(rt.empty(8), fill)(*args, generator=rt.Generator().manual_seed(5))
        b = getattr(rt.empty(8), fill)(*args, generator=rt.Generator().manual_seed(5))
        assert np.array_equal(a.numpy(), b.numpy()), fill


@pytest.mark.parametrize("case", [
    lambda t: t.ones(2).cauchy_(0, -1),
    lambda t: t.ones(2).cauchy_(0, 0),
    lambda t: t.ones(2, dtype=t.int64).cauchy_(),
    lambda t: t.ones(2, dtype=t.uint8).cauchy_(),
    lambda t: t.ones(2).geometric_(0),
    lambda t: t.ones(2).geometric_(1.5),
    lambda t: t.ones(2, dtype=t.bool).geometric_(0.5),
    lambda t: t.ones(2).log_normal_(1, 0),
    lambda t: t.ones(2, dtype=t.int64).log_normal_(),
    lambda t: t.ones(2, requires_grad=True).cauchy_(),
])
def test_fill_errors_as_torch(case: Callable[[Any], Any]) -> None:
    _same_error(lambda: case(rt), lambda: case(torch))


@pytest.mark.parametrize("case", [
    lambda t: t.ones(2, dtype=t.int64).exponential_(),
    lambda t: t.ones(2, dtype=t.bool).exponential_(),
    lambda t: t.ones(2, dtype=t.int64).normal_(),
    lambda t: t.ones(2, dtype=t.int32).uniform_(),
    lambda t: t.ones(2).bernoulli_(t.tensor([1.5, 0.2])),
    lambda t: t.ones(2).bernoulli_(t.tensor([math.nan, 0.2])),
])
def test_in_place_fill_errors_as_torch(case: Callable[[Any], Any]) -> None:
    _same_error(lambda: case(rt), lambda: case(torch))
