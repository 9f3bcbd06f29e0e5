"""Commits of several outputs: a fused update of a parameter and its optimizer state (SGD's
momentum buffer) runs at write-back, storing each output into its own state's storage."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
from planner.executable import Commit, CommitOutput, materialize
from planner.steps import CommitStep


def _model(momentum: float, seed: int = 0) -> tuple[Any, Any, Any]:
    rt.manual_seed(seed)
    # the first weight and its momentum buffer, 2 x 128 KiB: past MIN_COMMIT_BYTES
    model = rt.nn.Sequential(rt.nn.Linear(128, 256), rt.nn.Tanh(), rt.nn.Linear(256, 5))
    opt = rt.optim.SGD(model.parameters(), lr=0.1, momentum=momentum, weight_decay=1e-3)
    x = rt.randn(16, 128)
    y = rt.randint(0, 5, (16,))

    def step() -> Any:
        opt.zero_grad()
        loss = rt.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return model, opt, step


def test_a_parameter_and_its_momentum_commit_together_in_their_own_storage() -> None:
    model, opt, fn = _model(0.9)
    eager_model, _, eager = _model(0.9)
    step = planner.compile(fn, backend="llvm")
    for _ in range(2):
        step()
        eager()
    commits = [s for s in step.plan.steps if isinstance(s, CommitStep)]
    assert any(len(s.outs) == 2 for s in commits), step.plan.listing()
    assert all(len(set(s.targets)) == len(s.outs) for s in commits)
    states = [(p._data, opt.state[p]["momentum_buffer"]._data) for p in model.parameters()]
    versions = [p._vc.v for p in model.parameters()]
    for _ in range(3):
        step()
        eager()
    for (data, buf), p, v in zip(states, model.parameters(), versions, strict=True):
        assert p._data is data and opt.state[p]["momentum_buffer"]._data is buf
        assert p._vc.v == v + 3
    for p, q in zip(model.parameters(), eager_model.parameters(), strict=True):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
    shown = step.plan.listing()
    assert "in_place_at_commit='%" in shown and ", %" in shown  # two targets on one step


def test_a_plan_run_alone_leaves_the_state_as_it_was() -> None:
    """Plan.run returns the commit outputs; nothing is stored until they are applied, and
    materialize gives each new value from copies."""
    model, opt, fn = _model(0.9, seed=1)
    step = planner.compile(fn, backend="llvm")
    step()
    step()
    binding = next(iter(step._cache.values())).bindings[0]
    compile_module = __import__("sys").modules["planner.compile"]
    arrays: list[Any] = []
    state = {slot: compile_module._read_slot(binding.slots[slot], ())
             for slot, _ in binding.plan.reads}
    before = [p.detach().numpy().copy() for p in model.parameters()]
    _, writes = binding.plan.run(arrays, state, binding.generators)
    outputs = [v for _, v in writes if isinstance(v, CommitOutput)]
    assert len(outputs) >= 2
    values = [materialize(v) for v in outputs]
    for p, b in zip(model.parameters(), before, strict=True):
        np.testing.assert_array_equal(p.detach().numpy(), b)  # untouched
    assert all(isinstance(v, np.ndarray) for v in values)


def _launch(arrays: list[np.ndarray]) -> None:
    """A kernel's launcher: inputs a, b and scalar s; outputs into a and b (read first)."""
    a, b, s, out_a, out_b = arrays
    new_a, new_b = a + s * b, b * 0.5
    out_a[...] = new_a
    out_b[...] = new_b


def test_commit_stores_once_every_output_has_its_destination() -> None:
    a, b = np.arange(4.0), np.ones(4)
    s = np.array(2.0)
    commit = Commit(_launch, [a, b, s], (0, 1))
    first, second = commit.outputs()
    assert materialize(first).tolist() == [2.0, 3.0, 4.0, 5.0]  # from copies
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0]
    first.apply(a)
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0]  # waits for the second destination
    second.apply(b)
    assert a.tolist() == [2.0, 3.0, 4.0, 5.0] and b.tolist() == [0.5] * 4


@pytest.mark.parametrize("case", ["moved", "strided", "overlapping"])
def test_commit_into_storage_other_than_what_was_read(case: str) -> None:
    a, b = np.arange(4.0), np.ones(4)
    s = np.array(2.0)
    want_a, want_b = a + s * b, b * 0.5
    commit = Commit(_launch, [a.copy(), b.copy(), s], (0, 1))
    first, second = commit.outputs()
    if case == "moved":  # the state's array was replaced since the plan read it
        da, db = a.copy(), b.copy()
    elif case == "strided":
        da, db = np.zeros(8)[::2], np.zeros(8)[1::2]
    else:  # two states sharing memory: each gets its own value, one after the other
        base = np.zeros(6)
        da, db = base[:4], base[2:]
    first.apply(da)
    second.apply(db)
    if case == "overlapping":
        np.testing.assert_array_equal(db, want_b)  # the last stored wins where they overlap
        np.testing.assert_array_equal(da[:2], want_a[:2])
    else:
        np.testing.assert_array_equal(da, want_a)
        np.testing.assert_array_equal(db, want_b)


def test_small_updates_of_several_outputs_stay_fresh_outputs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Under MIN_COMMIT_BYTES, where plans make no native runs (which would run the commit
    in place inside the run), the kernel writes fresh outputs the write-back copies: cheaper
    than a deferred kernel for a few KiB."""
    from planner import native

    monkeypatch.setattr(native, "ENABLED", False)
    rt.manual_seed(2)
    model = rt.nn.Linear(16, 8)
    opt = rt.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = rt.randn(4, 16)

    @planner.compile(backend="llvm")
    def step() -> Any:
        opt.zero_grad()
        (model(x) ** 2).mean().backward()
        opt.step()

    for _ in range(3):
        step()
    commits = [s for s in step.plan.steps if isinstance(s, CommitStep)]
    assert all(len(s.outs) == 1 for s in commits), step.plan.listing()
