"""``backplan plan --kernels``: each kernel headed by its name, the ops it fuses, its domain
and the bytes it moves, then its text in the language ``--show`` picks (LLVM IR, the host's
assembly, or CUDA C: no GPU or CuPy needed for any of them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from codegen import ir as kir

from . import cost
from .steps import KernelStep

if TYPE_CHECKING:
    from .plan import Plan

SHOWN = ("llvm", "asm", "cuda")


def fused_ops(kernel: kir.Kernel) -> list[str]:
    """The operations the kernel computes, in its expression order, each once (the kernel IR
    keeps no record of the plan steps it replaced, only what they computed)."""
    ops: list[str] = []
    for e in kernel.exprs:
        op = {kir.Where: "where", kir.Fma: "fma",
              kir.Cast: f"cast[{getattr(e, 'dtype', '')}]"}.get(type(e))
        if isinstance(e, (kir.Unary, kir.Binary)):
            op = e.op
        elif isinstance(e, kir.Reduce):
            op = f"reduce_{e.op}"
        if op is not None and op not in ops:
            ops.append(op)
    ops += [f"accumulate_{o.accumulate}" for o in kernel.outputs if o.accumulate]
    return ops


def render(kernel: kir.Kernel, show: str) -> str:
    """The kernel's text: ``llvm`` its LLVM IR, ``asm`` the optimized assembly llvmlite's
    target machine emits for its module, ``cuda`` its CUDA C."""
    from codegen.renderer import renderer_for

    if show == "cuda":
        return renderer_for("cuda").kernel_source(kernel)
    if show == "llvm":
        return renderer_for("cpu").kernel_source(kernel)
    from codegen import llvm, target

    module = target.optimize(llvm.render([kernel]))
    with target.LOCK:
        return str(target.target_machine().emit_assembly(module))


def kernels_text(plan: Plan, show: str) -> str:
    """Every kernel of ``plan``: a header of comment lines, then its text."""
    steps = {s.kernel.name: s for s in plan.steps if isinstance(s, KernelStep)}
    mark = "//" if show == "cuda" else (";" if show == "llvm" else "#")
    parts = []
    for info in plan.kernels:
        k, step = info.kernel, steps[info.name]
        head = [f"{mark} kernel {k.name}: {step.fused} steps fused, on {info.device}",
                f"{mark}   ops: {', '.join(fused_ops(k)) or '(copies only)'}",
                f"{mark}   domain: {list(k.domain)} ({k.n_reduce} reduced axes)",
                f"{mark}   bytes moved: {cost.estimate_bytes(step, plan.schedule.metas)}"]
        parts.append("\n".join(head) + "\n" + render(k, show))
    return "\n\n".join(parts)
