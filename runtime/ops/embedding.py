"""`embedding`: rows of a weight picked by an index tensor, from the getitem primitive (its
backward is index_backward, a scatter-add into the weight) behind a bounds check primitive, so
an index out of range raises PyTorch's IndexError in a compiled step too, never reads out of
bounds."""

from __future__ import annotations

from .. import _dtype as D
from ..tensor import Tensor
from . import functional as F
from . import prims as P

_OUT_OF_RANGE = "index out of range in self"


def normalize_padding_idx(padding_idx: int | None, num_embeddings: int) -> int | None:
    """padding_idx as a row number (a negative one counts from the end), checked as torch."""
    if padding_idx is None:
        return None
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise AssertionError("Padding_idx must be within num_embeddings")
    return padding_idx % num_embeddings


def _unsupported(**options: object) -> None:
    for name, value in options.items():
        if value:
            raise NotImplementedError(f"embedding: {name}={value!r} is not supported")


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,  # noqa: A002
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """``weight[input]``; rows at ``padding_idx`` get no gradient (their value is still read).
    max_norm (which renormalizes weight rows in place), scale_grad_by_freq and sparse
    gradients are refused, not ignored."""
    _unsupported(max_norm=max_norm, scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)
    del norm_type  # only read by max_norm
    if input.dtype is not D.int64:
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            f"types: Long, Int; but got {input.dtype.name} instead (while checking arguments "
            "for embedding)")
    if weight.ndim != 2:
        raise RuntimeError(f"'weight' must be 2-D, got {weight.ndim}-D")
    padding_idx = normalize_padding_idx(padding_idx, weight.shape[0])
    if input.device != weight.device:
        input = F.to_device(input, weight.device)
    if input.numel():
        F.check_bounds(input, 0, weight.shape[0], _OUT_OF_RANGE)
    rows = F.getitem_key(weight, input, key=(P.IndexArg(0),))
    if padding_idx is None or not weight.requires_grad:
        return rows
    # the padding rows read the weight without a path back to it: their gradient is zero
    keep = F.unsqueeze(F.ne(input, padding_idx), -1)
    return F.where(keep, rows, rows.detach())
