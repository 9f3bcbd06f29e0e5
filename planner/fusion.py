"""Fusion: segments of a plan become kernels of the codegen IR (one pass over memory each).

A segment has a domain (a shape). Elementwise steps of that shape join it (their primitive
has a kernel-IR lowering); so does a sum/amax/mean over the domain's trailing axes (its
prologue is the segment so far), and after it the elementwise steps of the row shape (per
row values, e.g. log of a sum) or of the domain shape (per element values reading row values
in their keepdim shape, e.g. x - max). A step joins only if everything else it reads is
computed before the segment's kernel runs (where its first member was), which keeps the plan
acyclic. Arguments from outside become kernel inputs read with broadcast strides; values used
after the segment become kernel outputs. Matmul (BLAS through numpy), indexing and views stay
steps of the interpreter.

A kernel is device-independent IR over its segment's own domain, on the device every member
step shares (steps on two devices never share a kernel). How a launch cuts the domain (rows
for CPU threads, blocks on a GPU) is the renderer's choice (``codegen.launch``), and a
kernel's source is rendered only when ``plan.kernels`` is asked for it (``KernelInfo``).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from codegen import ir as kir
from codegen.builder import KernelBuilder
from runtime.ops.registry import REGISTRY

from .graph import template_nodes
from .plan import Plan
from .remat import RECOMPUTE
from .steps import (
    CommitStep,
    KernelInfo,
    KernelStep,
    PrimitiveStep,
    SourceStep,
    Step,
    primitive_step,
)

# Below MIN_ELEMENTS a segment needs MIN_STEPS_WHEN_SMALL steps to become a kernel. A plan's
# program calls a kernel for about what one numpy call costs (measured on mlp_small: 0.064 ms
# a step with 2, 0.071 with 3, 0.076 with 6), so every segment of two steps pays.
MIN_ELEMENTS = 1 << 15
MIN_STEPS_WHEN_SMALL = 2
# ops whose lone step of MIN_ELEMENTS or more is a kernel of its own, where numpy is slow: a
# ReLU's backward ``where(mask, g, 0.0)`` between two products (numpy multiplies by the mask
# and scans for the NaN an infinity would make: 105 us over (128, 1024) float32 in partial,
# 24 as a kernel)
LONE_KERNELS = frozenset({"where"})
# ops rounded once (the kernel IR's Fma), whose lone step of any size is a kernel: numpy has no
# fused multiply-add (the step would call out to the runtime's), and a kernel of an update
# runs inside a native run and writes the parameter in place at write-back, as the mul and
# sub an SGD update was captured as before did
FMA_KERNELS = frozenset({"add_scaled", "sub_scaled", "addcmul", "lerp", "lerp_tensor"})
# Horizontal fusion of one-element segments stops at this many steps: such siblings share
# no pass over memory, and the gpt workload's 28 Adam step counters (a dozen scalar steps
# each) made one kernel of 84 outputs that ptxas compiled to 255 registers and 320 bytes of
# spills on sm_80; 64 steps stay in registers
MAX_SCALAR_SIBLING_STEPS = 64
# a kernel stores bfloat16 and computes it as float32 (kir.STORAGE_ONLY)
_IR_DTYPES = frozenset(kir.STORAGE_DTYPES)
_BF16_SCALAR = np.dtype("bfloat16").type
# where a parameter update may run in place at write-back (executable.Commit: numpy arrays)
COMMIT_DEVICES = ("cpu",)
# a kernel commits in place only when its outputs hold at least this many bytes, where the
# plan runs no native runs (planner.native, which run a commit inside the run, in place, at
# no cost: there, any size): below it, the write-back's bookkeeping for a deferred kernel (a
# few us) costs more than the fresh outputs and copies it saves (mlp_small's 64 x 64 updates
# ran 20% more instructions with them deferred; its last layer's two single-output commits,
# 2.5 KiB, cost 15 us a step)
MIN_COMMIT_BYTES = 1 << 16
# the most bytes a value computed from sources alone may hold to be hoisted before the other
# steps (``hoist_scalars``)
HOIST_MAX_BYTES = 64


@dataclass
class Segment:
    shape: tuple[int, ...]  # the kernel's domain
    device: str  # every member's: a kernel runs on one device
    steps: list[PrimitiveStep] = field(default_factory=list)
    n_reduce: int = 0  # trailing domain axes its reductions reduce
    reduced: set[int] = field(default_factory=set)  # members that hold one value per row
    # members reduced over the outer axes too (kernel outputs with ``accumulate``): no member
    # may read them, as they are complete only when every row is done
    accumulated: dict[int, str] = field(default_factory=dict)
    inner: int | None = None  # inner axes, fixed once a member accumulates over the outer ones
    # a reduction over axes that are neither trailing nor leading opens a segment over its
    # source with the axes permuted (kept axes, then reduced ones): domain axis i is the
    # source's axis perm[i]. Only row steps over its row values may join such a segment.
    perm: tuple[int, ...] | None = None

    @property
    def first(self) -> int:
        return self.steps[0].out

    @property
    def n_inner(self) -> int:
        """Trailing axes inside a kernel row (``Kernel.outer_shape`` splits the rest)."""
        return self.n_reduce or self.inner or min(1, len(self.shape))

    def row_shape(self, keepdim: bool) -> tuple[int, ...]:
        outer = self.shape[:len(self.shape) - self.n_reduce]
        if not keepdim:
            return outer
        if self.perm is None:
            return outer + (1,) * self.n_reduce
        keep = [1] * len(self.shape)  # the source's axis order, its reduced axes of size one
        for axis, extent in zip(self.perm, outer):
            keep[axis] = extent
        return tuple(keep)


def _fusible(step: PrimitiveStep, shapes: dict[int, tuple[int, ...]],
             dtypes: dict[int, str]) -> bool:
    prim = REGISTRY.get(step.name)
    if prim is None or prim.lower is None:
        return False
    if step.dtype.name not in _IR_DTYPES or prim.lower_dtypes is not None \
            and kir.compute_dtype(step.dtype.name) not in prim.lower_dtypes:
        return False
    for kind, v in step.args:
        if kind == "buf":
            if dtypes[v] not in _IR_DTYPES or not _broadcasts(shapes[v], step.shape):
                return False
        elif not isinstance(v, (bool, int, float)):
            return False
    return True


def _broadcasts(shape: tuple[int, ...], domain: tuple[int, ...]) -> bool:
    if len(shape) > len(domain):
        return False
    return all(s in (1, d) for s, d in zip(reversed(shape), reversed(domain)))


def _strides(shape: tuple[int, ...], domain: tuple[int, ...]) -> tuple[int, ...]:
    """Element strides of a C-contiguous array of ``shape`` read over ``domain``."""
    strides = [0] * len(domain)
    step = 1
    lead = len(domain) - len(shape)
    for i in range(len(shape) - 1, -1, -1):
        if shape[i] != 1:
            strides[lead + i] = step
        step *= shape[i]
    return tuple(strides)


# plan op -> kernel IR reduce op (a Reduce's, or an accumulated Output's)
REDUCTIONS = {"sum": "sum", "amax": "max", "mean": "sum"}


def segments(plan: Plan) -> list[Segment]:
    """Group the plan's steps into segments (see the module docstring): elementwise chains
    over one domain, a reduction over the domain's trailing axes with its elementwise
    prologue, and the elementwise steps after it, per row or per element (softmax,
    layer_norm: one kernel instead of a pass per op). Segments too small to pay for a kernel
    call are dropped, and the rest regrouped without them, so no kernel ever reads a value
    that a dropped segment's step would compute after it."""
    grouped = [s for s in _group(plan, None) if len(s.steps) > 1 or _lone_kernel(s)]
    # a lone step is here only where _lone_kernel found it worth a kernel
    worth = [s for s in grouped if len(s.steps) == 1 or math.prod(s.shape) >= MIN_ELEMENTS
             or len(s.steps) >= MIN_STEPS_WHEN_SMALL]
    if len(worth) == len(grouped):
        # only lone steps dropped: no step joined them, so grouping again without them
        # would give the same segments
        return worth
    allowed = {step.out for seg in worth for step in seg.steps}
    return [s for s in _group(plan, allowed) if len(s.steps) > 1 or _lone_kernel(s)]


