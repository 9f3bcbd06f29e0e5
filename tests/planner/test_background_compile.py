"""Kernels compiled in the background (planner.background): the first calls replay the unfused
plan while a thread builds the fused one, results equal eager's throughout, and the first call
that finds the kernels built switches to them."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
from benchmarks.workloads import WORKLOADS
from codegen import cache
from planner import background

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def on(monkeypatch: pytest.MonkeyPatch) -> None:
    """Background compiling on, and no module in this process's memory: each test's cache
    directory is empty, so its kernels are compiled anew (in the background where they weigh
    enough)."""
    monkeypatch.setenv(background.ENV, "1")
    cache.clear_cache(disk=False)


def _chain() -> Any:
    wl = WORKLOADS["chain"]
    return wl.build(rt, wl.make_arrays(0))


def _eager_chain() -> dict[str, np.ndarray]:
    case = _chain()
    return case.outputs(case.fn(*case.args))


def _close(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=2e-5, atol=2e-6, err_msg=name)


def test_the_first_call_runs_eagerly_then_the_children_fork(
        on: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first call runs the step as written (no generated code that would compile on
    first use), which takes less than building the unfused plan's program, with every core:
    the children fork once it is done; later calls replay the unfused plan, then the kernels."""
    # printed: a side effect of the step's Python that a replay does not make (a list the
    # step appends to has its appends replayed, as torch.compile does)
    log = io.StringIO()
    real_start = cache.start_compiling
    monkeypatch.setattr(cache, "start_compiling",
                        lambda k: print("fork", file=log) or real_start(k))
    want = _eager_chain()
    case = _chain()

    def step(*args: Any) -> Any:
        print("step", file=log)
        return case.fn(*args)

    def events() -> list[str]:
        return log.getvalue().split()

    compiled = planner.compile(step, cache_dir=tmp_path)
    _close(case.outputs(compiled(*case.args)), want)
    assert events() == ["step", "step", "fork"]  # the capture, the eager run, then the fork
    _close(case.outputs(compiled(*case.args)), want)
    assert events() == ["step", "step", "fork"]  # replayed: the step's Python does not run
    assert compiled.wait() is True
    _close(case.outputs(compiled(*case.args)), want)
    assert compiled.plan.stats["kernels"] == 1


