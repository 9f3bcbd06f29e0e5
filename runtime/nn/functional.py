"""`runtime.nn.functional`: the composites of `runtime.ops.composite`, under torch's names."""

from runtime.tensor import Tensor

from runtime.ops.activations import (
    celu,
    dropout1d,
    dropout2d,
    hardshrink,
    pairwise_distance,
    softmin,
    softshrink,
    elu,
    glu,
    group_norm,
    hardsigmoid,
    hardswish,
    hardtanh,
    logsigmoid,
    mish,
    prelu,
    relu6,
    selu,
    softsign,
    tanhshrink,
    threshold,
)
from runtime.ops.attention import scaled_dot_product_attention
from runtime.ops.composite import (
    cross_entropy,
    dropout,
    gelu,
    layer_norm,
    leaky_relu,
    linear,
    log_softmax,
    mse_loss,
    rms_norm,
    sigmoid,
    silu,
    softmax,
    softplus,
    tanh,
)
from runtime.ops import composite as _composite
from runtime.nn._layers_fn import alpha_dropout, bilinear, pixel_shuffle, pixel_unshuffle
from runtime.ops.embedding import embedding
from runtime.ops.resample import interpolate
from runtime.ops.vectors import cosine_similarity, normalize, one_hot

from runtime.ops.losses import (  # noqa: E402
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    huber_loss,
    kl_div,
    l1_loss,
    nll_loss,
    smooth_l1_loss,
)
from runtime.ops.conv import (  # noqa: E402
    adaptive_avg_pool2d,
    adaptive_max_pool2d,
    avg_pool1d,
    avg_pool2d,
    batch_norm,
    conv1d,
    conv2d,
    conv_transpose1d,
    conv_transpose2d,
    fold,
    instance_norm,
    max_pool1d,
    max_pool2d,
    pad,
    unfold,
)



def relu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """PyTorch's ``F.relu``; ``inplace`` overwrites ``input`` (and bumps its version, so a
    backward that saved it fails as PyTorch's) and returns it."""
    if inplace:
        return _composite._inplace(_composite.relu, input)
    return _composite.relu(input)


__all__ = [
    "alpha_dropout",
    "bilinear",
    "pixel_shuffle",
    "pixel_unshuffle",
    "celu",
    "elu",
    "glu",
    "group_norm",
    "hardsigmoid",
    "hardswish",
    "hardtanh",
    "logsigmoid",
    "mish",
    "prelu",
    "relu6",
    "selu",
    "softsign",
    "tanhshrink",
    "threshold",
    "adaptive_avg_pool2d",
    "adaptive_max_pool2d",
    "interpolate",
    "avg_pool1d",
    "avg_pool2d",
    "batch_norm",
    "conv1d",
    "conv2d",
    "conv_transpose1d",
    "conv_transpose2d",
    "fold",
    "instance_norm",
    "max_pool1d",
    "max_pool2d",
    "pad",
    "unfold",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "huber_loss",
    "kl_div",
    "l1_loss",
    "nll_loss",
    "smooth_l1_loss",
    "cross_entropy",
    "embedding",
    "cosine_similarity",
    "normalize",
    "one_hot",
    "dropout",
    "gelu",
    "layer_norm",
    "leaky_relu",
    "linear",
    "log_softmax",
    "mse_loss",
    "relu",
    "rms_norm",
    "scaled_dot_product_attention",
    "sigmoid",
    "silu",
    "softmax",
    "softplus",
    "tanh",
    "dropout1d",
    "dropout2d",
    "hardshrink",
    "pairwise_distance",
    "softmin",
    "softshrink",
]
