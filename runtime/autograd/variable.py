"""``rt.autograd.Variable``: PyTorch's deprecated Variable, kept for the code that still
names it."""

from __future__ import annotations

from typing import Any

from .engine import get_default_engine


class _VariableMeta(type):
    def __instancecheck__(cls, other: Any) -> bool:
        from ..tensor import Tensor

        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """Every tensor is a Variable (``isinstance``); ``Variable(t, requires_grad=False)`` is
    ``t`` detached (its storage and version counter shared) requiring grad as asked; and
    ``Variable._execution_engine`` is the autograd engine (``queue_callback``)."""

    _execution_engine = get_default_engine()

    def __new__(cls, data: Any, requires_grad: bool = False) -> Any:  # type: ignore[misc]
        from ..tensor import Tensor

        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return data.detach().requires_grad_(requires_grad)
