"""Eager tensors over numpy (CPU) and CuPy (GPU) with an autograd engine after PyTorch's."""

from . import autograd
from ._dtype import DType, bool_, float32, float64, int64
from ._threads import get_num_threads, set_num_threads
from .autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .creation import (
    Generator,
    arange,
    empty,
    from_numpy,
    full,
    full_like,
    manual_seed,
    ones,
    ones_like,
    rand,
    randint,
    randn,
    tensor,
    zeros,
    zeros_like,
)
from .ops.composite import sigmoid, relu
from .ops.functional import (
    abs,
    amax,
    cat,
    clamp,
    cos,
    erf,
    exp,
    log,
    matmul,
    max,
    maximum,
    mean,
    min,
    minimum,
    sin,
    sqrt,
    stack,
    sum,
    tanh,
    where,
)
from .tensor import Tensor

bool = bool_  # noqa: A001 - PyTorch's name: rt.bool
float = float32  # noqa: A001
double = float64
long = int64

from . import nn, optim  # noqa: E402
from . import distributed  # noqa: E402  (loads no MPI until init_process_group)

__all__ = [
    "DType", "Generator", "Tensor", "abs", "amax", "arange", "autograd", "bool", "bool_", "cat",
    "clamp", "cos", "double", "empty", "enable_grad", "erf", "exp", "float", "float32",
    "float64", "from_numpy", "full", "full_like", "get_num_threads", "int64", "is_grad_enabled",
    "log", "long",
    "distributed",
    "manual_seed", "matmul", "max", "maximum", "mean", "min", "minimum", "nn", "no_grad", "ones",
    "ones_like", "optim", "rand", "randint", "randn", "relu", "set_grad_enabled",
    "set_num_threads", "sigmoid",
    "sin", "sqrt", "stack", "sum", "tanh", "tensor", "where", "zeros", "zeros_like",
]

from . import safetensors, utils  # noqa: E402
from .serialization import load, save  # noqa: E402

__all__ += ["load", "safetensors", "save", "utils"]
