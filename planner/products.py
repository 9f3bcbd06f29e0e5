"""Which matmul steps of a plan run as generated products (``codegen.gemm``), derived from the
plan as its schedule is: never part of its data beyond the ``Plan.products`` switch.

A product's code reads its operands' layouts (strides, broadcast batch axes) from the arrays
at each call, so a step qualifies by its shapes and dtype alone (``GemmSpec.of``): a program
calls it where both operands are numpy arrays of the planned dtype and shapes, which a fast
program knows of its values or tests.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import numpy as np

from .steps import PrimitiveStep, Step

if TYPE_CHECKING:
    from codegen.gemm import GemmSpec

    from .plan import Plan


class ProductCall:
    """A matmul (or matmul_add) step run as a generated product: its spec, its operands'
    shapes and its addend's (None for a matmul). The product adds the addend itself where
    ``spec.addend`` (its planned shape has the product's columns: a test of its last stride
    remains), else the program adds it after. Immutable, compared and hashed by its fields,
    as a frozen dataclass would be, but written out: this module is first imported while a
    warm first call loads its plan's code, and a dataclass's generated methods (compiled from
    source as the class is made) cost that call about 1M instructions."""

    __slots__ = ("spec", "a", "b", "out", "addend")
    spec: GemmSpec
    a: tuple[int, ...]
    b: tuple[int, ...]
    out: tuple[int, ...]
    addend: tuple[int, ...] | None

    def __init__(self, spec: GemmSpec, a: tuple[int, ...], b: tuple[int, ...],
                 out: tuple[int, ...], addend: tuple[int, ...] | None = None) -> None:
        for name, value in zip(self.__slots__, (spec, a, b, out, addend)):
            object.__setattr__(self, name, value)

    def _fields(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __setattr__(self, name: str, value: Any) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._fields() == other._fields()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return "ProductCall(" + ", ".join(f"{name}={getattr(self, name)!r}"
                                          for name in self.__slots__) + ")"

    def __reduce__(self) -> tuple[type[ProductCall], tuple[Any, ...]]:
        return ProductCall, self._fields()


def product_calls(plan: Plan) -> dict[Step, ProductCall]:
    """The matmul and matmul_add steps of a plan with ``products`` on that run as generated
    products: CPU steps of float operands of the result's dtype that
    ``codegen.gemm.GemmSpec.of`` accepts."""
    if not plan.products:
        return {}
    from codegen.gemm import GemmSpec

    metas = plan.schedule.metas
    found: dict[Step, ProductCall] = {}
    for s in plan.steps:
        if not (isinstance(s, PrimitiveStep) and s.name in ("matmul", "matmul_add")
                and s.device == "cpu"):
            continue
        bufs, arity = s.buffers, 2 if s.name == "matmul" else 3
        if len(bufs) != arity or len(s.args) != arity:
            continue
        if any(np.dtype(metas[v][1]) != s.dtype.np for v in bufs):
            continue
        sa, sb = (tuple(metas[v][0]) for v in bufs[:2])
        spec = GemmSpec.of(sa, sb, s.dtype.np)
        if spec is None or tuple(s.shape) != \
                np.broadcast_shapes(sa[:-2], sb[:-2]) + (spec.m, spec.n):
            continue
        addend = tuple(metas[bufs[2]][0]) if arity == 3 else None
        if addend is not None and 1 <= len(addend) <= len(s.shape) and \
                addend[-1] == spec.n and np.broadcast_shapes(addend, tuple(s.shape)) == \
                tuple(s.shape):
            spec = dataclasses.replace(spec, addend=True)
        found[s] = ProductCall(spec, sa, sb, tuple(s.shape), addend)
    return found
