"""PyTorch's constants (e, pi, inf, nan, newaxis), its layout (``strided``, the one tensors
have here) and memory formats (``contiguous_format``, ``preserve_format``, ``channels_last``,
``channels_last_3d``). Storage is numpy's, row-major: a memory format is accepted where
PyTorch takes one and changes no values (``contiguous(memory_format=channels_last)`` gives
the row-major tensor, as ``to(memory_format=...)`` here); ``is_contiguous`` of a format
reads the strides."""

from __future__ import annotations

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
