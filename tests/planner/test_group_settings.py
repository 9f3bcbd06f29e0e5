"""A step that assigns its optimizer's group settings (``g["lr"] = lr`` in a loop over
``opt.param_groups``): a replay's plan reads each hyperparameter from its group, so every
replay sets the value as the step does, from that call's argument, before or after the update
reads it as the step did (planner.capture.Tracer.group_effects). A replay used to read the
value the last capture left there, silently: a step called with lr 0.1, 0.5, 0.1 updated with
0.5 at its third call."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
from runtime import nn

F = nn.functional


def _make() -> tuple[Any, Any]:
    rt.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 2))
    return model, rt.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)


def _loop_assign(model: Any, opt: Any) -> Callable[..., Any]:
    def step(x: Any, y: Any, lr: Any) -> Any:
        for g in opt.param_groups:
            g["lr"] = lr
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()
    return step


def _direct_assign(model: Any, opt: Any) -> Callable[..., Any]:
    def step(x: Any, y: Any, lr: Any) -> Any:
        opt.param_groups[0]["lr"] = lr
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()
    return step


def _assign_after_update(model: Any, opt: Any) -> Callable[..., Any]:
    def step(x: Any, y: Any, lr: Any) -> Any:
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        for g in opt.param_groups:  # the next call's rate
            g["lr"] = lr
        return loss.detach()
    return step


def _run(make_step: Callable[..., Any], compiled: bool, lrs: list[Any]) -> tuple[Any, ...]:
    model, opt = _make()
    step = make_step(model, opt)
    if compiled:
        step = planner.compile(step)
    rng = np.random.default_rng(0)
    x = rt.from_numpy(rng.standard_normal((8, 4)).astype(np.float32))
    y = rt.from_numpy(rng.standard_normal((8, 2)).astype(np.float32))
    losses, rates = [], []
    for lr in lrs:
        losses.append(step(x, y, lr).item())
        rates.append(opt.param_groups[0]["lr"])
    return losses, rates, [p.detach().numpy().copy() for p in model.parameters()], step


@pytest.mark.parametrize("make_step", [_loop_assign, _direct_assign, _assign_after_update])
def test_an_assigned_rate_is_the_calls_at_every_replay(make_step: Callable[..., Any]) -> None:
    lrs = [0.1, 0.5, 0.1, 0.5, 0.1, 0.5]
    want = _run(make_step, False, lrs)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no fallback to eager
        got = _run(make_step, True, lrs)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    assert got[1] == want[1]  # the group holds each call's rate afterwards, as eager's
    # six momentum steps at rates up to 0.5: the compiled update's rounding and eager's part
    # by a few units in the last place of float32
    for g, w in zip(got[2], want[2], strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_a_tensor_rate_argument_is_assigned_at_every_replay() -> None:
    lrs = [rt.tensor(r) for r in (0.1, 0.5, 0.2)]
    want = _run(_loop_assign, False, lrs)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        got = _run(_loop_assign, True, lrs)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    assert [r is w for r, w in zip(got[1], lrs)] == [True] * 3
    assert got[3].captures == 1


def test_a_rate_the_step_computes_runs_eagerly_and_says_why() -> None:
    def decaying(model: Any, opt: Any) -> Callable[..., Any]:
        def step(x: Any, y: Any, factor: Any) -> Any:
            for g in opt.param_groups:
                g["lr"] = g["lr"] * factor  # a value of the group's own: not replayable
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            return loss.detach()
        return step

    factors = [0.5] * 4
    want = _run(decaying, False, factors)
    with pytest.warns(RuntimeWarning, match=r"sets SGD.param_groups\[0\]\['lr'\] to a value"):
        got = _run(decaying, True, factors)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    assert got[1] == want[1]
