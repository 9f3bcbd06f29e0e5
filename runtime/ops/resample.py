"""``F.interpolate`` (and ``nn.Upsample``): nearest, nearest-exact, (bi/tri)linear, bicubic
and area resampling, PyTorch's index rules, as gathers along each spatial axis
(``index_select`` with index tables computed once from the sizes) and, for the linear and
cubic modes, a blend of two or four neighbours with fixed weights: differentiable, and
captured by a compiled step. ``area`` is an adaptive average pool, as PyTorch's; the
antialiased modes (bilinear, bicubic, lanczos of 4-D inputs) multiply by a fixed weight matrix
along each axis. ``grid_sample`` gathers the neighbours of each grid point."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import _dtype as D
from ..tensor import Tensor
from . import functional as F
from .tensor_ops import index_select

_SPATIAL = {"nearest": (1, 2, 3), "nearest-exact": (1, 2, 3), "linear": (1,),
            "bilinear": (2,), "trilinear": (3,), "bicubic": (2,), "area": (1, 2, 3),
            "lanczos": (2,)}
_LINEAR = ("linear", "bilinear", "trilinear")


def _triangle(x: np.ndarray) -> np.ndarray:
    return np.maximum(1.0 - np.abs(x), 0.0)


def _keys_cubic(x: np.ndarray) -> np.ndarray:
    """The cubic convolution with A = -0.5 (Keys'), which PyTorch's antialiased bicubic
    filter uses (not the -0.75 of its plain bicubic)."""
    a, d = -0.5, np.abs(x)
    near = ((a + 2) * d - (a + 3)) * d * d + 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return np.where(d < 1.0, near, np.where(d < 2.0, far, 0.0))


def _lanczos3(x: np.ndarray) -> np.ndarray:
    return np.where(np.abs(x) < 3.0, np.sinc(x) * np.sinc(x / 3.0), 0.0)


# the antialiasing filters and their support at scale 1 (PyTorch's interp_size)
_FILTERS = {"bilinear": (_triangle, 2), "bicubic": (_keys_cubic, 4), "lanczos": (_lanczos3, 6)}
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
        sizes = [size] * max(spatial, 0) if isinstance(size, int) else list(size)
        if not isinstance(size, int) and len(sizes) != spatial:
            raise ValueError(f"Input and output must have the same number of spatial "
                             f"dimensions, but got input with spatial dimensions of {ins} "
                             f"and output size of {size}. Please provide input tensor "
                             f"in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, "
                             f"...,oK) format.")
        if not all(isinstance(v, (int, np.integer)) for v in sizes):
            raise TypeError("expected size to be one of int or Tuple[int] or Tuple[int, int] "
                            "or Tuple[int, int, int], but got size with types "
                            f"{[type(v) for v in sizes]}")
        if recompute_scale_factor:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        return [int(s) for s in sizes], [None] * len(sizes)
    factors = [scale_factor] * max(spatial, 0) if isinstance(scale_factor, (int, float)) \
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


def _nearest(out: int, n: int, factor: float | None, exact: bool,
             plane: bool = False) -> np.ndarray:
    """Each output's source index along one axis. PyTorch's 2-d nearest kernel (``plane``)
    copies an axis kept at its size and halves the index of one doubled, whatever the scale
    factor (2.3 on 3 rows gives 6: rows 0 0 1 1 2 2, not 0 0 0 1 1 2); 1-d and 3-d do not."""
    if plane and not exact and out in (n, 2 * n):
        return np.arange(out, dtype=np.int64) // (out // n)
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
    3-D inputs, bilinear and bicubic for 4-D ones, trilinear for 5-D ones, area for all)."""
    # PyTorch's checks in its order: align_corners, the sizes, antialias, then the modes
    if mode in ("nearest", "area", "nearest-exact") and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    spatial = input.ndim - 2
    sizes, factors = _scales(input, spatial, size, scale_factor, recompute_scale_factor)
    if antialias and not (mode in _FILTERS and input.ndim == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos "
                         "modes and requires a 4-D tensor as input")
    if mode == "lanczos" and input.ndim == 4:
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
    if mode not in _SPATIAL or spatial not in _SPATIAL[mode]:
        raise NotImplementedError(_mode_error(input.ndim, mode))
    if mode != "area" and min(sizes) <= 0:
        names = ("D", "H", "W")[-spatial:]
        ins = ", ".join(f"{a}: {v}" for a, v in zip(names, input.shape[2:]))
        outs = ", ".join(f"{a}: {v}" for a, v in zip(names, sizes))
        joint = " and" if spatial == 1 else ""
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input "
                           f"({ins}){joint} output ({outs})")
    if not input.dtype.is_floating_point and mode not in ("nearest", "nearest-exact"):
        _refuse_integers(input, mode, spatial, antialias)
    elif not input.dtype.is_floating_point and input.dtype is not D.uint8:
        # PyTorch's nearest kernels: floats and uint8 only
        kernel = "upsample_nearest2d_channels_last" if spatial == 2 else \
            "compute_indices_weights_nearest"
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{D.scalar_type_name(input.dtype)}'")
    if antialias:
        return _antialiased(input, sizes, factors, mode, bool(align_corners))
    if mode == "area":
        from .conv import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d

        if spatial == 1:
            return adaptive_avg_pool1d(input, sizes[0])
        return (adaptive_avg_pool2d if spatial == 2 else adaptive_avg_pool3d)(input, sizes)
    from .composite import straight_through

    out = input
    for k, (o, f) in enumerate(zip(sizes, factors)):
        axis, n = 2 + k, input.shape[2 + k]
        if o == n and mode in ("linear", "bilinear", "trilinear"):
            continue  # PyTorch's kernels copy an axis kept at its size, whatever the factor
        if mode in ("nearest", "nearest-exact"):
            picked = _along(out, axis, _nearest(o, n, f, mode == "nearest-exact", spatial == 2))
            if o == n and mode == "nearest" and spatial != 2 and out.requires_grad:
                # PyTorch's 1-d and 3-d nearest backward passes such an axis's gradient
                # straight back, where its forward picked by the scale factor
                picked = straight_through(picked, out, "UpsampleNearestBackward0")
            out = picked
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
    if mode == "bicubic" and list(sizes) == list(input.shape[2:]) and out.requires_grad:
        # PyTorch's bicubic backward copies the gradient back where no axis changes size, its
        # forward resamples by the scale factor
        out = straight_through(out, input, "UpsampleBicubicBackward0")
    return out


