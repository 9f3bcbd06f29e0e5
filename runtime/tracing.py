"""The hook through which planner.compile captures a step (set only while capturing).

While a tracer is active, primitive calls are recorded instead of run: tensors made during the
capture hold a ``MetaArray`` (shape and dtype, no data), and nothing outside the tracer changes:
in-place writes, ``.grad`` assignments and random draws are routed to the tracer.
"""

from __future__ import annotations

import os
import threading
import traceback
from typing import Any

import numpy as np


class GraphBreak(Exception):
    """The step cannot be captured here (a tensor's value steers Python, an op we cannot
    record); ``where`` names the user's file:line."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        self.where = user_frame()
        super().__init__(f"{reason} (at {self.where})")


class WarmUpNeeded(GraphBreak):
    """The step cannot be captured at this call, but running it eagerly makes what a capture
    at the next call needs (a lazy module's parameters, made by its first input): a compiled
    step runs the call eagerly and captures the next one, without a fallback warning."""


_PACKAGES = tuple(
    os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), p) + os.sep
    for p in ("runtime", "planner", "codegen"))


def user_frame() -> str:
    """file:line of the innermost frame outside this project's packages."""
    for frame in reversed(traceback.extract_stack()):
        if not frame.filename.startswith(_PACKAGES):
            return f"{frame.filename}:{frame.lineno}"
    return "<unknown>"


class _Flags:
    def __init__(self, transposed: bool) -> None:
        self.c_contiguous = not transposed
        self.f_contiguous = transposed
        self.writeable = True


_C_ORDER = _Flags(False)
_TRANSPOSED = _Flags(True)


class MetaArray:
    """Storage stand-in while capturing: shape and dtype, and the graph value it holds now.

    Tensors that share storage (detach, saved outputs) share the MetaArray, so an in-place write,
    which moves ``node`` to the new value, is seen through every alias as in eager mode.
    """

    __slots__ = ("shape", "ndim", "dtype", "node", "view_of", "base_node", "transposed",
                 "view_step", "view_src", "made_by")
    base = None

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype, node: int,
                 view_of: MetaArray | None = None) -> None:
        self.shape = tuple(shape)
        # an attribute, not a property: read by every Tensor.dim() while capturing (the shape
        # is never assigned after this)
        self.ndim = len(self.shape)
        self.dtype = dtype
        self.node = node
        self.view_of = view_of  # the storage this one is a view of
        self.base_node = view_of.node if view_of is not None else -1  # its value back then
        # layout, as far as kernels choose by it: a matrix whose last two axes are swapped
        self.transposed = False
        # the view op that made it, kept at its first in-place write (planner.capture), and
        # the tensor it was taken from (the one whose autograd history an in-place op on the
        # view rewrites)
        self.view_step: tuple[Any, ...] | None = None
        self.view_src: Any = None
        # (primitive, attrs) of the view op that made it from view_src: a returned view of a
        # tensor living outside the step is taken again of that tensor at each replay
        self.made_by: tuple[Any, dict[str, Any]] | None = None

    @property
    def flags(self) -> _Flags:
        return _TRANSPOSED if self.transposed else _C_ORDER

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def __len__(self) -> int:
        return self.shape[0]

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise GraphBreak("a tensor's data was read while capturing")

    def __getattr__(self, name: str) -> Any:
        # anything else an array offers needs the data, which a capture does not have
        raise GraphBreak(f"a tensor's data was used ({name}) while capturing")

    def __repr__(self) -> str:
        return f"MetaArray(shape={self.shape}, dtype={self.dtype}, node={self.node})"


class _State(threading.local):
    tracer: Any = None


_state = _State()


def active_tracer() -> Any:
    return _state.tracer


def is_tracing() -> bool:
    return _state.tracer is not None


def stands_for_number(value: Any) -> bool:
    """Whether ``value`` is the tensor that stands for a compiled step's number argument (or
    a number computed from them) in the capture under way (planner.capture:
    add_scalar_input, ``Tracer.weak_nodes``): read at each replay, where a Python number is
    baked in."""
    if isinstance(value, (int, float)):  # add's alpha as it comes, without a lookup
        return False
    data = getattr(value, "_data", None)
    return type(data) is MetaArray and data.node in getattr(_state.tracer, "weak_nodes", ())


def set_tracer(tracer: Any) -> Any:
    prev = _state.tracer
    _state.tracer = tracer
    return prev
