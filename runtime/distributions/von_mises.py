"""Von Mises (circular normal) distribution."""

from __future__ import annotations

import math
from numbers import Number
from typing import Any

import numpy as np

import runtime as rt

from ..ops.shapes import Size
from ..tensor import Tensor
from . import constraints
from ._gamma import host_draw
from .distribution import Distribution
from .poisson import host
from .utils import broadcast_all

__all__ = ["VonMises"]


def log_i0(x: Tensor) -> Tensor:
    """log of the modified Bessel function I0, without overflow (``i0e(x) = e^-x I0(x)``)."""
    return rt.special.i0e(x).log() + x


class VonMises(Distribution):
    """Von Mises distribution on the circle of mean direction ``loc`` and ``concentration``;
    draws (numpy's sampler, on the host) lie in [-pi, pi) and carry no gradient."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc: Any, concentration: Any, validate_args: bool | None = None
                 ) -> None:
        self.loc, self.concentration = broadcast_all(loc, concentration)
        scalar = isinstance(loc, Number) and isinstance(concentration, Number)
        super().__init__(Size() if scalar else self.loc.size(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> VonMises:
        return self._expanded(VonMises, batch_shape, _instance, {"loc": 0, "concentration": 0})

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        """The circular variance ``1 - I1(k) / I0(k)``."""
        k = self.concentration
        return 1 - rt.special.i1e(k) / rt.special.i0e(k)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return (self.concentration * rt.cos(value - self.loc) - math.log(2 * math.pi)
                - log_i0(self.concentration))

    def sample(self, sample_shape: Any = Size()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        draw = host_draw("vonmises", shape, self.loc.dtype, self.loc.device,
                         {"mu": np.zeros(()), "kappa": host(self.concentration)})
        x = draw + self.loc.detach()
        return (x + math.pi) % (2 * math.pi) - math.pi
