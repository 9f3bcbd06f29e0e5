"""More of torch.nn.functional's activations and group normalisation, as compositions of the
registry's primitives (so eager autograd differentiates them and a compiled step fuses them).
Each takes PyTorch's gradient at its kinks: a branch is picked by the comparison PyTorch's
backward uses, and a clamped value that must pass no gradient is detached."""

from __future__ import annotations

from typing import Any

import numpy as np

from runtime import _dtype as D
from runtime._device import move_array
from runtime.amp.policy import autocast_lower
from runtime.autograd.grad_mode import no_grad
from runtime.ops import functional as F
from runtime.ops.composite import (
    ERR_INPLACE_ELU,
    _inplace,
    _stable_sigmoid,
    check_dropout_p,
    drop,
    float_kernel,
    leaky_relu,
    linked_to_inputs,
    piecewise_linear,
    softmax,
    softplus,
)
from runtime.ops.dispatch import named_backward
from runtime.ops.naming import renamed, renamed_backward
from runtime.ops.shapes import int_argument, wrap_dim
from runtime.tensor import Tensor
from runtime.tracing import GraphBreak, active_tracer

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946
_SIXTH_FLOAT32 = float(np.float32(1.0) / np.float32(6.0))


@named_backward("EluBackward0")
@float_kernel("elu_cpu")
def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    if inplace:
        return _inplace(lambda t: elu(t, alpha), input, "EluBackward1",
                        ERR_INPLACE_ELU if alpha < 0 else None)
    return _elu(input, alpha, 1.0)


def _elu(x: Tensor, alpha: float, input_scale: float,
         grad_scale: float | None = None, from_result: bool = False) -> Tensor:
    """alpha * expm1(x * input_scale) where x <= 0, else x. PyTorch's backward picks the
    exponential branch where x <= 0 (a NaN takes the identity), its double backward where
    x < 0: at 0 the branch is alpha * input_scale * x (the same value, -0 kept, and slope).
    ``grad_scale`` (default ``input_scale``) is the input scale the backward uses: in
    exp(x * grad_scale) * grad_scale, or, ``from_result`` (an in-place op's backward, from
    its result), in (result + alpha) * grad_scale, the exponential at the forward's scale."""
    from runtime.ops.composite import straight_through

    grad_scale = input_scale if grad_scale is None else grad_scale
    negative = F.lt(x, 0)
    # x where it is < 0, else 0: the exponential never sees a large x, whose inf would make
    # a nan of the zero gradient the branch not taken passes back
    xn = F.where(negative, x, 0.0)
    u = F.mul(xn, input_scale)
    # expm1's value, differentiated as exp(u), as PyTorch's elu_backward: expm1's own
    # gradient, expm1(u) + 1, keeps none of exp(u)'s digits far below 0 (1.7e-4 off at -30,
    # 0 at -100)
    if not u.requires_grad:
        curve = F.expm1(u)
    elif grad_scale == input_scale:
        curve = straight_through(F.expm1(u), F.exp(u), "Expm1Backward0")
    elif from_result:
        curve = straight_through(F.expm1(u), F.mul(F.exp(u), grad_scale / input_scale),
                                 "Expm1Backward0")
    else:
        curve = straight_through(F.expm1(u), F.exp(F.mul(xn, grad_scale)), "Expm1Backward0")
    # (at x = 0 the value is x's zero whatever the scale: the backward's scale is its slope)
    return F.where(F.le(x, 0), F.mul(F.where(negative, curve, F.mul(x, grad_scale)), alpha), x)


@named_backward("CeluBackward0")
@float_kernel("elu_cpu")
def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    # PyTorch's celu backward scales by 1 / alpha.toFloat(): alpha rounded to float32
    grad_scale = 1.0 / float(np.float32(alpha))
    if inplace:
        return _inplace(lambda t: _elu(t, alpha, 1.0 / alpha, grad_scale, True), input,
                        "CeluBackward1", ERR_INPLACE_ELU if alpha < 0 else None)
    return _elu(input, alpha, 1.0 / alpha, grad_scale)


@named_backward("EluBackward0")
@float_kernel("elu_cpu")
def selu(input: Tensor, inplace: bool = False) -> Tensor:
    if inplace:
        return _inplace(selu, input, "EluBackward1")
    return _selu(input)


@F.half_in_float32  # PyTorch's: float16 and bfloat16 in float32, rounded once
def _selu(input: Tensor) -> Tensor:  # noqa: A002
    return F.mul(_elu(input, SELU_ALPHA, 1.0), SELU_SCALE)


