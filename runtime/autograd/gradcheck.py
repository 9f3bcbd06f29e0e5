"""Numerical gradient checks (float64 central differences, PyTorch's defaults)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
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


def _numerical_jacobians(fn: Callable[..., Any], inputs: tuple[Any, ...], eps: float
                         ) -> list[list[np.ndarray | None]]:
    """Central differences of every floating output: ``[output][input]`` Jacobians of shape
    (input numel, output numel), None for an output that is not a floating tensor."""
    from ..tensor import Tensor

    outs = _as_tuple(fn(*inputs))
    floating = [isinstance(o, Tensor) and o.dtype.is_floating_point for o in outs]
    diff = _diff_inputs(inputs)
    jacs: list[list[np.ndarray | None]] = [
        [np.zeros((t.numel(), o.numel())) if ok else None for t in diff]
        for o, ok in zip(outs, floating)]
    for i, t in enumerate(diff):
        flat = t._data.reshape(-1)  # a view: writes perturb the input in place
        for j in range(t.numel()):
            orig = flat[j].item()
            flat[j] = orig + eps
            # copy now: a view output would otherwise see the next perturbation too
            plus = [_host_float64(o) if ok else None
                    for o, ok in zip(_as_tuple(fn(*inputs)), floating)]
            flat[j] = orig - eps
            minus = [_host_float64(o) if ok else None
                     for o, ok in zip(_as_tuple(fn(*inputs)), floating)]
            flat[j] = orig
            for k, (a, b) in enumerate(zip(plus, minus)):
                jac = jacs[k][i]
                if jac is not None and a is not None and b is not None:
                    jac[j] = (a.reshape(-1) - b.reshape(-1)) / (2 * eps)
    return jacs


def _analytical_jacobian(out: Any, diff: list[Any]) -> list[np.ndarray]:
    """Row by row (one backward per output element) Jacobians of ``out`` w.r.t. ``diff``."""
    from ..creation import zeros_like

    jacs = [np.zeros((t.numel(), out.numel())) for t in diff]
    for k in range(out.numel()):
        g = zeros_like(out)
        g._data.reshape(-1)[k] = 1.0
        grads = autograd_grad([out], diff, [g], retain_graph=True, allow_unused=True)
        for jac, gi in zip(jacs, grads):
            if gi is not None:
                jac[:, k] = _host_float64(gi).reshape(-1)
    return jacs


def _grad_dtypes_ok(out: Any, diff: list[Any]) -> bool:
    """Whether the gradients of ``out`` have their inputs' dtypes (check_grad_dtypes)."""
    from ..creation import ones_like

    grads = autograd_grad([out], diff, [ones_like(out)], retain_graph=True, allow_unused=True)
    return all(g is None or g.dtype == t.dtype for g, t in zip(grads, diff))


_FAILED_NONDET_MSG = """\n
NOTE: If your op relies on non-deterministic operations i.e., it is listed here:
https://pytorch.org/docs/stable/generated/torch.use_deterministic_algorithms.html
this failure might be expected.

If you are adding a new operator, please file an issue and then use one of the
workarounds. The workaround depends on how your test invokes gradcheck/gradgradcheck.
If the test
- manually invokes gradcheck/gradgradcheck, then call gradcheck/gradgradcheck
  with `nondet_tol=<tol>` as a keyword argument.
- is OpInfo-based (e.g., in test_ops_gradients.py), then modify the OpInfo for the test
  to have `gradcheck_nondet_tol=<tol>`.
- is a Module test (e.g., in common_nn.py), then modify the corresponding
  module_test entry to have `gradcheck_nondet_tol=<tol>`
"""


def _as_tensor_text(a: np.ndarray) -> str:
    from ..creation import tensor

    return str(tensor(a))


