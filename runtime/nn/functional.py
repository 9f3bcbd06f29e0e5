"""`runtime.nn.functional`: the composites of `runtime.ops.composite`, under torch's names."""

from runtime.ops.composite import (
    cross_entropy,
    dropout,
    gelu,
    layer_norm,
    linear,
    log_softmax,
    mse_loss,
    relu,
    sigmoid,
    softmax,
    tanh,
)

__all__ = [
    "cross_entropy",
    "dropout",
    "gelu",
    "layer_norm",
    "linear",
    "log_softmax",
    "mse_loss",
    "relu",
    "sigmoid",
    "softmax",
    "tanh",
]
