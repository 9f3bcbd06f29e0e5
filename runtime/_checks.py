"""PyTorch's ``torch._check`` family: raise an error of a given type, with a lazily built
message, where a condition (a bool, or every element of a bool tensor) is False."""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

from . import _dtype as D
from .tensor import Tensor

_DEFAULT_MESSAGE = ("Expected cond to be True, but got False. (Could this error message be "
                    "improved? If so, please report an enhancement request to PyTorch.)")


def _check_with(error_type: type[Exception], cond: Any,
                message: Callable[[], Any] | None = None) -> None:
    if not isinstance(cond, builtins.bool):
        if isinstance(cond, Tensor):
            raise TypeError("cond must be a bool, but got a Tensor. For tensor conditions, use "
                            "torch._check_tensor_all() to assert that all elements are true.")
        raise TypeError(f"cond must be a bool, but got {type(cond)}")
    if cond:
        return
    if not issubclass(error_type, Exception) or issubclass(error_type, Warning):
        raise AssertionError(f"error_type must be a subclass of Exception but not Warning, got "
                             f"{error_type}")
    if message is None:
        raise error_type(_DEFAULT_MESSAGE)
    if not callable(message):
        raise TypeError("message must be a callable")
    raise error_type(str(message()))


def _check(cond: Any, message: Callable[[], Any] | None = None) -> None:
    _check_with(RuntimeError, cond, message)


def _check_index(cond: Any, message: Callable[[], Any] | None = None) -> None:
    _check_with(IndexError, cond, message)


def _check_value(cond: Any, message: Callable[[], Any] | None = None) -> None:
    _check_with(ValueError, cond, message)


def _check_type(cond: Any, message: Callable[[], Any] | None = None) -> None:
    _check_with(TypeError, cond, message)


def _check_not_implemented(cond: Any, message: Callable[[], Any] | None = None) -> None:
    _check_with(NotImplementedError, cond, message)


def _check_tensor_all_with(error_type: type[Exception], cond: Any,
                           message: Callable[[], Any] | None = None) -> None:
    if not isinstance(cond, Tensor):
        raise TypeError(f"cond must be a tensor, but got {type(cond)}")
    if cond.dtype is not D.bool_:
        raise TypeError(f"cond tensor must have dtype torch.bool, but got {cond.dtype}")
    _check_with(error_type, builtins.bool(cond.all().item()), message)


def _check_tensor_all(cond: Any, message: Callable[[], Any] | None = None) -> None:
    _check_tensor_all_with(RuntimeError, cond, message)


def _assert_async(tensor: Tensor, assert_msg: str | None = None) -> None:
    """PyTorch's ``torch._assert_async``: the one element of ``tensor`` must be nonzero
    (an empty or many-element tensor is its error)."""
    n = tensor.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    if not builtins.bool(tensor.item()):
        raise RuntimeError(assert_msg if assert_msg is not None
                           else "Expected Tensor with single nonzero value, but got zero")
