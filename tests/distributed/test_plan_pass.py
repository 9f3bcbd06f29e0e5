"""The data-parallel plan pass on one process (no MPI runs): buckets in the order backward
makes the gradients, bounded by the cap; starts right after a bucket's last gradient, waits
before the first reader; only the starts chained; the update reads the averages."""

from __future__ import annotations

import numpy as np

import planner
import runtime as rt
from planner.distributed import _with_all_reduce, buckets
from planner.plan import Plan
from planner.steps import COMM, AllReduceStartStep, AllReduceWaitStep


def _plan() -> Plan:
    rt.manual_seed(0)
    model = rt.nn.Sequential(rt.nn.Linear(8, 16), rt.nn.ReLU(), rt.nn.Linear(16, 4))
    opt = rt.optim.SGD(model.parameters(), lr=0.1)

    def step(x: rt.Tensor, y: rt.Tensor) -> rt.Tensor:
        opt.zero_grad()
        loss = rt.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    x = rt.tensor(np.ones((4, 8), np.float32))
    y = rt.tensor(np.zeros(4, np.int64))
    return planner.compile(step, backend="interpreter").lower(x, y)


def _grads(plan: Plan) -> list[int]:
    return [b for slot, b in plan.writes if plan.slots[slot]["kind"] == "grad"]


def test_buckets_follow_backward_order_and_cap() -> None:
    plan = _plan()
    grads = _grads(plan)
    shapes = plan.schedule.metas
    each = buckets(plan, grads, cap_bytes=1)
    assert len(each) == 4 and all(len(b) == 1 for b in each)
    order = [shapes[b[0]][0] for b in each]
    assert set(order[:2]) == {(4, 16), (4,)} and set(order[2:]) == {(16, 8), (16,)}
    assert buckets(plan, grads, cap_bytes=1 << 30) == [[b for [b] in each]]
    # a bucket closes on the gradient that fills it: the last layer's two fill 4 * 68 bytes
    assert [len(b) for b in buckets(plan, grads, cap_bytes=4 * 68)] == [2, 2]


def test_steps_placed_and_chained() -> None:
    plan = _plan()
    grads = _grads(plan)
    out = _with_all_reduce(plan, grads, cap_bytes=4 * 68)
    steps, schedule = out.steps, out.schedule
    starts = [i for i, s in enumerate(steps) if isinstance(s, AllReduceStartStep)]
    waits = [i for i, s in enumerate(steps) if isinstance(s, AllReduceWaitStep)]
    assert len(starts) == len(waits) == 2 and out.stats["buckets"] == 2
    assert all(steps[i].device == COMM for i in starts + waits)
    for i in starts:  # right after its last gradient
        assert max(schedule.producer[b] for b in steps[i].buffers) == i - 1
    deps = {j: {i for i, cs in enumerate(schedule.consumers) if j in cs} for j in starts + waits}
    assert starts[0] in deps[starts[1]]  # collectives start in plan order
    for w in waits:  # a wait waits for its own start only
        assert deps[w] == {schedule.producer[steps[w].buffers[0]]}
    means = {v for w in waits for v in steps[w].outputs}
    written = {b for slot, b in out.writes if out.slots[slot]["kind"] == "grad"}
    assert written == means  # .grad gets the averages
    readers = [s for s in steps if set(s.buffers) & set(grads)]
    assert all(isinstance(s, AllReduceStartStep) for s in readers)  # the update reads means
    assert "allreduce_start" in out.listing() and "allreduce_wait" in out.to_dot()
