"""Loss functions with PyTorch's signatures, defaults, reductions and error texts, written
with registry ops (so each is differentiable, capturable and fused like any composite).

Class-index targets are checked by the ``check_bounds`` primitive, so a compiled step
raises on an out-of-range class instead of reading out of bounds; ``ignore_index`` targets
are mapped to class 0 before the check and then weighed 0.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from .. import _dtype as D
from ..amp.policy import autocast_fp32
from ..tensor import Tensor
from . import functional as F
from . import prims as P
from .dispatch import named, named_backward, refuse_saved_inference

_REDUCTIONS = ("none", "mean", "sum")


def _reduce(loss: Tensor, reduction: str, name: str) -> Tensor:
    if reduction == "mean":
        return F.mean(loss)
    if reduction == "sum":
        return F.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _warn_broadcast(input: Tensor, target: Tensor) -> None:  # noqa: A002
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(
            f"Using a target size ({_size(target)}) that is different to the input size "
            f"({_size(input)}). This will likely lead to incorrect results due to "
            "broadcasting. Please ensure they have the same size.", UserWarning, stacklevel=3)


def _size(t: Tensor) -> str:
    return f"torch.Size({list(t.shape)})"


def _class_rows(input: Tensor, target: Tensor,  # noqa: A002
                weight: Tensor | None) -> tuple[Tensor, Tensor, int]:
    """(N, C, d1, ...) and (N, d1, ...) as (M, C) rows and (M,) int64 targets; (C,) with ()
    or (1,) as one row. PyTorch's checks in its order (nll_loss_nd, then the 2-d kernel or
    nll_loss2d, which 3-d and 5-d inputs are reshaped for): batch size, target shape, target
    dtype, weight."""
    if input.ndim == 0:
        raise ValueError("Expected 1 or more dimensions (got 0)")
    batch = target.shape[0] if target.ndim else 0  # PyTorch reads a 0-d target's size as 0
    if input.ndim != 1 and input.shape[0] != batch:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target "
                         f"batch_size ({batch}).")
    c = input.shape[0] if input.ndim == 1 else input.shape[1]
    if input.ndim <= 2:
        # PyTorch's kernel has no derivative for the class weights (its autograd refuses a
        # weight that requires grad before the kernel's own checks)
        _not_differentiable(weight, "nll_loss_forward", "weight")
        if target.ndim > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        target = _index_target(input, target)
        if input.ndim == 1 and target.ndim == 1 and target.shape[0] != 1:
            raise ValueError("For 1D input, 1D target must have size 1, but got target size: "
                             f"{target.shape[0]}")
        _class_weight(weight, c, f"all {c} classes")
        rows = F.unsqueeze(input, 0) if input.ndim == 1 else input
        return rows, F.reshape(target, (-1,)), c
    spatial = tuple(input.shape[2:])
    if input.ndim != 4 and tuple(target.shape[1:]) != spatial:
        raise RuntimeError(f"Expected target size {_dims((input.shape[0], *spatial))}, got "
                           f"{_dims(target.shape)}")
    _not_differentiable(weight, "nll_loss2d_forward", "weight")
    if input.ndim == 4 and target.ndim != 3:
        raise RuntimeError("only batches of spatial targets supported (3D tensors) but got "
                           f"targets of dimension: {target.ndim}")
    target = _index_target(input, target)
    if tuple(target.shape[1:]) != spatial:
        raise RuntimeError(f"size mismatch (got input: {_dims(input.shape)} , target: "
                           f"{_dims(target.shape)}")
    _class_weight(weight, c, "all")
    # the class dim last, then rows
    rows = F.reshape(F.permute(input, 0, *range(2, input.ndim), 1), (-1, c))
    return rows, F.reshape(target, (-1,)), c


def _loss_shape(input: Tensor) -> tuple[int, ...]:  # noqa: A002
    """The shape of the unreduced class-index loss: () for one (C,) row, else input's without
    its class dim."""
    return () if input.ndim == 1 else (input.shape[0], *input.shape[2:])


def _dims(shape: Any) -> str:
    return f"[{', '.join(map(str, shape))}]"


def _picked(logp: Tensor, target: Tensor, c: int, ignore_index: int) -> tuple[Tensor, Tensor]:
    """-logp[i, target[i]] for every row, and the 0/1 mask of rows not ignored."""
    from ..creation import arange

    if target.device != logp.device:
        target = F.to_device(target, logp.device)
    keep = F.ne(target, ignore_index)
    safe = F.where(keep, target, 0)
    if logp.shape[0]:
        F.check_bounds(safe, 0, c, "Target {} is out of bounds.")
    # the pick as a masked row sum (one term is the picked value, the others exact zeros):
    # a compiled step fuses it with the log-softmax before it, and its gradient, a where,
    # with the softmax's backward, where a gather's scatter-add is a step of its own
    classes = F.reshape(arange(logp.shape[1], device=logp.device), (1, -1))
    hit = F.eq(classes, F.reshape(safe, (-1, 1)))
    return F.neg(F.sum(F.where(hit, logp, 0.0), 1)), keep


def _class_weight(weight: Tensor | None, c: int, classes: str) -> None:
    """PyTorch's weight check: its 2-d kernel names ``all {c} classes`` and the shape, its
    nll_loss2d ``all``."""
    if weight is None or (weight.ndim == 1 and weight.shape[0] == c):
        return
    if classes == "all":
        raise RuntimeError("weight tensor should be defined either for all or no classes")
    raise RuntimeError(f"weight tensor should be defined either for {classes} or no classes "
                       f"but got weight tensor of shape: {_dims(weight.shape)}")


def _nll_rows(logp: Tensor, target: Tensor, c: int, weight: Tensor | None, ignore_index: int,
              reduction: str, out_shape: tuple[int, ...]) -> Tensor:
    _same_scalar_type(weight, logp)
    loss, keep = _picked(logp, target, c, ignore_index)
    w = F.cast(keep, logp.dtype)
    if weight is not None:
        safe = F.where(keep, target, 0)
        w = F.mul(w, F.getitem_key(weight, safe, key=(P.IndexArg(0),)))
    loss = F.mul(loss, w)
    if reduction == "mean":
        return _weighted_mean(F.sum(loss), F.sum(w))
    if reduction == "none":
        return F.reshape(loss, out_shape)
    return _reduce(loss, reduction, "nll_loss")


def _same_scalar_type(weight: Tensor | None, input: Tensor) -> None:  # noqa: A002
    """PyTorch's class-weight kernels read ``weight`` as the input's scalar type: its error
    for a weight of another dtype (even with an empty batch, or every row ignored)."""
    if weight is not None and weight.dtype is not input.dtype:
        raise RuntimeError(f"expected scalar type {D.scalar_type_name(input.dtype)} but found "
                           f"{D.scalar_type_name(weight.dtype)}")


def _cpu_kernel(input: Tensor, kernel: str) -> None:  # noqa: A002
    """PyTorch's CPU kernels dispatched over float32 and float64 only: their error for any
    other dtype (float16 and bfloat16 included), raised only where the input has elements."""
    if input.numel() and input.dtype not in (D.float32, D.float64):
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{D.scalar_type_name(input.dtype)}'")


def _needs_float(input: Tensor, kernel: str) -> None:  # noqa: A002
    """PyTorch's loss kernels of floating point only: their error for another dtype (these
    losses computed a float loss of an integer input)."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{D.scalar_type_name(input.dtype)}'")


