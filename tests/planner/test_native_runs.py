"""Runs of kernels and products made one native call (planner.native): the same numbers as the
plain program, the plain lines where a run's tests fail, one call at a time."""

from __future__ import annotations

import re
import threading
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
from codegen import pyentry
from planner import native

pytestmark = pytest.mark.skipif(not pyentry.available(), reason="no builtin entries here")


def _classifier(model: Any, opt: Any, x: Any, y: Any) -> tuple[Any, Any, tuple[Any, ...]]:
    """``model``, its training step (cross-entropy, ``opt``) and the batch (x, y)."""
    def step(x: Any, y: Any) -> Any:
        opt.zero_grad()
        loss = rt.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return model, step, (x, y)


def _mlp(seed: int = 0, momentum: float = 0.0, dropout: float = 0.0
         ) -> tuple[Any, Any, tuple[Any, ...]]:
    rt.manual_seed(seed)
    model = rt.nn.Sequential(rt.nn.Linear(24, 32), rt.nn.ReLU(), rt.nn.Linear(32, 32),
                             rt.nn.Tanh(), rt.nn.Dropout(dropout), rt.nn.Linear(32, 5))
    opt = rt.optim.SGD(model.parameters(), lr=0.05, momentum=momentum)
    rng = np.random.default_rng(seed)
    x = rt.from_numpy(rng.standard_normal((16, 24)).astype(np.float32))
    y = rt.from_numpy(rng.integers(0, 5, 16))
    return _classifier(model, opt, x, y)


def _params(model: Any) -> list[np.ndarray]:
    return [p.detach().numpy().copy() for p in model.parameters()]


def _compiled(monkeypatch: pytest.MonkeyPatch, enabled: bool, momentum: float = 0.0,
              dropout: float = 0.0) -> tuple[Any, Any, tuple[Any, ...]]:
    monkeypatch.setattr(native, "ENABLED", enabled)
    model, fn, args = _mlp(momentum=momentum, dropout=dropout)
    step = planner.compile(fn, backend="llvm")
    for _ in range(2):  # a first call that makes momentum buffers runs eagerly
        step(*args)
    step.plan.executable.program()  # built now, under this setting
    return model, step, args


@pytest.mark.parametrize(("momentum", "dropout"), [(0.0, 0.0), (0.9, 0.0), (0.0, 0.3)])
def test_native_runs_compute_the_plain_programs_bits(monkeypatch: pytest.MonkeyPatch,
                                                     momentum: float, dropout: float) -> None:
    model_a, plain, args_a = _compiled(monkeypatch, False, momentum, dropout)
    model_b, fast, args_b = _compiled(monkeypatch, True, momentum, dropout)
    assert not hasattr(plain.plan.executable.program(), "native")
    program = fast.plan.executable.program()
    assert program.native.source.count("_drive") >= 1, program.source
    for k in range(5):
        rt.manual_seed(100 + k)  # one global generator: each draws the same numbers
        la = plain(*args_a)
        rt.manual_seed(100 + k)
        lb = fast(*args_b)
        np.testing.assert_array_equal(la.detach().numpy(), lb.detach().numpy())
    for a, b in zip(_params(model_a), _params(model_b), strict=True):
        np.testing.assert_array_equal(a, b)
    grads = [p.grad.numpy() for p in model_b.parameters()]
    assert all(g.flags.owndata or g.base is not None for g in grads)


