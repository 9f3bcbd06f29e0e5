"""`CosineSimilarity`: a thin wrapper of `runtime.nn.functional.cosine_similarity`."""

from __future__ import annotations

from runtime.nn import functional as F
from runtime.nn.module import Module
from runtime.tensor import Tensor


class CosineSimilarity(Module):
    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.cosine_similarity(x1, x2, self.dim, self.eps)
