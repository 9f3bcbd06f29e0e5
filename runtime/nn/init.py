"""In-place parameter initializers (`torch.nn.init`), drawing from runtime's global generator."""

from __future__ import annotations

import math

import runtime as rt
from runtime.tensor import Tensor


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    if tensor.ndim < 2:
        raise ValueError(
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"
        )
    receptive_field = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive_field, tensor.shape[0] * receptive_field


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    linear = ("linear", "conv1d", "conv2d", "conv3d", "sigmoid")
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0) -> Tensor:
    with rt.no_grad():
        return tensor.copy_(
            rt.rand(*tensor.shape, dtype=tensor.dtype, device=tensor.device) * (b - a) + a
        )


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
    with rt.no_grad():
        return tensor.copy_(
            rt.randn(*tensor.shape, dtype=tensor.dtype, device=tensor.device) * std + mean
        )


def constant_(tensor: Tensor, val: float) -> Tensor:
    with rt.no_grad():
        return tensor.fill_(val)


def zeros_(tensor: Tensor) -> Tensor:
    with rt.no_grad():
        return tensor.zero_()


def ones_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 1.0)


def kaiming_uniform_(
    tensor: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu"
) -> Tensor:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan_in if mode == "fan_in" else fan_out)
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound)
