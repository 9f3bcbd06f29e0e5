"""`LayerNorm` over the trailing `normalized_shape` dimensions, `GroupNorm` and
`LocalResponseNorm`."""

from __future__ import annotations

from typing import Any

import runtime as rt
from runtime.nn import functional as F
from runtime.nn import init
from runtime.nn.module import Module
from runtime.nn.parameter import Parameter
from runtime.tensor import Tensor


class LayerNorm(Module):
    def __init__(
        self,
        normalized_shape: int | tuple[int, ...] | list[int],
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        device: str | None = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        shape = (
            (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        )
        self.normalized_shape = shape
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(rt.empty(shape, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(rt.empty(shape, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}"
        )


class GroupNorm(Module):
    """Normalises each sample over groups of ``num_channels // num_groups`` channels (and all
    positions), then a per-channel affine."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device: str | None = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups "
                             f"({num_groups})")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        if affine:
            self.weight = Parameter(rt.empty(num_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
        if affine and bias:
            self.bias = Parameter(rt.empty(num_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class LocalResponseNorm(Module):
    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0
                 ) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


def _channel_windows(channels: int, size: int) -> tuple[Any, Any]:
    """PyTorch's legacy CrossMapLRN2d as two (C, C) 0/1 matrices: the squares each channel's
    scale sums in its forward (its running window never drops channel 0, as there), and the
    ratios each channel's gradient sums in its backward (the centred window)."""
    import numpy as np

    pre_pad = int((size - 1) / 2 + 1)
    forward = np.zeros((channels, channels))
    for c in range(channels):
        low = 0 if c <= pre_pad else c - pre_pad + 1
        forward[c, low:min(c + pre_pad, channels)] = 1.0
        if c > pre_pad:
            forward[c, 0] = 1.0
    inverse_pre_pad = int(size - (size - 1) / 2)
    backward = np.zeros((channels, channels))
    for c in range(channels):
        low = max(c - inverse_pre_pad, 0)
        backward[c, low:max(min(c + size - inverse_pre_pad, channels), 0)] = 1.0
    return forward, backward


def _mix_channels(matrix: Tensor, x: Tensor) -> Tensor:
    """Each output channel c: the sum of x's channels j weighted by matrix[c, j]."""
    return (x.movedim(1, -1) @ matrix.transpose(0, 1)).movedim(-1, 1)


class _CrossMapLRN2dFunction(rt.autograd.Function):
    @staticmethod
    def forward(ctx: Any, input: Tensor, size: int, alpha: float, beta: float,  # noqa: A002
                k: float) -> Tensor:
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D "
                             "instead.")
        forward, backward = (rt.tensor(m, dtype=input.dtype, device=input.device)
                             for m in _channel_windows(input.shape[1], size))
        scale = _mix_channels(forward, input * input) * (alpha / size) + k
        output = scale.pow(-beta) * input
        ctx.save_for_backward(input, output, scale, backward)
        ctx.size, ctx.alpha, ctx.beta = size, alpha, beta
        return output

    @staticmethod
    def backward(ctx: Any, grad_output: Tensor) -> tuple[Any, ...]:
        input, output, scale, backward = ctx.saved_tensors  # noqa: A001
        ratio = _mix_channels(backward, grad_output * output / scale)
        cache_ratio = 2 * ctx.alpha * ctx.beta / ctx.size
        grad = scale.pow(-ctx.beta) * grad_output - input * ratio * cache_ratio
        return grad, None, None, None, None


class CrossMapLRN2d(Module):
    """PyTorch's legacy cross-channel LRN of 4-D inputs, its forward and backward formulas as
    they are (they differ from F.local_response_norm's)."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1
                 ) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return _CrossMapLRN2dFunction.apply(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
