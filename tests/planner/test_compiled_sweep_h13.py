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
