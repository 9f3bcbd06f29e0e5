"""rt.autograd.functional: vjp, jvp, jacobian, hessian, vhp, hvp, after
torch/autograd/functional.py (same signatures, results and error texts).

Everything is built on reverse mode. ``jvp`` and ``hvp`` use PyTorch's double-backward trick;
``vectorize=True`` runs one batched ``grad`` (``is_grads_batched``) where PyTorch vmaps, and a
``"forward-mode"`` strategy, which PyTorch allows only with ``vectorize=True``, gives the same
Jacobian computed in reverse mode (there is no forward-mode AD here).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..creation import eye, zeros_like
from ..ops.functional import stack
from .api import grad as autograd_grad
from .grad_mode import enable_grad, is_grad_enabled, set_grad_enabled

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]

Tensors = tuple[Any, ...]


# --- helpers (PyTorch's, with its names) --------------------------------------------------------
def _as_tuple(inp: Any, arg_name: str, fn_name: str) -> tuple[bool, Tensors]:
    """Whether ``inp`` was a tuple, and it as a tuple of tensors."""
    from ..tensor import Tensor

    is_tuple = isinstance(inp, tuple)
    inp = inp if is_tuple else (inp,)
    for i, el in enumerate(inp):
        if not isinstance(el, Tensor):
            where = f"the value at index {i}" if is_tuple else f"the given {arg_name}"
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple "
                            f"of Tensors but {where} has type {type(el)}.")
    return is_tuple, inp


def _tuple_postprocess(res: Any, to_unpack: bool | tuple[bool, bool]) -> Any:
    """Undo _as_tuple: unwrap the levels (outer, inner) that were not tuples."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        to_unpack = to_unpack[0]
    return res if to_unpack else res[0]


def _grad_preprocess(inputs: Tensors, create_graph: bool, need_graph: bool) -> Tensors:
    """New tensor objects for the inputs (so the function's own captures of them differ):
    differentiable views under create_graph, else detached leaves."""
    return tuple(inp.view_as(inp) if create_graph and inp.requires_grad
                 else inp.detach().requires_grad_(need_graph) for inp in inputs)


def _grad_postprocess(inputs: Any, create_graph: bool) -> Any:
    from ..tensor import Tensor

    if isinstance(inputs[0], Tensor):
        return inputs if create_graph else tuple(inp.detach() for inp in inputs)
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v: Tensors, other: Tensors, is_other_tuple: bool) -> None:
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got "
                               f"{len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.size() != el_other.size():
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be {el_other.size()} but got "
                               f"{el_v.size()}.")


_INDEPENDENT = {
    "hessian": ("The hessian of the user-provided function with respect to input {i} is "
                "independent of the input. This is not allowed in strict mode. You should ensure "
                "that your function is thrice differentiable and that the hessian depends on the "
                "inputs."),
    "jacobian": ("While computing the hessian, found that the jacobian of the user-provided "
                 "function with respect to input {i} is independent of the input. This is not "
                 "allowed in strict mode. You should ensure that your function is twice "
                 "differentiable and that the jacobian depends on the inputs (this would be "
                 "violated by a linear function for example)."),
    "grad_inputs": ("The gradient with respect to input {i} is independent of the inputs of the "
                    "user-provided function. This is not allowed in strict mode."),
    "outputs": ("Output {i} of the user-provided function does not require gradients. The "
                "outputs must be computed in a differentiable manner from the input when running "
                "in strict mode."),
}


def _check_requires_grad(inputs: Tensors, input_type: str, strict: bool) -> None:
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:  # only grad_inputs
            raise RuntimeError(f"The output of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode.")
        if not inp.requires_grad:
            raise RuntimeError(_INDEPENDENT[input_type].format(i=i))


def _autograd_grad(outputs: Tensors, inputs: Tensors, grad_outputs: Tensors | None = None,
                   create_graph: bool = False, retain_graph: bool | None = None,
                   is_grads_batched: bool = False) -> Tensors:
    """autograd.grad over the outputs that require grad (None for unused inputs); all None
    when no output does."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    outs, gos = zip(*pairs)
    return autograd_grad(outs, inputs, gos, allow_unused=True, create_graph=create_graph,
                         retain_graph=retain_graph, is_grads_batched=is_grads_batched)


_ZERO_STAGE = {
    "back": ("The output of the user-provided function is independent of input {i}. This is "
             "not allowed in strict mode."),
    "back_trick": ("The gradient with respect to the input is independent of entry {i} in the "
                   "grad_outputs when using the double backward trick to compute forward mode "
                   "gradients. This is not allowed in strict mode."),
    "double_back": ("The jacobian of the user-provided function is independent of input {i}. "
                    "This is not allowed in strict mode."),
    "double_back_trick": ("The hessian of the user-provided function is independent of entry "
                          "{i} in the grad_jacobian. This is not allowed in strict mode as it "
                          "prevents from using the double backward trick to replace forward "
                          "mode AD."),
}


def _fill_in_zeros(grads: Tensors, refs: Tensors, strict: bool, create_graph: bool, stage: str
                   ) -> Tensors:
    """Zeros shaped as refs for the None grads, or strict mode's errors."""
    res = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_ZERO_STAGE[stage].format(i=i))
            g = zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode when "
                               "create_graph=True.")
        res.append(g)
    return tuple(res)


