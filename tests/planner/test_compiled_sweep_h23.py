"""rt.distributions inside planner.compile'd training steps: for each family a small model
whose loss is built from the distribution (log_prob of data, entropy, rsample, a KL, a
mixture's log_prob, a squashed policy) trained by SGD. Compiled (fullgraph: no fallback) equals
eager over several calls on the same inputs: the losses, the parameters and the default
generator's state after each call (so a step's draws are the same numbers eager draws)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
import runtime.distributions as rd
import runtime.nn.functional as F

G = np.random.default_rng(0)
DATA = rt.tensor(G.normal(size=(8, 3)).astype(np.float32))
POSITIVE = rt.tensor(G.gamma(2.0, size=(8, 3)).astype(np.float32) + 0.05)
UNIT = rt.tensor(G.beta(2.0, 3.0, size=(8, 3)).astype(np.float32))
COUNTS = rt.tensor(G.poisson(2.0, size=(8, 3)).astype(np.float32))
BINARY = rt.tensor(G.integers(0, 2, size=(8, 3)).astype(np.float32))
CLASSES = rt.tensor(G.integers(0, 3, size=8))
ANGLES = rt.tensor(G.uniform(-3.0, 3.0, size=(8, 3)).astype(np.float32))
ONE_HOT = F.one_hot(CLASSES, 3).float()

V = {"validate_args": False}  # validation reads values: a validating step runs eagerly


def _sp(x: rt.Tensor) -> rt.Tensor:
    return F.softplus(x) + 0.1


# name -> (data, loss of (parameters a, b of shape (3,), data))
CASES: dict[str, tuple[rt.Tensor, Callable[[rt.Tensor, rt.Tensor, rt.Tensor], rt.Tensor]]] = {
    "normal_rsample": (DATA, lambda a, b, x: -rd.Normal(a, _sp(b), **V).log_prob(x).mean()
                       + rd.Normal(a, _sp(b), **V).rsample((4,)).pow(2).mean()),
    "laplace": (DATA, lambda a, b, x: -rd.Laplace(a, _sp(b), **V).log_prob(x).mean()
                + rd.Laplace(a, _sp(b), **V).rsample((4,)).mean()),
    "cauchy": (DATA, lambda a, b, x: -rd.Cauchy(a, _sp(b), **V).log_prob(x).mean()
               + rd.Cauchy(a, _sp(b), **V).entropy().sum()),
    "gumbel": (DATA, lambda a, b, x: -rd.Gumbel(a, _sp(b), **V).log_prob(x).mean()
               + rd.Gumbel(a, _sp(b), **V).rsample((2,)).mean()),
    "student_t": (DATA, lambda a, b, x: -rd.StudentT(_sp(b) + 2, a, _sp(a), **V).log_prob(x)
                  .mean()),
    "lognormal": (POSITIVE, lambda a, b, x: -rd.LogNormal(a, _sp(b), **V).log_prob(x).mean()
                  + rd.LogNormal(a, _sp(b), **V).entropy().mean()),
    "half_normal": (POSITIVE, lambda a, b, x: -rd.HalfNormal(_sp(a), **V).log_prob(x).mean()
                    + rd.HalfNormal(_sp(b), **V).rsample((3,)).mean()),
    "exponential": (POSITIVE, lambda a, b, x: -rd.Exponential(_sp(a), **V).log_prob(x).mean()
                    + rd.Exponential(_sp(b), **V).rsample((3,)).mean()),
    "gamma": (POSITIVE, lambda a, b, x: -rd.Gamma(_sp(a), _sp(b), **V).log_prob(x).mean()
              + rd.Gamma(_sp(a), _sp(b), **V).entropy().mean()),
    "weibull": (POSITIVE, lambda a, b, x: -rd.Weibull(_sp(a), _sp(b), **V).log_prob(x).mean()
                + rd.Weibull(_sp(a), _sp(b), **V).rsample((2,)).mean()),
    "beta": (UNIT, lambda a, b, x: -rd.Beta(_sp(a), _sp(b), **V).log_prob(x).mean()
             + rd.Beta(_sp(a), _sp(b), **V).entropy().mean()),
    "kumaraswamy": (UNIT, lambda a, b, x: -rd.Kumaraswamy(_sp(a), _sp(b), **V).log_prob(x)
                    .mean() + rd.Kumaraswamy(_sp(a), _sp(b), **V).rsample((2,)).mean()),
    "continuous_bernoulli": (UNIT, lambda a, b, x: -rd.ContinuousBernoulli(
        logits=a, **V).log_prob(x).mean() + rd.ContinuousBernoulli(logits=b, **V).rsample(
        (2,)).mean()),
    "von_mises": (ANGLES, lambda a, b, x: -rd.VonMises(a, _sp(b), **V).log_prob(x).mean()),
    "poisson": (COUNTS, lambda a, b, x: -rd.Poisson(_sp(a), **V).log_prob(x).mean()),
    "binomial": (COUNTS, lambda a, b, x: -rd.Binomial(10, logits=a, **V).log_prob(x).mean()
                 + rd.Binomial(10, logits=b, **V).entropy().mean() * 0),
    "bernoulli_sample": (BINARY, lambda a, b, x: -rd.Bernoulli(logits=a, **V).log_prob(x).mean()
                         - (rd.Bernoulli(logits=b, **V).sample((4,)) * b).mean()
                         + rd.Bernoulli(logits=b, **V).entropy().mean()),
    "geometric": (COUNTS, lambda a, b, x: -rd.Geometric(logits=a, **V).log_prob(x).mean()
                  + rd.Geometric(logits=b, **V).entropy().mean()),
    "categorical_policy": (CLASSES, lambda a, b, x: _policy(rd.Categorical(
        logits=a + 0 * b + rt.zeros(8, 1), **V), x)),
    "one_hot_categorical": (ONE_HOT, lambda a, b, x: -rd.OneHotCategorical(
        logits=a + 0 * b, **V).log_prob(x).mean() + rd.OneHotCategorical(
        logits=b, **V).entropy()),
    "relaxed_bernoulli": (BINARY, lambda a, b, x: (rd.RelaxedBernoulli(
        rt.tensor(0.5), logits=a, **V).rsample((8,)) - x).pow(2).mean()
        + rd.LogitRelaxedBernoulli(rt.tensor(0.5), logits=b, **V).rsample().mean()),
    "relaxed_one_hot": (ONE_HOT, lambda a, b, x: (rd.RelaxedOneHotCategorical(
        rt.tensor(0.7), logits=a + b, **V).rsample((8,)) - x).pow(2).mean()),
    "mvn_scale_tril": (DATA, lambda a, b, x: -rd.MultivariateNormal(
        a, scale_tril=rt.diag_embed(_sp(b)) + 0.1 * rt.ones(3, 3).tril(-1), **V).log_prob(x)
        .mean() + rd.MultivariateNormal(a, scale_tril=rt.diag_embed(_sp(b)), **V).rsample(
        (2,)).mean()),
    "lowrank_mvn": (DATA, lambda a, b, x: -rd.LowRankMultivariateNormal(
        a, b.unsqueeze(-1) * 0.5, _sp(b), **V).log_prob(x).mean()
        + rd.LowRankMultivariateNormal(a, b.unsqueeze(-1), _sp(a), **V).entropy()),
    "vae_normal_rsample_kl": (DATA, lambda a, b, x: _vae(a, b, x)),
    "independent_kl": (DATA, lambda a, b, x: rd.kl_divergence(
        rd.Independent(rd.Normal(a, _sp(b), **V), 1),
        rd.Independent(rd.Normal(x.mean(0), rt.ones(3), **V), 1))),
    "kl_cross_family": (DATA, lambda a, b, x: rd.kl_divergence(
        rd.Laplace(a, _sp(b), **V), rd.Normal(b, _sp(a), **V)).sum()
        + rd.kl_divergence(rd.Exponential(_sp(a), **V), rd.Gumbel(b, _sp(b), **V)).sum()),
    "squashed_gaussian_policy": (DATA, lambda a, b, x: _squashed(a, b)),
    "mixture_density_network": (DATA, lambda a, b, x: _mdn(a, b, x, independent=False)),
    "mixture_of_independent": (DATA, lambda a, b, x: _mdn(a, b, x, independent=True)),
    "pareto_uniform": (POSITIVE, lambda a, b, x: rd.Pareto(_sp(a), _sp(b) + 1, **V).rsample(
        (2,)).log().mean() + rd.Uniform(a, a + _sp(b), **V).rsample((3,)).mean()
        + rd.Uniform(a - 5, a + 5 + _sp(b), **V).entropy().mean()),
}


def _vae(a: rt.Tensor, b: rt.Tensor, x: rt.Tensor) -> rt.Tensor:
    """A VAE's loss: a reparameterized draw of the posterior decoded against the data, plus
    KL(posterior || standard normal) summed over the latent."""
    q = rd.Normal(a + 0.1 * x, _sp(b).expand(8, 3), **V)
    z = q.rsample()
    prior = rd.Normal(rt.zeros(8, 3), rt.ones(8, 3), **V)
    return (z - x).pow(2).mean() + rd.kl_divergence(q, prior).sum(-1).mean()


def _policy(d: rd.Categorical, target: rt.Tensor) -> rt.Tensor:
    """REINFORCE: log_prob of sampled actions times their advantage, an entropy bonus."""
    action = d.sample()
    reward = (action == target).float()
    return -(d.log_prob(action) * (reward - reward.mean())).mean() - 0.1 * d.entropy().mean()


def _squashed(a: rt.Tensor, b: rt.Tensor) -> rt.Tensor:
    """A SAC-style tanh-squashed Gaussian: rsample, then the log_prob of that sample (the
    cached pre-image of tanh)."""
    base = rd.Normal(a, _sp(b), **V)
    d = rd.TransformedDistribution(base, [rd.TanhTransform(cache_size=1),
                                          rd.AffineTransform(0.0, 2.0)], **V)
    action = d.rsample((4,))
    return (0.2 * d.log_prob(action) - action).mean()


def _mdn(a: rt.Tensor, b: rt.Tensor, x: rt.Tensor, independent: bool) -> rt.Tensor:
    """A mixture density network's head: for each of the 8 rows, 3 components mixed by
    logits from the row; the negative log-likelihood of a target, a draw from the mixture
    (its components' draws gathered by a categorical draw) and its mean."""
    logits = a + x
    locs, scales = b + 0.5 * x, _sp(a).expand(8, 3)
    if independent:
        comp: Any = rd.Independent(rd.Normal(rt.stack([locs, -locs], -1),
                                             rt.stack([scales, scales], -1), **V), 1)
        target = x[:, :2]
    else:
        comp = rd.Normal(locs, scales, **V)
        target = x.sum(-1)
    d = rd.MixtureSameFamily(rd.Categorical(logits=logits, **V), comp, **V)
    return -d.log_prob(target).mean() + 0.01 * d.sample((2,)).mean() + 0.01 * d.mean.sum()


def _build(name: str) -> tuple[Callable[[rt.Tensor], rt.Tensor], list[rt.Tensor]]:
    a = rt.tensor([0.3, -0.2, 0.5], requires_grad=True)
    b = rt.tensor([0.1, 0.4, -0.3], requires_grad=True)
    opt = rt.optim.SGD([a, b], lr=0.05, momentum=0.5)
    loss_of = CASES[name][1]

    def step(x: rt.Tensor) -> rt.Tensor:
        opt.zero_grad()
        loss = loss_of(a, b, x)
        loss.backward()
        opt.step()
        return loss.detach()

    return step, [a, b]


def _run(step: Callable[[rt.Tensor], rt.Tensor], x: rt.Tensor, calls: int) -> list[Any]:
    rt.manual_seed(7)
    out = []
    for _ in range(calls):
        loss = step(x)
        out.append((loss.numpy().copy(), rt.get_rng_state().numpy().copy()))
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_distribution_step_compiled_equals_eager(name: str) -> None:
    x = CASES[name][0]
    eager, eager_params = _build(name)
    want = _run(eager, x, 3)
    step, params = _build(name)
    compiled = planner.compile(step, fullgraph=True)  # raises where it would fall back
    got = _run(compiled, x, 3)
    for (loss, state), (want_loss, want_state) in zip(got, want):
        np.testing.assert_allclose(loss, want_loss, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(state, want_state)
    for p, q in zip(params, eager_params):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
    assert compiled.captures == 1
