"""A compiled step that branches in Python on its number arguments (planner.number_guards):
each branch is captured once and guarded on the condition's truth, as torch.compile guards a
symbolic int, where every new value captured again (and the recompile limit then ran the step
eagerly)."""

from __future__ import annotations

import copy
import logging
import warnings
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
from planner import number_guards



def test_a_branch_on_an_int_argument_captures_each_branch_once(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="planner")
    w = rt.ones(6, requires_grad=True)

    def step(x: Any, n: int) -> Any:
        loss = (x * w).sum() * (2 if n % 2 else 3)
        (grad,) = rt.autograd.grad(loss, [w])
        return grad

    compiled = planner.compile(step)
    x = rt.arange(6.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for n in (2, 3, 5, 2, 7, 4, 9, 10, 11, 12, 13):
            np.testing.assert_array_equal(compiled(x, n).numpy(), step(x, n).numpy())
    # the first value as a constant; then n an input, one plan per truth of n % 2
    assert compiled.captures == 3
    assert not any("as constants" in r.getMessage() for r in caplog.records)
    assert any("condition (argument 1 % 2) is now" in r.getMessage() for r in caplog.records)


def test_gradient_accumulation_on_a_step_counter_replays() -> None:
    """``if (it + 1) % k == 0: opt.step()`` (micro-batches): parameters, gradients and the
    loss as eager mode's after every call, in a bounded number of captures."""
    rt.manual_seed(0)
    model = rt.nn.Linear(4, 3)
    opt = rt.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    twin = copy.deepcopy(model)
    twin_opt = rt.optim.SGD(twin.parameters(), lr=0.1, momentum=0.9)
    batches = [rt.randn(8, 4) for _ in range(5)]

    def make(m: Any, o: Any) -> Any:
        def step(x: Any, it: int) -> Any:
            loss = m(x).square().mean() / 3
            loss.backward()
            if (it + 1) % 3 == 0:
                o.step()
                o.zero_grad()
            return loss.detach()
        return step

    compiled = planner.compile(make(model, opt))
    eager = make(twin, twin_opt)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for it in range(30):
            x = batches[it % len(batches)]
            np.testing.assert_allclose(compiled(x, it).numpy(), eager(x, it).numpy(),
                                       rtol=1e-6)
            for p, q in zip(model.parameters(), twin.parameters()):
                np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-6)
                assert (p.grad is None) == (q.grad is None)
                if p.grad is not None:
                    np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6)
    assert compiled.captures <= 5  # not one per call: the recompile limit is 8


