"""`runtime.nn`: modules, parameters and layers in the shape of `torch.nn`."""

from runtime.nn import functional, init
from runtime.nn import utils
from runtime.nn.activation import GELU, LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from runtime.nn.container import Sequential
from runtime.nn.dropout import Dropout
from runtime.nn.linear import Identity, Linear
from runtime.nn.loss import CrossEntropyLoss, MSELoss
from runtime.nn.module import Module
from runtime.nn.normalization import LayerNorm
from runtime.nn.parameter import Parameter

__all__ = [
    "GELU",
    "CrossEntropyLoss",
    "Dropout",
    "Identity",
    "LayerNorm",
    "Linear",
    "LogSoftmax",
    "MSELoss",
    "Module",
    "Parameter",
    "ReLU",
    "Sequential",
    "Sigmoid",
    "Softmax",
    "Tanh",
    "functional",
    "init",
    "utils",
]
