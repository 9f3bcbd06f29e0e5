"""``nn.grad``: the gradients of a convolution w.r.t. its input and its weight, given the
gradient of its output (PyTorch's ``torch.nn.grad``). A convolution is linear in each, so one
backward of the convolution at any point gives them exactly."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import runtime as rt
from runtime.tensor import Tensor


def _grad_wrt(dims: int, which: str, input: Tensor, weight: Tensor,  # noqa: A002
              grad_output: Tensor, stride: Any, padding: Any, dilation: Any,
              groups: int) -> Tensor:
    conv = getattr(rt.nn.functional, f"conv{dims}d")
    with rt.enable_grad():
        x = input.detach().requires_grad_(which == "input")
        w = weight.detach().requires_grad_(which == "weight")
        out = conv(x, w, None, stride, padding, dilation, groups)
        if tuple(out.shape) != tuple(grad_output.shape):
            raise RuntimeError(f"Expected grad_output of shape {list(out.shape)}, got "
                               f"{list(grad_output.shape)}")
        (grad,) = rt.autograd.grad(out, x if which == "input" else w, grad_output)
    return grad


def _input_fn(dims: int) -> Any:
    def conv_input(input_size: Sequence[int], weight: Tensor, grad_output: Tensor,
                   stride: Any = 1, padding: Any = 0, dilation: Any = 1,
                   groups: int = 1) -> Tensor:
        """The gradient of a convolution w.r.t. an input of ``input_size``."""
        zero = rt.zeros(tuple(input_size), dtype=grad_output.dtype, device=grad_output.device)
        return _grad_wrt(dims, "input", zero, weight, grad_output, stride, padding, dilation,
                         groups)

    conv_input.__name__ = conv_input.__qualname__ = f"conv{dims}d_input"
    return conv_input


def _weight_fn(dims: int) -> Any:
    def conv_weight(input: Tensor, weight_size: Sequence[int],  # noqa: A002
                    grad_output: Tensor, stride: Any = 1, padding: Any = 0,
                    dilation: Any = 1, groups: int = 1) -> Tensor:
        """The gradient of a convolution w.r.t. a weight of ``weight_size``."""
        zero = rt.zeros(tuple(weight_size), dtype=grad_output.dtype, device=grad_output.device)
        return _grad_wrt(dims, "weight", input, zero, grad_output, stride, padding, dilation,
                         groups)

    conv_weight.__name__ = conv_weight.__qualname__ = f"conv{dims}d_weight"
    return conv_weight


conv1d_input, conv2d_input, conv3d_input = (_input_fn(d) for d in (1, 2, 3))
conv1d_weight, conv2d_weight, conv3d_weight = (_weight_fn(d) for d in (1, 2, 3))

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input",
           "conv3d_weight"]
