"""``one_hot``, ``normalize`` and ``cosine_similarity``: PyTorch's functions of that name,
composed from primitives (so they trace into compiled steps and differentiate as their
parts do), with PyTorch's defaults and error texts."""

from __future__ import annotations

from typing import Any

from .. import _dtype as D
from ..tensor import Tensor
from . import functional as F
from .reductions import vector_norm
from .shapes import broadcast_shapes, wrap_dim
from .tensor_ops import clamp_min

_NO_LIMIT = 2 ** 62


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 (*shape, num_classes), 1 where the class is ``tensor``'s value. num_classes -1:
    one more than the largest value (read from the tensor: a compiled step that needs it falls
    back to eager). Values must lie in [0, num_classes): checked by primitives, so a compiled
    step raises as eager does."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"one_hot(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(tensor).__name__}")
    if tensor.dtype is not D.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if not isinstance(num_classes, int) or isinstance(num_classes, bool):
        raise TypeError(f"one_hot(): argument 'num_classes' (position 2) must be int, not "
                        f"{type(num_classes).__name__}")
    if num_classes == -1:
        if tensor.numel() == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(F.amax(tensor).item()) + 1
    elif num_classes < -1:
        raise RuntimeError("num_classes should be positive")
    if tensor.numel():
        F.check_bounds(tensor, 0, _NO_LIMIT, "Class values must be non-negative.",
                       "RuntimeError")
        F.check_bounds(tensor, -_NO_LIMIT, num_classes,
                       "Class values must be smaller than num_classes.", "RuntimeError")
    from ..creation import arange

    classes = arange(num_classes, device=tensor.device)
    return F.cast(F.eq(F.unsqueeze(tensor, -1), classes), D.int64)


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,  # noqa: A002
              out: Tensor | None = None) -> Tensor:
    """``input / max(||input||_p over dim, eps)``, as PyTorch."""
    if out is not None:
        raise NotImplementedError("normalize: out= is not supported")
    denom = clamp_min(vector_norm(input, p, dim, True), eps)
    return F.div(input, F.expand_as(denom, input))


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """The cosine of the angle between x1 and x2 (broadcast together) along ``dim``: each
    divided by its 2-norm (at least ``eps``) first, then their product summed, as PyTorch."""
    for name, t in (("x1", x1), ("x2", x2)):
        if not isinstance(t, Tensor):
            raise TypeError(f"cosine_similarity(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    if x1.dtype is not x2.dtype:
        raise RuntimeError(f"expected common dtype for x1 and x2, got {x1.dtype.name} and "
                           f"{x2.dtype.name}")
    if not x1.dtype.is_floating_point:  # PyTorch's check, before the shapes'
        raise RuntimeError("expected common dtype to be floating point, yet common dtype is "
                           f"{D.scalar_type_name(x1.dtype)}")
    shape = broadcast_shapes(x1.shape, x2.shape)
    a, b = F.expand(x1, *shape), F.expand(x2, *shape)
    wrap_dim(dim, len(shape))
    # PyTorch clamps the norms in place under no_grad: the value is at least eps, the
    # gradient the norm's own
    na, nb = vector_norm(a, 2, dim, True), vector_norm(b, 2, dim, True)
    na = F.add(na, F.sub(clamp_min(na.detach(), eps), na.detach()))
    nb = F.add(nb, F.sub(clamp_min(nb.detach(), eps), nb.detach()))
    return F.sum(F.mul(F.div(a, na), F.div(b, nb)), dim)


__all__: list[Any] = ["cosine_similarity", "normalize", "one_hot"]
