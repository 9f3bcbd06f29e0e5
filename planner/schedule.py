"""The schedule of a plan: every fact derived from its steps, computed once when the plan is
built or loaded and kept on it as frozen data.

Buffers: each one's (shape, dtype) and producing step. Order: the plan's step order, a
topological order of the step DAG (a step depends on the producers of the buffers it reads,
and random draws from one generator stay in plan order). Liveness: which buffers die after
each step when the steps run in order, and how many steps read each buffer (reference counts,
for frees when steps run concurrently). In-place reuse: the elementwise steps that may write
into a dying argument's storage in plan order, and those for which that stays safe in any
order the DAG allows. The expands no program needs to make (``broadcast_only``). Costs: FLOPs,
bytes and an estimated time per step, the critical path and a priority per step, the expected
parallelism. Memory: the peak bytes a run holds. ``listing``, ``summary``, ``to_dot``,
serialization, fusion, the program generator and an executor all read these; none
recomputes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any

import numpy as np

from .cost import estimate_bytes, estimate_flops, estimate_seconds
from .graph import template_nodes
from .steps import (
    AllReduceStartStep,
    AllReduceWaitStep,
    CommitStep,
    CommStep,
    ExternStep,
    KernelStep,
    Meta,
    PrimitiveStep,
    RandStep,
    SourceStep,
    Step,
)


@dataclass(frozen=True)
class Schedule:
    # step indices in the order a sequential run takes them: the values bound before the run
    # (inputs, state, constants: the program binds them first), then the rest in plan order
    order: tuple[int, ...]
    metas: Mapping[int, Meta]  # every buffer's (shape, dtype), a kernel's outputs included
    producer: Mapping[int, int]  # buffer -> the step writing it
    needed: frozenset[int]  # buffers that outlive a run: written back, returned, graph outputs
    frees: tuple[tuple[int, ...], ...]  # per step: buffers dead after it (sequential order)
    readers: Mapping[int, int]  # buffer -> how many steps read it
    consumers: tuple[tuple[int, ...], ...]  # per step: the steps that wait for it
    in_degree: tuple[int, ...]  # per step: how many steps it waits for
    inplace: Mapping[int, int]  # step -> argument whose storage it reuses (sequential order)
    inplace_concurrent: Mapping[int, int]  # the subset safe in any order the DAG allows
    broadcast_only: frozenset[int]  # expands whose readers broadcast their source instead
    flops: tuple[int, ...]  # per step
    bytes: tuple[int, ...]  # per step
    cost: tuple[float, ...]  # per step: estimated seconds on one core
    critical_path: tuple[float, ...]  # per step: estimated seconds from its start to the end
    priority: tuple[int, ...]  # per step: rank by critical path (longest first), then order
    parallelism: float  # sum of step costs / the longest path: how many cores could help
    peak_memory: int  # peak bytes live in a sequential run, inputs, state and constants too
    peak_allocated: int  # as peak_memory, only what the run allocates (tracemalloc's view)
    devices: tuple[str, ...]  # per step
    names: tuple[str, ...]  # per step, as errors name it: "step 12: %40 = matmul"

    @property
    def critical_length(self) -> float:
        """Estimated seconds of the longest dependency chain."""
        return max(self.critical_path, default=0.0)


def schedule_state(schedule: Schedule) -> dict[str, Any]:
    """``schedule``'s fields as plain data (its read-only mappings as dicts), for a kept plan
    (planner.plan_cache): loading it is cheaper than ``compute`` (gpt: 11 ms)."""
    return {f.name: dict(v) if isinstance(v, MappingProxyType) else v
            for f in fields(schedule) for v in [getattr(schedule, f.name)]}


def schedule_from_state(state: dict[str, Any]) -> Schedule:
    """The Schedule ``schedule_state`` described."""
    return Schedule(**{name: MappingProxyType(v) if isinstance(v, dict) else v
                       for name, v in state.items()})


def needed_buffers(steps: list[Step], writes: list[tuple[int, int]], returns: Any,
                   graph_outputs: Any) -> frozenset[int]:
    """Buffers that outlive the run: written state, returned values and graph outputs."""
    needed = {b for _, b in writes if b >= 0}
    needed.update(template_nodes(returns))
    needed.update(graph_outputs)
    return frozenset(needed)


def compute(steps: list[Step], needed: frozenset[int]) -> Schedule:
    """The schedule of ``steps`` (in a valid order: every buffer is written before it is read)
    whose buffers ``needed`` outlive a run."""
    metas: dict[int, Meta] = {}
    producer: dict[int, int] = {}
    for i, s in enumerate(steps):
        for v, meta in zip(s.outputs, s.out_metas()):
            metas[v], producer[v] = meta, i
    frees = _frees(steps, needed)
    readers: dict[int, int] = {}
    for s in steps:
        for v in set(s.buffers):
            readers[v] = readers.get(v, 0) + 1
    order = ([i for i, s in enumerate(steps) if isinstance(s, SourceStep) and s.bound]
             + [i for i, s in enumerate(steps) if not (isinstance(s, SourceStep) and s.bound)])
    deps = _dependencies(steps, producer)
    consumers: list[list[int]] = [[] for _ in steps]
    for j, d in enumerate(deps):
        for i in d:
            consumers[i].append(j)
    fresh = _fresh_buffers(steps)
    roots = _storage_roots(steps, fresh)
    inplace = _inplace(steps, metas, frees, needed, fresh, roots)
    inplace_concurrent = _inplace_concurrent(steps, inplace, roots, _ancestors(deps, order))
    flops = tuple(estimate_flops(s, metas) for s in steps)
    nbytes = tuple(estimate_bytes(s, metas) for s in steps)
    cost = tuple(s.seconds() if isinstance(s, AllReduceStartStep)
                 else estimate_seconds(f, b, isinstance(s, ExternStep))
                 for s, f, b in zip(steps, flops, nbytes))
    critical = longest_paths(order, consumers, cost)
    ranked = sorted(range(len(steps)), key=lambda i: (-critical[i], i))
    priority = [0] * len(steps)
    for rank, i in enumerate(ranked):
        priority[i] = rank
    longest = max(critical, default=0.0)
    peak, peak_alloc = _memory_walk(steps, frees, inplace)
    return Schedule(
        order=tuple(order), metas=MappingProxyType(metas),
        producer=MappingProxyType(producer), needed=needed, frees=frees,
        readers=MappingProxyType(readers), consumers=tuple(tuple(c) for c in consumers),
        in_degree=tuple(len(d) for d in deps), inplace=MappingProxyType(inplace),
        inplace_concurrent=MappingProxyType(inplace_concurrent),
        broadcast_only=_broadcast_only(steps, metas, needed), flops=flops, bytes=nbytes,
        cost=cost, critical_path=tuple(critical), priority=tuple(priority),
        parallelism=sum(cost) / longest if longest else 1.0, peak_memory=peak,
        peak_allocated=peak_alloc, devices=tuple(s.device for s in steps),
        names=tuple(f"step {i}: %{s.out} = {s.op}" for i, s in enumerate(steps)))


def longest_paths(order: list[int] | tuple[int, ...], consumers: Any,
                  cost: list[float] | tuple[float, ...]) -> list[float]:
    """Per step, the longest ``cost``-weighted chain from its start to the end of the DAG
    (``order`` topological, ``consumers[i]`` the steps waiting for step i)."""
    path = [0.0] * len(cost)
    for i in reversed(order):
        path[i] = cost[i] + max((path[j] for j in consumers[i]), default=0.0)
    return path


def _frees(steps: list[Step], needed: frozenset[int]) -> tuple[tuple[int, ...], ...]:
    """Per step, the buffers no later step reads and no caller needs (an output nothing reads
    dies at once; a value bound before the run, once its last reader is done)."""
    last: dict[int, int] = {}
    for i, s in enumerate(steps):
        for v in s.buffers:
            last[v] = i
    frees: list[list[int]] = [[] for _ in steps]
    for v, i in last.items():
        if v not in needed:
            frees[i].append(v)
    for i, s in enumerate(steps):
        if isinstance(s, SourceStep) and s.bound:
            continue
        frees[i].extend(v for v in s.outputs if v not in last and v not in needed)
    return tuple(tuple(f) for f in frees)


def _dependencies(steps: list[Step], producer: dict[int, int]) -> list[list[int]]:
    """Per step, the steps it waits for: the producers of what it reads; the previous draw
    from the same generator (draws keep eager mode's order); the previous communication step
    that starts a collective, if it starts one (every rank starts its collectives in plan
    order, as MPI matches them by order; a wait free of the chain runs, and so drives MPI's
    progress, as soon as its start is done); and
    every earlier value check
    of a buffer it reads, checks in plan order among themselves (a bad value raises the
    check's error, the one eager mode raises, before any step can use it)."""
    deps: list[list[int]] = []
    last_draw: dict[int, int] = {}
    checked: dict[int, list[int]] = {}  # buffer -> the checks of it so far
    last_check: int | None = None
    last_comm: int | None = None
    for j, s in enumerate(steps):
        d = {producer[v] for v in s.buffers}
        for v in s.buffers:
            d.update(checked.get(v, ()))
        if isinstance(s, RandStep):
            if s.generator in last_draw:
                d.add(last_draw[s.generator])
            last_draw[s.generator] = j
        if isinstance(s, CommStep) and s.starts:
            if last_comm is not None:
                d.add(last_comm)
            last_comm = j
        if isinstance(s, PrimitiveStep) and s.prim.check:
            if last_check is not None:
                d.add(last_check)
            last_check = j
            for v in s.buffers:
                checked.setdefault(v, []).append(j)
        deps.append(sorted(d))
    return deps


def _ancestors(deps: list[list[int]], order: list[int]) -> list[int]:
    """Per step, the set of steps it transitively waits for, as a bit set."""
    found = [0] * len(deps)
    for j in order:
        for i in deps[j]:
            found[j] |= found[i] | (1 << i)
    return found


# --- in-place reuse ---------------------------------------------------------------------------


def _fresh_buffers(steps: list[Step]) -> set[int]:
    """Buffers computed into new memory by a call known to allocate (elementwise primitives,
    extern calls, kernels): no other buffer shares their storage unless it is a view of them."""
    fresh: set[int] = set()
    for s in steps:
        if isinstance(s, (KernelStep, AllReduceStartStep)):  # a start packs a new array
            fresh.update(s.outputs)
        elif isinstance(s, ExternStep) or (isinstance(s, PrimitiveStep)
                                           and s.prim.elementwise):
            fresh.add(s.out)
    return fresh


def _storage_roots(steps: list[Step], fresh: set[int]) -> dict[int, set[int]]:
    """Per buffer, the fresh buffers whose storage it may share: itself if fresh, else any
    its step read (a view, or an op not known to copy)."""
    roots: dict[int, set[int]] = {}
    for s in steps:
        for v in s.outputs:
            roots[v] = {v} if v in fresh else set().union(
                *(roots.get(a, set()) for a in s.buffers))
    return roots


def _inplace(steps: list[Step], metas: dict[int, Meta], frees: tuple[tuple[int, ...], ...],
             needed: frozenset[int], fresh: set[int], roots: dict[int, set[int]]
             ) -> dict[int, int]:
    """Steps that may write into an argument's storage when the steps run in order: an
    elementwise ufunc step, an argument that is fresh, dead after this step (its views too),
    of the result's shape and dtype."""
    released = {v: i for i, f in enumerate(frees) for v in f}
    end: dict[int, float] = {}  # fresh buffer -> last step its storage is reachable after
    for v, rs in roots.items():
        last = float("inf") if v in needed or v not in released else released[v]
        for r in rs:
            end[r] = max(end.get(r, -1), last)
    found: dict[int, int] = {}
    for i, s in enumerate(steps):
        if s.device != "cpu" or not s.shape or s.ufunc is None:
            continue
        for x in s.buffers:
            if x in fresh and end.get(x) == i and metas[x] == (s.shape, s.dtype.np):
                found[i] = x
                break
    return found


def _inplace_concurrent(steps: list[Step], inplace: dict[int, int], roots: dict[int, set[int]],
                        ancestors: list[int]) -> dict[int, int]:
    """The in-place steps that stay safe when steps run in any order the DAG allows: every
    other step reading the reused storage (through the buffer or a value that may share it)
    is one the in-place step transitively waits for."""
    reading: dict[int, set[int]] = {}  # fresh buffer -> steps that may read its storage
    for j, s in enumerate(steps):
        for v in s.buffers:
            for r in roots.get(v, ()):
                reading.setdefault(r, set()).add(j)
    return {i: x for i, x in inplace.items()
            if all(j == i or ancestors[i] >> j & 1 for j in reading.get(x, ()))}


# --- expands no program makes -----------------------------------------------------------------


def _broadcast_only(steps: list[Step], metas: dict[int, Meta],
                    needed: frozenset[int]) -> frozenset[int]:
    """Expands whose every reader is a ufunc step that gets its own shape without them (all
    such expands it reads dropped at once: two expands feeding one add must not both go if
    their sources alone broadcast to less)."""
    readers: dict[int, list[Step]] = {}
    for s in steps:
        for v in dict.fromkeys(s.buffers):
            readers.setdefault(v, []).append(s)
    source: dict[int, tuple[int, ...]] = {
        s.out: metas[s.args[0][1]][0] for s in steps
        if s.op == "expand" and s.args[0][0] == "buf" and s.out not in needed}
    found = set(source)
    changed = True
    while changed:  # drop expands a reader needs, until every remaining one is safe
        changed = False
        for v in sorted(found):
            if not all(_broadcasts_to(r, found, source, metas) for r in readers.get(v, [])):
                found.discard(v)
                changed = True
    return frozenset(found)


def _broadcasts_to(reader: Step, dropped: set[int], source: dict[int, tuple[int, ...]],
                   metas: dict[int, Meta]) -> bool:
    """Whether the ufunc step reader, given the sources of the dropped expands, has its
    planned shape."""
    if reader.ufunc is None:
        return False
    shapes = [source[u] if u in dropped else metas[u][0] for u in reader.buffers]
    try:
        return tuple(np.broadcast_shapes(*shapes)) == tuple(reader.shape)
    except ValueError:
        return False


# --- memory -----------------------------------------------------------------------------------


def _memory_walk(steps: list[Step], frees: tuple[tuple[int, ...], ...],
                 inplace: dict[int, int]) -> tuple[int, int]:
    """(peak of all live bytes, peak of bytes the run allocated), step by step, as the
    sequential program runs: a buffer dies after its last reader; a view (reshape, permute,
    expand, basic indexing) allocates nothing and keeps its base's memory alive as long as it
    lives; an elementwise step that writes into a dying argument allocates nothing; each
    kernel output is its own allocation. Temporaries inside a primitive are not counted."""
    by_out = {v: s for s in steps for v in s.outputs}
    storage_of: dict[int, set[int]] = {}  # buffer -> the storages it keeps alive
    users: dict[int, int] = {}  # storage -> how many live buffers keep it
    size: dict[int, tuple[int, bool]] = {}  # storage -> (bytes, allocated by the run)
    live = allocated = peak = peak_alloc = 0
    for i, s in enumerate(steps):
        for k, (o, nbytes) in enumerate(zip(s.outputs, s.out_allocations())):
            shared = _shared_storage(s, k, inplace.get(i), storage_of)
            if shared is None:
                size[o] = (nbytes, not isinstance(s, SourceStep))
                shared = {o}
                live += nbytes
                allocated += nbytes if size[o][1] else 0
            storage_of[o] = shared
            for r in shared:
                users[r] = users.get(r, 0) + 1
        copies = _kernel_input_copies(s, by_out)
        peak, peak_alloc = max(peak, live + copies), max(peak_alloc, allocated + copies)
        for buf in frees[i]:
            for r in storage_of.pop(buf, ()):
                users[r] -= 1
                if not users[r]:
                    nbytes, counted = size.pop(r)
                    live -= nbytes
                    allocated -= nbytes if counted else 0
    return peak, peak_alloc


def _nbytes(step: Step) -> int:
    return int(np.prod(step.shape, dtype=np.int64)) * step.dtype.np.itemsize


def _shared_storage(step: Step, k: int, inplace: int | None,
                    storage_of: dict[int, set[int]]) -> set[int] | None:
    """The storages a step's output ``k`` lives in, when it allocates none of its own."""
    if inplace is not None:
        return set(storage_of.get(inplace, ()))
    if isinstance(step, CommitStep):  # runs at write-back in the state's own storage
        return set(storage_of.get(step.targets[k], ()))
    if step.is_view or isinstance(step, AllReduceWaitStep):  # the wait: views of its bucket
        return set(storage_of.get(step.args[0][1], ()))
    return None


def _kernel_input_copies(step: Step, by_out: dict[int, Step]) -> int:
    """Bytes a kernel step copies while it runs: a plan's program makes each argument
    C-contiguous, which copies a transposed, broadcast or sliced view."""
    if not isinstance(step, KernelStep):
        return 0
    return sum(_nbytes(src) for src in (by_out[v] for v in step.buffers)
               if src.is_view and src.op != "reshape")
