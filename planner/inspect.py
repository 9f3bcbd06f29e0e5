"""Inspection of a Plan: FLOP and byte estimates, peak buffer memory, a text summary, Graphviz."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from . import cost
from .steps import SOURCE_KINDS, Step

if TYPE_CHECKING:
    from .plan import Plan

PHASES = ("forward", "backward", "update")


def estimate_flops(step: Step, plan: Plan) -> int:
    """Floating-point operations of one step of ``plan`` (planner.cost)."""
    return cost.estimate_flops(step, plan.schedule.metas)


def estimate_bytes(step: Step, plan: Plan) -> int:
    """Bytes one step of ``plan`` moves (planner.cost)."""
    return cost.estimate_bytes(step, plan.schedule.metas)


def peak_memory(plan: Plan) -> int:
    """Peak bytes of live buffers when the plan runs, its inputs, state and constants included
    (the schedule's figure: a buffer dies after its last reader; a view allocates nothing and
    keeps its base alive; an in-place step allocates nothing; each kernel output is its own
    allocation; temporaries inside a primitive are not counted)."""
    return plan.schedule.peak_memory


def peak_allocated(plan: Plan) -> int:
    """As peak_memory, counting only what the run allocates (not its inputs, state or
    constants): what ``tracemalloc`` sees a run of the plan hold at its peak."""
    return plan.schedule.peak_allocated


def flops(plan: Plan) -> int:
    return sum(plan.schedule.flops)


def _human(n: float, unit: str) -> str:
    for prefix in ("", "K", "M", "G", "T"):
        if abs(n) < 1000 or prefix == "T":
            return f"{n:.0f} {prefix}{unit}" if prefix == "" else f"{n:.2f} {prefix}{unit}"
        n /= 1000
    return f"{n} {unit}"


def summary(plan: Plan) -> str:
    """A text table: nodes, steps, FLOPs and bytes by phase, peak memory, slots, op counts."""
    stats, sched = plan.stats, plan.schedule
    by_phase: dict[str, list[int]] = {p: [0, 0, 0] for p in PHASES}
    ops: Counter[str] = Counter()
    for i, s in enumerate(plan.steps):
        row = by_phase.setdefault(s.phase, [0, 0, 0])
        row[0] += 1
        row[1] += sched.flops[i]
        row[2] += sched.bytes[i]
        ops[s.op] += 1
    peak, peak_alloc = sched.peak_memory, sched.peak_allocated
    total_flops = sum(r[1] for r in by_phase.values())
    total_bytes = sum(r[2] for r in by_phase.values())
    lines = [
        f"Plan on {plan.device}",
        f"  nodes captured {stats.get('captured', '?')}, pruned {stats.get('pruned', '?')}, "
        f"kept {stats.get('kept', '?')}",
        f"  steps          {len(plan.steps)}",
        f"  FLOPs          {_human(total_flops, 'FLOP')} ({total_flops})",
        f"  bytes          {_human(total_bytes, 'B')} ({total_bytes})",
        f"  peak memory    {_human(peak, 'B')} ({peak}), of which the run allocates "
        f"{_human(peak_alloc, 'B')} ({peak_alloc})",
        f"  inputs {len(plan.inputs)}, state reads {len(plan.reads)}, writes {len(plan.writes)}, "
        f"consts {len(plan.consts)}, random draws {len(plan.rands)}, kernels {len(plan.kernels)}",
        "",
        f"  {'phase':<10}{'steps':>8}{'FLOPs':>16}{'bytes':>16}",
    ]
    for phase, (n, f, b) in by_phase.items():
        lines.append(f"  {phase:<10}{n:>8}{f:>16}{b:>16}")
    lines += ["", f"  {'op':<16}{'count':>8}"]
    for op, n in sorted(ops.items(), key=lambda kv: (-kv[1], kv[0])):
        lines.append(f"  {op:<16}{n:>8}")
    return "\n".join(lines)


_COLOURS = {"forward": "lightblue", "backward": "lightsalmon", "update": "palegreen"}


def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(plan: Plan) -> str:
    """Graphviz text of the plan's graph: label op/shape/dtype, colour by phase, sources boxed."""
    g = plan.graph
    lines = ["digraph plan {", "  node [style=filled];"]
    for v, data in g.nodes(data=True):
        op = data.get("op", "?")
        dtype = getattr(data.get("dtype"), "name", data.get("dtype"))
        label = f"%{v} {op}\\n{list(data.get('shape', ()))} {dtype}"
        source = op in SOURCE_KINDS
        shape = "box" if source else "ellipse"
        colour = "lightgrey" if source else _COLOURS.get(data.get("phase"), "white")
        lines.append(f"  n{v} [label={_q(label).replace(chr(92) * 2 + 'n', chr(92) + 'n')}, "
                     f"shape={shape}, fillcolor={colour}];")
    for u, v in g.edges:
        lines.append(f"  n{u} -> n{v};")
    lines.append("}")
    return "\n".join(lines)
