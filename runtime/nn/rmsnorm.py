"""`RMSNorm` over the trailing `normalized_shape` dimensions."""

from __future__ import annotations

from typing import Any

import runtime as rt
from runtime.nn import init
from runtime.nn.module import Module
from runtime.nn.parameter import Parameter
from runtime.ops.composite import rms_norm
from runtime.tensor import Tensor


class RMSNorm(Module):
    def __init__(
        self,
        normalized_shape: int | tuple[int, ...] | list[int],
        eps: float | None = None,
        elementwise_affine: bool = True,
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
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, x: Tensor) -> Tensor:
        return rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")