def gradcheck(func: Callable[..., Any], inputs: Any, *, eps: float = 1e-6, atol: float = 1e-5,
              rtol: float = 1e-3, raise_exception: bool = True, nondet_tol: float = 0.0,
              check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
              check_batched_grad: bool = False, check_batched_forward_grad: bool = False,
              check_forward_ad: bool = False, check_backward_ad: bool = True,
              fast_mode: bool = False, masked: bool | None = None) -> bool:
    """PyTorch's gradcheck (its slow mode; fast_mode checks the same full Jacobians): the
    autograd Jacobian of every differentiable output against central differences, the
    backward run twice (``nondet_tol``), zero grad_outputs giving zero gradients and, with
    ``check_undefined_grad``, undefined (None) grad_outputs handled. A failed check raises
    GradcheckError, or returns False where ``raise_exception`` is False."""
    if not (check_forward_ad or check_backward_ad):
        raise AssertionError("Expected at least one of check_forward_ad or check_backward_ad "
                             "to be True")
    if check_batched_grad and not check_backward_ad:
        raise AssertionError("Setting check_batched_grad=True requires check_backward_ad to be "
                             "True")
    if check_batched_forward_grad and not check_forward_ad:
        raise AssertionError("Setting check_batched_forward_grad=True requires "
                             "check_forward_ad to be True")
    if check_forward_ad or check_batched_forward_grad:  # never accepted and ignored
        raise NotImplementedError("gradcheck: check_forward_ad needs forward-mode AD, which "
                                  "this runtime does not have")
    if check_batched_grad:
        raise NotImplementedError("gradcheck: check_batched_grad (the backward under vmap) is "
                                  "not supported by this runtime")
    try:
        return _gradcheck(func, _as_tuple(inputs), eps, atol, rtol, nondet_tol,
                          check_undefined_grad, check_backward_ad, check_grad_dtypes)
    except GradcheckError:
        if raise_exception:
            raise
        return False


def _gradcheck(func: Callable[..., Any], inputs_t: tuple[Any, ...], eps: float, atol: float,
               rtol: float, nondet_tol: float, check_undefined_grad: bool,
               check_backward_ad: bool, check_grad_dtypes: bool = False) -> bool:
    from ..tensor import Tensor

    diff = _diff_inputs(inputs_t)
    if not diff:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but "
                         "none of them have requires_grad=True.")
    for idx, t in enumerate(inputs_t):
        if not _diff_inputs((t,)):
            continue
        if t.dtype.name != "float64":
            warnings.warn(f"Input #{idx} requires gradient and is not a double precision floating "
                          "point or complex. This check will likely fail if all the inputs are "
                          "not of double precision floating point or complex. ", stacklevel=3)
        if not all(st > 0 or n <= 1 for st, n in zip(t.stride(), t.shape)):
            raise RuntimeError(f"The {idx}th input has a dimension with stride 0. gradcheck only "
                               "supports inputs that are non-overlapping to be able to compute "
                               "the numerical gradients correctly. You should call .contiguous "
                               "on the input before passing it to gradcheck.")
    func_out = _as_tuple(func(*inputs_t))
    differentiable = [isinstance(o, Tensor) and o.requires_grad for o in func_out]
    numerical = _numerical_jacobians(func, inputs_t, eps)
    if not any(differentiable):  # PyTorch: the numerical gradient must then be zero
        for per_output in numerical:
            for jac in per_output:
                if jac is not None and np.any(jac != 0):
                    raise GradcheckError("Numerical gradient for function expected to be zero")
        return True
    outputs = [o for o, d in zip(func_out, differentiable) if d]
    numerical = [n for n, d in zip(numerical, differentiable) if d]
    for i, out in enumerate(outputs):
        if check_grad_dtypes and not _grad_dtypes_ok(out, diff):
            raise GradcheckError("Gradient has dtype mismatch")
        first = _analytical_jacobian(out, diff)
        second = _analytical_jacobian(out, diff)
        if any(a.size and np.abs(a - b).max() > nondet_tol for a, b in zip(first, second)):
            raise GradcheckError(
                "Backward is not reentrant, i.e., running backward with same input and "
                "grad_output multiple times gives different values, although analytical "
                "gradient matches numerical gradient."
                f"The tolerance for nondeterminism was {nondet_tol}." + _FAILED_NONDET_MSG)
        for j, (a, n) in enumerate(zip(first, numerical[i])):
            if n is not None and not np.allclose(a, n, rtol=rtol, atol=atol):
                raise GradcheckError(
                    f"Jacobian mismatch for output {i:d} with respect to input {j:d},\n"
                    f"numerical:{_as_tensor_text(n)}\nanalytical:{_as_tensor_text(a)}\n")
    if not check_backward_ad:
        return True
    _check_backward_mul_by_grad_output(outputs, diff)
    if check_undefined_grad:
        _check_undefined_grad(func, inputs_t, diff, len(outputs))
    return True


def _check_backward_mul_by_grad_output(outputs: list[Any], diff: list[Any]) -> None:
    """Zero grad_outputs must give zero gradients, of the inputs' dtype and size."""
    from ..creation import zeros_like

    grads = autograd_grad(outputs, diff, [zeros_like(o) for o in outputs], allow_unused=True)
    for gi, di in zip(grads, diff):
        if gi is None:
            continue
        if np.any(_host_float64(gi) != 0):
            raise GradcheckError("backward not multiplied by grad_output")
        if gi.dtype is not di.dtype:
            raise GradcheckError("grad is incorrect type")
        if gi.device != di.device:
            raise GradcheckError("grad is incorrect device")
        if gi.shape != di.shape:
            raise GradcheckError("grad is incorrect size")


