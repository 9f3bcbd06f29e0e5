"""Float64 gradcheck of rt.distributions' log_prob, entropy and KL: autograd through
runtime ops against finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import runtime as rt
import runtime.distributions as rd


def _f64(v):
    return rt.tensor(np.asarray(v, dtype=np.float64), dtype=rt.float64, requires_grad=True)


def _const(v):
    return rt.tensor(np.asarray(v, dtype=np.float64), dtype=rt.float64)


CASES = {
    "normal": (lambda a, b: rd.Normal(a, b), [[0.1, -1.0], [0.7, 1.3]], [0.4, 2.0]),
    "gamma": (lambda a, b: rd.Gamma(a, b), [[0.7, 3.0], [1.5, 0.4]], [0.4, 2.0]),
    "beta": (lambda a, b: rd.Beta(a, b), [[0.7, 3.0], [1.5, 0.4]], [0.4, 0.9]),
    "dirichlet": (lambda a: rd.Dirichlet(a), [[0.7, 3.0, 1.2]], [0.2, 0.5, 0.3]),
    "categorical": (lambda a: rd.Categorical(logits=a), [[0.3, -1.0, 2.0]], [0.0, 2.0]),
    "bernoulli": (lambda a: rd.Bernoulli(logits=a), [[0.3, -1.0]], [0.0, 1.0]),
    "binomial": (lambda a: rd.Binomial(4, logits=a), [[0.3, -1.0]], [1.0, 4.0]),
    "poisson": (lambda a: rd.Poisson(a), [[0.3, 4.0]], [1.0, 4.0]),
    "geometric": (lambda a: rd.Geometric(a), [[0.3, 0.8]], [1.0, 4.0]),
    "laplace": (lambda a, b: rd.Laplace(a, b), [[0.1, -1.0], [0.7, 1.3]], [0.4, 2.0]),
    "mvn": (lambda a, b: rd.MultivariateNormal(a, covariance_matrix=b @ b.mT
                                               + 0.5 * rt.eye(2, dtype=rt.float64)),
            [[0.1, -1.0], [[1.0, 0.2], [-0.3, 0.8]]], [0.4, 2.0]),
    "mvn_prec": (lambda a, b: rd.MultivariateNormal(a, precision_matrix=b @ b.mT
                                                    + 0.5 * rt.eye(2, dtype=rt.float64)),
                 [[0.1, -1.0], [[1.0, 0.2], [-0.3, 0.8]]], [0.4, 2.0]),
    "multinomial": (lambda a: rd.Multinomial(3, logits=a), [[0.3, -1.0, 2.0]], [1.0, 0.0, 2.0]),
    "relaxed_onehot": (lambda a: rd.RelaxedOneHotCategorical(_const(0.6), logits=a),
                       [[0.3, -1.0, 2.0]], [0.2, 0.5, 0.3]),
    "continuous_bernoulli": (lambda a: rd.ContinuousBernoulli(logits=a), [[0.001, -1.0, 2.0]],
                             [0.3, 0.9, 0.5]),
    "von_mises": (lambda a, b: rd.VonMises(a, b), [[0.1, -1.0], [0.7, 30.0]], [0.4, 2.0]),
    "fisher_snedecor": (lambda a, b: rd.FisherSnedecor(a, b), [[1.5, 4.0], [3.0, 9.0]],
                        [0.4, 2.0]),
    "mixture": (lambda a, b: rd.MixtureSameFamily(rd.Categorical(logits=a), rd.Normal(b, 1.0)),
                [[0.3, -1.0], [0.5, -0.5]], [0.4, 2.0]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_log_prob_gradcheck(case):
    make, params, value = CASES[case]
    v = _const(value)
    assert rt.autograd.gradcheck(lambda *p: make(*p).log_prob(v),
                                 tuple(_f64(p) for p in params), eps=1e-6, atol=1e-6)


@pytest.mark.parametrize("case", ["normal", "gamma", "beta", "dirichlet", "categorical",
                                  "bernoulli", "binomial", "geometric", "laplace", "mvn",
                                  "multinomial", "continuous_bernoulli"])
def test_entropy_gradcheck(case):
    make, params, _ = CASES[case]
    assert rt.autograd.gradcheck(lambda *p: make(*p).entropy(), tuple(_f64(p) for p in params),
                                 eps=1e-6, atol=1e-6)


@pytest.mark.parametrize("case", ["normal", "gamma", "beta", "dirichlet", "categorical",
                                  "bernoulli", "laplace", "mvn", "poisson", "geometric"])
def test_kl_gradcheck(case):
    make, params, _ = CASES[case]
    other = make(*[_const(np.asarray(p) * 0.8 + 0.1) for p in params])
    assert rt.autograd.gradcheck(lambda *p: rd.kl_divergence(make(*p), other),
                                 tuple(_f64(p) for p in params), eps=1e-6, atol=1e-6)
