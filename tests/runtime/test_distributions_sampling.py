"""rt.distributions' draws: reproducible under rt.manual_seed, moments within statistical
tolerance, and reparameterized gradients (float64 gradcheck and pathwise identities)."""

from __future__ import annotations

import numpy as np
import pytest

import runtime as rt
import runtime.distributions as rd
from runtime.creation import default_generator

N = 40_000


def _f64(v, grad=False):
    return rt.tensor(np.asarray(v, dtype=np.float64), dtype=rt.float64, requires_grad=grad)


MOMENTS = {
    "normal": lambda: rd.Normal(_f64([0.5, -2.0]), _f64([1.0, 3.0])),
    "uniform": lambda: rd.Uniform(_f64([0.0, -1.0]), _f64([1.0, 5.0])),
    "exponential": lambda: rd.Exponential(_f64([0.5, 3.0])),
    "laplace": lambda: rd.Laplace(_f64([0.5, -2.0]), _f64([1.0, 0.3])),
    "gamma": lambda: rd.Gamma(_f64([0.4, 5.0]), _f64([2.0, 0.5])),
    "beta": lambda: rd.Beta(_f64([0.5, 3.0]), _f64([2.0, 1.5])),
    "dirichlet": lambda: rd.Dirichlet(_f64([0.5, 3.0, 1.0])),
    "bernoulli": lambda: rd.Bernoulli(_f64([0.1, 0.7])),
    "categorical": lambda: rd.Categorical(_f64([[0.1, 0.6, 0.3]])),
    "onehot": lambda: rd.OneHotCategorical(_f64([0.1, 0.6, 0.3])),
    "poisson": lambda: rd.Poisson(_f64([0.5, 12.0])),
    "binomial": lambda: rd.Binomial(_f64([10.0, 3.0]), _f64([0.3, 0.9])),
    "geometric": lambda: rd.Geometric(_f64([0.3, 0.9])),
    "multinomial": lambda: rd.Multinomial(5, _f64([0.1, 0.6, 0.3])),
    "mvn": lambda: rd.MultivariateNormal(_f64([1.0, -1.0]), _f64([[2.0, 0.6], [0.6, 1.0]])),
    "lognormal": lambda: rd.LogNormal(_f64([0.0, 0.5]), _f64([0.3, 0.5])),
    "mixture": lambda: rd.MixtureSameFamily(rd.Categorical(_f64([0.3, 0.7])),
                                            rd.Normal(_f64([-2.0, 1.0]), _f64([0.5, 1.0]))),
    "relaxed_bernoulli": lambda: rd.RelaxedBernoulli(_f64(0.5), _f64([0.2, 0.8])),
    "half_normal": lambda: rd.HalfNormal(_f64([0.5, 2.0])),
    "wishart": lambda: rd.Wishart(_f64([4.0, 7.0]), _f64([[1.0, 0.3], [0.3, 0.5]])),
    "generalized_pareto": lambda: rd.GeneralizedPareto(_f64([0.5, -1.0, 0.0]),
                                                       _f64([1.0, 2.0, 0.5]),
                                                       _f64([-0.4, 0.0, 0.1])),
    "continuous_bernoulli": lambda: rd.ContinuousBernoulli(_f64([0.2, 0.5, 0.9])),
    "fisher_snedecor": lambda: rd.FisherSnedecor(_f64([5.0, 10.0]), _f64([20.0, 30.0])),
    "lowrank_mvn": lambda: rd.LowRankMultivariateNormal(_f64([1.0, -1.0, 0.0]),
                                                        _f64([[1.0], [0.5], [-0.3]]),
                                                        _f64([0.5, 1.0, 0.2])),
    "inverse_gamma": lambda: rd.InverseGamma(_f64([9.0, 12.0]), _f64([2.0, 0.5])),
    "gumbel": lambda: rd.Gumbel(_f64([0.5, -2.0]), _f64([1.0, 3.0])),
    "chi2": lambda: rd.Chi2(_f64([1.0, 7.0])),
    "student_t": lambda: rd.StudentT(_f64([12.0, 30.0]), _f64([0.5, -2.0]), _f64([1.0, 3.0])),
    "weibull": lambda: rd.Weibull(_f64([0.5, 2.0]), _f64([1.5, 4.0])),
    "pareto": lambda: rd.Pareto(_f64([0.5, 2.0]), _f64([9.0, 12.0])),
    "negative_binomial": lambda: rd.NegativeBinomial(_f64([3.0, 0.5]), _f64([0.3, 0.6])),
}