def _antialias_weights(out: int, n: int, factor: float | None, align_corners: bool,
                       mode: str) -> np.ndarray:
    """The (out, n) matrix of PyTorch's antialiased resampling along one axis
    (_compute_index_ranges_weights with antialias): each output position averages the
    inputs within the filter's support, stretched by the scale when it shrinks, with weights
    normalized to sum to one."""
    fn, interp_size = _FILTERS[mode]
    if align_corners:
        scale = (n - 1) / (out - 1) if out > 1 else 0.0
    else:
        scale = 1.0 / factor if factor is not None and factor > 0 else n / out
    support = interp_size * 0.5 * scale if scale >= 1.0 else interp_size * 0.5
    invscale = 1.0 / scale if scale >= 1.0 else 1.0
    weights = np.zeros((out, n))
    for i in range(out):
        center = scale * (i + 0.5)
        lo = max(int(center - support + 0.5), 0)  # C++'s truncation toward zero
        hi = min(int(center + support + 0.5), n)
        w = fn((np.arange(lo, hi) - center + 0.5) * invscale)
        total = w.sum()
        weights[i, lo:hi] = w / total if total != 0.0 else w
    return weights


def _antialiased(input: Tensor, sizes: list[int], factors: list[float | None],  # noqa: A002
                 mode: str, align_corners: bool) -> Tensor:
    """Antialiased bilinear, bicubic or lanczos resampling of a 4-D input: a weight matrix
    along H, then one along W (separable, as PyTorch's)."""
    from ..creation import tensor

    (oh, ow), (fh, fw), (h, w) = sizes, factors, input.shape[2:]
    rows = tensor(_antialias_weights(oh, h, fh, align_corners, mode), dtype=input.dtype,
                  device=input.device)
    cols = tensor(_antialias_weights(ow, w, fw, align_corners, mode).T, dtype=input.dtype,
                  device=input.device)
    out = F.matmul(F.matmul(rows, input), cols)
    # PyTorch's forward skips an axis kept at its size (a copy, whatever the scale factor),
    # its backward does not: the copy's values with the resampling's gradient
    kept = [(oh == h and fh is not None), (ow == w and fw is not None)]
    if not any(kept) or align_corners:
        return out
    value = input
    if not kept[0]:
        value = F.matmul(rows, value)
    if not kept[1]:
        value = F.matmul(value, cols)
    if not out.requires_grad:
        return value
    from .composite import straight_through

    return straight_through(value, out, "UpsampleAaBackward0")


