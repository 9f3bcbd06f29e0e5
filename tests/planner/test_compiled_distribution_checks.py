"""Distributions validate their arguments (validate_args, on by default as in PyTorch) inside
a compiled step without stopping the capture: each check is a plan step made at every
replay, so a VAE's Normal or a policy's Categorical replays, and a bad value still raises
PyTorch's ValueError."""

from __future__ import annotations

import copy
import warnings

import pytest

import planner
import runtime as rt

D = rt.distributions


def _no_fallback():
    ctx = warnings.catch_warnings()
    ctx.__enter__()
    warnings.filterwarnings("error", message="planner")
    return ctx


def test_vae_step_with_validated_normals_replays_as_eager():
    rt.manual_seed(0)
    model = rt.nn.Linear(4, 4)
    opt = rt.optim.SGD(model.parameters(), lr=0.1)

    def step(x):
        opt.zero_grad()
        h = model(x)
        mu, logstd = h[:, :2], h[:, 2:]
        q = D.Normal(mu, logstd.exp())
        z = q.rsample()
        prior = D.Normal(rt.zeros_like(mu), rt.ones_like(mu))
        loss = D.kl_divergence(q, prior).sum() + (z ** 2).sum() - q.log_prob(z).sum()
        loss.backward()
        opt.step()
        return loss

    x = rt.randn(3, 4)
    start = copy.deepcopy(model.state_dict())
    compiled = planner.compile(step)
    ctx = _no_fallback()
    try:
        rt.manual_seed(1)
        got = [float(compiled(x)) for _ in range(3)]
    finally:
        ctx.__exit__(None, None, None)
    after = copy.deepcopy(model.state_dict())
    model.load_state_dict(start)
    rt.manual_seed(1)
    want = [float(step(x)) for _ in range(3)]
    assert got == pytest.approx(want, rel=1e-5)  # fused kernels round in their own order
    for k, v in model.state_dict().items():
        assert rt.allclose(v, after[k], rtol=1e-5, atol=1e-6), k


def test_a_value_outside_the_support_raises_at_replay():
    logits = rt.randn(3, 4)

    def step(actions):
        c = D.Categorical(logits=logits)
        return -c.log_prob(actions).mean() - c.entropy().mean()

    compiled = planner.compile(step)
    ctx = _no_fallback()
    try:
        good = rt.tensor([0, 1, 3])
        assert float(compiled(good)) == pytest.approx(float(step(good)))
        assert float(compiled(rt.tensor([2, 2, 0]))) == pytest.approx(
            float(step(rt.tensor([2, 2, 0]))))
        head = (r"Expected value argument \(Tensor of shape \(3,\)\) to be within the support "
                r"\(IntegerInterval\(lower_bound=0, upper_bound=3\)\) of the distribution "
                r"Categorical\(logits: torch.Size\(\[3, 4\]\)\), but found invalid values:")
        with pytest.raises(ValueError, match=head):
            compiled(rt.tensor([0, 1, 7]))
        assert len(compiled._cache) == 1  # the same plan: no capture per value
    finally:
        ctx.__exit__(None, None, None)
    with pytest.raises(ValueError, match=head + r"\ntensor\(\[0, 1, 7\]\)"):
        step(rt.tensor([0, 1, 7]))  # eager mode shows the values


def test_a_bad_parameter_raises_at_replay_and_validate_args_false_skips_it():
    def step(scale):
        return D.Normal(rt.zeros(2), scale).log_prob(rt.zeros(2)).sum()

    def unchecked(scale):
        return D.Normal(rt.zeros(2), scale, validate_args=False).log_prob(rt.zeros(2)).sum()

    compiled, loose = planner.compile(step), planner.compile(unchecked)
    ctx = _no_fallback()
    try:
        assert float(compiled(rt.ones(2))) == pytest.approx(float(step(rt.ones(2))))
        with pytest.raises(ValueError, match=r"Expected parameter scale \(Tensor of shape "
                                             r"\(2,\)\) of distribution Normal\(loc: "
                                             r"torch.Size\(\[2\]\), scale: torch.Size\(\[2\]\)\) "
                                             r"to satisfy the constraint "
                                             r"GreaterThan\(lower_bound=0.0\)"):
            compiled(rt.tensor([1.0, -1.0]))
        loose(rt.ones(2))
        bad = rt.tensor([1.0, -1.0])
        assert rt.isnan(loose(bad)) == rt.isnan(unchecked(bad))  # no error, as eager's
    finally:
        ctx.__exit__(None, None, None)
    with pytest.raises(ValueError, match="Expected parameter scale"):
        step(rt.tensor([1.0, -1.0]))
