"""Eager tensors over numpy (CPU) and CuPy (GPU) with an autograd engine after PyTorch's."""

from ._malloc import MALLOC_TUNED as MALLOC_TUNED  # first: later allocations use it
from . import autograd
from ._dtype import DType, bool_, float32, float64, int8, int16, int32, int64, uint8
from ._threads import get_num_threads, set_num_threads
from .autograd import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .creation import (
    Generator,
    arange,
    empty,
    from_numpy,
    full,
    full_like,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
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
from .ops.composite import log_softmax_along as log_softmax
from .ops.composite import softmax_along as softmax
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
from . import backends, cuda, linalg
from ._device import device
from ._dtype import float16
from .creation import as_tensor, eye, linspace, multinomial, rand_like, randn_like, randperm
from .creation import randint_like
from .autograd.anomaly import is_anomaly_check_nan_enabled, is_anomaly_enabled
from .ops.extra_ops import (
    bitwise_and,
    bitwise_left_shift,
    bitwise_or,
    bitwise_right_shift,
    bitwise_xor,
    fmax,
    fmin,
)
from .ops.more_ops import can_cast, promote_types, result_type, set_default_dtype
from .ops.functional import (
    add,
    argmax,
    argmin,
    div,
    eq,
    flatten,
    ge,
    gt,
    le,
    logical_and,
    lt,
    mul,
    ne,
    neg,
    permute,
    pow,
    reshape,
    sign,
    sub,
    transpose,
    unsqueeze,
)
from .ops.functional import clamp as clip
from .ops.functional import clone
from .ops.functional import (
    addcdiv,
    addcmul,
    ceil,
    expm1,
    floor,
    frac,
    lerp,
    log1p,
    log2,
    log10,
    round,  # noqa: A004 - PyTorch's name
    tan,
    trunc,
)
from .ops.tensor_ops import allclose, equal, isclose
from ._checks import _assert_async as _assert_async
from ._checks import _check as _check
from ._checks import _check_index as _check_index
from ._checks import _check_not_implemented as _check_not_implemented
from ._checks import _check_tensor_all as _check_tensor_all
from ._checks import _check_tensor_all_with as _check_tensor_all_with
from ._checks import _check_type as _check_type
from ._checks import _check_value as _check_value
from ._checks import _check_with as _check_with
from .ops.shapes import Size
from .ops.functional import cumprod
from .ops.reductions import prod
from .ops.tensor_ops import masked_select, scatter_reduce, take_along_dim
from .ops.extra_ops import argwhere, nonzero, unique
from .ops.more_ops import broadcast_tensors, diagonal, mv
from .ops.products import addmm, bmm, einsum, mm
from .ops.reductions import all, any, logsumexp, norm, std, var
from .ops.functional import cat as concat
from .ops.functional import concatenate
from .ops.functional import div as divide
from .ops.functional import sgn, true_divide
from .ops.functional import mul as multiply
from .ops.functional import neg as negative
from .ops.functional import sub as subtract
from .ops.functional import abs as absolute
from .ops.functional import expand_view as broadcast_to  # a view of its own, as PyTorch's
from .ops.functional import squeeze_view as squeeze
from .ops.functional import t_ as t
from .ops.functional import swapaxes
from .ops.tensor_ops import (
    amin,
    clamp_max,
    clamp_min,
    dot,
    flip,
    isfinite,
    isinf,
    isnan,
    logical_not,
    movedim,
    narrow,
    outer,
    reciprocal,
    tile,
    unbind,
)
from .ops.tensor_ops import (
    argsort,
    bitwise_not,
    chunk,
    cumsum,
    floor_divide,
    gather,
    index_select,
    masked_fill,
    remainder,
    rsqrt,
    scatter,
    scatter_add,
    sort,
    split,
    square,
    topk,
    tril,
    triu,
)

from .ops.extra_ops import (
    count_nonzero,
    diag,
    index_add,
    logaddexp,
    logical_or,
    logical_xor,
    nan_to_num,
    repeat_interleave,
    roll,
    std_mean,
    unflatten,
    var_mean,
)

from .ops.functional import (
    acos,
    acosh,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    cosh,
    fmod,
    sinh,
)
from .ops.more_ops import (
    column_stack,
    diff,
    dstack,
    empty_like,
    finfo,
    get_default_dtype,
    hstack,
    hypot,
    iinfo,
    meshgrid,
    rot90,
    tensordot,
    trace,
    vstack,
)

dtype = DType  # PyTorch's name for the class of rt.float32 and the others
arctan2 = atan2
bool = bool_  # noqa: A001 - PyTorch's name: rt.bool
float = float32  # noqa: A001
double = float64
long = int64
int = int32  # noqa: A001
short = int16
half = float16

from . import nn, optim  # noqa: E402
from . import distributed  # noqa: E402  (loads no MPI until init_process_group)

__all__ = [
    "DType", "Generator", "Tensor", "abs", "amax", "arange", "autograd", "backends", "bool",
    "bool_", "cat",
    "clamp", "cos", "double", "empty", "enable_grad", "erf", "exp", "float", "float32",
    "float64", "from_numpy", "full", "full_like", "get_num_threads", "int64", "is_grad_enabled",
    "int32", "int16", "int8", "uint8", "int", "short",
    "log", "long",
    "distributed",
    "manual_seed", "matmul", "max", "maximum", "mean", "min", "minimum", "nn", "no_grad", "ones",
    "ones_like", "optim", "rand", "randint", "randint_like", "randn", "relu", "set_grad_enabled",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift",
    "can_cast", "fmax", "fmin",
    "is_anomaly_check_nan_enabled", "is_anomaly_enabled", "promote_types", "result_type",
    "set_default_dtype",
    "set_num_threads", "sigmoid",
    "sin", "sqrt", "stack", "sum", "tanh", "tensor", "where", "zeros", "zeros_like",
    "add", "addmm", "all", "any", "argmax", "argmin", "argsort", "bitwise_not", "bmm", "chunk", "clip",
    "clone", "cuda", "cumsum", "device", "div", "einsum", "eq", "eye", "flatten", "float16",
    "floor_divide", "gather", "ge", "gt", "half", "index_select", "le", "linalg", "linspace",
    "log_softmax", "logical_and", "logsumexp", "lt", "masked_fill", "mm", "mul", "ne", "neg",
    "norm", "permute", "pow", "rand_like", "randn_like", "randperm", "remainder", "reshape",
    "rsqrt", "scatter", "scatter_add", "sign", "softmax", "sort", "split", "square", "squeeze",
    "std", "sub", "topk", "transpose", "tril", "triu", "unsqueeze", "var",
    "absolute", "amin", "broadcast_to", "clamp_max", "clamp_min", "concat", "concatenate",
    "divide", "dot", "flip", "is_tensor", "isfinite", "isinf", "isnan", "logical_not", "movedim",
    "multiply", "narrow", "negative", "numel", "outer", "reciprocal", "subtract", "swapaxes", "t",
    "tile", "true_divide", "unbind", "sgn",
    "as_tensor", "inference_mode", "is_inference_mode_enabled",
    "addcdiv", "addcmul", "allclose", "ceil", "equal", "expm1", "floor", "frac", "isclose",
    "lerp", "log10", "log1p", "log2", "round", "tan", "trunc",
    "count_nonzero", "diag", "index_add", "logaddexp", "logical_or", "logical_xor", "nan_to_num",
    "repeat_interleave", "roll", "std_mean", "unflatten", "var_mean",
    "acos", "acosh", "arctan2", "asin", "asinh", "atan", "atan2", "atanh", "column_stack",
    "cosh", "diff", "dstack", "dtype", "empty_like", "finfo", "fmod", "get_default_dtype",
    "hstack", "hypot", "iinfo", "meshgrid", "rot90", "sinh", "tensordot", "trace", "vstack",
    "multinomial",
    "Size", "argwhere", "broadcast_tensors", "cumprod", "diagonal", "get_rng_state",
    "initial_seed", "is_floating_point", "masked_select", "mv", "nonzero", "prod",
    "scatter_reduce", "seed", "set_rng_state", "take_along_dim", "unique",
]


def is_tensor(obj: object) -> bool:
    return isinstance(obj, Tensor)


def _assert(condition: object, message: str) -> None:
    """``torch._assert``: Python's assert as a function (an AssertionError of ``message``
    where ``condition``, a bool or a one-element tensor, is false)."""
    if not condition:
        raise AssertionError(message)


def is_floating_point(input: Tensor) -> bool:
    return input.is_floating_point()


def numel(input: Tensor) -> int:
    return input.numel()


import builtins as _builtins  # noqa: E402  (``bool`` here is the dtype)
from typing import Any as _Any  # noqa: E402


def compile(model: _Any = None, *, fullgraph: _builtins.bool = False,  # noqa: A001 - torch's
            dynamic: _builtins.bool | None = None, backend: _Any = None, mode: str | None = None,
            options: dict[str, _Any] | None = None, name: str | None = None,
            disable: _builtins.bool = False, recompile_limit: _builtins.int | None = None,
            isolate_recompiles: _builtins.bool = False, shapes_spec: _Any = None) -> _Any:
    """``torch.compile``: ``planner.compile`` under PyTorch 2.13's signature and defaults;
    a decorator too (``@rt.compile``, ``@rt.compile(backend="eager")``). A module gives a
    ``planner.optimized_module.OptimizedModule`` (torch's wrapper: ``_orig_mod``, its
    parameters and state dict), a function a ``planner.compile.CompiledStep``.

    ``backend``: "inductor" (None: torch's default) and "cudagraphs" compile fused kernels (the
    planner's "auto"; "cudagraphs" also replays a GPU plan as a CUDA graph); "aot_eager" (and
    its "_default_partitioner" and "_decomp_partition" forms) traces the forward and backward
    and runs them unfused (the planner's "interpreter"); "eager" runs the model as written.
    Torch's other backends raise, and a name torch does not know raises torch's InvalidBackend
    text. ``mode``: None, "default" or "reduce-overhead" (a GPU plan replays as a CUDA graph,
    planner.cuda_graph, which the planner's default does too: ``$BACKPLAN_CUDA_GRAPHS``); the
    others ("max-autotune", ...) raise: they tune Inductor's kernels, which have no counterpart
    here. ``options`` (Inductor's config): None, empty or ``{"triton.cudagraphs": bool}``;
    others raise. ``dynamic``: how Python float arguments are planned (None: an input of the
    plan once a second value is seen, True: from the first call, False: a constant per value);
    tensor shapes are always specialized (a new shape captures again). ``fullgraph=True``: a
    graph break raises instead of running eagerly. ``recompile_limit`` (None: 8, as torch's) is
    per compiled model, so ``isolate_recompiles`` holds either way; ``name``: what the compiled
    step's warnings and recompile log call it; ``shapes_spec``
    is refused. ``disable=True`` returns ``model``
    unchanged (after the checks above, as torch's)."""
    from planner.torch_api import torch_compile  # runtime never imports planner eagerly

    return torch_compile(model, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                         mode=mode, options=options, name=name, disable=disable,
                         recompile_limit=recompile_limit, isolate_recompiles=isolate_recompiles,
                         shapes_spec=shapes_spec)


__all__ += ["compile"]


from . import safetensors, utils  # noqa: E402
from .serialization import load, save  # noqa: E402

__all__ += ["load", "safetensors", "save", "utils"]

from .ops.functional import transpose as swapdims  # noqa: E402
from .ops.inplace_ops import (  # noqa: E402
    index_copy, index_fill, index_put, masked_scatter, nanmean, nansum, select)
from .ops.tensor_ops import movedim as moveaxis  # noqa: E402

__all__ += ["index_copy", "index_fill", "index_put", "masked_scatter", "moveaxis", "nanmean",
            "nansum", "select", "swapdims"]

from .ops.ordering import (  # noqa: E402
    aminmax, bincount, bucketize, cummax, cummin, histc, kthvalue, logcumsumexp, median, mode,
    nanmedian, nanquantile, quantile, searchsorted)

__all__ += ["aminmax", "bincount", "bucketize", "cummax", "cummin", "histc", "kthvalue",
            "logcumsumexp", "median", "mode", "nanmedian", "nanquantile", "quantile",
            "searchsorted"]

from .ops.math_ops import (  # noqa: E402
    copysign, digamma, erfc, erfinv, exp2, float_power, heaviside, i0, lgamma, logaddexp2,
    logit, signbit, sinc, xlogy)
from . import special  # noqa: E402

__all__ += ["copysign", "digamma", "erfc", "erfinv", "exp2", "float_power", "heaviside", "i0",
            "lgamma", "logaddexp2", "logit", "signbit", "sinc", "special", "xlogy"]

from .ops.structured import (  # noqa: E402
    addbmm, addmv, addr, baddbmm, block_diag, cartesian_prod, cdist, combinations, corrcoef, cov,
    cross, diag_embed, dist, ger, kron, take, tensor_split, tril_indices, triu_indices)

__all__ += ["addbmm", "addmv", "addr", "baddbmm", "block_diag", "cartesian_prod", "cdist",
            "combinations", "corrcoef", "cov", "cross", "diag_embed", "dist", "ger", "kron",
            "take", "tensor_split", "tril_indices", "triu_indices"]

from .ops.structured import (  # noqa: E402
    det, inverse, logdet, matrix_power, pinverse, slogdet)

__all__ += ["det", "inverse", "logdet", "matrix_power", "pinverse", "slogdet"]

from ._dtype import bfloat16, uint16, uint32, uint64  # noqa: E402
from . import accelerator, amp, cpu  # noqa: E402
from .amp import autocast, get_autocast_dtype, is_autocast_enabled  # noqa: E402

__all__ += ["accelerator", "amp", "autocast", "cpu", "bfloat16", "get_autocast_dtype", "is_autocast_enabled",
            "uint16", "uint32", "uint64"]
from ._determinism import (  # noqa: E402
    are_deterministic_algorithms_enabled, is_deterministic_algorithms_warn_only_enabled,
    use_deterministic_algorithms)

__all__ += ["are_deterministic_algorithms_enabled",
            "is_deterministic_algorithms_warn_only_enabled", "use_deterministic_algorithms"]

from . import func  # noqa: E402
from .func import vmap  # noqa: E402

__all__ += ["func", "vmap"]
from .ops.zeta import polygamma  # noqa: E402
from .ops.more_ops import cumulative_trapezoid, trapezoid, trapz  # noqa: E402
from .ops.math_ops import (  # noqa: E402
    angle, deg2rad, isneginf, isposinf, isreal, positive, rad2deg)
from .ops.functional import trunc as fix  # noqa: E402
from .ops import extras as _extras  # noqa: E402

globals().update({_n: getattr(_extras, _n) for _n in _extras.__all__})

__all__ += ["angle", "cumulative_trapezoid", "deg2rad", "fix", "isneginf", "isposinf", "isreal",
            "polygamma", "positive", "rad2deg", "trapezoid", "trapz", *_extras.__all__]

from .ops import parity_names as _parity_names  # noqa: E402

__all__ += _parity_names.install(globals())  # PyTorch's names runtime lacked

from .ops import numpy_aliases as _numpy_aliases  # noqa: E402

_numpy_aliases.install_functions(globals())  # last: over every function exported above
from .ops import tensor_only as _tensor_only  # noqa: E402

_tensor_only.install_functions(globals())  # numbers refused where PyTorch takes tensors only
from .sampling import *  # noqa: E402,F401,F403
from . import distributions  # noqa: E402,F401
from . import testing  # noqa: E402,F401  (torch.testing: assert_close, make_tensor)
from . import profiler  # noqa: E402,F401  (torch.profiler: CPU time of ops and ranges)
from . import compiler, random  # noqa: E402,F401  (torch.compiler, torch.random)
from . import masked  # noqa: E402,F401  (torch.masked: masked reductions)
from . import signal  # noqa: E402,F401  (torch.signal.windows)
from .creation import default_generator  # noqa: E402,F401  (torch.default_generator)
globals().update(linalg.TORCH_FUNCTIONS)  # torch.svd, torch.lu, ...: runtime.linalg

# numbers refused where PyTorch's methods take tensors only: last, over every method (and
# in-place variant) the imports above set
_tensor_only.install_methods(Tensor)
_tensor_only.install_special(special)
from .ops import int_arguments as _int_arguments  # noqa: E402

# PyTorch's parser's error for a value that is no int (a dim of "a", 1.5 or None): last, over
# every function and method above
_int_arguments.install_functions(globals())
_int_arguments.install_methods(Tensor)
