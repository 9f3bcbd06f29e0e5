"""Tensor's Python protocols that PyTorch's has and the runtime lacked: numpy's array protocol
(``np.asarray(t)``, ``np.sin(t)`` giving a tensor), ``in``, iteration and ``reversed``,
unary ``+``, ``complex()``, the in-place ``//=``, ``%=`` and ``**=`` (which Python would
otherwise rebind to a new tensor), and ``__cuda_array_interface__`` for GPU tensors."""

from __future__ import annotations

from collections.abc import Iterator
from numbers import Number
from typing import Any

import numpy as np

from .. import _dtype as D
from ..tensor import Tensor
from . import functional as F


def __array__(self: Tensor, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
    """The values as a numpy array (``numpy()``'s checks: no history, on the CPU)."""
    values = self.numpy()
    return values if dtype is None else values.astype(dtype, copy=False)


def __array_wrap__(self: Tensor, array: np.ndarray, context: Any = None,
                   return_scalar: bool = False) -> Tensor:
    """A numpy function's result on tensors, as a tensor (a bool one as uint8, as
    PyTorch's)."""
    from ..creation import from_numpy

    array = np.asarray(array)
    if array.dtype == np.bool_:
        array = array.astype(np.uint8)
    # a 0-d result stays 0-d (np.ascontiguousarray would make it 1-d)
    return from_numpy(array if array.flags.c_contiguous else array.copy(order="C"))


def __contains__(self: Tensor, element: Any) -> bool:
    if not isinstance(element, (Tensor, Number)):
        raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed "
                           f"in a {type(element)}.")
    return bool(F.eq(self, element).any().item())


def __iter__(self: Tensor) -> Iterator[Tensor]:
    if self.ndim == 0:
        raise TypeError("iteration over a 0-d tensor")
    return iter(self.unbind(0))


def __reversed__(self: Tensor) -> Tensor:
    return self if self.ndim == 0 else self.flip(0)


def __pos__(self: Tensor) -> Tensor:
    if self.dtype is D.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return self


def __complex__(self: Tensor) -> complex:
    if self.numel() != 1:
        raise ValueError("only one element tensors can be converted to Python scalars")
    return complex(self.item())


def __ifloordiv__(self: Tensor, other: Any) -> Tensor:
    return self.floor_divide_(other)


def __imod__(self: Tensor, other: Any) -> Tensor:
    return self.remainder_(other)


def __ipow__(self: Tensor, other: Any) -> Tensor:
    return F.pow_(self, other)


def _cuda_array_interface(self: Tensor) -> dict[str, Any]:
    if self.device == "cpu":
        raise AttributeError(f"Can't get __cuda_array_interface__ on non-CUDA tensor type: "
                             f"{self.type()} If CUDA data is required use tensor.cuda() to "
                             "copy tensor to device memory.")
    if self.requires_grad:
        raise RuntimeError("Can't get __cuda_array_interface__ on Variable that requires "
                           "grad. If gradients aren't required, use var.detach() to get "
                           "Variable that doesn't require grad.")
    return self._data.__cuda_array_interface__


FUNCTIONS: dict[str, Any] = {}
METHODS: dict[str, Any] = {
    fn.__name__: fn for fn in (__array__, __array_wrap__, __contains__, __iter__, __reversed__,
                               __pos__, __complex__, __ifloordiv__, __imod__, __ipow__)}
METHODS["__cuda_array_interface__"] = property(_cuda_array_interface)
