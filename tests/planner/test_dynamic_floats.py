"""A Python float argument that changes between calls (an lr, a loss weight, a temperature
passed per call) becomes an input of the plan at its second value, as torch.compile's
automatic dynamic makes it: two captures in all, not one per value (the recompile_limit then
made every later call eager). It stands for the float it is: promoted as a Python float, a
number computed from it and returned is that Python number at each call, and where the step
reads its value in Python (``if t > 0``, ``float(t)``) the step is captured with the value as a
constant, as before."""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
from runtime import nn

F = nn.functional
VALUES = [0.5, 1.25, -0.75, 2.0, 0.1, 1e-3, 3.5]


def _model() -> tuple[Any, Any]:
    rt.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 2))
    return model, rt.optim.AdamW(model.parameters(), lr=1e-2)


def _data() -> tuple[Any, Any]:
    rng = np.random.default_rng(0)
    return (rt.from_numpy(rng.standard_normal((8, 4)).astype(np.float32)),
            rt.from_numpy(rng.standard_normal((8, 2)).astype(np.float32)))


def _weighted(model: Any, opt: Any) -> Callable[..., Any]:
    def step(x: Any, y: Any, w: float) -> Any:
        opt.zero_grad()
        out = model(x)
        loss = F.mse_loss(out, y) * w + (out ** 2).mean() * (1 - w) / 2
        loss.backward()
        opt.step()
        return loss.detach()
    return step


def _tempered(model: Any, opt: Any) -> Callable[..., Any]:
    def step(x: Any, y: Any, t: float) -> Any:
        opt.zero_grad()
        logits = model(x) / t
        loss = F.cross_entropy(logits, y.argmax(1)) + logits.clamp(min=-t, max=t).abs().mean()
        loss.backward()
        opt.step()
        return loss.detach()
    return step


def _rate(model: Any, opt: Any) -> Callable[..., Any]:
    def step(x: Any, y: Any, lr: float) -> Any:
        for g in opt.param_groups:
            g["lr"] = abs(lr) / 10 if False else lr / 10  # noqa: SIM210 - arithmetic in Python
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()
    return step


def _assigned_rate(model: Any, opt: Any) -> Callable[..., Any]:
    def step(x: Any, y: Any, lr: float) -> Any:
        for g in opt.param_groups:
            g["lr"] = lr
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()
    return step


def _run(make: Callable[..., Any], compiled: bool, values: list[float]) -> tuple[Any, ...]:
    model, opt = _model()
    step = make(model, opt)
    if compiled:
        step = planner.compile(step)
    x, y = _data()
    losses = [step(x, y, abs(v) if make is _assigned_rate else v).item() for v in values]
    return losses, [p.detach().numpy().copy() for p in model.parameters()], step


@pytest.mark.parametrize("make", [_weighted, _tempered, _assigned_rate])
def test_a_changing_float_is_an_input_after_its_second_value(make: Callable[..., Any]) -> None:
    values = [v for v in VALUES if v > 0] if make is _tempered else VALUES
    want = _run(make, False, values)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no fallback, no recompile_limit
        got = _run(make, True, values)
    np.testing.assert_allclose(got[0], want[0], rtol=2e-5, atol=1e-6)
    # AdamW moves each weight by about lr a step (up to 3.5 here): its rounding, compiled or
    # eager, is a part of lr
    atol = 1e-4 if make is _assigned_rate else 1e-6
    for g, w in zip(got[1], want[1], strict=True):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=atol)
    assert got[2].captures == 2  # the first value's constant plan, then the input's


def test_a_float_the_step_computes_with_in_python_stays_a_constant(
        caplog: pytest.LogCaptureFixture) -> None:
    """``lr / 10`` assigned to the group is a value of the step's Python: the float is read
    as a value, so each value is captured as a constant (as before), and trains as eager."""
    caplog.set_level(logging.INFO, logger="planner")
    values = VALUES[:4]
    want = _run(_rate, False, values)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # group settings computed: eager
        got = _run(_rate, True, values)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)


