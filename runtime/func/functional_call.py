"""``torch.func.functional_call`` (one dict or a sequence of dicts, over
``nn.utils.stateless``'s reparametrization) and ``stack_module_state``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..nn.module import Module
from ..nn.utils.stateless import _functional_call, _untie
from ..ops.functional import stack
from ..tensor import Tensor

__all__ = ["functional_call", "stack_module_state"]


def _merged(dicts: Any) -> dict[str, Tensor]:
    if isinstance(dicts, dict):
        return dicts
    if not isinstance(dicts, Sequence):
        raise ValueError("Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of "
                         f"dicts, but got {type(dicts)}")
    if not all(isinstance(d, dict) for d in dicts):
        raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
    counts: dict[str, int] = {}
    for d in dicts:
        for k in d:
            counts[k] = counts.get(k, 0) + 1
    repeated = [k for k, n in counts.items() if n > 1]
    if repeated:
        raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional "
                         "call is ambiguous")
    return {k: v for d in dicts for k, v in d.items()}


def _check_values(module: Module, given: dict[str, Any], tie_weights: bool,
                  strict: bool) -> None:
    """PyTorch's error for a value that is neither a tensor nor None, raised where its
    ``swap_tensor`` raises it: after the tied-weights check and ``strict``'s."""
    bad = next((v for v in given.values() if v is not None and not isinstance(v, Tensor)),
               None)
    if bad is None:
        return
    tensors = _untie(module, given) if tie_weights else given
    if strict:
        valid = {n for n, _ in [*module.named_parameters(remove_duplicate=False),
                                *module.named_buffers(remove_duplicate=False)]}
        if valid != set(tensors):
            return  # _functional_call raises strict's error
    raise TypeError(f"{bad} is not an instance of runtime.Tensor")


def functional_call(module: Module, parameter_and_buffer_dicts: Any, args: Any = None,
                    kwargs: dict[str, Any] | None = None, *, tie_weights: bool = True,
                    strict: bool = False) -> Any:
    """``module(*args, **kwargs)`` with the given tensors (dotted names; one dict or a
    sequence of dicts with distinct keys) in place of its parameters and buffers for this
    call; gradients flow to them."""
    merged = _merged(parameter_and_buffer_dicts)
    _check_values(module, merged, tie_weights, strict)
    return _functional_call(module, merged, args, kwargs, tie_weights=tie_weights,
                            strict=strict)


def _stacked(tensors: list[Tensor], name: str) -> Tensor:
    flags = {t.requires_grad for t in tensors}
    if len(flags) > 1:
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    result = stack(tensors)
    return result.detach().requires_grad_() if True in flags else result


def stack_module_state(models: Sequence[Module]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The parameters and the buffers of ``models`` (same class, same training mode),
    each stacked along a new first dimension: leaves, requiring grad as the originals."""
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same "
                           "training/eval mode.")
    if not all(type(m) is type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    params = [dict(m.named_parameters()) for m in models]
    buffers = [dict(m.named_buffers()) for m in models]
    return ({k: _stacked([p[k] for p in params], k) for k in params[0]},
            {k: _stacked([b[k] for b in buffers], k) for k in buffers[0]})
