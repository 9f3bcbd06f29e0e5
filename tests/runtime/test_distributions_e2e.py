"""rt.distributions in training steps: a VAE-style loss (Normal.rsample + KL) and a
REINFORCE loss (Categorical.sample/log_prob) trained eagerly and as planner.compile'd steps,
which draw the same numbers from the default generator and give the same losses."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
import runtime.distributions as rd
import runtime.nn as nn
import runtime.nn.functional as F

X = rt.tensor(np.random.default_rng(0).normal(size=(16, 4)).astype(np.float32))
TARGET = rt.tensor(np.random.default_rng(1).integers(0, 3, size=16))


def _vae(validate: bool | None) -> tuple[Any, list[Any]]:
    rt.manual_seed(0)
    enc, dec = nn.Linear(4, 4), nn.Linear(2, 4)
    params = list(enc.parameters()) + list(dec.parameters())
    opt = rt.optim.SGD(params, lr=0.1)

    def step(x: Any) -> Any:
        opt.zero_grad()
        h = enc(x)
        mu, log_sigma = h[:, :2], h[:, 2:]
        q = rd.Normal(mu, log_sigma.exp(), validate_args=validate)
        recon = dec(q.rsample())
        prior = rd.Normal(rt.zeros_like(mu), rt.ones_like(mu), validate_args=validate)
        loss = F.mse_loss(recon, x) + rd.kl_divergence(q, prior).sum(-1).mean()
        loss.backward()
        opt.step()
        return loss

    return step, params


def _reinforce() -> tuple[Any, Any, list[Any]]:
    rt.manual_seed(0)
    policy = nn.Linear(4, 3)
    opt = rt.optim.SGD(policy.parameters(), lr=0.5)

    def step(x: Any, target: Any) -> Any:
        opt.zero_grad()
        dist = rd.Categorical(logits=policy(x), validate_args=False)
        action = dist.sample()
        reward = (action == target).to(rt.float32)
        advantage = reward - reward.mean()
        loss = -(dist.log_prob(action) * advantage).mean() - 0.01 * dist.entropy().mean()
        loss.backward()
        opt.step()
        return loss

    def target_prob() -> float:
        with rt.no_grad():
            probs = rd.Categorical(logits=policy(X)).probs
            return probs.gather(-1, TARGET.unsqueeze(-1)).mean().item()

    return step, target_prob, list(policy.parameters())


def _run(step: Any, n: int, *args: Any) -> list[float]:
    rt.manual_seed(1)
    return [step(*args).item() for _ in range(n)]


def test_vae_loss_trains_eagerly_and_compiled_alike():
    eager, params_e = _vae(False)
    losses = _run(eager, 30, X)
    assert np.mean(losses[-5:]) < 0.6 * np.mean(losses[:5])
    compiled_fn, params_c = _vae(False)
    compiled = planner.compile(compiled_fn, fullgraph=True)  # raises where it cannot capture
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = _run(compiled, 30, X)
    np.testing.assert_allclose(got, losses, rtol=1e-5)
    for a, b in zip(params_c, params_e):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert compiled.captures == 1


def test_a_validating_step_captures_its_checks_as_plan_steps():
    """Argument validation (on by default, as torch's) is a plan step that checks the values
    at each replay, so a validating step captures once and replays (it ran eagerly when
    validation read the values at capture), with the same results."""
    eager, _ = _vae(None)
    want = _run(eager, 3, X)
    step, _ = _vae(None)
    compiled = planner.compile(step, fullgraph=True)  # raises where it cannot capture
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = _run(compiled, 3, X)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert compiled.captures == 1


def test_reinforce_trains_eagerly_and_compiled_alike():
    eager, prob_e, params_e = _reinforce()
    before = prob_e()
    losses = _run(eager, 40, X, TARGET)
    assert prob_e() > before + 0.1
    compiled_fn, _, params_c = _reinforce()
    compiled = planner.compile(compiled_fn, fullgraph=True)
    got = _run(compiled, 40, X, TARGET)
    np.testing.assert_allclose(got, losses, rtol=1e-5, atol=1e-7)
    for a, b in zip(params_c, params_e):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)


def _gaussian_fit(use_mvn: bool) -> tuple[Any, Any]:
    data = rt.tensor(np.random.default_rng(2).normal([1.0, -2.0], [0.5, 2.0], size=(64, 2)),
                     dtype=rt.float64)
    raw = rt.zeros(2, 2, dtype=rt.float64, requires_grad=True)
    loc = rt.zeros(2, dtype=rt.float64, requires_grad=True)
    opt = rt.optim.Adam([raw, loc], lr=0.05)

    def step(x: Any) -> Any:
        opt.zero_grad()
        scale_tril = raw.tril(-1) + rt.diag_embed(raw.diagonal().exp())
        if use_mvn:
            d = rd.MultivariateNormal(loc, scale_tril=scale_tril, validate_args=False)
        else:
            d = rd.Independent(rd.Normal(loc, raw.diagonal().exp(), validate_args=False), 1)
        loss = -d.log_prob(x).mean() + 1e-3 * d.rsample((8,)).pow(2).mean()
        loss.backward()
        opt.step()
        return loss

    return step, data


@pytest.mark.parametrize("use_mvn", [True, False])
def test_gaussian_fit_compiled_equals_eager(use_mvn):
    step, data = _gaussian_fit(use_mvn)
    want = _run(step, 25, data)
    assert want[-1] < want[0]
    step_c, data_c = _gaussian_fit(use_mvn)
    got = _run(planner.compile(step_c, fullgraph=True), 25, data_c)
    np.testing.assert_allclose(got, want, rtol=1e-9)


def test_relaxed_one_hot_step_compiles():
    logits = rt.tensor([[0.1, 0.5, -0.3]], dtype=rt.float64, requires_grad=True)
    weights = rt.tensor([1.0, -2.0, 0.5], dtype=rt.float64)

    def step(w: Any) -> Any:
        d = rd.RelaxedOneHotCategorical(rt.tensor(0.5, dtype=rt.float64), logits=logits,
                                        validate_args=False)
        loss = (d.rsample((16,)) * w).sum(-1).mean()
        (g,) = rt.autograd.grad(loss, [logits])
        return loss, g

    rt.manual_seed(4)
    want = [[t.detach().numpy() for t in step(weights)] for _ in range(3)]
    compiled = planner.compile(step, fullgraph=True)
    rt.manual_seed(4)
    for i in range(3):
        for a, b in zip(compiled(weights), want[i]):
            np.testing.assert_allclose(a.detach().numpy(), b, rtol=1e-9)
    assert compiled.captures == 1


def test_a_gamma_draw_runs_a_step_eagerly():
    """Gamma (and Beta, Dirichlet, Poisson, Binomial) draws come from numpy's samplers on
    the host, not from runtime ops: a step drawing one runs eagerly (fullgraph: an error)."""
    conc = rt.tensor([1.5, 3.0], dtype=rt.float64, requires_grad=True)

    def step() -> Any:
        return rd.Gamma(conc, 1.0, validate_args=False).rsample().sum()

    with pytest.raises(planner.CompileError, match="a Gamma draw inside a captured step"):
        planner.compile(step, fullgraph=True)()
