"""Inspection of a Plan: FLOP and byte estimates, peak buffer memory, a text summary, Graphviz."""

from __future__ import annotations

import heapq

from collections import Counter
from typing import TYPE_CHECKING

from . import cost
from .steps import SourceStep, Step

if TYPE_CHECKING:
    from .plan import Plan

PHASES = ("forward", "backward", "recompute", "update")  # recompute: planner.remat


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


def _graphs(plan: Plan) -> str:
    """Whether a GPU plan's runs replay a CUDA graph (planner.cuda_graph), and why not."""
    runner = plan.executable.graph_runner()
    if runner is not None:
        return runner.describe()
    return "CUDA graph: off (" + ("not asked for" if not plan.executable.cuda_graphs
                                  else "no CuPy that can capture here") + ")"


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
        f"  schedule       critical path {sched.critical_length * 1e6:.1f} us estimated, "
        f"expected parallelism {sched.parallelism:.2f}",
        f"  executor       {plan.execution}",
        *([f"  {_graphs(plan)}"] if plan.device != "cpu" else []),
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


_COLOURS = {"forward": "lightblue", "backward": "lightsalmon", "recompute": "bisque",
            "update": "palegreen"}


def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


_DEVICE_COLOURS = ("lightblue", "lightsalmon", "palegreen", "plum", "khaki", "lightcyan")
COLOUR_BY = ("phase", "device", "worker")


def fused_ops(step: Step) -> list[str]:
    """The operations a fused kernel step computes, in its expression order (loads and
    constants left out); empty for a step that is not a kernel."""
    kernel = getattr(step, "kernel", None)
    if kernel is None:
        return []
    return [getattr(e, "op", type(e).__name__.lower()) for e in kernel.exprs
            if type(e).__name__ not in ("Load", "Const")]


def kernel_stats(plan: Plan) -> list[dict[str, object]]:
    """Per fused kernel: its name, device, language, fused ops, domain and the bytes it moves."""
    infos = {k.name: k for k in plan.kernels}
    rows: list[dict[str, object]] = []
    for i, s in enumerate(plan.steps):
        kernel = getattr(s, "kernel", None)
        if kernel is None:
            continue
        info = infos.get(kernel.name)
        rows.append({"name": kernel.name, "device": s.device,
                     "language": info.language if info is not None else None,
                     "fused_ops": fused_ops(s), "domain": list(kernel.domain),
                     "bytes": plan.schedule.bytes[i]})
    return rows


def stats(plan: Plan) -> dict[str, object]:
    """The plan's figures as JSON-ready data (what ``backplan plan --json`` prints)."""
    sched = plan.schedule
    return {"device": plan.device, "steps": len(plan.steps), "flops": sum(sched.flops),
            "bytes": sum(sched.bytes), "peak_memory": sched.peak_memory,
            "peak_allocated": sched.peak_allocated,
            "executor": {"kind": plan.execution.executor, "workers": plan.execution.workers,
                         "why": str(plan.execution)},
            "nodes": {k: plan.stats.get(k) for k in ("captured", "pruned", "kept")},
            "kernels": kernel_stats(plan)}


