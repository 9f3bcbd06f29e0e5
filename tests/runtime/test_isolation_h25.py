"""Tests that passed alone and failed after others in the same pytest process (CI runs the
whole suite in one): each here runs the test that leaked global state, or the state it left,
and then the test that failed after it, in one test."""

from __future__ import annotations

import gc
import warnings
from typing import Any

import pytest

import runtime as rt
import runtime.nn.module as module

torch = pytest.importorskip("torch")

from tests.planner import test_compiled_sweep_h15 as sweep_h15  # noqa: E402
from tests.runtime import test_parity_nn_modules as nn_parity  # noqa: E402
from tests.runtime import test_ported_nn_h17 as nn_h17  # noqa: E402
from tests.runtime import test_ported_optim_h17 as optim_h17  # noqa: E402
from tests.runtime.test_ported_nn_h17 import _global_hooks  # noqa: E402, F401


@pytest.fixture
def _backward_hook_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    """This file's own tests leave the module-wide backward hooks' kind as it was."""
    monkeypatch.setattr(module, "_global_is_full_backward_hook", None)


def test_the_global_module_hooks_parity_test_leaves_no_backward_hook_kind(
        _backward_hook_kind: None) -> None:
    with pytest.MonkeyPatch.context() as patch:
        nn_parity.test_global_module_hooks(patch)  # registers full backward hooks
    assert module._global_is_full_backward_hook is None


@pytest.mark.parametrize("full", [True, False])
def test_the_h17_global_hook_tests_pass_whatever_kind_came_before(
        _backward_hook_kind: None, request: pytest.FixtureRequest, full: bool) -> None:
    module._global_is_full_backward_hook = full  # what a test before left
    request.getfixturevalue("_global_hooks")
    nn_h17.test_module_global_hooks(None)
    nn_h17.test_global_and_local_hooks_order(None)


def _run_a_compiled_step_with_a_product() -> None:
    import planner

    rt.manual_seed(0)
    lin = rt.nn.Linear(3, 2)

    def step(x: rt.Tensor) -> rt.Tensor:
        lin.zero_grad()
        loss = lin(x).sum()
        loss.backward()
        return loss.detach()

    planner.compile(step)(rt.ones(4, 3))


def test_no_cyclic_references_after_a_compiled_step_with_products() -> None:
    """A compiled step's executable holds reference cycles with its matmuls' products; the
    first collection after it goes frees the last instance of the products' ctypes array type,
    and that type (a cycle that ctypes' instances do not report to gc) only goes in the next
    collection: test_no_cyclic_references must not count it as the optimizer's."""
    import planner  # noqa: F401  (imported before gc is disabled)

    gc.disable()  # no collection but the test's own
    try:
        _run_a_compiled_step_with_a_product()
        optim_h17.test_no_cyclic_references()
    finally:
        gc.enable()


def test_the_compiled_sweep_counts_only_the_planners_warnings() -> None:
    """JAX, once an earlier test imported it, warns at each os.fork() (codegen.forked forks to
    emit a module in parts): test_compiled_sweep_h15's "no warning" meant none of the
    planner's."""
    def step(model: Any, opt: Any, x: Any) -> Any:
        return sweep_h15._scaled(model, opt, x, 1.0)

    def change(i: int) -> None:
        if i == 1:
            warnings.warn("os.fork() was called. os.fork() is incompatible with multithreaded "
                          "code, and JAX is multithreaded", RuntimeWarning, stacklevel=1)

    compiled, said = sweep_h15._train_pair(step, change, calls=2)
    assert said == [] and compiled.captures == 1


def test_the_global_tensor_guard_test_runs_twice_in_one_process() -> None:
    """It rebound a module global (W) to another tensor and left it so: run again (pytest's
    --count, a rerun of a failure), its first assertion read the other tensor."""
    from tests.planner import test_module_guards as module_guards

    for _ in range(2):
        module_guards.test_a_tensor_read_by_name_is_guarded_by_identity()


def _warn_once_calls(lib: Any) -> dict[str, Any]:
    return {
        "meshgrid": lambda: lib.meshgrid(lib.ones(2), lib.ones(2)),
        "conv same": lambda: lib.nn.functional.conv1d(lib.ones(1, 1, 5), lib.ones(1, 1, 2),
                                                      padding="same"),
        "searchsorted": lambda: lib.searchsorted(lib.arange(6.0).reshape(2, 3)[:, ::2],
                                                 lib.ones(2, 1))}


def _warnings_given(lib: Any) -> dict[str, int]:
    """How many warnings each once-a-process warning gives in two calls, after a first call
    (an earlier test's) has warned, under set_warn_always(True)."""
    counts: dict[str, int] = {}
    for name, call in _warn_once_calls(lib).items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call()  # the first, as an earlier test's
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            lib.set_warn_always(True)
            try:
                call()
                call()
            finally:
                lib.set_warn_always(False)
        counts[name] = len(said)
    return counts


def test_warn_once_warnings_warn_each_time_under_set_warn_always() -> None:
    """PyTorch's TORCH_WARN_ONCE warns once a process, and each time under
    set_warn_always(True) (what a test asserting one sets, whatever warned before it):
    meshgrid's, conv's padding='same' and searchsorted's warned once whatever the setting."""
    assert _warnings_given(rt) == _warnings_given(torch) == {
        "meshgrid": 2, "conv same": 2, "searchsorted": 2}


def test_a_dropped_compiled_step_leaves_no_garbage_for_a_second_collection():
    """A GEMM product made its ``c_int64 * 7`` words type anew (ctypes keeps it weakly): the
    type, a reference cycle, was freed only by the collection after the one that freed the
    step, so a later test counting garbage (test_no_cyclic_references) found 6 objects."""
    import gc

    import planner
    import runtime as rt

    m = rt.nn.Linear(8, 8)

    def step(x):
        loss = m(x).sum()
        loss.backward()
        return loss

    compiled = planner.compile(step)
    compiled(rt.randn(4, 8))
    compiled(rt.randn(4, 8))
    del compiled
    gc.collect()
    assert gc.collect() == 0
