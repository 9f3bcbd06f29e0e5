"""planner.schedule on a plan built by hand from typed steps: the DAG, liveness, reference
counts, in-place reuse (sequential and DAG-safe), priorities and devices, computed once."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from planner.plan import Plan
from planner.steps import InputStep, RandStep, Step, primitive_step
from runtime import _dtype as D

F32 = D.as_dtype("float32")
SHAPE = (256, 256)


def prim(name: str, out: int, *args: int, device: str = "cpu", **attrs: Any) -> Step:
    return primitive_step(name, out=out, args=[("buf", a) for a in args], attrs=attrs,
                          shape=SHAPE, dtype=F32, device=device, phase="forward")


def two_towers() -> Plan:
    """x -> exp -> tanh -> (a); x @ w -> sin -> (b); a + b, returned; plus a draw pair."""
    common = {"shape": SHAPE, "dtype": F32, "device": "cpu", "phase": "forward", "args": []}
    steps = [
        prim("exp", 2, 0),  # 0: reads x, bound later in plan order
        InputStep(out=0, index=0, **common),  # 1
        InputStep(out=1, index=1, **common),  # 2
        prim("tanh", 3, 2),  # 3: may write into %2 (its only reader)
        prim("matmul", 4, 0, 1, device="fake:0"),  # 4: the other tower, on another device
        prim("sin", 5, 4, device="fake:0"),  # 5
        prim("add", 6, 3, 5),  # 6
        RandStep(out=7, kind="randn", generator=0, **common),  # 7
        RandStep(out=8, kind="rand", generator=0, **common),  # 8
        prim("mul", 9, 7, 8),  # 9
    ]
    return Plan(steps, [], ("tuple", [("node", 6), ("node", 9)]), [], None, {}, "cpu")


def test_dag_liveness_and_reference_counts() -> None:
    sched = two_towers().schedule
    assert sched.order[:2] == (1, 2) and sorted(sched.order) == list(range(10))
    assert sched.consumers[1] == (0, 4) and sched.in_degree[0] == 1
    assert sched.consumers[0] == (3,) and sched.in_degree[6] == 2
    assert sched.consumers[7] == (8, 9)  # draws from one generator keep their order
    assert sched.in_degree[8] == 1
    assert sched.producer[5] == 5 and sched.metas[5] == (SHAPE, np.dtype(np.float32))
    assert sched.readers == {0: 2, 1: 1, 2: 1, 3: 1, 4: 1, 5: 1, 7: 1, 8: 1}
    assert sched.needed == {6, 9}
    freed = [v for f in sched.frees for v in f]
    assert sorted(freed) == [0, 1, 2, 3, 4, 5, 7, 8]  # all but the returned
    assert 0 in sched.frees[4]  # x dies after its last reader in plan order
    assert sched.devices[4] == "fake:0" and sched.names[4] == "step 4: %4 = matmul"


def test_in_place_reuse_sequential_and_concurrent() -> None:
    sched = two_towers().schedule
    # tanh overwrites exp's output, its only reader: safe in any order; add may overwrite
    # %3 (tanh's, read by add alone), also safe
    assert sched.inplace[3] == 2 and sched.inplace_concurrent[3] == 2
    assert sched.inplace.get(6) == 3 and sched.inplace_concurrent.get(6) == 3
    assert set(sched.inplace_concurrent.items()) <= set(sched.inplace.items())


def test_priorities_follow_the_critical_path() -> None:
    sched = two_towers().schedule
    # the matmul tower costs most: its steps outrank exp/tanh, which outrank the draws
    assert sched.priority[4] < sched.priority[0] < sched.priority[7]
    assert sched.critical_path[2] == pytest.approx(
        sched.cost[2] + sched.cost[4] + sched.cost[5] + sched.cost[6])
    assert sched.parallelism > 1.0
    assert sched.flops[4] == 2 * 256 ** 3


def test_the_schedule_is_frozen() -> None:
    plan = two_towers()
    with pytest.raises(AttributeError):
        plan.schedule.order = ()  # type: ignore[misc]
    with pytest.raises(TypeError):
        plan.schedule.readers[0] = 5  # type: ignore[index]
