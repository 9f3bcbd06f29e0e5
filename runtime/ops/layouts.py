"""PyTorch's constants (e, pi, inf, nan, newaxis), its layout (``strided``, the one tensors
have here) and memory formats (``contiguous_format``, ``preserve_format``, ``channels_last``,
``channels_last_3d``). Storage is numpy's, row-major: a memory format is accepted where
PyTorch takes one and changes no values (``contiguous(memory_format=channels_last)`` gives
the row-major tensor, as ``to(memory_format=...)`` here); ``is_contiguous`` of a format
reads the strides."""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from typing import Any

from ..tensor import Tensor


class layout:  # noqa: N801 - PyTorch's name
    """A tensor layout (``torch.layout``): only ``strided`` here."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"runtime.{self.name}"

    def __reduce__(self) -> str:
        return self.name


class memory_format:  # noqa: N801 - PyTorch's name
    """A memory format (``torch.memory_format``)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"runtime.{self.name}"

    def __reduce__(self) -> str:
        return self.name


strided = layout("strided")
contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")

_RANKS = {"channels_last": 4, "channels_last_3d": 5}


def _channels_last_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The strides of (N, C, *spatial) laid out with C innermost."""
    n, c, *spatial = shape
    strides = [0] * len(shape)
    step = 1
    for d in [1, *range(len(shape) - 1, 1, -1), 0]:
        strides[d] = step
        step *= shape[d]
    return tuple(strides)


def is_contiguous(self: Tensor, memory_format: memory_format = contiguous_format) -> bool:
    """Whether the storage is in ``memory_format``'s order (dims of size 1 in any place)."""
    name = memory_format.name
    if name in _RANKS:
        if self.ndim != _RANKS[name]:
            return False
        want = _channels_last_strides(tuple(self.shape))
        return all(n == 1 or s == w for n, s, w in zip(self.shape, self.stride(), want))
    return bool(self._data.flags.c_contiguous)


def contiguous(self: Tensor, memory_format: memory_format = contiguous_format) -> Tensor:
    """self where its storage is row-major, else a row-major copy (a channels-last format
    is accepted, after PyTorch's rank check: storage stays row-major here)."""
    from . import functional as F

    name = memory_format.name
    if name in _RANKS and self.ndim != _RANKS[name]:
        raise RuntimeError(f"required rank {_RANKS[name]} tensor to use {name} format")
    return self if self._data.flags.c_contiguous else F.clone(self)


def _layout(self: Tensor) -> layout:
    return strided


FUNCTIONS: dict[str, Any] = {
    "e": math.e, "pi": math.pi, "inf": math.inf, "nan": math.nan, "newaxis": None,
    "layout": layout, "memory_format": memory_format, "strided": strided,
    "contiguous_format": contiguous_format, "preserve_format": preserve_format,
    "channels_last": channels_last, "channels_last_3d": channels_last_3d,
}
METHODS: dict[str, Callable[..., Any] | property] = {"layout": property(_layout)}


def check_factory_options(name: str, layout: Any, pin_memory: bool | None) -> None:
    """PyTorch's layout= (strided tensors only here) and pin_memory= (no pinned memory)."""
    if layout is not None and str(layout).rsplit(".", 1)[-1] != "strided":
        raise NotImplementedError(f"{name}(): only strided tensors here, not layout={layout}")
    if pin_memory:  # PyTorch's on a machine with no accelerator to pin host memory for
        raise RuntimeError("pin_memory=True requires a CUDA or other accelerator backend; no "
                           "pinned memory allocator is available on this system.")


def check_memory_format(name: str, fmt: Any, ndim: int | None) -> None:
    """PyTorch's checks of a ``memory_format=`` argument: a memory_format (the parser's
    TypeError), and, given the result's rank ``ndim``, one that rank allows."""
    if fmt is not None and not isinstance(fmt, memory_format):
        raise TypeError(f"{name}(): argument 'memory_format' must be torch.memory_format, not "
                        f"{type(fmt).__name__}")
    rank = _RANKS.get(getattr(fmt, "name", ""))
    if ndim is not None and rank is not None and ndim != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {fmt.name} format")


def factory_options(formats: bool = False) -> Callable[[Callable[..., Tensor]],
                                                       Callable[..., Tensor]]:
    """A factory that takes PyTorch's ``layout=`` and ``pin_memory=`` (checked as
    check_factory_options) and, with ``formats`` (empty, the *_like ones), its
    ``memory_format=``: a format the result's rank allows, row-major here whatever it is
    (as ``contiguous``/``to`` take it)."""
    def decorate(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
        name = fn.__name__

        @functools.wraps(fn)
        def op(*args: Any, layout: Any = None, pin_memory: bool | None = None,
               **kwargs: Any) -> Tensor:
            check_factory_options(name, layout, pin_memory)
            if not formats or "memory_format" not in kwargs:
                return fn(*args, **kwargs)
            fmt = kwargs.pop("memory_format")
            check_memory_format(name, fmt, None)
            result = fn(*args, **kwargs)
            check_memory_format(name, fmt, result.ndim)
            return result

        # its signature shows the options it takes (a sweep of PyTorch's parameters reads it)
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())
        extra = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=d)
                 for n, d in (("layout", None), ("pin_memory", None))
                 + ((("memory_format", None),) if formats else ())
                 if n not in sig.parameters]
        at = next((i for i, q in enumerate(params) if q.kind is inspect.Parameter.VAR_KEYWORD),
                  len(params))
        op.__signature__ = sig.replace(  # type: ignore[attr-defined]
            parameters=params[:at] + extra + params[at:])
        return op

    return decorate
