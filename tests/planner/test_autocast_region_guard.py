"""A step called inside an autocast region its caller entered (``with rt.autocast(...):
loss = step(x)``) is captured for that region: autocast's state is part of a plan's key, as
grad mode and the default dtype are (a plan captured outside a region replayed float32
products inside one, silently, and one captured inside replayed bfloat16 ones outside), and
the recompile log names it. A capture inside a region keeps its shape-only casts out of the
region's weight cache (an eager op after it in the same region read one and failed)."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt


def _model() -> tuple[Any, Any]:
    rt.manual_seed(0)
    w = rt.randn(3, 3, requires_grad=True)
    return w, lambda x: (x @ w).sum()


def _run(fn: Any, regions: list[bool]) -> list[tuple[Any, float]]:
    out = []
    for on in regions:
        with rt.autocast("cpu", dtype=rt.bfloat16, enabled=on):
            r = fn(rt.ones(2, 3))
        out.append((r.dtype, float(r)))
    return out


@pytest.mark.parametrize("regions", [[False, True, False, True], [True, False, True]])
def test_a_call_inside_and_outside_an_autocast_region_matches_eager(
        regions: list[bool], caplog: pytest.LogCaptureFixture) -> None:
    _, eager = _model()
    want = _run(eager, regions)
    _, fn = _model()
    step = planner.compile(fn)
    with caplog.at_level(logging.INFO, logger="planner"):
        got = _run(step, regions)
    assert got == want
    assert {dtype for dtype, _ in got} == {rt.float32, rt.bfloat16}
    assert step.captures == 2
    assert "autocast is on for cpu (bfloat16) (was off)" in caplog.text \
        or "autocast is off (was on for cpu (bfloat16))" in caplog.text


def test_an_eager_op_after_a_capture_in_the_same_region_runs() -> None:
    w, fn = _model()
    step = planner.compile(fn)
    with rt.autocast("cpu", dtype=rt.bfloat16):
        first = step(rt.ones(2, 3))
        eager = fn(rt.ones(2, 3))  # the region's weight cache holds w's real bfloat16 copy
        again = step(rt.ones(2, 3))
    assert first.dtype is eager.dtype is again.dtype is rt.bfloat16
    np.testing.assert_array_equal(first.detach().float().numpy(), eager.detach().float().numpy())
    np.testing.assert_array_equal(again.detach().float().numpy(), eager.detach().float().numpy())
    assert step.captures == 1
