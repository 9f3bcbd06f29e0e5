"""Dirichlet distribution."""

from __future__ import annotations

from typing import Any

import runtime as rt

from ..ops.shapes import Size
from ..tensor import Tensor
from . import constraints
from ._gamma import standard_gamma
from .distribution import ExponentialFamily

__all__ = ["Dirichlet"]


class Dirichlet(ExponentialFamily):
    """Dirichlet distribution over the simplex, of ``concentration`` (its last dimension
    the categories). ``rsample`` normalizes reparameterized Gamma draws (so gradients flow
    to ``concentration``; the draws are host draws, eager in a captured step)."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration: Tensor, validate_args: bool | None = None) -> None:
        if concentration.ndim < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Dirichlet:
        return self._expanded(Dirichlet, batch_shape, _instance, {"concentration": 1})

    def rsample(self, sample_shape: Any = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        c = self.concentration.expand(*shape)
        # the gammas normalized in float64, as torch's _sample_dirichlet: with small
        # concentrations float32 gammas underflow to its tiny together, and their ratio
        # became a spurious 1/K (Beta(0.01, 0.01) drew 0.5 a tenth of the time)
        g = standard_gamma(c.double() if c.dtype == rt.float32 else c, kernel="dirichlet")
        x = (g / g.sum(-1, keepdim=True)).to(c.dtype)
        tiny = rt.finfo(x.dtype).tiny
        return x.clamp(min=tiny, max=1 - rt.finfo(x.dtype).eps / 2)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return (rt.xlogy(c - 1.0, value).sum(-1) + rt.lgamma(c.sum(-1))
                - rt.lgamma(c).sum(-1))

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self) -> Tensor:
        """(c - 1)+ normalized; where every concentration is below 1, torch's one-hot of the
        argmax of that row, which is all 0/0 = NaN, so the first category."""
        c = self.concentration
        cm1 = (c - 1).clamp(min=0.0)
        mode = cm1 / cm1.sum(-1, keepdim=True)
        below_one = (c < 1).all(-1, keepdim=True)
        first = rt.arange(c.shape[-1], device=c.device) == 0
        return rt.where(below_one, first.to(c.dtype), mode)

    @property
    def variance(self) -> Tensor:
        c = self.concentration
        c0 = c.sum(-1, keepdim=True)
        return c * (c0 - c) / (c0.pow(2) * (c0 + 1))

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (self.concentration,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return rt.lgamma(x).sum(-1) - rt.lgamma(x.sum(-1))

    def entropy(self) -> Tensor:
        c = self.concentration
        k = c.shape[-1]
        a0 = c.sum(-1)
        return (rt.lgamma(c).sum(-1) - rt.lgamma(a0) - (k - a0) * rt.digamma(a0)
                - ((c - 1.0) * rt.digamma(c)).sum(-1))
