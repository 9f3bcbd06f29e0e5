"""The kernel builder: how a kernel's exprs are written, one call an expr.

Target-independent: it builds ``codegen.ir`` exprs only, which every renderer consumes. The
registry's lowerings (``Primitive.lower`` in runtime/ops) and the planner's fusion both write
through it; constants are shared (one expr per value and dtype, -0.0 apart from 0.0).
"""

from __future__ import annotations

from typing import Any

from . import ir as kir


class KernelBuilder:
    """Collects the kernel-IR exprs of one fused segment: the planner's fusion makes one per
    kernel, and each registry primitive's ``lower`` calls its methods with the indices of the
    exprs it read (returning the index of the expr it added)."""

    def __init__(self) -> None:
        self.exprs: list[kir.Expr] = []
        self._consts: dict[tuple[Any, str], int] = {}
        self._reduces: dict[kir.Reduce, int] = {}

    def _add(self, expr: kir.Expr) -> int:
        self.exprs.append(expr)
        return len(self.exprs) - 1

    def load(self, input_index: int) -> int:
        return self._add(kir.Load(input_index))

    def const(self, value: Any, dtype: str) -> int:
        if dtype == "bool":
            value = bool(value)
        elif dtype == "int64":
            value = int(value)
        else:
            value = float(value)
        key = (repr(value), dtype)  # repr tells -0.0 from 0.0, which compare (and hash) equal
        if key not in self._consts:
            self._consts[key] = self._add(kir.Const(value, dtype))
        return self._consts[key]

    def unary(self, op: str, x: int, dtype: str) -> int:
        return self._add(kir.Unary(op, x, dtype))

    def binary(self, op: str, a: int, b: int, dtype: str) -> int:
        return self._add(kir.Binary(op, a, b, dtype))

    def where(self, cond: int, a: int, b: int, dtype: str) -> int:
        return self._add(kir.Where(cond, a, b, dtype))

    def fma(self, a: int, b: int, c: int, dtype: str) -> int:
        """a * b + c rounded once."""
        return self._add(kir.Fma(a, b, c, dtype))

    def cast(self, x: int, dtype: str) -> int:
        return self._add(kir.Cast(x, dtype))

    def reduce(self, op: str, x: int, dtype: str) -> int:
        """One expr per reduction of a value: each Reduce is a pass over the row."""
        expr = kir.Reduce(op, x, dtype)
        if expr not in self._reduces:
            self._reduces[expr] = self._add(expr)
        return self._reduces[expr]
