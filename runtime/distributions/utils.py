"""Helpers shared by the distributions (torch.distributions.utils)."""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import runtime as rt

from .. import _dtype as D
from ..ops.shapes import Size
from ..tensor import Tensor

__all__ = ["broadcast_all", "clamp_probs", "lazy_property", "logits_to_probs",
           "probs_to_logits", "sum_rightmost"]


def broadcast_all(*values: Any) -> tuple[Tensor, ...]:
    """Tensors and numbers broadcast to one shape; numbers become tensors of the first
    tensor's dtype and device (the default float dtype where there is none)."""
    if not all(isinstance(v, (Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, "
                         "torch.Tensor or objects implementing __torch_function__.")
    if not all(isinstance(v, Tensor) for v in values):
        like = next((v for v in values if isinstance(v, Tensor)), None)
        dtype = like.dtype if like is not None else rt.get_default_dtype()
        device = like.device if like is not None else "cpu"
        values = tuple(v if isinstance(v, Tensor) else rt.tensor(v, dtype=dtype, device=device)
                       for v in values)
    return tuple(rt.broadcast_tensors(*values))


def clamp_probs(probs: Tensor) -> Tensor:
    """Probabilities kept inside (eps, 1 - eps) of their dtype."""
    eps = rt.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """Probabilities of logits: sigmoid for a binary variable, else softmax over the last
    dimension."""
    return rt.sigmoid(logits) if is_binary else rt.softmax(logits, dim=-1)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """Logits of probabilities (clamped inside (eps, 1 - eps) first): log-odds for a binary
    variable, else log-probabilities."""
    p = clamp_probs(probs)
    return rt.log(p) - rt.log1p(-p) if is_binary else rt.log(p)


def sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """``value`` summed over its rightmost ``dim`` dimensions."""
    if dim == 0:
        return value
    return value.reshape(*value.shape[:value.ndim - dim], -1).sum(-1)


def extended_shape(sample_shape: Any, *shapes: tuple[int, ...]) -> Size:
    """``sample_shape`` followed by the batch and event shapes, as a Size."""
    out = tuple(sample_shape)
    for s in shapes:
        out += tuple(s)
    return Size(out)


def float_dtype(t: Tensor) -> D.DType:
    """``t``'s dtype where it is floating, else the default float dtype."""
    return t.dtype if t.dtype.is_floating_point else rt.get_default_dtype()


class lazy_property:  # noqa: N801 - torch's name
    """A property computed on first access and then stored on the instance; read from the
    class it is the descriptor itself (so validation can skip a not yet computed one)."""

    def __init__(self, wrapped: Callable[[Any], Any]) -> None:
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__
        self.__name__ = wrapped.__name__

    def __get__(self, instance: Any, obj_type: Any = None) -> Any:
        if instance is None:
            return self
        value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value
