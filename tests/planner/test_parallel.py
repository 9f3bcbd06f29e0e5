"""A plan on the runtime's executor (planner.parallel): the same bits as the straight-line
program whatever the worker count, concurrent callers, failures named and recovered from, no
buffer kept after a run, the execution chosen by the cost model and shown."""

from __future__ import annotations

import copy
import dataclasses
import threading
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import planner
import runtime as rt
import runtime.ops
from benchmarks.workloads import WORKLOADS
from planner.executable import materialize
from planner.parallel import ParallelRunner, choose
from planner.program import ARGS, GENERATORS, STATE
from planner.steps import PrimitiveStep
from runtime import _threads
from tests.planner.test_program import assert_identical, flat, plan_inputs
from tests.planner.test_random_programs import (
    LARGE_BASES,
    LARGE_KINDS,
    Program,
    make_leaves,
    make_step,
    programs,
)


def run_plan(plan: Any, arrays: list[Any], state: dict[int, Any], generators: Any,
             executor: str, workers: int = 1) -> list[Any]:
    """Outputs then writes of one run of ``plan`` as ``executor`` runs it, on private copies."""
    plan.configure(workers, executor)
    filled, writes = plan.run(list(arrays), {k: v.copy() for k, v in state.items()},
                              copy.deepcopy(generators))
    return flat(filled) + [materialize(v) for _, v in writes]


def assert_parallel_equals_program(compiled: Any, leaves: list[Any]) -> None:
    compiled(*leaves)
    binding, arrays, state, generators = plan_inputs(compiled, tuple(leaves))
    plan = binding.plan
    expected = run_plan(plan, arrays, state, generators, "program")
    for workers in (1, 2, 4):
        assert_identical(run_plan(plan, arrays, state, generators, "parallel", workers),
                         expected)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.sampled_from(["interpreter", "llvm"]))
def test_random_plans_give_the_programs_bits_on_any_worker_count(program: Program,
                                                                  backend: str) -> None:
    shapes, ops, leaf_seed = program
    (leaves,) = make_leaves(shapes, leaf_seed, 1)
    assert_parallel_equals_program(planner.compile(make_step(ops), backend=backend), leaves)