@pytest.mark.parametrize("case", sorted(MOMENTS))
def test_sample_moments(case):
    d = MOMENTS[case]()
    rt.manual_seed(123)
    x = d.sample((N,)).numpy().astype(np.float64)
    assert x.shape == (N, *d.batch_shape, *d.event_shape)
    if case == "relaxed_bernoulli":  # no closed-form moments: its mean against a quadrature
        grid = np.linspace(1e-6, 1 - 1e-6, 200_001)
        dens = np.exp(d.log_prob(_f64(np.broadcast_to(grid[:, None], (grid.size, 2)))).numpy())
        mean = np.trapezoid(grid[:, None] * dens, grid, axis=0)
        np.testing.assert_allclose(x.mean(0), mean, atol=5 * x.std(0).max() / np.sqrt(N))
        return
    if case == "categorical":
        counts = np.bincount(x.reshape(-1).astype(int), minlength=3) / N
        np.testing.assert_allclose(counts, [0.1, 0.6, 0.3], atol=5 * np.sqrt(0.25 / N))
        return
    mean, var = d.mean.detach().numpy(), d.variance.detach().numpy()
    sd = np.sqrt(var)
    np.testing.assert_allclose(x.mean(0), mean, atol=float(5 * sd.max() / np.sqrt(N)))
    # the sample variance's standard error is about var * sqrt(2 / N) for light tails
    np.testing.assert_allclose(x.var(0), var, rtol=0.06, atol=1e-3)


@pytest.mark.parametrize("case", sorted(MOMENTS))
def test_manual_seed_reproduces_draws(case):
    d = MOMENTS[case]()
    rt.manual_seed(7)
    a = d.sample((5,)).numpy()
    rt.manual_seed(7)
    b = d.sample((5,)).numpy()
    np.testing.assert_array_equal(a, b)
    c = d.sample((5,)).numpy()
    assert not np.array_equal(a, c)


def test_sample_dtype_follows_the_parameters():
    for dt in (rt.float32, rt.float64):
        assert rd.Normal(rt.zeros(2, dtype=dt), 1.0).rsample().dtype == dt
        assert rd.Gamma(rt.ones(2, dtype=dt), 1.0).rsample().dtype == dt
        assert rd.Bernoulli(rt.full((2,), 0.3, dtype=dt)).sample().dtype == dt
    assert rd.Normal(0.0, 1.0).sample().dtype == rt.get_default_dtype()
    assert rd.Categorical(rt.ones(3)).sample((2,)).dtype == rt.int64


RSAMPLE = {
    "normal": (lambda a, b: rd.Normal(a, b), [[0.5, -1.0], [1.2, 0.7]]),
    "uniform": (lambda a, b: rd.Uniform(a, a + b), [[0.5, -1.0], [1.2, 0.7]]),
    "laplace": (lambda a, b: rd.Laplace(a, b), [[0.5, -1.0], [1.2, 0.7]]),
    "exponential": (lambda a: rd.Exponential(a), [[0.5, 2.0]]),
    "lognormal": (lambda a, b: rd.LogNormal(a, b), [[0.1, -0.3], [0.4, 0.2]]),
    "mvn": (lambda a, b: rd.MultivariateNormal(a, scale_tril=b.tril()),
            [[0.5, -1.0], [[1.0, 0.0], [0.3, 0.8]]]),
    "relaxed_bernoulli": (lambda a: rd.RelaxedBernoulli(rt.tensor(0.8, dtype=rt.float64),
                                                        logits=a), [[0.3, -1.2]]),
    "relaxed_onehot": (lambda a: rd.RelaxedOneHotCategorical(
        rt.tensor(0.8, dtype=rt.float64), logits=a), [[0.3, -1.2, 0.5]]),
    "lowrank_mvn": (lambda a, b, c: rd.LowRankMultivariateNormal(a, b, c.exp()),
                    [[0.5, -1.0], [[1.0], [0.3]], [0.1, -0.4]]),
    "logistic_normal": (lambda a, b: rd.LogisticNormal(a, b), [[0.5, -1.0], [1.2, 0.7]]),
    "generalized_pareto": (lambda a, b, c: rd.GeneralizedPareto(a, b, c),
                           [[0.5, -1.0], [1.2, 0.7], [-0.3, 0.2]]),
    "gamma": (lambda a, b: rd.Gamma(a, b), [[1.5, 3.0], [2.0, 0.5]]),
    "beta": (lambda a, b: rd.Beta(a, b), [[1.5, 3.0], [2.0, 0.5]]),
    "dirichlet": (lambda a: rd.Dirichlet(a), [[1.5, 3.0, 0.8]]),
}


@pytest.mark.parametrize("case", ["normal", "uniform", "laplace", "exponential", "lognormal",
                                  "mvn", "relaxed_bernoulli", "relaxed_onehot", "lowrank_mvn",
                                  "logistic_normal", "generalized_pareto"])
def test_rsample_gradcheck(case):
    make, params = RSAMPLE[case]
    inputs = tuple(_f64(p, grad=True) for p in params)

    def fn(*args):
        rt.manual_seed(11)  # the same noise on every evaluation
        return make(*args).rsample((3,))

    assert rt.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-6)


