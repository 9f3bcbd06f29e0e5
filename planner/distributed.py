"""The data-parallel pass: a plan whose parameter gradients are averaged across MPI ranks by
communication steps (planner.steps.AllReduceStartStep / AllReduceWaitStep on device COMM).

The gradients of a DistributedDataParallel module's parameters (the buffers written back to
their ``.grad``) are taken in the order backward produces them and grouped into buckets of
at most the module's ``bucket_cap_mb`` (a bucket closes on the gradient that fills it, on a
change of dtype, or where a later gradient would start after a step that reads one already in
it). A bucket's start step goes right after its last gradient is made, so its all-reduce runs
while the rest of the backward does; its wait step goes right before the first step that
reads one of its gradients (the optimizer's update), or at the end; every later reader, the
write-back to ``.grad`` and the returned values read the averages instead.

Every rank must run the same plan, or the collectives would pair wrong buffers or hang: the
first time a rank plans such a step, the ranks compare a hash of the plan's listing, and
where they differ all of them raise an error naming the first line that differs.
"""

from __future__ import annotations

import copy
import hashlib
import sys
from typing import Any

from .plan import Plan
from .steps import COMM, AllReduceStartStep, AllReduceWaitStep, SourceStep, Step


def ddp_modules(modules: list[Any]) -> list[Any]:
    """The DistributedDataParallel modules among ``modules``."""
    ddp = sys.modules.get("runtime.nn.parallel.distributed")
    if ddp is None:  # never imported: no module is one, and nothing distributed gets loaded
        return []
    return [m for m in modules if isinstance(m, ddp.DistributedDataParallel)]


def data_parallel(plan: Plan, slots: list[Any], modules: list[Any]) -> Plan:
    """``plan`` with the gradients of the DistributedDataParallel ``modules`` averaged across
    ranks (``slots``: the capture's, whose grad slots name the parameters); ``plan`` itself
    when no module is one. Checks that every rank has the same plan."""
    ddps = ddp_modules(modules)
    if not ddps:
        return plan
    if plan.device != "cpu":
        raise ValueError(f"DistributedDataParallel: a compiled step runs on {plan.device}, "
                         f"but the mpi backend averages CPU gradients only")
    params = {id(p) for d in ddps for p in d.ddp_parameters}
    grads = [b for slot, b in plan.writes if b >= 0 and slots[slot].kind == "grad"
             and slots[slot].owner_input is None and id(slots[slot].ref) in params]
    if grads:
        plan = _with_all_reduce(plan, grads, min(d.bucket_cap_bytes for d in ddps))
    check_same_plan(plan)
    return plan


def buckets(plan: Plan, grads: list[int], cap_bytes: int) -> list[list[int]]:
    """The gradient buffers ``grads`` grouped into buckets, in the order the plan makes them."""
    schedule = plan.schedule
    first_reader = _first_readers(plan.steps)
    found: list[list[int]] = []
    current: list[int] = []
    size = 0
    for g in sorted(set(grads), key=lambda b: schedule.producer[b]):
        shape, dtype = schedule.metas[g]
        if current and (schedule.metas[current[0]][1] != dtype or min(
                first_reader.get(b, len(plan.steps)) for b in current) <= schedule.producer[g]):
            found.append(current)
            current, size = [], 0
        current.append(g)
        size += _numel(shape) * dtype.itemsize
        if size >= cap_bytes:
            found.append(current)
            current, size = [], 0
    if current:
        found.append(current)
    return found


