"""Which matmul steps of a plan run as generated products (``codegen.gemm``), derived from the
plan as its schedule is: never part of its data beyond the ``Plan.products`` switch.

A product's code reads its operands' layouts (strides, broadcast batch axes) from the arrays
at each call, so a step qualifies by its shapes and dtype alone (``GemmSpec.of``): a program
calls it where both operands are numpy arrays of the planned dtype and shapes, which a fast
program knows of its values or tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .steps import PrimitiveStep, Step

if TYPE_CHECKING:
    from codegen.gemm import GemmSpec

    from .plan import Plan


@dataclass(frozen=True)
class ProductCall:
    """A matmul step run as a generated product: its spec and its operands' shapes."""
    spec: GemmSpec
    a: tuple[int, ...]
    b: tuple[int, ...]
    out: tuple[int, ...]


def product_calls(plan: Plan) -> dict[Step, ProductCall]:
    """The matmul steps of a plan with ``products`` on that run as generated products: CPU
    steps of two float operands of the result's dtype that ``codegen.gemm.GemmSpec.of``
    accepts."""
    if not plan.products:
        return {}
    from codegen.gemm import GemmSpec

    metas = plan.schedule.metas
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
        spec = GemmSpec.of(tuple(sa), tuple(sb), np.dtype(ta))
        if spec is not None and tuple(s.shape) == \
                np.broadcast_shapes(tuple(sa[:-2]), tuple(sb[:-2])) + (spec.m, spec.n):
            found[s] = ProductCall(spec, tuple(sa), tuple(sb), tuple(s.shape))
    return found
