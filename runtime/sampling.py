"""Random sampling with PyTorch's names: ``normal`` (its four overloads), ``bernoulli``,
``poisson``, ``binomial`` and the in-place fills ``cauchy_``, ``geometric_``,
``log_normal_``, all drawn from the runtime's generators (``generator=``, else the device's
default one, which ``rt.manual_seed`` seeds): PyTorch's Mersenne Twister stream, drawn as
PyTorch's CPU kernels draw it (``runtime._torch_rng``) but for ``poisson`` and ``binomial``
(numpy's samplers over the same stream: other numbers); the distributions and rules are
PyTorch's.

Gradients follow PyTorch's table: ``normal``, ``bernoulli(p)`` and ``poisson`` record a node
whose gradient is zero (PyTorch's ``NormalBackward*`` give ``zeros_like``: no
reparameterization; ``rsample`` of a distribution is the differentiable draw);
``binomial`` and ``bernoulli(input, p)`` record one whose backward is PyTorch's error."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _dtype as D
from . import _torch_rng, creation
from ._device import canonical_device, move_array
from .autograd.grad_mode import _state as _grad_state
from .ops import functional as F
from .ops.composite import no_derivative
from .ops.dispatch import named
from .ops.more_ops import traced_normal
from .ops.shapes import broadcast_shapes
from .tensor import Tensor
from .tracing import GraphBreak, active_tracer

_NORMAL_SIGNATURES = (
    "(Tensor mean, Tensor std, *, torch.Generator generator = None, Tensor out = None)",
    "(Tensor mean, float std = 1, *, torch.Generator generator = None, Tensor out = None)",
    "(float mean, Tensor std, *, torch.Generator generator = None, Tensor out = None)",
    "(float mean, float std, tuple of ints size, *, torch.Generator generator = None, "
    "Tensor out = None, torch.dtype dtype = None, torch.layout layout = None, torch.device "
    "device = None, bool pin_memory = False, bool requires_grad = False)")


def _zero_gradient(value: Tensor, inputs: Sequence[Any], name: str) -> Tensor:
    """``value`` (drawn off the graph) recorded, where grad mode is on and an input requires
    grad, in a node named PyTorch's ``name`` that passes each such input a zero gradient of
    its own shape: where(True, value, path) sends ``path`` zeros, as PyTorch's formulas
    (``zeros_like``) for these samplers."""
    needing = [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]
    if not (needing and _grad_state.enabled):
        return value
    path = F.mul(needing[0], 0.0)
    for t in needing[1:]:
        path = F.add(path, F.mul(t, 0.0))
    always = Tensor._make(np.array(True), D.bool_, "cpu")
    return named(F.where(always, value.detach(), F.cast(path, value.dtype)), name)


def _not_implemented_for(kernel: str, dtype: D.DType) -> NotImplementedError:
    return NotImplementedError(f'"{kernel}" not implemented for '
                               f"'{D.scalar_type_name(dtype)}'")


def _values(t: Tensor, what: str) -> np.ndarray:
    """t's values on the host: a check or draw that reads them cannot be captured."""
    if active_tracer() is not None:
        raise GraphBreak(f"{what} inside a captured step")
    return np.asarray(t.detach().cpu().numpy())


def _invalid_normal(args: Sequence[Any], kwargs: dict[str, Any]) -> TypeError:
    def kind(v: Any) -> str:
        return "Tensor" if isinstance(v, Tensor) else type(v).__name__

    got = ", ".join([kind(a) for a in args] + [f"{k}={kind(v)}" for k, v in kwargs.items()])
    lines = "\n".join(f" * {s}" for s in _NORMAL_SIGNATURES)
    return TypeError(f"normal() received an invalid combination of arguments - got ({got}), "
                     f"but expected one of:\n{lines}\n")