def _prepare(func: Callable[..., Any], inputs: Any, v: Any, create_graph: bool, strict: bool,
             fn_name: str, v_matches_outputs: bool = False
             ) -> tuple[bool, Tensors, bool, Tensors, Tensors | None]:
    """The steps vjp, jvp, vhp and hvp share (grad mode on): tuple and preprocess the inputs
    and v, check v against the inputs (or, for vjp, the outputs), run func."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
    if v is not None:
        v = _grad_preprocess(_as_tuple(v, "v", fn_name)[1], create_graph=create_graph,
                             need_graph=False)
        if not v_matches_outputs:
            _validate_v(v, inputs, is_inputs_tuple)
    elif not v_matches_outputs and (len(inputs) != 1 or inputs[0].nelement() != 1):
        raise RuntimeError("The vector v can only be None if the input to the user-provided "
                           "function is a single Tensor with a single element.")
    is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function",
                                          fn_name)
    _check_requires_grad(outputs, "outputs", strict=strict)
    return is_inputs_tuple, inputs, is_outputs_tuple, outputs, v


def _single_output(outputs: Tensors, is_outputs_tuple: bool, fn_name: str) -> None:
    from ..tensor import Tensor

    if is_outputs_tuple or not isinstance(outputs[0], Tensor):
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].nelement() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should "
                           "contain a single element")


def _finish(outputs: Tensors, is_outputs_tuple: bool, res: Tensors, is_res_tuple: bool,
            create_graph: bool) -> tuple[Any, Any]:
    return (_tuple_postprocess(_grad_postprocess(outputs, create_graph), is_outputs_tuple),
            _tuple_postprocess(_grad_postprocess(res, create_graph), is_res_tuple))


# --- public API ---------------------------------------------------------------------------------
def vjp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """(func(inputs), v^T J): the vector-Jacobian product at the inputs."""
    with enable_grad():
        is_inputs_tuple, inputs, is_outputs_tuple, outputs, v = _prepare(
            func, inputs, v, create_graph, strict, "vjp", v_matches_outputs=True)
        if v is not None:
            _validate_v(v, outputs, is_outputs_tuple)
        elif len(outputs) != 1 or outputs[0].nelement() != 1:
            raise RuntimeError("The vector v can only be None if the user-provided function "
                               "returns a single Tensor with a single element.")
    with set_grad_enabled(bool(create_graph) or is_grad_enabled()):
        grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, inputs, strict, create_graph, "back")
    return _finish(outputs, is_outputs_tuple, res, is_inputs_tuple, create_graph)


def jvp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """(func(inputs), J v), by the double-backward trick: the vjp is linear in its
    grad_outputs, so differentiating it with respect to them gives J v."""
    with enable_grad():
        _, inputs, is_outputs_tuple, outputs, v = _prepare(func, inputs, v, create_graph,
                                                           strict, "jvp")
        grad_outputs = tuple(zeros_like(out, requires_grad=True) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)
    with set_grad_enabled(bool(create_graph) or is_grad_enabled()):
        grad_res = _autograd_grad(grad_inputs, grad_outputs, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick")
    return _finish(outputs, is_outputs_tuple, res, is_outputs_tuple, create_graph)


def _standard_basis(tensors: Tensors) -> Tensors:
    """The identity of size sum(numels), split by columns into one block per tensor, each of
    that tensor's dtype and device."""
    numels = [t.numel() for t in tensors]
    total = sum(numels)
    blocks, start = [], 0
    for t, n in zip(tensors, numels):
        blocks.append(eye(total, dtype=t.dtype, device=t.device)[:, start:start + n])
        start += n
    return tuple(blocks)


def _jacobian_vectorized(inputs: Tensors, outputs: Tensors, create_graph: bool) -> Any:
    """All rows of every output's Jacobian from one batched grad over the standard basis."""
    numels = [out.numel() for out in outputs]
    flat_outputs = tuple(out.reshape(-1) for out in outputs)
    vj = _autograd_grad(flat_outputs, inputs, _standard_basis(outputs), create_graph=create_graph,
                        is_grads_batched=True)
    per_input = []
    for g, inp in zip(vj, inputs):
        if g is None:
            g = zeros_like(inp).expand((sum(numels), *inp.shape))
        per_input.append([jac.view(tuple(out.shape) + tuple(inp.shape))
                          for jac, out in zip(g.split(numels, dim=0), outputs)])
    return tuple(zip(*per_input))


