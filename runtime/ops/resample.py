"""``F.interpolate`` (and ``nn.Upsample``): nearest, nearest-exact, (bi/tri)linear, bicubic
and area resampling, PyTorch's index rules, as gathers along each spatial axis
(``index_select`` with index tables computed once from the sizes) and, for the linear and
cubic modes, a blend of two or four neighbours with fixed weights: differentiable, and
captured by a compiled step. ``area`` is an adaptive average pool, as PyTorch's."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..tensor import Tensor
from . import functional as F
from .tensor_ops import index_select

_SPATIAL = {"nearest": (1, 2, 3), "nearest-exact": (1, 2, 3), "linear": (1,),
            "bilinear": (2,), "trilinear": (3,), "bicubic": (2,), "area": (1, 2)}
_LINEAR = ("linear", "bilinear", "trilinear")
_CUBIC_A = -0.75  # PyTorch's bicubic coefficient


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


def _source(out: int, n: int, factor: float | None, align_corners: bool,
            cubic: bool = False) -> np.ndarray:
    """Each output position's source coordinate (PyTorch's area_pixel_compute_source_index:
    clamped at 0 except for the cubic mode)."""
    dst = np.arange(out, dtype=np.float64)
    if align_corners:
        return dst * ((n - 1) / (out - 1)) if out > 1 else np.zeros(out)
    scale = n / out if factor is None else 1.0 / factor
    src = (dst + 0.5) * scale - 0.5
    return src if cubic else np.maximum(src, 0.0)


def _cubic_taps(src: np.ndarray, n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """PyTorch's bicubic convolution (A = -0.75) along one axis: four neighbours of each
    source coordinate (clamped to the input) and their weights."""
    a, base = _CUBIC_A, np.floor(src)
    t = src - base

    def near(d: np.ndarray) -> np.ndarray:  # |d| <= 1
        return ((a + 2) * d - (a + 3)) * d * d + 1

    def far(d: np.ndarray) -> np.ndarray:  # 1 < |d| < 2
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a

    weights = (far(t + 1), near(t), near(1 - t), far(2 - t))
    return [(np.clip(base + k - 1, 0, n - 1).astype(np.int64), w)
            for k, w in enumerate(weights)]


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
    3-D inputs, bilinear and bicubic for 4-D ones, trilinear for 5-D ones, area for 3-D and
    4-D ones)."""
    if mode == "lanczos":
        raise NotImplementedError("interpolate: mode 'lanczos' is not supported here")
    if mode not in _SPATIAL:
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) "
            f"for the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
            f"nearest-exact (got {mode})")
    spatial = input.ndim - 2
    if spatial not in _SPATIAL[mode]:
        if mode == "area":
            raise NotImplementedError("interpolate: mode 'area' of a 5-D input is not "
                                      "supported here")
        dims = {"linear": "3D", "bilinear": "4D", "trilinear": "5D", "bicubic": "4D"}.get(
            mode, "3D, 4D and 5D")
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {dims} "
                                  "input")
    if mode not in (*_LINEAR, "bicubic") and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    if antialias:
        raise NotImplementedError("interpolate: antialias is not supported here")
    sizes, factors = _scales(input, spatial, size, scale_factor, recompute_scale_factor)
    if mode == "area":
        from .conv import adaptive_avg_pool1d, adaptive_avg_pool2d

        pool = adaptive_avg_pool1d if spatial == 1 else adaptive_avg_pool2d
        return pool(input, sizes[0] if spatial == 1 else sizes)
    out = input
    for k, (o, f) in enumerate(zip(sizes, factors)):
        axis, n = 2 + k, input.shape[2 + k]
        if mode in ("nearest", "nearest-exact"):
            out = _along(out, axis, _nearest(o, n, f, mode == "nearest-exact"))
        elif mode == "bicubic":
            taps = _cubic_taps(_source(o, n, f, bool(align_corners), cubic=True), n)
            terms = [F.mul(_along(out, axis, i), _axis_weight(w, axis, out, input))
                     for i, w in taps]
            out = F.add(F.add(terms[0], terms[1]), F.add(terms[2], terms[3]))
        else:
            src = _source(o, n, f, bool(align_corners))
            lo = np.minimum(np.floor(src).astype(np.int64), n - 1)
            hi = np.minimum(lo + 1, n - 1)
            a, b = _along(out, axis, lo), _along(out, axis, hi)
            out = F.add(a, F.mul(F.sub(b, a), _axis_weight(src - lo, axis, out, input)))
    return out


def _axis_weight(w: np.ndarray, axis: int, out: Tensor, input: Tensor) -> Tensor:  # noqa: A002
    """A weight per position along ``axis``, shaped to broadcast over ``out``."""
    from ..creation import tensor

    shape = [1] * out.ndim
    shape[axis] = len(w)
    return tensor(w.astype(np.float64).reshape(shape), dtype=input.dtype, device=input.device)


def _deprecated(name: str) -> None:
    import warnings

    warnings.warn(f"`nn.functional.{name}` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", stacklevel=3)


def upsample(input: Tensor, size: Any = None, scale_factor: Any = None,  # noqa: A002
             mode: str = "nearest", align_corners: bool | None = None) -> Tensor:
    """PyTorch's deprecated ``F.upsample``: ``interpolate``, with its warning."""
    _deprecated("upsample")
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size: Any = None, scale_factor: Any = None  # noqa: A002
                     ) -> Tensor:
    _deprecated("upsample_nearest")
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size: Any = None, scale_factor: Any = None  # noqa: A002
                      ) -> Tensor:
    _deprecated("upsample_bilinear")
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def upsample_sizes(size: Any, scale_factor: Any) -> tuple[Any, Any]:
    """``nn.Upsample``'s size and scale factor as given (a float factor kept a float)."""
    if isinstance(scale_factor, Sequence):
        scale_factor = tuple(float(f) for f in scale_factor)
    elif scale_factor is not None:
        scale_factor = float(scale_factor)
    return size, scale_factor
