"""`runtime.nn.functional`: the composites of `runtime.ops.composite`, under torch's names."""

from runtime.tensor import Tensor

from runtime.ops.activations import (
    celu,
    dropout1d,
    dropout2d,
    dropout3d,
    hardshrink,
    pairwise_distance,
    pdist,
    softmin,
    softshrink,
    elu,
    glu,
    gumbel_softmax,
    hardsigmoid,
    hardswish,
    hardtanh,
    local_response_norm,
    logsigmoid,
    mish,
    prelu,
    relu6,
    rrelu,
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
from runtime.ops import activations as _activations
from runtime.ops import composite as _composite
from runtime.nn._layers_fn import (
    alpha_dropout,
    bilinear,
    channel_shuffle,
    feature_alpha_dropout,
    native_channel_shuffle,
    pixel_shuffle,
    pixel_unshuffle,
)
from runtime.ops.embedding import embedding, embedding_bag
from runtime.ops.resample import (
    affine_grid,
    grid_sample,
    interpolate,
    upsample,
    upsample_bilinear,
    upsample_nearest,
)
from runtime.ops.shapes import parses_as_int
from runtime.ops.vectors import cosine_similarity, normalize, one_hot

from runtime.ops.losses import (  # noqa: E402
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cosine_embedding_loss,
    ctc_loss,
    gaussian_nll_loss,
    hinge_embedding_loss,
    margin_ranking_loss,
    multi_margin_loss,
    multilabel_margin_loss,
    multilabel_soft_margin_loss,
    poisson_nll_loss,
    soft_margin_loss,
    triplet_margin_loss,
    triplet_margin_with_distance_loss,
    huber_loss,
    kl_div,
    l1_loss,
    linear_cross_entropy,
    nll_loss,
    smooth_l1_loss,
)
from runtime.ops.conv import (  # noqa: E402
    adaptive_avg_pool1d,
    adaptive_avg_pool3d,
    adaptive_max_pool1d,
    adaptive_max_pool1d_with_indices,
    adaptive_max_pool2d_with_indices,
    adaptive_max_pool3d,
    adaptive_max_pool3d_with_indices,
    adaptive_avg_pool2d,
    adaptive_max_pool2d,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    batch_norm,
    conv1d,
    conv2d,
    conv3d,
    conv_tbc,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    fold,
    fractional_max_pool2d,
    fractional_max_pool2d_with_indices,
    fractional_max_pool3d,
    fractional_max_pool3d_with_indices,
    instance_norm,
    lp_pool1d,
    lp_pool2d,
    lp_pool3d,
    max_pool1d,
    max_pool1d_with_indices,
    max_pool2d,
    max_pool2d_with_indices,
    max_pool3d,
    max_pool3d_with_indices,
    max_unpool1d,
    max_unpool2d,
    max_unpool3d,
    pad,
    unfold,
)



def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,  # noqa: A002
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """torch's F.group_norm: its Python checks (a group of one value is refused, as
    _verify_batch_size), then the op."""
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.dim()}")
    size = [input.shape[0] * input.shape[1] // num_groups, num_groups, *input.shape[2:]]
    values = size[0]
    for s in size[2:]:
        values *= s
    if values == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input "
                         f"size {size}")
    if not parses_as_int(num_groups):  # the op's parser (a float or a bool)
        raise TypeError(f"group_norm(): argument 'num_groups' (position 2) must be int, not "
                        f"{type(num_groups).__name__}")
    return _activations.group_norm(input, num_groups, weight, bias, eps)


def relu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """PyTorch's ``F.relu``; ``inplace`` overwrites ``input`` (and bumps its version, so a
    backward that saved it fails as PyTorch's) and returns it."""
    if inplace:
        return _composite._inplace(_composite.relu, input)
    return _composite.relu(input)


# PyTorch's in-place forms: the function with inplace=True
def relu_(input: Tensor) -> Tensor:  # noqa: A002
    return relu(input, inplace=True)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:  # noqa: A002
    return elu(input, alpha, inplace=True)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:  # noqa: A002
    return celu(input, alpha, inplace=True)


def selu_(input: Tensor) -> Tensor:  # noqa: A002
    return selu(input, inplace=True)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:  # noqa: A002
    return leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:  # noqa: A002
    return hardtanh(input, min_val, max_val, inplace=True)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:  # noqa: A002
    return _activations.threshold(input, threshold, value, inplace=True)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,  # noqa: A002
           training: bool = False) -> Tensor:
    return rrelu(input, lower, upper, training, inplace=True)


__all__ = [
    "affine_grid",
    "grid_sample",
    "multilabel_margin_loss",
    "pdist",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d_with_indices",
    "feature_alpha_dropout",
    "lp_pool1d",
    "lp_pool2d",
    "lp_pool3d",
    "max_pool1d_with_indices",
    "max_pool2d_with_indices",
    "max_pool3d_with_indices",
    "max_unpool1d",
    "max_unpool2d",
    "max_unpool3d",
    "channel_shuffle",
    "local_response_norm",
    "triplet_margin_with_distance_loss",
    "celu_",
    "elu_",
    "hardtanh_",
    "leaky_relu_",
    "relu_",
    "rrelu",
    "rrelu_",
    "selu_",
    "threshold_",
    "upsample",
    "upsample_bilinear",
    "upsample_nearest",
    "cosine_embedding_loss",
    "ctc_loss",
    "gaussian_nll_loss",
    "hinge_embedding_loss",
    "margin_ranking_loss",
    "multi_margin_loss",
    "multilabel_soft_margin_loss",
    "poisson_nll_loss",
    "soft_margin_loss",
    "triplet_margin_loss",
    "alpha_dropout",
    "bilinear",
    "pixel_shuffle",
    "pixel_unshuffle",
    "celu",
    "elu",
    "glu",
    "group_norm",
    "gumbel_softmax",
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
    "adaptive_avg_pool1d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool3d",
    "avg_pool3d",
    "max_pool3d",
    "adaptive_avg_pool2d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "interpolate",
    "avg_pool1d",
    "avg_pool2d",
    "batch_norm",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_tbc",
    "native_channel_shuffle",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "fold",
    "fractional_max_pool2d",
    "fractional_max_pool2d_with_indices",
    "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices",
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
    "embedding_bag",
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
    "dropout3d",
    "hardshrink",
    "pairwise_distance",
    "softmin",
    "softshrink",
]

# last: runtime.nn.attention imports modules that import this one
from runtime.nn.attention import multi_head_attention_forward  # noqa: E402

__all__ += ["linear_cross_entropy", "multi_head_attention_forward"]