def _weighted_mean(total: Tensor, weight_sum: Tensor) -> Tensor:
    """``total / weight_sum``: NaN where every row is ignored (``weight_sum`` 0), as PyTorch's
    value, but with PyTorch's gradient there, 0 (it writes none for ignored rows), where the
    quotient's is 0/0. So the differentiable quotient divides by 1 there and the NaN comes
    from a detached one (not a NaN constant: NaN != NaN breaks comparing captured kernels)."""
    empty = F.eq(weight_sum, 0.0)
    mean = F.div(total, F.where(empty, 1.0, weight_sum))
    # PyTorch's 0/0 is silent: no numpy warning (an error under warnings' "error" filter)
    return F.where(empty, P.quietly(F.div, total.detach(), weight_sum.detach()), mean)


@autocast_fp32
@named_backward("NllLossBackward0", saves_inputs=True)
def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
             size_average: Any = None, ignore_index: int = -100, reduce: Any = None,
             reduction: str = "mean") -> Tensor:
    """The negative log likelihood of ``target`` classes under log-probabilities ``input``
    ((N, C), (N, C, d1, ...) or (C,)); ``weight`` per class, ``ignore_index`` rows skipped."""
    reduction = _legacy(size_average, reduce, reduction)
    _tensor_args("nll_loss_nd", target=(2, target), weight=(3, weight))
    rows, tgt, c = _class_rows(input, target, weight)
    _needs_float(input, "nll_loss_out_frame")
    return _nll_rows(rows, tgt, c, weight, ignore_index, reduction, _loss_shape(input))


def _tensor_args(kernel: str, **named: tuple[int, Any]) -> None:
    """PyTorch's binding error for an argument (name: (position, value)) that is neither a
    Tensor nor None."""
    for name, (position, value) in named.items():
        if value is not None and not isinstance(value, Tensor):
            raise TypeError(f"{kernel}(): argument '{name}' (position {position}) must be "
                            f"Tensor, not {type(value).__name__}")


def _legacy(size_average: Any, reduce: Any, reduction: str, enum: bool = True) -> str:
    """PyTorch's deprecated size_average/reduce arguments, which override ``reduction``
    (warning with the reduction they make); else ``reduction``, checked as PyTorch's
    ``_Reduction.get_enum`` checks it where ``enum`` (the losses that check it themselves
    pass False)."""
    if size_average is None and reduce is None:
        return _enum(reduction) if enum else reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    legacy = "none" if not reduce else ("mean" if size_average else "sum")
    warnings.warn("size_average and reduce args will be deprecated, please use "
                  f"reduction='{legacy}' instead.", UserWarning, stacklevel=3)
    return legacy


def _enum(reduction: str) -> str:
    """PyTorch's ``_Reduction.get_enum``: 'elementwise_mean' is 'mean', with its warning."""
    if reduction == "elementwise_mean":
        warnings.warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' "
                      "instead.", UserWarning, stacklevel=4)
        return "mean"
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _weighted(loss: Tensor, input: Tensor, weight: Tensor, reduction: str,  # noqa: A002
              mean_by_weight: bool) -> Tensor:
    """PyTorch 2.13's elementwise ``weight`` of mse_loss, l1_loss and huber_loss: the shape
    of ``input``; 'mean' divides by the weights' sum (mse, l1) or their count (huber)."""
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', "
                         "'mean', 'sum'.")
    loss = F.mul(loss, weight)
    if reduction == "mean" and mean_by_weight:
        return F.div(F.sum(loss), F.sum(weight))
    return _reduce(loss, reduction, "")


def _index_target(input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
    """``target``'s class indices as int64: int64 ones, or uint8 ones for an input of one or
    two dims (PyTorch's nll_loss kernel takes Byte, its 2-d one Long only); any other dtype
    is PyTorch's error."""
    if target.dtype is D.int64:
        return target
    name = D.scalar_type_name(target.dtype)
    if input.ndim > 2 and target.dtype is D.uint8:
        raise RuntimeError(f"expected scalar type Long but found {name}")
    if target.dtype is not D.uint8:
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {name}")
    return F.cast(target, D.int64)


@autocast_fp32
def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
                  size_average: Any = None, ignore_index: int = -100, reduce: Any = None,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """Softmax cross-entropy: ``target`` holds class indices (int64, shape of ``input``
    without its class dim 1) or class probabilities (floats, the shape of ``input``)."""
    from .composite import log_softmax

    reduction = _legacy(size_average, reduce, reduction)
    _tensor_args("cross_entropy_loss", target=(2, target), weight=(3, weight))
    if tuple(target.shape) == tuple(input.shape):
        return _cross_entropy_probs(input, target, weight, reduction, label_smoothing,
                                    ignore_index)
    _check_label_smoothing(label_smoothing)
    if input.ndim == 0:  # PyTorch's log_softmax over dim 1 of it
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    rows, tgt, c = _class_rows(input, target, weight)
    logp = log_softmax(rows, 1)
    nll = _nll_rows(logp, tgt, c, weight, ignore_index, reduction, _loss_shape(input))
    refuse_saved_inference(nll, weight)  # PyTorch's nll_loss saves it
    if not label_smoothing > 0.0:  # (a negative or NaN amount: none)
        return named(nll, "NllLossBackward0")
    keep = F.cast(F.ne(tgt, ignore_index), logp.dtype)
    wl = logp if weight is None else F.mul(logp, F.reshape(weight, (1, c)))
    smooth = F.mul(F.neg(F.sum(wl, 1)), keep)
    if reduction == "mean":
        if weight is None:
            smooth = _weighted_mean(F.sum(smooth), F.sum(keep))
        else:
            safe = F.where(F.ne(tgt, ignore_index), tgt, 0)
            wt = F.mul(F.getitem_key(weight, safe, key=(P.IndexArg(0),)), keep)
            smooth = _weighted_mean(F.sum(smooth), F.sum(wt))
    elif reduction == "sum":
        smooth = F.sum(smooth)
    else:
        smooth = F.reshape(smooth, _loss_shape(input))
    return F.add(F.mul(nll, 1.0 - label_smoothing), F.mul(smooth, label_smoothing / c))


def _check_label_smoothing(label_smoothing: float) -> None:
    """PyTorch's check: at most 1 (its number as C++ prints it: 2.0 is "2"); a negative or
    NaN amount passes, and smooths nothing."""
    if label_smoothing > 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: "
                           f"{label_smoothing:g}")