@pytest.mark.parametrize("use", ["float", "math"])
def test_a_float_read_as_a_value_is_captured_as_a_constant(
        use: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="planner")
    w = rt.ones(3, requires_grad=True)

    def step(x: Any, s: float) -> Any:
        if use == "float":
            scale = x * float(s)
        else:
            scale = x * math.exp(s)
        loss = (scale * w).sum()
        grad, = rt.autograd.grad(loss, [w])
        return grad

    compiled = planner.compile(step)
    x = rt.arange(3.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for s in (0.5, 1.5, 2.5, 0.5):
            got, want = compiled(x, s), step(x, s)
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    assert any("as constants" in r.getMessage() for r in caplog.records)
    assert compiled.captures == 3  # a constant per distinct value (the input's try broke)


def test_a_number_computed_from_a_float_and_returned_is_read_at_each_call() -> None:
    """``return grad, s * 2``: the Python float at each call, from the plan's input (it
    used to be captured as a constant per value)."""
    w = rt.ones(3, requires_grad=True)

    def step(x: Any, s: float) -> Any:
        grad, = rt.autograd.grad((x * s * w).sum(), [w])
        return grad, s * 2, s / 3 - 1

    compiled = planner.compile(step)
    x = rt.arange(3.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for s in (0.5, 1.5, 2.5, 0.1, -7.25):
            got, want = compiled(x, s), step(x, s)
            assert got[1:] == want[1:] and [type(v) for v in got[1:]] == [float, float]
            np.testing.assert_allclose(got[0].numpy(), want[0].numpy(), rtol=1e-6)
    assert compiled.captures == 2


def test_a_float_promotes_as_a_python_float() -> None:
    """An integer tensor times the float argument is float32 (the default dtype), as with a
    Python float, not float64 (the input's own dtype); a float64 tensor stays float64."""
    def step(i: Any, d: Any, s: float) -> Any:
        return i * s, d * s, (i + 1) / s, s * 2 + i

    compiled = planner.compile(step)
    i, d = rt.arange(4), rt.arange(4, dtype=rt.float64) / 3
    for s in (0.3, 1.7, 2.9):
        got, want = compiled(i, d, s), step(i, d, s)
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype
            np.testing.assert_array_equal(g.numpy(), w.numpy())
    assert compiled.captures == 2


def test_nan_and_infinite_values_replay() -> None:
    def step(x: Any, s: float) -> Any:
        return x * s + 1.0

    compiled = planner.compile(step)
    x = rt.arange(3.0)
    for s in (1.0, 2.0, float("nan"), float("inf"), -0.0):
        np.testing.assert_array_equal(compiled(x, s).numpy(), step(x, s).numpy())
    assert compiled.captures == 2


@pytest.mark.parametrize(("dynamic", "captures"), [(None, 2), (True, 1), (False, 4)])
def test_the_dynamic_option(dynamic: bool | None, captures: int) -> None:
    """torch.compile's ``dynamic`` for floats: True reads them as inputs from the first call,
    False captures a constant per value."""
    def step(x: Any, s: float) -> Any:
        return (x * s).exp().sum()

    compiled = planner.compile(step, dynamic=dynamic)
    x = rt.arange(3.0)
    for s in (0.5, 1.5, 2.5, -1.0):
        np.testing.assert_allclose(compiled(x, s).item(), step(x, s).item(), rtol=1e-6)
    assert compiled.captures == captures


def test_the_dynamic_option_is_checked() -> None:
    with pytest.raises(TypeError, match="dynamic must be None, True or False"):
        planner.compile(lambda x: x, dynamic="yes")


@pytest.mark.parametrize("kind", ["add_", "sub_", "data", "add", "sub"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_an_alpha_from_a_float_argument_is_an_input(kind: str, dtype: str) -> None:
    """A hand-written update ``p.add_(p.grad, alpha=-lr)`` with lr passed per call: the
    alpha is read at each replay, input + alpha * other rounded once as PyTorch's kernel
    (the plan's addcmul by it): eager's bits, two captures (it captured per value, until the
    recompile limit made the calls eager)."""
    def run(compiled: bool) -> tuple[np.ndarray, Any]:
        rt.manual_seed(0)
        dt = getattr(rt, dtype)
        p = rt.randn(64, dtype=dt, requires_grad=True)

        def step(x: Any, lr: float) -> Any:
            loss = (p * x).pow(2).sum()
            loss.backward()
            with rt.no_grad():
                if kind == "add_":
                    p.add_(p.grad, alpha=-lr)
                elif kind == "sub_":
                    p.sub_(p.grad, alpha=lr)
                elif kind == "data":
                    p.data.add_(p.grad, alpha=-lr)
                elif kind == "add":
                    p.copy_(rt.add(p, p.grad, alpha=-lr))
                else:
                    p.copy_(rt.sub(p, p.grad, alpha=lr))
            p.grad = None
            return loss.detach()

        fn = planner.compile(step) if compiled else step
        x = rt.randn(64, dtype=dt)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            for lr in (0.1, 0.05, 0.02, 0.3, 0.001, 0.7):
                fn(x, lr)
        return p.detach().float().numpy(), fn

    (got, compiled), (want, _) = run(True), run(False)
    np.testing.assert_array_equal(got, want)
    assert compiled.captures == 2