@settings(max_examples=6, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(programs(LARGE_BASES, LARGE_KINDS, full_leaf=True), st.sampled_from(["interpreter",
                                                                          "llvm"]))
def test_random_plans_at_realistic_sizes(program: Program, backend: str) -> None:
    """Sizes where in-place reuse, fusion and kernel splits happen."""
    shapes, ops, leaf_seed = program
    (leaves,) = make_leaves(shapes, leaf_seed, 1)
    assert_parallel_equals_program(planner.compile(make_step(ops), backend=backend), leaves)


@pytest.mark.parametrize("name", ["mlp_small", "two_tower"])
def test_training_steps_on_two_workers_equal_the_program(name: str) -> None:
    """Three SGD steps compiled both ways from the same arrays: the same losses and
    parameters, bit for bit (updates at write-back included)."""
    workload = WORKLOADS[name]
    arrays = workload.make_arrays(0)
    runs = []
    for executor in ("program", "parallel"):
        case = workload.build(rt, arrays)
        step = planner.compile(case.fn, workers=2, executor=executor)
        losses = [case.outputs(step(*case.args))["loss"] for _ in range(3)]
        assert step.execution is not None and step.execution.executor == executor
        runs.append((losses, case.outputs(step(*case.args))))
    (losses, outs), (losses2, outs2) = runs
    assert_identical(losses2, losses)
    assert sorted(outs2) == sorted(outs)
    for key in outs:
        np.testing.assert_array_equal(outs2[key], outs[key], err_msg=key)


def two_chains(x: Any, w: Any) -> Any:
    w.grad = None
    a = ((x * 1.5).tanh() @ w).sum()
    b = ((x + 0.5).sin() @ w).exp().mean()
    loss = a + b
    loss.backward()
    return loss


def parallel_plan(workers: int = 2) -> tuple[Any, Any, list[Any], dict[int, Any], Any]:
    x = rt.tensor(np.linspace(-1, 1, 32 * 16, dtype=np.float32).reshape(32, 16))
    w = rt.tensor(np.linspace(-0.5, 0.5, 16 * 8, dtype=np.float32).reshape(16, 8),
                  requires_grad=True)
    step = planner.compile(two_chains, workers=workers, executor="parallel")
    step(x, w)
    binding, arrays, state, generators = plan_inputs(step, (x, w))
    assert binding.plan.schedule.parallelism > 1.2
    return step, binding.plan, arrays, state, generators


def test_many_threads_running_one_plan_each_get_their_own_result() -> None:
    """1,000 runs from 8 threads at once, each on its own input, equal sequential runs."""
    _, plan, arrays, state, generators = parallel_plan()
    inputs = [[a * (1 + k / 1000) if a is not None else None for a in arrays]
              for k in range(1000)]
    plan.configure(2, "program")
    expected = [flat(plan.run(list(a), dict(state), generators)[0]) for a in inputs]
    plan.configure(2, "parallel")
    got: list[Any] = [None] * len(inputs)
    errors: list[BaseException] = []

    def worker(t: int) -> None:
        try:
            for k in range(t, len(inputs), 8):
                got[k] = flat(plan.run(list(inputs[k]), dict(state), generators)[0])
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for g, e in zip(got, expected, strict=True):
        assert_identical(g, e)


@pytest.mark.parametrize("exc_type", [FloatingPointError, KeyboardInterrupt])
@pytest.mark.parametrize("executor", ["program", "parallel"])
def test_a_failing_step_is_named_nothing_is_written_and_later_runs_succeed(
        monkeypatch: pytest.MonkeyPatch, exc_type: type[BaseException], executor: str) -> None:
    x = rt.tensor(np.linspace(-1, 1, 32 * 16, dtype=np.float32).reshape(32, 16))
    w = rt.tensor(np.linspace(-0.5, 0.5, 16 * 8, dtype=np.float32).reshape(16, 8),
                  requires_grad=True)
    # unfused, so that sin is a step of its own
    step = planner.compile(two_chains, backend="interpreter", workers=2, executor=executor)
    step(x, w)  # the first call sees w.grad None, the next ones a gradient: two plans
    loss = step(x, w).detach().numpy()
    grad = w.grad.numpy().copy()
    plan = step.plan
    target = next(s for s in plan.steps if isinstance(s, PrimitiveStep) and s.op == "sin")
    prim = runtime.ops.REGISTRY["sin"]

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise exc_type("boom")

    # the primitive's one implementation its impl (no declared ufunc or fast path)
    monkeypatch.setitem(runtime.ops.REGISTRY, "sin",
                        dataclasses.replace(prim, impl=boom, ufunc=None, specializer=None))
    before = w.grad
    with pytest.raises(exc_type, match="boom") as info:
        step(x, w)
    notes = getattr(info.value, "__notes__", [])
    assert any(f"%{target.out} = sin" in n for n in notes), notes
    assert w.grad is before  # nothing written back: the step's `w.grad = None` neither
    np.testing.assert_array_equal(w.grad.numpy(), grad)
    monkeypatch.undo()
    for _ in range(2):
        np.testing.assert_array_equal(step(x, w).detach().numpy(), loss)
        np.testing.assert_array_equal(w.grad.numpy(), grad)
    assert step.plan is plan  # the same plan ran again, its steps rebuilt from the registry


def test_a_run_keeps_no_buffer_it_does_not_return() -> None:
    _, plan, arrays, state, generators = parallel_plan()
    runner = ParallelRunner(plan, 2)
    env = runner.run_env(list(arrays), dict(state), generators)
    kept = set(env) - {ARGS, STATE, GENERATORS}
    assert kept <= plan.schedule.needed
    assert kept == {b for b in plan.schedule.needed if b in env}
    filled, writes = runner.run(list(arrays), dict(state), generators)
    assert_identical(flat(filled), flat(plan.executable.program()(plan, list(arrays),
                                                                  dict(state), generators)[0]))
    assert writes is not None


def test_the_cost_model_keeps_tiny_plans_on_the_program_and_says_why() -> None:
    case = WORKLOADS["mlp_small"].build(rt, WORKLOADS["mlp_small"].make_arrays(0))
    plan = planner.compile(case.fn, workers=2).lower(*case.args)
    assert plan.execution.executor == "program"
    assert "estimated" in plan.execution.reason
    assert f"executor       {plan.execution}" in plan.summary()
    assert choose(plan, 1, "auto").reason == "one worker"
    assert choose(plan, 2, "parallel").executor == "parallel"
    assert choose(plan, 3, "program").executor == "program"


def test_independent_matmul_stacks_run_in_parallel_on_one_intra_op_thread() -> None:
    case = WORKLOADS["two_tower"].build(rt, WORKLOADS["two_tower"].make_arrays(0))
    with _threads.intra_op(1):
        plan = planner.compile(case.fn, workers=2).lower(*case.args)
    assert plan.execution.executor == "parallel" and plan.execution.workers == 2
    assert plan.schedule.parallelism > 1.8
    dot = plan.to_dot("worker")
    assert "worker 0" in dot and "worker 1" in dot


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_bad_workers_are_refused(bad: Any) -> None:
    with pytest.raises(ValueError, match="workers must be a positive int"):
        planner.compile(two_chains, workers=bad)


def test_a_bad_executor_is_refused() -> None:
    with pytest.raises(ValueError, match="executor must be one of 'auto', 'program', "
                                         "'parallel', got 'threads'"):
        planner.compile(two_chains, executor="threads")


def test_the_cost_model_splits_kernels_where_the_runtime_does() -> None:
    from codegen.jit import PARALLEL_MIN_US
    from planner import parallel

    # planner.parallel keeps its own copy so that choosing an executor imports no LLVM
    assert parallel.SPLIT_MIN_S * 1e6 == pytest.approx(PARALLEL_MIN_US, rel=1e-12)
