"""`clip_grad_norm_`, `get_total_norm`, `clip_grads_with_norm_` and `clip_grad_value_`, as
in `torch.nn.utils`: tensor ops only (no data read in Python; `error_if_nonfinite`'s test is
a check step, ``F.check_bounds``), so a compiled step captures them."""

from __future__ import annotations

import math
import types
import warnings
from collections.abc import Iterable

from runtime.autograd import no_grad
from runtime.creation import tensor
from runtime import _dtype as D
from runtime.ops import functional as F
from runtime.ops.functional import stack
from runtime.ops.tensor_ops import isfinite
from runtime.tensor import Tensor

Parameters = Tensor | Iterable[Tensor]


def _grads(parameters: Parameters) -> list[Tensor]:
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    return [p.grad for p in params if p.grad is not None]


def _check_foreach(foreach: bool | None) -> None:
    # torch's foreach picks fused multi-tensor kernels with the same results; here every
    # choice runs the same ops, so only its type is checked
    if foreach is not None and not isinstance(foreach, bool):
        raise TypeError(f"foreach must be a bool or None, got {type(foreach).__name__}")


def _norm(x: Tensor, p: float) -> Tensor:
    """torch.linalg.vector_norm(x, p) over all elements. A float16 or bfloat16 ``x`` is
    reduced in float32 and the norm rounded once, as torch's (its squares or powers in
    float16 overflowed: a float16 gradient of 300 had an infinite 2-norm)."""
    if p in (math.inf, -math.inf) and x.numel() == 0:
        raise RuntimeError(f"linalg.vector_norm cannot compute the {p} norm on an empty "
                           "tensor because the operation does not have an identity")
    if p == math.inf:
        return x.abs().max()
    if p == -math.inf:
        return x.abs().min()
    dtype = x.dtype
    if dtype in (D.float16, D.bfloat16):
        x = x.to(D.float32)
    if p == 0:
        out = (x != 0).to(x.dtype).sum()
    elif p == 1:
        out = x.abs().sum()
    elif p == 2:
        out = (x * x).sum().sqrt()
    else:
        out = (x.abs() ** p).sum() ** (1.0 / p)
    return out if out.dtype == dtype else out.to(dtype)


def get_total_norm(tensors: Parameters, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """The `norm_type` norm of `tensors` joined into one vector (the norm of their norms),
    without gradient; 0 for none."""
    _check_foreach(foreach)
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return tensor(0.0)
    with no_grad():
        total = _norm(stack([_norm(t, norm_type) for t in tensors]), norm_type)
    if error_if_nonfinite:  # a check step, where .item() made a compiled step run eagerly
        F.check_bounds(isfinite(total).to(D.int64), 1, 2, (
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the "
            "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`"),
            error="RuntimeError")
    return total


def clip_grads_with_norm_(parameters: Parameters, max_norm: float, total_norm: Tensor,
                          foreach: bool | None = None) -> None:
    """Scale the gradients in place by min(max_norm / (total_norm + 1e-6), 1), `total_norm`
    computed beforehand (by `get_total_norm`, say over several models' gradients)."""
    _check_foreach(foreach)
    max_norm = float(max_norm)
    with no_grad():
        grads = _grads(parameters)
        if not grads:
            return
        # always a multiply, never a branch on the coefficient: no data read in Python
        coef = (max_norm / (total_norm + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.to(g.dtype))


def clip_grad_norm_(parameters: Parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """Scale the gradients in place so that their joint `norm_type` norm is at most
    `max_norm`; returns the norm before clipping (of all gradients as one vector):
    `get_total_norm` of the gradients, then `clip_grads_with_norm_`."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)
        if is_generator and not parameters:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will "
                          "occur.", stacklevel=2)
    total = get_total_norm(_grads(parameters), norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_value_(parameters: Parameters, clip_value: float,
                     foreach: bool | None = None) -> None:
    """Clamp every gradient in place to [-clip_value, clip_value]."""
    _check_foreach(foreach)
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(min=-clip_value, max=clip_value)


def clip_grad_norm(parameters: Parameters, max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """Deprecated, as torch's: `clip_grad_norm_`."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)
