"""Composite ops, written from primitives (so their backward comes from the primitives')."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..tensor import Tensor
from . import functional as F
from .losses import cross_entropy, mse_loss  # noqa: F401  (their home is ops.losses)

tanh = F.tanh


def relu(x: Tensor) -> Tensor:
    return F.where(F.gt(x, 0), x, 0.0 if x.dtype.is_floating_point else 0)


def sigmoid(x: Tensor) -> Tensor:
    return F.div(1.0, F.add(F.exp(F.neg(x)), 1.0))


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2 = 1.0 / math.sqrt(2.0)


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    if approximate == "tanh":
        inner = F.mul(F.add(x, F.mul(F.mul(F.mul(x, x), x), 0.044715)), _SQRT_2_OVER_PI)
        return F.mul(F.mul(x, 0.5), F.add(F.tanh(inner), 1.0))
    if approximate != "none":
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return F.mul(F.mul(x, 0.5), F.add(F.erf(F.mul(x, _INV_SQRT_2)), 1.0))


def _shift_by_max(x: Tensor, dim: int) -> Tensor:
    """x minus its max along dim (for a stable exp); an empty x, which has no max along an
    empty dim, is returned as it is: PyTorch gives an empty softmax there, not an error."""
    if not x.numel():
        F._axes(dim, x.ndim)  # still rejects a dim out of range
        return x
    return F.sub(x, F.amax(x.detach(), dim, keepdim=True))


def softmax(x: Tensor, dim: int) -> Tensor:
    e = F.exp(_shift_by_max(x, dim))
    return F.div(e, F.sum(e, dim, keepdim=True))


def log_softmax(x: Tensor, dim: int) -> Tensor:
    shifted = _shift_by_max(x, dim)
    return F.sub(shifted, F.log(F.sum(F.exp(shifted), dim, keepdim=True)))


def layer_norm(x: Tensor, normalized_shape: int | Sequence[int], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(x.shape[x.ndim - len(shape):]) != shape:
        raise ValueError(f"layer_norm: normalized_shape {list(shape)} does not match the input's "
                         f"trailing dimensions {list(x.shape)}")
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    centered = F.sub(x, F.mean(x, axes, keepdim=True))
    var = F.mean(F.mul(centered, centered), axes, keepdim=True)
    y = F.div(centered, F.sqrt(F.add(var, eps)))
    if weight is not None:
        y = F.mul(y, weight)
    if bias is not None:
        y = F.add(y, bias)
    return y


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    y = F.matmul(x, F.transpose(weight, 0, 1) if weight.ndim == 2 else weight)
    return y if bias is None else F.add(y, bias)


def dropout(x: Tensor, p: float = 0.5, training: bool = True, generator: Any = None) -> Tensor:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return F.mul(x, 0.0)
    from ..creation import rand

    keep = F.ge(rand(*x.shape, generator=generator, device=x.device), p)
    return F.mul(F.mul(x, F.cast(keep, x.dtype)), 1.0 / (1.0 - p))
