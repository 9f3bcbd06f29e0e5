"""rt.distributions.ExponentialFamily: entropy from the log-normalizer and the Bregman KL
divergence, against the closed forms and torch's."""

from __future__ import annotations

import numpy as np
import pytest

import runtime as rt
import runtime.distributions as rd
from runtime.distributions.kl import _kl_expfamily_expfamily

torch = pytest.importorskip("torch")
td = torch.distributions

CASES = {
    "Normal": (([0.1, 1.0], [0.5, 2.0]), ([1.1, 0.0], [1.5, 0.7])),
    "Bernoulli": (([0.2, 0.7],), ([0.4, 0.3],)),
    "Exponential": (([0.5, 2.0],), ([1.5, 0.2],)),
    "Gamma": (([0.7, 3.0], [2.0, 0.5]), ([1.7, 2.0], [1.0, 1.5])),
    "Beta": (([0.7, 3.0], [2.0, 0.5]), ([1.7, 2.0], [1.0, 1.5])),
    "Dirichlet": (([[0.7, 3.0, 1.0]],), ([[2.0, 0.5, 1.0]],)),
    "Poisson": (([0.5, 2.0],), ([1.5, 0.2],)),
}


def _make(lib, mod, name, params, grad=False):
    ts = [lib.tensor(np.array(v), dtype=lib.float64, requires_grad=grad) for v in params]
    return getattr(mod, name)(*ts), ts


@pytest.mark.parametrize("name", sorted(CASES))
def test_bregman_kl_matches_the_closed_form_and_torchs(name):
    p, _ = _make(rt, rd, name, CASES[name][0])
    q, _ = _make(rt, rd, name, CASES[name][1])
    p_t, _ = _make(torch, td, name, CASES[name][0])
    q_t, _ = _make(torch, td, name, CASES[name][1])
    got = _kl_expfamily_expfamily(p, q).detach().numpy()
    np.testing.assert_allclose(got, rd.kl_divergence(p, q).numpy(), rtol=1e-10, atol=1e-14)
    want = td.kl._kl_expfamily_expfamily(p_t, q_t).detach().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("name", ["Normal", "Bernoulli", "Exponential", "Gamma"])
def test_entropy_from_the_log_normalizer_matches_the_closed_form(name):
    d, _ = _make(rt, rd, name, CASES[name][0])
    np.testing.assert_allclose(rd.ExponentialFamily.entropy(d).detach().numpy(),
                               d.entropy().numpy(), rtol=1e-12)


def test_bregman_kl_and_entropy_are_differentiable():
    """torch's detach p's natural parameters; these keep the graph: gradcheck."""
    q = rd.Gamma(rt.tensor([1.7, 2.0], dtype=rt.float64), rt.tensor([1.0, 1.5], dtype=rt.float64))
    params = (rt.tensor([0.7, 3.0], dtype=rt.float64, requires_grad=True),
              rt.tensor([2.0, 0.5], dtype=rt.float64, requires_grad=True))
    assert rt.autograd.gradcheck(lambda a, b: _kl_expfamily_expfamily(rd.Gamma(a, b), q),
                                 params, eps=1e-6, atol=1e-6)
    assert rt.autograd.gradcheck(lambda a, b: rd.ExponentialFamily.entropy(rd.Gamma(a, b)),
                                 params, eps=1e-6, atol=1e-6)


class Rayleigh(rd.ExponentialFamily):
    """A user's exponential family: density x / s^2 exp(-x^2 / (2 s^2)), t(x) = x^2,
    theta = -1 / (2 s^2), F(theta) = -log(-2 theta), k(x) = log x."""

    arg_constraints = {"scale": rd.constraints.positive}
    support = rd.constraints.positive

    def __init__(self, scale, validate_args=None):
        self.scale = scale
        super().__init__(scale.shape, validate_args=validate_args)

    @property
    def _natural_params(self):
        return (-0.5 * self.scale.pow(-2),)

    def _log_normalizer(self, theta):
        return -(-2 * theta).log()

    @property
    def _mean_carrier_measure(self):
        # E[log X] = log(s) + (log 2 - euler) / 2
        return self.scale.log() + 0.5 * (np.log(2) - 0.5772156649015329)


def test_a_users_exponential_family_gets_kl_and_entropy():
    p = Rayleigh(rt.tensor([1.0, 2.0], dtype=rt.float64))
    q = Rayleigh(rt.tensor([1.5, 0.5], dtype=rt.float64))
    s_p, s_q = np.array([1.0, 2.0]), np.array([1.5, 0.5])
    # KL of Rayleighs: 2 log(s_q / s_p) + s_p^2 / s_q^2 - 1
    want = 2 * np.log(s_q / s_p) + s_p ** 2 / s_q ** 2 - 1
    np.testing.assert_allclose(rd.kl_divergence(p, q).detach().numpy(), want, rtol=1e-12)
    # entropy of a Rayleigh: 1 + log(s / sqrt 2) + euler / 2
    np.testing.assert_allclose(p.entropy().detach().numpy(),
                               1 + np.log(s_p / np.sqrt(2)) + 0.5772156649015329 / 2,
                               rtol=1e-12)


def test_different_families_have_no_bregman_kl():
    with pytest.raises(NotImplementedError, match="between different exponential families"):
        rd.kl_divergence(rd.Poisson(1.0), rd.Gamma(1.0, 1.0))
    with pytest.raises(NotImplementedError):
        rd.Poisson(1.0).entropy()  # no mean carrier measure, as torch's


def test_under_no_grad_and_without_tracked_parameters_nothing_requires_grad():
    p, q = rd.Gamma(1.0, 2.0), rd.Gamma(2.0, 1.0)
    with rt.no_grad():
        assert not _kl_expfamily_expfamily(p, q).requires_grad
        assert not rd.ExponentialFamily.entropy(p).requires_grad
    assert not _kl_expfamily_expfamily(p, q).requires_grad
    np.testing.assert_allclose(_kl_expfamily_expfamily(p, q).numpy(),
                               rd.kl_divergence(p, q).numpy(), rtol=1e-6)
