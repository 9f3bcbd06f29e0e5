"""InverseGamma distribution: 1 / X for X ~ Gamma."""

from __future__ import annotations

from typing import Any

import runtime as rt

from ..tensor import Tensor
from . import constraints
from .gamma import Gamma
from .transformed_distribution import TransformedDistribution
from .transforms import PowerTransform

__all__ = ["InverseGamma"]


class InverseGamma(TransformedDistribution):
    """The distribution of ``1 / X``, ``X ~ Gamma(concentration, rate)`` (reparameterized
    through the Gamma's implicit gradient)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration: Any, rate: Any, validate_args: bool | None = None
                 ) -> None:
        base = Gamma(concentration, rate, validate_args=validate_args)
        neg_one = -rt.ones((), dtype=base.rate.dtype, device=base.rate.device)
        super().__init__(base, PowerTransform(neg_one), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> InverseGamma:
        new = self._get_checked_instance(InverseGamma, _instance)
        return super().expand(batch_shape, _instance=new)  # type: ignore[return-value]

    @property
    def concentration(self) -> Tensor:
        return self.base_dist.concentration

    @property
    def rate(self) -> Tensor:
        return self.base_dist.rate

    @property
    def mean(self) -> Tensor:
        c = self.concentration
        return rt.where(c > 1, self.rate / (c - 1), float("inf"))

    @property
    def mode(self) -> Tensor:
        return self.rate / (self.concentration + 1)

    @property
    def variance(self) -> Tensor:
        c = self.concentration
        finite = self.rate.pow(2) / ((c - 1).pow(2) * (c - 2))
        return rt.where(c > 2, finite, float("inf"))

    def entropy(self) -> Tensor:
        c = self.concentration
        return c + self.rate.log() + rt.lgamma(c) - (1 + c) * rt.digamma(c)
