"""planner.program.step_functions: one generated function a step, for an executor that runs
steps in any order the schedule's DAG allows and frees buffers by reference counts. Run in
the schedule's order, or in a random order the DAG allows, they give plan.run's results bit
for bit."""

from __future__ import annotations

import copy
import random
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import planner
import runtime as rt
from planner.executable import materialize
from planner.parallel import filled
from planner.program import ARGS, GENERATORS, STATE, step_functions
from tests.planner.test_program import flat, plan_inputs
from tests.planner.test_random_programs import (
    LARGE_BASES,
    LARGE_KINDS,
    Program,
    make_leaves,
    make_step,
    programs,
)


def dag_order(plan: Any, seed: int | None) -> list[int]:
    """The schedule's order (seed None), or a random order its DAG allows."""
    sched = plan.schedule
    if seed is None:
        return list(sched.order)
    rng = random.Random(seed)
    waiting = list(sched.in_degree)
    ready = [i for i, n in enumerate(waiting) if n == 0]
    order = []
    while ready:
        i = ready.pop(rng.randrange(len(ready)))
        order.append(i)
        for j in sched.consumers[i]:
            waiting[j] -= 1
            if waiting[j] == 0:
                ready.append(j)
    assert len(order) == len(plan.steps)
    return order


def run_steps(plan: Any, args: list[Any], state: dict[int, Any], generators: list[Any],
              seed: int | None) -> tuple[Any, list[tuple[int, Any]], int]:
    """Run the step functions as an executor would: in a DAG order, dropping each buffer when
    its last reader is done. Returns the filled template, the writes and the most buffers
    held at once."""
    sched = plan.schedule
    env: dict[int, Any] = {ARGS: args, STATE: state, GENERATORS: generators}
    left = dict(sched.readers)
    functions = step_functions(plan)
    most = 0
    for i in dag_order(plan, seed):
        functions[i](env)
        step = plan.steps[i]
        dead = [v for v in step.outputs if not sched.readers.get(v)]
        for v in set(step.buffers):
            left[v] -= 1
            if not left[v]:
                dead.append(v)
        most = max(most, len(env))
        for v in dead:
            if v not in sched.needed:
                del env[v]
    writes = [(slot, None if b == -1 else env[b]) for slot, b in plan.writes]
    return filled(plan.returns, env), writes, most


def assert_steps_equal_run(compiled: Any, leaves: list[Any], seeds: list[int | None]) -> None:
    compiled(*leaves)
    binding, arrays, state, generators = plan_inputs(compiled, tuple(leaves))
    plan = binding.plan
    for seed in seeds:
        gens = copy.deepcopy(generators)
        filled, writes = plan.run(list(arrays), {k: v.copy() for k, v in state.items()},
                                  copy.deepcopy(generators))
        expected = flat(filled) + [materialize(v) for _, v in writes]
        got_filled, got_writes, _ = run_steps(plan, list(arrays),
                                              {k: v.copy() for k, v in state.items()}, gens,
                                              seed)
        got = flat(got_filled) + [materialize(v) for _, v in got_writes]
        assert len(got) == len(expected)
        for g, e in zip(got, expected, strict=True):
            if e is None:
                assert g is None
                continue
            np.testing.assert_array_equal(g, e)
            assert g.dtype == e.dtype and np.array_equal(np.signbit(g), np.signbit(e))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.sampled_from(["interpreter", "llvm"]), st.integers(0, 2**16))
def test_step_functions_equal_plan_run(program: Program, backend: str, seed: int) -> None:
    shapes, ops, leaf_seed = program
    (leaves,) = make_leaves(shapes, leaf_seed, 1)
    compiled = planner.compile(make_step(ops), backend=backend)
    assert_steps_equal_run(compiled, leaves, [None, seed])


@settings(max_examples=8, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(programs(LARGE_BASES, LARGE_KINDS, full_leaf=True), st.sampled_from(["interpreter",
                                                                          "llvm"]))
def test_step_functions_at_realistic_sizes(program: Program, backend: str) -> None:
    """Sizes where in-place reuse, fusion and row splits happen."""
    shapes, ops, leaf_seed = program
    (leaves,) = make_leaves(shapes, leaf_seed, 1)
    compiled = planner.compile(make_step(ops), backend=backend)
    assert_steps_equal_run(compiled, leaves, [None, 1, 2])


def test_random_draws_keep_their_order_in_any_dag_order() -> None:
    w = rt.tensor(np.linspace(-1, 1, 64, dtype=np.float32).reshape(8, 8), requires_grad=True)

    def step(x: Any) -> Any:
        w.grad = None
        a = (x * rt.randn(8, 8)).tanh()
        b = (x + rt.rand(8, 8)).exp()
        loss = (a @ w).sum() + (b * rt.randn(8, 8)).sum()
        loss.backward()
        return loss

    x = rt.tensor(np.ones((8, 8), np.float32))
    plan = planner.compile(step, backend="interpreter").lower(x)
    draws = [i for i, s in enumerate(plan.steps) if s.op == "rand"]
    assert len(draws) == 3
    for earlier, later in zip(draws, draws[1:]):
        assert later in plan.schedule.consumers[earlier]
    assert_steps_equal_run(planner.compile(step, backend="llvm"), [x], [None, 3, 4, 5])


def test_concurrent_in_place_reuse_needs_every_other_reader_first() -> None:
    n = 1 << 14

    def step(x: Any) -> Any:
        y = x.exp()
        return ((y * 2.0).sum(), (y.tanh() + 1.0).sum())

    x = rt.tensor(np.linspace(-1, 1, n, dtype=np.float32))
    plan = planner.compile(step, backend="interpreter").lower(x)
    sched = plan.schedule
    by_out = {s.out: i for i, s in enumerate(plan.steps)}
    exp = next(s for s in plan.steps if s.op == "exp").out
    # in plan order the last reader of y may overwrite it; in any order only once the other
    # reader is its ancestor, which it is not here
    takers = [i for i, x_ in sched.inplace.items() if x_ == exp]
    assert takers and all(i not in sched.inplace_concurrent for i in takers)
    assert by_out[exp] in [sched.producer[exp]]
    assert set(sched.inplace_concurrent.items()) <= set(sched.inplace.items())
    assert sched.names[by_out[exp]] == f"step {by_out[exp]}: %{exp} = exp"
    assert sched.parallelism > 1.0  # two independent chains after exp
