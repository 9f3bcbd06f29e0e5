"""Helpers shared by the distributions (torch.distributions.utils)."""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import numpy as np

import runtime as rt

from .. import _dtype as D
from ..ops.shapes import Size
from ..tensor import Tensor

__all__ = ["broadcast_all", "clamp_probs", "lazy_property", "logits_to_probs",
           "probs_to_logits", "sum_rightmost", "tril_matrix_to_vec", "vec_to_tril_matrix"]


def broadcast_all(*values: Any) -> tuple[Tensor, ...]:
    """Tensors and numbers broadcast to one shape; numbers become tensors of the first
    tensor's dtype and device (the default float dtype where there is none)."""
    if not all(isinstance(v, (Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, "
                         "torch.Tensor or objects implementing __torch_function__.")
    if not all(isinstance(v, Tensor) for v in values):
        like = next((v for v in values if isinstance(v, Tensor)), None)
        dtype = like.dtype if like is not None else rt.get_default_dtype()
        device = like.device if like is not None else "cpu"
        values = tuple(v if isinstance(v, Tensor) else rt.tensor(v, dtype=dtype, device=device)
                       for v in values)
    return tuple(rt.broadcast_tensors(*values))


def clamp_probs(probs: Tensor) -> Tensor:
    """Probabilities kept inside (eps, 1 - eps) of their dtype."""
    eps = rt.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """Probabilities of logits: sigmoid for a binary variable, else softmax over the last
    dimension."""
    return rt.sigmoid(logits) if is_binary else rt.softmax(logits, dim=-1)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """Logits of probabilities (clamped inside (eps, 1 - eps) first): log-odds for a binary
    variable, else log-probabilities."""
    p = clamp_probs(probs)
    return rt.log(p) - rt.log1p(-p) if is_binary else rt.log(p)


def sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """``value`` summed over its rightmost ``dim`` dimensions."""
    if dim == 0:
        return value
    return value.reshape(*value.shape[:value.ndim - dim], -1).sum(-1)


def extended_shape(sample_shape: Any, *shapes: tuple[int, ...]) -> Size:
    """``sample_shape`` followed by the batch and event shapes, as a Size."""
    out = tuple(sample_shape)
    for s in shapes:
        out += tuple(s)
    return Size(out)


def float_dtype(t: Tensor) -> D.DType:
    """``t``'s dtype where it is floating, else the default float dtype."""
    return t.dtype if t.dtype.is_floating_point else rt.get_default_dtype()


class lazy_property:  # noqa: N801 - torch's name
    """A property computed on first access and then stored on the instance; read from the
    class it is the descriptor itself (so validation can skip a not yet computed one).
    As torch's, it is computed with grad enabled: first read under ``no_grad`` (a
    ``sample``), it still carries its graph to the parameters for a later ``rsample``."""

    def __init__(self, wrapped: Callable[[Any], Any]) -> None:
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__
        self.__name__ = wrapped.__name__

    def __get__(self, instance: Any, obj_type: Any = None) -> Any:
        if instance is None:
            return self
        with rt.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


def _tril_mask(n: int, diag: int) -> np.ndarray:
    """The (n, n) mask of the lower triangle below diagonal ``diag``, as torch's utils."""
    arange = np.arange(n)
    return arange < arange[:, None] + (diag + 1)


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    """The lower-triangular entries (on and below diagonal ``diag``) of the rightmost two
    dimensions, row by row, as a vector (differentiable: a gather)."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    index = rt.tensor(np.flatnonzero(_tril_mask(n, diag)), device=mat.device)
    return mat.reshape(*mat.shape[:-2], n * n).index_select(-1, index)


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """The lower-triangular matrix (zeros above diagonal ``diag``) whose entries, row by row,
    are ``vec``'s last dimension (differentiable: a gather from ``vec`` and one zero)."""
    m = vec.shape[-1]
    root = ((1 + 2 * diag) ** 2 + 8 * m + 4 * abs(diag) * (diag + 1)) ** 0.5
    n = (-(1 + 2 * diag) + root) / 2
    if round(n) - n > rt.finfo(vec.dtype).eps:
        raise ValueError(f"The size of last dimension is {m} which cannot be expressed as the "
                         "lower triangular part of a square D x D matrix.")
    n = round(n)
    mask = _tril_mask(n, diag).reshape(-1)
    source = np.full(n * n, m)                 # the appended zero
    source[mask] = np.arange(int(mask.sum()))
    padded = rt.cat([vec, rt.zeros(*vec.shape[:-1], 1, dtype=vec.dtype, device=vec.device)], -1)
    picked = padded.index_select(-1, rt.tensor(source, device=vec.device))
    return picked.reshape(*vec.shape[:-1], n, n)
