"""Inspection of a Plan: FLOP and byte estimates, peak buffer memory, a text summary, Graphviz."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np

SOURCES = ("input", "state", "const", "rand")
VIEWS = ("reshape", "permute", "expand")
REDUCTIONS = ("sum", "mean", "amax", "argmax", "argmin")
SHAPE_OPS = VIEWS + ("getitem", "cat", "copy", "clone", "to_device", "fill", "setitem", "cast")
PHASES = ("forward", "backward", "update")


def _numel(shape: Any) -> int:
    return int(math.prod(shape)) if shape else 1


def _arg_shapes(plan: Any, step: Any) -> list[tuple[tuple[int, ...], int]]:
    """(shape, itemsize) of the step's buffer arguments."""
    from .program import buffer_metas

    metas = buffer_metas(plan)
    return [(metas[v][0], metas[v][1].itemsize) for kind, v in step.args
            if kind == "buf" and v in metas]


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
    if op == "kernel":
        return _kernel_flops(step.attrs["kernel"])
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


def _kernel_flops(kernel: Any) -> int:
    """One operation per arithmetic expr and value it is computed for, as the unfused steps
    count them: per element over the domain, per row over its rows."""
    from codegen import ir as kir

    elements, rows = _numel(kernel.domain), _numel(kernel.outer_shape)
    if kernel.n_reduce == 0:
        rows = elements
    flags = kir.per_element(kernel)
    return sum(elements if flags[i] or isinstance(e, kir.Reduce) else rows
               for i, e in enumerate(kernel.exprs)
               if not isinstance(e, (kir.Load, kir.Const)))


def estimate_bytes(step: Any, plan: Any = None) -> int:
    """Bytes moved by one step: its buffer inputs plus its output (views and sources: 0)."""
    if step.op in SOURCES or _is_view(step):
        return 0
    if step.op == "kernel":
        from codegen import ir as kir

        kernel = step.attrs["kernel"]
        ins = sum(_numel(s) * size for s, size in _arg_shapes(plan, step)) if plan else 0
        return ins + sum(_numel(kir.output_shape(kernel, o)) * np.dtype(o.dtype).itemsize
                         for o in kernel.outputs)
    out = _numel(step.shape) * step.dtype.np.itemsize
    ins = sum(_numel(s) * size for s, size in _arg_shapes(plan, step)) if plan is not None else 0
    return out + ins


def _nbytes(step: Any) -> int:
    return _numel(step.shape) * step.dtype.np.itemsize


def peak_memory(plan: Any) -> int:
    """Peak bytes of live buffers when the plan runs, its inputs, state and constants included.

    It follows what the interpreter does (planner.program.release_schedule): a buffer dies
    after its last reader; a view (reshape, permute, expand, basic indexing) allocates
    nothing and keeps its base's memory alive as long as it lives; an elementwise step that
    writes into a dying argument (``out=``) allocates nothing; each kernel output is its own
    allocation. Temporaries inside a primitive are not counted."""
    return _memory_walk(plan)[0]


def peak_allocated(plan: Any) -> int:
    """As peak_memory, counting only what the run allocates (not its inputs, state or
    constants): what ``tracemalloc`` sees a run of the plan hold at its peak."""
    return _memory_walk(plan)[1]


def _memory_walk(plan: Any) -> tuple[int, int]:
    """(peak of all live bytes, peak of bytes the run allocated), step by step."""
    from .program import release_schedule, step_outputs

    schedule = release_schedule(plan)
    by_out = _by_out(plan)
    storage_of: dict[int, set[int]] = {}  # buffer -> the storages it keeps alive
    users: dict[int, int] = {}  # storage -> how many live buffers keep it
    size: dict[int, tuple[int, bool]] = {}  # storage -> (bytes, allocated by the run)
    live = allocated = peak = peak_alloc = 0
    sources = {b for _, b in plan.inputs} | {b for _, b in plan.reads} | set(plan.consts)
    for i, s in enumerate(plan.steps):
        for o in step_outputs(s):
            shared = _shared_storage(s, o, schedule.inplace.get(i), storage_of)
            if shared is None:
                nbytes = _out_nbytes(s, o, by_out)
                size[o] = (nbytes, o not in sources and s.op not in SOURCES)
                shared = {o}
                live += nbytes
                allocated += nbytes if size[o][1] else 0
            storage_of[o] = shared
            for r in shared:
                users[r] = users.get(r, 0) + 1
        copies = _kernel_input_copies(s, by_out)
        peak, peak_alloc = max(peak, live + copies), max(peak_alloc, allocated + copies)
        for buf in schedule.frees[i]:
            for r in storage_of.pop(buf, ()):
                users[r] -= 1
                if not users[r]:
                    nbytes, counted = size.pop(r)
                    live -= nbytes
                    allocated -= nbytes if counted else 0
    return peak, peak_alloc


def _kernel_input_copies(step: Any, by_out: dict[int, Any]) -> int:
    """Bytes a kernel step copies while it runs: a plan's program makes each argument
    C-contiguous, which copies a transposed, broadcast or sliced view."""
    if step.op != "kernel":
        return 0
    total = 0
    for kind, v in step.args:
        src = by_out.get(v) if kind == "buf" else None
        if src is not None and src.op in ("permute", "expand", "getitem") and _is_view(src):
            total += _nbytes(src)
    return total


def _shared_storage(step: Any, out: int, inplace: int | None,
                    storage_of: dict[int, set[int]]) -> set[int] | None:
    """The storages output `out` of a step lives in, when it allocates none of its own."""
    if inplace is not None:
        return set(storage_of.get(inplace, ()))
    if step.op == "kernel" and step.attrs.get("commit") is not None:
        # a parameter update run at write-back in the parameter's own storage (plan.Commit)
        return set(storage_of.get(step.args[step.attrs["commit"]][1], ()))
    if step.op != "kernel" and _is_view(step) and step.args and step.args[0][0] == "buf":
        return set(storage_of.get(step.args[0][1], ()))
    return None


def _out_nbytes(step: Any, out: int, by_out: dict[int, Any]) -> int:
    if step.op == "kernel":
        for o, (shape, dtype, _) in zip(step.attrs["outs"], step.attrs["out_specs"]):
            if o == out:  # a kernel step allocates each output in the kernel's shape
                return _numel(shape) * _np_itemsize(dtype)
    return _nbytes(step)


def _np_itemsize(dtype: Any) -> int:
    import numpy as np

    return np.dtype(getattr(dtype, "np", dtype)).itemsize


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
    peak, peak_alloc = _memory_walk(plan)
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
