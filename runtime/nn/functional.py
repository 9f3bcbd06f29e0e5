"""`runtime.nn.functional`: the composites of `runtime.ops.composite`, under torch's names."""

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
    relu,
    rms_norm,
    sigmoid,
    silu,
    softmax,
    softplus,
    tanh,
)
from runtime.ops.embedding import embedding

__all__ = [
    "cross_entropy",
    "embedding",
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
]
