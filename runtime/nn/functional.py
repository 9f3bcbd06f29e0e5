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

from runtime.ops.losses import (  # noqa: E402
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    huber_loss,
    kl_div,
    l1_loss,
    nll_loss,
    smooth_l1_loss,
)

__all__ = [
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "huber_loss",
    "kl_div",
    "l1_loss",
    "nll_loss",
    "smooth_l1_loss",
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
