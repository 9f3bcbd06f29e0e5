"""`Dropout`, `Dropout1d`, `Dropout2d`, `Dropout3d`: zero elements (or whole channels) with probability p
while training; the identity in eval mode."""

from __future__ import annotations

from runtime.nn import functional as F
from runtime.nn.module import Module
from runtime.ops.composite import check_dropout_p
from runtime.tensor import Tensor


class _DropoutNd(Module):
    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        check_dropout_p(p)
        self.p = p
        self.inplace = inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    def forward(self, input: Tensor) -> Tensor:
        return F.dropout(input, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    """Whole channels of (N, C, L) or (C, L) inputs zeroed with probability p."""

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """Whole channels of (N, C, H, W) inputs zeroed with probability p."""

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    """Whole channels of (N, C, D, H, W) or (C, D, H, W) inputs zeroed with probability p."""

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout3d(input, self.p, self.training, self.inplace)
