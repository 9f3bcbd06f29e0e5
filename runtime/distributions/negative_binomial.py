"""Negative binomial distribution."""

from __future__ import annotations

from typing import Any

import numpy as np

import runtime as rt
import runtime.nn.functional as F

from .. import _dtype as D
from ..ops.shapes import Size
from ..tensor import Tensor
from . import constraints
from ._gamma import host_draw
from .bernoulli import one_of
from .distribution import Distribution
from .poisson import host
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["NegativeBinomial"]


class NegativeBinomial(Distribution):
    """The number of successes before ``total_count`` failures of Bernoulli trials of success
    probability ``probs`` (or log-odds ``logits``); draws are Gamma-Poisson host draws."""

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count: Any, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        one_of(probs, logits)
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.type_as(self.probs)
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.type_as(self.logits)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> NegativeBinomial:
        new = self._expanded(NegativeBinomial, batch_shape, _instance,
                             {"total_count": 0, "probs": 0, "logits": 0})
        new._param = new.probs if "probs" in self.__dict__ else new.logits
        return new

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.logits.exp()

    @property
    def mode(self) -> Tensor:
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self) -> Tensor:
        return self.mean / rt.sigmoid(-self.logits)

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> Size:
        return self._param.size()

    def sample(self, sample_shape: Any = Size()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        odds = np.exp(host(self.logits))
        rates = host_draw("gamma", shape, D.float64, self._param.device,
                          {"shape": host(self.total_count), "scale": odds})
        return host_draw("poisson", shape, self._param.dtype, self._param.device,
                         {"lam": host(rates)})

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        unnormalized = (self.total_count * F.logsigmoid(-self.logits)
                        + value * F.logsigmoid(self.logits))
        normalization = (-rt.lgamma(self.total_count + value) + rt.lgamma(1.0 + value)
                         + rt.lgamma(self.total_count))
        normalization = rt.where(self.total_count + value == 0.0, 0.0, normalization)
        return unnormalized - normalization
