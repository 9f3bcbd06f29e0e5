"""Renaming a composite op's backward node to PyTorch's name for the op, keeping what the
node does: a plain primitive's node becomes the registry's class of that name; a node of a
class of its own (a straight-through, a no-derivative node) a subclass of its class."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ..tensor import Tensor
from ..tracing import MetaArray
from ..tracing import _state as _trace_state
from .dispatch import PrimitiveBackward, named

_SUBCLASSES: dict[tuple[type, str], type] = {}


def renamed(t: Tensor, name: str) -> Tensor:
    """``t`` with its backward node called ``name`` (``dispatch.named``, which would turn a
    node of a special class into a plain one: its backward lost)."""
    fn = t._grad_fn
    if fn is None or not isinstance(fn, PrimitiveBackward) or type(fn).__name__ == name:
        return t
    cls = type(fn)
    if cls.__bases__ == (PrimitiveBackward,):
        return named(t, name)
    sub = _SUBCLASSES.get((cls, name))
    if sub is None:
        sub = _SUBCLASSES[cls, name] = type(name, (cls,), {"__slots__": ()})
    fn.__class__ = sub
    tracer = _trace_state.tracer
    if tracer is not None and type(t._data) is MetaArray:  # the capture's record of it
        tracer.annotate(t._data.node, t)
    return t


def renamed_backward(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A composite op whose result's node is ``renamed`` PyTorch's ``name``; a result that
    is its first argument (or not a tensor) is returned as it is."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def op(*args: Any, **kwargs: Any) -> Any:
            out = fn(*args, **kwargs)
            if isinstance(out, Tensor) and not (args and out is args[0]):
                renamed(out, name)
            return out

        return op

    return decorate
