"""h15's adversarial sweep of planner.compile's guards and stale plans: a step changed between
calls (its defaults, a tensor it saved written in place, ...) computes what eager mode does,
capturing again where what the plan baked in changed, with no stale replay."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt

nn = rt.nn


def _outcome(fn: Callable[..., Any], *args: Any) -> Any:
    """What a call gives: its returned value, or the type and text of what it raised."""
    try:
        out = fn(*args)
    except Exception as e:  # noqa: BLE001 - compared with the other mode's
        return type(e).__name__, str(e)
    return out.detach().numpy().copy() if isinstance(out, rt.Tensor) else out


def _same(a: Any, b: Any) -> None:
    if isinstance(a, np.ndarray):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    else:
        assert a == b


@pytest.mark.parametrize("make", [lambda: rt.ones(4, 3, requires_grad=True),
                                  lambda: nn.Linear(3, 2)], ids=["tensor", "linear"])
def test_input_saved_for_backward_then_written_in_place_raises(make: Callable[[], Any]) -> None:
    """An argument a forward op saves (Linear's input, for its weight's gradient), written in
    place before the backward: eager mode (and PyTorch) raise "one of the variables needed for
    gradient computation has been modified by an inplace operation"; the capture did not
    move the version of a tensor from outside the step, and the plan computed a gradient
    from the new values, silently."""

    def step(w: Any, x: Any) -> Any:
        loss = (x @ w.t() if isinstance(w, rt.Tensor) else w(x)).sum()
        x.add_(1)
        loss.backward()
        return loss

    w = make()
    for p in [w] if isinstance(w, rt.Tensor) else w.parameters():
        p.grad = rt.zeros_like(p)  # a step that finds them set: captured on its first call
    w2 = copy.deepcopy(w)
    compiled = planner.compile(step)
    for _ in range(3):
        eager, replayed = _outcome(step, w, rt.ones(2, 3)), _outcome(compiled, w2, rt.ones(2, 3))
        assert eager[0] == "RuntimeError" and "modified by an inplace operation" in eager[1]
        assert replayed == eager


def test_input_written_in_place_after_backward_replays() -> None:
    """Written after the backward that saved it: no error, one capture, eager's values."""

    def step(w: Any, x: Any) -> Any:
        loss = (x * w).sum()
        loss.backward()
        x.add_(1)
        return loss

    w, w2 = rt.ones(3, requires_grad=True), rt.ones(3, requires_grad=True)
    w.grad, w2.grad = rt.zeros(3), rt.zeros(3)
    compiled = planner.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            x, x2 = rt.arange(3.0), rt.arange(3.0)
            _same(_outcome(step, w, x), _outcome(compiled, w2, x2))
            np.testing.assert_array_equal(x2.numpy(), x.numpy())
            np.testing.assert_array_equal(w2.grad.numpy(), w.grad.numpy())
    assert compiled.captures == 1
