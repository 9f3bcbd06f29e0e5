"""`scaled_dot_product_attention` from primitives: matmuls, a masked softmax and dropout,
so its backward comes from theirs and a captured step fuses the elementwise parts."""

from __future__ import annotations

import math

from .. import _dtype as D
from ..creation import arange
from ..tensor import Tensor
from . import composite as C
from . import functional as F
from .shapes import broadcast_error


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
    err = broadcast_error(tuple(scores.shape), tuple(mask.shape))
    if err is not None:
        raise RuntimeError(err)
    return F.where(mask, scores, -math.inf) if mask.dtype is D.bool_ else F.add(scores, mask)


def safe_softmax(scores: Tensor) -> Tensor:
    """softmax over the last axis, but 0 across a row that is all -inf (a query whose every
    key is masked), as PyTorch's ``_safe_softmax``: sdpa gives such a query a zero output and
    zero gradients where a plain softmax gives NaN (exp(-inf - -inf)). The row is softmaxed as
    zeros before it is replaced, so its backward sends nothing back, not 0 * NaN."""
    dead = F.eq(F.amax(scores.detach(), -1, keepdim=True), -math.inf)
    return F.where(dead, 0.0, C.softmax(F.where(dead, 0.0, scores), -1))


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """softmax(q kᵀ · scale + mask) v over the last two axes, as PyTorch's reference (its math
    backend): scale defaults to 1/sqrt(E); dropout (p = dropout_p) acts on the weights.
    ``enable_gqa``: grouped-query attention, key and value with fewer heads (axis -3) than the
    query, each head of theirs serving query.size(-3) // key.size(-3) query heads in turn."""
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
    if enable_gqa:
        key, value = _grouped(query, key), _grouped(query, value)
    length, source = query.shape[-2], key.shape[-2]
    factor = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = F.mul(F.matmul(query, F.transpose(key, -2, -1)), factor)
    if is_causal:
        scores = F.where(causal_mask(length, source, query.device), scores, -math.inf)
    if attn_mask is not None:
        scores = apply_attn_mask(scores, attn_mask)
    weights = safe_softmax(scores)
    if dropout_p > 0.0:
        weights = C.dropout(weights, dropout_p)
    return F.matmul(weights, value)


def _grouped(query: Tensor, kv: Tensor) -> Tensor:
    """``kv`` with each head (axis -3) repeated for the query heads it serves, as PyTorch's
    ``repeat_interleave(query.size(-3) // kv.size(-3), -3)`` under enable_gqa."""
    if query.ndim < 3 or kv.ndim < 3:
        return kv  # no head axis: nothing to group (PyTorch's reference does the same)
    heads, kv_heads = query.shape[-3], kv.shape[-3]
    if kv_heads == heads:
        return kv
    if kv_heads == 0 or heads % kv_heads:
        # PyTorch's text, cut short as it is
        raise RuntimeError("Number of heads in key and value must divide the number of heads in ")
    shape = tuple(kv.shape)
    wide = F.expand(F.unsqueeze(kv, -3), *shape[:-2], heads // kv_heads, *shape[-2:])
    return F.reshape(wide, (*shape[:-3], heads, *shape[-2:]))
