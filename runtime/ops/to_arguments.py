"""PyTorch's parse of ``to``'s arguments (``Tensor.to`` and ``nn.Module.to``): its three
overloads, ``to(device=None, dtype=None, non_blocking=False, copy=False)``,
``to(dtype, non_blocking=False, copy=False)`` and ``to(tensor, non_blocking=False,
copy=False)``, each with a keyword-only ``memory_format``; anything else is refused with its
argument parser's TypeError."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from .. import _dtype as D
from .._device import device as rt_device
from ..tensor import Tensor
from .layouts import memory_format

_TRAILER = ("bool non_blocking = False, bool copy = False, *, torch.memory_format "
            "memory_format = None)")
_OVERLOADS = ("to() received an invalid combination of arguments - got ({got}), but expected "
              "one of:\n * (torch.device device = None, torch.dtype dtype = None, " + _TRAILER +
              "\n * (torch.dtype dtype, " + _TRAILER + "\n * (Tensor tensor, " + _TRAILER + "\n")


class ToArguments(tuple):  # type: ignore[type-arg]
    """(device, dtype, non_blocking, copy, memory_format), each also by name. Written out, not
    a typing.NamedTuple: making that class compiles its methods (collections.namedtuple's
    eval), 0.4 ms of a process's first ``to`` (this module is imported then), a warm first
    call's capture included."""

    __slots__ = ()
    _fields = ("device", "dtype", "non_blocking", "copy", "memory_format")

    def __new__(cls, device: Any, dtype: Any, non_blocking: bool, copy: bool,
                memory_format: Any) -> ToArguments:
        return tuple.__new__(cls, (device, dtype, non_blocking, copy, memory_format))

    def __repr__(self) -> str:
        return ("ToArguments(" + ", ".join(f"{name}={value!r}" for name, value in
                                           zip(self._fields, self)) + ")")

    def __getnewargs__(self) -> tuple[Any, ...]:  # pickled and copied as its values
        return tuple(self)

    device = property(operator.itemgetter(0))
    dtype = property(operator.itemgetter(1))
    non_blocking = property(operator.itemgetter(2))
    copy = property(operator.itemgetter(3))
    memory_format = property(operator.itemgetter(4))


def _is_device(v: Any) -> bool:
    return v is None or isinstance(v, (str, rt_device)) or (
        isinstance(v, (int, np.integer)) and not isinstance(v, bool))


def _is_dtype(v: Any) -> bool:
    return isinstance(v, (D.DType, np.dtype)) or any(v is t for t in (float, int, bool, complex))


_KINDS: dict[str, Any] = {
    "device": _is_device, "dtype": lambda v: v is None or _is_dtype(v), "required dtype": _is_dtype,
    "tensor": lambda v: isinstance(v, Tensor), "non_blocking": lambda v: isinstance(v, bool),
    "copy": lambda v: isinstance(v, bool),
}
_SIGNATURES = (("device", "dtype", "non_blocking", "copy"),
               ("required dtype", "non_blocking", "copy"),
               ("tensor", "non_blocking", "copy"))


def _name(v: Any) -> str:
    if isinstance(v, Tensor):
        return "Tensor"
    if isinstance(v, rt_device):
        return "torch.device"
    if isinstance(v, D.DType):
        return "torch.dtype"
    if isinstance(v, memory_format):
        return "torch.memory_format"
    return type(v).__name__


def _match(params: tuple[str, ...], args: tuple[Any, ...], kwargs: dict[str, Any]
           ) -> dict[str, Any] | None:
    if len(args) > len(params):
        return None
    values = dict(zip(params, args))
    keywords = {p.removeprefix("required "): p for p in params[len(args):]}
    for key, v in kwargs.items():
        if key not in keywords:
            return None
        values[keywords[key]] = v
    if "required dtype" in params and "required dtype" not in values:
        return None
    if not all(_KINDS[p](v) for p, v in values.items()):
        return None
    return {p.removeprefix("required "): v for p, v in values.items()}


def parse_to(args: tuple[Any, ...], kwargs: dict[str, Any]) -> ToArguments:
    """``to``'s arguments by the overload they match, PyTorch's TypeError if none."""
    kwargs = dict(kwargs)
    fmt = kwargs.pop("memory_format", None)
    if len(args) > 4:
        raise TypeError(f"to() takes from 0 to 4 positional arguments but {len(args)} were "
                        "given")
    if fmt is None or isinstance(fmt, memory_format):
        for params in _SIGNATURES:
            found = _match(params, args, kwargs)
            if found is not None:
                tensor = found.get("tensor")
                device = found.get("device") if tensor is None else tensor.device
                dtype = found.get("dtype") if tensor is None else tensor.dtype
                return ToArguments(device, dtype, found.get("non_blocking", False),
                                   found.get("copy", False), fmt)
    if fmt is not None:
        kwargs["memory_format"] = fmt
    got = [_name(a) for a in args] + [f"{k}={_name(v)}" for k, v in kwargs.items()]
    raise TypeError(_OVERLOADS.format(got=", ".join(got)))