def _refuse_integers(input: Tensor, mode: str, spatial: int, antialias: bool  # noqa: A002
                     ) -> None:
    """The interpolating modes of an integer input: PyTorch's kernel error for each, and for
    uint8 in its 2-d linear, cubic and lanczos modes (which PyTorch computes in fixed point,
    rounding differently from a float computation) an error here, never other values."""
    name = D.scalar_type_name(input.dtype)
    if name == "Byte" and spatial == 2 and mode in _FILTERS:
        raise NotImplementedError(f"interpolate: a uint8 input in mode '{mode}' (PyTorch's "
                                  "fixed-point kernel) is not supported here; convert it to a "
                                  "floating-point type")
    if mode == "area":
        kernel = "adaptive_avg_pool3d_cpu" if spatial == 3 else "adaptive_avg_pool2d"
    elif antialias:
        kernel = "compute_index_ranges_weights"
    elif mode == "bicubic":
        kernel = "compute_indices_weights_cubic"
    elif mode == "bilinear":
        kernel = "upsample_bilinear2d_channels_last"
    else:
        kernel = "compute_indices_weights_linear"
    raise NotImplementedError(f'"{kernel}" not implemented for \'{name}\'')


def _mode_error(ndim: int, mode: str) -> str:
    """PyTorch's text for a mode that does not take an input of ``ndim`` dims."""
    needs = {"linear": 3, "bilinear": 4, "trilinear": 5}
    if ndim in (3, 4, 5) and mode in needs:
        return f"Got {ndim}D input, but {mode} mode needs {needs[mode]}D input"
    return (f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {ndim}D) for the "
            "modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
            f"nearest-exact (got {mode})")


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


# --------------------------------------------------------------- affine_grid, grid_sample


def _align_warning(align_corners: bool | None) -> bool:
    if align_corners is None:
        import warnings

        warnings.warn("Default grid_sample and affine_grid behavior has changed to "
                      "align_corners=False since 1.3.0. Please specify align_corners=True if "
                      "the old behavior is desired. See the documentation of grid_sample for "
                      "details.", stacklevel=3)
        return False
    return align_corners


def _base_coords(n: int, align_corners: bool) -> np.ndarray:
    """The normalized coordinates of ``n`` pixel centres (or corners) in [-1, 1]."""
    if n <= 1:
        return np.zeros(n)
    coords = np.linspace(-1.0, 1.0, n)
    return coords if align_corners else coords * (n - 1) / n


def affine_grid(theta: Tensor, size: Sequence[int], align_corners: bool | None = None
                ) -> Tensor:
    """PyTorch's ``F.affine_grid``: for an (N, 2, 3) (or (N, 3, 4)) ``theta``, the sampling
    grid (N, H, W, 2) (or (N, D, H, W, 3)) of the affine map of normalized coordinates."""
    from ..creation import tensor

    align_corners = _align_warning(align_corners)
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    dims = len(size) - 2
    if dims not in (2, 3):
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {size}.")
    if theta.ndim != 3 or tuple(theta.shape[-2:]) != (dims, dims + 1):
        kind = "2D affine matrices of shape Nx2x3" if dims == 2 else \
            "3D affine matrices of shape Nx3x4"
        raise ValueError(f"Expected a batch of {kind} for size {size}. Got {theta.shape}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    if theta.shape[0] != size[0]:  # PyTorch's bmm of its base grid by theta
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{size[0]}, {dims + 1}] but got: [{theta.shape[0]}, {dims + 1}].")
    spatial = [int(v) for v in size[2:]]
    axes = [_base_coords(n, align_corners) for n in spatial]
    mesh = np.meshgrid(*axes, indexing="ij")  # (D,) H, W
    base = np.stack([*reversed(mesh), np.ones_like(mesh[0])], -1)  # x, y(, z), 1
    base_t = tensor(base.reshape(1, -1, dims + 1), dtype=theta.dtype, device=theta.device)
    grid = F.matmul(base_t, F.transpose(theta, 1, 2))  # (N, points, dims)
    return F.reshape(grid, (theta.shape[0], *spatial, dims))


