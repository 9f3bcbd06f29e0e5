"""`runtime.nn`: modules, parameters and layers in the shape of `torch.nn`."""

from runtime.nn import functional, init
from runtime.nn import parallel
from runtime.nn.batchnorm import BatchNorm1d, BatchNorm2d
from runtime.nn.conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d
from runtime.nn import utils
from runtime.nn.activation import GELU, LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from runtime.nn.activation import LeakyReLU, SiLU, Softplus
from runtime.nn.activation import Hardshrink, Softmin, Softshrink
from runtime.nn.activation import (
    CELU,
    ELU,
    GLU,
    SELU,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LogSigmoid,
    Mish,
    PReLU,
    ReLU6,
    Softsign,
    Tanhshrink,
    Threshold,
)
from runtime.nn.attention import MultiheadAttention
from runtime.nn.container import Sequential
from runtime.nn.container import ModuleDict, ModuleList, ParameterDict, ParameterList
from runtime.nn.distance import CosineSimilarity, PairwiseDistance
from runtime.nn.dropout import Dropout, Dropout1d, Dropout2d
from runtime.nn.instancenorm import InstanceNorm1d, InstanceNorm2d
from runtime.nn.linear import Identity, Linear
from runtime.nn.loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from runtime.nn.module import Module
from runtime.nn.normalization import GroupNorm, LayerNorm
from runtime.nn.parameter import Parameter
from runtime.nn.pooling import (
    AdaptiveAvgPool2d,
    AdaptiveMaxPool2d,
    Upsample,
    AvgPool1d,
    AvgPool2d,
    Flatten,
    MaxPool1d,
    MaxPool2d,
    Unflatten,
)
from runtime.nn.rmsnorm import RMSNorm
from runtime.nn.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from runtime.nn.sparse import Embedding
from runtime.nn.transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)

__all__ = [
    "Transformer",
    "TransformerDecoder",
    "TransformerDecoderLayer",
    "TransformerEncoder",
    "TransformerEncoderLayer",
    "CELU",
    "ELU",
    "GLU",
    "SELU",
    "Hardsigmoid",
    "Hardswish",
    "Hardtanh",
    "LogSigmoid",
    "Mish",
    "PReLU",
    "ReLU6",
    "Softsign",
    "Tanhshrink",
    "Threshold",
    "GroupNorm",
    "GRU",
    "GRUCell",
    "LSTM",
    "LSTMCell",
    "RNN",
    "RNNBase",
    "RNNCell",
    "RNNCellBase",
    "AdaptiveAvgPool2d",
    "AdaptiveMaxPool2d",
    "Upsample",
    "AvgPool1d",
    "AvgPool2d",
    "BatchNorm1d",
    "BatchNorm2d",
    "Conv1d",
    "Conv2d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "CosineSimilarity",
    "Flatten",
    "MaxPool1d",
    "MaxPool2d",
    "Unflatten",
    "Embedding",
    "LeakyReLU",
    "ModuleDict",
    "ModuleList",
    "MultiheadAttention",
    "ParameterDict",
    "ParameterList",
    "RMSNorm",
    "SiLU",
    "Softplus",
    "GELU",
    "BCELoss",
    "BCEWithLogitsLoss",
    "CrossEntropyLoss",
    "HuberLoss",
    "KLDivLoss",
    "L1Loss",
    "NLLLoss",
    "SmoothL1Loss",
    "Dropout",
    "Dropout1d",
    "Dropout2d",
    "Hardshrink",
    "PairwiseDistance",
    "Softmin",
    "Softshrink",
    "Identity",
    "InstanceNorm1d",
    "InstanceNorm2d",
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
    "parallel",
    "utils",
]
