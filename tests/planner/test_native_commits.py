"""A replay's native run stores parameter updates into the parameters' own arrays as it goes
(planner.native: a plan's commits inside the run, ``Plan.run(in_place=True)``), at any size:
no fresh output, no copy at write-back. ``Plan.run`` alone still changes nothing it is given."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
from planner import native
from planner.steps import CommitStep

pytestmark = pytest.mark.skipif(not native.ENABLED or not __import__(
    "codegen.pyentry").pyentry.available(), reason="no native runs in this interpreter")


def _mlp(opt_name: str, seed: int = 0) -> tuple[Any, Any, Any]:
    rt.manual_seed(seed)
    model = rt.nn.Sequential(rt.nn.Linear(12, 16), rt.nn.Tanh(), rt.nn.Linear(16, 3))
    params = list(model.parameters())
    opt = {"sgd": lambda: rt.optim.SGD(params, lr=0.1),
           "sgd_momentum": lambda: rt.optim.SGD(params, lr=0.1, momentum=0.9, nesterov=True),
           "adam": lambda: rt.optim.Adam(params, lr=0.01),
           "adamw": lambda: rt.optim.AdamW(params, lr=0.01, weight_decay=0.1)}[opt_name]()
    x = rt.randn(8, 12)
    y = rt.randint(0, 3, (8,))

    def step() -> Any:
        opt.zero_grad()
        loss = rt.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return model, opt, step


def _stored_in_run(step: Any) -> list[int]:
    """The commit outputs the in-place program binds to a state's array (no fresh one)."""
    plan = step.plan
    source = plan.executable.program(in_place=True).source
    outs = [o for s in plan.steps if isinstance(s, CommitStep) for o in s.outs]
    return [o for o in outs if re.search(rf"^\s*b{o} = (_n|b)\d+$", source, re.M)]


@pytest.mark.parametrize("opt_name", ["sgd", "sgd_momentum", "adam", "adamw"])
def test_updates_stored_by_the_run_match_eager(opt_name: str) -> None:
    model, opt, fn = _mlp(opt_name)
    eager_model, _, eager = _mlp(opt_name)
    step = planner.compile(fn, backend="llvm")
    for _ in range(2):
        np.testing.assert_allclose(step().item(), eager().item(), rtol=1e-5)
    commits = [s for s in step.plan.steps if isinstance(s, CommitStep)]
    assert commits, step.plan.listing()  # small updates commit where runs take them
    assert sorted(_stored_in_run(step)) == sorted(o for s in commits for o in s.outs)
    params = list(model.parameters())
    arrays = [p._data for p in params]
    versions = [p._vc.v for p in params]
    for _ in range(3):
        np.testing.assert_allclose(step().item(), eager().item(), rtol=1e-5)
    for p, a, v in zip(params, arrays, versions, strict=True):
        assert p._data is a  # updated in its own storage
        assert p._vc.v == v + 3  # once a call, as the eager optimizer's in-place update
    for p, q in zip(params, eager_model.parameters(), strict=True):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_plan_run_alone_changes_nothing() -> None:
    """Without ``in_place`` the native program leaves its commits to the write-back: two runs
    on the same state give the same values, and the state is as it was."""
    model, _, fn = _mlp("sgd_momentum", seed=1)
    step = planner.compile(fn, backend="llvm")
    for _ in range(3):
        step()
    binding = next(iter(step._cache.values())).bindings[0]
    compile_module = __import__("sys").modules["planner.compile"]
    state = {slot: compile_module._read_slot(binding.slots[slot], ())
             for slot, _ in binding.plan.reads}
    before = [p.detach().numpy().copy() for p in model.parameters()]
    first = binding.plan.run([], dict(state), binding.generators)[0][1].copy()
    second = binding.plan.run([], dict(state), binding.generators)[0][1]
    np.testing.assert_array_equal(first, second)
    for p, b in zip(model.parameters(), before, strict=True):
        np.testing.assert_array_equal(p.detach().numpy(), b)


def test_a_parameter_not_c_contiguous_is_updated_through_a_copy() -> None:
    """A parameter whose array is Fortran-ordered: the run updates a C-ordered copy, which
    the write-back stores into the parameter's own array."""
    model, _, fn = _mlp("sgd_momentum", seed=2)
    eager_model, _, eager = _mlp("sgd_momentum", seed=2)
    weight = model[0].weight
    with rt.no_grad():
        weight._data = np.asfortranarray(weight._data)
    fortran = weight._data
    step = planner.compile(fn, backend="llvm")
    for _ in range(4):
        np.testing.assert_allclose(step().item(), eager().item(), rtol=1e-5)
    assert weight._data is fortran and not fortran.flags.c_contiguous
    np.testing.assert_allclose(weight.detach().numpy(), eager_model[0].weight.detach().numpy(),
                               rtol=1e-5, atol=1e-6)

