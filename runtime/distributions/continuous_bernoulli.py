"""ContinuousBernoulli: the density on [0, 1] proportional to probs^x (1 - probs)^(1 - x)."""

from __future__ import annotations

import math
from numbers import Number
from typing import Any

import runtime as rt
import runtime.nn.functional as F

from ..ops.shapes import Size
from ..tensor import Tensor
from . import constraints
from .bernoulli import one_of
from .distribution import ExponentialFamily
from .utils import broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ExponentialFamily):
    """Continuous Bernoulli of ``probs`` (or ``logits``) on [0, 1] (Loaiza-Ganem and
    Cunningham, 2019). Its normalizer ``C = 2 atanh(1 - 2p) / (1 - 2p)`` and moments are
    replaced by their Taylor series at p = 1/2 inside ``lims``, where the closed forms cancel;
    ``rsample`` is the inverse CDF of a uniform draw."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, probs: Any = None, logits: Any = None,
                 lims: tuple[float, float] = (0.499, 0.501),
                 validate_args: bool | None = None) -> None:
        one_of(probs, logits)
        if probs is not None:
            scalar = isinstance(probs, Number)
            (self.probs,) = broadcast_all(probs)
            if validate_args is not None and not bool(
                    self.arg_constraints["probs"].check(self.probs).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(self.probs)
        else:
            scalar = isinstance(logits, Number)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        self._lims = lims
        super().__init__(Size() if scalar else self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> ContinuousBernoulli:
        new = self._expanded(ContinuousBernoulli, batch_shape, _instance,
                             {"probs": 0, "logits": 0})
        new._lims = self._lims
        new._param = new.logits if "logits" in self.__dict__ else new.probs
        return new

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self) -> Size:
        return self._param.size()

    def _outside_unstable_region(self) -> Tensor:
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self) -> Tensor:
        """probs where the closed forms are used, the lower limit elsewhere (so that the
        untaken branch of each ``where`` stays finite, gradients too)."""
        return rt.where(self._outside_unstable_region(), self.probs, self._lims[0])

    def _log_odds_gap(self, cut: Tensor) -> Tensor:
        return rt.log1p(-cut) - cut.log()

    def _cont_bern_log_norm(self) -> Tensor:
        cut = self._cut_probs()
        closed = self._log_odds_gap(cut).abs().log() - (1.0 - 2.0 * cut).abs().log()
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return rt.where(self._outside_unstable_region(), closed, taylor)

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (self.logits,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        """log((e^x - 1) / x) of the natural parameter x (the logits), its Taylor series
        where x is inside torch's limits shifted by 1/2 (where the closed form cancels)."""
        outside = (x <= self._lims[0] - 0.5) | (x > self._lims[1] - 0.5)
        cut = rt.where(outside, x, self._lims[0] - 0.5)
        closed = rt.special.expm1(cut).abs().log() - cut.abs().log()
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return rt.where(outside, closed, taylor)

    @property
    def mean(self) -> Tensor:
        cut = self._cut_probs()
        closed = cut / (2.0 * cut - 1.0) + 1.0 / self._log_odds_gap(cut)
        y = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * y.pow(2)) * y
        return rt.where(self._outside_unstable_region(), closed, taylor)

    @property
    def variance(self) -> Tensor:
        cut = self._cut_probs()
        closed = (cut * (cut - 1.0) / (1.0 - 2.0 * cut).pow(2)
                  + 1.0 / self._log_odds_gap(cut).pow(2))
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return rt.where(self._outside_unstable_region(), closed, taylor)

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    def sample(self, sample_shape: Any = Size()) -> Tensor:
        with rt.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Any = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        u = rt.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        return self.icdf(u)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return (-F.binary_cross_entropy_with_logits(logits, value, reduction="none")
                + self._cont_bern_log_norm())

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        cut = self._cut_probs()
        closed = (cut.pow(value) * (1.0 - cut).pow(1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        inside = rt.where(self._outside_unstable_region(), closed, value)
        return rt.where(value <= 0.0, 0.0, rt.where(value >= 1.0, 1.0, inside))

    def icdf(self, value: Tensor) -> Tensor:
        cut = self._cut_probs()
        closed = ((rt.log1p(-cut + value * (2.0 * cut - 1.0)) - rt.log1p(-cut))
                  / (cut.log() - rt.log1p(-cut)))
        return rt.where(self._outside_unstable_region(), closed, value)

    def entropy(self) -> Tensor:
        log_p0 = rt.log1p(-self.probs)
        log_p1 = self.probs.log()
        return self.mean * (log_p0 - log_p1) - self._cont_bern_log_norm() - log_p0
