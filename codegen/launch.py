"""The CPU launch form of a kernel: how its outer range is cut so that threads can share it.

Fusion emits a kernel in its natural domain (the segment's shape). A CPU launch splits the
outer axes of the domain across threads (``codegen.jit``), so a flat elementwise kernel (one
outer row per leading index, or none at all for a vector) and a whole-vector reduction would
run on one thread. ``cpu_launch_form`` rewrites such a kernel over rows of ``ROW`` elements:
the same inputs, exprs and outputs, read and written at the same addresses, only the domain,
the input strides and (for a reduction) the outputs' ``accumulate`` change. The LLVM renderer
and the CPU launcher apply it (rendering, the compile cache's key, chunking); the CUDA renderer
makes its own launch choices from the natural domain. It is idempotent.
"""

from __future__ import annotations

import dataclasses
import math

from codegen import ir as kir

# elements per row when a flat elementwise run (or a whole-vector reduction) is cut into rows
# for threads: small enough that a 4096-element chain (the chain workload, ~100 us of
# transcendentals) has rows to split now that a hand-off costs 3-6 us (codegen.pool), long
# enough for the vector loops to run at speed
ROW = 1024


def cpu_launch_form(kernel: kir.Kernel, row: int = ROW) -> kir.Kernel:
    """``kernel`` cut into rows of ``row`` elements where that is a pure relabelling of its
    domain (see the module docstring), else ``kernel`` itself."""
    if any(out.accumulate is not None for out in kernel.outputs):
        return kernel  # an accumulated output's shape is the inner shape: it fixes the rows
    if kernel.n_reduce == 0:
        return _cut(kernel, row) or kernel
    if not _splittable_reduction(kernel):
        return kernel
    cut = _cut(kernel, row)
    if cut is None:
        return kernel
    # row sums, accumulated over the rows; per-element outputs stay per element
    return dataclasses.replace(cut, outputs=tuple(
        dataclasses.replace(out, accumulate=_reduce_op(kernel.exprs[out.value]))
        for out in kernel.outputs))


def outer_rows(kernel: kir.Kernel) -> int:
    """How many pieces a CPU launch may split ``kernel`` into: its launch form's outer size."""
    return cpu_launch_form(kernel).outer_size


def _splittable_reduction(kernel: kir.Kernel) -> bool:
    """A vector reduced whole whose reductions no expr reads and whose outputs are its
    reductions or per-element values: cut into rows, a reduction becomes row sums accumulated
    over the rows and a per-element value stays one, but a value constant along the vector
    (written once per row) would be written once per cut row instead of once."""
    if len(kernel.domain) != 1 or kernel.n_reduce != 1:
        return False
    read = {j for e in kernel.exprs for j in kir.operands(e)}
    reduces = {i for i, e in enumerate(kernel.exprs) if isinstance(e, kir.Reduce)}
    varies = kir.per_element(kernel)
    return not reduces & read and all(out.value in reduces or varies[out.value]
                                      for out in kernel.outputs)


def _reduce_op(expr: kir.Expr) -> str | None:
    return expr.op if isinstance(expr, kir.Reduce) else None


def _cut(kernel: kir.Kernel, row: int) -> kir.Kernel | None:
    """A domain whose inputs are all contiguous over it, or all broadcast, is one flat run
    of elements: the kernel over rows of ``row`` of it (at least two, whole ones), or None."""
    n = math.prod(kernel.domain)
    contiguous = _contiguous(kernel.domain)
    if n < 2 * row or n % row or not all(
            i.strides == contiguous or not any(i.strides) for i in kernel.inputs):
        return None
    inputs = tuple(kir.Input(i.name, i.dtype, (row, 1) if any(i.strides) else (0, 0))
                   for i in kernel.inputs)
    return dataclasses.replace(kernel, domain=(n // row, row), inputs=inputs)


def _contiguous(domain: tuple[int, ...]) -> tuple[int, ...]:
    """Element strides of a C-contiguous array of shape ``domain`` (size-1 axes: 0)."""
    strides, step = [], 1
    for d in reversed(domain):
        strides.append(step if d != 1 else 0)
        step *= d
    return tuple(reversed(strides))