def _check_std(std: Any) -> None:
    if isinstance(std, Tensor):
        values = _values(std, "normal's std check")
        if not np.all(values >= 0):  # NaN fails too, as PyTorch's
            raise RuntimeError("normal expects all elements of std >= 0.0")
    elif not std >= 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {float(std):g}")


def normal(mean: Any = 0.0, std: Any = 1.0, size: Any = None, *, generator: Any = None,
           out: Tensor | None = None, dtype: Any = None, layout: Any = None,
           device: Any = None, pin_memory: bool = False, requires_grad: bool = False
           ) -> Tensor:
    """Draws from N(mean, std^2): ``mean`` and ``std`` tensors (broadcast; the result takes
    mean's dtype), a tensor and a float (the tensor's dtype and shape), or two floats and a
    ``size`` (then ``dtype``, ``device``, ``requires_grad`` as a factory's), as PyTorch's four
    overloads. A zero gradient reaches mean and std, as PyTorch's."""
    factory = {"dtype": dtype, "layout": layout, "device": device, "pin_memory": pin_memory,
               "requires_grad": requires_grad}
    given = {k: v for k, v in factory.items() if v not in (None, False)}
    tensors = isinstance(mean, Tensor) or isinstance(std, Tensor)
    if tensors and (size is not None or given) or not tensors and (
            size is None or not isinstance(size, (tuple, list))):
        args = [a for a in (mean, std, size) if a is not None]
        raise _invalid_normal(args, given)
    if not tensors:
        return _normal_floats(float(mean), float(std), tuple(size), generator, out, dtype,
                              device, requires_grad)
    _check_std(std)
    like = mean if isinstance(mean, Tensor) else std
    if not like.dtype.is_floating_point:
        raise _not_implemented_for("normal_kernel_cpu", like.dtype)
    shape = tuple(like.shape)
    if isinstance(mean, Tensor) and isinstance(std, Tensor):
        shape = broadcast_shapes(tuple(mean.shape), tuple(std.shape))
    noise = creation.randn(shape, generator=generator, dtype=like.dtype, device=like.device)
    plain = [t.detach() if isinstance(t, Tensor) else t for t in (mean, std)]
    value = F.cast(F.add(F.mul(noise, plain[1]), plain[0]), like.dtype)
    overload = 3 if isinstance(mean, Tensor) and isinstance(std, Tensor) else (
        1 if isinstance(mean, Tensor) else 2)
    result = _zero_gradient(value, (mean, std), f"NormalBackward{overload}")
    if out is not None:
        return F.written_to(out, result, "normal")
    return result


def _normal_floats(mean: float, std: float, size: tuple[int, ...], generator: Any,
                   out: Tensor | None, dtype: Any, device: Any, requires_grad: bool) -> Tensor:
    _check_std(std)
    if out is not None:
        dtype, device = out.dtype, out.device
    dt = D.as_dtype(dtype) if dtype is not None else D.default_float
    if not dt.is_floating_point:
        raise _not_implemented_for("normal_kernel_cpu", dt)
    if active_tracer() is None:  # PyTorch's normal_(mean, std) (runtime._torch_rng)
        value = creation.empty(tuple(size), dtype=dt, device=device).normal_(
            mean, std, generator=generator)
    else:
        value = traced_normal(tuple(size), dt, device, mean, std, generator)
    if out is not None:
        return F.written_to(out, value, "normal")
    return value._factory_requires_grad_(requires_grad)


_BERNOULLI_RANGE = ("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this "
                    "error message be improved?  If so, please report an enhancement request "
                    "to PyTorch.)")