def _with_all_reduce(plan: Plan, grads: list[int], cap_bytes: int) -> Plan:
    schedule = plan.schedule
    groups = buckets(plan, grads, cap_bytes)
    first_reader = _first_readers(plan.steps)
    fresh = max(plan.graph.graph.get("next_id", 0),
                max(v for s in plan.steps for v in s.outputs) + 1)
    starts: dict[int, list[Step]] = {}  # step index -> the start steps right after it
    waits: dict[int, list[Step]] = {}  # step index -> the wait steps right before it
    mean: dict[int, int] = {}  # gradient buffer -> its average's
    for k, group in enumerate(groups):
        dtype = plan.steps[schedule.producer[group[0]]].dtype
        start = AllReduceStartStep(
            out=fresh, args=[("buf", g) for g in group], bucket=k, dtype=dtype, device=COMM,
            phase="comm", shape=(sum(_numel(schedule.metas[g][0]) for g in group),))
        outs = list(range(fresh + 1, fresh + 1 + len(group)))
        fresh += 1 + len(group)
        wait = AllReduceWaitStep(
            out=outs[0], args=[("buf", start.out)], bucket=k, outs=outs, dtype=dtype,
            out_shapes=[schedule.metas[g][0] for g in group], device=COMM, phase="comm",
            shape=schedule.metas[group[0]][0])
        mean.update(zip(group, outs))
        starts.setdefault(max(schedule.producer[g] for g in group), []).append(start)
        waits.setdefault(min(first_reader.get(g, len(plan.steps)) for g in group),
                         []).append(wait)
    steps: list[Step] = []
    for i, s in enumerate(plan.steps):
        steps.extend(waits.get(i, ()))
        if any(kind == "buf" and v in mean for kind, v in s.args):
            s = _reading(s, mean)
        steps.append(s)
        steps.extend(starts.get(i, ()))
    steps.extend(waits.get(len(plan.steps), ()))
    graph = plan.graph.copy()
    graph.graph["outputs"] = sorted({mean.get(v, v) for v in graph.graph.get("outputs", ())})
    graph.graph["next_id"] = fresh
    stats = {**plan.stats, "buckets": len(groups)}
    return Plan(steps, [(slot, mean.get(b, b)) for slot, b in plan.writes],
                _remap_template(plan.returns, mean), plan.slots, graph, stats, plan.device)


def _first_readers(steps: list[Step]) -> dict[int, int]:
    first: dict[int, int] = {}
    for i, s in enumerate(steps):
        for v in s.buffers:
            first.setdefault(v, i)
    return first


def _reading(step: Step, mean: dict[int, int]) -> Step:
    """A copy of ``step`` reading the averages of the gradients it read."""
    if isinstance(step, SourceStep):
        raise AssertionError("a source step reads no buffer")
    new = copy.copy(step)
    new.args = [(kind, mean.get(v, v) if kind == "buf" else v) for kind, v in step.args]
    return new


def _remap_template(template: Any, mean: dict[int, int]) -> Any:
    kind, body = template
    if kind == "node":
        return ("node", mean.get(body, body))
    if kind in ("tuple", "list"):
        return (kind, [_remap_template(t, mean) for t in body])
    if kind == "dict":
        return ("dict", [(k, _remap_template(t, mean)) for k, t in body])
    return template


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def check_same_plan(plan: Plan) -> None:
    """Raise on every rank, naming the first differing line, unless all ranks hold a plan
    with the same listing (its hash is compared first: a listing travels only on a mismatch).
    """
    from runtime import distributed as dist

    listing = plan.listing()
    digest = hashlib.sha256(listing.encode()).hexdigest()
    digests: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(digests, digest)
    if len(set(digests)) == 1:
        return
    listings: list[Any] = [None] * len(digests)
    dist.all_gather_object(listings, listing)
    rank = dist.get_rank()
    other = next(r for r, d in enumerate(digests) if d != digests[rank])
    ours, theirs = listings[rank].splitlines(), listings[other].splitlines()
    for n, (a, b) in enumerate(zip(ours, theirs)):
        if a != b:
            where = f"step line {n}: rank {rank} has {a.strip()!r}, rank {other} has {b.strip()!r}"
            break
    else:
        where = (f"rank {rank} has {len(ours)} steps, rank {other} has {len(theirs)}")
    raise RuntimeError(f"DistributedDataParallel: the ranks captured different plans "
                       f"(different shapes or code); first difference at {where}")