def _lone_kernel(seg: Segment) -> bool:
    """Whether a segment of one step is a kernel: FMA_KERNELS at any size; LONE_KERNELS and a
    cast to bfloat16 from MIN_ELEMENTS (ml_dtypes converts an element at a time, 114 us for a
    256 x 512 float32 weight autocast casts each step, where a kernel's vector of integer ops
    rounds alike)."""
    if len(seg.steps) != 1 or seg.n_reduce:
        return False
    step = seg.steps[0]
    if step.name in FMA_KERNELS:  # at any size
        return True
    slow = step.name in LONE_KERNELS or (
        step.name == "cast" and step.dtype.name in kir.STORAGE_ONLY)
    return slow and math.prod(seg.shape) >= MIN_ELEMENTS


def _shapes_dtypes(plan: Plan) -> tuple[dict[int, tuple[int, ...]], dict[int, str]]:
    """Each buffer's shape and dtype name, from the plan's schedule."""
    metas = plan.schedule.metas
    return {v: m[0] for v, m in metas.items()}, {v: m[1].name for v, m in metas.items()}


def _group(plan: Plan, allowed: set[int] | None) -> list[Segment]:
    shapes, dtypes = _shapes_dtypes(plan)
    # in the environment before any step runs
    ready = {s.out for s in plan.steps if isinstance(s, SourceStep) and s.bound}
    # the parameters the plan reads and writes back (tensor slots), by buffer, with shapes
    written = {slot for slot, _ in plan.writes}
    params = {b: shapes[b] for slot, b in plan.reads
              if slot in written and plan.slots[slot].get("kind") == "tensor"}
    member: dict[int, Segment] = {}
    found: list[Segment] = []
    for step in plan.steps:
        if not isinstance(step, PrimitiveStep) or (allowed is not None
                                                   and step.out not in allowed):
            continue
        target = None
        if step.op == "mean" and not _count(step, shapes):
            continue  # a mean of nothing: eager's nan (a kernel's scaled empty sum is 0)
        if step.op in REDUCTIONS:
            target = _join_reduction(step, member, shapes, ready)
            if target is None:
                target = _start_reduction(step, shapes)
                if target is not None:
                    found.append(target)
        elif step.op == "reshape":
            target = _join_row_view(step, member, shapes, ready)
        elif _fusible(step, shapes, dtypes):
            target = _join_elementwise(step, member, shapes, ready)
            if target is None:
                target = _join_sibling(step, found, shapes, ready, params)
            if target is None:
                target = Segment(step.shape, step.device)
                found.append(target)
        if target is None:
            continue
        target.steps.append(step)
        member[step.out] = target
    return _apart(found, ready)


