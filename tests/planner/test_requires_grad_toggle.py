"""Steps that change parameters' requires_grad (a GAN freezing its discriminator while the
generator trains): guarded as the step found the flags where it reads a tensor before setting
its flag (not guarded where it sets the flag first: a call may begin with either), set as the
step left them after every replay, captured once."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt

nn = rt.nn


def _gan(seed: int = 0) -> tuple[Any, Any, Any, Any]:
    rt.manual_seed(seed)
    gen, disc = nn.Linear(4, 4), nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    opt = rt.optim.SGD(gen.parameters(), lr=0.1, momentum=0.9)
    return gen, disc, opt, rt.randn(8, 4)


def _run(make_step: Any, compiled: bool, calls: int = 5) -> tuple[Any, ...]:
    gen, disc, opt, x = _gan()
    step = make_step(gen, disc, opt)
    if compiled:
        step = planner.compile(step)
    losses, flags = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no fallback to eager
        for _ in range(calls):
            losses.append(float(step(x)))
            flags.append([p.requires_grad for p in disc.parameters()])
    grads = [None if p.grad is None else p.grad.numpy().copy() for p in disc.parameters()]
    params = [p.detach().numpy().copy() for p in gen.parameters()]
    return losses, flags, grads, params, step


def _frozen_then_restored(gen: Any, disc: Any, opt: Any) -> Any:
    def step(x: Any) -> Any:
        for p in disc.parameters():
            p.requires_grad_(False)
        opt.zero_grad()
        loss = disc(gen(x)).mean()
        loss.backward()
        opt.step()
        for p in disc.parameters():
            p.requires_grad_(True)
        return loss
    return step


def _thawed_then_frozen(gen: Any, disc: Any, opt: Any) -> Any:
    def step(x: Any) -> Any:
        for p in disc.parameters():
            p.requires_grad = True
        opt.zero_grad()
        loss = disc(gen(x)).pow(2).mean()
        loss.backward()
        opt.step()
        for p in disc.parameters():
            p.requires_grad = False
        return loss
    return step


def _frozen_once(gen: Any, disc: Any, opt: Any) -> Any:
    def step(x: Any) -> Any:
        disc[0].weight.requires_grad_(False)
        opt.zero_grad()
        loss = disc(gen(x)).mean()
        loss.backward()
        opt.step()
        return loss
    return step


@pytest.mark.parametrize(("make_step", "captures"), [
    # the first call begins with the flags on, the later ones with them off (as the step
    # leaves them): the step sets them before reading, so they are not guarded
    (_frozen_then_restored, 1), (_thawed_then_frozen, 1), (_frozen_once, 1)])
def test_toggling_steps_replay_and_equal_eager(make_step: Any, captures: int) -> None:
    want = _run(make_step, compiled=False)
    got = _run(make_step, compiled=True)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
    assert got[1] == want[1]  # the flags after every call, as eager leaves them
    for g, w in zip(got[2], want[2], strict=True):
        assert (g is None) == (w is None)
        if w is not None:
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    for g, w in zip(got[3], want[3], strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    assert got[4].captures == captures


def test_capture_that_falls_back_puts_flags_back() -> None:
    gen, disc, opt, x = _gan()
    seen = []

    def step(x: Any) -> Any:
        for p in disc.parameters():
            p.requires_grad_(False)
        seen.append([p.requires_grad for p in disc.parameters()])
        loss = disc(gen(x)).mean()
        loss.item()  # a value the capture has not: the call runs eagerly
        for p in disc.parameters():
            p.requires_grad_(True)
        return loss

    compiled = planner.compile(step)
    with pytest.warns(RuntimeWarning, match="runs eagerly"):
        compiled(x)
    assert all(p.requires_grad for p in disc.parameters())
    assert seen[-1] == [False] * 4  # the eager run froze them itself, from True
