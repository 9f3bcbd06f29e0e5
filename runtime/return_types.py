"""``runtime.return_types``: PyTorch's named result types of the ops with several results
(``torch.return_types.max`` ...): tuples whose fields are named, printed as PyTorch prints
them, each op's own type (``max``, and ``max_out`` where out= was given)."""

from __future__ import annotations

import functools
from collections import namedtuple
from collections.abc import Callable
from typing import Any

_FIELDS = {
    "max": ("values", "indices"), "min": ("values", "indices"), "sort": ("values", "indices"),
    "topk": ("values", "indices"), "median": ("values", "indices"),
    "nanmedian": ("values", "indices"), "kthvalue": ("values", "indices"),
    "mode": ("values", "indices"), "cummax": ("values", "indices"),
    "cummin": ("values", "indices"), "aminmax": ("min", "max"),
}


def _repr(self: tuple[Any, ...]) -> str:
    body = ",\n".join(f"{name}={value!r}" for name, value in zip(self._fields, self))  # type: ignore[attr-defined]
    return f"runtime.return_types.{type(self).__name__}(\n{body})"


def _make(name: str, fields: tuple[str, ...]) -> type:
    cls = type(name, (namedtuple(name, fields),), {"__slots__": (), "__repr__": _repr,
                                                      "__str__": _repr})
    cls.__module__ = __name__
    cls.__qualname__ = name
    return cls


all_return_types: list[type] = []
for _name, _fields in _FIELDS.items():
    for _n in (_name, f"{_name}_out"):
        globals()[_n] = _make(_n, _fields)
        all_return_types.append(globals()[_n])


def returns(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A function whose tuple result is PyTorch's return type ``name`` (``name``_out where
    out= is given); a result that is not a tuple (max over all of input) is returned as it
    is."""
    kind, kind_out = globals()[name], globals()[f"{name}_out"]

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def op(*args: Any, **kwargs: Any) -> Any:
            result = fn(*args, **kwargs)
            if not isinstance(result, tuple):
                return result
            return (kind_out if kwargs.get("out") is not None else kind)(*result)

        return op

    return decorate