def _cross_entropy_probs(input: Tensor, target: Tensor, weight: Tensor | None,  # noqa: A002
                         reduction: str, label_smoothing: float, ignore_index: int) -> Tensor:
    """Cross-entropy with class probabilities as the target: PyTorch's checks in its order
    (a float target, no ignore_index: one of 0 or more is refused, then label_smoothing)."""
    from .composite import log_softmax

    if not target.dtype.is_floating_point:
        raise RuntimeError("Expected floating point type for target with class probabilities, "
                           f"got {D.scalar_type_name(target.dtype)}")
    if ignore_index >= 0:
        raise RuntimeError("ignore_index is not supported for floating point target")
    _check_label_smoothing(label_smoothing)
    dim = 0 if input.ndim == 1 else 1
    c = input.shape[dim]
    if weight is not None and not (weight.ndim == 1 and weight.shape[0] == c):
        raise RuntimeError(f"cross_entropy: weight tensor should be defined either for all {c} "
                           f"classes or no classes but got weight tensor of shape: "
                           f"{_dims(weight.shape)}")
    if label_smoothing > 0.0:
        target = F.add(F.mul(target, 1.0 - label_smoothing), label_smoothing / c)
    logp = log_softmax(input, dim)
    term = F.mul(logp, target)
    if weight is not None:
        shape = [1] * input.ndim
        shape[dim] = c
        term = F.mul(term, F.reshape(weight, tuple(shape)))
    loss = F.neg(F.sum(term, dim))
    if reduction == "mean":
        n = input.shape[0] if input.ndim > 1 else 1
        for s in input.shape[2:]:
            n *= s
        if n == 0:  # an empty batch: PyTorch's NaN, silent, its gradient none
            from ..creation import tensor

            return _weighted_mean(F.sum(loss), tensor(0.0, dtype=loss.dtype,
                                                      device=loss.device))
        return F.div(F.sum(loss), float(n))
    return _reduce(loss, reduction, "cross_entropy")


@autocast_fp32
@named_backward("BinaryCrossEntropyWithLogitsBackward0", saves_inputs=True)
def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,  # noqa: A002
                                     weight: Tensor | None = None, size_average: Any = None,
                                     reduce: Any = None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """Sigmoid and binary cross-entropy in one stable formula; ``pos_weight`` weighs the
    positive term per class (broadcast along the last dim)."""
    reduction = _legacy(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({_size(target)}) must be the same as input size "
                         f"({_size(input)})")
    _tensor_args("binary_cross_entropy_with_logits", weight=(3, weight),
                 pos_weight=(4, pos_weight))
    _not_differentiable(weight, "binary_cross_entropy_with_logits", "weight")
    _not_differentiable(pos_weight, "binary_cross_entropy_with_logits", "pos_weight")
    from .shapes import broadcast_shapes

    # PyTorch writes the loss into input's shape (pos_weight multiplies first, weight last)
    for operands in ((pos_weight, input), (input, weight)):
        if all(t is not None for t in operands):
            shape = tuple(broadcast_shapes(*(tuple(t.shape) for t in operands)))
            if shape != tuple(input.shape):
                raise RuntimeError(f"output with shape {list(input.shape)} doesn't match the "
                                   f"broadcast shape {list(shape)}")
    # PyTorch's (1 - t) x - log_sigmoid(x): abs and maximum had no second derivative at 0,
    # where log_sigmoid's branches do (a Hessian at zero logits missed sigmoid' = 1/4)
    from .activations import logsigmoid

    log_sigmoid = logsigmoid(input)
    if pos_weight is not None:
        log_w = F.add(F.mul(F.sub(pos_weight, 1.0), target), 1.0)
        log_sigmoid = _into(F.mul(log_w, log_sigmoid), input.dtype)
    # PyTorch's steps are in place on (1 - t): the loss has the target's dtype (an integer
    # target is its cast error), each step rounded to it
    if not target.dtype.is_floating_point:
        if target.dtype is D.bool_:
            raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                               "supported. Use the `^` or `logical_xor()` operator instead.")
        raise RuntimeError(f"result type {D.scalar_type_name(input.dtype)} can't be cast to the "
                           f"desired output type {D.scalar_type_name(target.dtype)}")
    loss = _into(F.mul(F.sub(1.0, target), input), target.dtype)
    loss = _into(F.sub(loss, log_sigmoid), target.dtype)
    if weight is not None:
        loss = _into(F.mul(loss, weight), target.dtype)
    return _reduce(loss, reduction, "binary_cross_entropy_with_logits")


def _into(t: Tensor, dtype: Any) -> Tensor:
    """``t`` written into a tensor of ``dtype``, as an in-place op's result (a no-op where
    it has that dtype)."""
    return t if t.dtype is dtype else F.cast(t, dtype)


def _warn_options_ignored(reduction: str, label_smoothing: float, target: Tensor,
                          out_features: tuple[int, ...], bias: Tensor | None) -> None:
    """PyTorch's warning where its chunked path cannot take the options given (its
    softmax would run over every row of a K-dimensional weight)."""
    if not (out_features or reduction not in ("mean", "sum", "none") or label_smoothing != 0.0
            or target.dtype is not D.int64):
        return
    warnings.warn(
        "linear_cross_entropy: ``options`` ignored; chunked path needs reduction in "
        "{'mean','sum','none'}, label_smoothing == 0, target.dtype == int64, out_features =="
        f" (). Got reduction={reduction!r}, label_smoothing={label_smoothing}, "
        f"target.dtype=torch.{target.dtype.name}, out_features={out_features}, "
        f"tracing=False, linear_bias.shape="
        f"{tuple(bias.shape) if bias is not None else None}.", UserWarning, stacklevel=3)


def linear_cross_entropy(input: Tensor, linear_weight: Tensor, target: Tensor, *,  # noqa: A002
                         linear_bias: Tensor | None = None, weight: Tensor | None = None,
                         reduction: str = "mean", ignore_index: int | None = None,
                         label_smoothing: float = 0.0, options: Any = None) -> Tensor:
    """PyTorch's ``F.linear_cross_entropy``: cross_entropy of ``input @ linear_weight.T``
    (+ bias), a (num_classes, *out_features, in_features) weight giving a K-dimensional
    loss. ``options`` picks PyTorch's chunked evaluation, a way to save memory with the same
    values: taken, and the plain one runs (with PyTorch's warning where its chunked one
    would not run either)."""
    from .composite import linear

    if input.ndim < 1 or input.ndim > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.ndim}")
    if linear_weight.ndim < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got "
                           f"{linear_weight.ndim}")
    batches, in_features = tuple(input.shape[:-1]), input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError("expected equal input and linear_weight last dimensions "
                           f"(in_features), got {input.shape[-1]} and "
                           f"{linear_weight.shape[-1]}, respectively")
    classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(classes, *out_features)}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and not batches:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape "
                           f"{tuple(linear_weight.shape)} requires batched input, (N, "
                           f"{in_features}), got unbatched input with shape "
                           f"{tuple(input.shape)}")
    logits_shape = (*batches, classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains "
                           "probabilities")
    if options is not None:
        _warn_options_ignored(reduction, label_smoothing, target, out_features, linear_bias)
    rows = math.prod(out_features) * classes
    w = F.reshape(linear_weight, (rows, in_features)) if out_features else linear_weight
    b = None if linear_bias is None else F.reshape(linear_bias, (rows,))
    logits = F.reshape(linear(input, w, b), logits_shape)
    return cross_entropy(logits, target, weight=weight, reduction=reduction,
                         ignore_index=-100 if ignore_index is None else ignore_index,
                         label_smoothing=label_smoothing)


