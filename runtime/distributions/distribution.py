"""The base class of every distribution (torch.distributions.Distribution)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import runtime as rt

from .. import _dtype as D
from ..ops import functional as F
from ..ops.shapes import Size
from ..tensor import Tensor
from ..tracing import is_tracing
from . import constraints
from .utils import extended_shape, lazy_property

__all__ = ["Distribution"]


def _require(valid: Any, message: Callable[[], str]) -> None:
    """ValueError(message()) unless every element of ``valid`` is true. In a captured step
    the check is a plan step (check_bounds) made at each replay, so validation does not stop
    the capture (a VAE's Normal, a policy's Categorical); its message is made at capture,
    where the values are not known, so it shows the parameters' sizes only."""
    if not isinstance(valid, Tensor):
        if not valid:
            raise ValueError(message())
        return
    if is_tracing():
        text = message().replace("{", "{{").replace("}", "}}")
        F.check_bounds(F.reshape(F.cast(valid, D.int64), (-1,)), 1, 2, text, "ValueError")
        return
    if not bool(valid.all()):
        raise ValueError(message())


def _shown(value: Tensor) -> str:
    """A parameter as torch's repr shows it: a 0-d tensor as its number, another one-element
    tensor as itself, a larger one by its size (in a captured step, where its value is not
    known, by its size too)."""
    if value.numel() != 1 or is_tracing():
        return f"{value.size()}"
    return f"{value.item()}" if value.ndim == 0 else f"{value}"


def _values(value: Tensor) -> str:
    """The values a failed check shows: the tensor, or in a captured step (whose message is
    made before its values are known) a note saying so."""
    return "(not shown: checked in a compiled step)" if is_tracing() else f"{value}"


