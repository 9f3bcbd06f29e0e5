"""The write-back's shortcut for .grads the plan makes new on every call
(``Plan.fresh_writes``): those arrays become the .grads as they are, and no .grad shares
memory with an input, a parameter or another .grad."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import planner
import runtime as rt


@pytest.mark.parametrize("backend", ["interpreter", "llvm"])
def test_fresh_grads_are_their_own_arrays(backend: str) -> None:
    rt.manual_seed(0)
    model = rt.nn.Sequential(rt.nn.Linear(6, 5), rt.nn.Tanh(), rt.nn.Linear(5, 3))
    opt = rt.optim.SGD(model.parameters(), lr=0.1)
    x = rt.randn(4, 6)

    @planner.compile(backend=backend)
    def step(x: rt.Tensor) -> rt.Tensor:
        opt.zero_grad()
        loss = (model(x) ** 2).sum()
        loss.backward()
        opt.step()
        return loss

    eager_model = rt.nn.Sequential(rt.nn.Linear(6, 5), rt.nn.Tanh(), rt.nn.Linear(5, 3))
    eager_model.load_state_dict(model.state_dict())
    eager_opt = rt.optim.SGD(eager_model.parameters(), lr=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            step(x)
            eager_opt.zero_grad()
            (eager_model(x) ** 2).sum().backward()
            eager_opt.step()
    plan = step.plan
    grad_slots = {i for i, s in enumerate(plan.slots) if s.get("kind") == "grad"}
    # the weights' .grads are products; with kernels, the biases' are kernels' outputs too
    fresh = plan.fresh_writes() & grad_slots
    assert fresh == grad_slots if backend == "llvm" else len(fresh) == 2
    params = list(model.parameters())
    arrays = [p.grad.numpy() for p in params] + [p.detach().numpy() for p in params]
    arrays.append(x.numpy())
    for a, b in itertools.combinations(arrays, 2):
        assert not np.shares_memory(a, b)
    for p, q in zip(params, eager_model.parameters(), strict=True):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


def test_a_buffer_written_twice_is_not_fresh() -> None:
    a = rt.ones(3, requires_grad=True)
    b = rt.ones(3, requires_grad=True)

    @planner.compile
    def step(x: rt.Tensor) -> None:
        y = (x * 2).sum()  # the same gradient for a and b: one buffer, two slots
        (y * (a + b).sum()).backward()

    step(rt.ones(3))
    plan = step.plan
    counts: dict[int, int] = {}
    for _, buf in plan.writes:
        counts[buf] = counts.get(buf, 0) + 1
    twice = {slot for slot, buf in plan.writes if counts[buf] > 1}
    assert not twice & plan.fresh_writes()
    assert not np.shares_memory(a.grad.numpy(), b.grad.numpy())


@pytest.mark.parametrize("backend", ["interpreter", "llvm"])
def test_an_arguments_fresh_grad_is_staged_straight(backend: str) -> None:
    """The .grad of a tensor argument (the chain workload's x) made new on every call by a
    kernel is stored as it is, by the written-out replay: a new tensor of its own each call,
    on the argument given in that call, with eager mode's values."""

    def step(x: rt.Tensor) -> rt.Tensor:
        x.grad = None
        loss = (x.sin() * x).sum()
        loss.backward()
        return loss

    compiled = planner.compile(step, backend=backend)
    xs = [rt.randn(16, requires_grad=True) for _ in range(3)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for x in (*xs, *xs):
            before = x.grad
            loss = compiled(x)
            assert x.grad is not before and x.grad is not None
            assert not np.shares_memory(x.grad.numpy(), x.detach().numpy())
            ref = x.detach().clone().requires_grad_(True)
            want = step(ref)
            np.testing.assert_allclose(loss.item(), want.item(), rtol=1e-6)
            np.testing.assert_allclose(x.grad.numpy(), ref.grad.numpy(), rtol=1e-6,
                                       atol=1e-7)
            assert loss.requires_grad and loss.grad_fn.name() == "SumBackward0"
    (entry,) = compiled._cache.values()
    (binding,) = entry.bindings
    if backend == "llvm":  # a kernel's output: fresh (the interpreter's primitives' are not)
        assert binding.direct is not None  # the written-out replay
        assert "_set_grad(args[0]" in binding.direct.source
