"""The one registry of primitives: eager forward, shape/dtype rule, backward formula.

Backward formulas are written with primitive tensor ops, so the same formula runs eagerly
and is captured into a graph by the planner.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# how a primitive's tensor arguments are promoted before its forward runs
PROMOTE_NONE = "none"  # no promotion (shape ops, reductions, indexing)
PROMOTE_SAME = "same"  # PyTorch's result_type over the arguments (add, mul, where, ...)
PROMOTE_FLOAT = "float"  # as SAME, then integers and bools become float32 (div, exp, ...)
PROMOTE_BOOL_OUT = "bool_out"  # as SAME for the inputs, bool result (comparisons)


@dataclass(frozen=True)
class Primitive:
    name: str
    impl: Callable[..., Any]  # impl(xp, *arrays_or_scalars, **attrs) -> array
    infer: Callable[..., tuple[tuple[int, ...], Any]]  # infer(*metas, **attrs) -> (shape, dtype)
    backward: Callable[..., tuple[Any, ...]] | None = None  # backward(ctx, grad) -> grads
    differentiable: bool = True
    saves: tuple[int | str, ...] = ()  # argument positions and/or "out" kept for backward
    saves_from: int | None = None  # also keep every tensor argument from this position on
    promote: str = PROMOTE_NONE
    promote_args: tuple[int, ...] | None = None  # which positions promote (default: all)
    view: bool = False  # the output may share storage with argument 0
    # kernel-IR lowering of an elementwise primitive: lower(kb, args, attrs, dtype) -> expr,
    # args as ("expr", index, dtype) | ("scalar", value, None); kb builds the fused kernel
    lower: Callable[..., int] | None = None
    attrs: tuple[str, ...] = field(default=())  # names of keyword attributes
    # a check of its arguments' values: its impl raises the user-facing error (which the
    # dispatcher passes on unchanged) or returns a placeholder nobody reads. A captured check
    # is a side effect: the planner keeps it, never fuses it, and runs it where eager did
    check: bool = False

    @property
    def backward_name(self) -> str:
        return "".join(p.capitalize() for p in self.name.split("_")) + "Backward0"


REGISTRY: dict[str, Primitive] = {}


def register(prim: Primitive) -> Primitive:
    if prim.name in REGISTRY:
        raise ValueError(f"primitive {prim.name!r} is registered twice")
    if prim.differentiable and prim.backward is None:
        raise ValueError(f"differentiable primitive {prim.name!r} has no backward formula")
    if prim.check and (prim.differentiable or prim.lower is not None or prim.view):
        raise ValueError(f"check primitive {prim.name!r} must be non-differentiable, without a "
                         "lowering and not a view")
    REGISTRY[prim.name] = prim
    return prim
