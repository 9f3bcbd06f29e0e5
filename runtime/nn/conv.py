"""`Conv1d`, `Conv2d`, `Conv3d`, `ConvTranspose1d`, `ConvTranspose2d` and `ConvTranspose3d`
(PyTorch's arguments and default init), and their lazy forms (`LazyConv1d/2d/3d`,
`LazyConvTranspose1d/2d/3d`)."""

from __future__ import annotations

import math
from typing import Any

import runtime as rt
from runtime.nn import init
from runtime.nn.lazy import LazyModuleMixin
from runtime.nn.module import Module
from runtime.nn.parameter import Parameter, UninitializedParameter
from runtime.ops import conv as C
from runtime.tensor import Tensor


class _ConvNd(Module):
    _dims = 2
    _transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        n = self._dims
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        # torch names sets in its texts: their order is this process's string hashing
        valid_padding_strings = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid_padding_strings:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 f"{valid_padding_strings}")
            if padding == "same" and any(s != 1 for s in C._pair(stride, "stride", n)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        valid_padding_modes = {"zeros", "reflect", "replicate", "circular"}
        if padding_mode not in valid_padding_modes:
            raise ValueError(f"padding_mode must be one of {valid_padding_modes}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = C._pair(kernel_size, "kernel_size", n)
        self.stride = C._pair(stride, "stride", n)
        self.padding = padding if isinstance(padding, str) else C._pair(padding, "padding", n)
        self.dilation = C._pair(dilation, "dilation", n)
        self.groups, self.padding_mode = groups, padding_mode
        self.transposed = self._transposed
        self.output_padding = (0,) * n
        self._reversed_padding_repeated_twice = self._pad_amounts()
        # a transposed convolution's weight is the one of the convolution it inverts
        shape = ((in_channels, out_channels // groups) if self.transposed
                 else (out_channels, in_channels // groups))
        self.weight = Parameter(rt.empty((*shape, *self.kernel_size), device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(rt.empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1] * math.prod(self.kernel_size)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def _pad_amounts(self) -> list[int]:
        """F.pad's amounts (last dimension first) of the padding: 'same' puts the odd extra
        on the right, as PyTorch."""
        if self.padding == "valid":
            sides = [(0, 0)] * self._dims
        elif self.padding == "same":
            totals = [d * (k - 1) for d, k in zip(self.dilation, self.kernel_size)]
            sides = [(t // 2, t - t // 2) for t in totals]
        else:
            sides = [(p, p) for p in self.padding]
        return [a for side in reversed(sides) for a in side]

    def _padded(self, input: Tensor) -> tuple[Tensor, Any]:  # noqa: A002
        """A non-zeros padding mode pads first (F.pad), then convolves unpadded."""
        if self.padding_mode == "zeros":
            return input, self.padding
        return C.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode), 0

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * self._dims:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self._dims:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * self._dims:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv2d(_ConvNd):
    _dims = 2

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        x, padding = self._padded(input)
        return C.conv2d(x, self.weight, self.bias, self.stride, padding, self.dilation,
                        self.groups)


class Conv1d(_ConvNd):
    _dims = 1

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        x, padding = self._padded(input)
        return C.conv1d(x, self.weight, self.bias, self.stride, padding, self.dilation,
                        self.groups)


class Conv3d(_ConvNd):
    _dims = 3

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        x, padding = self._padded(input)
        return C.conv3d(x, self.weight, self.bias, self.stride, padding, self.dilation,
                        self.groups)


class _ConvTransposeNd(_ConvNd):
    _transposed = True

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, output_padding: Any = 0, groups: int = 1, bias: bool = True,
                 dilation: Any = 1, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f"{type(self).__name__}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype)
        self.output_padding = C._pair(output_padding, "output_padding", self._dims)

    def _output_padding(self, input: Tensor, output_size: Any) -> tuple[int, ...]:  # noqa: A002
        """PyTorch's rule: an ``output_size`` (spatial, or with N and C in front) picks the
        output padding that reaches it, among the sizes the stride leaves ambiguous."""
        if output_size is None:
            return self.output_padding
        n = self._dims
        if len(output_size) == input.ndim:
            output_size = output_size[-n:]
        size = [int(v) for v in output_size]
        if len(size) != n:
            raise ValueError(f"ConvTranspose{n}D: for {input.ndim}D input, output_size must "
                             f"have {n} or {n + 2} elements (got {len(size)})")
        spatial = input.shape[-n:]
        lo = [(spatial[i] - 1) * self.stride[i] - 2 * self.padding[i]
              + self.dilation[i] * (self.kernel_size[i] - 1) + 1 for i in range(n)]
        hi = [lo[i] + self.stride[i] - 1 for i in range(n)]
        if any(not lo[i] <= size[i] <= hi[i] for i in range(n)):
            raise ValueError(f"requested an output size of {output_size}, but valid sizes "
                             f"range from {lo} to {hi} (for an input of "
                             f"torch.Size({list(spatial)}))")
        return tuple(size[i] - lo[i] for i in range(n))


class ConvTranspose2d(_ConvTransposeNd):
    _dims = 2

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:  # noqa: A002
        return C.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size), self.groups,
                                  self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    _dims = 1

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:  # noqa: A002
        return C.conv_transpose1d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size), self.groups,
                                  self.dilation)


class ConvTranspose3d(_ConvTransposeNd):
    _dims = 3

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:  # noqa: A002
        return C.conv_transpose3d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size), self.groups,
                                  self.dilation)


class _LazyConvNd(LazyModuleMixin):
    """A convolution whose in_channels is its first input's channel dimension."""

    def __init__(self, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False,
                         padding_mode, device, dtype)
        self._lazy_parameters(out_channels, bias, device, dtype)

    def _lazy_parameters(self, out_channels: int, bias: bool, device: Any, dtype: Any) -> None:
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()  # type: ignore[misc]

    def initialize_parameters(self, input: Tensor, *args: Any, **kwargs: Any) -> None:  # noqa: A002
        if not self.has_uninitialized_params():
            return
        batched = self._dims + 2  # type: ignore[attr-defined]
        if input.dim() not in (batched - 1, batched):
            raise RuntimeError(f"Expected {batched - 1}D (unbatched) or {batched}D (batched) "
                               f"input to {type(self).__name__}, but got input of size: "
                               f"{input.shape}")
        self.in_channels = input.shape[1] if input.dim() == batched else input.shape[0]
        if self.in_channels % self.groups != 0:  # type: ignore[attr-defined]
            raise ValueError("in_channels must be divisible by groups")
        outer, inner = self.out_channels, self.in_channels  # type: ignore[has-type]
        if self._transposed:  # type: ignore[attr-defined]
            outer, inner = inner, outer
        with rt.no_grad():
            self.weight.materialize((outer, inner // self.groups,  # type: ignore[attr-defined]
                                     *self.kernel_size))  # type: ignore[attr-defined]
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()


class LazyConv1d(_LazyConvNd, Conv1d):
    cls_to_become = Conv1d


class LazyConv2d(_LazyConvNd, Conv2d):
    cls_to_become = Conv2d


class LazyConv3d(_LazyConvNd, Conv3d):
    cls_to_become = Conv3d


class _LazyConvTransposeNd(_LazyConvNd):
    """A transposed convolution whose in_channels is its first input's channel dimension."""

    def __init__(self, out_channels: int, kernel_size: Any, stride: Any = 1,  # noqa: PLR0913
                 padding: Any = 0, output_padding: Any = 0, groups: int = 1, bias: bool = True,
                 dilation: Any = 1, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        LazyModuleMixin.__init__(self, 0, 0, kernel_size, stride, padding, output_padding,
                                 groups, False, dilation, padding_mode, device, dtype)
        self._lazy_parameters(out_channels, bias, device, dtype)


class LazyConvTranspose1d(_LazyConvTransposeNd, ConvTranspose1d):
    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyConvTransposeNd, ConvTranspose2d):
    cls_to_become = ConvTranspose2d


class LazyConvTranspose3d(_LazyConvTransposeNd, ConvTranspose3d):
    cls_to_become = ConvTranspose3d