_BCE_EPS = float(np.float32(1e-12))  # PyTorch's floor on x (1 - x) in the backward: a float


def _log0(v: Tensor) -> Tensor:
    """log(v) for v >= 0, -inf at 0 without numpy's divide-by-zero warning."""
    positive = F.gt(v, 0.0)
    return F.where(positive, F.log(F.where(positive, v, 1.0)), float("-inf"))


def _bce_elements(x: Tensor, t: Tensor) -> Tensor:
    """The elementwise loss with PyTorch's value and PyTorch's gradients: (x - t) /
    max(x (1 - x), 1e-12) for x and log(1 - x) - log(x) for t.

    Where x (1 - x) >= 1e-12 (the logs are far above -100) it is the plain formula, whose
    autograd gives those gradients (and second derivatives). Elsewhere, at x = 0 or 1 say,
    the plain formula's gradient is 0 * inf = NaN and the clamped one's is 0 or -100-bound,
    so the value is the clamped formula, detached, plus a term that is exactly zero but
    carries PyTorch's gradient: x (x/2 - t) / 1e-12 for x and t log-odds (held finite: at
    x = 0 or 1 PyTorch's target gradient is infinite; here sqrt of the dtype's max) for t."""
    wide = F.ge(F.mul(x, F.sub(1.0, x)), _BCE_EPS)
    xs = F.where(wide, x, 0.5)  # finite logs in the branch not taken: no NaN sent back
    plain = F.neg(F.add(F.mul(t, F.log(xs)), F.mul(F.sub(1.0, t), F.log(F.sub(1.0, xs)))))
    xd, td = x.detach(), t.detach()
    log_x, log_1mx = _log0(xd), _log0(F.sub(1.0, xd))
    clamped = F.neg(F.add(F.mul(td, F.clamp(log_x, min=-100.0)),
                          F.mul(F.sub(1.0, td), F.clamp(log_1mx, min=-100.0))))
    big = math.sqrt(float(D.np_finfo(x.dtype).max))  # stands for inf, overflows nothing
    log_odds = F.clamp(F.sub(log_1mx, log_x), min=-big, max=big)
    carrier = F.add(F.div(F.mul(x, F.sub(F.mul(x, 0.5), td)), _BCE_EPS), F.mul(t, log_odds))
    edge = F.add(clamped, F.sub(carrier, carrier.detach()))
    return F.where(wide, plain, edge)


@autocast_fp32
@named_backward("BinaryCrossEntropyBackward0", saves_inputs=True)
def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
                         size_average: Any = None, reduce: Any = None,
                         reduction: str = "mean") -> Tensor:
    """-(t log x + (1 - t) log(1 - x)), each log clamped at -100 as PyTorch does; an input
    outside [0, 1] (or NaN) raises PyTorch's RuntimeError."""
    reduction = _legacy(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({_size(target)}) that is different to the "
                         f"input size ({_size(input)}) is deprecated. Please ensure they have "
                         "the same size.")
    if weight is not None and not isinstance(weight, Tensor):  # PyTorch reads weight.size()
        raise AttributeError(f"'{type(weight).__name__}' object has no attribute 'size'")
    if weight is not None:
        _check_bce_weight(weight, target)
        _not_differentiable(weight, "binary_cross_entropy", "weight")
    if target.dtype is not input.dtype:  # PyTorch's TensorIterator: one dtype for all
        raise RuntimeError(f"Found dtype {D.scalar_type_name(target.dtype)} but expected "
                           f"{D.scalar_type_name(input.dtype)}")
    _needs_float(input, "binary_cross_entropy")
    in_range = F.cast(F.logical_and(F.ge(input, 0.0), F.le(input, 1.0)), D.int64)  # NaN: 0
    F.check_bounds(in_range, 1, 2, "all elements of input should be between 0 and 1",
                   "RuntimeError")
    loss = _bce_elements(input, target)
    if weight is not None:
        loss = _into(F.mul(loss, weight), input.dtype)  # PyTorch's loss.mul_(weight)
    return _reduce(loss, reduction, "binary_cross_entropy")


def _check_bce_weight(weight: Tensor, target: Tensor) -> None:
    """PyTorch's checks of binary_cross_entropy's weight: broadcast with the target
    (torch._infer_size's text), and to no larger a shape than the loss (a weight of more
    dims would silently broadcast the loss)."""
    w, t = tuple(weight.shape), tuple(target.shape)
    for k in range(1, min(len(w), len(t)) + 1):
        if w[-k] not in (1, t[-k]) and t[-k] != 1:
            raise RuntimeError(f"Attempting to broadcast a dimension of length {w[-k]} at -{k}! "
                               f"Mismatching argument at index 1 had torch.Size({list(w)}); but "
                               f"expected shape should be broadcastable to {list(t)}")
    shape = tuple(np.broadcast_shapes(w, t))
    if shape != t:
        raise RuntimeError(f"output with shape {list(t)} doesn't match the broadcast shape "
                           f"{list(shape)}")


