"""Fusion: chains of elementwise steps of one shape become one kernel of the codegen IR.

A step joins the segment of one of its producers when it is elementwise (its primitive has a
kernel-IR lowering), has the segment's shape, and every other argument it reads was computed
before the segment began: since a plan's steps are in creation (topological) order, that rule
can never make a segment depend on itself. Arguments from outside a segment become kernel
inputs, read with broadcast strides; values used after the segment become kernel outputs.
Matmul, reductions, indexing and views stay steps of the interpreter (numpy calls BLAS).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from codegen import ir as kir
from runtime.ops.registry import REGISTRY

from .graph import template_nodes
from .plan import Plan, PlanStep

MIN_ELEMENTS = 1  # fuse at every size: one pass over memory beats several at any size
_IR_DTYPES = frozenset(kir.DTYPES)


class KernelBuilder:
    """Collects kernel-IR exprs for one segment; registry lowerings call its methods."""

    def __init__(self) -> None:
        self.exprs: list[kir.Expr] = []
        self._consts: dict[tuple[Any, str], int] = {}

    def _add(self, expr: kir.Expr) -> int:
        self.exprs.append(expr)
        return len(self.exprs) - 1

    def load(self, input_index: int) -> int:
        return self._add(kir.Load(input_index))

    def const(self, value: Any, dtype: str) -> int:
        if dtype == "bool":
            value = bool(value)
        elif dtype == "int64":
            value = int(value)
        else:
            value = float(value)
        key = (value, dtype)
        if key not in self._consts:
            self._consts[key] = self._add(kir.Const(value, dtype))
        return self._consts[key]

    def unary(self, op: str, x: int, dtype: str) -> int:
        return self._add(kir.Unary(op, x, dtype))

    def binary(self, op: str, a: int, b: int, dtype: str) -> int:
        return self._add(kir.Binary(op, a, b, dtype))

    def where(self, cond: int, a: int, b: int, dtype: str) -> int:
        return self._add(kir.Where(cond, a, b, dtype))

    def cast(self, x: int, dtype: str) -> int:
        return self._add(kir.Cast(x, dtype))


@dataclass
class Segment:
    shape: tuple[int, ...]
    steps: list[PlanStep] = field(default_factory=list)

    @property
    def first(self) -> int:
        return self.steps[0].out


@dataclass(frozen=True)
class KernelInfo:
    """What plan.kernels lists: one compiled kernel."""

    name: str
    device: str
    language: str
    source: str


def _fusible(step: PlanStep, shapes: dict[int, tuple[int, ...]],
             dtypes: dict[int, str]) -> bool:
    prim = REGISTRY.get(step.op)
    if prim is None or prim.lower is None or step.device != "cpu":
        return False
    if step.dtype.name not in _IR_DTYPES or math.prod(step.shape) < MIN_ELEMENTS:
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


def segments(plan: Plan) -> list[Segment]:
    """Group the plan's elementwise steps into segments (see the module docstring)."""
    shapes = {s.out: s.shape for s in plan.steps}
    dtypes = {s.out: s.dtype.name for s in plan.steps}
    member: dict[int, Segment] = {}
    found: list[Segment] = []
    for step in plan.steps:
        if not _fusible(step, shapes, dtypes):
            continue
        bufs = [v for kind, v in step.args if kind == "buf"]
        target = None
        for v in bufs:
            seg = member.get(v)
            if seg is None or seg.shape != step.shape:
                continue
            if all(u in member and member[u] is seg or u < seg.first for u in bufs):
                if target is None or len(seg.steps) > len(target.steps):
                    target = seg
        if target is None:
            target = Segment(step.shape)
            found.append(target)
        target.steps.append(step)
        member[step.out] = target
    return [s for s in found if len(s.steps) > 1]


