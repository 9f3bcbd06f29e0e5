"""`scaled_dot_product_attention` from primitives: matmuls, a masked softmax and dropout,
so its backward comes from theirs and a captured step fuses the elementwise parts."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NoReturn

import numpy as np

from .. import _dtype as D
from ..creation import arange
from ..tensor import Tensor
from ..tracing import GraphBreak, MetaArray, active_tracer
from . import composite as C
from . import functional as F
from .shapes import broadcast_error


def causal_mask(length: int, source: int, device: str) -> Tensor:
    """The bool (length, source) mask of is_causal: position i sees keys 0..i (torch's
    ``ones(L, S).tril()``), built from aranges so a captured step builds it too."""
    rows = F.unsqueeze(arange(length, device=device), 1)
    return F.le(F.unsqueeze(arange(source, device=device), 0), rows)


def check_mask_dtype(mask: Tensor, query: Tensor) -> None:
    """validate_sdpa_input's check of the mask's dtype."""
    if mask.dtype not in (D.bool_, D.float32, query.dtype):
        raise RuntimeError(
            "Expected attn_mask dtype to be bool or float or to match query dtype, but got "
            f"attn_mask.dtype: {D.type_meta_name(mask.dtype)} and  query.dtype: "
            f"{D.type_meta_name(query.dtype)} instead.")


def _empty_attention(query: Tensor, key: Tensor, value: Tensor) -> Tensor:
    """PyTorch's result where there is no query or no value element: zeros of the query's
    shape with value's last size, tied to the inputs by (q.sum() + k.sum() + v.sum()) * 0 so
    that each gets a zero gradient (no shape is checked further)."""
    from ..creation import zeros

    tie = F.mul(F.add(F.add(F.sum(query), F.sum(key)), F.sum(value)), 0.0)
    out = zeros(*query.shape[:-1], value.shape[-1], dtype=query.dtype, device=query.device)
    return F.add(out, tie)


def apply_attn_mask(scores: Tensor, mask: Tensor) -> Tensor:
    """The scores under an sdpa mask: a bool mask keeps its True entries (the others become
    -inf), a float one is added."""
    check_mask_dtype(mask, scores)
    err = broadcast_error(tuple(scores.shape), tuple(mask.shape))
    if err is not None:
        raise RuntimeError(err)
    wide = list(np.broadcast_shapes(tuple(scores.shape), tuple(mask.shape)))
    if wide != list(scores.shape):  # PyTorch adds the mask in place: attn.add_(mask)
        raise RuntimeError(f"output with shape {list(scores.shape)} doesn't match the broadcast "
                           f"shape {wide}")
    if mask.dtype is D.bool_:
        return F.where(mask, scores, -math.inf)
    # a float32 mask is taken for any query dtype, converted to it (PyTorch's convert_boolean_attn_mask)
    return F.add(scores, mask if mask.dtype is scores.dtype else F.cast(mask, scores.dtype))


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
    if not query.dtype is key.dtype is value.dtype:
        raise RuntimeError(
            "Expected query, key, and value to have the same dtype, but got query.dtype: "
            f"{D.type_meta_name(query.dtype)} key.dtype: {D.type_meta_name(key.dtype)} and "
            f"value.dtype: {D.type_meta_name(value.dtype)} instead.")
    if attn_mask is not None:
        check_mask_dtype(attn_mask, query)
    if query.shape[-2] == 0 or value.numel() == 0:
        return _empty_attention(query, key, value)
    if attn_mask is not None:  # the CPU kernel choice reads the mask's shape (its errors)
        _flash_cpu_takes(query, key, value, attn_mask, dropout_p, enable_gqa, strides=False)
    if dropout_p > 1.0:  # PyTorch drops out only for a p above 0 (a negative or NaN one: none)
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    if is_causal and attn_mask is not None and not _flash_cpu_takes(
            query, key, value, attn_mask, dropout_p, enable_gqa):
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                           "when is_causal=True")
    _check_backends(query, key, value, attn_mask, dropout_p, enable_gqa)
    if enable_gqa:
        key, value = _grouped(query, key), _grouped(query, value)
    if key.shape[-1] != query.shape[-1]:  # the scores' bmm by key transposed
        _bmm_error(query.shape, key.shape, (key.shape[-1], key.shape[-2]))
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
    if value.shape[-2] != source:
        _bmm_error(weights.shape, value.shape, (value.shape[-2], value.shape[-1]))
    return F.matmul(weights, value)


def _bmm_error(left: Sequence[int], right: Sequence[int], matrix: tuple[int, int]
               ) -> NoReturn:
    """PyTorch's math kernel multiplies (B, L, E) by (B, E', S), B the broadcast batch dims
    of ``left`` and ``right``, ``matrix`` (E', S) the right operand as multiplied: its bmm's
    text (its mm's for 2-d operands) where E' is not E."""
    if len(left) == 2:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({left[-2]}x{left[-1]} "
                           f"and {matrix[0]}x{matrix[1]})")
    batch = math.prod(max(a, b) for a, b in zip(left[:-2], right[:-2]))
    raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                       f"[{batch}, {left[-1]}] but got: [{batch}, {matrix[0]}].")


# the backends nn.attention.sdpa_kernel allows (SDPBackend values: MATH 0, FLASH_ATTENTION 1,
# EFFICIENT_ATTENTION 2, CUDNN_ATTENTION 3, OVERRIDEABLE 4); every one by default
enabled_backends: frozenset[int] = frozenset(range(5))


def _check_backends(query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None,
                    dropout_p: float, enable_gqa: bool) -> None:
    """The math computation here stands for PyTorch's CPU kernels, math and flash (the same
    values): with neither allowed, or flash alone where it does not take the inputs,
    PyTorch's error."""
    if 0 in enabled_backends:
        return
    if 1 not in enabled_backends:
        raise RuntimeError("No viable backend for scaled_dot_product_attention was found. This "
                           "is likely due to turning off both the math kernel and the fused "
                           "kernels.")
    if not _flash_cpu_takes(query, key, value, mask, dropout_p, enable_gqa):
        raise RuntimeError("No available kernel.  Aborting execution.")


def _flash_cpu_takes(query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None,
                     dropout_p: float, enable_gqa: bool, strides: bool = True) -> bool:
    """Whether PyTorch's CPU dispatcher picks its flash kernel (sdp_utils_cpp's
    use_flash_attention_cpp), which applies is_causal and an explicit attn_mask together (the
    causal mask and the mask both); its math kernel, picked otherwise, refuses the pair.
    Without ``strides``: for the errors of its checks only, the inputs' strides not read (a
    capture has none: a compiled step with a mask ran eagerly)."""
    # PyTorch's checks in its order: the mask's shape is read after the ranks and heads
    if dropout_p != 0.0 or not query.ndim == key.ndim == value.ndim == 4:
        return False
    batch, heads, length, _ = query.shape
    kv_heads, source = key.shape[1], key.shape[2]
    if not batch == key.shape[0] == value.shape[0] or kv_heads != value.shape[1]:
        return False
    if heads != kv_heads and not (enable_gqa and kv_heads and heads % kv_heads == 0):
        return False
    if mask is not None and (mask.requires_grad or not _flash_cpu_mask_shape(
            tuple(mask.shape), batch, heads, length, source)):
        return False
    if not query.shape[-1] == key.shape[-1] == value.shape[-1]:
        return False
    if strides and any(_last_stride(t) != 1 for t in (query, key, value)):
        return False
    return query.dtype in (D.float32, D.float64, D.float16, D.bfloat16)


def _last_stride(t: Tensor) -> int:
    """``t.stride(-1)``, while capturing the stride eager mode would give (the capture's
    layouts; where it does not know them, the step runs eagerly)."""
    if type(t._data) is not MetaArray:
        return int(t.stride(-1))
    strides = getattr(active_tracer(), "strides", lambda _: None)(t)
    if strides is None:
        raise GraphBreak("a tensor's data was used (strides) while capturing")
    return strides[-1]


def _flash_cpu_mask_shape(shape: tuple[int, ...], batch: int, heads: int, length: int,
                          source: int) -> bool:
    """PyTorch's check_attn_mask_shape: (L, S) or (B, H, L, S), each size 1 or the full one."""
    if len(shape) < 2:
        # PyTorch reads the mask's size(-2) before its rank: its IndexError
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got "
                         "-2)" if shape else "Dimension specified as -2 but tensor has no "
                         "dimensions")
    if shape[-2] not in (1, length) or shape[-1] not in (1, source):
        return False
    return len(shape) == 2 or (len(shape) == 4 and shape[0] in (1, batch)
                               and shape[1] in (1, heads))


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