def _apart(found: list[Segment], ready: set[int]) -> list[Segment]:
    """The elementwise segments of the update phase (after the backward), pooled by domain, as
    their independent parts (``_parts``), each a kernel run where its first member was. The
    updates of parameters of one shape are then one kernel each, compiled once
    (codegen.llvm.distinct), where one kernel of them all is as much code as their count:
    gpt's 14 width-128 vectors (norms' weights and biases, projections' biases), clipped and
    updated through shared scalars, made a kernel of 42 outputs; apart (74 kernels, not 59,
    42 functions, not 46) and with codegen.llvm.interleave, its module is 83 KB of object
    code instead of 129, 1.0 s of LLVM CPU time instead of 1.5. A part must read every other
    value from a step or kernel that runs before it: where one of a pool's parts does not, or
    one would be larger than any of its segments, the pool's segments are split one by one
    instead, and where one of those parts does not either, the pool stays as it was
    grouped."""
    pools: dict[tuple[tuple[int, ...], str], list[Segment]] = {}
    for seg in found:
        if not (seg.n_reduce or seg.accumulated or seg.perm is not None
                or seg.inner is not None or math.prod(seg.shape) <= 1
                or any(m.phase != "update" for m in seg.steps)):
            pools.setdefault((seg.shape, seg.device), []).append(seg)
    # per pool, from the finest: parts across its segments, parts of each, its segments
    levels = {key: [_parts(segs), [p for seg in segs for p in _parts([seg])],
                    segs] for key, segs in pools.items()}
    # parts across segments only where none outgrows the pool's largest segment (a value the
    # first step's capture computes once for every parameter, its moments' zeros, joins them)
    level = {key: 0 if max(len(p.steps) for p in levels[key][0])
             <= max(len(seg.steps) for seg in segs) else 1 for key, segs in pools.items()}
    pooled = {id(seg) for segs in pools.values() for seg in segs}
    rest = [(None, seg) for seg in found if id(seg) not in pooled]
    while True:
        now = rest + [(key, part) for key in pools for part in levels[key][level[key]]]
        runs_at = {m.out: (n, part.first) for n, (_, part) in enumerate(now)
                   for m in part.steps}
        late: set[Any] = set()  # pools of parts that read a value too late, or compute it
        for n, (key, part) in enumerate(now):
            for u in (u for m in part.steps for u in m.buffers):
                at = runs_at.get(u, (None, None if u in ready else u))
                if at[0] != n and at[1] is not None and at[1] >= part.first:
                    late.update((key, now[at[0]][0] if at[0] is not None else None))
        late = {key for key in late if key is not None and level[key] < 2}
        if not late:
            return sorted((part for _, part in now), key=lambda seg: seg.first)
        for key in late:
            level[key] += 1


def _parts(segs: list[Segment]) -> list[Segment]:
    """Elementwise segments of one domain and device as their members joined by the values
    they compute: siblings that shared only what they read (a learning rate, a clipping
    coefficient) fall apart, and the pieces of one parameter's update that two segments held
    come together."""
    steps = sorted((m for seg in segs for m in seg.steps), key=lambda m: m.out)
    root = list(range(len(steps)))

    def find(i: int) -> int:
        while root[i] != i:
            root[i] = root[root[i]]
            i = root[i]
        return i

    made = {m.out: i for i, m in enumerate(steps)}
    for i, m in enumerate(steps):
        for u in m.buffers:
            if u in made:
                root[find(i)] = find(made[u])
    parts: dict[int, Segment] = {}
    for i, m in enumerate(steps):
        parts.setdefault(find(i), Segment(segs[0].shape, segs[0].device)).steps.append(m)
    return list(parts.values())


def _precedes_or_inside(bufs: list[int], seg: Segment, member: dict[int, Segment],
                        ready: set[int]) -> bool:
    """Reading these keeps the plan acyclic: each is a source, a member that is not an
    accumulated output, or is computed by a step or a kernel that runs before the segment's
    kernel (which runs where its first member was). A segment's members only ever read what
    runs before it, so no kernel can wait on a later one."""
    for u in bufs:
        if u in ready:
            continue
        other = member.get(u)
        if other is seg:
            if u in seg.accumulated:
                return False
            continue
        if (other.first if other is not None else u) >= seg.first:
            return False
    return True


def _join_elementwise(step: PrimitiveStep, member: dict[int, Segment],
                      shapes: dict[int, tuple[int, ...]], ready: set[int]) -> Segment | None:
    """The largest segment holding one of the step's arguments that it can join: per element
    (the domain's shape), or per row (the row shape, reading only the segment's row values).
    A recomputed value (planner.remat) joins no forward kernel."""
    bufs = step.buffers
    best = None
    for v in bufs:
        seg = member.get(v)
        if seg is None or seg.device != step.device \
                or not _precedes_or_inside(bufs, seg, member, ready) \
                or (step.phase == RECOMPUTE and seg.steps[0].phase == "forward"):
            continue
        if step.shape == seg.shape and seg.perm is None:
            # per element: a row value may feed it only in its keepdim shape (broadcasts)
            ok = all(u not in seg.reduced or shapes[u] == seg.row_shape(True) for u in bufs
                     if member.get(u) is seg)
        else:
            # per row: a step of the row shape over the segment's row values only (the IR
            # reads every input per element, so a row input would make a per-element value)
            ok = _is_row_step(step, seg, member, bufs, shapes)
        if ok and (best is None or len(seg.steps) > len(best.steps)):
            best = seg
    if best is not None and step.shape != best.shape:
        best.reduced.add(step.out)
    return best


def _is_row_step(step: PrimitiveStep, seg: Segment, member: dict[int, Segment],
                 bufs: list[int], shapes: dict[int, tuple[int, ...]]) -> bool:
    """A step of the row shape reading only row values: the segment's, or outside values
    constant along the row (their shape broadcasts to the domain with ones over the row's
    axes, so the kernel reads them once per row)."""
    if seg.n_reduce == 0 or step.shape not in (seg.row_shape(True), seg.row_shape(False)):
        return False
    for u in bufs:
        if member.get(u) is seg:
            if u not in seg.reduced:
                return False
        elif seg.perm is not None or not _broadcasts(shapes[u], seg.shape) \
                or any(_strides(shapes[u], seg.shape)[len(seg.shape) - seg.n_reduce:]):
            return False
    return True


