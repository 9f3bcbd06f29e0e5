"""Cost estimates of one plan step: floating-point operations, bytes moved, and from both an
estimated run time (what the schedule weighs its critical path by)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from .steps import KernelStep, Meta, PrimitiveStep, SourceStep, Step

# A rough model of one core of this machine class: a step costs a fixed dispatch overhead (a
# numpy call from the program: about 1 us), plus its FLOPs at about 10 GFLOP/s (vectorized
# float32) and its bytes at about 10 GB/s, whichever bounds it. It only has to rank steps for
# the critical path and tell a tiny plan from a wide one, not predict times.
STEP_OVERHEAD_S = 1e-6
FLOPS_PER_S = 1e10
BYTES_PER_S = 1e10
# a BLAS call (ExternStep) runs near the core's peak: 100-160 GFLOP/s measured for sgemm on
# one core of an AVX2 or AVX-512 x86-64 (10 GFLOP/s made the rnn workload's 82 small matmuls
# cost 10 ms where they take 1.5, and the parallel executor look worth its overhead)
BLAS_FLOPS_PER_S = 1e11


def _numel(shape: Any) -> int:
    return int(math.prod(shape)) if shape else 1


def estimate_flops(step: Step, metas: Mapping[int, Meta]) -> int:
    """Floating-point operations of one step: its primitive's FLOP rule, a kernel's count."""
    if isinstance(step, KernelStep):
        return _kernel_flops(step.kernel)
    if not isinstance(step, PrimitiveStep):
        return 0
    shapes = [metas[v][0] if kind == "buf" else None for kind, v in step.args]
    return step.prim.flops(step.shape, shapes, step.attrs)  # type: ignore[misc]


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


def estimate_bytes(step: Step, metas: Mapping[int, Meta]) -> int:
    """Bytes moved by one step: its buffer inputs plus its outputs (views and sources: 0)."""
    if isinstance(step, SourceStep) or step.is_view:
        return 0
    ins = sum(_numel(metas[v][0]) * metas[v][1].itemsize for v in step.buffers if v in metas)
    if isinstance(step, KernelStep):
        return ins + sum(_numel(shape) * np.dtype(dtype).itemsize
                         for shape, dtype, _ in step.out_specs)
    return ins + _numel(step.shape) * step.dtype.np.itemsize


def estimate_seconds(flops: int, nbytes: int, blas: bool = False) -> float:
    """A step's estimated run time on one core, from its FLOPs and bytes (``blas``: a BLAS
    call's FLOPs, at BLAS_FLOPS_PER_S)."""
    rate = BLAS_FLOPS_PER_S if blas else FLOPS_PER_S
    return STEP_OVERHEAD_S + max(flops / rate, nbytes / BYTES_PER_S)