@pytest.mark.parametrize("case", ["gamma", "beta", "dirichlet"])
def test_implicit_rsample_gradient_against_a_finite_difference_at_the_same_noise(case):
    """The implicit gradient of a Gamma-based draw is the derivative of the draw at a fixed
    CDF level; inverse-CDF draws of the same uniforms give it by finite differences."""
    torch = pytest.importorskip("torch")

    def gammainc(a, x):
        return torch.special.gammainc(torch.tensor(a, dtype=torch.float64),
                                      torch.tensor(x, dtype=torch.float64)).numpy()

    def gammaincinv(a, level):  # bisection to float64 resolution
        lo, hi = np.zeros(a.shape), np.maximum(2 * a, 1.0)
        while np.any(gammainc(a, hi) < level):
            hi = np.where(gammainc(a, hi) < level, 2 * hi, hi)
        for _ in range(200):
            mid = (lo + hi) / 2
            below = gammainc(a, mid) < level
            lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
        return (lo + hi) / 2

    make, params = RSAMPLE[case]
    inputs = [_f64(p, grad=True) for p in params]
    rt.manual_seed(2)
    x = make(*inputs).rsample((4,))
    weights = np.linspace(0.5, 1.5, x.numel()).reshape(x.shape)
    grads = rt.autograd.grad((x * _f64(weights)).sum(), inputs)
    # the Gamma draws behind x, recovered from the generator's stream
    rt.manual_seed(2)
    def concentration(vals):
        if case == "beta":
            return np.broadcast_to(np.stack(vals, -1), (4, 2, 2))
        return np.broadcast_to(vals[0], (4, 3 if case == "dirichlet" else 2))

    conc = concentration([np.array(p, dtype=np.float64) for p in params])
    g = default_generator._rng.standard_gamma(conc)
    level = gammainc(conc, g)

    def draw(vals):
        c = concentration(vals)
        gg = gammaincinv(np.ascontiguousarray(c), level)
        if case == "gamma":
            return gg / vals[1]
        y = gg / gg.sum(-1, keepdims=True)
        return y[..., 0] if case == "beta" else y

    base = [np.array(p, dtype=np.float64) for p in params]
    np.testing.assert_allclose(draw(base), x.detach().numpy(), rtol=1e-9)
    h = 1e-6
    for i, p in enumerate(base):
        fd = np.zeros_like(p)
        for j in np.ndindex(p.shape):
            up = [q.copy() for q in base]
            dn = [q.copy() for q in base]
            up[i][j] += h
            dn[i][j] -= h
            fd[j] = ((draw(up) - draw(dn)) * weights).sum() / (2 * h)
        np.testing.assert_allclose(grads[i].numpy(), fd, rtol=1e-5, atol=1e-8)


def test_sample_has_no_gradient_and_rsample_has():
    loc = _f64([0.0, 1.0], grad=True)
    d = rd.Normal(loc, 1.0)
    assert not d.sample().requires_grad
    assert d.rsample().requires_grad
    with pytest.raises(NotImplementedError):
        rd.Bernoulli(_f64([0.5])).rsample()
    st = rd.OneHotCategoricalStraightThrough(logits=_f64([0.1, 0.2, 0.3], grad=True))
    assert st.rsample().requires_grad


@pytest.mark.parametrize("make", [lambda: rd.Cauchy(_f64([0.5, -2.0]), _f64([1.0, 3.0])),
                                  lambda: rd.HalfCauchy(_f64([0.5, 2.0])),
                                  lambda: rd.Laplace(_f64([0.5, -2.0]), _f64([1.0, 3.0])),
                                  lambda: rd.Gumbel(_f64([0.5, -2.0]), _f64([1.0, 3.0]))])
def test_sample_quantiles_by_the_icdf(make):
    """Heavy tails have no moments to compare: the fraction of draws below each quantile
    (icdf) is that quantile's level."""
    d = make()
    rt.manual_seed(9)
    x = d.sample((N,)).numpy()
    for q in (0.1, 0.25, 0.5, 0.9):
        level = rt.full(tuple(d.batch_shape), q, dtype=rt.float64)
        below = (x <= d.icdf(level).numpy()).mean(0)
        np.testing.assert_allclose(below, q, atol=5 * np.sqrt(q * (1 - q) / N))


def test_von_mises_draws_have_its_circular_moments():
    loc, k = np.array([0.5, -2.0, 3.0]), np.array([0.7, 4.0, 30.0])
    d = rd.VonMises(_f64(loc), _f64(k))
    rt.manual_seed(4)
    x = d.sample((N,)).numpy()
    assert x.min() >= -np.pi and x.max() < np.pi
    resultant = np.exp(1j * x).mean(0)
    want = (1 - d.variance.numpy()) * np.exp(1j * loc)  # I1/I0 along the mean direction
    np.testing.assert_allclose(resultant, want, atol=5 / np.sqrt(N))