def _join_row_view(step: PrimitiveStep, member: dict[int, Segment],
                   shapes: dict[int, tuple[int, ...]], ready: set[int]) -> Segment | None:
    """A reshape between a row value's two shapes (keepdim or not) is the same value."""
    (kind, src), = step.args
    seg = member.get(src) if kind == "buf" else None
    if seg is None or seg.device != step.device or step.dtype.name not in _IR_DTYPES \
            or not _precedes_or_inside([src], seg, member, ready) \
            or not _is_row_step(step, seg, member, [src], shapes):
        return None
    seg.reduced.add(step.out)
    return seg


def _join_sibling(step: PrimitiveStep, found: list[Segment], shapes: dict[int, tuple[int, ...]],
                  ready: set[int], params: dict[int, tuple[int, ...]]) -> Segment | None:
    """Horizontal fusion: a step none of whose arguments is a segment's value joins a segment
    of its domain that runs after all of them, preferring one that already reads the same
    data (one pass over it instead of two), else the latest."""
    bufs = step.buffers
    # a backward step reading a computed value joins no forward kernel sideways: it would be
    # computed there and held until the backward (a recomputed value, planner.remat,
    # computed in the forward again; a GELU's derivative, read from a value it recomputes)
    computed = step.phase != "forward" and any(u not in ready for u in bufs)
    fits = [seg for seg in found if seg.shape == step.shape and seg.perm is None
            and seg.device == step.device
            and not (computed and seg.steps[0].phase == "forward")
            and (len(seg.steps) < MAX_SCALAR_SIBLING_STEPS or math.prod(seg.shape) > 1)
            and all(u in ready or u < seg.first for u in bufs)]
    if not fits:
        return None
    for seg in reversed(fits):  # one that reads the same array (not a scalar): one pass
        if any(u in m.buffers and math.prod(shapes[u]) > 1 for m in seg.steps for u in bufs):
            return seg
    if math.prod(step.shape) >= MIN_ELEMENTS:
        # siblings sharing no array save only a kernel call (0.1 us as a builtin); a large
        # parameter's update alone in its kernel commits in place (two_tower's four weight
        # updates, one kernel of 4 outputs, were each copied into their parameter at
        # write-back: 16 MB more memory traffic a step), so none joins another's
        fits = [seg for seg in fits if not _updates_parameter(seg.steps + [step], params)]
    for seg in reversed(fits):
        if any(u in m.buffers for m in seg.steps for u in bufs):
            return seg
    # a recomputed value sharing nothing joins only the last segment found: it would run
    # where the segment runs, earlier, and be held from there until read (a GELU derivative
    # recomputed for one layer's backward, hoisted into the kernel of another's, held three
    # arrays across it again)
    if not fits or (step.phase == RECOMPUTE and fits[-1] is not found[-1]):
        return None
    return fits[-1]


def _updates_parameter(steps: list[PrimitiveStep], params: dict[int, tuple[int, ...]]) -> bool:
    """Whether one of these steps reads a parameter (a tensor the plan reads and writes
    back) of its own full shape, elementwise: an update of that parameter."""
    return any(params.get(u) == step.shape for step in steps for u in step.buffers)


def _count(step: PrimitiveStep, shapes: dict[int, tuple[int, ...]]) -> int:
    """How many elements each output element of the reduction ``step`` reduces."""
    (_, src), = step.args
    return math.prod(shapes[src][a] for a in step.attrs["axes"])


def _reduction_ok(step: PrimitiveStep) -> bool:
    return step.dtype.name in ("float32", "float64", "bfloat16")


def _accumulates(step: PrimitiveStep) -> bool:
    """Whether the reduction may be an accumulated output: not of a storage-only dtype
    (bfloat16), whose partials would round at every combine; it runs as eager's step."""
    return step.dtype.name not in kir.STORAGE_ONLY


def _start_reduction(step: PrimitiveStep, shapes: dict[int, tuple[int, ...]]) -> Segment | None:
    """A reduction of an outside value opens a segment over that value's domain: over
    trailing axes a per-row value, over leading ones an accumulated output."""
    (kind, src), = step.args
    if kind != "buf" or not _reduction_ok(step):
        return None
    seg = Segment(shapes[src], step.device)
    nd, axes = len(seg.shape), tuple(step.attrs["axes"])
    if axes and axes == tuple(range(nd - len(axes), nd)):
        seg.n_reduce = len(axes)
        seg.reduced.add(step.out)
        return seg
    if axes and axes == tuple(range(nd - 1)) and _accumulates(step):
        seg.inner = 1  # all but the last: an elementwise kernel's rows
        seg.accumulated[step.out] = REDUCTIONS[step.op]
        return seg
    if axes and len(set(axes)) == len(axes) and all(0 <= a < nd for a in axes):
        seg.perm = tuple(a for a in range(nd) if a not in axes) + tuple(sorted(axes))
        seg.shape = tuple(shapes[src][a] for a in seg.perm)
        seg.n_reduce = len(axes)
        seg.reduced.add(step.out)
        return seg
    return None


