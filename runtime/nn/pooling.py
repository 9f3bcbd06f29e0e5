"""Pooling modules, `Flatten` and `Unflatten`."""

from __future__ import annotations

from typing import Any

from runtime.nn.module import Module
from runtime.ops import conv as C
from runtime.ops import functional as F
from runtime.tensor import Tensor


class MaxPool2d(Module):
    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 dilation: Any = 1, return_indices: bool = False,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size, self.stride = kernel_size, kernel_size if stride is None else stride
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        return C.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(MaxPool2d):
    def forward(self, input: Tensor) -> Any:  # noqa: A002
        return C.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)


class AvgPool2d(Module):
    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size, self.stride = kernel_size, kernel_size if stride is None else stride
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return C.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool3d(MaxPool2d):
    def forward(self, input: Tensor) -> Any:  # noqa: A002
        return C.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)


class AvgPool3d(AvgPool2d):
    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return C.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class AvgPool1d(Module):
    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True) -> None:
        super().__init__()
        self.kernel_size = C._pair(kernel_size, "kernel_size", 1)
        self.stride = C._pair(kernel_size if stride is None else stride, "stride", 1)
        self.padding, self.ceil_mode = C._pair(padding, "padding", 1), ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return C.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool2d(Module):
    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    _pool = staticmethod(C.adaptive_avg_pool2d)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return self._pool(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool2d(Module):
    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    _pool = staticmethod(C.adaptive_max_pool2d)

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        return self._pool(input, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(AdaptiveAvgPool2d):
    _pool = staticmethod(C.adaptive_avg_pool1d)


class AdaptiveMaxPool1d(AdaptiveMaxPool2d):
    _pool = staticmethod(C.adaptive_max_pool1d)


class AdaptiveAvgPool3d(AdaptiveAvgPool2d):
    _pool = staticmethod(C.adaptive_avg_pool3d)


class AdaptiveMaxPool3d(AdaptiveMaxPool2d):
    _pool = staticmethod(C.adaptive_max_pool3d)


class _LPPoolNd(Module):
    _dims = 2

    def __init__(self, norm_type: float, kernel_size: Any, stride: Any = None,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type, self.kernel_size = norm_type, kernel_size
        self.stride, self.ceil_mode = stride, ceil_mode

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return C._lp_pool(input, float(self.norm_type), self.kernel_size, self.stride,
                          self.ceil_mode, self._dims)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    _dims = 1


class LPPool2d(_LPPoolNd):
    _dims = 2


class LPPool3d(_LPPoolNd):
    _dims = 3


class _MaxUnpoolNd(Module):
    """The partial inverse of a max pool: ``forward(input, indices, output_size=None)``."""

    _dims = 2

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0) -> None:
        super().__init__()
        n = self._dims
        self.kernel_size = C._pair(kernel_size, "kernel_size", n)
        self.stride = C._pair(kernel_size if stride is None else stride, "stride", n)
        self.padding = C._pair(padding, "padding", n)

    def forward(self, input: Tensor, indices: Tensor, output_size: Any = None  # noqa: A002
                ) -> Tensor:
        return C._max_unpool(input, indices, self.kernel_size, self.stride, self.padding,
                             output_size, self._dims)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    _dims = 1


class MaxUnpool2d(_MaxUnpoolNd):
    _dims = 2


class MaxUnpool3d(_MaxUnpoolNd):
    _dims = 3


def _ntuple(value: Any, n: int) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n


class _FractionalMaxPoolNd(Module):
    """Max pooling over pseudo-random windows (Graham's fractional max pooling), PyTorch's
    checks and buffer ``_random_samples`` (None: drawn on each call)."""

    _dims = 2

    def __init__(self, kernel_size: Any, output_size: Any = None, output_ratio: Any = None,
                 return_indices: bool = False, _random_samples: Tensor | None = None) -> None:
        super().__init__()
        n, name = self._dims, type(self).__name__
        if n == 3 and ((isinstance(kernel_size, int) and kernel_size <= 0) or (
                isinstance(kernel_size, (tuple, list)) and not all(k > 0 for k in kernel_size))):
            raise ValueError(f"kernel_size must be greater than 0, but got {kernel_size}")
        self.kernel_size = _ntuple(kernel_size, n)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _ntuple(output_size, n) if output_size is not None else None
        self.output_ratio = _ntuple(output_ratio, n) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling "
                             "ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        pool = C.fractional_max_pool2d if self._dims == 2 else C.fractional_max_pool3d
        return pool(input, self.kernel_size, self.output_size, self.output_ratio,
                    self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    _dims = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    _dims = 3


class Upsample(Module):
    """``F.interpolate`` as a layer (PyTorch's ``nn.Upsample``)."""

    def __init__(self, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                 align_corners: bool | None = None,
                 recompute_scale_factor: bool | None = None) -> None:
        super().__init__()
        from runtime.ops.resample import upsample_sizes

        self.name = type(self).__name__
        self.size, self.scale_factor = upsample_sizes(size, scale_factor)
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        from runtime.ops.resample import interpolate

        return interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                           recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        info = (f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None
                else f"size={self.size!r}")
        return info + f", mode='{self.mode}'"


class Flatten(Module):
    """Merges dims start_dim..end_dim into one."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.flatten(input, self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Splits dim into unflattened_size."""

    def __init__(self, dim: int, unflattened_size: Any) -> None:
        super().__init__()
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError(f"unflattened_size must be a tuple of ints, but found type "
                            f"{type(unflattened_size).__name__}")
        for i, size in enumerate(unflattened_size):
            if not isinstance(size, int):
                raise TypeError(f"unflattened_size must be tuple of ints, but found element of "
                                f"type {type(size).__name__} at pos {i}")
        self.dim, self.unflattened_size = dim, unflattened_size  # as given, as torch

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"