def _jacobian_rows(inputs: Tensors, outputs: Tensors, create_graph: bool, strict: bool) -> Any:
    """Each output's Jacobian one row (one output element) at a time."""
    jacobian = []
    for i, out in enumerate(outputs):
        rows: list[list[Any]] = [[] for _ in inputs]
        for j in range(out.nelement()):
            vj = _autograd_grad((out.reshape(-1)[j],), inputs, retain_graph=True,
                                create_graph=create_graph)
            for k, (vj_el, inp) in enumerate(zip(vj, inputs)):
                if vj_el is None:
                    if strict:
                        raise RuntimeError(f"Output {i} of the user-provided function is "
                                           f"independent of input {k}. This is not allowed in "
                                           "strict mode.")
                    vj_el = zeros_like(inp)
                elif strict and create_graph and not vj_el.requires_grad:
                    raise RuntimeError(f"The jacobian of the user-provided function is "
                                       f"independent of input {i}. This is not allowed in strict "
                                       "mode when create_graph=True.")
                rows[k].append(vj_el)
        jacobian.append(tuple(stack(r, dim=0).view(tuple(out.shape) + tuple(inp.shape))
                              for r, inp in zip(rows, inputs)))
    return tuple(jacobian)


def jacobian(func: Callable[..., Any], inputs: Any, create_graph: bool = False,
             strict: bool = False, vectorize: bool = False, strategy: str = "reverse-mode"
             ) -> Any:
    """The Jacobian of func at inputs: for one output and one input a tensor of shape
    output.shape + input.shape; tuples of tuples (outputs, then inputs) otherwise."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". '
                             'Hint: If your function has more outputs than inputs, "forward-mode" '
                             'tends to be more performant. Otherwise, prefer to use '
                             '"reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                "runtime.autograd.functional.jacobian: `create_graph=True` and "
                '`strategy="forward-mode"` are not supported together (yet). Please either set '
                '`create_graph=False` or `strategy="reverse-mode"`.')
        if strict:
            raise RuntimeError(
                "runtime.autograd.functional.jacobian: `strict=True` and "
                '`strategy="forward-mode"` are not supported together (yet). Please either set '
                '`strict=False` or `strategy="reverse-mode"`.')
        if not vectorize:
            raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse "
                                      "Hessian isonly implemented for `vectorize=True`.")
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        is_outputs_tuple, outputs = _as_tuple(func(*inputs),
                                              "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outputs, "outputs", strict=strict)
        if vectorize:
            if strict:
                raise RuntimeError("runtime.autograd.functional.jacobian: `strict=True` and "
                                   "`vectorized=True` are not supported together. Please either "
                                   "set `strict=False` or `vectorize=False`.")
            jac = _jacobian_vectorized(inputs, outputs, create_graph)
        else:
            jac = _jacobian_rows(inputs, outputs, create_graph, strict)
        return _tuple_postprocess(_grad_postprocess(jac, create_graph),
                                  (is_outputs_tuple, is_inputs_tuple))


def hessian(func: Callable[..., Any], inputs: Any, create_graph: bool = False,
            strict: bool = False, vectorize: bool = False,
            outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """The Hessian of a function with one single-element output: the Jacobian of its
    Jacobian; input.shape + input.shape for one input, tuples of tuples otherwise."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def ensure_single_output_function(*inp: Any) -> Any:
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict=strict)
        _single_output(t_out, is_out_tuple, "hessian")
        return out.squeeze()

    def jac_func(*inp: Any) -> Any:
        if outer_jacobian_strategy == "forward-mode":
            inp = tuple(t.requires_grad_(True) for t in inp)
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict,
                   vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def _scalar_jacobian(func: Callable[..., Any], inputs: Any, v: Any, create_graph: bool,
                     strict: bool, fn_name: str) -> tuple[bool, Tensors, bool, Tensors, Any, Tensors]:
    """vhp's and hvp's first half: run a single-element func and take its gradient with a
    graph (grad mode on)."""
    is_inputs_tuple, inputs, is_outputs_tuple, outputs, v = _prepare(func, inputs, v,
                                                                     create_graph, strict, fn_name)
    _single_output(outputs, is_outputs_tuple, fn_name)
    jac = _autograd_grad(outputs, inputs, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict=strict)
    return is_inputs_tuple, inputs, is_outputs_tuple, outputs, v, jac


def vhp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """(func(inputs), v^T H) for a function with one single-element output."""
    with enable_grad():
        is_inputs_tuple, inputs, is_outputs_tuple, outputs, v, jac = _scalar_jacobian(
            func, inputs, v, create_graph, strict, "vhp")
    with set_grad_enabled(bool(create_graph) or is_grad_enabled()):
        grad_res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back")
    return _finish(outputs, is_outputs_tuple, res, is_inputs_tuple, create_graph)


def hvp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """(func(inputs), H v) for a function with one single-element output, by the
    double-backward trick."""
    with enable_grad():
        is_inputs_tuple, inputs, is_outputs_tuple, outputs, v, jac = _scalar_jacobian(
            func, inputs, v, create_graph, strict, "hvp")
        grad_jac = tuple(zeros_like(inp, requires_grad=True) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict=strict)
    with set_grad_enabled(bool(create_graph) or is_grad_enabled()):
        grad_res = _autograd_grad(double_back, grad_jac, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back_trick")
    return _finish(outputs, is_outputs_tuple, res, is_inputs_tuple, create_graph)
