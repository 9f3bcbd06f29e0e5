"""Which matmul steps of a plan run as generated products (``codegen.gemm``), derived from the
plan as its schedule is: never part of its data beyond the ``Plan.products`` switch.

A generated product is compiled for its operands' shapes and element strides. A plan knows
the shapes; the strides follow from where an operand comes from, predicted here for the run
where every input and state array is C-contiguous (the common case: parameters, batches):
sources, kernel outputs, matmul results and random draws are C-contiguous, a permute permutes
its operand's strides, a reshape of a C-contiguous array is C-contiguous. A program then calls
the product where both operands' shapes and strides are the predicted ones, and numpy's
matmul where they are not (a caller passing a transposed input, say): the prediction decides
speed, never results' validity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .steps import InputStep, KernelStep, PrimitiveStep, RandStep, StateStep, Step

if TYPE_CHECKING:
    from codegen.gemm import GemmSpec

    from .plan import Plan

Strides = tuple[int, ...]


def contiguous_strides(shape: tuple[int, ...], itemsize: int) -> Strides:
    """Byte strides of a C-contiguous array of ``shape`` as numpy lays out a new one."""
    strides, step = [], itemsize
    for d in reversed(shape):
        strides.append(step)
        step *= max(d, 1)
    return tuple(reversed(strides))


def predicted_strides(plan: Plan) -> dict[int, Strides]:
    """Byte strides of the buffers whose layout is known when every input and state array
    is C-contiguous (see the module's docstring); buffers of other steps are left out."""
    metas = plan.schedule.metas
    known: dict[int, Strides] = {}

    def dense(v: int) -> Strides:
        shape, dtype = metas[v]
        return contiguous_strides(tuple(shape), np.dtype(dtype).itemsize)

    for s in plan.steps:
        if isinstance(s, (InputStep, StateStep, RandStep)):
            known[s.out] = dense(s.out)
        elif isinstance(s, KernelStep):
            for o in s.outputs:
                known[o] = dense(o)
        elif isinstance(s, PrimitiveStep) and s.device == "cpu":
            bufs = s.buffers
            if s.name == "matmul":
                known[s.out] = dense(s.out)
            elif s.name == "permute" and bufs and bufs[0] in known:
                src = known[bufs[0]]
                known[s.out] = tuple(src[d] for d in s.attrs["dims"])
            elif s.name == "reshape" and bufs and known.get(bufs[0]) == dense(bufs[0]):
                known[s.out] = dense(s.out)
    return known


@dataclass(frozen=True)
class ProductCall:
    """A matmul step run as a generated product: its spec, and the operands' (shape, byte
    strides) the program compares with before calling it (strides None: any, the product
    reads them from the array)."""
    spec: GemmSpec
    a: tuple[tuple[int, ...], Strides | None]
    b: tuple[tuple[int, ...], Strides]


def product_calls(plan: Plan) -> dict[Step, ProductCall]:
    """The matmul steps of a plan with ``products`` on that run as generated products (CPU
    steps whose predicted operands ``codegen.gemm.GemmSpec.of`` accepts)."""
    if not plan.products:
        return {}
    from codegen.gemm import GemmSpec

    metas = plan.schedule.metas
    strides = predicted_strides(plan)
    found: dict[Step, ProductCall] = {}
    for s in plan.steps:
        if not (isinstance(s, PrimitiveStep) and s.name == "matmul" and s.device == "cpu"):
            continue
        bufs = s.buffers
        if len(bufs) != 2 or len(s.args) != 2:
            continue
        (sa, ta), (sb, tb) = metas[bufs[0]], metas[bufs[1]]
        if np.dtype(ta) != np.dtype(tb) or np.dtype(ta) != s.dtype.np:
            continue
        # a 2-D operand's strides are read at each call: any layout will do
        a, b = ((tuple(shape), None if len(shape) == 2 else strides.get(v))
                for shape, v in ((sa, bufs[0]), (sb, bufs[1])))
        spec = GemmSpec.of(*a, *b, np.dtype(ta))
        if spec is not None and math.prod(s.shape) == spec.batch * spec.m * spec.n:
            found[s] = ProductCall(spec, a, b)
    return found