def bernoulli(input: Tensor, p: float | None = None, *, generator: Any = None,  # noqa: A002
              out: Tensor | None = None) -> Tensor:
    """1 with probability ``input`` (a floating tensor of probabilities in [0, 1]), else 0,
    in input's dtype; with ``p`` a float: each element 1 with probability p, input's shape
    and dtype (any dtype). ``out``: written in out's dtype, as PyTorch's."""
    if p is None:
        if not input.dtype.is_floating_point:
            raise _not_implemented_for("bernoulli_tensor_cpu_p_", input.dtype)
        probs = _values(input, "bernoulli")
        if not np.all((probs >= 0) & (probs <= 1)):
            raise RuntimeError(_BERNOULLI_RANGE)
        threshold: Any = input.detach()
    else:
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p:g}")
        threshold = float(p)
    dt = out.dtype if out is not None else input.dtype
    if p is None:
        draw_dt = input.dtype if input.dtype.is_floating_point else D.default_float
        u = creation.rand(input.shape, generator=generator, dtype=draw_dt,
                          device=input.device)
    else:  # PyTorch's bernoulli_(p): a float64 uniform an element
        u = creation.bernoulli_uniforms(tuple(input.shape), generator, input.device)
    value = F.cast(F.lt(u, threshold), dt)
    if out is not None:
        return F.written_to(out, value, "bernoulli")
    if p is None:
        return _zero_gradient(value, (input,), "BernoulliBackward0")
    return no_derivative(value, (input,), RuntimeError,
                         "derivative for aten::bernoulli is not implemented")


def bernoulli_method(self: Tensor, p: float | None = None, *, generator: Any = None) -> Tensor:
    """``Tensor.bernoulli``: ``bernoulli(self)``, or ``bernoulli(self, p)``."""
    return bernoulli(self, p, generator=generator)


def _generator(generator: Any, device: str) -> Any:
    return generator or creation._device_generator(canonical_device(device))


def _host_result(arr: np.ndarray, like: Tensor) -> Tensor:
    return Tensor._make(move_array(arr.astype(like.dtype.np), like.device), like.dtype,
                        like.device)


# numpy's poisson refuses a rate above about 2**63; the draw's spread there (sqrt(rate), a
# relative 1e-9) is below float64's resolution of the rate, so the rate itself is the draw
_POISSON_MAX_RATE = 1e18


def poisson(input: Tensor, generator: Any = None) -> Tensor:  # noqa: A002
    """Counts drawn from Poisson(rate) for each rate of ``input`` (floating, non-negative), in
    input's dtype; a zero gradient to input, as PyTorch's."""
    if not input.dtype.is_floating_point:
        raise _not_implemented_for("poisson_cpu", input.dtype)
    rates = _values(input, "poisson").astype(np.float64)
    if not np.all(rates >= 0):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    rng = _generator(generator, input.device)._rng
    huge = rates > _POISSON_MAX_RATE
    counts = rng.poisson(np.where(huge, 0.0, rates)).astype(np.float64)
    counts = np.where(huge, rates, counts)
    return _zero_gradient(_host_result(counts, input), (input,), "PoissonBackward0")


def binomial(count: Tensor, prob: Tensor, generator: Any = None) -> Tensor:
    """Successes among ``count`` trials of probability ``prob`` (floating tensors of one dtype,
    broadcast), as PyTorch's: a count is taken whole (floored), a negative one is 0 trials, a
    probability outside [0, 1] is clamped to it, NaN in either gives NaN. No derivative
    (backward through it is PyTorch's error)."""
    for name, t in (("count", count), ("prob", prob)):
        if not isinstance(t, Tensor):
            position = 1 if name == "count" else 2
            raise TypeError(f"binomial(): argument '{name}' (position {position}) must be "
                            f"Tensor, not {type(t).__name__}")
        if not t.dtype.is_floating_point:
            raise ValueError(f"binomial only supports floating-point dtypes for {name}, got: "
                             f"{D.scalar_type_name(t.dtype)}")
    if prob.dtype is not count.dtype:
        raise RuntimeError(f"Found dtype {D.scalar_type_name(prob.dtype)} but expected "
                           f"{D.scalar_type_name(count.dtype)}")
    shape = broadcast_shapes(tuple(count.shape), tuple(prob.shape))
    n = np.broadcast_to(_values(count, "binomial").astype(np.float64), shape)
    p = np.broadcast_to(_values(prob, "binomial").astype(np.float64), shape)
    nan = np.isnan(n) | np.isnan(p)
    trials = np.where(nan, 0, np.floor(np.clip(np.nan_to_num(n), 0, None))).astype(np.int64)
    rng = _generator(generator, count.device)._rng
    draws = rng.binomial(trials, np.clip(np.nan_to_num(p), 0.0, 1.0)).astype(np.float64)
    value = _host_result(np.where(nan, np.nan, draws), count)
    return no_derivative(value, (count, prob), RuntimeError,
                         "derivative for aten::binomial is not implemented")


