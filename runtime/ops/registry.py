"""The one registry of primitives: eager forward, shape/dtype rule, backward formula, and the
facts the planner asks of an op (its kind, FLOPs, a fast path), so no file keeps its own list.

Backward formulas are written with primitive tensor ops, so the same formula runs eagerly
and is captured into a graph by the planner.
"""

from __future__ import annotations

import contextlib
import functools

import math
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# how a primitive's tensor arguments are promoted before its forward runs
PROMOTE_NONE = "none"  # no promotion (shape ops, reductions, indexing)
PROMOTE_SAME = "same"  # PyTorch's result_type over the arguments (add, mul, where, ...)
PROMOTE_FLOAT = "float"  # as SAME, then integers and bools become float32 (div, exp, ...)
PROMOTE_BOOL_OUT = "bool_out"  # as SAME for the inputs, bool result (comparisons)

Shape = tuple[int, ...]
# the static facts of one planned call: each argument's (shape, dtype), or the scalar itself
ArgMeta = Any
OutMeta = tuple[Shape, np.dtype]
ArgMetas = Sequence[ArgMeta]
Attrs = Mapping[str, Any]
# flops(out_shape, arg_shapes, attrs): arg_shapes has an argument's shape, None for a scalar
ArgShapes = Sequence[Shape | None]
FlopRule = Callable[[Shape, ArgShapes, Attrs], int]
FastPath = Callable[..., Any] | None  # f(*args) -> ndarray, or None: no fast path
# specializer(arg_metas, attrs, out_meta) -> FastPath (see Primitive.specialize)
Specializer = Callable[[ArgMetas, Attrs, OutMeta], FastPath]

# numpy 2 types Python scalars "weakly" (NEP 50): a ufunc's result dtype then depends on the
# dtypes of its array arguments only, so one probe on tiny arrays speaks for every call
VALUE_FREE_DTYPES = int(np.__version__.split(".")[0]) >= 2


def _numel(shape: Shape | None) -> int:
    return math.prod(shape) if shape else 1


def flops_none(out_shape: Shape, arg_shapes: ArgShapes, attrs: Attrs) -> int:
    """Shape, view, copy and source-like ops: no arithmetic."""
    return 0


def flops_elementwise(out_shape: Shape, arg_shapes: ArgShapes, attrs: Attrs) -> int:
    """One operation per output element."""
    return _numel(out_shape)


def flops_reduce(out_shape: Shape, arg_shapes: ArgShapes, attrs: Attrs) -> int:
    """One operation per element of argument 0 (each is folded into an output once)."""
    return _numel(arg_shapes[0])


def flops_matmul(out_shape: Shape, arg_shapes: ArgShapes, attrs: Attrs) -> int:
    """A multiply and an add per output element and step of the contracted axis."""
    a = arg_shapes[0] if len(arg_shapes) == 2 else None
    return 2 * _numel(out_shape) * (a[-1] if a else 1)


def is_array_meta(meta: ArgMeta) -> bool:
    """Whether a specializer's argument meta is an array's (shape, dtype), not a scalar."""
    return type(meta) is tuple and len(meta) == 2 and isinstance(meta[1], np.dtype)


def probe_ok(fn: Callable[..., Any], arg_metas: ArgMetas, out_meta: OutMeta,
             **kwargs: Any) -> bool:
    """Whether fn on one-element arrays of the arguments' dtypes and ranks gives an array of
    the planned dtype (numpy's result type does not depend on sizes or, under NEP 50,
    values). Only for a non-0-d result: numpy returns a scalar for a 0-d one."""
    if not out_meta[0] or not VALUE_FREE_DTYPES:
        return False
    probe = [np.zeros((1,) * len(m[0]), m[1]) if is_array_meta(m) else m for m in arg_metas]
    try:
        with np.errstate(all="ignore"):
            out = fn(*probe, **kwargs)
    except Exception:  # the probe is only a question: any failure means "no fast path"
        return False
    return type(out) is np.ndarray and out.dtype == out_meta[1]


class _Generated(threading.local):
    off = False


_generated = _Generated()


@contextlib.contextmanager
def without_generated_code() -> Iterator[None]:
    """Fast paths chosen meanwhile on this thread take none of ``codegen.windows``' generated
    code (``generated_windows`` gives None), which compiles on first use: for a plan that runs
    while its kernels compile (planner.background), whose calls must not wait for LLVM."""
    previous, _generated.off = _generated.off, True
    try:
        yield
    finally:
        _generated.off = previous


def generated_windows(dtype: np.dtype) -> Any:
    """``codegen.windows`` where its generated code runs here for ``dtype`` (a fast path's
    native code: unfold, fold, argmax/argmin, sums along a middle axis), else None (and
    within ``without_generated_code``)."""
    if _generated.off:
        return None
    try:
        from codegen import windows
    except ImportError:  # pragma: no cover - codegen ships with the runtime
        return None
    return windows if windows.supports(dtype) else None


def ufunc_specializer(ufunc: np.ufunc) -> Specializer:
    """The ufunc itself where its result on these metas is an array of the planned dtype and
    shape (the primitive's impl is that ufunc on its arguments)."""

    def specialize(arg_metas: ArgMetas, attrs: Attrs, out_meta: OutMeta) -> FastPath:
        shapes = [m[0] for m in arg_metas if is_array_meta(m)]
        try:
            if tuple(np.broadcast_shapes(*shapes)) != tuple(out_meta[0]):
                return None
        except ValueError:
            return None
        return ufunc if probe_ok(ufunc, arg_metas, out_meta) else None

    return specialize


