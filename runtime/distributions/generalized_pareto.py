"""Generalized Pareto distribution."""

from __future__ import annotations

from numbers import Number
from typing import Any

import runtime as rt

from ..ops.shapes import Size
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """Generalized Pareto of ``loc``, ``scale`` and shape ``concentration`` (xi): survival
    ``(1 + xi z)^(-1/xi)`` for ``z = (x - loc) / scale``, the exponential ``e^-z`` where xi is
    (close to) 0; bounded above by ``loc - scale / xi`` where xi < 0. ``rsample`` is the inverse
    CDF of a uniform draw."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, concentration: Any,
                 validate_args: bool | None = None) -> None:
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        scalar = all(isinstance(v, Number) for v in (loc, scale, concentration))
        super().__init__(Size() if scalar else self.loc.size(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> GeneralizedPareto:
        return self._expanded(GeneralizedPareto, batch_shape, _instance,
                              {"loc": 0, "scale": 0, "concentration": 0})

    def _xi(self) -> tuple[Tensor, Tensor]:
        """Where xi is (close to) 0, and xi with 1 there (so the untaken branches stay
        finite, gradients too)."""
        xi = self.concentration
        zero = rt.isclose(xi, rt.zeros_like(xi))
        return zero, rt.where(zero, 1.0, xi)

    def _z(self, x: Tensor) -> Tensor:
        return (x - self.loc) / self.scale

    def rsample(self, sample_shape: Any = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        u = rt.rand(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        zero, xi = self._xi()
        power = 1 / xi + 1
        general = rt.where(power == 0, power, power * rt.log1p(xi * z))
        return -self.scale.log() - rt.where(zero, z, general)

    def log_survival_function(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        zero, xi = self._xi()
        return rt.where(zero, -z, -rt.log1p(xi * z) / xi)

    def log_cdf(self, value: Tensor) -> Tensor:
        return rt.log1p(-self.log_survival_function(value).exp())

    def cdf(self, value: Tensor) -> Tensor:
        return self.log_cdf(value).exp()

    def icdf(self, value: Tensor) -> Tensor:
        zero, xi = self._xi()
        log_survival = rt.log1p(-value)
        general = self.loc + self.scale / xi * rt.expm1(-xi * log_survival)
        return rt.where(zero, self.loc - self.scale * log_survival, general)

    @property
    def mean(self) -> Tensor:
        xi = self.concentration
        finite = xi < 1
        safe = rt.where(finite, xi, 0.5)
        return rt.where(finite, self.loc + self.scale / (1 - safe), float("nan"))

    @property
    def variance(self) -> Tensor:
        xi = self.concentration
        finite = xi < 0.5
        safe = rt.where(finite, xi, 0.25)
        return rt.where(finite, self.scale.pow(2) / ((1 - safe).pow(2) * (1 - 2 * safe)),
                        float("nan"))

    @property
    def mode(self) -> Tensor:
        return self.loc

    def entropy(self) -> Tensor:
        return (self.scale.log() + self.concentration + 1).expand(*self._batch_shape)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        upper = rt.where(self.concentration < 0, self.loc - self.scale / self.concentration,
                         float("inf"))
        return constraints.interval(self.loc, upper)
