"""Inspection of a Plan: FLOP and byte estimates, peak buffer memory, a text summary, Graphviz."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

SOURCES = ("input", "state", "const", "rand")
VIEWS = ("reshape", "permute", "expand")
REDUCTIONS = ("sum", "mean", "amax", "argmax", "argmin")
SHAPE_OPS = VIEWS + ("getitem", "cat", "copy", "clone", "to_device", "fill", "setitem", "cast")
PHASES = ("forward", "backward", "update")


def _numel(shape: Any) -> int:
    return int(math.prod(shape)) if shape else 1


def _arg_shapes(plan: Any, step: Any) -> list[tuple[tuple[int, ...], int]]:
    """(shape, itemsize) of the step's buffer arguments."""
    by_out = _by_out(plan)
    out = []
    for kind, v in step.args:
        if kind == "buf" and v in by_out:
            s = by_out[v]
            out.append((s.shape, s.dtype.np.itemsize))
    return out


def _by_out(plan: Any) -> dict[int, Any]:
    cache = plan.__dict__.get("_inspect_by_out")
    if cache is None:
        cache = plan.__dict__["_inspect_by_out"] = {s.out: s for s in plan.steps}
    return cache


def _is_view(step: Any) -> bool:
    if step.op in VIEWS:
        return True
    if step.op == "getitem":  # basic indexing (ints, slices, None, Ellipsis) gives a view
        return not any(type(a).__name__ == "ndarray" for a in _flat(step.attrs.values()))
    return False


def _flat(values: Any) -> list[Any]:
    out = []
    for v in values:
        if isinstance(v, (tuple, list)):
            out.extend(_flat(v))
        else:
            out.append(v)
    return out


def estimate_flops(step: Any, plan: Any = None) -> int:
    """Floating-point operations of one step (an estimate, per primitive kind)."""
    op = step.op
    if op in SOURCES or op in SHAPE_OPS:
        return 0
    if op == "matmul":
        shapes = [s for s, _ in _arg_shapes(plan, step)] if plan is not None else []
        if len(shapes) == 2 and shapes[0]:
            k = shapes[0][-1]
            return 2 * _numel(step.shape) * k
        return 2 * _numel(step.shape)
    if op in REDUCTIONS or op == "index_backward":
        shapes = _arg_shapes(plan, step) if plan is not None else []
        return _numel(shapes[0][0]) if shapes else _numel(step.shape)
    return _numel(step.shape)  # elementwise


def estimate_bytes(step: Any, plan: Any = None) -> int:
    """Bytes moved by one step: its buffer inputs plus its output (views and sources: 0)."""
    if step.op in SOURCES or _is_view(step):
        return 0
    out = _numel(step.shape) * step.dtype.np.itemsize
    ins = sum(_numel(s) * size for s, size in _arg_shapes(plan, step)) if plan is not None else 0
    return out + ins


def _nbytes(step: Any) -> int:
    return _numel(step.shape) * step.dtype.np.itemsize


def peak_memory(plan: Any) -> int:
    """Peak bytes of live buffers when the schedule runs (views count as 0 extra bytes)."""
    live: dict[int, int] = {}
    peak = 0
    for s in plan.steps:
        live[s.out] = 0 if _is_view(s) else _nbytes(s)
        peak = max(peak, sum(live.values()))
        for buf in s.free:
            live.pop(buf, None)
    return peak


def flops(plan: Any) -> int:
    return sum(estimate_flops(s, plan) for s in plan.steps)


def _human(n: float, unit: str) -> str:
    for prefix in ("", "K", "M", "G", "T"):
        if abs(n) < 1000 or prefix == "T":
            return f"{n:.0f} {prefix}{unit}" if prefix == "" else f"{n:.2f} {prefix}{unit}"
        n /= 1000
    return f"{n} {unit}"


def summary(plan: Any) -> str:
    """A text table: nodes, steps, FLOPs and bytes by phase, peak memory, slots, op counts."""
    stats = plan.stats
    by_phase: dict[str, list[int]] = {p: [0, 0, 0] for p in PHASES}
    ops: Counter[str] = Counter()
    for s in plan.steps:
        row = by_phase.setdefault(s.phase, [0, 0, 0])
        row[0] += 1
        row[1] += estimate_flops(s, plan)
        row[2] += estimate_bytes(s, plan)
        ops[s.op] += 1
    total_flops = sum(r[1] for r in by_phase.values())
    total_bytes = sum(r[2] for r in by_phase.values())
    lines = [
        f"Plan on {plan.device}",
        f"  nodes captured {stats.get('captured', '?')}, pruned {stats.get('pruned', '?')}, "
        f"kept {stats.get('kept', '?')}",
        f"  steps          {len(plan.steps)}",
        f"  FLOPs          {_human(total_flops, 'FLOP')} ({total_flops})",
        f"  bytes          {_human(total_bytes, 'B')} ({total_bytes})",
        f"  peak memory    {_human(peak_memory(plan), 'B')} ({peak_memory(plan)})",
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


def to_dot(plan: Any) -> str:
    """Graphviz text of the plan's graph: label op/shape/dtype, colour by phase, sources boxed."""
    g = plan.graph
    lines = ["digraph plan {", "  node [style=filled];"]
    for v, data in g.nodes(data=True):
        op = data.get("op", "?")
        dtype = getattr(data.get("dtype"), "name", data.get("dtype"))
        label = f"%{v} {op}\\n{list(data.get('shape', ()))} {dtype}"
        shape = "box" if op in SOURCES else "ellipse"
        colour = "lightgrey" if op in SOURCES else _COLOURS.get(data.get("phase"), "white")
        lines.append(f"  n{v} [label={_q(label).replace(chr(92) * 2 + 'n', chr(92) + 'n')}, "
                     f"shape={shape}, fillcolor={colour}];")
    for u, v in g.edges:
        lines.append(f"  n{u} -> n{v};")
    lines.append("}")
    return "\n".join(lines)
