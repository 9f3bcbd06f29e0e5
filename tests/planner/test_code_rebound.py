"""A compiled step whose ``__code__`` is rebound is another function: its plans (captured from
the old code) are dropped and the next call captures the new code, as torch.compile's guard
on the frame's code object recompiles. Before, the old plan replayed: compiled 6.0 where
eager gave 9.0 (found by h42)."""

from __future__ import annotations

import numpy as np

import planner
import runtime as rt

SCALE, OTHER = 2.0, 3.0


def _ones() -> rt.Tensor:
    return rt.from_numpy(np.ones(3, np.float32))


def test_a_rebound_code_is_captured_anew() -> None:
    def step(x):
        return (x * SCALE).sum()

    def other(x):
        return (x * OTHER).sum()

    compiled = planner.compile(step)
    x = _ones()
    assert float(compiled(x)) == float(compiled(x)) == 6.0
    assert compiled.captures == 1
    step.__code__ = other.__code__
    assert float(compiled(x)) == float(step(x)) == 9.0
    assert float(compiled(x)) == 9.0
    assert compiled.captures == 2


def test_a_rebound_code_with_other_parameters() -> None:
    def step(x):
        return (x * 2).sum()

    def other(x, y):
        return (x * y).sum()

    compiled = planner.compile(step)
    x = _ones()
    assert float(compiled(x)) == 6.0
    step.__code__ = other.__code__
    assert float(compiled(x, y=x * 4)) == float(step(x, y=x * 4)) == 12.0


def test_a_steady_step_captures_once() -> None:
    w = rt.tensor(np.ones(3, np.float32), requires_grad=True)
    opt = rt.optim.SGD([w], lr=0.1)

    def step(x):
        opt.zero_grad()
        loss = (w * x).sum()
        loss.backward()
        opt.step()
        return loss

    compiled = planner.compile(step)
    for _ in range(4):
        compiled(_ones())
    assert compiled.captures == 1


def test_a_bound_method_whose_function_code_is_rebound() -> None:
    class Runner:
        def step(self, x):
            return (x * SCALE).sum()

    def other(self, x):
        return (x * OTHER).sum()

    r = Runner()
    compiled = planner.compile(r.step)
    x = _ones()
    assert float(compiled(x)) == 6.0
    Runner.step.__code__ = other.__code__
    assert float(compiled(x)) == float(r.step(x)) == 9.0
