"""`runtime.nn.utils`: gradient clipping, parameter vectors, variable-length sequences
(`rnn`), parametrizations (`parametrize`, `parametrizations`), pruning (`prune`) and the older hook-based
weight and spectral normalization, as in `torch.nn.utils`."""

from runtime.nn.utils import fusion, parametrizations, parametrize, prune, rnn, stateless
from runtime.nn.utils.fusion import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)
from runtime.nn.utils.init import skip_init
from runtime.nn.utils.clip_grad import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from runtime.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters
from runtime.nn.utils.spectral_norm import remove_spectral_norm, spectral_norm
from runtime.nn.utils.weight_norm import remove_weight_norm, weight_norm

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights", "fusion", "skip_init", "stateless", "clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm",
           "parameters_to_vector", "parametrizations", "parametrize", "prune", "remove_spectral_norm",
           "remove_weight_norm", "rnn", "spectral_norm", "vector_to_parameters", "weight_norm"]
