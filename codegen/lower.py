"""Lowering: a kernel IR becomes the loop structure every renderer emits (target-independent).

A kernel runs, per outer index (a row: ``Kernel.outer_shape``), one inner loop per *stage*
(``ir.stage_of``) that has *roots*: the operands of that stage's reductions and its
per-element outputs. Values constant along a row are computed between the loops. What the
loops compute, what a later loop re-reads from row-sized scratch instead of recomputing, which
divisions by a row value multiply by its reciprocal instead, and which sums are compensated are
decided here, once, from the IR alone; the renderers (``codegen.llvm`` on the CPU,
``codegen.cuda`` on the GPU) only choose how to write them. A renderer passes its own scratch
budget (stack bytes on a CPU thread, shared memory on a GPU block).

``cost`` holds each op's rough cost, shared by the scratch choice here and by the launchers'
time estimates (``codegen.jit.estimated_us``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from codegen import ir as kir

# a row's per-element values a later stage re-reads instead of recomputing live in scratch of
# at most this many bytes, on the stack of the thread running the kernel (small enough for
# the 512 KiB stacks of threads on macOS; a wider row recomputes)
SCRATCH_BYTES = 1 << 16
CACHE_MIN_COST = 4  # recomputing cheaper values beats a store and a load
# an op's rough cost in units of an add (ops not listed cost 1)
EXPENSIVE: dict[str, int] = {"exp": 8, "log": 8, "sin": 8, "cos": 8, "tanh": 8, "sigmoid": 8,
                             "erf": 10, "pow": 16, "div": 4, "sqrt": 4}
ITEM_BYTES: dict[str, int] = {"float32": 4, "float64": 8, "int64": 8, "bool": 1, "bfloat16": 2}
# unary ops whose float32 and float64 forms have a fast variant valid below a limit on |x| and
# an exact one (the LLVM renderer checks the range and reruns; see codegen/llvm_math.py)
RANGED_OPS: frozenset[str] = frozenset({"sin", "cos"})
RANGED_DTYPES: frozenset[str] = frozenset({"float32", "float64"})


def op_cost(expr: kir.Expr) -> int:
    """One expr's own cost (loads and constants are free)."""
    if isinstance(expr, (kir.Load, kir.Const)):
        return 0
    return EXPENSIVE.get(getattr(expr, "op", ""), 1)


def is_compensated(op: str, dtype: str) -> bool:
    """Float sums are blocked and compensated (Neumaier) by every renderer."""
    return op == "sum" and dtype in kir.FLOAT_DTYPES


