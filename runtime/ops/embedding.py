"""`embedding`: rows of a weight picked by an index tensor, from the getitem primitive (its
backward is index_backward, a scatter-add into the weight) behind a bounds check primitive, so
an index out of range raises PyTorch's IndexError in a compiled step too, never reads out of
bounds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import _dtype as D
from ..tensor import Tensor
from . import functional as F
from . import prims as P
from .dispatch import named_backward
from .tensor_ops import int64_index

_OUT_OF_RANGE = "index out of range in self"


def _embedding_padding_error(padding_idx: int, num_embeddings: int) -> Exception:
    return AssertionError("Padding_idx must be within num_embeddings")


def bag_module_padding_error(padding_idx: int, num_embeddings: int) -> Exception:
    """nn.EmbeddingBag's error (torch's text: lower case, unlike nn.Embedding's)."""
    return AssertionError("padding_idx must be within num_embeddings")


def _bag_padding_error(padding_idx: int, num_embeddings: int) -> Exception:
    return RuntimeError(f"padding_idx must be within the number of embeddings, "
                        f"{-num_embeddings} through {num_embeddings - 1}, but got "
                        f"{padding_idx}")


def normalize_padding_idx(padding_idx: int | None, num_embeddings: int,
                          error: Callable[[int, int], Exception] = _embedding_padding_error
                          ) -> int | None:
    """padding_idx as a row number (a negative one counts from the end), checked as torch
    (``error``: the caller's exception, F.embedding's and nn.Embedding's by default)."""
    if padding_idx is None:
        return None
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise error(padding_idx, num_embeddings)
    return padding_idx % num_embeddings


def _renorm_rows_(weight: Tensor, input: Tensor, max_norm: float,  # noqa: A002
                  norm_type: float) -> None:
    """PyTorch's ``embedding_renorm_``: each row ``input`` reads whose ``norm_type`` norm
    exceeds ``max_norm`` is scaled in place, by max_norm / (norm + 1e-7). A row read twice
    is written twice with the same value (no ``unique``, whose size a compiled step cannot
    know)."""
    from ..autograd.grad_mode import no_grad
    from .reductions import vector_norm

    with no_grad():
        rows = F.reshape(input, (-1,))
        picked = F.getitem_key(weight, rows, key=(P.IndexArg(0),))
        norms = vector_norm(picked, norm_type, 1, keepdim=True)
        # torch reads each norm as a double, scales by max_norm / (norm + 1e-7) in double,
        # and multiplies in the row's op-math type (float for float32 and narrower)
        wide = F.cast(norms, D.float64)
        scale = F.where(F.gt(wide, max_norm), F.div(max_norm, F.add(wide, 1e-7)), 1.0)
        math_type = D.float64 if picked.dtype is D.float64 else D.float32
        scaled = F.mul(F.cast(picked, math_type), F.cast(scale, math_type))
        weight[rows] = F.cast(scaled, picked.dtype)


def _check_renorm_rows(input: Tensor, weight: Tensor) -> None:  # noqa: A002
    """embedding_renorm_'s bounds: Tensor::select of each index read, smallest first (a
    negative one counts from the end), with select's error."""
    from .tensor_ops import sort

    n = weight.shape[0]
    ordered = sort(F.reshape(input, (-1,))).values
    F.check_bounds(ordered, -n, n, "select(): index {} out of range for tensor of size "
                   f"[{', '.join(map(str, weight.shape))}] at dimension 0")


def _grad_by_freq(rows: Tensor, input: Tensor, n: int) -> Tensor:  # noqa: A002
    """``rows`` as they are, their gradient divided by how often ``input`` reads each row
    (the value stays exact: rows + 0 * scale)."""
    from ..creation import ones, zeros
    from .tensor_ops import scatter_add

    flat = F.reshape(input, (-1,))
    counts = scatter_add(zeros(n, dtype=rows.dtype, device=rows.device), 0, flat,
                         ones(flat.shape[0], dtype=rows.dtype, device=rows.device))
    per_read = F.getitem_key(counts, input, key=(P.IndexArg(0),))
    scale = F.unsqueeze(F.div(1.0, per_read), -1)
    return F.add(rows.detach(), F.mul(F.sub(rows, rows.detach()), scale))