@autocast_fp32
def mse_loss(input: Tensor, target: Tensor, size_average: Any = None,  # noqa: A002
             reduce: Any = None, reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """(input - target)^2; ``weight`` (input's shape) weighs each element."""
    _warn_broadcast(input, target)
    reduction = _legacy(size_average, reduce, reduction, enum=weight is None)
    _needs_float(input, "mse_cpu")
    if weight is None:
        return _mse(input, target, reduction)
    d = F.sub(input, target)
    return _weighted(F.mul(d, d), input, weight, reduction, mean_by_weight=True)


@named_backward("MseLossBackward0", saves_inputs=True)
def _mse(input: Tensor, target: Tensor, reduction: str) -> Tensor:  # noqa: A002
    d = F.sub(input, target)
    return _reduce(F.mul(d, d), reduction, "mse_loss")


@autocast_fp32
def l1_loss(input: Tensor, target: Tensor, size_average: Any = None,  # noqa: A002
            reduce: Any = None, reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """|input - target|; ``weight`` (input's shape) weighs each element."""
    _warn_broadcast(input, target)
    reduction = _legacy(size_average, reduce, reduction, enum=weight is None)
    loss = F.abs(F.sub(input, target))
    if weight is None:
        return _reduce(loss, reduction, "l1_loss")
    return _weighted(loss, input, weight, reduction, mean_by_weight=True)


def _piecewise(d: Tensor, limit: float, inner: Any, outer: Tensor) -> Tensor:
    """``outer`` where |d| >= limit, else ``inner(d)`` (a NaN d too, as PyTorch's backward);
    inner reads d only where it is taken (0 elsewhere), so an infinite d's gradient is the
    outer branch's, as PyTorch's, not the NaN of inf * 0 through the branch not taken."""
    far = F.ge(F.abs(d), limit)
    return F.where(far, outer, inner(F.where(far, 0.0, d)))


@autocast_fp32
@named_backward("SmoothL1LossBackward0", saves_inputs=True)
def smooth_l1_loss(input: Tensor, target: Tensor, size_average: Any = None,  # noqa: A002
                   reduce: Any = None, reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (L1 at beta = 0)."""
    reduction = _legacy(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _warn_broadcast(input, target)
    _needs_float(input, "smooth_l1_cpu")
    d = F.sub(input, target)
    a = F.abs(d)
    if beta == 0:
        return _reduce(a, reduction, "smooth_l1_loss")
    loss = _piecewise(d, beta, lambda e: F.mul(F.mul(e, e), 0.5 / beta), F.sub(a, 0.5 * beta))
    return _reduce(loss, reduction, "smooth_l1_loss")


@autocast_fp32
def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean",  # noqa: A002
               delta: float = 1.0, weight: Tensor | None = None) -> Tensor:
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta); ``weight`` (input's shape)
    weighs each element."""
    _warn_broadcast(input, target)
    _needs_float(input, "huber_cpu")
    if weight is None:
        return _mixed_huber(_huber(input, target, _enum(reduction), delta), input, target)
    return _weighted(_mixed_huber(_huber(input, target, "none", delta), input, target), input,
                     weight, reduction, mean_by_weight=False)


def _mixed_huber(loss: Tensor, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
    """PyTorch's huber_loss_backward takes input and target of one dtype: with two, the
    backward is its RuntimeError (the dtype of the other operand found where the one whose
    gradient it computes, the input first, was expected)."""
    if input.dtype is target.dtype:
        return loss
    from .composite import no_derivative

    want, found = (input, target) if input.requires_grad else (target, input)
    return no_derivative(loss, [input, target], RuntimeError,
                         f"Found dtype {D.scalar_type_name(found.dtype)} but expected "
                         f"{D.scalar_type_name(want.dtype)}", "HuberLossBackward0")


@named_backward("HuberLossBackward0", saves_inputs=True)
def _huber(input: Tensor, target: Tensor, reduction: str, delta: float) -> Tensor:  # noqa: A002
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    d = F.sub(input, target)
    loss = _piecewise(d, delta, lambda e: F.mul(F.mul(e, e), 0.5),
                      F.mul(F.sub(F.abs(d), 0.5 * delta), delta))
    # PyTorch writes the loss into a tensor like the input (a float64 target: a float32 loss)
    return _reduce(_into(loss, input.dtype), reduction, "huber_loss")


@autocast_fp32
def kl_div(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,  # noqa: A002
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """target * (log target - input) (0 where target is 0, NaN where it is negative);
    ``input`` is log-probabilities.
    ``reduction="batchmean"`` divides the sum by the batch size (the KL divergence)."""
    if not input.dtype.is_floating_point:
        raise RuntimeError("kl_div: Integral inputs not supported.")
    legacy = size_average is not None or reduce is not None
    if not legacy and reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns with "
                      "the KL div math definition.'mean' will be changed to behave the same as "
                      "'batchmean' in the next major release.", UserWarning, stacklevel=3)
    if legacy or reduction != "batchmean":
        base = _legacy(size_average, reduce, reduction)
    else:
        base = "sum"
    if log_target:
        loss = F.mul(F.exp(target), F.sub(target, input))
    else:
        # aten's xlogy(target, target) - target * input: NaN where the target is negative,
        # and a NaN gradient of a target at 0 (XlogyBackward0's target / target), as PyTorch's
        from .math_ops import xlogy

        loss = F.sub(xlogy(target, target), F.mul(target, input))
    out = _reduce(loss, base, "kl_div")
    if reduction == "batchmean" and input.ndim:  # even where legacy flags set the reduction
        return F.div(out, float(input.shape[0]))
    return out


# ------------------------------------------------------------- margin and embedding losses


def _clamp_min0(z: Tensor) -> Tensor:
    """PyTorch's ``clamp_min(z, 0)``, whose gradient is 1 where z is 0 (a maximum's is
    halved there: a margin loss of equal inputs got half its gradient)."""
    return named(F.clamp(z, min=0.0), "ClampMinBackward0")


def _softplus0(z: Tensor) -> Tensor:
    """log(1 + exp(z)) as -log_sigmoid(-z): no exp overflows, and the second derivative at 0
    is 1/4 (max(z, 0) + log(1 + exp(-|z|)) gave 0 there: abs and maximum have kinks)."""
    from .activations import logsigmoid

    return F.neg(logsigmoid(F.neg(z)))


def _not_differentiable(t: Tensor | None, name: str, argument: str) -> None:
    """PyTorch's refusal of a gradient its kernel has no formula for (under grad mode)."""
    from ..autograd.grad_mode import is_grad_enabled

    if t is not None and t.requires_grad and is_grad_enabled():
        raise RuntimeError(f"The function '{name}' is not differentiable with respect to "
                           f"argument '{argument}'. This input cannot have requires_grad True.")


@autocast_fp32
def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor,
                        margin: float = 0, size_average: Any = None, reduce: Any = None,
                        reduction: str = "mean") -> Tensor:
    """max(0, -y (x1 - x2) + margin)."""
    reduction = _legacy(size_average, reduce, reduction)
    if input1.ndim != input2.ndim or input1.ndim != target.ndim:
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension "
                           f"but got sizes: input1: {_size(input1)}, input2: {_size(input2)}, "
                           f"target: {_size(target)} ")
    difference = F.sub(input1, input2)  # first, as PyTorch (its error for two bools)
    z = F.add(F.mul(F.neg(target), difference), margin)
    return _reduce(_clamp_min0(z), reduction, "margin_ranking_loss")


@autocast_fp32
def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,  # noqa: A002
                         size_average: Any = None, reduce: Any = None,
                         reduction: str = "mean") -> Tensor:
    """x where y = 1, max(0, margin - x) where y = -1 (PyTorch's sum of the two masks)."""
    reduction = _legacy(size_average, reduce, reduction)
    integral = not input.dtype.is_floating_point and input.dtype is not D.bool_
    if integral:  # PyTorch's kernel casts the margin to the input's integer type
        margin = int(margin)
    gap = F.sub(margin, input)
    hinge = F.where(F.ne(target, 1), F.clamp(gap, min=0) if integral else _clamp_min0(gap),
                    0 if integral else 0.0)
    own = F.where(F.ne(target, -1), input, 0 if integral else 0.0)
    if integral and reduction == "mean":
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a "
                           "floating point or complex dtype. Got: "
                           f"{D.scalar_type_name(input.dtype)}")
    return _reduce(F.add(hinge, own), reduction, "hinge_embedding_loss")


@autocast_fp32
def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor,
                          margin: float = 0, size_average: Any = None, reduce: Any = None,
                          reduction: str = "mean") -> Tensor:
    """1 - cos(x1, x2) where y = 1, max(0, cos - margin) where y = -1; cos with 1e-12 added to
    each squared norm, as PyTorch's."""
    reduction = _legacy(size_average, reduce, reduction)
    dim = target.ndim
    if dim not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if (input1.ndim, input2.ndim) != (dim + 1, dim + 1):
        raise RuntimeError(f"{dim}D target tensor expects {dim + 1}D input tensors, but found "
                           f"inputs with sizes {list(input1.shape)} and {list(input2.shape)}.")
    prod = F.sum(F.mul(input1, input2), dim)
    sq1 = F.add(F.sum(F.mul(input1, input1), dim), 1e-12)
    sq2 = F.add(F.sum(F.mul(input2, input2), dim), 1e-12)
    cos = F.div(prod, F.sqrt(F.mul(sq1, sq2)))
    pos = F.where(F.eq(target, 1), F.sub(1.0, cos), 0.0)
    neg = F.where(F.eq(target, -1), _clamp_min0(F.sub(cos, margin)), 0.0)
    return _reduce(F.add(pos, neg), reduction, "cosine_embedding_loss")