def test_a_warmup_factor_of_the_step_number_stays_an_input() -> None:
    """``min(1.0, (it + 1) / warmup)``: Python's min compares the stand-in (a condition)
    and returns it or the constant; both plans replay for every later value."""
    w = rt.ones(3, requires_grad=True)

    def step(x: Any, it: int) -> Any:
        scale = 1e-3 * min(1.0, (it + 1) / 10)
        loss = (w * x).sum() * scale
        loss.backward()
        g = w.grad.clone()
        w.grad = None
        return loss.detach(), g

    compiled = planner.compile(step)
    x = rt.tensor([1.0, 2.0, 3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for it in range(25):
            got, want = compiled(x, it), step(x, it)
            for a, b in zip(got, want):
                np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-7)
    assert compiled.captures == 3


@pytest.mark.parametrize("values", [(0.3, 0.7, 0.9, 0.1, 0.5, 0.6), (1.5, -2.0, 3.25, -0.0)])
def test_a_branch_on_a_float_argument(values: tuple[float, ...]) -> None:
    w = rt.tensor([1.0, -2.0], requires_grad=True)

    def step(x: Any, temp: float) -> Any:
        y = (w * x / temp) if temp > 0.5 else (w * x).tanh() * temp
        (grad,) = rt.autograd.grad(y.sum(), [w])
        return grad

    compiled = planner.compile(step)
    x = rt.tensor([0.5, 0.25])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for t in values:
            np.testing.assert_allclose(compiled(x, t).numpy(), step(x, t).numpy(), rtol=1e-6)
    assert compiled.captures <= 3


def test_conditions_joined_with_and_or_not() -> None:
    w = rt.ones(2, requires_grad=True)

    def step(x: Any, a: int, b: float) -> Any:
        k = 1.0
        if a > 2 and b < 1:
            k = 2.0
        elif not a or (a & 1) == 1:
            k = 3.0
        if a in (4, 8):
            k += 0.5
        (grad,) = rt.autograd.grad((w * x * k).sum(), [w])
        return grad

    compiled = planner.compile(step)
    x = rt.tensor([1.0, 2.0])
    calls = [(3, 0.5), (5, 0.25), (1, 0.5), (7, 2.0), (4, 0.5), (8, 0.25), (9, 0.1),
             (3, 0.2), (1, 0.25), (5, 4.0), (4, 0.125), (8, 0.5)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for a, b in calls:
            np.testing.assert_array_equal(compiled(x, a, b).numpy(), step(x, a, b).numpy())
    # (3, 0.5) as constants; then both numbers are inputs, and each path of the conditions
    # is one plan: a > 2 and b < 1 and a not in (4, 8); a <= 2, odd; a > 2, b >= 1, odd;
    # a > 2, b < 1 and a == 4; the same and a == 8 (``in`` compares 4 first)
    assert compiled.captures == 6


def test_a_branch_on_a_tensor_value_still_does_not_replay_a_stale_branch() -> None:
    """A condition on a tensor's value is not a number guard: the step runs eagerly."""
    w = rt.ones(2, requires_grad=True)

    def step(x: Any, n: int) -> Any:
        y = w * x * n
        if y.sum() > 0:
            y = y * 2
        (grad,) = rt.autograd.grad(y.sum(), [w])
        return grad

    compiled = planner.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for x, n in ((rt.tensor([1.0, 1.0]), 1), (rt.tensor([-1.0, -1.0]), 2),
                     (rt.tensor([1.0, 1.0]), 3), (rt.tensor([-1.0, 1.0]), 4)):
            np.testing.assert_array_equal(compiled(x, n).numpy(), step(x, n).numpy())


def test_record_and_check_a_condition() -> None:
    """The guard's truth, its text, and Python's semantics for ints (floor division and
    remainder of negatives) and for true division."""
    seen: list[Any] = []
    w = rt.ones(1, requires_grad=True)

    def step(x: Any, n: int) -> Any:
        scale = 2.0 if (-n // 3) % 4 == 1 and n / 4 < 2.5 else 1.0
        (grad,) = rt.autograd.grad((w * x).sum() * scale, [w])
        return grad

    compiled = planner.compile(step)
    x = rt.ones(1)
    for n in list(range(-12, 13)) + [7, -7, 9, 10, 11]:
        np.testing.assert_array_equal(compiled(x, n).numpy(), step(x, n).numpy())
    for entry in compiled._cache.values():
        for binding in entry.bindings:
            if binding.numbers is not None:
                seen.extend(binding.numbers.guards)
    assert seen
    texts = {g.describe() for g in seen}
    assert texts == {"((((-argument 1) // 3) % 4) == 1)", "((argument 1 / 4) < 2.5)"}
    guard = next(g for g in seen if "% 4" in g.describe())
    for n in range(-20, 20):
        assert guard.holds((None, n)) is (((-n // 3) % 4 == 1) is guard.truth)
    assert isinstance(guard, number_guards.NumberGuard) and guard.value.python is not None



def test_a_branch_that_cannot_be_captured_runs_eagerly_alone() -> None:
    """``if it % 5 == 0: log.append(loss.item())``: the calls taking that branch run eagerly
    (a loss read in the step's Python), the others replay the plan of the other branch, where
    the whole step ran eagerly from the first such call on."""
    rt.manual_seed(0)
    model = rt.nn.Sequential(rt.nn.Linear(4, 8), rt.nn.ReLU(), rt.nn.Linear(8, 3))
    opt = rt.optim.SGD(model.parameters(), lr=0.1)
    twin = copy.deepcopy(model)
    twin_opt = rt.optim.SGD(twin.parameters(), lr=0.1)
    logs: tuple[list[float], list[float]] = ([], [])

    def make(m: Any, o: Any, log: list[float]) -> Any:
        def step(x: Any, y: Any, it: int) -> Any:
            o.zero_grad()
            loss = rt.nn.functional.cross_entropy(m(x), y)
            loss.backward()
            o.step()
            if it % 5 == 0:
                log.append(loss.item())
            return loss.detach()
        return step

    compiled, eager = planner.compile(make(model, opt, logs[0])), make(twin, twin_opt, logs[1])
    x, y = rt.randn(16, 4), rt.randint(0, 3, (16,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the eager branch says why, once
        for it in range(21):
            np.testing.assert_allclose(compiled(x, y, it).numpy(), eager(x, y, it).numpy(),
                                       rtol=1e-5)
    np.testing.assert_allclose(logs[0], logs[1], rtol=1e-5)
    assert len(logs[0]) == 5
    for p, q in zip(model.parameters(), twin.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5)
    assert compiled.captures == 1
    assert planner.explain(compiled, x, y, 23).startswith(
        f"{compiled._name} replays a cached plan")
    assert "falls back to eager: Tensor.item() reads a tensor's value" in planner.explain(
        compiled, x, y, 25)
