"""`runtime.nn.utils`: gradient clipping, parameter vectors and variable-length sequences
(`rnn`), as in `torch.nn.utils`."""

from runtime.nn.utils import rnn
from runtime.nn.utils.clip_grad import (
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from runtime.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = ["clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm",
           "parameters_to_vector", "rnn", "vector_to_parameters"]
