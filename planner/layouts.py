"""Which captured reshapes are views, as eager mode's are.

Eager mode's ``reshape`` is a view where numpy can reshape the array without a copy, and a
copy otherwise (``x.t().reshape(-1)``); a capture's ``reshape`` is a view op of the graph
whatever the layout. Recorded as a view, a copying reshape was functionalized as one: an
in-place write to it reached its base (a wrong result), and a read of it after its base was
written ran the step eagerly. ``Layouts`` follows the strides each view of the capture would
have eagerly: a probe array per view (numpy's own view of a one-element buffer with the
strides: permute, expand, basic indexing and a reshape with ``copy=False`` never touch the
data), from the arrays of tensors from outside the step (their real strides) and C order for
values the step computes. A reshape the probe cannot take without a copy is made a value of
its own (its cell no view of anything), as eager mode's is.

A value computed from operands that are not in C order has numpy's layout: an elementwise op
keeps its operands' order (``(x.t() * 2)`` is F-ordered: followed, ``computed``); where
this does not follow it (mixed orders, a reduction's result) the layout is unknown (no
probe), as is any view of it, and a reshape of it stays a view of the graph that an in-place
write through breaks the graph (``unknown_reshape``). Other ops (products, gathers) are
taken as C order, as the runtime's capture takes them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from runtime.ops.registry import REGISTRY
from runtime.tracing import MetaArray


def _probe(shape: tuple[int, ...], dtype: np.dtype, strides: tuple[int, ...]) -> np.ndarray:
    return np.lib.stride_tricks.as_strided(np.zeros(1, dtype), shape, strides)


# elementwise primitives whose result is in C order whatever their operand's (clone is
# ndarray.copy(): contiguous() of a transposed tensor is in C order)
_C_ORDER = frozenset({"clone"})


def _axes(shape: tuple[int, ...]) -> int:
    """How many axes of ``shape`` are longer than 1 (with fewer than 2, every layout is C
    order)."""
    return sum(1 for d in shape if d != 1)


def _broadcast(probe: np.ndarray) -> bool:
    """Whether ``probe`` shows an element along an axis more than once (stride 0)."""
    return any(st == 0 and size > 1 for st, size in zip(probe.strides, probe.shape))


def _c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    strides, step = [], itemsize
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


class Layouts:
    """The eager strides of a capture's cells, as far as views are concerned."""

    def __init__(self) -> None:
        # id(cell) -> (cell, its probe, None where unknown): views, tensors from outside the
        # step, values computed from operands not in C order
        self.probes: dict[int, tuple[MetaArray, np.ndarray | None]] = {}
        # node -> operands of an op with an operand not in C order (``operands``), whose
        # result's layout is worked out (``computed``); id(cell) -> cell of reshapes of a
        # value whose layout is unknown
        self.mixed: dict[int, list[MetaArray]] = {}
        self.unknown_reshapes: dict[int, MetaArray] = {}
        # (shape, dtype) -> the probe of a value of that shape in C order: one per shape, as
        # probes are only read (views, reshapes without copy, strides), never written
        self._c_order: dict[tuple[tuple[int, ...], np.dtype], np.ndarray] = {}

    def operands(self, node: int, cells: list[MetaArray]) -> None:
        """The op of ``node`` reads ``cells``."""
        probes = self.probes
        for cell in cells:
            hit = probes.get(id(cell))
            if hit is not None and hit[0] is cell:  # kept: out of C order, or unknown
                self.mixed[node] = cells
                return

    def computed(self, cell: MetaArray, node: int, op: str) -> None:
        """``cell`` holds what the op of ``node`` computed (no view) from operands one of
        which is out of C order: an elementwise op's result is in F order where every operand
        of its shape is (numpy's order K), in C order where every one is, else unknown; a
        reduction's is unknown; any other op's (a product, a gather) is taken as C order."""
        operands = self.mixed.pop(node)
        prim = REGISTRY.get(op)
        if _axes(cell.shape) < 2 or prim is None or not (prim.elementwise or prim.reduction) \
                or op in _C_ORDER:  # one axis longer than 1: C order whatever the strides
            return
        if prim.elementwise:
            # an operand broadcast along an axis (an expand: a sum's gradient) has no say in
            # numpy's order, nor has one of another shape; with none left, C order
            full = [p for p in (self.probe(c) for c in operands if c.shape == cell.shape)
                    if p is None or not _broadcast(p)]
            if all(p is not None and p.flags.c_contiguous for p in full):
                return
            if all(p is not None and p.flags.f_contiguous for p in full):
                self._keep(cell, _probe(cell.shape, cell.dtype, tuple(reversed(_c_strides(
                    tuple(reversed(cell.shape)), cell.dtype.itemsize)))))
                return
        self.probes[id(cell)] = (cell, None)

    def unknown_reshape(self, cell: MetaArray) -> bool:
        hit = self.unknown_reshapes.get(id(cell))
        return hit is not None and hit is cell

    def outside(self, cell: MetaArray, array: Any) -> None:
        """``cell`` holds a tensor from outside the step, whose array is ``array``."""
        strides = getattr(array, "strides", None)
        if strides is not None and len(strides) == len(cell.shape):
            flags = getattr(array, "flags", None)
            if flags is not None and flags.c_contiguous:
                return  # C order, as a new cell stands for (_keep would drop its probe)
            self._keep(cell, _probe(cell.shape, cell.dtype, tuple(strides)))

    def same_layout(self, cell: MetaArray, like: MetaArray) -> None:
        """``cell``, a storage of its own holding ``like``'s value, is laid out as ``like``."""
        probe = self.probe(like)
        if probe is None:
            self.probes[id(cell)] = (cell, None)
        elif not probe.flags.c_contiguous:
            self._keep(cell, probe)

    def _keep(self, cell: MetaArray, probe: np.ndarray) -> None:
        """Only probes out of C order are kept (C order is what a missing one stands for):
        a step whose every value is in C order pays no more than a dict lookup an op."""
        # the layout flag the runtime's contiguous(), is_contiguous() and view() read while
        # capturing (runtime.tracing.MetaArray.flags): a matrix whose last two axes are
        # swapped; a slice along the last axis (gpt's q of split(C, dim=2)) is not one, and
        # its view(B, T, H, C // H) is taken
        c_order = probe.flags.c_contiguous  # (each .flags makes an object)
        cell.transposed = bool(not c_order and probe.ndim >= 2
                               and probe.shape[-1] > 1 and probe.shape[-2] > 1
                               and probe.strides[-2] < probe.strides[-1])
        if c_order:
            self.probes.pop(id(cell), None)
        else:
            self.probes[id(cell)] = (cell, probe)

    def probe(self, cell: MetaArray) -> np.ndarray | None:
        hit = self.probes.get(id(cell))
        if hit is not None and hit[0] is cell:
            return hit[1]
        key = (cell.shape, cell.dtype)
        made = self._c_order.get(key)
        if made is None:
            made = self._c_order[key] = _probe(cell.shape, cell.dtype,
                                               _c_strides(cell.shape, cell.dtype.itemsize))
        return made

    def view_made(self, cell: MetaArray, op: str, attrs: dict[str, Any]) -> None:
        """``cell``, made a view of ``cell.view_of`` by ``op``: its probe; a reshape that
        copies in eager mode is cut from its base."""
        hit = self.probes.get(id(cell.view_of))
        if op == "reshape" and (hit is None or hit[0] is not cell.view_of):
            return  # a reshape of a value in C order: a view in C order
        base = self.probe(cell.view_of)  # type: ignore[arg-type]
        if base is None:
            self.probes[id(cell)] = (cell, None)
            # a reshape that only adds or drops axes of size 1 is a view whatever the strides
            if op == "reshape" and [d for d in cell.view_of.shape if d != 1] != [  # type: ignore[union-attr]
                    d for d in cell.shape if d != 1]:
                self.unknown_reshapes[id(cell)] = cell
            return
        if op == "reshape":
            try:
                made = base.reshape(attrs["shape"], copy=False)
            except ValueError:  # numpy would copy: eager mode's reshape is no view
                cell.view_of = None
                cell.base_node = -1
                cell.view_src = None
                return
        else:
            try:
                made = REGISTRY[op].impl(np, base, **attrs)
            except Exception:  # noqa: BLE001 (no probe: taken as C order, as before)
                return
        if isinstance(made, np.ndarray) and made.shape == cell.shape:
            self._keep(cell, made)