def _unnormalize(coord: Tensor, size: int, align_corners: bool) -> Tensor:
    """PyTorch's grid_sampler_unnormalize: a normalized coordinate in [-1, 1] as a pixel
    coordinate."""
    if align_corners:
        return F.mul(F.add(coord, 1.0), (size - 1) / 2)
    return F.div(F.sub(F.mul(F.add(coord, 1.0), size), 1.0), 2)


def _pad_coord(pix: Tensor, size: int, padding_mode: str, align_corners: bool) -> Tensor:
    """PyTorch's grid_sampler's compute_coordinates: a pixel coordinate clipped (border) or
    reflected (reflection) into the input; on or past an edge it gets no gradient, as
    torch's clip_coordinates_set_grad."""
    if padding_mode == "reflection":
        low, high = (0.0, 2.0 * (size - 1)) if align_corners else (-1.0, 2.0 * size - 1)
        pix = _reflect(pix, low, high)
    if padding_mode in ("border", "reflection"):
        pix = F.where(F.le(pix, 0), 0.0, F.where(F.ge(pix, size - 1), float(size - 1), pix))
    return pix


def _source_coord(coord: Tensor, size: int, padding_mode: str, align_corners: bool) -> Tensor:
    """PyTorch's grid_sampler_compute_source_index."""
    return _pad_coord(_unnormalize(coord, size, align_corners), size, padding_mode,
                      align_corners)


def _reflect(x: Tensor, twice_low: float, twice_high: float) -> Tensor:
    if twice_low == twice_high:
        return F.mul(x, 0.0)
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    d = F.abs(F.sub(x, low))
    extra = F.fmod(d, span)
    even = F.eq(F.remainder(F.floor(F.div(d, span)), 2), 0)
    return F.where(even, F.add(extra, low), F.add(F.sub(span, extra), low))


def _check_grid(input: Tensor, grid: Tensor, mode: str) -> None:  # noqa: A002
    """PyTorch's grid_sampler checks, in its order."""
    check_grid_common(input, grid)
    shapes = f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}"
    if input.ndim == 4 and grid.ndim != 4:
        raise RuntimeError(f"grid_sampler(): expected 4D input and grid with same number of "
                           f"dimensions, but got {shapes}")
    if input.ndim != 4 and (input.ndim != 5 or grid.ndim != 5):
        raise RuntimeError(f"grid_sampler(): expected 5D input and grid with same number of "
                           f"dimensions, but got {shapes}")
    if input.ndim == 5 and mode == "bicubic":
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")


