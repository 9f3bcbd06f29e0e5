"""`scaled_dot_product_attention` from primitives: matmuls, a masked softmax and dropout,
so its backward comes from theirs and a captured step fuses the elementwise parts."""

from __future__ import annotations

import math

from .. import _dtype as D
from ..creation import arange
from ..tensor import Tensor
from . import composite as C
from . import functional as F


def _broadcast_error(a: tuple[int, ...], b: tuple[int, ...]) -> str | None:
    """PyTorch's message for shapes a and b that do not broadcast (None where they do): the
    first mismatch from the right, as its infer_size finds it."""
    n = max(len(a), len(b))
    for dim in range(n - 1, -1, -1):
        i, j = dim - (n - len(a)), dim - (n - len(b))
        sa = a[i] if i >= 0 else 1
        sb = b[j] if j >= 0 else 1
        if sa != sb and sa != 1 and sb != 1:
            return (f"The size of tensor a ({sa}) must match the size of tensor b ({sb}) at "
                    f"non-singleton dimension {dim}")
    return None


def causal_mask(length: int, source: int, device: str) -> Tensor:
    """The bool (length, source) mask of is_causal: position i sees keys 0..i (torch's
    ``ones(L, S).tril()``), built from aranges so a captured step builds it too."""
    rows = F.unsqueeze(arange(length, device=device), 1)
    return F.le(F.unsqueeze(arange(source, device=device), 0), rows)


def apply_attn_mask(scores: Tensor, mask: Tensor) -> Tensor:
    """The scores under an sdpa mask: a bool mask keeps its True entries (the others become
    -inf), a float one is added."""
    if mask.dtype is not D.bool_ and mask.dtype is not scores.dtype:
        raise RuntimeError(
            "Expected attn_mask dtype to be bool or float or to match query dtype, but got "
            f"attn_mask.dtype: {mask.dtype.name} and  query.dtype: {scores.dtype.name} "
            "instead.")
    err = _broadcast_error(tuple(scores.shape), tuple(mask.shape))
    if err is not None:
        raise RuntimeError(err)
    return F.where(mask, scores, -math.inf) if mask.dtype is D.bool_ else F.add(scores, mask)


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None) -> Tensor:
    """softmax(q kᵀ · scale + mask) v over the last two axes, as PyTorch's reference (its math
    backend): scale defaults to 1/sqrt(E); dropout (p = dropout_p) acts on the weights."""
    if query.ndim < 2 or key.ndim < 2 or value.ndim < 2:
        raise RuntimeError(
            "Expected query, key, and value to all be  at least 2 dimensional, but got "
            f"query.dim: {query.ndim} key.dim: {key.ndim} and value.dim: {value.ndim} instead.")
    if not 0.0 <= dropout_p <= 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    if key.shape[-1] != query.shape[-1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{key.shape[-2]}, {query.shape[-1]}] but got: "
                           f"[{key.shape[-2]}, {key.shape[-1]}].")
    if is_causal and attn_mask is not None:
        # PyTorch documents this error; its CPU kernels raise it or apply both masks depending
        # on which kernel it picks for the shapes: one rule here
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                           "when is_causal=True")
    length, source = query.shape[-2], key.shape[-2]
    factor = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = F.mul(F.matmul(query, F.transpose(key, -2, -1)), factor)
    if is_causal:
        scores = F.where(causal_mask(length, source, query.device), scores, -math.inf)
    if attn_mask is not None:
        scores = apply_attn_mask(scores, attn_mask)
    weights = C.softmax(scores, -1)
    if dropout_p > 0.0:
        weights = C.dropout(weights, dropout_p)
    return F.matmul(weights, value)