def test_the_unfused_replays_compile_no_generated_code(
        on: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """While the kernels compile, the unfused plan's steps take none of codegen.windows'
    generated code, which would compile on first use and first wait for the children: an SGD
    update (one fma a parameter) is the numpy emulation's there (a cold mlp_small's second
    call took 330 ms compiling the machine's fma, where it takes 65)."""
    from codegen import windows

    wl = WORKLOADS["mlp_small"]
    case = wl.build(rt, wl.make_arrays(0))
    want = wl.build(rt, wl.make_arrays(0))
    asked: list[str] = []
    monkeypatch.setattr(windows, "_compiled", {})
    real_code = windows._code
    monkeypatch.setattr(windows, "_code", lambda name: asked.append(name) or real_code(name))
    step = planner.compile(case.fn, cache_dir=tmp_path)
    unfused = 0
    for call in range(3):
        if call == 1:
            asked.clear()  # (the capture's own ops, in the first call, may compile it)
        got = case.outputs(step(*case.args))
        expect = want.outputs(want.run())
        for name in expect:
            np.testing.assert_allclose(got[name], expect[name], rtol=2e-5, atol=2e-6)
        if call and not step.plan.executable.native_code:  # it replayed the unfused plan
            unfused += 1
            assert not asked, asked
    assert unfused >= 1
    assert step.wait() is True


def test_first_call_runs_unfused_then_kernels(on: None, tmp_path: Path) -> None:
    want = _eager_chain()
    case = _chain()
    step = planner.compile(case.fn, cache_dir=tmp_path)
    _close(case.outputs(step(*case.args)), want)
    assert step.plan.stats.get("kernels", 0) == 0  # the first call never waits for LLVM
    assert step.wait() is True
    _close(case.outputs(step(*case.args)), want)
    assert step.plan.stats["kernels"] == 1
    assert step.captures == 1


def test_wait_is_true_once_nothing_compiles(on: None, tmp_path: Path) -> None:
    case = _chain()
    step = planner.compile(case.fn, cache_dir=tmp_path)
    assert step.wait(timeout=0) is True  # nothing planned yet
    step(*case.args)
    assert step.wait() is True
    assert step.wait(timeout=0) is True


def test_training_loop_equals_eager_across_the_switch(on: None, tmp_path: Path) -> None:
    wl = WORKLOADS["mlp_small"]
    arrays = wl.make_arrays(0)
    eager, compiled = wl.build(rt, arrays), wl.build(rt, arrays)
    step = planner.compile(compiled.fn, cache_dir=tmp_path)
    for i in range(6):
        want = eager.outputs(eager.fn(*eager.args))
        got = compiled.outputs(step(*compiled.args))
        _close(got, want)
        if i == 2:
            step.wait()
    assert step.plan.stats["kernels"] > 0
    assert step.captures == 1


def test_background_false_compiles_in_the_first_call(on: None, tmp_path: Path) -> None:
    case = _chain()
    step = planner.compile(case.fn, cache_dir=tmp_path, background=False)
    step(*case.args)
    assert step.plan.stats["kernels"] == 1


def test_environment_zero_compiles_in_the_first_call(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    monkeypatch.setenv(background.ENV, "0")
    case = _chain()
    step = planner.compile(case.fn, cache_dir=tmp_path)
    step(*case.args)
    assert step.plan.stats["kernels"] == 1


def test_deterministic_algorithms_compile_in_the_first_call(on: None, tmp_path: Path) -> None:
    case = _chain()
    step = planner.compile(case.fn, cache_dir=tmp_path)
    rt.use_deterministic_algorithms(True)
    try:
        assert rt.are_deterministic_algorithms_enabled()
        step(*case.args)
    finally:
        rt.use_deterministic_algorithms(False)
    assert step.plan.stats["kernels"] == 1


def test_use_deterministic_algorithms_checks_types_as_torch() -> None:
    with pytest.raises(TypeError, match=r"argument 'mode' \(position 1\) must be bool, not int"):
        rt.use_deterministic_algorithms(1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="argument 'warn_only' must be bool, not int"):
        rt.use_deterministic_algorithms(True, warn_only=1)  # type: ignore[arg-type]
    rt.use_deterministic_algorithms(False, warn_only=True)
    try:
        assert not rt.are_deterministic_algorithms_enabled()
        assert rt.is_deterministic_algorithms_warn_only_enabled()
    finally:
        rt.use_deterministic_algorithms(False)
    assert not rt.is_deterministic_algorithms_warn_only_enabled()


def test_small_kernels_compile_in_the_call(on: None, tmp_path: Path) -> None:
    x = rt.tensor(np.arange(8, dtype=np.float32), requires_grad=True)

    def step(x: Any) -> Any:
        return rt.autograd.grad((rt.tanh(x) * 2).sum(), [x])[0]

    compiled = planner.compile(step, cache_dir=tmp_path)
    got = compiled(x)
    assert compiled.plan.stats["kernels"] >= 1
    np.testing.assert_allclose(got.numpy(), step(x).numpy(), rtol=1e-6)


def test_cached_kernels_load_in_the_call(on: None, tmp_path: Path) -> None:
    case = _chain()
    first = planner.compile(case.fn, cache_dir=tmp_path)
    first(*case.args)
    first.wait()
    again = _chain()
    second = planner.compile(again.fn, cache_dir=tmp_path)
    second(*again.args)
    assert second.plan.stats["kernels"] == 1  # plan and code kept: nothing to wait for


def test_bad_settings_are_errors(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="background must be True, False or None"):
        planner.compile(lambda x: x, background="yes")  # type: ignore[arg-type]
    monkeypatch.setenv(background.ENV, "maybe")
    case = _chain()
    step = planner.compile(case.fn, cache_dir=tmp_path)
    with pytest.raises(ValueError, match="BACKPLAN_BACKGROUND_COMPILE must be 0 or 1"):
        step(*case.args)


def _failing(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(kernels: Any, cache_dir: Any = None) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(cache, "get_compiled", boom)


def test_failed_build_warns_and_stays_on_the_interpreter(on: None, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    want = _eager_chain()
    _failing(monkeypatch)
    case = _chain()
    step = planner.compile(case.fn, cache_dir=tmp_path)
    _close(case.outputs(step(*case.args)), want)
    with pytest.warns(RuntimeWarning, match=r"fused kernels failed to build \(RuntimeError: "
                                            r"boom\); running the plan on the interpreter"):
        assert step.wait() is True
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _close(case.outputs(step(*case.args)), want)
    assert step.plan.stats.get("kernels", 0) == 0


def test_failed_build_raises_under_llvm(on: None, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    _failing(monkeypatch)
    case = _chain()
    step = planner.compile(case.fn, backend="llvm", cache_dir=tmp_path)
    step(*case.args)  # planned and replayed unfused: the build fails in the thread
    with pytest.raises(RuntimeError, match="boom"):
        step.wait()
    with pytest.raises(RuntimeError, match="boom"):
        step(*case.args)


_SCRIPT = textwrap.dedent("""
    import json, sys
    import planner, runtime as rt
    from benchmarks.workloads import WORKLOADS
    wl = WORKLOADS["chain"]
    case = wl.build(rt, wl.make_arrays(0))
    step = planner.compile(case.fn, cache_dir=sys.argv[1])
    step(*case.args)
    print(json.dumps({"kernels": step.plan.stats.get("kernels", 0),
                      "loaded": step.plans_loaded}))
""")


def test_process_ending_mid_compile_leaves_plan_and_code(tmp_path: Path) -> None:
    """A script that ends right after its first call waits for the build at exit, which
    keeps the plan and its code for the next process (its first call runs the kernels)."""
    env = dict(os.environ, **{background.ENV: "1"})
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    cache_dir = tmp_path / "cache"

    def run() -> dict[str, int]:
        out = subprocess.run([sys.executable, "-c", _SCRIPT, str(cache_dir)], env=env,
                             capture_output=True, text=True, timeout=300, cwd=ROOT)
        assert out.returncode == 0, out.stderr
        import json

        return json.loads(out.stdout.strip().splitlines()[-1])

    assert run() == {"kernels": 0, "loaded": 0}
    assert run() == {"kernels": 1, "loaded": 1}


def test_threads_calling_while_it_compiles_equal_sequential_calls(on: None,
                                                                   tmp_path: Path) -> None:
    """Calls from several threads before, during and after the switch: each holds the step's
    lock, so they leave the parameters as as many sequential calls do (within the tolerance
    between the unfused and the fused plan)."""
    from tests.threads import in_threads

    wl = WORKLOADS["mlp_small"]  # SGD: the outputs hold the loss and every parameter
    arrays = wl.make_arrays(0)
    eager, compiled = wl.build(rt, arrays), wl.build(rt, arrays)
    step = planner.compile(compiled.fn, cache_dir=tmp_path)
    threads, calls = 3, 6

    def run() -> None:
        for _ in range(calls):
            step(*compiled.args)

    in_threads(*[run] * threads)
    assert step.wait() is True
    got = compiled.outputs(step(*compiled.args))
    for _ in range(threads * calls):
        eager.fn(*eager.args)
    want = eager.outputs(eager.fn(*eager.args))
    _close(got, want)
    assert step.captures == 1
    assert step.plan.stats["kernels"] > 0
