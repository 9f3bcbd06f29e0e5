"""An inference tensor (made under inference_mode) given to a compiled step: the step runs
eagerly, where PyTorch's checks of its uses raise as they would without compile; a normal
tensor of the same shape afterwards still replays the plan."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt


def _step() -> tuple[Any, Any]:
    rt.manual_seed(0)
    lin = rt.nn.Linear(4, 2)
    opt = rt.optim.SGD(lin.parameters(), lr=0.1)

    def step(x: Any) -> Any:
        opt.zero_grad()
        loss = lin(x).pow(2).sum()
        loss.backward()
        opt.step()
        return loss

    return lin, step


def test_an_inference_tensor_argument_raises_as_eagerly() -> None:
    lin, fn = _step()
    step = planner.compile(fn)
    x = rt.randn(3, 4)
    for _ in range(2):
        step(x)
    with rt.inference_mode():
        xi = rt.randn(3, 4)
    before = lin.weight.detach().numpy().copy()
    with pytest.warns(RuntimeWarning, match="argument 0 is an inference tensor"), \
            pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        step(xi)
    np.testing.assert_array_equal(lin.weight.detach().numpy(), before)
    captures = step.captures
    step(x)  # the normal tensor's plan, not the inference tensor's eager entry
    assert step.captures == captures


def test_an_inference_tensor_in_a_step_that_saves_nothing_runs() -> None:
    """Under no_grad nothing is saved: the eager run gives the value (as PyTorch)."""
    step = planner.compile(lambda x: (x * 2).sum())
    with rt.inference_mode():
        xi = rt.ones(5)
    with pytest.warns(RuntimeWarning, match="inference tensor"):
        assert step(xi).item() == 10.0
