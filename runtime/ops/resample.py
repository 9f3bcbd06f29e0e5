"""``F.interpolate`` (and ``nn.Upsample``): nearest, nearest-exact, linear and bilinear
resampling, PyTorch's index rules, as gathers along each spatial axis (``index_select`` with
index tables computed once from the sizes) and, for the linear modes, a blend of two
neighbours with fixed weights: differentiable, and captured by a compiled step."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..tensor import Tensor
from . import functional as F
from .tensor_ops import index_select

_SPATIAL = {"nearest": (1, 2, 3), "nearest-exact": (1, 2, 3), "linear": (1,),
            "bilinear": (2,)}


def _scales(x: Tensor, spatial: int, size: Any, scale_factor: Any,
            recompute_scale_factor: bool | None) -> tuple[list[int], list[float | None]]:
    """Output sizes, and the scale factors the index rules use (None: in/out)."""
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is None and scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    ins = list(x.shape[2:])
    if size is not None:
        sizes = [size] * spatial if isinstance(size, int) else list(size)
        if len(sizes) != spatial:
            raise ValueError(f"Input and output must have the same number of spatial "
                             f"dimensions, but got input with spatial dimensions of {ins} "
                             f"and output size of {size}. Please provide input tensor "
                             f"in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, "
                             f"...,oK) format.")
        return [int(s) for s in sizes], [None] * spatial
    factors = [scale_factor] * spatial if isinstance(scale_factor, (int, float)) \
        else list(scale_factor)
    if len(factors) != spatial:
        raise ValueError(f"Input and scale_factor must have the same number of spatial "
                         f"dimensions, but got input with spatial dimensions of {ins} and "
                         f"scale_factor of shape {scale_factor}. Please provide input tensor "
                         f"in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, "
                         f"...,sK) format.")
    sizes = [math.floor(n * float(f)) for n, f in zip(ins, factors)]
    return sizes, ([None] * spatial if recompute_scale_factor else
                   [float(f) for f in factors])


def _source(out: int, n: int, factor: float | None, align_corners: bool) -> np.ndarray:
    """Each output position's source coordinate (PyTorch's area_pixel_compute_source_index)."""
    dst = np.arange(out, dtype=np.float64)
    if align_corners:
        return dst * ((n - 1) / (out - 1)) if out > 1 else np.zeros(out)
    scale = n / out if factor is None else 1.0 / factor
    return np.maximum((dst + 0.5) * scale - 0.5, 0.0)


def _nearest(out: int, n: int, factor: float | None, exact: bool) -> np.ndarray:
    scale = n / out if factor is None else 1.0 / factor
    dst = np.arange(out, dtype=np.float64)
    src = np.floor((dst + 0.5) * scale) if exact else np.floor(dst * scale)
    return np.minimum(src, n - 1).astype(np.int64)


def _along(x: Tensor, axis: int, index: np.ndarray) -> Tensor:
    from ..creation import tensor

    return index_select(x, axis, tensor(index, device=x.device))


def interpolate(input: Tensor, size: Any = None, scale_factor: Any = None,  # noqa: A002
                mode: str = "nearest", align_corners: bool | None = None,
                recompute_scale_factor: bool | None = None, antialias: bool = False) -> Tensor:
    """Resample the spatial dimensions of an (N, C, ...) input to ``size`` or by
    ``scale_factor``, PyTorch's ``F.interpolate`` (modes nearest, nearest-exact, linear for
    3-D inputs, bilinear for 4-D ones)."""
    if mode not in _SPATIAL and mode not in ("bicubic", "trilinear", "area"):
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) "
            f"for the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
            f"nearest-exact (got {mode})")
    if mode not in _SPATIAL:
        raise NotImplementedError(f"interpolate: mode {mode!r} is not supported here (nearest, "
                                  "nearest-exact, linear and bilinear are)")
    spatial = input.ndim - 2
    if spatial not in _SPATIAL[mode]:
        dims = {"linear": "3D", "bilinear": "4D"}.get(mode, "3D, 4D and 5D")
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {dims} "
                                  "input")
    linear = mode in ("linear", "bilinear")
    if not linear and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    if antialias:
        raise NotImplementedError("interpolate: antialias is not supported here")
    sizes, factors = _scales(input, spatial, size, scale_factor, recompute_scale_factor)
    out = input
    for k, (o, f) in enumerate(zip(sizes, factors)):
        axis, n = 2 + k, input.shape[2 + k]
        if not linear:
            out = _along(out, axis, _nearest(o, n, f, mode == "nearest-exact"))
            continue
        src = _source(o, n, f, bool(align_corners))
        lo = np.minimum(np.floor(src).astype(np.int64), n - 1)
        hi = np.minimum(lo + 1, n - 1)
        w = (src - lo).astype(np.float64)
        shape = [1] * out.ndim
        shape[axis] = o
        from ..creation import tensor

        weight = tensor(w.reshape(shape), dtype=input.dtype, device=input.device)
        a, b = _along(out, axis, lo), _along(out, axis, hi)
        out = F.add(a, F.mul(F.sub(b, a), weight))
    return out


def upsample_sizes(size: Any, scale_factor: Any) -> tuple[Any, Any]:
    """``nn.Upsample``'s size and scale factor as given (a float factor kept a float)."""
    if isinstance(scale_factor, Sequence):
        scale_factor = tuple(float(f) for f in scale_factor)
    elif scale_factor is not None:
        scale_factor = float(scale_factor)
    return size, scale_factor
