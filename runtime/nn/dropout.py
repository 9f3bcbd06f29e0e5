"""`Dropout`: zeroes elements with probability p while training; the identity in eval mode."""

from __future__ import annotations

from runtime.nn import functional as F
from runtime.nn.module import Module
from runtime.tensor import Tensor


class Dropout(Module):
    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout(input, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"