@named_backward("EmbeddingBackward0")
def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,  # noqa: A002
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """``weight[input]``; rows at ``padding_idx`` get no gradient (their value is still read).
    ``max_norm`` first renormalizes the rows read, in place, as PyTorch; sparse gradients are
    refused, not ignored."""
    if sparse:
        raise NotImplementedError("embedding: sparse=True is not supported")
    input = int64_index(input, (
        "Expected tensor for argument #1 'indices' to have one of the following scalar types: "
        f"Long, Int; but got torch.{D.scalar_type_name(input.dtype)}Tensor instead (while "
        "checking arguments for embedding)"))
    if weight.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    padding_idx = normalize_padding_idx(padding_idx, weight.shape[0])
    if input.device != weight.device:
        input = F.to_device(input, weight.device)
    if input.numel():
        if max_norm is not None:  # F.embedding renormalizes first: embedding_renorm_ selects
            _check_renorm_rows(input, weight)  # each row read, in sorted order
            _renorm_rows_(weight, input, max_norm, norm_type)
        F.check_bounds(input, 0, weight.shape[0], _OUT_OF_RANGE)
    rows = F.getitem_key(weight, input, key=(P.IndexArg(0),))
    if scale_grad_by_freq and weight.requires_grad:
        rows = _grad_by_freq(rows, input, weight.shape[0])
    if padding_idx is None or not weight.requires_grad:
        return rows
    # the padding rows read the weight without a path back to it: their gradient is zero
    keep = F.unsqueeze(F.ne(input, padding_idx), -1)
    return F.where(keep, rows, rows.detach())


def _bag_membership(input: Tensor, offsets: Tensor | None, include_last_offset: bool,  # noqa: A002
                    padding_idx: int | None, dtype: Any) -> tuple[Tensor, Tensor]:
    """The flat indices and a (bags, n) 0/1 table of the elements each bag holds (the
    padding_idx entries left out, as PyTorch), from tensor ops on the offsets, so a compiled
    step need not read their values."""
    from ..creation import arange

    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated "
                             "is a mini-batch of fixed length sequences. However, found "
                             f"offsets of type {type(offsets)}")
        offsets = arange(0, input.numel(), max(input.shape[1], 1), device=input.device)
        include_last_offset = False
        input = F.reshape(input, (-1,))
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        offsets = _checked_offsets(offsets, input.numel())
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.ndim}")
    positions = arange(input.numel(), device=input.device)
    starts = offsets[:-1] if include_last_offset else offsets
    # element i belongs to the last bag starting at or before it
    bag = F.sub(F.sum(F.le(F.unsqueeze(starts, 0), F.unsqueeze(positions, 1)), 1), 1)
    member = F.eq(F.unsqueeze(arange(starts.shape[0], device=input.device), 1),
                  F.unsqueeze(bag, 0))
    if include_last_offset and padding_idx is None:
        # with a padding_idx, PyTorch's last bag runs to the input's end whatever the last
        # offset says (its test of issue 89677: offsets [0, 3, 3] of 4 indices)
        member = F.logical_and(member, F.unsqueeze(F.lt(positions, offsets[-1]), 0))
    if padding_idx is not None:
        member = F.logical_and(member, F.unsqueeze(F.ne(input, padding_idx), 0))
    return input, F.cast(member, dtype)


_HUGE = 2 ** 62