@dataclass(frozen=True)
class Primitive:
    name: str
    impl: Callable[..., Any]  # impl(xp, *arrays_or_scalars, **attrs) -> array
    infer: Callable[..., tuple[tuple[int, ...], Any]]  # infer(*metas, **attrs) -> (shape, dtype)
    backward: Callable[..., tuple[Any, ...]] | None = None  # backward(ctx, grad) -> grads
    differentiable: bool = True
    saves: tuple[int | str, ...] = ()  # argument positions and/or "out" kept for backward
    saves_from: int | None = None  # also keep every tensor argument from this position on
    # a saved argument kept only when one of these arguments requires grad (PyTorch saves
    # mul's self only for other's gradient, so a hook or checkpoint sees what it sees)
    saves_if_grad: dict[int, tuple[int, ...]] | None = None
    promote: str = PROMOTE_NONE
    promote_args: tuple[int, ...] | None = None  # which positions promote (default: all)
    # the output may share storage with argument 0, for some attrs (view_if says which)
    view: bool = False
    view_if: Callable[[Attrs], bool] | None = None  # None: for every attrs
    # kernel-IR lowering of an elementwise primitive: lower(kb, args, attrs, dtype) -> expr,
    # args as ("expr", index, dtype) | ("scalar", value, None); kb: codegen.builder.KernelBuilder
    lower: Callable[..., int] | None = None
    # the result dtypes ``lower`` handles (None: every dtype of the kernel IR)
    lower_dtypes: frozenset[str] | None = None
    attrs: tuple[str, ...] = field(default=())  # names of keyword attributes
    # a check of its arguments' values: its impl raises the user-facing error (which the
    # dispatcher passes on unchanged) or returns a placeholder nobody reads. A captured check
    # is a side effect: the planner keeps it, never fuses it, and runs it where eager did
    check: bool = False
    # FLOPs of one call (required: register refuses a primitive without a rule)
    flops: FlopRule | None = None
    ufunc: np.ufunc | None = None  # impl(np, *args) is exactly ufunc(*args)
    # a broadcasting elementwise map of its tensor arguments, into a new array (never a view)
    elementwise: bool = False
    reduction: bool = False  # folds axes of argument 0
    extern: bool = False  # a library call that releases the GIL and may use BLAS threads
    transfer: bool = False  # a copy between host and device memory
    # a fast path next to the impl (see specialize); a ufunc primitive has one by default
    specializer: Specializer | None = None
    # PyTorch's name of its backward node where it is not the CamelCase of ``name``
    node_name: str | None = None

    def is_view(self, attrs: Attrs) -> bool:
        """Whether the output shares argument 0's storage for these attrs."""
        return self.view and (self.view_if is None or self.view_if(attrs))

    def specialize(self, arg_metas: ArgMetas, attrs: Attrs, out_meta: OutMeta) -> FastPath:
        """A callable ``f(*args)`` equal to ``impl(np, *args, **attrs)`` for plain numpy
        arrays of ``arg_metas`` (``(shape, np.dtype)``, or the scalar itself), returning an
        ndarray of ``out_meta``'s shape and dtype, every decision the impl makes from shapes
        and dtypes made once here; or None where no such guarantee holds (then call impl and
        check its result). The callable holds no array of the call."""
        spec = self.specializer
        if spec is None and self.ufunc is not None:
            spec = ufunc_specializer(self.ufunc)
        return None if spec is None else spec(arg_metas, attrs, out_meta)

    @functools.cached_property
    def backward_name(self) -> str:
        """PyTorch's name of its backward node (``MmBackward0``); made once: a capture asks
        it of every node it records. A letter after a digit is capital, as PyTorch's
        (``Log1PBackward0``)."""
        if self.node_name is not None:
            return self.node_name
        camel = "".join(p.capitalize() for p in self.name.split("_"))
        return _capital_after_digits(camel) + "Backward0"


def _capital_after_digits(name: str) -> str:
    """``name`` with each ASCII lower-case letter after a decimal digit upper-case (as
    ``re.sub(r"(?<=\\d)[a-z]", ...)`` gives it, without compiling that pattern: a warm first
    call's capture compiled it, asking the names of its primitives' nodes)."""
    chars = list(name)
    for i in range(1, len(chars)):
        if chars[i - 1].isdecimal() and "a" <= chars[i] <= "z":
            chars[i] = chars[i].upper()
    return "".join(chars)


REGISTRY: dict[str, Primitive] = {}


def register(prim: Primitive) -> Primitive:
    if prim.name in REGISTRY:
        raise ValueError(f"primitive {prim.name!r} is registered twice")
    if prim.differentiable and prim.backward is None:
        raise ValueError(f"differentiable primitive {prim.name!r} has no backward formula")
    if prim.check and (prim.differentiable or prim.lower is not None or prim.view):
        raise ValueError(f"check primitive {prim.name!r} must be non-differentiable, without a "
                         "lowering and not a view")
    if prim.flops is None:
        raise ValueError(f"primitive {prim.name!r} has no FLOP rule (flops=)")
    if prim.ufunc is not None and not prim.elementwise:
        raise ValueError(f"ufunc primitive {prim.name!r} must be elementwise")
    if (prim.view or prim.reduction) and prim.elementwise:
        raise ValueError(f"view or reduction primitive {prim.name!r} cannot be elementwise")
    if prim.check and prim.extern:
        raise ValueError(f"check primitive {prim.name!r} cannot be extern")
    REGISTRY[prim.name] = prim
    return prim