def test_compiled_with_native_runs_equals_eager() -> None:
    model_e, fn_e, args_e = _mlp(seed=3)
    model_c, fn_c, args_c = _mlp(seed=3)
    step = planner.compile(fn_c, backend="llvm")
    for _ in range(4):
        le, lc = fn_e(*args_e), step(*args_c)
        np.testing.assert_allclose(lc.detach().numpy(), le.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert hasattr(step.plan.executable.program(), "native")
    for a, b in zip(_params(model_c), _params(model_e), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_one_run_holds_the_target_check_and_the_update(monkeypatch: pytest.MonkeyPatch
                                                      ) -> None:
    """cross_entropy's class-index check is a record of the run (kind CHECK) and the lr's
    cast is computed before it (fusion.hoist_scalars): forward, backward and update are one
    native call."""
    _, step, _ = _compiled(monkeypatch, True)
    source = step.plan.executable.program().native.source
    assert len(re.findall(r"_drive\d+\(", source)) == 1, source
    assert "check_bounds" not in source, source
    cast = [i for i, s in enumerate(step.plan.steps) if getattr(s, "name", "") == "cast"]
    kernels = [i for i, s in enumerate(step.plan.steps) if type(s).__name__ == "KernelStep"]
    assert cast and kernels and max(cast) < min(kernels)


@pytest.mark.parametrize("bad", [5, -1, 1 << 40, -(1 << 62)])
def test_a_failed_check_in_a_run_raises_torchs_error_and_writes_nothing(
        monkeypatch: pytest.MonkeyPatch, bad: int) -> None:
    """A class index out of range stops the run at its check (no gather reads past the
    logits) and the plain program makes the call, raising the check's error; nothing is
    written back, and the next good call runs the native program again."""
    model, step, (x, y) = _compiled(monkeypatch, True)
    before = _params(model)
    grads = [p.grad for p in model.parameters()]
    wrong = y.numpy().copy()
    wrong[7] = bad
    with pytest.raises(IndexError, match=rf"^Target {bad} is out of bounds\."):
        step(x, rt.from_numpy(wrong))
    for a, b in zip(_params(model), before, strict=True):
        np.testing.assert_array_equal(a, b)
    assert all(p.grad is g for p, g in zip(model.parameters(), grads, strict=True))
    model_e, fn_e, args_e = _mlp()
    for _ in range(2):
        fn_e(*args_e)  # the eager twin of the two good calls before the failed one
    np.testing.assert_allclose(step(x, y).detach().numpy(), fn_e(*args_e).detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    for a, b in zip(_params(model), _params(model_e), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_check_words_bound_int64() -> None:
    assert pyentry.check_words(4, 0, 10).tolist() == [4, 0, 9, 0]
    assert pyentry.check_words(4, -(1 << 70), 1 << 70).tolist() == [
        4, pyentry.INT64_MIN, pyentry.INT64_MAX, 0]
    assert pyentry.check_words(4, 3, 3) is None  # no value passes: left to Python
    assert pyentry.check_words(4, 1 << 63, 1 << 64) is None


def test_values_that_leave_a_run_are_new_arrays_every_call(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A .grad kept from one call is not overwritten by the next (fixed arrays stay inside
    their run)."""
    model, step, args = _compiled(monkeypatch, True)
    step(*args)
    kept = [p.grad for p in model.parameters()]
    copies = [g.numpy().copy() for g in kept]
    step(*args)
    for g, c in zip(kept, copies, strict=True):
        np.testing.assert_array_equal(g.numpy(), c)
    assert all(p.grad is not g for p, g in zip(model.parameters(), kept, strict=True))


@pytest.mark.parametrize("dropout", [0.0, 0.3])
def test_a_failed_test_runs_the_plain_lines(monkeypatch: pytest.MonkeyPatch,
                                            dropout: float) -> None:
    """Where an argument is not what a run's entries were proved for, the run's steps run as
    the plain program runs them (inline where the call draws random numbers; else the plain
    program makes the call again): the same values (products by numpy there: to rounding)."""
    model_a, reference, args_a = _compiled(monkeypatch, True, dropout=dropout)
    model_b, step, args_b = _compiled(monkeypatch, True, dropout=dropout)
    program = step.plan.executable.program().native
    assert ("return _plain(" in program.source) == (dropout == 0.0), program.source
    tests = re.findall(r"^    if not \((.*)\):$", program.source, re.M)
    names = {n for t in tests for n in re.findall(r"_shape\d+_\d+", t)}
    assert names
    for n in names:  # every shape a run tests, made one no array has
        monkeypatch.setitem(program.__globals__, n, (-1,))
    drives = re.findall(r"^        (_drive\d+)\(", program.source, re.M)  # the tested runs
    assert drives

    def refuse(*args: Any) -> None:
        raise AssertionError("a run was called although its test failed")

    for k in drives:
        monkeypatch.setitem(program.__globals__, k, refuse)
    for k in range(3):
        rt.manual_seed(100 + k)
        la = reference(*args_a)
        rt.manual_seed(100 + k)
        lb = step(*args_b)
        np.testing.assert_allclose(lb.detach().numpy(), la.detach().numpy(), rtol=1e-5, atol=1e-6)
    for a, b in zip(_params(model_a), _params(model_b), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_concurrent_runs_of_one_plan_each_get_their_own_result() -> None:
    """plan.run from several threads: one runs the native program at a time, the others the
    plain one; every caller gets the result of its own arguments."""
    _, fn, args = _mlp(seed=5)
    step = planner.compile(fn, backend="llvm")
    step(*args)
    plan = step.plan
    assert hasattr(plan.executable.program(), "native")
    binding = next(iter(step._cache.values())).bindings[0]
    replayer = binding._replayer()
    state = {slot: read(args) for slot, read in replayer.reads}
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal((16, 24)).astype(np.float32) for _ in range(8)]
    labels = args[1].numpy()
    expected = [plan.run([x, labels], state, binding.generators)[0][1] for x in inputs]
    failures: list[str] = []

    def worker(k: int) -> None:
        for _ in range(150):
            got = plan.run([inputs[k], labels], state, binding.generators)[0][1]
            if not np.array_equal(got, expected[k]):
                failures.append(f"thread {k}: {got} != {expected[k]}")
                return

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures[:3]


def test_no_run_past_the_fixed_bytes_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    found: list[native.Run] = []
    find = native.find_run

    def recording(*args: Any, **kwargs: Any) -> Any:
        run = find(*args, **kwargs)
        if run is not None:
            found.append(run)
        return run

    monkeypatch.setattr(native, "find_run", recording)
    _compiled(monkeypatch, True)
    assert any(run.peak > 0 for run in found)
    found.clear()
    monkeypatch.setattr(native, "MAX_FIXED_BYTES", 0)
    model_a, plain, args_a = _compiled(monkeypatch, False)
    model_b, step, args_b = _compiled(monkeypatch, True)
    assert all(run.peak == 0 for run in found)
    for _ in range(2):
        np.testing.assert_array_equal(plain(*args_a).detach().numpy(),
                                      step(*args_b).detach().numpy())
    monkeypatch.setattr(native, "MIN_CALLS", 10**6)
    _, step, _ = _compiled(monkeypatch, True)
    assert not hasattr(step.plan.executable.program(), "native")


def test_drive_builtin_checks_its_argument_count() -> None:
    records = np.array([0, 0], np.int64)
    slots = np.zeros(2, np.int64)
    drive = pyentry.drive_builtin(records, slots, 2, "empty_run", None)
    drive(np.zeros(1), np.zeros(1))  # no records: nothing runs
    with pytest.raises(TypeError, match="takes exactly 2 arguments"):
        drive(np.zeros(1))
    with pytest.raises(ValueError, match="do not fit"):
        pyentry.drive_builtin(records, slots, 3, "too_many", None)


def _conv_step(seed: int) -> tuple[Any, Any, tuple[Any, ...]]:
    rt.manual_seed(seed)
    model = rt.nn.Sequential(rt.nn.Conv2d(2, 4, 3, padding=1), rt.nn.ReLU(), rt.nn.MaxPool2d(2),
                             rt.nn.Conv2d(4, 4, 3), rt.nn.Flatten(), rt.nn.Linear(16, 3))
    opt = rt.optim.SGD(model.parameters(), lr=0.05)
    x = rt.from_numpy(np.random.default_rng(seed).standard_normal((3, 2, 8, 8))
                      .astype(np.float32))
    y = rt.tensor([0, 2, 1])
    return _classifier(model, opt, x, y)


def test_sliding_window_functions_run_inside_native_runs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """im2col, col2im, max pooling's argmax and its sum over taps (codegen.windows) are
    called by a run's driver, not by Python: the same bits as the plain program."""
    steps = []
    for enabled in (False, True):
        monkeypatch.setattr(native, "ENABLED", enabled)
        model, fn, args = _conv_step(2)
        step = planner.compile(fn, backend="llvm")
        step(*args)
        steps.append((model, step, args))
    program = steps[1][1].plan.executable.program()

    def windows_calls(source: str) -> int:
        return sum(source.count(f"_fast_{op}(") for op in ("unfold", "fold", "argmax"))

    # the first im2col stays Python: the reshape after it copies (no run holds a copy)
    assert windows_calls(program.source) <= 1 < windows_calls(program.plain_program().source)
    for _ in range(3):
        a, b = (step(*args) for _, step, args in steps)
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    for p, q in zip(steps[0][0].parameters(), steps[1][0].parameters(), strict=True):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())


@pytest.mark.parametrize("make", [_mlp, _conv_step], ids=["mlp", "conv"])
def test_inputs_of_another_layout_are_made_contiguous_for_the_runs(make: Any) -> None:
    """An input of the planned shape and dtype but column-major passes the program's entry
    check; a run makes it C-contiguous for its kernels and window functions (products read
    any strides): the eager step's values."""
    eager_model, eager_fn, (x, y) = make(7)
    model, fn, _ = make(7)
    step = planner.compile(fn, backend="llvm")
    xf = rt.from_numpy(np.asfortranarray(x.numpy()))
    assert not xf.numpy().flags.c_contiguous
    for _ in range(3):
        want = eager_fn(rt.from_numpy(np.asfortranarray(x.numpy())), y)
        np.testing.assert_allclose(step(xf, y).detach().numpy(), want.detach().numpy(),
                                   rtol=1e-5, atol=1e-6)
    assert hasattr(step.plan.executable.program(), "native")
    for p, q in zip(model.parameters(), eager_model.parameters(), strict=True):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
