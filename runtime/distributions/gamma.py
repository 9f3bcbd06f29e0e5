"""Gamma distribution."""

from __future__ import annotations

from numbers import Number
from typing import Any

import runtime as rt

from ..ops.shapes import Size
from ..tensor import Tensor
from . import constraints
from ._gamma import standard_gamma
from .distribution import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Gamma"]


class Gamma(ExponentialFamily):
    """Gamma distribution of shape ``concentration`` and ``rate`` (mean
    ``concentration / rate``). ``rsample`` differentiates the draw implicitly
    (``-(dCDF/dconcentration) / pdf``); draws come from the host, so a captured step that
    samples runs eagerly."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration: Any, rate: Any, validate_args: bool | None = None
                 ) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        scalar = isinstance(concentration, Number) and isinstance(rate, Number)
        super().__init__(Size() if scalar else self.concentration.size(),
                         validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Gamma:
        return self._expanded(Gamma, batch_shape, _instance, {"concentration": 0, "rate": 0})

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self) -> Tensor:
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape: Any = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        value = standard_gamma(self.concentration.expand(*shape)) / self.rate.expand(*shape)
        return value.clamp(min=rt.finfo(value.dtype).tiny)

    def log_prob(self, value: Any) -> Tensor:
        # a number too, as torch's (the one distribution whose log_prob converts its value)
        value = rt.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (rt.xlogy(self.concentration, self.rate) + rt.xlogy(self.concentration - 1, value)
                - self.rate * value - rt.lgamma(self.concentration))

    def cdf(self, value: Tensor) -> Tensor:
        """The regularized lower incomplete gamma P(concentration, rate * value), as torch's
        ``special.gammainc`` (differentiable in rate and value, not in concentration)."""
        if self._validate_args:
            self._validate_sample(value)
        return rt.special.gammainc(self.concentration, self.rate * value)

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        return self.concentration - 1, -self.rate

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        return rt.lgamma(x + 1) + (x + 1) * (-y.reciprocal()).log()

    def entropy(self) -> Tensor:
        c = self.concentration
        return c - self.rate.log() + rt.lgamma(c) + (1.0 - c) * rt.digamma(c)