def _join_reduction(step: PrimitiveStep, member: dict[int, Segment],
                    shapes: dict[int, tuple[int, ...]], ready: set[int]) -> Segment | None:
    """A sum/amax/mean of a segment's value joins it: over the trailing axes of a
    per-element value (a per-row value); over the outer axes of a per-element value or over
    all axes of a row value (an accumulated output); over every axis of a per-element value
    (both: a row reduction, then accumulated)."""
    (kind, src), = step.args
    seg = member.get(src) if kind == "buf" else None
    if seg is None or seg.device != step.device or not _reduction_ok(step) \
            or not _precedes_or_inside([src], seg, member, ready):
        return None
    nd, axes = len(seg.shape), tuple(step.attrs["axes"])
    k = len(axes)
    if not axes:
        return None
    if src in seg.reduced:  # a row value: reduce it over the outer axes
        if k != len(shapes[src]) or seg.n_reduce == nd or not _accumulates(step):
            return None
        seg.accumulated[step.out] = REDUCTIONS[step.op]
        return seg
    if shapes[src] != seg.shape or seg.perm is not None:
        return None
    if (axes == tuple(range(nd - k, nd)) and k < nd) or k == nd == seg.n_reduce \
            or k == nd == 1:
        # trailing axes: one value per row
        if seg.n_reduce not in (0, k) or (seg.n_reduce == 0 and seg.inner not in (None, k)):
            return None
        seg.n_reduce = k
        seg.reduced.add(step.out)
        return seg
    if not _accumulates(step):
        return None
    if axes == tuple(range(nd - seg.n_inner)) and seg.n_inner < nd:
        seg.inner = seg.n_inner  # the outer axes: accumulated per element
        seg.accumulated[step.out] = REDUCTIONS[step.op]
        return seg
    if k == nd and seg.n_reduce == 0 and seg.inner in (None, 1):
        seg.n_reduce = seg.inner = 1  # all axes: row sums, accumulated over the rows
        seg.accumulated[step.out] = REDUCTIONS[step.op]
        return seg
    if k == nd and seg.n_reduce > 0:
        seg.accumulated[step.out] = REDUCTIONS[step.op]
        return seg
    return None


@dataclass
class LoweredSegment:
    """A segment as a kernel: it reads plan buffers ``inputs`` and writes ``outputs`` (of plan
    shapes ``out_shapes``). The kernel writes a value only as finely as it varies
    (``kir.output_shape``): once per row if it is constant along the rows (an expand of a row
    value, a constant broadcast over the rows), once in all if it is also summed over the
    rows. ``views`` maps each member used after the kernel whose shape is finer than that to
    the buffer the kernel writes its value to (of the keepdim row shape, or ``()``); after the
    kernel the member is an expand (a numpy view) of that buffer."""

    kernel: kir.Kernel
    inputs: list[int]
    outputs: list[int]
    out_shapes: list[tuple[int, ...]]
    views: dict[int, int]


def lower_segment(seg: Segment, name: str, used_after: set[int], dtypes: dict[int, str],
                  shapes: dict[int, tuple[int, ...]], fresh: Iterator[int]) -> LoweredSegment:
    """The segment as a kernel; ``fresh`` gives unused buffer ids for the buffers of
    ``LoweredSegment.views`` that no member holds."""
    kb = KernelBuilder()
    inside: dict[int, int] = {}
    inputs: list[kir.Input] = []
    input_bufs: list[int] = []
    nd = len(seg.shape)
    for step in seg.steps:
        args = []
        for kind, v in step.args:
            if kind != "buf":
                args.append(("scalar", v, None))
                continue
            if v not in inside:
                input_bufs.append(v)
                inputs.append(kir.Input(f"in{len(inputs)}", dtypes[v], _strides(
                    shapes[v], seg.shape) if seg.perm is None else _permuted_strides(
                        shapes[v], seg.perm)))
                inside[v] = kb.load(len(inputs) - 1)
            args.append(("expr", inside[v], kir.compute_dtype(dtypes[v])))
        if step.op in REDUCTIONS:
            inside[step.out] = _lower_reduction(kb, seg, step, args[0][1], shapes,
                                                _varies(kb, seg, inputs))
            if step.dtype.name == "bfloat16":
                # eager rounds a bfloat16 sum's (mean's) float32 result once: so does the
                # kernel before its ops use it (addbmm's alpha * sum was 0.5 off eager's)
                inside[step.out] = kb.unary("round_bfloat16", inside[step.out], "float32")
        elif step.op == "reshape":  # between a row value's two shapes: the same value
            inside[step.out] = args[0][1]
        else:
            prim = REGISTRY[step.op]
            dtype = kir.compute_dtype(step.dtype.name)
            narrow = [dtypes[v] for kind, v in step.args if kind == "buf"
                      and dtypes[v] in kir.STORAGE_ONLY]
            if step.dtype.name in kir.STORAGE_ONLY or narrow and step.dtype.name == "bool":
                # a bfloat16 result, or a comparison of bfloat16: eager's numbers for them
                args = _bf16_operands(kb, step, args, kir.compute_dtype(
                    narrow[0] if step.dtype.name == "bool" else step.dtype.name))
            inside[step.out] = prim.lower(kb, args, step.attrs, dtype)  # type: ignore[misc]
            if step.dtype.name == "bfloat16":
                # eager rounds each bfloat16 op's float32 result (a cast's too): so does the
                # kernel, between its ops as at its stores (a bfloat16 tanh's gradient was
                # 3e-3 off eager mode's, and PyTorch's)
                inside[step.out] = kb.unary("round_bfloat16", inside[step.out], dtype)
    probe = kir.Kernel(name, seg.shape, seg.n_reduce, tuple(inputs), tuple(kb.exprs), ())
    # the buffer holding each (value, accumulate op) the kernel writes: a member of the
    # value's shape as the kernel writes it, or a fresh one
    held: dict[tuple[int, str | None], int] = {}
    for m in seg.steps:
        if m.out in seg.reduced and shapes[m.out] == seg.row_shape(True):
            held.setdefault((inside[m.out], None), m.out)
    written: dict[int, tuple[int, str | None, str, tuple[int, ...]]] = {}
    views: dict[int, int] = {}
    for m in (m.out for m in seg.steps if m.out in used_after):
        b, value, acc, shape = m, inside[m], seg.accumulated.get(m), shapes[m]
        grain = kir.output_shape(probe, kir.Output("", value, dtypes[m], acc))
        if math.prod(grain) < math.prod(shape):
            # constant along the axes the kernel does not write it over (a constant broadcast
            # over the rows, a column sum of per-row values): written once per row, or once
            shape = seg.row_shape(True) if acc is None else ()
            if (value, acc) not in held:
                held[value, acc] = next(fresh)
            b = views[m] = held[value, acc]
        written.setdefault(b, (value, acc, dtypes[m], shape))
    outputs = list(written)
    # the natural domain: how a launch cuts it (rows for CPU threads, blocks on a GPU) is the
    # renderer's choice (codegen.launch)
    kernel = kir.Kernel(
        name, seg.shape, seg.n_reduce, tuple(inputs), tuple(kb.exprs),
        tuple(kir.Output(f"out{i}", written[b][0], written[b][2], written[b][1])
              for i, b in enumerate(outputs)))
    assert kernel.inner_shape == seg.shape[nd - seg.n_inner:]
    kir.validate(kernel)
    return LoweredSegment(kernel, input_bufs, outputs, [written[b][3] for b in outputs], views)


