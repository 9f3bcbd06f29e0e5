"""Poisson distribution."""

from __future__ import annotations

from numbers import Number
from typing import Any

import numpy as np

import runtime as rt

from ..ops.shapes import Size
from ..tensor import Tensor
from . import constraints
from ._gamma import host_draw
from .distribution import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Poisson"]


def host(t: Tensor) -> np.ndarray:
    return np.asarray(t.detach().cpu().numpy(), dtype=np.float64)


class Poisson(ExponentialFamily):
    """Poisson distribution of ``rate``; samples are drawn on the host (eager in a captured
    step) and carry no gradient."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate: Any, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(Size() if isinstance(rate, Number) else self.rate.size(),
                         validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Poisson:
        return self._expanded(Poisson, batch_shape, _instance, {"rate": 0})

    @property
    def mean(self) -> Tensor:
        return self.rate

    @property
    def mode(self) -> Tensor:
        return self.rate.floor()

    @property
    def variance(self) -> Tensor:
        return self.rate

    def sample(self, sample_shape: Any = Size()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        return host_draw("poisson", shape, self.rate.dtype, self.rate.device,
                         {"lam": host(self.rate)})

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (self.rate.log(),)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return x.exp()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return rt.xlogy(value, rate) - rate - rt.lgamma(value + 1)