@piecewise_linear("HardtanhBackward0")
def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if input.dtype is D.bool_:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    if inplace:
        return _inplace(lambda t: hardtanh(t, min_val, max_val), input)
    if input.dtype.category == 1:  # PyTorch's: integers keep their dtype, the limits truncated
        if not input.dtype.is_signed and (min_val < 0 or max_val < 0):
            raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
        min_val, max_val = int(min_val), int(max_val)
    # PyTorch's backward: 0 where x <= min or x >= max, the gradient elsewhere (NaN included)
    clamped = F.clamp(input, min_val, max_val).detach()
    return F.where(F.le(input, min_val), clamped, F.where(F.ge(input, max_val), clamped, input))


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    return hardtanh(input, 0.0, 6.0, inplace)


@float_kernel("hardsigmoid_cpu")
def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    if inplace:
        return _inplace(hardsigmoid, input)
    # PyTorch's value min(max(x + 3, 0), 6) / 6, and its backward: grad times float32's 1/6
    # (its one_sixth is 1.0f / 6.0f in every dtype) inside (-3, 3) only (0 at a NaN)
    from runtime.ops.composite import straight_through

    value = F.div(F.clamp(F.add(input.detach(), 3.0), 0.0, 6.0), 6.0)
    if not input.requires_grad:
        return value
    inside = F.logical_and(F.gt(input, -3.0), F.lt(input, 3.0))
    return straight_through(value, F.mul(F.where(inside, input, 0.0), _SIXTH_FLOAT32),
                            "HardsigmoidBackward0")


@named_backward("HardswishBackward0")
@float_kernel("hardswish_cpu")
def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    if inplace:
        return _inplace(hardswish, input)
    return _hardswish(input)


@F.half_in_float32  # PyTorch's: float16 and bfloat16 in float32, rounded once
def _hardswish(input: Tensor) -> Tensor:  # noqa: A002
    # PyTorch's backward: 0 up to -3, x / 3 + 0.5 inside (-3, 3), the gradient from 3 on and
    # at a NaN; the middle branch reads 0 outside (its gradient at inf or NaN: 0, not NaN)
    inside = F.logical_and(F.gt(input, -3.0), F.lt(input, 3.0))
    x = F.where(inside, input, 0.0)
    middle = F.div(F.mul(x, F.add(x, 3.0)), 6.0)
    outside = F.where(F.le(input, -3.0), F.mul(input, 0.0), input)
    return F.where(inside, middle, outside)


@named_backward("MishBackward0")
@float_kernel("mish_cpu")
def mish(input: Tensor, inplace: bool = False) -> Tensor:
    if inplace:
        return _inplace(mish, input)
    return _mish(input)


@F.half_in_float32  # PyTorch's: float16 and bfloat16 in float32, rounded once
def _mish(input: Tensor) -> Tensor:  # noqa: A002
    return F.mul(input, F.tanh(softplus(input)))


@named_backward("LogSigmoidBackward0")
@float_kernel("log_sigmoid_cpu")
@F.half_in_float32  # PyTorch's: float16 and bfloat16 in float32, rounded once
def logsigmoid(input: Tensor) -> Tensor:
    """PyTorch's min(x, 0) - log1p(exp(-|x|)); -|x| written with where, so the derivatives at
    0 are those of the x >= 0 branch (abs's would be 0 there)."""
    nonneg = F.ge(input, 0)
    return F.sub(F.where(nonneg, 0.0, input), F.log1p(F.exp(F.where(nonneg, F.neg(input), input))))


def softsign(input: Tensor) -> Tensor:
    return F.div(input, F.add(F.abs(input), 1.0))


def tanhshrink(input: Tensor) -> Tensor:
    return F.sub(input, F.tanh(input))


@piecewise_linear("ThresholdBackward0")
def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    if inplace:
        return _inplace(lambda t: _threshold(t, threshold, value), input, "ThresholdBackward1")
    return _threshold(input, threshold, value)


def _threshold(x: Tensor, threshold: float, value: float) -> Tensor:
    """PyTorch's ``x <= threshold ? value : x``: a NaN stays NaN, and the gradient passes
    where ``x <= threshold`` does not hold, NaN included. Integers keep their dtype (the value
    truncated), bools are PyTorch's error."""
    if x.dtype is D.bool_:
        raise NotImplementedError("\"threshold_cpu\" not implemented for 'Bool'")
    if not x.dtype.is_floating_point:
        value = D.scalar_as(int(value), x.dtype)
    return F.where(F.le(x, threshold), value, x)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """PyTorch's randomized leaky ReLU: negative inputs times a slope drawn from
    U(lower, upper) per element while training, times (lower + upper) / 2 otherwise."""
    if training and lower <= upper and input.device.type == "cpu" and input.dtype not in (
            D.float32, D.float64, D.bfloat16):
        # PyTorch's CPU kernel while training: no float16, no integer (not leaky_relu's)
        raise NotImplementedError('"rrelu_with_noise_out_cpu" not implemented for '
                                  f"'{D.scalar_type_name(input.dtype)}'")
    return _rrelu(input, lower, upper, training, inplace)