def cauchy_(self: Tensor, median: float = 0.0, sigma: float = 1.0, *, generator: Any = None
            ) -> Tensor:
    """Fills with draws from Cauchy(median, sigma): median + sigma tan(pi (u - 1/2))."""
    if not self.dtype.is_floating_point:
        raise RuntimeError(f"Cauchy distribution is a continuous probability distribution. "
                           f"dtype must be a floating point but you specified "
                           f"{D.type_meta_name(self.dtype)}")
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma:g}")
    if active_tracer() is None:  # PyTorch's numbers (runtime._torch_rng)
        g = _generator(generator, self.device)
        return self.copy_(_host_result(_torch_rng.cauchy(
            g._rng, tuple(self.shape), self.dtype, float(median), float(sigma)), self))
    # PyTorch's draws: a float64 uniform an element (rand64), the formula in float64
    u = creation.bernoulli_uniforms(tuple(self.shape), generator, self.device)
    tans = F.tan(F.mul(F.sub(u, 0.5), math.pi))
    return self.copy_(F.cast(F.add(F.mul(tans, float(sigma)), float(median)), self.dtype))


def log_normal_(self: Tensor, mean: float = 1.0, std: float = 2.0, *, generator: Any = None
                ) -> Tensor:
    """Fills with exp of draws from N(mean, std^2)."""
    if not self.dtype.is_floating_point:
        raise _not_implemented_for("log_normal_cpu", self.dtype)
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std:g}")
    if active_tracer() is None:  # PyTorch's numbers (runtime._torch_rng)
        g = _generator(generator, self.device)
        return self.copy_(_host_result(_torch_rng.log_normal(
            g, tuple(self.shape), self.dtype, float(mean), float(std)), self))
    if self.numel() >= 16:  # randn's draws from 16 on are its vectorized fill's, not these
        raise GraphBreak("log_normal_ of 16 or more elements inside a captured step (PyTorch "
                         "draws one normal_distribution<double> an element)")
    # under 16, randn draws as log_normal_ does: one Box-Muller sample an element, in float64
    n = creation.randn(self.shape, generator=generator, dtype=D.float64, device=self.device)
    return self.copy_(F.cast(F.exp(F.add(F.mul(n, float(std)), float(mean))), self.dtype))


def geometric_(self: Tensor, p: float, *, generator: Any = None) -> Tensor:
    """Fills with the number of Bernoulli(p) trials up to the first success (1, 2, ...);
    integer tensors too, as PyTorch's."""
    if self.dtype is D.bool_:
        raise _not_implemented_for("geometric_cpu", self.dtype)
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p:g}")
    if active_tracer() is not None:
        raise GraphBreak("geometric_ inside a captured step")
    draws = _torch_rng.geometric(_generator(generator, self.device)._rng, tuple(self.shape),
                                 D.float64, float(p))
    return self.copy_(_host_result(draws, self))


Tensor.bernoulli = bernoulli_method  # type: ignore[attr-defined]
Tensor.cauchy_ = cauchy_  # type: ignore[attr-defined]
Tensor.log_normal_ = log_normal_  # type: ignore[attr-defined]
Tensor.geometric_ = geometric_  # type: ignore[attr-defined]

__all__ = ["bernoulli", "binomial", "normal", "poisson"]
