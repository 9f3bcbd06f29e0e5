"""`runtime.nn`: modules, parameters and layers in the shape of `torch.nn`."""

from runtime.nn import functional, init
from runtime.nn.activation import GELU, LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from runtime.nn.activation import LeakyReLU, SiLU, Softplus
from runtime.nn.attention import MultiheadAttention
from runtime.nn.container import Sequential
from runtime.nn.container import ModuleDict, ModuleList, ParameterList
from runtime.nn.dropout import Dropout
from runtime.nn.linear import Identity, Linear
from runtime.nn.loss import CrossEntropyLoss, MSELoss
from runtime.nn.module import Module
from runtime.nn.normalization import LayerNorm
from runtime.nn.parameter import Parameter
from runtime.nn.rmsnorm import RMSNorm
from runtime.nn.sparse import Embedding

__all__ = [
    "Embedding",
    "LeakyReLU",
    "ModuleDict",
    "ModuleList",
    "MultiheadAttention",
    "ParameterList",
    "RMSNorm",
    "SiLU",
    "Softplus",
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
]