@autocast_fp32
def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor,
                        margin: float = 1.0, p: float = 2, eps: float = 1e-6,
                        swap: bool = False, size_average: Any = None, reduce: Any = None,
                        reduction: str = "mean") -> Tensor:
    """max(0, margin + d(a, p) - d(a, n)), d the pairwise p-distance; ``swap`` takes
    min(d(a, n), d(p, n)) as the negative distance."""
    from .activations import pairwise_distance

    reduction = _legacy(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    return _triplet(anchor, positive, negative, lambda a, b: pairwise_distance(a, b, p, eps),
                    margin, swap, reduction, "triplet_margin_loss")


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function: Any = None, margin: float = 1.0,
                                      swap: bool = False, reduction: str = "mean") -> Tensor:
    """``triplet_margin_loss`` with any distance (pairwise_distance by default)."""
    from .activations import pairwise_distance

    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, "
                         f"got {margin} instead")
    return _triplet(anchor, positive, negative, distance_function or pairwise_distance, margin,
                    swap, reduction, "triplet_margin_with_distance_loss")


def _triplet(anchor: Tensor, positive: Tensor, negative: Tensor, distance: Any, margin: float,
             swap: bool, reduction: str, name: str) -> Tensor:
    a, pd, n = anchor.ndim, positive.ndim, negative.ndim
    if not a == pd == n:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have "
                           f"the same number of dimensions, but got: anchor {a}D, positive "
                           f"{pd}D, and negative {n}D inputs")
    d_pos = distance(anchor, positive)
    d_neg = distance(anchor, negative)
    if swap:
        d_neg = F.minimum(d_neg, distance(positive, negative))
    loss = _clamp_min0(F.sub(F.add(d_pos, margin), d_neg))
    return _reduce(loss, reduction, name)


@autocast_fp32
def soft_margin_loss(input: Tensor, target: Tensor, size_average: Any = None,  # noqa: A002
                     reduce: Any = None, reduction: str = "mean") -> Tensor:
    """log(1 + exp(-y x)), written so exp never overflows."""
    reduction = _legacy(size_average, reduce, reduction)
    _not_differentiable(target, "soft_margin_loss", "target")
    if input.dtype is D.bool_:
        F.neg(input)  # PyTorch's neg_out(output, input) first: its error for a bool input
    if not input.dtype.is_floating_point:
        # PyTorch exponentiates in place: its error for an integer input
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{D.scalar_type_name(input.dtype)}")
    # PyTorch multiplies the target into an input-shaped, input-typed output in place
    product = F.mul(input, target)
    if tuple(product.shape) != tuple(input.shape):
        raise RuntimeError(f"output with shape {list(input.shape)} doesn't match the broadcast "
                           f"shape {list(product.shape)}")
    loss = _into(_softplus0(F.neg(product)), input.dtype)
    return _reduce(loss, reduction, "soft_margin_loss")


def multilabel_soft_margin_loss(input: Tensor, target: Tensor,  # noqa: A002
                                weight: Tensor | None = None, size_average: Any = None,
                                reduce: Any = None, reduction: str = "mean") -> Tensor:
    """-(y log sigmoid(x) + (1 - y) log sigmoid(-x)), weighted, averaged over the classes
    (the last dim), then reduced over the samples."""
    reduction = _legacy(size_average, reduce, reduction, enum=False)
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not valid")
    # -log sigmoid(x) = softplus(-x)
    loss = F.add(F.mul(target, _softplus0(F.neg(input))),
                 F.mul(F.sub(1.0, target), _softplus0(input)))
    if weight is not None:
        loss = F.mul(loss, weight)
    if input.ndim == 0:  # PyTorch's input.size(-1), the class count
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    loss = F.div(F.sum(loss, input.ndim - 1), float(input.shape[-1]))
    return _reduce(loss, reduction, "multilabel_soft_margin_loss")


@autocast_fp32
def multilabel_margin_loss(input: Tensor, target: Tensor, size_average: Any = None,  # noqa: A002
                           reduce: Any = None, reduction: str = "mean") -> Tensor:
    """PyTorch's ``F.multilabel_margin_loss``: for each sample, the sum over its target
    classes j (``target`` up to its first -1) and non-target classes i of
    max(0, 1 - (x[j] - x[i])), over the number of classes."""
    from .tensor_ops import gather
    from .vectors import one_hot

    reduction = _legacy(size_average, reduce, reduction)
    # PyTorch's shape checks: a non-empty (C,) or (N, C), or a 0-d input (one class); a
    # target of the input's shape, or for a 0-d or 1-d input any of at most 1 dim with C
    # elements
    nd = input.ndim
    if not ((nd == 2 and input.shape[1] != 0) or (nd == 1 and input.shape[0] != 0)
            or nd == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch "
                           f"size, but got: {list(input.shape)}")
    if nd <= 1:
        fits = target.ndim <= 1 and target.numel() == (input.shape[0] if nd else 1)
    else:
        fits = tuple(target.shape) == tuple(input.shape)
    if not fits:
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(input.shape)}")
    x, y = (input, target) if nd == 2 else (F.reshape(input, (1, -1)), F.reshape(target, (1, -1)))
    _cpu_kernel(input, "multilabel_margin_loss_forward_out_frame")
    if y.dtype is not D.int64:
        raise RuntimeError(f"expected scalar type Long but found {D.scalar_type_name(y.dtype)}")
    c = x.shape[1]
    if y.numel():  # every entry, also past the first -1, is a class or -1
        F.check_bounds(F.reshape(y, (-1,)), -1, c, "argument #2 'target' is out of range",
                       "RuntimeError")
    listed = F.cumprod(F.cast(F.ne(y, -1), D.int64), 1)  # the targets before the first -1
    labels = F.where(F.gt(listed, 0), y, 0)
    other = F.eq(F.sum(F.mul(one_hot(labels, c), F.unsqueeze(listed, 2)), 1), 0)
    margins = F.maximum(F.add(F.sub(F.unsqueeze(x, 1), F.unsqueeze(gather(x, 1, labels), 2)),
                              1.0), 0.0)  # (N, target j, class i)
    counted = F.logical_and(F.unsqueeze(F.gt(listed, 0), 2), F.unsqueeze(other, 1))
    loss = F.div(F.sum(F.where(counted, margins, 0.0), (1, 2)), float(c))
    if input.ndim != 2:
        loss = F.squeeze(loss, 0)
    return _reduce(loss, reduction, "multilabel_margin_loss")