@float_kernel("leaky_relu_cpu")
@renamed_backward("RreluWithNoiseBackward0")
def _rrelu(input: Tensor, lower: float, upper: float, training: bool,  # noqa: A002
           inplace: bool) -> Tensor:
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if inplace:
        return _inplace(lambda t: rrelu(t, lower, upper, training), input,
                        "RreluWithNoiseBackward1")
    if not training:
        return leaky_relu(input, (lower + upper) / 2)
    if active_tracer() is not None:
        # PyTorch draws a slope for each element at most 0 only: how many (and so the
        # generator's state after) depends on the input's values
        raise GraphBreak("rrelu(training=True) inside a captured step draws a slope for "
                         "each element at most 0 (its count depends on the input's values)")
    with no_grad():
        slope = _rrelu_slopes(input, lower, upper)
    # x <= 0 takes its slope (its gradient there too, as PyTorch's noise)
    return F.where(F.gt(input, 0), input, F.mul(input, slope))


def _rrelu_slopes(input: Tensor, lower: float, upper: float) -> Tensor:  # noqa: A002
    """PyTorch's CPU rrelu draws: a float64 uniform on [lower, upper) (the bounds in the
    input's dtype) for each element at most 0, in order, and 1 for the rest."""
    from runtime import _torch_rng
    from runtime.creation import _device_generator

    values = np.asarray(input.detach().cpu().numpy())
    at_most_0 = values <= 0
    t = input.dtype.np.type
    lo, hi = float(t(lower)), float(t(upper))
    u = _torch_rng.unit_uniform(_device_generator(input.device)._rng, int(at_most_0.sum()),
                                D.float64)
    slopes = np.ones(values.shape, input.dtype.np)
    slopes[at_most_0] = (u * (hi - lo) + lo).astype(input.dtype.np)
    return Tensor._make(move_array(slopes, input.device), input.dtype, input.device)


@float_kernel("glu_cpu")
@renamed_backward("GluBackward0")
def glu(input: Tensor, dim: int = -1) -> Tensor:
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = wrap_dim(int_argument("glu", "dim", 2, dim), input.dim())
    if input.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size "
                           f"{input.shape[d]}")
    half = input.shape[d] // 2  # halves of an empty dim are empty too (chunk gives one)
    a = input.narrow(d, 0, half)
    b = input.narrow(d, half, half)
    return F.mul(a, _stable_sigmoid(b))


@piecewise_linear("SoftshrinkBackward0")
@float_kernel("softshrink_check")
def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x - lambd above lambd, x + lambd below -lambd, else 0."""
    top = float(D.np_finfo(input.dtype).max)
    if not 0 <= lambd <= top:  # PyTorch's range: the dtype's, its numbers as C++'s %g
        raise RuntimeError(f"lambda must be in range [0, {top:g}] for input dtype "
                           f"{D.scalar_type_name(input.dtype)}, but found {float(lambd):g}")
    # PyTorch's vectorized kernel's: 0 (not -0) on [-lambd, lambd] (its scalar tail, under 8
    # elements, gives x * 0); a NaN stays NaN and passes the gradient
    return F.where(_within(input, lambd), 0.0, F.where(F.gt(input, lambd), F.sub(input, lambd),
                                                   F.add(input, lambd)))


def _within(x: Tensor, lambd: float) -> Tensor:
    return F.logical_and(F.ge(x, -lambd), F.le(x, lambd))


@piecewise_linear("HardshrinkBackward0")
@float_kernel("hardshrink_cpu")
def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x where |x| > lambd, else 0."""
    return F.where(_within(input, lambd), 0.0, input)


def softmin(input: Tensor, dim: int | None = None, dtype: Any = None) -> Tensor:
    """softmax(-x) along ``dim``."""
    from runtime.ops.composite import softmax

    if dim is None:
        import warnings

        warnings.warn("Implicit dimension choice for softmin has been deprecated. Change the "
                      "call to include dim=X as an argument.", UserWarning, stacklevel=2)
        dim = 0 if input.dim() in (0, 1, 3) else 1  # PyTorch's legacy choice of dim
    # PyTorch negates before its softmax's dtype= cast: a uint8 input's -x wraps around
    return softmax(F.neg(input), dim, dtype=dtype)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """The p-norm of x1 - x2 + eps along the last dimension."""
    from runtime.ops.reductions import norm

    diff = F.add(F.sub(x1, x2), eps)
    return renamed(norm(diff, p, dim=-1, keepdim=keepdim), "NormBackward1")  # at::norm's