def check_grid_common(input: Tensor, grid: Tensor) -> None:  # noqa: A002
    """PyTorch's check_grid_sampler_common: the checks every grid sampler makes before its
    own of the dimensions."""
    if input.dtype is not grid.dtype:
        raise RuntimeError(f"expected scalar type {D.scalar_type_name(input.dtype)} but found "
                           f"{D.scalar_type_name(grid.dtype)}")
    shapes = f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}"
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, "
                           f"but got {shapes}")
    if grid.shape[-1] != input.ndim - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.ndim - 2} in "
                           f"last dimension, but got grid with sizes {list(grid.shape)}")
    for i in range(2, input.ndim):
        if input.shape[i] == 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial "
                               f"dimensions, but input has sizes {list(input.shape)} with "
                               f"dimension {i} being empty")


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear",  # noqa: A002
                padding_mode: str = "zeros", align_corners: bool | None = None) -> Tensor:
    """PyTorch's ``F.grid_sample`` of an (N, C, H, W) input at an (N, H_out, W_out, 2) grid
    of normalized (x, y) coordinates, or of an (N, C, D, H, W) input at an (N, D_out, H_out,
    W_out, 3) grid of (x, y, z): bilinear (trilinear on 5-D), nearest or bicubic (4-D), with
    zeros, border or reflection padding; gathers of the neighbours and their weights,
    differentiable in both."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    align_corners = _align_warning(align_corners)
    _check_grid(input, grid, mode)
    if not input.dtype.is_floating_point:
        kernel = "grid_sampler_2d_cpu_kernel_impl" if input.ndim == 4 else "grid_sampler3d_cpu"
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{D.scalar_type_name(input.dtype)}'")
    sizes = list(reversed(input.shape[2:]))  # W, H(, D): the order of the grid's coordinates
    sampler = _Sampler(input, tuple(grid.shape[1:-1]))
    if mode == "bicubic":
        return _bicubic(sampler, grid, sizes, padding_mode, align_corners)
    pix = [_source_coord(grid[..., k], n, padding_mode, align_corners)
           for k, n in enumerate(sizes)]
    if mode == "nearest":
        # round's gradient is zero: the grid gets a zero gradient, as torch gives, not None
        nearest = [F.round(p) for p in pix]
        one = F.add(F.sub(nearest[0], nearest[0].detach()), 1.0)
        return F.mul(sampler.at([r.detach() for r in nearest]), F.unsqueeze(one, 1))
    lows = [F.floor(p.detach()) for p in pix]
    out = None
    for corner in itertools.product((0, 1), repeat=len(sizes)):
        coords, weight = [], None
        for p, low, high in zip(pix, lows, corner):
            # the weight of a corner is its distance to the opposite one, along each axis
            coords.append(F.add(low, 1.0) if high else low)
            w = F.sub(p, low) if high else F.sub(F.add(low, 1.0), p)
            weight = w if weight is None else F.mul(weight, w)
        term = F.mul(sampler.at(coords), F.unsqueeze(weight, 1))
        out = term if out is None else F.add(out, term)
    return out


class _Sampler:
    """Values of an (N, C, *spatial) input at integer pixel coordinates (float tensors of
    the grid's shape, x first), 0 outside the input: one gather over the flattened spatial
    dimensions."""

    def __init__(self, input: Tensor, out_shape: tuple[int, ...]) -> None:  # noqa: A002
        self.n, self.c = input.shape[:2]
        self.sizes = list(reversed(input.shape[2:]))
        self.flat = F.reshape(input, (self.n, self.c, -1))
        self.out_shape = out_shape

    def at(self, coords: Sequence[Tensor]) -> Tensor:
        from .tensor_ops import gather

        inside, pos, stride = None, None, 1
        for x, size in zip(coords, self.sizes):
            ok = F.logical_and(F.ge(x, 0), F.le(x, size - 1))
            inside = ok if inside is None else F.logical_and(inside, ok)
            # the flat position in int64: in a float16 grid's dtype it rounds (to the flat
            # size itself, out of bounds, for a 21 x 22 x 23 x 24 input)
            term = F.mul(F.cast(F.clamp(x, 0, size - 1), D.int64), stride)
            pos = term if pos is None else F.add(pos, term)
            stride *= size
        points = pos.numel() // self.n
        index = F.expand(F.reshape(pos, (self.n, 1, points)), self.n, self.c, points)
        values = F.reshape(gather(self.flat, 2, index), (self.n, self.c, *self.out_shape))
        return F.where(F.unsqueeze(inside, 1), values, 0.0)


def _cubic_weights(t: Tensor) -> list[Tensor]:
    """PyTorch's get_cubic_upsample_coefficients (A = -0.75) of the fractional parts ``t``:
    the weights of the neighbours at -1, 0, +1 and +2."""
    a = _CUBIC_A

    def near(d: Tensor) -> Tensor:  # |d| <= 1
        return F.add(F.mul(F.mul(F.sub(F.mul(d, a + 2), a + 3), d), d), 1.0)

    def far(d: Tensor) -> Tensor:  # 1 < |d| < 2
        return F.sub(F.mul(F.add(F.mul(F.sub(F.mul(d, a), 5 * a), d), 8 * a), d), 4 * a)

    rest = F.add(F.neg(t), 1.0)
    return [far(F.add(t, 1.0)), near(t), near(rest), far(F.add(rest, 1.0))]


def _bicubic(sampler: _Sampler, grid: Tensor, sizes: list[int], padding_mode: str,
             align_corners: bool) -> Tensor:
    """Bicubic grid sampling as PyTorch's: the 4 x 4 neighbours of each unnormalized (not
    padded) coordinate, each neighbour's integer coordinate padded on its own."""
    pix = [_unnormalize(grid[..., k], n, align_corners) for k, n in enumerate(sizes)]
    bases = [F.floor(p.detach()) for p in pix]
    weights = [_cubic_weights(F.sub(p, b)) for p, b in zip(pix, bases)]
    taps = [[_pad_coord(F.add(b, float(k - 1)), n, padding_mode, align_corners)
             for k in range(4)] for b, n in zip(bases, sizes)]
    out = None
    for i, j in itertools.product(range(4), repeat=2):
        weight = F.mul(weights[0][i], weights[1][j])
        term = F.mul(sampler.at([taps[0][i], taps[1][j]]), F.unsqueeze(weight, 1))
        out = term if out is None else F.add(out, term)
    return out