@autocast_fp32
@named_backward("MultiMarginLossBackward0", saves_inputs=True)
def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0,  # noqa: A002
                      weight: Tensor | None = None, size_average: Any = None,
                      reduce: Any = None, reduction: str = "mean") -> Tensor:
    """Per sample, the sum over classes j != y of max(0, margin - x_y + x_j)^p (times
    weight[y]) over C. x_y is picked by a one-hot mask, a where and a sum that fuse."""
    from ..creation import arange

    reduction = _legacy(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    _needs_float(input, "multi_margin_loss_cpu_kernel")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    if input.ndim > 2 or (input.ndim and input.shape[-1] == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch "
                           f"size, but got: {list(input.shape)}")
    x = input if input.ndim == 2 else F.reshape(input, (1, -1))
    n, c = x.shape
    if target.numel() != n or target.ndim > 1:
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to "
                           f"the number of input samples (batch size). Expected target size "
                           f"[{n}], but got [{', '.join(map(str, target.shape))}]. Input has "
                           f"shape [{', '.join(map(str, input.shape))}].")
    if weight is not None and weight.numel() != c:
        raise RuntimeError(f"inconsistent weight size, expected {c} but got "
                           f"{list(weight.shape)}")
    _not_differentiable(weight, "multi_margin_loss", "weight")
    _cpu_kernel(input, "multi_margin_loss_cpu_kernel")
    if input.numel():
        _same_scalar_type(weight, input)
    if target.dtype is not D.int64:
        raise RuntimeError("expected scalar type Long but found "
                           f"{D.scalar_type_name(target.dtype)}")
    y = F.reshape(target, (n, 1))
    if n:
        F.check_bounds(y, 0, c, "target out of range", "RuntimeError")
    onehot = F.eq(F.reshape(arange(c, device=x.device), (1, c)), y)
    picked = F.sum(F.where(onehot, x, 0.0), 1, keepdim=True)
    z = F.add(F.sub(margin, picked), x)
    h = F.where(F.gt(z, 0.0), z, 0.0)  # PyTorch's kernel: no gradient where z is 0
    if p == 2:
        h = F.mul(h, h)
    if weight is not None:
        w = F.reshape(_into(weight, x.dtype), (1, c))  # (another dtype only with no rows)
        h = F.mul(h, F.sum(F.where(onehot, w, 0.0), 1, keepdim=True))
    loss = F.div(F.sum(F.where(onehot, 0.0, h), 1), float(c))
    if input.ndim < 2 and reduction == "none":
        loss = F.reshape(loss, tuple(target.shape))
    return _reduce(loss, reduction, "multi_margin_loss")


# ------------------------------------------------------------------ likelihood losses