@dataclass(frozen=True)
class LoopNest:
    """The lowered form of one kernel: everything a renderer needs besides the IR itself.

    - ``stages``, ``per_element``, ``dtypes``: per expr (``ir.stage_of``, ``ir.per_element``,
      ``ir.result_dtype``);
    - ``elem_output``: per output, whether it is stored inside the element loops (full domain)
      rather than once per row;
    - ``roots``: per stage that runs an inner loop, the exprs that loop must produce;
    - ``cached``: per-element exprs stored to row scratch by the loop of their own stage and
      re-read by later loops (``scratch_bytes`` is the budget they were chosen under);
    - ``reciprocal``: divisors, constant along a row, that per-element divisions by them
      multiply by their reciprocal instead (a renderer checks row values per row: only where
      the reciprocal is a normal number; constants were checked here);
    - ``compensated``: Reduce exprs summed in blocks with compensation;
    - ``compensated_outputs``: accumulated float-sum outputs whose partial and compensation
      (two arrays of the output's size) fit a scratch budget of their own;
    - ``ranged``: float32 or float64 sin/cos present (fast and exact variants).
    """
    kernel: kir.Kernel
    stages: tuple[int, ...]
    per_element: tuple[bool, ...]
    dtypes: tuple[str, ...]
    elem_output: tuple[bool, ...]
    roots: dict[int, tuple[int, ...]]
    cached: frozenset[int]
    reciprocal: frozenset[int]
    compensated: frozenset[int]
    compensated_outputs: frozenset[int]
    ranged: bool
    scratch_bytes: int

    @property
    def n_stages(self) -> int:
        return max(self.stages, default=0) + 1

    @property
    def row_size(self) -> int:
        """Elements of one row: what one stage loop runs over."""
        return math.prod(self.kernel.inner_shape)

    def reduces_of(self, stage: int) -> list[int]:
        """The Reduce exprs fed by the loop of ``stage`` (their operand is of that stage)."""
        return [i for i, e in enumerate(self.kernel.exprs)
                if isinstance(e, kir.Reduce) and self.stages[e.x] == stage]

    def element_outputs_of(self, stage: int) -> list[int]:
        """The outputs stored (or accumulated) per element by the loop of ``stage``."""
        return [j for j, out in enumerate(self.kernel.outputs)
                if self.elem_output[j] and self.stages[out.value] == stage]

    def row_exprs_of(self, stage: int) -> list[int]:
        """Exprs constant along a row that become available at ``stage`` (computed between
        the loops, in program order)."""
        return [i for i in range(len(self.kernel.exprs))
                if not self.per_element[i] and self.stages[i] == stage]

    def row_outputs_of(self, stage: int) -> list[int]:
        """The outputs stored (or accumulated) once per row, after ``stage``'s row values."""
        return [j for j, out in enumerate(self.kernel.outputs)
                if not self.elem_output[j] and self.stages[out.value] == stage]

    def stored_of(self, stage: int) -> list[int]:
        """The cached exprs the loop of ``stage`` stores to scratch."""
        return [i for i in sorted(self.cached) if self.stages[i] == stage]

    def from_scratch(self, i: int, stage: int) -> bool:
        """Whether the loop of ``stage`` reads expr ``i`` from scratch."""
        return i in self.cached and self.stages[i] < stage

    def needed(self, stage: int) -> list[int]:
        """The per-element exprs the loop of ``stage`` computes (or reads from scratch), in
        program order: those its roots and stored values depend on, stopping at scratch."""
        needed: set[int] = set()
        stack = [*self.roots.get(stage, ()), *self.stored_of(stage)]
        while stack:
            i = stack.pop()
            if self.per_element[i] and i not in needed:
                needed.add(i)
                if not self.from_scratch(i, stage):
                    stack.extend(kir.operands(self.kernel.exprs[i]))
        return sorted(needed)

    def divisors_in(self, exprs: list[int]) -> list[int]:
        """The reciprocal divisors that per-element divisions among ``exprs`` multiply by; the
        ones that are not constants need the per-row normal check."""
        found = {e.b for e in (self.kernel.exprs[i] for i in exprs)
                 if isinstance(e, kir.Binary) and e.op == "div" and e.b in self.reciprocal}
        return sorted(found)


def lower(kernel: kir.Kernel, scratch_bytes: int = SCRATCH_BYTES) -> LoopNest:
    """Validate ``kernel`` and compute its loop structure under a scratch budget."""
    kir.validate(kernel)
    stages = kir.stage_of(kernel)
    per_element = kir.per_element(kernel)
    dtypes = [kir.result_dtype(kernel, e) for e in kernel.exprs]
    elem_output = [per_element[o.value] or kernel.n_reduce == 0 for o in kernel.outputs]
    roots = _loop_roots(kernel, stages, elem_output)
    cached = _choose_cached(kernel, stages, per_element, dtypes, roots, scratch_bytes)
    reciprocal = {e.b for i, e in enumerate(kernel.exprs)
                  if isinstance(e, kir.Binary) and e.op == "div" and per_element[i]
                  and not per_element[e.b] and _multiplies(kernel.exprs[e.b], stages[e.b])
                  and _normal_reciprocal(kernel.exprs[e.b], dtypes[e.b])}
    compensated = {i for i, e in enumerate(kernel.exprs)
                   if isinstance(e, kir.Reduce) and is_compensated(e.op, dtypes[i])}
    ranged = any(isinstance(e, kir.Unary) and e.op in RANGED_OPS and e.dtype in RANGED_DTYPES
                 for e in kernel.exprs)
    return LoopNest(kernel, tuple(stages), tuple(per_element), tuple(dtypes), tuple(elem_output),
                    roots, frozenset(cached), frozenset(reciprocal), frozenset(compensated),
                    _compensated_outputs(kernel, scratch_bytes), ranged, scratch_bytes)