@renamed_backward("PdistBackward0")
def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    """PyTorch's ``F.pdist``: the p-norm distance of every pair of rows i < j of an (N, M)
    input, in row-major order (N * (N - 1) / 2 values)."""
    from runtime.ops.reductions import vector_norm
    from runtime.ops.structured import triu_indices

    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    # PyTorch's checks, in its order: floats only, p >= 0, then its CPU kernel (no float16 or
    # bfloat16), which runs only where there is a pair
    if not input.dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    if input.shape[0] > 1 and input.device.type == "cpu" and input.dtype in (D.float16,
                                                                             D.bfloat16):
        raise NotImplementedError(f"\"pdist\" not implemented for "
                                  f"'{D.scalar_type_name(input.dtype)}'")
    pairs = triu_indices(input.shape[0], input.shape[0], 1, device=input.device)
    diff = F.sub(input[pairs[0]], input[pairs[1]])
    if p == 0:  # PyTorch's pdist of p = 0 gives zero gradients (its norm gives none)
        from runtime.ops.reductions import count_nonzero_with_zero_gradient

        return count_nonzero_with_zero_gradient(diff, -1)
    return vector_norm(diff, p, -1)


def _channel_dropout(x: Tensor, p: float, training: bool, inplace: bool, lead: int
                     ) -> Tensor:
    """Whole channels zeroed with probability ``p`` (the rest scaled by 1/(1-p)): one draw
    for each index of the first ``lead`` dimensions."""
    noise = (*x.shape[:lead], *([1] * (x.dim() - lead)))
    return drop(x, p, training, inplace, noise,
                dtype=x.dtype if x.dtype.is_floating_point else None)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
              ) -> Tensor:
    """Channel dropout of (N, C, L) or (C, L) inputs."""
    check_dropout_p(p)
    if input.dim() not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D "
                           "input. Note that dropout1d exists to provide channel-wise dropout "
                           "on inputs with 1 spatial dimension, a channel dimension, and an "
                           "optional batch dimension (i.e. 2D or 3D inputs).")
    return _channel_dropout(input, p, training, inplace, input.dim() - 1)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
              ) -> Tensor:
    """Channel dropout of (N, C, H, W) inputs: one draw per (sample, channel), as PyTorch's
    (a 3-D input is read as (N, C, L), with PyTorch's warning)."""
    import warnings

    check_dropout_p(p)
    if input.dim() == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that "
                      "channel-wise 1D dropout behavior is desired - input is interpreted as "
                      "shape (N, C, L), where C is the channel dim. This behavior will change "
                      "in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise "
                      "dropout behavior, please switch to using dropout1d instead.",
                      stacklevel=2)
    elif input.dim() != 4:
        warnings.warn(f"dropout2d: Received a {input.dim()}-D input to dropout2d, which is "
                      "deprecated and will result in an error in a future release. To retain "
                      "the behavior and silence this warning, please use dropout instead. "
                      "Note that dropout2d exists to provide channel-wise dropout on inputs "
                      "with 2 spatial dimensions, a channel dimension, and an optional batch "
                      "dimension (i.e. 3D or 4D inputs).", stacklevel=2)
    if input.dim() < 2 and training and 0.0 < p < 1.0:  # (p 0 or 1 needs no draw: taken)
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return _channel_dropout(input, p, training, inplace, min(input.dim(), 2))


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
              ) -> Tensor:
    """Channel dropout of (N, C, D, H, W) or unbatched (C, D, H, W) inputs (another rank is
    read as unbatched, with PyTorch's warning)."""
    import warnings

    check_dropout_p(p)
    if input.dim() not in (4, 5):
        warnings.warn(f"dropout3d: Received a {input.dim()}-D input to dropout3d, which is "
                      "deprecated and will result in an error in a future release. To retain "
                      "the behavior and silence this warning, please use dropout instead. "
                      "Note that dropout3d exists to provide channel-wise dropout on inputs "
                      "with 3 spatial dimensions, a channel dimension, and an optional batch "
                      "dimension (i.e. 4D or 5D inputs).", stacklevel=2)
    return _channel_dropout(input, p, training, inplace, 2 if input.dim() == 5 else 1)


