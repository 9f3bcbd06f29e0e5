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


def _renorm_rows_(weight: Tensor, input: Tensor, max_norm: float,  # noqa: A002
                  norm_type: float) -> None:
    """PyTorch's ``embedding_renorm_``: each row ``input`` reads whose ``norm_type`` norm
    exceeds ``max_norm`` is scaled in place, by max_norm / (norm + 1e-7)."""
    from ..autograd.grad_mode import no_grad
    from .extra_ops import unique
    from .reductions import vector_norm

    with no_grad():
        rows = unique(F.reshape(input, (-1,)))
        picked = F.getitem_key(weight, rows, key=(P.IndexArg(0),))
        norms = vector_norm(picked, norm_type, 1, keepdim=True)
        scale = F.where(F.gt(norms, max_norm), F.div(max_norm, F.add(norms, 1e-7)), 1.0)
        weight[rows] = F.mul(picked, scale)


def _grad_by_freq(rows: Tensor, input: Tensor, n: int) -> Tensor:  # noqa: A002
    """``rows`` as they are, their gradient divided by how often ``input`` reads each row
    (the value stays exact: rows + 0 * scale)."""
    from .ordering import bincount

    counts = F.getitem_key(bincount(F.reshape(input, (-1,)), minlength=n), input,
                           key=(P.IndexArg(0),))
    scale = F.unsqueeze(F.div(1.0, F.cast(counts, rows.dtype)), -1)
    return F.add(rows.detach(), F.mul(F.sub(rows, rows.detach()), scale))


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,  # noqa: A002
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """``weight[input]``; rows at ``padding_idx`` get no gradient (their value is still read).
    ``max_norm`` first renormalizes the rows read, in place, as PyTorch; sparse gradients are
    refused, not ignored."""
    if sparse:
        raise NotImplementedError("embedding: sparse=True is not supported")
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
        if max_norm is not None:
            _renorm_rows_(weight, input, max_norm, norm_type)
    rows = F.getitem_key(weight, input, key=(P.IndexArg(0),))
    if scale_grad_by_freq and weight.requires_grad:
        rows = _grad_by_freq(rows, input, weight.shape[0])
    if padding_idx is None or not weight.requires_grad:
        return rows
    # the padding rows read the weight without a path back to it: their gradient is zero
    keep = F.unsqueeze(F.ne(input, padding_idx), -1)
    return F.where(keep, rows, rows.detach())