def _bf16_operands(kb: KernelBuilder, step: PrimitiveStep, args: list[Any], dtype: str
                   ) -> list[Any]:
    """A bfloat16 step's operands as eager takes them (runtime.ops.dispatch._bf16_impl): a
    mul's or div's 0-d float operand of another dtype as its float32 value; another
    elementwise op's Python number rounded to bfloat16 first (0.3 is 0.30078125)."""
    if step.op in ("mul", "div"):
        return [("expr", kb.cast(a[1], dtype), dtype) if a[0] == "expr" and a[2] != dtype
                else a for a in args]
    if not REGISTRY[step.op].elementwise:
        return args
    out = []
    for a in args:
        if a[0] == "scalar" and type(a[1]) in (float, int):
            rounded = float(_BF16_SCALAR(a[1]))
            a = a if rounded == a[1] else ("scalar", rounded, None)  # an exact int stays
        out.append(a)
    return out


def _permuted_strides(shape: tuple[int, ...], perm: tuple[int, ...]) -> tuple[int, ...]:
    """Element strides of a C-contiguous array of ``shape`` read over its axes in ``perm``
    order (size-1 axes broadcast)."""
    natural = _strides(shape, shape)
    return tuple(natural[a] for a in perm)


def _varies(kb: KernelBuilder, seg: Segment, inputs: list[kir.Input]) -> Callable[[int], bool]:
    """Whether an expr the builder holds varies along the segment's rows (``kir.per_element``
    of the kernel built so far)."""
    def varies(i: int) -> bool:
        probe = kir.Kernel("probe", seg.shape, seg.n_reduce, tuple(inputs), tuple(kb.exprs), ())
        return kir.per_element(probe)[i]

    return varies


# reductions whose value over a row of one repeated value is that value
IDEMPOTENT_REDUCTIONS = frozenset({"max"})


def _reduce_row(kb: KernelBuilder, op: str, x: int, dtype: str, varies: Callable[[int], bool],
                nonempty: bool) -> int:
    """``kb.reduce(op, x, dtype)`` over a row, but the max of a value constant along a
    nonempty row is that value, and the max of where(c, a, b) with c constant along the row
    is where(c, max(a), max(b)) where a or b is also constant: one pass over the row fewer.
    SDPA's causal softmax zeroes the rows that are all -inf (where(max == -inf, 0, x)) before
    taking their max again: that second max was a pass of its own (gpt's two softmax kernels,
    (16, 4, 64, 64) each: 428 -> 340 us, best of 60 calls side by side)."""
    if op in IDEMPOTENT_REDUCTIONS and nonempty:
        expr = kb.exprs[x]
        if not varies(x):
            return x
        if isinstance(expr, kir.Where) and not varies(expr.cond) \
                and not (varies(expr.a) and varies(expr.b)):
            return kb.where(expr.cond, _reduce_row(kb, op, expr.a, dtype, varies, nonempty),
                            _reduce_row(kb, op, expr.b, dtype, varies, nonempty), expr.dtype)
    return kb.reduce(op, x, dtype)


def _lower_reduction(kb: KernelBuilder, seg: Segment, step: PrimitiveStep, x: int,
                     shapes: dict[int, tuple[int, ...]], varies: Callable[[int], bool]) -> int:
    """A reduction member: a Reduce over the rows for a per-row value (``_reduce_row``),
    then (accumulated members) the value the kernel reduces over the outer axes; a mean
    scaled by its count."""
    dtype = kir.compute_dtype(step.dtype.name)
    (_, src), = step.args
    nd, axes = len(seg.shape), tuple(step.attrs["axes"])
    if step.out not in seg.accumulated or (src not in seg.reduced and len(axes) == nd):
        nonempty = math.prod(seg.shape[nd - seg.n_reduce:]) > 0
        x = _reduce_row(kb, REDUCTIONS[step.op], x, dtype, varies, nonempty)  # over the row
    if step.op == "mean" and step.out in seg.accumulated:  # each element's share
        x = kb.binary("mul", x, kb.const(1.0 / _count(step, shapes), dtype), dtype)
    elif step.op == "mean":
        # a row's sum divided by its count, as eager's (numpy's) mean: once per row, and
        # sum * (1 / count) is an ulp off the quotient at times (a bfloat16 mean of 7, whose
        # float32 sum is exact, rounded apart from eager's at 8 of 1280 rows)
        x = kb.binary("div", x, kb.const(float(_count(step, shapes)), dtype), dtype)
    return x


