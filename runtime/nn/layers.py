"""Shape and misc layers over existing functionals: pixel (un)shuffle, the padding modules
(over ``F.pad``), ``Unfold``/``Fold``, the upsampling aliases, ``Softmax2d``, ``Bilinear`` and
``AlphaDropout``."""

from __future__ import annotations

import math
from typing import Any

import runtime as rt
from runtime.nn import _layers_fn as L
from runtime.nn import init
from runtime.nn.module import Module
from runtime.nn.parameter import Parameter
from runtime.nn.pooling import Upsample
from runtime.ops import conv as C
from runtime.ops.composite import check_dropout_p, softmax
from runtime.tensor import Tensor


class PixelShuffle(Module):
    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return L.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class ChannelShuffle(Module):
    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return L.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"


class PixelUnshuffle(Module):
    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return L.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


# ---------------------------------------------------------------------------- padding


def _amounts(padding: Any, n: int) -> tuple[int, ...]:
    """An int pads every side; a tuple gives (left, right[, top, bottom]) as ``F.pad``."""
    if isinstance(padding, int):
        return (padding,) * (2 * n)
    return tuple(padding)


class _PadNd(Module):
    _dims = 1
    _mode = "constant"

    def __init__(self, padding: Any) -> None:
        super().__init__()
        self.padding = _amounts(padding, self._dims)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        if self._mode == "circular" and input.dim() not in (self._dims + 1, self._dims + 2):
            # torch's _CircularPadNd checks the rank first (its _check_input_dim)
            raise ValueError(f"expected {self._dims + 1}D or {self._dims + 2}D input (got "
                             f"{input.dim()}D input)")
        return C.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding: Any, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return C.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    _dims = 1


class ConstantPad2d(_ConstantPadNd):
    _dims = 2


class ConstantPad3d(_ConstantPadNd):
    _dims = 3


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad1d(_ZeroPadNd):
    _dims = 1


class ZeroPad2d(_ZeroPadNd):
    _dims = 2


class ZeroPad3d(_ZeroPadNd):
    _dims = 3


class ReflectionPad1d(_PadNd):
    _dims, _mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    _dims, _mode = 2, "reflect"


class ReflectionPad3d(_PadNd):
    _dims, _mode = 3, "reflect"


class ReplicationPad1d(_PadNd):
    _dims, _mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    _dims, _mode = 2, "replicate"


class ReplicationPad3d(_PadNd):
    _dims, _mode = 3, "replicate"


class CircularPad1d(_PadNd):
    _dims, _mode = 1, "circular"


class CircularPad2d(_PadNd):
    _dims, _mode = 2, "circular"


class CircularPad3d(_PadNd):
    _dims, _mode = 3, "circular"


# ------------------------------------------------------------------- windows, resizing


class Unfold(Module):
    def __init__(self, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
                 stride: Any = 1) -> None:
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return C.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Fold(Module):
    def __init__(self, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
                 stride: Any = 1) -> None:
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return C.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")


class UpsamplingNearest2d(Upsample):
    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear with ``align_corners=True``, as PyTorch's (unlike ``Upsample``'s default)."""

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class Softmax2d(Module):
    """Softmax over the channels of (N, C, H, W) or (C, H, W)."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D "
                             "instead")
        return softmax(input, -3)


# -------------------------------------------------------------------- bilinear, dropout


class Bilinear(Module):
    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        self.weight = Parameter(rt.empty((out_features, in1_features, in2_features),
                                         device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(rt.empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.in1_features <= 0:
            raise ValueError(f"in1_features must be > 0, but got (in1_features="
                             f"{self.in1_features})")
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return L.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class AlphaDropout(Module):
    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        check_dropout_p(p)
        self.p, self.inplace = p, inplace

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        # PyTorch's forward passes no inplace: the module never writes its input, whatever
        # its inplace flag (which only its repr shows)
        return L.alpha_dropout(input, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class FeatureAlphaDropout(AlphaDropout):
    """Alpha dropout of whole channels."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return L.feature_alpha_dropout(input, self.p, self.training)  # never in place