def to_dot(plan: Plan, colour_by: str = "phase") -> str:
    """Graphviz text of the plan's step DAG (the schedule's): a node a step labelled with
    its buffer, op, shape, dtype and device (a fused kernel with the ops it computes), an edge from each step to those that wait for
    it, sources boxed, the critical path drawn bold; filled by phase, by device, or by the
    CPU worker expected to run it (``expected_workers``: the plan's ``execution.workers``)."""
    if colour_by not in COLOUR_BY:
        raise ValueError(f"to_dot: colour_by must be one of {COLOUR_BY}, not {colour_by!r}")
    sched = plan.schedule
    devices = sorted(set(sched.devices))
    critical = set(critical_path(plan))
    workers = expected_workers(plan) if colour_by == "worker" else []
    lines = ["digraph plan {", "  node [style=filled];"]
    for i, s in enumerate(plan.steps):
        label = f"%{s.out} {s.op}\\n{list(s.shape)} {s.dtype.name} {s.device}"
        if ops := fused_ops(s):
            label = f"%{s.out} {s.kernel.name}: {' '.join(ops)}\\n" + label.split("\\n", 1)[1]
        source = isinstance(s, SourceStep)
        if colour_by == "device":
            colour = _DEVICE_COLOURS[devices.index(s.device) % len(_DEVICE_COLOURS)]
        elif colour_by == "worker":
            colour = _DEVICE_COLOURS[workers[i] % len(_DEVICE_COLOURS)]
            label += f"\\nworker {workers[i]}"
        else:
            colour = "lightgrey" if source else _COLOURS.get(s.phase, "white")
        bold = ", penwidth=3" if i in critical else ""
        lines.append(f"  s{i} [label={_q(label).replace(chr(92) * 2 + 'n', chr(92) + 'n')}, "
                     f"shape={'box' if source else 'ellipse'}, fillcolor={colour}{bold}];")
    for i, consumers in enumerate(sched.consumers):
        for j in consumers:
            bold = " [penwidth=3]" if i in critical and j in critical else ""
            lines.append(f"  s{i} -> s{j}{bold};")
    lines.append("}")
    return "\n".join(lines)


def expected_workers(plan: Plan) -> list[int]:
    """Per step, the worker a run is expected to give it: the executor's greedy list schedule
    simulated with the schedule's estimated step times (ready steps by priority, each to the
    worker free first; a device other than the CPU is its own worker, numbered after the
    CPU's ``plan.execution.workers``). An estimate: real times decide at run time."""
    sched = plan.schedule
    n_cpu = plan.execution.workers if plan.execution.executor == "parallel" else 1
    off_cpu = sorted({d for d in sched.devices if d != "cpu"})
    free = [0.0] * (n_cpu + len(off_cpu))  # when each worker is next free
    waiting = list(sched.in_degree)
    ready_at = [0.0] * len(waiting)  # when each step's inputs are all done
    ready = [(sched.priority[i], i) for i, n in enumerate(waiting) if n == 0]
    heapq.heapify(ready)
    worker = [0] * len(waiting)
    while ready:
        _, i = heapq.heappop(ready)
        if sched.devices[i] == "cpu":
            w = min(range(n_cpu), key=lambda k: (max(free[k], ready_at[i]), k))
        else:
            w = n_cpu + off_cpu.index(sched.devices[i])
        end = max(free[w], ready_at[i]) + sched.cost[i]
        free[w], worker[i] = end, w
        for j in sched.consumers[i]:
            ready_at[j] = max(ready_at[j], end)
            waiting[j] -= 1
            if not waiting[j]:
                heapq.heappush(ready, (sched.priority[j], j))
    return worker


def critical_path(plan: Plan) -> list[int]:
    """The steps of the longest chain of the schedule's DAG by estimated time, first to last."""
    sched = plan.schedule
    starts = [i for i, n in enumerate(sched.in_degree) if n == 0]
    path: list[int] = []
    nxt = max(starts, key=lambda i: (sched.critical_path[i], -i), default=None)
    while nxt is not None:
        path.append(nxt)
        nxt = max(sched.consumers[nxt], key=lambda j: (sched.critical_path[j], -j),
                  default=None)
    return path


def schedule_text(plan: Plan) -> str:
    """The step DAG as text: per step its device, priority, estimated time and critical path,
    and the steps waiting for it; then the critical path and the expected parallelism."""
    sched = plan.schedule
    lines = [f"  {'step':<36}{'device':>8}{'prio':>6}{'est us':>9}{'path us':>9}  consumers"]
    for i in sched.order:
        lines.append(f"  {sched.names[i]:<36}{sched.devices[i]:>8}{sched.priority[i]:>6}"
                     f"{sched.cost[i] * 1e6:>9.1f}{sched.critical_path[i] * 1e6:>9.1f}  "
                     f"{', '.join(map(str, sched.consumers[i])) or '-'}")
    path = critical_path(plan)
    lines += ["", f"  critical path  {len(path)} steps, {sched.critical_length * 1e6:.1f} us "
                  f"estimated: {' -> '.join(str(i) for i in path)}",
              f"  parallelism    {sched.parallelism:.2f} (estimated work / critical path)",
              f"  executor       {plan.execution}"]
    return "\n".join(lines)
