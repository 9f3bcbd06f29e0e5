"""Geometric distribution."""

from __future__ import annotations

from numbers import Number
from typing import Any

import runtime as rt
import runtime.nn.functional as F

from ..ops.shapes import Size
from ..tensor import Tensor
from . import constraints
from .bernoulli import one_of
from .distribution import Distribution
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Geometric"]


class Geometric(Distribution):
    """The number of failures before the first success of Bernoulli trials of success
    probability ``probs`` (or log-odds ``logits``)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        one_of(probs, logits)
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
        else:
            (self.logits,) = broadcast_all(logits)
        param = self.probs if probs is not None else self.logits
        scalar = isinstance(probs if probs is not None else logits, Number)
        super().__init__(Size() if scalar else param.size(), validate_args=validate_args)
        if self._validate_args and probs is not None:
            valid = self.probs > 0
            if not bool(valid.all()):
                invalid = self.probs.detach()[~valid]
                raise ValueError(
                    "Expected parameter probs "
                    f"({type(self.probs).__name__} of shape {tuple(self.probs.shape)}) "
                    f"of distribution {self!r} "
                    f"to be positive but found invalid values:\n{invalid}")

    def expand(self, batch_shape: Any, _instance: Any = None) -> Geometric:
        return self._expanded(Geometric, batch_shape, _instance, {"probs": 0, "logits": 0})

    @property
    def mean(self) -> Tensor:
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Tensor:
        return rt.zeros_like(self.probs)

    @property
    def variance(self) -> Tensor:
        return (1.0 / self.probs - 1.0) / self.probs

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits, is_binary=True)

    def sample(self, sample_shape: Any = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with rt.no_grad():
            p = self.probs
            u = rt.rand(shape, dtype=p.dtype, device=p.device)
            u = u.clamp(min=rt.finfo(p.dtype).tiny)
            return (u.log() / rt.log1p(-p)).floor()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        probs = rt.where((probs == 1) & (value == 0), 0.0, probs)  # 0 * log(0) is 0 here
        return value * rt.log1p(-probs) + self.probs.log()

    def entropy(self) -> Tensor:
        return F.binary_cross_entropy_with_logits(self.logits, self.probs,
                                                  reduction="none") / self.probs