def lower_segment(seg: Segment, name: str, used_after: set[int],
                  dtypes: dict[int, str], shapes: dict[int, tuple[int, ...]]
                  ) -> tuple[kir.Kernel, list[int], list[int]]:
    """The segment as a kernel; returns it with its input and output buffers."""
    kb = KernelBuilder()
    inside: dict[int, int] = {}
    inputs: list[kir.Input] = []
    input_bufs: list[int] = []
    for step in seg.steps:
        args = []
        for kind, v in step.args:
            if kind != "buf":
                args.append(("scalar", v, None))
                continue
            if v not in inside:
                input_bufs.append(v)
                inputs.append(kir.Input(f"in{len(inputs)}", dtypes[v],
                                        _strides(shapes[v], seg.shape)))
                inside[v] = kb.load(len(inputs) - 1)
            args.append(("expr", inside[v], dtypes[v]))
        prim = REGISTRY[step.op]
        inside[step.out] = prim.lower(kb, args, step.attrs, step.dtype.name)  # type: ignore[misc]
    outputs = [s.out for s in seg.steps if s.out in used_after]
    kernel = kir.Kernel(
        name, seg.shape, 0, tuple(inputs), tuple(kb.exprs),
        tuple(kir.Output(f"out{i}", inside[b], dtypes[b]) for i, b in enumerate(outputs)))
    kir.validate(kernel)
    return kernel, input_bufs, outputs


def fuse(plan: Plan) -> Plan:
    """A plan whose elementwise segments are kernels (``op == "kernel"`` steps)."""
    found = segments(plan)
    if not found:
        return plan
    shapes = {s.out: s.shape for s in plan.steps}
    dtypes = {s.out: s.dtype.name for s in plan.steps}
    needed = set(plan.graph.graph["outputs"]) | {b for _, b in plan.writes if b >= 0}
    needed |= set(template_nodes(plan.returns))
    seg_of = {s.out: seg for seg in found for s in seg.steps}
    used_after: set[int] = set(needed)
    for step in plan.steps:
        for kind, v in step.args:
            if kind == "buf" and v in seg_of and seg_of.get(step.out) is not seg_of[v]:
                used_after.add(v)
    steps: list[PlanStep] = []
    kernels: list[kir.Kernel] = []
    placed: set[int] = set()
    for step in plan.steps:
        seg = seg_of.get(step.out)
        if seg is None:
            steps.append(PlanStep(step.out, step.op, step.args, step.attrs, step.shape,
                                  step.dtype, step.device, step.phase))
            continue
        if id(seg) in placed:
            continue
        placed.add(id(seg))
        kernel, ins, outs = lower_segment(seg, f"k{len(kernels)}", used_after, dtypes, shapes)
        kernels.append(kernel)
        last = seg.steps[-1]
        steps.append(PlanStep(outs[0] if outs else last.out, "kernel",
                              [("buf", b) for b in ins],
                              {"kernel": kernel, "outs": outs, "fused": len(seg.steps),
                               "out_specs": [(kir.output_shape(kernel, o), o.dtype)
                                             for o in kernel.outputs]},
                              seg.shape, last.dtype, last.device, last.phase))
    fused = Plan(steps, plan.inputs, plan.reads, plan.consts, plan.rands, plan.writes,
                 plan.returns, plan.slots, plan.graph, dict(plan.stats), plan.device)
    _liveness(fused, needed)
    fused.stats["kernels"] = len(kernels)
    fused.stats["fused_steps"] = sum(len(s.steps) for s in found)
    fused.kernels = _kernel_infos(kernels)
    return fused


def _kernel_infos(kernels: list[kir.Kernel]) -> list[KernelInfo]:
    from codegen.llvm import render

    module = render(kernels)
    return [KernelInfo(k.name, "cpu", "llvm",
                       f"{module.get_global(k.name + '.body')}\n{module.get_global(k.name)}")
            for k in kernels]


def _liveness(plan: Plan, needed: set[int]) -> None:
    last_use: dict[int, int] = {}
    for i, step in enumerate(plan.steps):
        for kind, v in step.args:
            if kind == "buf":
                last_use[v] = i
    for v, i in last_use.items():
        if v not in needed:
            plan.steps[i].free.append(v)
