"""Fisher-Snedecor (F) distribution."""

from __future__ import annotations

from numbers import Number
from typing import Any

import runtime as rt

from ..ops.shapes import Size
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .utils import broadcast_all

__all__ = ["FisherSnedecor"]


class FisherSnedecor(Distribution):
    """F distribution of ``df1`` and ``df2`` degrees of freedom: the ratio of two scaled
    chi-squared draws (reparameterized Gamma draws from the host)."""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1: Any, df2: Any, validate_args: bool | None = None) -> None:
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1, validate_args=validate_args)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2, validate_args=validate_args)
        scalar = isinstance(df1, Number) and isinstance(df2, Number)
        super().__init__(Size() if scalar else self.df1.size(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> FisherSnedecor:
        new = self._expanded(FisherSnedecor, batch_shape, _instance, {"df1": 0, "df2": 0})
        new._gamma1 = self._gamma1.expand(new.batch_shape)
        new._gamma2 = self._gamma2.expand(new.batch_shape)
        return new

    @property
    def mean(self) -> Tensor:
        return rt.where(self.df2 > 2, self.df2 / (self.df2 - 2), float("nan"))

    @property
    def mode(self) -> Tensor:
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return rt.where(self.df1 > 2, mode, float("nan"))

    @property
    def variance(self) -> Tensor:
        d1, d2 = self.df1, self.df2
        finite = 2 * d2.pow(2) * (d1 + d2 - 2) / (d1 * (d2 - 2).pow(2) * (d2 - 4))
        return rt.where(d2 > 4, finite, float("nan"))

    def rsample(self, sample_shape: Any = Size()) -> Tensor:
        x1 = self._gamma1.rsample(sample_shape)
        x2 = self._gamma2.rsample(sample_shape)
        tiny = rt.finfo(x2.dtype).tiny
        return (x1 / x2.clamp(min=tiny)).clamp(min=tiny)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        half1, half2 = self.df1 * 0.5, self.df2 * 0.5
        ratio = self.df1 / self.df2
        t1 = rt.lgamma(half1 + half2) - rt.lgamma(half1) - rt.lgamma(half2)
        t2 = half1 * ratio.log() + (half1 - 1) * rt.log(value)
        t3 = (half1 + half2) * rt.log1p(ratio * value)
        return t1 + t2 - t3