@autocast_fp32
def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True,  # noqa: A002
                     full: bool = False, size_average: Any = None, eps: float = 1e-8,
                     reduce: Any = None, reduction: str = "mean") -> Tensor:
    """exp(x) - y x (``log_input``) or x - y log(x + eps); ``full`` adds Stirling's
    y log y - y + log(2 pi y) / 2 where y > 1."""
    reduction = _legacy(size_average, reduce, reduction, enum=False)
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if log_input:
        loss = F.sub(F.exp(input), F.mul(target, input))
    else:
        loss = F.sub(input, F.mul(target, F.log(F.add(input, eps))))
    if full:
        # PyTorch's masked_fill of the term where y <= 1: its target gradient there is
        # 0 * (log y + 1 + 1 / (2 y)), NaN at y <= 0 (the forward's NaNs are masked, silently)
        stirling = P.quietly(lambda y: F.add(F.sub(F.mul(y, F.log(y)), y),
                                             F.mul(F.log(F.mul(y, 2 * math.pi)), 0.5)), target)
        loss = F.add(loss, F.where(F.le(target, 1), 0.0, stirling))
    return _reduce(loss, reduction, "poisson_nll_loss")


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor | float,  # noqa: A002
                      full: bool = False, eps: float = 1e-6,
                      reduction: str = "mean") -> Tensor:
    """(log max(var, eps) + (x - y)^2 / max(var, eps)) / 2 (+ log(2 pi) / 2 when ``full``);
    the clamp passes the gradient through unchanged, as PyTorch's no_grad clamp_. ``var`` of
    input's shape, one dim short, or with one dim of 1 (homoscedastic)."""
    from ..creation import full as full_like

    if not isinstance(var, Tensor):
        if not isinstance(var, float):  # PyTorch's torch.any(var < 0) of another number
            kind = type(var < 0)
            name = kind.__name__ if kind.__module__ == "builtins" else \
                f"{kind.__module__}.{kind.__name__}"
            raise TypeError(
                f"any() received an invalid combination of arguments - got ({name}), but "
                "expected one of:\n"
                " * (Tensor input, *, Tensor out = None)\n"
                " * (Tensor input, tuple of ints dim = None, bool keepdim = False, *, "
                "Tensor out = None)\n"
                " * (Tensor input, int dim, bool keepdim = False, *, Tensor out = None)\n")
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = full_like(tuple(input.shape), float(var), dtype=input.dtype, device=input.device)
    else:
        negative = F.cast(F.lt(var.detach(), 0.0), D.int64)
        if negative.numel():
            F.check_bounds(negative, 0, 1, "var has negative entry/entries", "ValueError")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = F.unsqueeze(var, -1)
        elif not (input.ndim == var.ndim and sum(
                v for i, v in zip(input.shape, var.shape) if i != v) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not valid")
    if not var.dtype.is_floating_point:  # PyTorch clamps var in place: its error for ints
        ctype = {"int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
                 "uint8": "unsigned char"}.get(var.dtype.name, var.dtype.name)
        raise RuntimeError(f"result type Float can't be cast to the desired output type {ctype}")
    fixed = var.detach()
    var = F.add(var, F.sub(F.clamp(fixed, eps), fixed))
    d = F.sub(input, target)
    loss = F.mul(F.add(F.log(var), F.div(F.mul(d, d), var)), 0.5)
    if full:
        loss = F.add(loss, 0.5 * math.log(2 * math.pi))
    return _reduce(loss, reduction, "gaussian_nll_loss")


_CTC_UNREACHABLE = -1e30  # log(0) for CTC's lattice: finite, so no inf - inf in a gradient


def _ctc_lengths(lengths: Any, device: Any) -> Tensor:
    """Per-sequence lengths as an int64 tensor of ``n`` (from a tensor, a sequence or an
    int), without reading a tensor's values, so a compiled step keeps them as inputs."""
    from ..creation import tensor

    if isinstance(lengths, Tensor):
        lengths = F.cast(F.reshape(lengths, (-1,)), D.int64)
    else:
        lengths = tensor([lengths] if isinstance(lengths, int) else list(lengths),
                         dtype=D.int64, device=device)
    return lengths


_CTC_WHERE = " (while checking arguments for ctc_loss_allocate_outputs)"
_HUGE = 2 ** 62


def _known_lengths(lengths: Any, device: Any) -> list[int]:
    """Target lengths as Python ints: as given, or read from their tensor (a compiled
    step then runs eagerly: the split of 1-D targets is shaped by their values)."""
    if isinstance(lengths, Tensor):
        return [int(v) for v in _ctc_lengths(lengths, device).tolist()]
    return [lengths] if isinstance(lengths, int) else [int(v) for v in lengths]


def _check_ctc(lp: Tensor, targets: Tensor, in_lens: Tensor, tgt_lens: Tensor,
               blank: int, target_lengths: Any) -> None:
    """PyTorch's ctc_loss checks, in its order. The lengths' values are checked by the check
    primitive (a compiled step checks them too); where several targets are too long, the
    first one's length is named (PyTorch names the longest)."""
    steps, n, classes = lp.shape
    if not 0 <= blank < classes:
        raise RuntimeError("blank must be in label range")
    for name, lengths in (("input_lengths", in_lens), ("target_lengths", tgt_lens)):
        if lengths.shape[0] != n:
            raise RuntimeError(f"{name} must be of size batch_size")
    if not n:
        return
    F.check_bounds(tgt_lens, 0, _HUGE, "Expected target_lengths to have value at least 0, "
                   "but got value {}" + _CTC_WHERE, "RuntimeError")
    targets_arg = "for argument #2 'targets'" + _CTC_WHERE
    if targets.ndim == 1:
        total = sum(_known_lengths(target_lengths, lp.device))
        if targets.shape[0] != total:
            raise RuntimeError(f"Expected tensor to have size {total} at dimension 0, but got "
                               f"size {targets.shape[0]} {targets_arg}")
    else:
        if targets.shape[0] != n:
            raise RuntimeError(f"Expected tensor to have size {n} at dimension 0, but got "
                               f"size {targets.shape[0]} {targets_arg}")
        F.check_bounds(tgt_lens, -_HUGE, targets.shape[1] + 1,
                       "Expected tensor to have size at least {} at dimension 1, but got "
                       f"size {targets.shape[1]} {targets_arg}", "RuntimeError")
    F.check_bounds(in_lens, 0, _HUGE, "Expected input_lengths to have value at least 0, but "
                   "got value {}" + _CTC_WHERE, "RuntimeError")
    F.check_bounds(in_lens, -_HUGE, steps + 1, f"Expected input_lengths to have value at most "
                   f"{steps}, but got value {{}}" + _CTC_WHERE, "RuntimeError")


def _ctc_labels(targets: Tensor, target_lengths: Tensor, given_lengths: Any,
                blank: int) -> Tensor:
    """(N, 2 * S + 1): each target with a blank before, between and after its labels (the
    rest blanks), from padded (N, S) targets or their 1-D concatenation, split by a gather
    at the lengths ``given_lengths`` (Python ints as given, or read from their tensor)."""
    from ..creation import arange, full, tensor
    from .tensor_ops import gather

    if targets.ndim == 1:
        lens = _known_lengths(given_lengths, targets.device)
        starts = np.cumsum([0, *lens[:-1]], dtype=np.int64)[:, None]
        where = np.minimum(starts + np.arange(max(lens, default=0)), len(targets) - 1)
        targets = gather(F.expand(F.unsqueeze(targets, 0), len(lens), len(targets)), 1,
                         tensor(np.maximum(where, 0), device=targets.device))
    n, width = targets.shape
    inside = F.lt(F.unsqueeze(arange(width, device=targets.device), 0),
                  F.unsqueeze(target_lengths, 1))
    labels = F.where(inside, F.cast(targets, D.int64), blank)
    blanks = full((n, width), blank, dtype=D.int64, device=targets.device)
    pairs = F.reshape(F.stack([blanks, labels], 2), (n, 2 * width))
    return F.cat([pairs, full((n, 1), blank, dtype=D.int64, device=targets.device)], 1)


def _ctc_softmax_term(lp: Tensor, in_lens: Tensor) -> Tensor:
    """Zero, with the gradient exp(log_probs) (at each sequence's own steps): PyTorch's CTC
    backward returns it on top of the exact gradient, which log_softmax's backward cancels,
    so ``log_probs.grad`` of a leaf is PyTorch's too."""
    from ..creation import arange

    steps = F.unsqueeze(F.unsqueeze(arange(lp.shape[0], device=lp.device), 1), 2)
    valid = F.logical_and(F.lt(steps, F.unsqueeze(F.reshape(in_lens, (1, -1)), 2)),
                          F.gt(lp.detach(), -math.inf))
    zero = F.mul(F.exp(lp.detach()), F.sub(lp, lp.detach()))
    return F.sum(F.where(valid, zero, 0.0), (0, 2))


@autocast_fp32
def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Any, target_lengths: Any,
             blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """PyTorch's ``F.ctc_loss``: -log of the summed probability of every alignment of each
    target to its (T, N, C) or unbatched (T, C) log-probabilities, by the forward (alpha)
    recursion over the blank-extended labels in log space; autograd gives its gradient.
    'mean' divides each loss by its target length, then averages."""
    from ..creation import tensor
    from .reductions import logsumexp
    from .tensor_ops import gather

    reduction = _enum(reduction)
    batched = log_probs.ndim == 3
    lp = log_probs if batched else F.unsqueeze(log_probs, 1)
    if not batched:
        targets = F.unsqueeze(targets, 0)
    steps, n = lp.shape[0], lp.shape[1]
    in_lens = _ctc_lengths(input_lengths, lp.device)
    tgt_lens = _ctc_lengths(target_lengths, lp.device)
    _check_ctc(lp, targets, in_lens, tgt_lens, blank, target_lengths)
    ext = _ctc_labels(targets, tgt_lens, target_lengths, blank)
    width = ext.shape[1]
    # s may also come from s - 2: a label unlike the one two before
    skip = F.cat([tensor(np.zeros((n, min(2, width)), bool), device=lp.device),
                  F.logical_and(F.ne(ext[:, 2:], blank), F.ne(ext[:, 2:], ext[:, :-2]))], 1)
    emit = gather(lp, 2, F.expand(F.unsqueeze(ext, 0), steps, n, width))  # (T, N, 2S+1)
    none = tensor(np.full((n, 1), _CTC_UNREACHABLE), dtype=lp.dtype, device=lp.device)
    start = np.full((1, width), _CTC_UNREACHABLE)
    start[:, :2] = 0.0
    alpha = F.add(emit[0], tensor(start, dtype=lp.dtype, device=lp.device))
    in_lens_t = F.unsqueeze(in_lens, 1)
    for t in range(1, steps):
        one = F.cat([none, alpha[:, :-1]], 1)
        two = F.where(skip, F.cat([none, none, alpha[:, :-2]], 1), _CTC_UNREACHABLE)
        step = F.add(logsumexp(F.stack([alpha, one, two], 0), 0), emit[t])
        alpha = F.where(F.gt(in_lens_t, t), step, alpha)  # a sequence's own length only
    double = F.mul(tgt_lens, 2)
    last = gather(alpha, 1, F.stack([double, F.maximum(F.sub(double, 1), 0)], 1))
    has_label = F.stack([F.ge(tgt_lens, 0), F.gt(tgt_lens, 0)], 1)
    last = F.where(has_label, last, _CTC_UNREACHABLE)
    loss = F.add(F.neg(logsumexp(last, 1)), _ctc_softmax_term(lp, in_lens_t))
    impossible = F.gt(loss, -_CTC_UNREACHABLE / 10)
    loss = F.where(impossible, 0.0 if zero_infinity else math.inf, loss)
    if reduction == "mean":
        return F.mean(F.div(loss, F.maximum(F.cast(tgt_lens, lp.dtype), 1.0)))
    loss = _reduce(loss, reduction, "ctc_loss")
    return loss if batched or reduction != "none" else F.squeeze(loss, 0)