class Distribution:
    """A probability distribution: ``batch_shape`` independent (not necessarily identical)
    distributions over events of ``event_shape``. Arguments and (with ``validate_args``)
    the values scored are checked against ``arg_constraints`` and ``support``."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turns argument validation on or off for distributions made without
        ``validate_args`` (on unless Python runs with ``-O``)."""
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape: Any = Size(), event_shape: Any = Size(),
                 validate_args: bool | None = None) -> None:
        self._batch_shape = Size(tuple(batch_shape))
        self._event_shape = Size(tuple(event_shape))
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            self._check_parameters()

    def _check_parameters(self) -> None:
        try:
            arg_constraints = self.arg_constraints
        except NotImplementedError:
            arg_constraints = {}
            warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set "
                          "`arg_constraints = {}` or initialize the distribution with "
                          "`validate_args=False` to turn off validation.", stacklevel=3)
        for param, constraint in arg_constraints.items():
            if constraints.is_dependent(constraint):
                continue
            if param not in self.__dict__ and isinstance(getattr(type(self), param, None),
                                                         lazy_property):
                continue  # a lazily made parameter: not checked
            value = getattr(self, param)
            _require(constraint.check(value), lambda: (
                f"Expected parameter {param} ({type(value).__name__} of shape "
                f"{tuple(value.shape)}) of distribution {self!r} to satisfy the constraint "
                f"{constraint!r}, but found invalid values:\n{_values(value)}"))

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        """A distribution of the same kind with its parameters expanded to ``batch_shape``
        (views; no checks repeated)."""
        raise NotImplementedError

    def _expanded(self, cls: type, batch_shape: Any, _instance: Any,
                  params: dict[str, int]) -> Any:
        """``expand`` for a distribution whose parameters are the tensors named in ``params``
        (each with that many event dimensions), those given only as present."""
        new = self._get_checked_instance(cls, _instance)
        batch_shape = Size(tuple(batch_shape))
        for name, event_dims in params.items():
            if name in self.__dict__:
                value = self.__dict__[name]
                tail = tuple(value.shape[value.ndim - event_dims:]) if event_dims else ()
                setattr(new, name, value.expand(*batch_shape, *tail))
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def batch_shape(self) -> Size:
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        return self._event_shape

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:
        raise NotImplementedError

    @property
    def support(self) -> Any:
        raise NotImplementedError

    @property
    def mean(self) -> Tensor:
        raise NotImplementedError

    @property
    def mode(self) -> Tensor:
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    def sample(self, sample_shape: Any = Size()) -> Tensor:
        """A sample of shape ``sample_shape + batch_shape + event_shape`` (no gradient)."""
        with rt.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Any = Size()) -> Tensor:
        """A reparameterized sample: gradients flow to the parameters."""
        raise NotImplementedError

    def sample_n(self, n: int) -> Tensor:
        warnings.warn("sample_n will be deprecated. Use .sample((n,)) instead", UserWarning,
                      stacklevel=2)
        return self.sample(Size((n,)))

    def log_prob(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def cdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def icdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True) -> Tensor:
        raise NotImplementedError

    def entropy(self) -> Tensor:
        raise NotImplementedError

    def perplexity(self) -> Tensor:
        return rt.exp(self.entropy())

    def _extended_shape(self, sample_shape: Any = Size()) -> Size:
        return extended_shape(sample_shape, self._batch_shape, self._event_shape)

    def _validate_sample(self, value: Any) -> None:
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_start = value.ndim - len(self._event_shape)
        if tuple(value.shape[event_start:]) != tuple(self._event_shape):
            raise ValueError("The right-most size of value must match event_shape: "
                             f"{value.size()} vs {self._event_shape}.")
        actual, expected = value.size(), Size(self._batch_shape + self._event_shape)
        for i, j in zip(reversed(actual), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError("Value is not broadcastable with batch_shape+event_shape: "
                                 f"{actual} vs {expected}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample "
                          "validation. Please initialize the distribution with "
                          "`validate_args=False` to turn off validation.", stacklevel=3)
            return
        _require(support.check(value), lambda: (
            f"Expected value argument ({type(value).__name__} of shape "
            f"{tuple(value.shape)}) to be within the support ({support!r}) of the "
            f"distribution {self!r}, but found invalid values:\n{_values(value)}"))

    def _get_checked_instance(self, cls: type, _instance: Any = None) -> Any:
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                "__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self) -> str:
        try:
            names = [k for k in self.arg_constraints if k in self.__dict__]
        except NotImplementedError:
            names = []
        args = ", ".join(f"{p}: {_shown(self.__dict__[p])}" for p in names)
        return f"{self.__class__.__name__}({args})"


class ExponentialFamily(Distribution):
    """Densities ``exp(<t(x), theta> - F(theta) + k(x))``: a subclass gives its natural
    parameters ``theta`` (``_natural_params``), log-normalizer ``F`` (``_log_normalizer``) and
    ``E[k(X)]`` (``_mean_carrier_measure``), and gets ``entropy`` (``F - <theta, grad F> -
    E[k]``) and KL divergences between two of its kind (the Bregman divergence of ``F``)."""

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        raise NotImplementedError

    def _log_normalizer(self, *natural_params: Tensor) -> Tensor:
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self) -> Any:
        raise NotImplementedError

    def entropy(self) -> Tensor:
        """By the log-normalizer's gradient (the mean of the sufficient statistic); stays
        differentiable in the parameters."""
        result: Any = -self._mean_carrier_measure
        with rt.enable_grad():  # the mean parameters are the log-normalizer's gradient
            nparams = list(self._natural_params)
            tracked = rt.is_grad_enabled() and any(p.requires_grad for p in nparams)
            nparams = [p if p.requires_grad else p.detach().requires_grad_() for p in nparams]
            log_norm = self._log_normalizer(*nparams)
            grads = rt.autograd.grad(log_norm.sum(), nparams, create_graph=tracked)
        result = result + log_norm
        for theta, g in zip(nparams, grads):
            result = result - (theta * g).reshape(*self._batch_shape, -1).sum(-1)
        return result if tracked else result.detach()
