"""Student's t distribution."""

from __future__ import annotations

import math
from numbers import Number
from typing import Any

import runtime as rt

from ..ops.shapes import Size
from ..tensor import Tensor
from . import constraints
from .chi2 import Chi2
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["StudentT"]


class StudentT(Distribution):
    """Student's t of ``df`` degrees of freedom, location ``loc`` and ``scale``. ``rsample``
    divides a normal draw by a reparameterized chi-squared one (a host Gamma draw, eager in
    a captured step)."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df: Any, loc: Any = 0.0, scale: Any = 1.0,
                 validate_args: bool | None = None) -> None:
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df, validate_args=validate_args)
        scalar = all(isinstance(v, Number) for v in (df, loc, scale))
        super().__init__(Size() if scalar else self.df.size(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> StudentT:
        new = self._expanded(StudentT, batch_shape, _instance, {"df": 0, "loc": 0, "scale": 0})
        new._chi2 = self._chi2.expand(new.batch_shape)
        return new

    @property
    def mean(self) -> Tensor:
        return rt.where(self.df > 1, self.loc, float("nan"))

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        df = self.df
        finite = self.scale.pow(2) * df / (df - 2)
        return rt.where(df > 2, finite, rt.where(df > 1, float("inf"), float("nan")))

    def rsample(self, sample_shape: Any = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        x = rt.randn(shape, dtype=self.df.dtype, device=self.df.device)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * x * (z / self.df).rsqrt()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi)
             + rt.lgamma(0.5 * self.df) - rt.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * rt.log1p(y ** 2.0 / self.df) - z

    def entropy(self) -> Tensor:
        df = self.df
        lbeta = rt.lgamma(0.5 * df) + math.lgamma(0.5) - rt.lgamma(0.5 * (df + 1))
        return (self.scale.log() + 0.5 * (df + 1) * (rt.digamma(0.5 * (df + 1))
                                                     - rt.digamma(0.5 * df))
                + 0.5 * df.log() + lbeta)