def gumbel_softmax(logits: Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """PyTorch's ``F.gumbel_softmax``: softmax((logits + g) / tau), g ~ Gumbel(0, 1); with
    ``hard``, the one-hot of its argmax in the forward and the soft sample's gradient
    (straight-through). ``eps`` is unused, as in PyTorch."""
    from runtime.creation import zeros_like
    from runtime.ops.more_ops import empty_like

    del eps
    with no_grad():
        gumbels = F.neg(F.log(empty_like(logits).exponential_()))
    y_soft = softmax(F.div(F.add(logits, gumbels), tau), dim)
    if not hard:
        return y_soft
    index = F.argmax(y_soft.detach(), dim, keepdim=True)
    y_hard = zeros_like(logits).scatter_(dim, index, 1.0)
    return F.add(F.sub(y_hard, y_soft.detach()), y_soft)


@autocast_lower
@linked_to_inputs("PreluKernelBackward0")
def prelu(input: Tensor, weight: Tensor) -> Tensor:
    if input.dtype is not weight.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got "
                           f"{D.scalar_type_name(input.dtype)} and "
                           f"{D.scalar_type_name(weight.dtype)}")
    if weight.numel() == 1:  # the result has input's shape (a 0-d one too)
        weight = weight.reshape(())
    else:
        if input.dim() < 2 or input.shape[1] != weight.numel():
            channels = input.shape[1] if input.dim() >= 2 else 1
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                               f"parameter numbers = {weight.numel()} and channel size = "
                               f"{channels}.")
        weight = weight.reshape(weight.numel(), *([1] * (input.dim() - 2)))
    return F.where(F.gt(input, 0), input, F.mul(input, weight))


@named_backward("NativeGroupNormBackward0")
def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Each sample's channels in ``num_groups`` groups, each normalised over its channels and
    positions (biased variance), then a per-channel affine."""
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.dim()}")
    n, c = input.shape[0], input.shape[1]
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.dim() != 1 or t.numel() != c):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of "
                               f"channels in input, but got {name} of shape {list(t.shape)} "
                               f"and input of shape {list(input.shape)}")
    from .conv import check_norm_dtypes

    if check_norm_dtypes(input, weight, bias):  # float32 parameters of a half input
        return F.cast(group_norm(F.cast(input, D.float32), num_groups, weight, bias, eps),
                      input.dtype)
    if not input.dtype.is_floating_point:
        raise NotImplementedError("\"GroupNormKernelImpl\" not implemented for "
                                  f"'{D.scalar_type_name(input.dtype)}'")
    g = input.reshape(n, num_groups, input.numel() // max(n * num_groups, 1))
    mean = F.mean(g, (2,), keepdim=True)
    centered = F.sub(g, mean)
    var = F.mean(F.mul(centered, centered), (2,), keepdim=True)
    y = F.div(centered, F.sqrt(F.add(var, eps))).reshape(*input.shape)
    channel = (c, *([1] * (input.dim() - 2)))
    if weight is not None:
        y = F.mul(y, weight.reshape(*channel))
    if bias is not None:
        y = F.add(y, bias.reshape(*channel))
    return y


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Tensor:
    """PyTorch's ``F.local_response_norm``: x / (k + alpha * mean of x² over ``size``
    neighbouring channels) ** beta, the window zero-padded as PyTorch's."""
    from runtime.ops.conv import avg_pool2d, avg_pool3d, pad

    if input.dim() < 3:
        gap = " " * 26  # PyTorch's text keeps a line break's indent
        raise ValueError(f"Expected 3D or higher dimensionality{gap}input (got {input.dim()} "
                         "dimensions)")
    if input.numel() == 0:
        return input
    sq = F.unsqueeze(F.mul(input, input), 1)
    if input.dim() == 3:
        div = avg_pool2d(pad(sq, (0, 0, size // 2, (size - 1) // 2)), (size, 1), stride=1)
    else:
        sq = F.reshape(sq, (input.shape[0], 1, input.shape[1], input.shape[2], -1))
        div = avg_pool3d(pad(sq, (0, 0, 0, 0, size // 2, (size - 1) // 2)), (size, 1, 1),
                         stride=1)
    div = F.reshape(F.squeeze(div, 1), tuple(input.shape))
    return F.div(input, F.pow(F.add(F.mul(div, alpha), k), beta))


__all__: list[Any] = ["pdist", "celu", "elu", "glu", "group_norm", "hardsigmoid", "hardswish", "hardtanh",
                      "logsigmoid", "mish", "prelu", "relu6", "selu", "softsign", "tanhshrink",
                      "threshold"]
