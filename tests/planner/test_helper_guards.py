"""Values the user's helper functions read through their globals and closure cells (a loss
function's temperature, a module's forward reading a module-level constant) are guarded as
the step's own are: changing one captures again, a helper that changes one makes the step run
eagerly (or, a counter it increments, is incremented after each replay), and nothing else
recompiles."""

from __future__ import annotations

import logging
import warnings
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt

nn = rt.nn
TEMPERATURE = 2.0
OFFSET = 1.0
BIAS = rt.tensor([0.5, -0.5, 0.25])
CALLS = 0
LOSSES: list[Any] = []


def scaled_loss(out: Any) -> Any:
    return (out / TEMPERATURE).pow(2).sum()


class Shifted(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x: Any) -> Any:
        return self.lin(x) + OFFSET + BIAS


def _step(model: Any, loss_fn: Any = scaled_loss) -> Any:
    def step(x: Any) -> Any:
        model.zero_grad()
        loss = loss_fn(model(x))
        loss.backward()
        return loss.detach()
    return step


def _model() -> Any:
    rt.manual_seed(0)
    return Shifted()


@pytest.fixture(autouse=True)
def _globals() -> Any:
    global TEMPERATURE, OFFSET, BIAS, CALLS
    saved = TEMPERATURE, OFFSET, BIAS, CALLS
    LOSSES.clear()
    yield
    TEMPERATURE, OFFSET, BIAS, CALLS = saved


def _both(change: Any, calls: int = 3) -> tuple[list[float], list[float], Any]:
    """The step's losses eager and compiled, ``change`` made between calls."""
    global TEMPERATURE, OFFSET, BIAS
    x = rt.ones(2, 3)
    results = []
    compiled = None
    start = TEMPERATURE, OFFSET, BIAS
    for compile_it in (False, True):
        TEMPERATURE, OFFSET, BIAS = start
        model = _model()
        step = _step(model)
        if compile_it:
            step = compiled = planner.compile(step)
        losses = []
        for i in range(calls):
            change(i)
            losses.append(float(step(x)))
        results.append(losses)
    return results[0], results[1], compiled


def test_a_helpers_global_number_is_guarded(caplog: pytest.LogCaptureFixture) -> None:
    def change(i: int) -> None:
        global TEMPERATURE
        TEMPERATURE = 2.0 + i

    with caplog.at_level(logging.INFO, logger="planner"):
        want, got, step = _both(change)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert len(set(want)) == 3
    assert "the Python value TEMPERATURE is 3.0 (it was 2.0)" in caplog.text


def test_a_forwards_global_number_and_tensor_are_guarded() -> None:
    def change(i: int) -> None:
        global OFFSET, BIAS
        if i == 1:
            OFFSET = 4.0
        if i == 2:
            BIAS = rt.tensor([1.0, 2.0, 3.0])

    want, got, step = _both(change)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert len(set(want)) == 3


def test_unchanged_helpers_capture_once() -> None:
    want, got, step = _both(lambda i: None, calls=4)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert step.captures == 1


def test_a_helpers_closure_cell_is_guarded() -> None:
    def make() -> tuple[Any, Any]:
        power = 2.0

        def loss(out: Any) -> Any:
            return out.pow(power).sum()

        def set_power(value: float) -> None:
            nonlocal power
            power = value
        return loss, set_power

    x = rt.ones(2, 3)
    got, want = [], []
    for compile_it in (False, True):
        loss, set_power = make()
        step = _step(_model(), loss)
        if compile_it:
            step = planner.compile(step)
        out = got if compile_it else want
        for power in (2.0, 2.0, 3.0):
            set_power(power)
            out.append(float(step(x)))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert want[1] != want[2]


def _counting_loss(out: Any) -> Any:
    global CALLS
    CALLS += 1
    return out.sum()


def test_a_counter_a_helper_increments_counts_every_call() -> None:
    x = rt.ones(2, 3)
    step = planner.compile(_step(_model(), _counting_loss))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no fallback
        for _ in range(4):
            step(x)
    assert CALLS == 4
    assert step.captures == 1


def _logging_loss(out: Any) -> Any:
    loss = out.sum()
    LOSSES.append(loss)
    return loss


def test_a_helper_keeping_a_tensor_runs_eagerly() -> None:
    """It kept a shape-only tensor of the capture in the list, for good."""
    x = rt.ones(2, 3)
    step = planner.compile(_step(_model(), _logging_loss))
    with pytest.warns(RuntimeWarning, match="runs eagerly"):
        step(x)
    step(x)
    assert len(LOSSES) == 2
    assert [float(t) for t in LOSSES] == [float(LOSSES[0])] * 2  # real values


SHIFT = 0.5


def _shifted_tanh(x: Any) -> Any:
    return rt.tanh(x) + SHIFT


class WithActivation(nn.Module):
    def __init__(self, act: Any) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.act = act  # a function kept as an attribute, called through it

    def forward(self, x: Any) -> Any:
        return self.act(self.lin(x))


def test_a_function_a_module_keeps_as_an_attribute_is_walked() -> None:
    global SHIFT
    x = rt.ones(2, 3)
    rt.manual_seed(0)
    step = planner.compile(_step(WithActivation(_shifted_tanh), lambda out: out.sum()))
    got = []
    try:
        for shift in (0.5, 0.5, 2.0):
            SHIFT = shift
            got.append(float(step(x)))
    finally:
        SHIFT = 0.5
    assert got[2] - got[1] == pytest.approx(6 * 1.5, rel=1e-5)  # 6 elements moved by 1.5
    assert step.captures == 2
