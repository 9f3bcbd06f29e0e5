"""Compiled training steps against eager mode (h13's sweep of training-loop patterns): the
same parameters, gradients, optimizer state and returned values after every call."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt

_WEIGHTS = {0: 1.0, 1: 2.0, 2: 3.0}


@functools.lru_cache
def _scale_of(n: int) -> float:
    return 1.0 + n / 2


# a number argument looked up by its hash: the stand-in a capture passes must not be
# hashed by its id, which no key equals (the lookup missed: 0.0, False, silently)
_LOOKUPS: dict[str, Callable[[int], float]] = {
    "dict_get": lambda it: _WEIGHTS.get(it % 3, 0.0),
    "set_member": lambda it: 5.0 if it in {1, 4} else 1.0,
    "dict_literal_key": lambda it: {it: 2.0}.get(1, 0.5),
    "lru_cache": lambda it: _scale_of(it % 2),
}


def _train(lookup: Callable[[int], float], compiled: bool) -> list[Any]:
    w = rt.tensor([1.0, -2.0, 0.5], requires_grad=True)
    opt = rt.optim.SGD([w], lr=0.1)

    def step(x: rt.Tensor, it: int) -> rt.Tensor:
        opt.zero_grad()
        loss = (w * x).pow(2).sum() * lookup(it)
        loss.backward()
        opt.step()
        return loss

    run = planner.compile(step) if compiled else step
    x = rt.tensor([0.5, 0.25, 1.0])
    return [float(run(x, it)) for it in range(6)] + w.detach().numpy().tolist()


@pytest.mark.parametrize("name", sorted(_LOOKUPS))
def test_a_number_argument_looked_up_by_hash_is_its_value(name: str) -> None:
    eager = _train(_LOOKUPS[name], compiled=False)
    compiled = _train(_LOOKUPS[name], compiled=True)
    np.testing.assert_allclose(compiled, eager, rtol=1e-6)


def _step_first(opt_name: str, compiled: bool) -> tuple[list[Any], list[float]]:
    """A loop stepping the optimizer before the backward (the first call's step finds no
    gradient), its lr halved by a scheduler between calls: the optimizer state's entries
    after each call, and the losses, weights and state values."""
    rt.manual_seed(0)
    model = rt.nn.Linear(4, 3)
    opt = {"rprop": rt.optim.Rprop, "asgd": rt.optim.ASGD,
           "adam": rt.optim.Adam}[opt_name](model.parameters(), lr=0.01)
    sched = rt.optim.lr_scheduler.ExponentialLR(opt, 0.5)

    def step(x: rt.Tensor) -> rt.Tensor:
        opt.step()
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        return loss

    run = planner.compile(step) if compiled else step
    entries: list[Any] = []
    values: list[float] = []
    for i in range(4):
        values.append(float(run(rt.ones(5, 4) * (i + 1))))
        sched.step()
        values += model.weight.detach().numpy().ravel().tolist()
        for index, state in opt.state_dict()["state"].items():
            for name, value in sorted(state.items()):
                entries.append((i, index, name))
                values += np.ravel(rt.as_tensor(value).numpy()).tolist()
    return entries, values


@pytest.mark.parametrize("opt_name", ["rprop", "asgd", "adam"])
def test_optimizer_state_made_when_eager_mode_makes_it(opt_name: str) -> None:
    # the capture after the first (eager) call made the optimizer's state for its plan:
    # Adam's zeros showed in state_dict() a call early, Rprop's step sizes and ASGD's eta
    # took the lr of then, not the halved lr of the step that first finds a gradient
    eager_entries, eager_values = _step_first(opt_name, False)
    entries, values = _step_first(opt_name, True)
    assert entries == eager_entries
    np.testing.assert_allclose(values, eager_values, rtol=1e-6)
