"""LKJ distribution over Cholesky factors of correlation matrices."""

from __future__ import annotations

import math
from typing import Any

import runtime as rt

from ..ops.shapes import Size
from ..tensor import Tensor
from . import constraints
from .beta import Beta
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["LKJCholesky"]


def mvlgamma(a: Tensor, p: int) -> Tensor:
    """The multivariate log-gamma function of dimension ``p``."""
    total = p * (p - 1) / 4 * math.log(math.pi)
    for i in range(p):
        total = total + rt.lgamma(a - i / 2)
    return total


class LKJCholesky(Distribution):
    """LKJ distribution of ``concentration`` over the lower Cholesky factors of ``dim`` x
    ``dim`` correlation matrices (Lewandowski, Kurowicka and Joe, 2009): density proportional
    to ``det(L L^T)^(concentration - 1)``. Draws by the onion method (host Beta draws)."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration: Any = 1.0, validate_args: bool | None = None
                 ) -> None:
        if dim < 2:
            raise ValueError("Expected dim to be an integer greater than or equal to 2. "
                             f"Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        c = self.concentration
        # the onion method's Beta draws, one per row: row k's off-diagonal part has squared
        # norm Beta(k / 2, marginal - (k - 1) / 2) (LKJ 2009, section 3.2). torch 2.13 draws
        # Beta(k - 1/2, ...), whose correlations past the first are too spread (variance 0.25
        # where the LKJ law has 0.22 at dim 4, concentration 0.8)
        offset = rt.arange(dim - 1, dtype=c.dtype, device=c.device)
        offset = rt.cat([rt.zeros(1, dtype=c.dtype, device=c.device), offset])
        marginal = c + 0.5 * (dim - 2)
        self._beta = Beta(0.5 * offset + 0.5, marginal.unsqueeze(-1) - 0.5 * offset,
                          validate_args=validate_args)
        super().__init__(c.size(), (dim, dim), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> LKJCholesky:
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = Size(tuple(batch_shape))
        new.dim = self.dim
        new.concentration = self.concentration.expand(*batch_shape)
        new._beta = self._beta.expand(Size((*batch_shape, self.dim)))
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape: Any = Size()) -> Tensor:
        with rt.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            shape = self._extended_shape(sample_shape)
            u = rt.randn(shape, dtype=y.dtype, device=y.device).tril(-1)
            norms = rt.linalg.vector_norm(u, dim=-1, keepdim=True)
            first_row = rt.arange(self.dim, device=y.device).reshape(self.dim, 1) == 0
            u = rt.where(first_row, 0.0, u / rt.where(first_row, 1.0, norms))
            w = y.sqrt() * u
            tiny = rt.finfo(w.dtype).tiny
            diag = (1 - w.pow(2).sum(-1)).clamp(min=tiny).sqrt()
            return w + rt.diag_embed(diag)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diag = value.diagonal(dim1=-2, dim2=-1)[..., 1:]
        order = rt.arange(2, self.dim + 1, dtype=value.dtype, device=value.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized = (order * diag.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        normalizer = (0.5 * dm1 * math.log(math.pi) + mvlgamma(alpha - 0.5, dm1)
                      - rt.lgamma(alpha) * dm1)
        return unnormalized - normalizer
