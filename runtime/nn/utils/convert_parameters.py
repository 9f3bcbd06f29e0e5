"""`parameters_to_vector` / `vector_to_parameters`, as in `torch.nn.utils`."""

from __future__ import annotations

from collections.abc import Iterable

import runtime as rt
from runtime.tensor import Tensor


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """The parameters flattened and joined into one 1-D tensor (differentiable)."""
    return rt.cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Each parameter's data replaced by its slice of ``vec`` (not differentiable): as
    torch's ``param.data = ...``, the parameter then is a view of ``vec``, of its dtype."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    offset = 0
    for p in parameters:
        n = p.numel()
        p.data = vec[offset:offset + n].view_as(p).data
        offset += n
