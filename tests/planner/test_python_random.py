"""A step that draws from Python's ``random`` or numpy's global generator runs eagerly: a plan
would repeat the numbers its capture drew at every replay. The capture puts both generators
back, so the eager calls draw what eager mode draws."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt


def _python_draw(x: Any) -> Any:
    return (x * random.random()).sum()


def _numpy_draw(x: Any) -> Any:
    return (x * float(np.random.rand())).sum()


def _numpy_normal(x: Any) -> Any:
    return (x + float(np.random.standard_normal())).sum()


@pytest.mark.parametrize("step", [_python_draw, _numpy_draw, _numpy_normal])
def test_a_step_drawing_python_numbers_runs_eagerly(step: Any) -> None:
    x = rt.ones(3)
    random.seed(0)
    np.random.seed(0)
    want = [step(x).item() for _ in range(3)]
    after = random.random(), np.random.rand()
    random.seed(0)
    np.random.seed(0)
    compiled = planner.compile(step)
    with pytest.warns(RuntimeWarning, match="runs eagerly: the step draws from"):
        got = [compiled(x).item() for _ in range(3)]
    assert got == want
    assert len(set(got)) == 3
    assert (random.random(), np.random.rand()) == after


def test_a_step_that_draws_nothing_is_captured() -> None:
    random.seed(1)
    np.random.seed(1)
    before = random.random(), np.random.rand()
    random.seed(1)
    np.random.seed(1)
    w = rt.ones(3, requires_grad=True)

    def step(x: Any) -> Any:
        loss = (rt.nn.functional.dropout(w * x, 0.5)).sum()
        loss.backward()
        return loss.detach()

    compiled = planner.compile(step)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for _ in range(3):
            compiled(rt.ones(3))
    assert compiled.captures == 1
    assert (random.random(), np.random.rand()) == before  # the capture drew none of them
