"""Binomial distribution."""

from __future__ import annotations

from numbers import Number
from typing import Any

import runtime as rt

from ..ops.shapes import Size
from ..tensor import Tensor
from . import constraints
from ._gamma import host_draw
from .bernoulli import one_of
from .distribution import Distribution
from .poisson import host
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Binomial"]


def _clamp_by_zero(x: Tensor) -> Tensor:
    """max(x, 0) with a gradient of 1/2 at 0 (as torch's)."""
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class Binomial(Distribution):
    """Binomial distribution of ``total_count`` trials each succeeding with ``probs`` (or
    log-odds ``logits``); samples are host draws (eager in a captured step)."""

    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count: Any = 1, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        one_of(probs, logits)
        # a number of trials given as a number is kept: entropy and enumerate_support need
        # it as an int, which a tensor gives only by reading its value (not in a capture)
        self._number_total = total_count if isinstance(total_count, Number) else None
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.type_as(self.probs)
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.type_as(self.logits)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Binomial:
        new = self._expanded(Binomial, batch_shape, _instance,
                             {"total_count": 0, "probs": 0, "logits": 0})
        new._param = new.probs if "probs" in self.__dict__ else new.logits
        new._number_total = self._number_total
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.probs

    @property
    def mode(self) -> Tensor:
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

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
        return host_draw("binomial", shape, self._param.dtype, self._param.device,
                         {"n": host(self.total_count).astype("int64"), "p": host(self.probs)})

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        n = self.total_count
        log_factorial_n = rt.lgamma(n + 1)
        log_factorial_k = rt.lgamma(value + 1)
        log_factorial_nmk = rt.lgamma(n - value + 1)
        # n * log1p(exp(logits)) written so that large |logits| neither overflow nor cancel
        normalize = (n * _clamp_by_zero(self.logits)
                     + n * rt.log1p(rt.exp(-self.logits.abs())) - log_factorial_n)
        return value * self.logits - log_factorial_k - log_factorial_nmk - normalize

    def _homogeneous_total(self, what: str) -> int:
        """The one number of trials (torch's error where they differ)."""
        if self._number_total is not None:
            return int(self._number_total)
        total = int(self.total_count.max().item())
        if not self.total_count.min().item() == total:
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
        return total

    def entropy(self) -> Tensor:
        self._homogeneous_total("entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(rt.exp(log_prob) * log_prob).sum(0)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        total = self._homogeneous_total("enumerate_support")
        values = rt.arange(1 + total, dtype=self._param.dtype, device=self._param.device)
        values = values.view(-1, *([1] * len(self._batch_shape)))
        return values.expand(-1, *self._batch_shape) if expand else values
