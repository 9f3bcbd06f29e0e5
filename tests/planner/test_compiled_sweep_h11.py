"""Compiled steps with custom autograd Functions (h11 sweep): equal to eager mode and PyTorch's
values; a Function writing a view of another tensor in place (ctx.mark_dirty) runs eagerly."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

import planner
import runtime as rt


class Double(rt.autograd.Function):
    """Doubles its input in place (ctx.mark_dirty); backward: the gradient doubled."""

    @staticmethod
    def forward(ctx: Any, a: Any) -> Any:
        a.mul_(2)
        ctx.mark_dirty(a)
        return a

    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        return g * 2


def _run(view: bool, compiled: bool) -> tuple[list[float], list[str]]:
    w = rt.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    opt = rt.optim.SGD([w], lr=0.5)

    def step() -> Any:
        opt.zero_grad()
        h = w * 1
        if view:
            Double.apply(h[1:])  # h's tail doubled: its gradient goes through Double's backward
        else:
            h = Double.apply(h)
        loss = h.sum()
        loss.backward()
        opt.step()
        return loss

    run = planner.compile(step) if compiled else step
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        losses = [float(run()) for _ in range(3)]
    return losses + w.detach().numpy().tolist(), [str(m.message) for m in caught]


def test_compiled_dirty_view_input_runs_eagerly_with_pytorchs_gradient() -> None:
    # PyTorch (CopySlices): the gradient is 1 on w[0], 2 on the doubled tail
    scale = np.array([1.0, 2.0, 2.0, 2.0])
    for compiled in (False, True):
        got, msgs = _run(view=True, compiled=compiled)
        w = np.array([1.0, 2.0, 3.0, 4.0])
        want = []
        for _ in range(3):
            want.append(float((w * scale).sum()))
            w = w - 0.5 * scale
        np.testing.assert_allclose(got, want + w.tolist(), rtol=1e-6)
        if compiled:
            assert any("runs eagerly: a custom autograd.Function marking dirty" in m
                       for m in msgs), msgs
    # the whole input doubled (not a view): d(sum)/dw = 2 everywhere, compiled with no fallback
    for compiled in (False, True):
        got, msgs = _run(view=False, compiled=compiled)
        w = np.array([1.0, 2.0, 3.0, 4.0])
        want = []
        for _ in range(3):
            want.append(2 * w.sum())
            w = w - 0.5 * 2
        np.testing.assert_allclose(got, want + w.tolist(), rtol=1e-6)
        assert not msgs, msgs