def _check_undefined_grad(func: Callable[..., Any], inputs_t: tuple[Any, ...], diff: list[Any],
                          n_outputs: int) -> None:
    """PyTorch's check_undefined_grad: backward with every grad_output undefined (and, for
    several outputs, one at a time) must run and give undefined or zero gradients."""
    from ..creation import zeros_like
    from ..tensor import Tensor
    from .engine import get_default_engine
    from .node import gradient_edge

    def outputs() -> list[Any]:
        return [o for o in _as_tuple(func(*inputs_t)) if isinstance(o, Tensor) and o.requires_grad]

    def bc_warning() -> None:
        warnings.warn("Backwards compatibility: New undefined gradient support checking feature "
                      "is enabled by default, but it may break existing callers of this "
                      "function. If this is true for you, you can call this function with "
                      '"check_undefined_grad=False" to disable the feature', stacklevel=4)

    cases = [[None] * n_outputs]
    if n_outputs > 1:
        cases += [[None if k == idx else True for k in range(n_outputs)]
                  for idx in range(n_outputs)]
    for case in cases:
        outs = outputs()
        grads = [None if c is None else zeros_like(o) for c, o in zip(case, outs)]
        try:
            result = get_default_engine().execute(
                [gradient_edge(o) for o in outs], grads, False, False, accumulate_grad=False,
                outputs=[gradient_edge(t) for t in diff])
        except RuntimeError as e:
            bc_warning()
            raise GradcheckError("Expected backward function to handle undefined output grads. "
                                 'Please look at "Notes about undefined output gradients" in '
                                 '"tools/autograd/derivatives.yaml"') from e
        for gi in result:
            if gi is not None and np.any(_host_float64(gi) != 0):
                bc_warning()
                raise GradcheckError(
                    "Expected all input grads to be undefined or zero when all output grads "
                    'are undefined or zero. Please look at "Notes about undefined output '
                    'gradients" in "tools/autograd/derivatives.yaml"')


def gradgradcheck(func: Callable[..., Any], inputs: Any, grad_outputs: Any = None, *,
                  eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
                  gen_non_contig_grad_outputs: bool = False, raise_exception: bool = True,
                  nondet_tol: float = 0.0, check_undefined_grad: bool = True,
                  check_grad_dtypes: bool = False, check_batched_grad: bool = False,
                  check_fwd_over_rev: bool = False, check_rev_over_rev: bool = True,
                  fast_mode: bool = False, masked: bool = False) -> bool:
    """gradcheck of the function that maps (inputs, grad_outputs) to first-order gradients,
    as PyTorch's: default grad_outputs uniform in [-1, 1), one per differentiable output."""
    from ..creation import rand
    from ..tensor import Tensor

    if not (check_fwd_over_rev or check_rev_over_rev):
        raise AssertionError("Expected at least one of check_fwd_over_rev or check_rev_over_rev "
                             "to be True")
    if check_undefined_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_undefined_grad=True requires check_rev_over_rev to "
                             "be True")
    if check_batched_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_batched_grad=True requires check_rev_over_rev to be "
                             "True")
    inputs_t = _as_tuple(inputs)
    if grad_outputs is None:
        outs = [o for o in _as_tuple(func(*inputs_t))
                if isinstance(o, Tensor) and o.requires_grad]
        grad_outputs_t = tuple(
            (rand(o.shape, dtype=o.dtype if o.dtype.is_floating_point else None,
                  device=o.device) * 2 - 1).requires_grad_() for o in outs)
    else:
        grad_outputs_t = _as_tuple(grad_outputs)
    n_in = len(inputs_t)

    def first_order(*args: Any) -> tuple[Any, ...]:
        ins, gos = args[:n_in], args[n_in:]
        outs = [o for o in _as_tuple(func(*ins)) if isinstance(o, Tensor) and o.requires_grad]
        grads = autograd_grad(outs, _diff_inputs(ins), gos, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_order, (*inputs_t, *grad_outputs_t), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes, check_batched_grad=check_batched_grad,
                     fast_mode=fast_mode, check_forward_ad=check_fwd_over_rev,
                     check_backward_ad=check_rev_over_rev, masked=masked)
