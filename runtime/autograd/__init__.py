"""Autograd: the engine, grad modes, custom Functions, gradient checks and the functional API."""

from . import functional, graph
from .anomaly import (
    detect_anomaly,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_detect_anomaly,
)
from .api import backward, grad
from .engine import Engine, GraphTask, InputBuffer, ReadyQueue, get_default_engine
from .engine import is_checkpoint_valid as _is_checkpoint_valid  # noqa: F401
from .function import Function, FunctionCtx, once_differentiable
from .grad_mode import (  # noqa: F401  (_unsafe_preserve_version_counter: PyTorch's private)
    _unsafe_preserve_version_counter,
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .node import AccumulateGrad, Edge, GraphRoot, Node
from .variable import Variable

__all__ = [
    "AccumulateGrad", "Edge", "Engine", "Function", "FunctionCtx", "GradcheckError", "GraphRoot",
    "GraphTask", "InputBuffer", "Node", "ReadyQueue", "backward", "detect_anomaly",
    "enable_grad", "functional", "get_default_engine", "graph", "grad", "gradcheck", "gradgradcheck",
    "inference_mode", "is_anomaly_check_nan_enabled", "is_anomaly_enabled", "is_grad_enabled",
    "is_inference_mode_enabled", "no_grad", "once_differentiable", "set_detect_anomaly",
    "set_grad_enabled", "Variable",
]
from . import profiler  # noqa: E402,F401  (torch.autograd.profiler: the legacy names)