def _checked_offsets(offsets: Tensor, length: int) -> Tensor:
    """PyTorch's checks of a 1-D input's bag offsets (int64 or int32; the first 0, none past
    the input, none smaller than the one before), by the check primitive, so a compiled step
    checks them too."""
    offsets = int64_index(offsets, (
        "Expected tensor for argument #1 'indices' to have one of the following scalar types: "
        f"Long, Int; but got torch.{D.scalar_type_name(offsets.dtype)}Tensor instead (while "
        "checking arguments for embedding_bag)"))
    if not offsets.numel():
        return offsets
    F.check_bounds(offsets[:1], 0, 1, "offsets[0] has to be 0, i.e., the first sequence in "
                   "the mini-batch has to start from position 0. However, got {}\n"
                   "[ torch.LongTensor{{}} ]", "RuntimeError")
    F.check_bounds(offsets[-1:], -_HUGE, length + 1, "offsets[-1] can not be greater than "
                   f"input's length {length} but got offsets[-1] of {{}}", "RuntimeError")
    if offsets.numel() > 1:  # PyTorch's kernel fails on a bag that ends before it starts
        F.check_bounds(F.sub(offsets[1:], offsets[:-1]), 0, _HUGE,
                       "Expected i < index_size to be true, but got false.  (Could this error "
                       "message be improved?  If so, please report an enhancement request to "
                       "PyTorch.)", "RuntimeError")
    return offsets


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None,  # noqa: A002
                  max_norm: float | None = None, norm_type: float = 2.0,
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """PyTorch's ``F.embedding_bag``: the sum, mean or max of each bag's rows (a bag is a row
    of a 2-D ``input``, or ``input[offsets[i]:offsets[i + 1]]``); an empty bag gives zeros.
    Sum and mean are one product of a (bags, n) weight table with the rows read."""
    if per_sample_weights is not None and input.shape != per_sample_weights.shape:
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) "
                         f"is not None, then it must have the same shape as the input "
                         f"({input.shape})")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight.ndim}")
    padding_idx = normalize_padding_idx(padding_idx, weight.shape[0], _bag_padding_error)
    flat, member = _bag_membership(input, offsets, include_last_offset, padding_idx,
                                   weight.dtype)
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and (scale_grad_by_freq or sparse):
        raise ValueError("max mode does not support scaling the gradient by the frequency"
                         if scale_grad_by_freq else "max mode does not support sparse weights")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. "
                                  "per_sample_weights is only supported for mode='sum' "
                                  f"(got mode='{mode}'). Please open a feature request on "
                                  "GitHub.")
    if per_sample_weights is not None and per_sample_weights.dtype != weight.dtype:
        raise RuntimeError(
            "Expected tensor for argument #1 'weight' to have the same type as tensor for "
            "argument #1 'per_sample_weights'; but type "
            f"torch.{D.scalar_type_name(weight.dtype)}Tensor does not equal "
            f"torch.{D.scalar_type_name(per_sample_weights.dtype)}Tensor (while checking "
            "arguments for embedding_bag)")
    flat = int64_index(flat, (
        "Expected tensor for argument #1 'indices' to have one of the following scalar types: "
        f"Long, Int; but got torch.{D.scalar_type_name(flat.dtype)}Tensor instead (while "
        "checking arguments for embedding_bag)"))
    if flat.numel():  # PyTorch's generic kernel's check (its float32 sum/mean fast path,
        # fbgemm's, words it otherwise: 'Index 0 of input takes value -1 which is not ...')
        F.check_bounds(flat, 0, weight.shape[0], "embedding_bag: Expected idx >= 0 && idx < "
                       "num_embeddings but found idx to be {}", "RuntimeError")
    rows = embedding(flat, weight, None, max_norm, norm_type, scale_grad_by_freq, sparse)
    counts = F.sum(member, 1, keepdim=True)
    if mode == "max" and flat.numel():  # (no indices: every bag is empty, zeros below)
        picked = F.where(F.unsqueeze(F.gt(member, 0), 2), F.unsqueeze(rows, 0), -float("inf"))
        return F.where(F.gt(counts, 0), F.amax(picked, 1, False), 0.0)
    if mode == "mean":
        member = F.div(member, F.maximum(counts, 1.0))
    if per_sample_weights is not None:
        member = F.mul(member, F.unsqueeze(F.reshape(per_sample_weights, (-1,)), 0))
    return F.matmul(member, rows)
