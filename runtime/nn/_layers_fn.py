"""Functionals of the shape and misc layers (pixel shuffle, bilinear, alpha dropout): each a
composite of reshapes, permutes and products, so autograd and ``planner.compile`` need
nothing new."""

from __future__ import annotations

import math

from runtime import _dtype as D
from runtime.ops import functional as F
from runtime.ops.shapes import int_argument
from runtime.ops.composite import check_dropout_p
from runtime.tensor import Tensor


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:  # noqa: A002
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r): each channel group of r*r becomes an r x r
    block."""
    r = int_argument("pixel_shuffle", "upscale_factor", 2, upscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got "
                           f"input with {input.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c} "
                           f"is not divisible by {r * r}")
    b = len(lead)
    x = F.reshape(input, (*lead, c // (r * r), r, r, h, w))
    x = F.permute(x, *range(b), b, b + 3, b + 1, b + 4, b + 2)
    return F.reshape(x, (*lead, c // (r * r), h * r, w * r))


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:  # noqa: A002
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W): ``pixel_shuffle``'s inverse."""
    r = int_argument("pixel_unshuffle", "downscale_factor", 2, downscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but "
                           f"got input with {input.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if h % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by "
                           f"downscale_factor, but input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, "
                           f"but input.size(-1)={w} is not divisible by {r}")
    b = len(lead)
    x = F.reshape(input, (*lead, c, h // r, r, w // r, r))
    x = F.permute(x, *range(b), b, b + 2, b + 4, b + 1, b + 3)
    return F.reshape(x, (*lead, c * r * r, h // r, w // r))


def channel_shuffle(input: Tensor, groups: int) -> Tensor:  # noqa: A002
    """(N, C, *) with its channels read as (groups, C / groups) and transposed."""
    c = input.shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {groups} groups.")
    rest = tuple(input.shape[2:])
    x = F.reshape(input, (input.shape[0], groups, c // groups, *rest))
    return F.reshape(F.transpose(x, 1, 2), tuple(input.shape))


native_channel_shuffle = channel_shuffle  # PyTorch's kernel-level name for the same op


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor,
             bias: Tensor | None = None) -> Tensor:
    """y_o = x1 . W_o . x2 + b_o: one product of x1 against W laid out (in1, out*in2), then an
    elementwise product with x2 summed over in2 (no (…, out, in1, in2) intermediate)."""
    o, i1, i2 = weight.shape
    # PyTorch's checks, in its order: one dtype for all, then the shapes
    named = [("input1", input1), ("input2", input2), ("weight", weight)]
    if bias is not None:
        named.append(("bias", bias))
    if any(t.dtype is not input1.dtype for _, t in named):
        got = ", ".join(f"{n}: {D.type_meta_name(t.dtype)}" for n, t in named)
        raise RuntimeError(f"All tensors must have the same dtype, got {got}")
    if input1.ndim != input2.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.ndim} and "
                           f"{input2.ndim}")
    for i, (a, b) in enumerate(zip(input1.shape[:-1], input2.shape[:-1])):
        if a != b:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: "
                               f"got {a} and {b}")
    if input1.shape[-1] != i1:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got "
                           f"{input1.shape[-1]} but expected {i1}")
    if input2.shape[-1] != i2:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got "
                           f"{input2.shape[-1]} but expected {i2}")
    if bias is not None and bias.shape[0] != o:
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got "
                           f"{bias.shape[0]} but expected {o}")
    if input1.dtype is D.bool_:  # PyTorch's computes by bmm, which has no bool kernel
        raise NotImplementedError("\"bmm\" not implemented for 'Bool'")
    lead = tuple(input1.shape[:-1])
    w = F.reshape(F.permute(weight, 1, 0, 2), (i1, o * i2))
    t = F.reshape(F.matmul(F.reshape(input1, (-1, i1)), w), (-1, o, i2))
    y = F.sum(F.mul(t, F.unsqueeze(F.reshape(input2, (-1, i2)), 1)), -1)
    if bias is not None:
        y = F.add(y, bias)
    if y.dtype is not input1.dtype:  # an integer sum's int64: the inputs' dtype, as PyTorch's
        y = F.cast(y, input1.dtype)
    return F.reshape(y, (*lead, o))


_SELU_ALPHA = 1.7580993408473766  # SELU's alpha * scale: the value SELU saturates to, negated


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,  # noqa: A002
                  inplace: bool = False) -> Tensor:
    """PyTorch's ``F.alpha_dropout``: dropped elements take SELU's saturation value and an
    affine map a*x + b restores zero mean and unit variance (of a standard input)."""
    return _alpha_drop(input, p, training, inplace, tuple(input.shape))


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,  # noqa: A002
                          inplace: bool = False) -> Tensor:
    """``alpha_dropout`` of whole channels: one draw per (sample, channel)."""
    noise = (*input.shape[:2], *([1] * (input.ndim - 2)))
    return _alpha_drop(input, p, training, inplace, noise)


def _alpha_drop(input: Tensor, p: float, training: bool, inplace: bool,  # noqa: A002
                noise: tuple[int, ...]) -> Tensor:
    """Alpha dropout with one keep/drop draw for each index of the ``noise`` shape (which
    broadcasts over ``input``)."""
    check_dropout_p(p)
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if p == 1.0:  # PyTorch's input * zeros of its dtype
        out = F.mul(input, 0.0) if input.dtype.is_floating_point else F.mul(
            input, F.cast(F.mul(input, 0), input.dtype))
    else:
        from runtime.creation import bernoulli_uniforms

        # PyTorch's noise: bernoulli_(1 - p) of the input's dtype
        drawn = bernoulli_uniforms(noise, None, input.device)
        if not input.dtype.is_floating_point:  # its noise.mul_(a): a float into that dtype
            raise RuntimeError("result type Float can't be cast to the desired output type "
                               f"{D.scalar_type_name(D.int64 if input.dtype is D.bool_ else input.dtype)}")
        keep = F.cast(F.lt(drawn, 1.0 - p), input.dtype)
        a = 1.0 / math.sqrt((_SELU_ALPHA ** 2 * p + 1) * (1 - p))
        b = F.add(F.mul(F.sub(keep, 1.0), _SELU_ALPHA * a), _SELU_ALPHA * a * p)
        out = F.add(F.mul(F.mul(input, keep), a), b)
    return input.copy_(out) if inplace else out