def explain_fusion(plan: Plan) -> str:
    """Why each step of ``plan`` did or did not fuse: one line per compute step."""
    shapes, dtypes = _shapes_dtypes(plan)
    kept = {s.out: f"k{i}" for i, seg in enumerate(segments(plan)) for s in seg.steps}
    first_pass = {s.out: seg for seg in _group(plan, None) for s in seg.steps}
    lines = []
    for step in plan.steps:
        if not isinstance(step, PrimitiveStep):
            continue
        if step.out in kept:
            why = f"fused into {kept[step.out]}"
        elif step.out in first_pass and len(first_pass[step.out].steps) > 1:
            seg = first_pass[step.out]
            why = (f"not fused: its segment of {len(seg.steps)} steps over {list(seg.shape)} is "
                   f"too small for a kernel call (needs {MIN_ELEMENTS} elements or "
                   f"{MIN_STEPS_WHEN_SMALL} steps)")
        elif step.out in first_pass:
            why = "not fused: no neighbour to fuse with (its producers are not in a segment it "\
                  "can join: another shape, or a value computed after that segment began)"
        elif step.op in REDUCTIONS:
            why = ("not fused: a reduction fuses over a segment's row (trailing) axes, its "
                   "outer (leading) axes, or all axes, of a float value it can read")
        elif step.op == "reshape":
            why = "not fused: only a reshape between a row value's keepdim shapes fuses"
        elif REGISTRY.get(step.name) is None or REGISTRY[step.name].lower is None:
            why = f"not fused: {step.op} has no kernel-IR lowering (runs as a numpy call)"
        elif not _fusible(step, shapes, dtypes):
            why = "not fused: dtype, device or an argument's shape does not fit a kernel"
        else:
            why = "not fused"
        lines.append(f"%{step.out} {step.op} {list(step.shape)}: {why}")
    return "\n".join(lines)


def fuse(plan: Plan) -> Plan:
    """A plan whose elementwise segments are kernels (``KernelStep``, ``CommitStep``), whose
    adds after a matmul are the product's (``product_epilogues``) and whose matmuls may run
    as generated products (``Plan.products``, planner.products)."""
    found = segments(plan)
    if not found:
        steps, epilogues = product_epilogues(list(plan.steps), plan.schedule.needed)
        stats = dict(plan.stats)
        if epilogues:
            stats["product_epilogues"] = epilogues
        return Plan(steps, plan.writes, plan.returns, plan.slots, plan.graph, stats,
                    plan.device, plan.kernels, products=True)
    shapes, dtypes = _shapes_dtypes(plan)
    needed = plan.schedule.needed
    seg_of = {s.out: seg for seg in found for s in seg.steps}
    read_outside: set[int] = set()  # segment outputs that steps of other segments read
    for step in plan.steps:
        for v in step.buffers:
            if v in seg_of and seg_of.get(step.out) is not seg_of[v]:
                read_outside.add(v)
    used_after = read_outside | set(needed)
    facts = _CommitFacts.of(plan)
    # ids for row buffers no step of the plan holds (LoweredSegment.views)
    fresh = itertools.count(max(plan.graph.graph.get("next_id", 0),
                                max(s.out for s in plan.steps) + 1))
    steps: list[Step] = []
    infos: list[KernelInfo] = []
    placed: set[int] = set()
    for step in plan.steps:
        seg = seg_of.get(step.out)
        if seg is None:
            steps.append(step)  # steps are never changed: the fused plan shares them
            continue
        if id(seg) in placed:
            continue
        placed.add(id(seg))
        low = lower_segment(seg, f"k{len(infos)}", used_after, dtypes, shapes, fresh)
        kernel, ins, outs = low.kernel, low.inputs, low.outputs
        intos = _commit_inputs(plan, kernel, ins, outs, seg, read_outside, facts)
        if intos is not None:
            kernel = _with_intos(kernel, intos)
        infos.append(KernelInfo(kernel, seg.device))
        last = seg.steps[-1]
        fields = {"out": outs[0] if outs else last.out, "args": [("buf", b) for b in ins],
                  "kernel": kernel, "outs": outs, "fused": len(seg.steps),
                  "out_specs": [(kir.output_shape(kernel, o), o.dtype, shape)
                                for o, shape in zip(kernel.outputs, low.out_shapes)],
                  "shape": seg.shape, "dtype": last.dtype, "device": seg.device,
                  "phase": last.phase}
        steps.append(KernelStep(**fields) if intos is None
                     else CommitStep(commit=intos[0], **fields))
        by_out = {m.out: m for m in seg.steps}
        for view, row in low.views.items():
            m = by_out[view]
            steps.append(primitive_step("expand", out=view, args=[("buf", row)],
                                        attrs={"shape": m.shape}, shape=m.shape,
                                        dtype=m.dtype, device=m.device, phase=m.phase))
    steps = hoist_scalars(steps)
    steps, epilogues = product_epilogues(steps, plan.schedule.needed)
    stats = dict(plan.stats)
    stats["kernels"] = len(infos)
    stats["fused_steps"] = sum(len(s.steps) for s in found)
    if epilogues:
        stats["product_epilogues"] = epilogues
    return Plan(steps, plan.writes, plan.returns, plan.slots, plan.graph, stats, plan.device,
                infos, products=True)


def hoist_scalars(steps: list[Step]) -> list[Step]:
    """The steps with each unfused CPU elementwise step of a floating result of at most
    HOIST_MAX_BYTES computed from the plan's inputs, state and constants alone moved to just
    after them (a hyperparameter's cast, read by the update kernels): placed among the kernels
    and products, it cut the program's native run in two (planner.native), each part paying
    its own arguments' tests and fresh arrays; hoisted, it is computed once the sources are
    bound. Only such steps: they raise nothing whatever the values, so no step moves before a
    check that decides which error a call raises (a scatter by an index the check has not
    tested yet would raise numpy's error in place of PyTorch's)."""
    bound = {o for s in steps if isinstance(s, SourceStep) and s.bound for o in s.outputs}
    first: list[Step] = []  # the sources before the first computing step, the hoisted
    rest: list[Step] = []
    for s in steps:
        if (isinstance(s, SourceStep) and s.bound and not rest) or (
                isinstance(s, PrimitiveStep) and s.device == "cpu" and s.buffers
                and all(v in bound for v in s.buffers) and REGISTRY[s.name].elementwise
                and s.dtype.np.kind == "f"
                and int(np.prod(s.shape, dtype=np.int64)) * s.dtype.np.itemsize
                <= HOIST_MAX_BYTES):
            first.append(s)  # every bound source is bound before the program's first line
        else:
            rest.append(s)
    return first + rest


