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


def test_an_argument_of_another_layout_is_captured_again() -> None:
    """The plan key holds a non-contiguous argument's strides, as torch.compile's guards: a
    step whose view() eager mode refuses for a transposed tensor raises that error compiled
    too (the plan captured from a contiguous one replayed it), and a contiguous call after
    it replays the first plan."""

    def step(x: Any) -> Any:
        return (x.view(-1) * 2).sum()

    compiled = planner.compile(step, backend="llvm", background=False)
    a = rt.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4))
    assert compiled(a).item() == 132.0
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        compiled(rt.from_numpy(np.arange(12, dtype=np.float32).reshape(4, 3)).t())
    assert compiled(a * 2).item() == 264.0
    # sliced arguments of other strides: each its own capture, as eager mode's view decides
    rows = rt.from_numpy(np.arange(24, dtype=np.float32).reshape(3, 8))
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        compiled(rows[:, :4])
    assert compiled(rows[:, ::2]).item() == 264.0  # (8, 2): its rows merge, as in PyTorch
    assert compiled.captures == 2  # the calls that raised planned nothing
