"""A compiled optimizer step gives eager mode's bits (which tests/runtime/
test_views_optim_bits.py shows are PyTorch's): add(alpha=), addcmul and lerp round once in a
fused kernel as eagerly (the kernel IR's Fma), a captured hyperparameter is a factor of that
same fma, and addcdiv multiplies before it divides in both modes. Every optimizer and option
combination of tests/optim_cases.py, 20 steps from the same weights with the same gradients, the
parameters compared with ``np.array_equal``; then a whole training step's update against an
eager one fed the compiled step's own gradients."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
from planner.steps import KernelStep, PrimitiveStep
from tests.optim_cases import C, CASES, STEPS, W0, gradient


def _run(name: str, options: dict[str, Any], compiled: bool, schedule: bool = False
         ) -> tuple[list[np.ndarray], Any]:
    params = [rt.tensor(w.copy(), requires_grad=True) for w in W0]
    opt = getattr(rt.optim, name)(params, **options)
    sched = rt.optim.lr_scheduler.LambdaLR(opt, lambda e: 1.0 / (e + 1)) if schedule else None

    def step() -> None:
        opt.step()

    run = planner.compile(step) if compiled else step
    for _ in range(STEPS):
        for p, c in zip(params, C, strict=True):
            p.grad = rt.tensor(gradient(p.detach().numpy(), c))
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # no fallback to eager
            run()
        if sched is not None:
            sched.step()
    return [p.detach().numpy().copy() for p in params], run


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("schedule", [False, True])
def test_a_compiled_update_equals_eagers_bits(case: str, schedule: bool) -> None:
    """``schedule``: a LambdaLR changes lr at every call, read by the same plan."""
    name, options = CASES[case]
    eager, _ = _run(name, options, compiled=False, schedule=schedule)
    got, step = _run(name, options, compiled=True, schedule=schedule)
    assert step.captures == 1
    assert any(isinstance(s, KernelStep) for s in step.plan.steps)  # fused, not interpreted
    for w0, a, b in zip(W0, got, eager, strict=True):
        assert not np.array_equal(w0, b)  # the steps did something
        assert np.array_equal(a, b), (case, np.abs(a - b).max(), np.argwhere(a != b)[:5])


def test_rounded_once_steps_are_kernels_not_numpy_steps() -> None:
    """An SGD update is one fma a parameter (a lone step): a kernel of its own at any size,
    which writes the parameter in place at write-back, never a call out to numpy."""
    _, step = _run("SGD", {"lr": 0.1}, compiled=True)
    fma_ops = {"add_scaled", "sub_scaled", "addcmul", "lerp", "lerp_tensor"}
    assert not [s for s in step.plan.steps if isinstance(s, PrimitiveStep)
                and s.op in fma_ops], step.plan.listing()
    assert any("llvm.fma" in k.source for k in step.plan.kernels)


@pytest.mark.parametrize("opt_name", ["SGD", "Adam", "AdamW"])
def test_a_training_steps_update_equals_eager_fed_its_gradients(opt_name: str) -> None:
    """A whole step (forward, backward, update) compiled: its update, applied eagerly to the
    compiled step's own gradients, gives the compiled step's parameters bit for bit (the
    forward and backward's fused sums round in their own order; the update does not)."""
    rt.manual_seed(0)
    model = rt.nn.Sequential(rt.nn.Linear(12, 32), rt.nn.Tanh(), rt.nn.Linear(32, 4))
    opt = getattr(rt.optim, opt_name)(model.parameters(), lr=0.01)
    x, y = rt.randn(16, 12), rt.randint(0, 4, (16,))

    @planner.compile
    def step() -> Any:
        opt.zero_grad()
        loss = rt.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    shadow = [p.detach().clone().requires_grad_(True) for p in model.parameters()]
    shadow_opt = getattr(rt.optim, opt_name)(shadow, lr=0.01)
    for _ in range(5):
        step()
        for s, p in zip(shadow, model.parameters(), strict=True):
            s.grad = p.grad.detach().clone()
        shadow_opt.step()
        for s, p in zip(shadow, model.parameters(), strict=True):
            assert np.array_equal(s.detach().numpy(), p.detach().numpy())