def product_epilogues(steps: list[Step], needed: frozenset[int]) -> tuple[list[Step], int]:
    """The steps with each add left unfused whose one operand is a CPU matmul's result that
    nothing else reads made one ``matmul_add`` step at the matmul's place (its product adds
    the other operand as it stores: codegen.gemm), where that operand exists by then and
    the add has the product's shape and dtype; and how many were made. A bias after a
    Linear, a gradient summed over the steps of an RNN: a pass over the result saved each."""
    producer: dict[int, int] = {}
    readers: dict[int, int] = {}
    dtypes: dict[int, str] = {}
    for i, s in enumerate(steps):
        for o in s.outputs:  # an input, state or constant is there before any step runs
            producer[o] = -1 if isinstance(s, SourceStep) and s.bound else i
            dtypes[o] = s.dtype.name
        if isinstance(s, KernelStep):
            dtypes.update((o, str(spec[1])) for o, spec in zip(s.outs, s.out_specs))
        for v in set(s.buffers):
            readers[v] = readers.get(v, 0) + 1
    merged: dict[int, Step] = {}
    dropped: set[int] = set()
    for i, s in enumerate(steps):
        if not (isinstance(s, PrimitiveStep) and s.name == "add" and s.device == "cpu"
                and len(s.args) == 2 and all(kind == "buf" for kind, _ in s.args)):
            continue
        for pos in (0, 1):
            product, addend = s.args[pos][1], s.args[1 - pos][1]
            j = producer.get(product)
            m = steps[j] if j is not None and j >= 0 else None
            if not (isinstance(m, PrimitiveStep) and m.name == "matmul" and m.device == "cpu"
                    and j not in merged and readers.get(product) == 1
                    and product not in needed and product != addend
                    and producer.get(addend, -1) < j and tuple(m.shape) == tuple(s.shape)
                    and m.dtype is s.dtype and dtypes.get(addend) == s.dtype.name
                    # bfloat16: eager rounds the product, then the sum (same values)
                    and s.dtype.name not in kir.STORAGE_ONLY):
                continue
            merged[j] = primitive_step(
                "matmul_add", out=s.out, args=[*m.args, ("buf", addend)], attrs={},
                shape=s.shape, dtype=s.dtype, device=s.device, phase=s.phase)
            dropped.add(i)
            break
    if not merged:
        return steps, 0
    return [merged.get(i, s) for i, s in enumerate(steps) if i not in dropped], len(merged)


@dataclass(frozen=True)
class _CommitFacts:
    """What ``_commit_inputs`` reads of the plan, gathered once per plan (each kernel's
    look through every step cost gpt's fusion 46 passes over its 1300 steps)."""

    returned: frozenset[int]
    written: dict[int, list[int]]  # buffer -> the state slots written from it
    reads: dict[int, int]  # state slot -> the buffer it is read into
    state: frozenset[int]  # the buffers of the tensor slots read

    @classmethod
    def of(cls, plan: Plan) -> _CommitFacts:
        written: dict[int, list[int]] = {}
        for slot, b in plan.writes:
            written.setdefault(b, []).append(slot)
        reads = plan.reads
        return cls(frozenset(template_nodes(plan.returns)), written, dict(reads),
                   frozenset(b for slot, b in reads
                             if plan.slots[slot].get("kind") == "tensor"))


def _commit_inputs(plan: Plan, kernel: kir.Kernel, ins: list[int], outs: list[int],
                   seg: Segment, read_outside: set[int], facts: _CommitFacts
                   ) -> tuple[int, ...] | None:
    """The inputs a kernel may update in place at write-back, one per output: a parameter
    update (with its optimizer's moments, say) whose every output nothing outside the kernel
    but the write of one state (a ``tensor`` slot) uses, computed elementwise from that state's own value (read
    by the plan). The kernel then runs when the replay commits, storing each output straight
    into its state: no second copy of any."""
    if not outs or kernel.n_reduce or seg.device not in COMMIT_DEVICES:
        return None
    if sum(math.prod(kir.output_shape(kernel, o)) * np.dtype(o.dtype).itemsize
           for o in kernel.outputs) < MIN_COMMIT_BYTES and not _native_runs():
        return None
    returned, written, reads = facts.returned, facts.written, facts.reads
    sources = []
    for out in outs:
        slots = written.get(out, [])
        if len(slots) != 1 or out in read_outside or out in returned \
                or plan.slots[slots[0]].get("kind") != "tensor":
            return None
        source = reads.get(slots[0])
        if source is None or ins.count(source) != 1:
            return None
        sources.append(source)
    if len(set(sources)) != len(sources):
        return None
    # by the time it runs, other commits may have updated their state: it must read no state's
    # storage but its own outputs', and each of those only as the input it overwrites
    if any(_storage_roots(plan, v) & facts.state for v in ins if v not in sources):
        return None
    intos = tuple(ins.index(source) for source in sources)
    try:
        kir.validate(_with_intos(kernel, intos))
    except kir.KernelIRError:
        return None  # e.g. a state is read broadcast
    return intos


def _native_runs() -> bool:
    """Whether CPU plans' programs make native runs here (planner.native)."""
    from codegen import pyentry

    from . import native

    return native.ENABLED and pyentry.available()


def _with_intos(kernel: kir.Kernel, intos: tuple[int, ...]) -> kir.Kernel:
    return dataclasses.replace(kernel, outputs=tuple(
        dataclasses.replace(out, into=into) for out, into in zip(kernel.outputs, intos)))


def _storage_roots(plan: Plan, v: int) -> set[int]:
    """The buffers whose storage ``v`` may share: itself, and what views lead back to."""
    producer = plan.schedule.producer
    roots, stack = set(), [v]
    while stack:
        u = stack.pop()
        roots.add(u)
        step = plan.steps[producer[u]]
        if step.is_view:
            stack.append(step.args[0][1])
    return roots