def _loop_roots(kernel: kir.Kernel, stages: list[int], elem_output: list[bool]
                ) -> dict[int, tuple[int, ...]]:
    """Per stage, the per-element exprs its loop must produce: operands of that stage's
    reductions, then element outputs (stages with neither run no loop)."""
    roots: dict[int, tuple[int, ...]] = {}
    for stage in range(max(stages, default=0) + 1):
        found = [e.x for e in kernel.exprs if isinstance(e, kir.Reduce) and stages[e.x] == stage]
        found += [o.value for j, o in enumerate(kernel.outputs)
                  if elem_output[j] and stages[o.value] == stage]
        if found:
            roots[stage] = tuple(found)
    return roots


def costs(kernel: kir.Kernel, per_element: list[bool] | tuple[bool, ...]) -> list[int]:
    """Rough cost of recomputing each per-element expr from loads (a tree count)."""
    out: list[int] = []
    for i, expr in enumerate(kernel.exprs):
        if not per_element[i]:
            out.append(0)
            continue
        out.append(op_cost(expr) + sum(out[j] for j in kir.operands(expr)))
    return out


def _choose_cached(kernel: kir.Kernel, stages: list[int], per_element: list[bool],
                   dtypes: list[str], roots: dict[int, tuple[int, ...]], budget: int) -> set[int]:
    """Per-element exprs a later stage's loop re-reads from a row-sized scratch buffer
    instead of recomputing: the costly ones (see ``costs``) whose own stage has a loop to
    store them in, the first met on each path (their operands are then not needed), while the
    scratch fits the budget."""
    if kernel.n_reduce == 0 or len(roots) < 2:
        return set()
    inner = math.prod(kernel.inner_shape)
    cost = costs(kernel, per_element)
    cached: set[int] = set()
    for stage, stage_roots in roots.items():
        seen: set[int] = set()
        stack = list(stage_roots)
        while stack:
            i = stack.pop()
            if i in seen or not per_element[i]:
                continue
            seen.add(i)
            size = inner * ITEM_BYTES[dtypes[i]]
            if i in cached or (stages[i] < stage and stages[i] in roots
                               and cost[i] >= CACHE_MIN_COST and size <= budget):
                if i not in cached:
                    cached.add(i)
                    budget -= size
                continue
            stack.extend(kir.operands(kernel.exprs[i]))
    return cached


def _compensated_outputs(kernel: kir.Kernel, budget: int) -> frozenset[int]:
    """Accumulated float-sum outputs whose block partial and compensation fit the budget
    (a column sum of rows wider than that accumulates plainly, as numpy's own do)."""
    chosen: set[int] = set()
    for j, out in enumerate(kernel.outputs):
        if out.accumulate is None or not is_compensated(out.accumulate, out.dtype):
            continue
        size = 2 * math.prod(kir.output_shape(kernel, out)) * ITEM_BYTES[out.dtype]
        if size <= budget:
            budget -= size
            chosen.add(j)
    return frozenset(chosen)


def _multiplies(divisor: kir.Expr, stage: int) -> bool:
    """Whether a per-element division by this row value multiplies by its reciprocal: where a
    reduction computed it (a softmax's sum, a norm: within an ulp of the quotient, the row's
    many divisions made multiplications), or where it is a constant power of two (the same
    bits). A scalar or a value read per row from an input (an optimizer's bias correction)
    divides, as eager mode does, so a fused update keeps eager's bits: its memory traffic
    hides the division (gpt's step divides 2.8M elements so)."""
    if isinstance(divisor, kir.Const):
        value = abs(float(divisor.value))
        return math.isfinite(value) and value > 0 and math.frexp(value)[0] == 0.5
    return stage > 0


def _normal_reciprocal(divisor: kir.Expr, dtype: str) -> bool:
    """Whether multiplying by the reciprocal of ``divisor`` may replace dividing by it as far
    as lowering can tell: for a constant, whether its reciprocal in ``dtype`` is a normal
    number; other divisors are checked per row when the kernel runs."""
    if not isinstance(divisor, kir.Const):
        return True
    with np.errstate(divide="ignore", over="ignore"):
        reciprocal = abs(np.divide(1, divisor.value, dtype=dtype))
    info = np.finfo(dtype)
    return bool(info.tiny <= reciprocal <= info.max)
