"""Numerical gradient checks (float64 central differences, PyTorch's defaults)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._device import move_array
from .api import grad as autograd_grad


class GradcheckError(RuntimeError):
    pass


def _as_tuple(x: Any) -> tuple[Any, ...]:
    if isinstance(x, list):  # PyTorch accepts a list of inputs too
        return tuple(x)
    return x if isinstance(x, tuple) else (x,)


def _diff_inputs(inputs: tuple[Any, ...]) -> list[Any]:
    from ..tensor import Tensor

    return [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]


def _host_float64(t: Any) -> np.ndarray:
    """A float64 host copy of a tensor's values (a device tensor's copied explicitly)."""
    return np.array(move_array(t._data, "cpu"), dtype=np.float64)


def _numerical_jacobian(fn: Callable[..., Any], inputs: tuple[Any, ...], out_index: int,
                        eps: float) -> list[np.ndarray]:
    from ..tensor import Tensor

    jacs = []
    n_out = _as_tuple(fn(*inputs))[out_index].numel()
    for t in _diff_inputs(inputs):
        flat = t._data.reshape(-1)  # a view: writes perturb the input in place
        jac = np.zeros((t.numel(), n_out))
        for j in range(t.numel()):
            orig = flat[j].item()
            flat[j] = orig + eps
            plus = _as_tuple(fn(*inputs))[out_index]
            assert isinstance(plus, Tensor)
            # copy now: a view output would otherwise see the next perturbation too
            plus_arr = _host_float64(plus)
            flat[j] = orig - eps
            minus = _as_tuple(fn(*inputs))[out_index]
            minus_arr = _host_float64(minus)
            flat[j] = orig
            jac[j] = (plus_arr.reshape(-1) - minus_arr.reshape(-1)) / (2 * eps)
        jacs.append(jac)
    return jacs


def _analytical_jacobian(fn: Callable[..., Any], inputs: tuple[Any, ...], out_index: int
                         ) -> list[np.ndarray]:
    from ..creation import zeros_like

    out = _as_tuple(fn(*inputs))[out_index]
    diff = _diff_inputs(inputs)
    jacs = [np.zeros((t.numel(), out.numel())) for t in diff]
    if not out.requires_grad:
        return jacs
    for k in range(out.numel()):
        g = zeros_like(out)
        g._data.reshape(-1)[k] = 1.0
        grads = autograd_grad([out], diff, [g], retain_graph=True, allow_unused=True)
        for jac, gi in zip(jacs, grads):
            if gi is not None:
                jac[:, k] = _host_float64(gi).reshape(-1)
    return jacs


def gradcheck(func: Callable[..., Any], inputs: Any, *, eps: float = 1e-6, atol: float = 1e-5,
              rtol: float = 1e-3, raise_exception: bool = True, **_: Any) -> bool:
    """Compares the autograd Jacobian with central differences for every output."""
    inputs_t = _as_tuple(inputs)
    if not _diff_inputs(inputs_t):
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but "
                         "none of them have requires_grad=True.")
    for idx, t in enumerate(inputs_t):
        if _diff_inputs((t,)) and t.dtype.name != "float64":
            warnings.warn(f"Input #{idx} requires gradient and is not a double precision floating "
                          "point or complex. This check will likely fail if all the inputs are "
                          "not of double precision floating point or complex. ", stacklevel=2)
    outputs = _as_tuple(func(*inputs_t))
    for i, out in enumerate(outputs):
        if not hasattr(out, "requires_grad") or not out.dtype.is_floating_point:
            continue
        numerical = _numerical_jacobian(func, inputs_t, i, eps)
        analytical = _analytical_jacobian(func, inputs_t, i)
        for j, (a, n) in enumerate(zip(analytical, numerical)):
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                msg = (f"Jacobian mismatch for output {i} with respect to input {j},\n"
                       f"numerical:{n}\nanalytical:{a}\n")
                if raise_exception:
                    raise GradcheckError(msg)
                return False
    return True


def gradgradcheck(func: Callable[..., Any], inputs: Any, grad_outputs: Sequence[Any] | None = None,
                  *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
                  raise_exception: bool = True, **_: Any) -> bool:
    """gradcheck of the function that maps (inputs, grad_outputs) to first-order gradients."""
    from ..creation import randn

    inputs_t = _as_tuple(inputs)
    outputs = _as_tuple(func(*inputs_t))
    if grad_outputs is None:
        grad_outputs = [randn(*o.shape, dtype=o.dtype, requires_grad=True) for o in outputs]
    n_in = len(inputs_t)
    diff_in = _diff_inputs(inputs_t)

    def first_order(*args: Any) -> tuple[Any, ...]:
        ins, gos = args[:n_in], args[n_in:]
        outs = _as_tuple(func(*ins))
        grads = autograd_grad(outs, _diff_inputs(ins), gos, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    if not diff_in:
        return True
    return gradcheck(first_order, (*inputs_t, *grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
