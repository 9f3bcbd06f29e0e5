"""Kumaraswamy distribution."""

from __future__ import annotations

from typing import Any

import runtime as rt

from ..tensor import Tensor
from . import constraints
from .gumbel import EULER
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .uniform import Uniform
from .utils import broadcast_all

__all__ = ["Kumaraswamy"]


def _moment(a: Tensor, b: Tensor, n: int) -> Tensor:
    """E[X^n] = b B(1 + n/a, b)."""
    arg = 1 + n / a
    return b * (rt.lgamma(arg) + rt.lgamma(b) - rt.lgamma(arg + b)).exp()


class Kumaraswamy(TransformedDistribution):
    """Kumaraswamy of ``concentration1`` (a) and ``concentration0`` (b) on (0, 1), density
    ``a b x^(a-1) (1 - x^a)^(b-1)``: ``(1 - U^(1/b))^(1/a)`` for U uniform."""

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1: Any, concentration0: Any,
                 validate_args: bool | None = None) -> None:
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base = Uniform(rt.full_like(self.concentration0, 0), rt.full_like(self.concentration0, 1),
                       validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()),
                      AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Kumaraswamy:
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(*batch_shape)
        new.concentration0 = self.concentration0.expand(*batch_shape)
        return super().expand(batch_shape, _instance=new)  # type: ignore[return-value]

    @property
    def mean(self) -> Tensor:
        return _moment(self.concentration1, self.concentration0, 1)

    @property
    def mode(self) -> Tensor:
        """((a - 1) / (a b - 1))^(1/a) where a >= 1 and b >= 1 (not both 1), else NaN (torch
        2.13's formula gives NaN for nearly every a, b: this is the density's maximum)."""
        a, b = self.concentration1, self.concentration0
        mode = ((a - 1) / (a * b - 1)).pow(a.reciprocal())
        defined = (a >= 1) & (b >= 1) & ((a > 1) | (b > 1))
        return rt.where(defined, mode, float("nan"))

    @property
    def variance(self) -> Tensor:
        return _moment(self.concentration1, self.concentration0, 2) - self.mean.pow(2)

    def entropy(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        harmonic_b = rt.digamma(b + 1) + EULER
        return (1 - b.reciprocal()) + (1 - a.reciprocal()) * harmonic_b - a.log() - b.log()
