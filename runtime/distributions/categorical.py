"""Categorical distribution."""

from __future__ import annotations

from typing import Any

import runtime as rt

from .. import _dtype as D
from ..ops.shapes import Size
from ..tensor import Tensor
from . import constraints
from .bernoulli import one_of
from .distribution import Distribution
from .utils import lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Categorical"]


def draw_categories(probs: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Category indices of ``shape`` (a sample shape followed by ``probs``' batch shape)
    by the inverse CDF of one uniform draw each: runtime ops only, so a captured step draws
    them in its plan."""
    n = probs.shape[-1]
    cdf = probs.cumsum(-1)
    cdf = cdf / cdf[..., -1:]
    u = rt.rand(shape, dtype=probs.dtype, device=probs.device)
    index = (u.unsqueeze(-1) >= cdf.expand(*shape, n)).sum(-1)
    return index.clamp(max=n - 1).to(D.int64)


class Categorical(Distribution):
    """Categorical distribution over ``{0, ..., K - 1}``: ``probs`` (normalized along the
    last dimension) or ``logits`` (unnormalized log-probabilities)."""

    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}
    has_enumerate_support = True

    def __init__(self, probs: Tensor | None = None, logits: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        one_of(probs, logits)
        if probs is not None:
            if probs.ndim < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.ndim < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        batch_shape = self._param.shape[:-1] if self._param.ndim > 1 else Size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Categorical:
        new = self._expanded(Categorical, batch_shape, _instance, {"probs": 1, "logits": 1})
        new._param = new.probs if "probs" in self.__dict__ else new.logits
        new._num_events = self._num_events
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits)

    @property
    def param_shape(self) -> Size:
        return self._param.size()

    @property
    def mean(self) -> Tensor:
        return rt.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype,
                          device=self.probs.device)

    @property
    def mode(self) -> Tensor:
        return self.probs.argmax(-1)

    @property
    def variance(self) -> Tensor:
        return self.mean

    def sample(self, sample_shape: Any = Size()) -> Tensor:
        with rt.no_grad():
            return draw_categories(self.probs, tuple(self._extended_shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = rt.broadcast_tensors(value, self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self) -> Tensor:
        logits = self.logits.clamp(min=rt.finfo(self.logits.dtype).min)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = rt.arange(self._num_events, dtype=D.int64, device=self._param.device)
        values = values.view(-1, *([1] * len(self._batch_shape)))
        return values.expand(-1, *self._batch_shape) if expand else values
