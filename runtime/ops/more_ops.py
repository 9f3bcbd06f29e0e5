"""More of PyTorch's tensor API that training code reaches for, each a composition of the
registry's primitives (so its backward is theirs, and a compiled step captures it): hypot,
hstack/vstack/dstack/column_stack, meshgrid, trace, diagonal, mv, broadcast_tensors, diff,
rot90, tensordot, empty_like, reshape_as, the in-place random fills (uniform_, normal_,
bernoulli_, exponential_), the dtype conversions int()/type(), and
finfo/iinfo/get_default_dtype."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import _dtype as D
from .. import _torch_rng, creation
from .._device import move_array
from ..amp.policy import autocast_exclude, autocast_fp32
from ..tensor import Tensor
from ..tracing import active_tracer
from . import functional as F
from . import prims as P
from .dispatch import apply, named_backward
from .extra_ops import diag, logical_or, logical_xor
from .math_ops import takes_out
from .naming import renamed_backward
from .products import einsum
from .settings import is_warn_always_enabled
from .shapes import broadcast_shapes
from .tensor_ops import _dim, flip, sized_dim
from .layouts import factory_options as _factory_options


@takes_out("hypot")
@F.binary_in_float32
def hypot(input: Tensor, other: Any) -> Tensor:
    """sqrt(a**2 + b**2) elementwise, as big * sqrt((a / big)**2 + (b / big)**2) so no
    square overflows (float32's 1e20 squared is inf); inf where either is, NaN beside it
    included, as C's hypot. Floats only, as PyTorch's."""
    tensors = [t for t in (input, other) if isinstance(t, Tensor)]
    dt = D.result_dtype([t.dtype for t in tensors],
                        [v for v in (input, other) if not isinstance(v, Tensor)],
                        [t.ndim for t in tensors])
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"hypot_cpu\" not implemented for "
                                  f"'{D.scalar_type_name(dt)}'")
    if not isinstance(other, Tensor):
        other = creation.full_like(input, other, dtype=dt)
    # in the result's float dtype (a bool or uint8 operand's negation below is not its own)
    input, other = (t if t.dtype is dt else F.cast(t, dt) for t in (input, other))
    from .math_ops import _safe, _with_edges
    from .tensor_ops import isfinite

    ad, bd = input.detach(), other.detach()
    # PyTorch's gradient a / hypot, b / hypot: NaN at (0, 0), 0 beside an inf; the scaled
    # formula below is differentiated elsewhere only
    regular = F.logical_and(logical_or(F.ne(ad, 0), F.ne(bd, 0)),
                            F.logical_and(isfinite(ad), isfinite(bd)))
    sa, sb = _safe(input, regular, 1.0), _safe(other, regular, 1.0)
    # scaled by the larger magnitude, held constant (exact, and its gradient a / hypot keeps
    # a's sign: -0 at a = -0, where abs's would be +0)
    scale = F.maximum(F.abs(sa), F.abs(sb)).detach()
    ra, rb = F.div(sa, scale), F.div(sb, scale)
    h = F.mul(F.sqrt(F.add(F.mul(ra, ra), F.mul(rb, rb))), scale)
    # max(NaN, inf) is NaN: each side asked
    infinite = logical_or(F.eq(F.abs(ad), math.inf), F.eq(F.abs(bd), math.inf))
    edge = F.where(infinite, math.inf, F.where(F.logical_and(F.eq(ad, 0), F.eq(bd, 0)), 0.0,
                                               math.nan))
    value = F.where(regular, h, F.cast(edge, h.dtype) if edge.dtype is not h.dtype else edge)
    return _with_edges(value, (input, other), regular, (F.div(ad, edge), F.div(bd, edge)),
                       "HypotBackward0")


def _at_least(x: Tensor, ndim: int) -> Tensor:
    if ndim >= 2 and x.ndim == 1:
        x = x.reshape(1, -1)
    while x.ndim < ndim:
        x = x.reshape(*x.shape, 1) if x.ndim == 2 and ndim == 3 else x.reshape(1, *x.shape)
    return x


def _check_sequence(fn: str, tensors: Sequence[Tensor], caller: str | None = None
                    ) -> list[Tensor]:
    """The tensors of ``fn`` (called as ``caller``: row_stack is vstack's) as PyTorch's
    argument parser and kernel check them: a tensor is refused as its tuple, none at all."""
    if isinstance(tensors, Tensor):
        raise TypeError(f"{caller or fn}(): argument 'tensors' (position 1) must be tuple of "
                        "Tensors, not Tensor")
    if not len(tensors):
        raise RuntimeError(f"{fn} expects a non-empty TensorList")
    return list(tensors)


@takes_out("hstack")
def hstack(tensors: Sequence[Tensor]) -> Tensor:
    """Concatenate along the columns (dim 1; dim 0 for 1-D tensors)."""
    ts = [_at_least(t, 1) for t in _check_sequence("hstack", tensors)]
    return F.cat(ts, 0 if ts[0].ndim == 1 else 1)


@takes_out("vstack")
def vstack(tensors: Sequence[Tensor]) -> Tensor:
    """Concatenate along the rows, 1-D tensors made rows first."""
    return F.cat([_at_least(t, 2) for t in _check_sequence("vstack", tensors)], 0)


@takes_out("dstack")
def dstack(tensors: Sequence[Tensor]) -> Tensor:
    """Concatenate along the third dimension, each tensor made at least 3-D first."""
    return F.cat([_at_least(t, 3) for t in _check_sequence("dstack", tensors)], 2)


@takes_out("column_stack")
def column_stack(tensors: Sequence[Tensor]) -> Tensor:
    """Concatenate along dim 1, 0-D and 1-D tensors made columns first."""
    ts = [t.reshape(-1, 1) if t.ndim <= 1 else t
          for t in _check_sequence("column_stack", tensors)]
    return F.cat(ts, 1)


_MESHGRID_WARNED = False


def meshgrid(*tensors: Any, indexing: str | None = None) -> tuple[Tensor, ...]:
    """Coordinate grids of 1-D tensors (``indexing="xy"`` swaps the first two axes, as
    numpy's default); without ``indexing``, "ij" and PyTorch's warning, once."""
    global _MESHGRID_WARNED
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        if not _MESHGRID_WARNED or is_warn_always_enabled():  # TORCH_WARN_ONCE's rule
            _MESHGRID_WARNED = True
            warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass "
                          "the indexing argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but "
                           f"received: {indexing}")
    if not tensors:
        raise RuntimeError("torch.meshgrid expects a non-empty TensorList")
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list "
                               f"but got: {t}")
    for a, b in zip(tensors, tensors[1:]):
        if a.dtype is not b.dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
        if a.device != b.device:
            raise RuntimeError("meshgrid expects all tensors to have the same device")
    ts = [t.reshape(-1) for t in tensors]
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t.shape[0] for t in ts)
    grids = []
    for i, t in enumerate(ts):
        view = [1] * len(ts)
        view[i] = shape[i]
        grids.append(t.reshape(*view).expand(*shape))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


@autocast_fp32
@named_backward("TraceBackward0")
def trace(input: Tensor) -> Tensor:
    """The sum of a matrix's main diagonal."""
    if input.ndim != 2:
        raise RuntimeError("trace: expected a matrix, but got tensor with dim "
                           f"{input.ndim}")
    if input.dtype is D.bool_:
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    return F.sum(diag(input))


@named_backward("DiagonalBackward0")
def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal ``offset`` (above the main one when positive) of the matrices in dims
    ``dim1`` and ``dim2``, as a last dimension after the others: a view, as PyTorch's (a
    write into it writes input)."""
    d1, d2 = _dim(input, dim1), _dim(input, dim2)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return apply(P.DIAGONAL, input, offset=int(offset), dim1=d1, dim2=d2)


@autocast_exclude
@named_backward("MvBackward0")
@takes_out("mv")
def mv(input: Tensor, vec: Tensor) -> Tensor:
    """The product of a matrix and a vector, PyTorch's checks and texts."""
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {input.ndim}, {vec.ndim}")
    return F.matmul(input, vec)


def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    """The tensors expanded to their common broadcast shape."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = broadcast_shapes(*(t.shape for t in tensors))
    return tuple(F.expand(t, shape) for t in tensors)


def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None,
         append: Tensor | None = None) -> Tensor:
    """The ``n``-th forward difference along ``dim`` (``prepend``/``append`` joined first)."""
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = _dim(input, dim)
    for other in (prepend, append):
        if other is not None:
            _check_diff_part(input, other, d)
    parts = [p for p in (prepend, input, append) if p is not None]
    out = F.cat(parts, d) if len(parts) > 1 else input
    head = (slice(None),) * d
    for _ in range(n):
        if out.shape[d] == 0:
            break
        later, earlier = out[head + (slice(1, None),)], out[head + (slice(None, -1),)]
        out = logical_xor(later, earlier) if out.dtype is D.bool_ else F.sub(later, earlier)
    return out


def _check_diff_part(input: Tensor, other: Tensor, d: int) -> None:  # noqa: A002
    """PyTorch's checks of a diff's prepend/append: input's rank, input's sizes but d's."""
    if other.ndim != input.ndim:
        raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    for i in range(input.ndim):
        if i != d and other.shape[i] != input.shape[i]:
            raise RuntimeError(f"diff expects the shape of tensor to prepend or append to match "
                               f"that of input except along the differencing dimension; "
                               f"input.size({i}) = {input.shape[i]}, but got tensor.size({i}) = "
                               f"{other.shape[i]}")


@renamed_backward("Rot90Backward0")
def rot90(input: Tensor, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
    """Rotated by 90 degrees ``k`` times in the plane of ``dims``, from the first towards
    the second."""
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    d0, d1 = _dim(input, dims[0]), _dim(input, dims[1])
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                           f"dim1 = {d1}")
    k %= 4
    if k == 1:
        return flip(input, [d1]).transpose(d0, d1)
    if k == 2:
        return flip(input, [d0, d1])
    if k == 3:
        return flip(input, [d0]).transpose(d0, d1)
    return F.clone(input)


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _tensordot_out(out: Tensor, result: Tensor) -> Tensor:
    """tensordot's (and inner's) out=: of the result's very dtype, PyTorch's text."""
    if isinstance(out, Tensor) and out.dtype is not result.dtype:
        raise RuntimeError(f"tensordot: Expected the output tensor to have dtype "
                           f"{D.scalar_type_name(result.dtype)}, but got an output tensor with "
                           f"dtype {D.scalar_type_name(out.dtype)}")
    return F.written_to(out, result, "tensordot")


def tensordot(a: Tensor, b: Tensor, dims: Any = 2, out: Tensor | None = None) -> Tensor:
    """The sum of products over ``dims``: the last ``dims`` axes of ``a`` with the first of
    ``b`` (an int), or the axes listed in a pair of sequences; ``out`` (positional too, as
    PyTorch's Python signature) takes the result."""
    if out is not None:
        return _tensordot_out(out, tensordot(a, b, dims))
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a.ndim, b.ndim):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got "
                               f"dims={dims}")
        dims_a, dims_b = list(range(-dims, 0)), list(range(dims))
    else:
        dims_a, dims_b = dims
        for name, pos, d in (("dims_self", 3, dims_a), ("dims_other", 4, dims_b)):
            if not isinstance(d, (list, tuple)):  # PyTorch's parser: a pair of int lists
                raise TypeError(f"tensordot(): argument '{name}' (position {pos}) must be "
                                f"tuple of ints, not {type(d).__name__}")
        dims_a, dims_b = list(dims_a), list(dims_b)
        if len(dims_a) != len(dims_b):
            raise RuntimeError("both dimension lists should have same length")
    if a.dtype is not b.dtype:
        raise RuntimeError("both inputs should have same dtype")
    for da, db in zip(dims_a, dims_b):
        if a.shape[sized_dim(a, da)] != b.shape[sized_dim(b, db)]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{a.shape[da]} in dim {da} and second has size "
                               f"{b.shape[db]} in dim {db}")
    dims_a = [_dim(a, d) for d in dims_a]
    dims_b = [_dim(b, d) for d in dims_b]
    sa = list(_LETTERS[:a.ndim])
    sb = list(_LETTERS[a.ndim:a.ndim + b.ndim])
    for da, db in zip(dims_a, dims_b):
        sb[db] = sa[da]
    out = [c for i, c in enumerate(sa) if i not in dims_a] + \
        [c for i, c in enumerate(sb) if i not in dims_b]
    return einsum(f"{''.join(sa)},{''.join(sb)}->{''.join(out)}", a, b)


@_factory_options(formats=True)
def empty_like(input: Tensor, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
    return creation.empty(input.shape, dtype=dtype or input.dtype, device=device or input.device,
                          requires_grad=requires_grad)


def reshape_as(x: Tensor, other: Tensor) -> Tensor:
    return x.reshape(*other.shape)


def to_int(x: Tensor) -> Tensor:
    """``Tensor.int()``: int32, the values truncated toward zero, as PyTorch's."""
    return x.to(D.int32)


_TYPE_NAMES = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
               "int64": "LongTensor", "int32": "IntTensor", "int16": "ShortTensor",
               "int8": "CharTensor", "uint8": "ByteTensor", "bool": "BoolTensor",
               "bfloat16": "BFloat16Tensor", "uint16": "UInt16Tensor",
               "uint32": "UInt32Tensor", "uint64": "UInt64Tensor"}


def type_(x: Tensor, dtype: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
    """``Tensor.type()``: the type's name without ``dtype``; with one, the tensor cast to it
    (a dtype, or a name such as ``"torch.FloatTensor"``). ``non_blocking`` changes nothing
    here (host copies are synchronous); another keyword is PyTorch's TypeError."""
    for key in kwargs:
        raise TypeError(f"type() got an unexpected keyword argument '{key}'")
    if dtype is None:
        prefix = "runtime.cuda." if x.device != "cpu" else "runtime."
        return prefix + _TYPE_NAMES[x.dtype.name]
    if isinstance(getattr(dtype, "dtype", None), D.DType) and isinstance(dtype, type):
        dtype = dtype.dtype  # a legacy type: rt.DoubleTensor
    if isinstance(dtype, str):
        by_name = {v: k for k, v in _TYPE_NAMES.items()}
        found = by_name.get(dtype.rsplit(".", 1)[-1])
        if found is None:
            raise ValueError(f"invalid type: '{dtype}'")
        dtype = found
    return x.to(D.as_dtype(dtype))


def uniform_(x: Tensor, a: float = 0.0, to: float = 1.0, *, generator: Any = None,
             **kwargs: Any) -> Tensor:
    """Fill with values drawn uniformly from [a, to) (``a`` also by PyTorch's name ``from``,
    a Python keyword: ``uniform_(**{"from": 2}, to=5)``)."""
    for key, value in kwargs.items():
        if key != "from":
            raise TypeError(f"uniform_() got an unexpected keyword argument '{key}'")
        a = value
    b = to
    if a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={a:g} > to={b:g}")
    dtype = _float(x, "uniform_")
    if active_tracer() is None:
        return _drawn_into(x, dtype, generator, lambda g: _torch_rng.uniform(
            g._rng, tuple(x.shape), dtype, float(a), float(b)))
    if (float(a), float(b)) == (0.0, 1.0):
        return x.copy_(creation.rand(x.shape, generator=generator, dtype=dtype,
                                     device=x.device))
    return x.copy_(_traced_uniform(x, dtype, float(a), float(b), generator))


def _traced_uniform(x: Tensor, dtype: D.DType, low: float, high: float, generator: Any
                    ) -> Tensor:
    """uniform_(low, high) as a plan computes it, eager's numbers (_torch_rng.uniform): the
    unit draws in float32 (float64's in float64), never rounded to a half dtype first, then
    fma(u, hi - lo, lo) with lo and hi in the dtype, rounded once, and a value rounded up to
    high made low (a capture's u * (b - a) + a rounded three times: a bfloat16 uniform_(-3,
    3) was 0.5 off eager's)."""
    math_dtype = D.float64 if dtype is D.float64 else D.float32
    lo, hi = (float(math_dtype.np.type(dtype.np.type(v))) for v in (low, high))
    u = creation.rand(x.shape, generator=generator, dtype=math_dtype, device=x.device)
    base = creation.full_like(u, lo)
    span = float(math_dtype.np.type(hi) - math_dtype.np.type(lo))
    value = F.cast(apply(P.ADD_SCALED, base, u, alpha=span), dtype)
    return F.where(F.eq(value, hi), lo, value)


def normal_(x: Tensor, mean: float = 0.0, std: float = 1.0, *, generator: Any = None
            ) -> Tensor:
    """Fill with values drawn from a normal distribution."""
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    dtype = _float(x, "normal_")
    if active_tracer() is None:
        return _drawn_into(x, dtype, generator, lambda g: _torch_rng.normal(
            g, tuple(x.shape), dtype, float(mean), float(std)))
    return x.copy_(traced_normal(tuple(x.shape), dtype, x.device, float(mean), float(std),
                                 generator))


def traced_normal(shape: tuple[int, ...], dtype: D.DType, device: Any, mean: float,
                  std: float, generator: Any) -> Tensor:
    """normal_(mean, std) as a plan computes it, eager's numbers (_torch_rng.normal): under 16
    elements float64 Box-Muller draws (randn's there) scaled by fma in float64, then rounded
    to ``dtype``; from 16, float32's and float64's vectorized fill, scaled by fma in the
    dtype. A half dtype's fill from 16 rounds inside its Box-Muller, which no plan step
    draws: that runs eagerly. (The capture's n * std + mean rounded the draw to the dtype,
    then each op: a bfloat16 normal_(0.5, 0.7) of 40 was off eager's at 20 elements.)"""
    if (mean, std) == (0.0, 1.0):
        return creation.randn(shape, generator=generator, dtype=dtype, device=device)
    wide = dtype if math.prod(shape) >= 16 else D.float64
    if wide not in (D.float32, D.float64):
        from ..tracing import GraphBreak

        raise GraphBreak(f"normal_(mean, std) of 16 or more {dtype.name} "
                         "elements inside a captured step (PyTorch's fill rounds inside its "
                         "Box-Muller transform)")
    n = creation.randn(shape, generator=generator, dtype=wide, device=device)
    scaled = apply(P.ADD_SCALED, creation.full_like(n, mean), n, alpha=std)
    return F.cast(scaled, dtype) if wide is not dtype else scaled


def bernoulli_(x: Tensor, p: Any = 0.5, *, generator: Any = None) -> Tensor:
    """Fill with 1 where a uniform draw falls below ``p`` (a number or a tensor of
    probabilities that broadcasts to ``x``), else 0."""
    if not isinstance(p, Tensor) and not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p:g}")
    if isinstance(p, Tensor) and active_tracer() is None:  # a capture cannot read p
        values = np.asarray(p.detach().cpu().numpy())
        if not np.all((values >= 0) & (values <= 1)):  # NaN fails too, as PyTorch's
            raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  "
                               "(Could this error message be improved?  If so, please report "
                               "an enhancement request to PyTorch.)")
    if not isinstance(p, Tensor):  # PyTorch's bernoulli_distribution<double>: u < p
        u = creation.bernoulli_uniforms(tuple(x.shape), generator, x.device)
        return x.copy_(F.cast(F.lt(u, float(p)), x.dtype))
    # PyTorch's uniforms are float64 where p is float64, float32 otherwise (x's dtype aside)
    dtype = D.float64 if p.dtype is D.float64 else D.float32
    u = creation.rand(x.shape, generator=generator, dtype=dtype, device=x.device)
    return x.copy_(F.cast(F.lt(u, p), x.dtype))


def exponential_(x: Tensor, lambd: float = 1.0, *, generator: Any = None) -> Tensor:
    """Fill with values drawn from an exponential distribution of rate ``lambd``."""
    if lambd <= 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd:g}")
    dtype = _float(x, "exponential_")
    if active_tracer() is None:
        return _drawn_into(x, dtype, generator, lambda g: _torch_rng.exponential(
            g._rng, tuple(x.shape), dtype, float(lambd)))
    # PyTorch's draws: a float64 uniform an element (rand64), the formula in float64
    u = creation.bernoulli_uniforms(tuple(x.shape), generator, x.device)
    return x.copy_(F.cast(F.mul(F.log1p(F.neg(u)), -1.0 / lambd), dtype))


def _drawn_into(x: Tensor, dtype: D.DType, generator: Any, draw: Any) -> Tensor:
    """``x`` filled with ``draw(generator)``: PyTorch's numbers from the generator (its device's
    default one if None), drawn on the host (runtime._torch_rng). A captured step draws
    through its plan's random steps instead."""
    g = generator or creation._device_generator(x.device)
    return x.copy_(Tensor._make(move_array(draw(g), x.device), dtype, x.device))


# the kernel PyTorch names in its refusal of an integer or bool tensor
_FILL_KERNELS = {"uniform_": "check_uniform_bounds", "normal_": "normal_kernel_cpu"}


def _float(x: Tensor, fn: str) -> D.DType:
    if not x.dtype.is_floating_point:
        name = D.scalar_type_name(x.dtype)
        if fn == "exponential_":
            raise RuntimeError(f"Exponential distribution is a continuous probability "
                               f"distribution. dtype must be a floating point but you "
                               f"specified {name}")
        raise NotImplementedError(f'"{_FILL_KERNELS[fn]}" not implemented for \'{name}\'')
    return x.dtype


def get_default_dtype() -> D.DType:
    """The dtype of a tensor made from Python floats: float32 unless set."""
    return D.default_float


def set_default_dtype(d: Any) -> None:
    """The dtype of tensors made from Python floats, of factories without ``dtype=`` and of
    float results of integers (``int_tensor / 2``, ``int_tensor * 2.5``), as PyTorch's."""
    dt = D.as_dtype(d)
    if not dt.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    D.default_float = dt


def result_type(a: Any, b: Any) -> D.DType:
    """The dtype of an elementwise op on ``a`` and ``b`` (tensors or Python scalars), PyTorch's
    promotion (a 0-d tensor and a scalar count only where of a higher category)."""
    tensors = [x for x in (a, b) if isinstance(x, Tensor)]
    return D.result_dtype([t.dtype for t in tensors],
                          [x for x in (a, b) if not isinstance(x, Tensor)],
                          [t.ndim for t in tensors])


def promote_types(type1: Any, type2: Any) -> D.DType:
    """The smallest dtype both ``type1`` and ``type2`` convert to without loss of category."""
    return D.result_dtype([D.as_dtype(type1), D.as_dtype(type2)], [])


def can_cast(from_: Any, to: Any) -> bool:
    """Whether PyTorch's casting rules allow ``from_`` into ``to`` in an op's output: not to a
    lower category (float to integer or bool, integer to bool)."""
    return D.as_dtype(from_).category <= D.as_dtype(to).category


class finfo:  # noqa: N801 - PyTorch's name
    """Machine limits of a floating point dtype, as Python floats."""

    def __init__(self, dtype: Any = None) -> None:
        dt = D.default_float if dtype is None else _info_dtype("finfo", dtype)
        if not dt.is_floating_point:
            raise TypeError("torch.finfo() requires a floating point input type. Use "
                            "torch.iinfo to handle 'torch.finfo'")  # PyTorch's text
        info = D.np_finfo(dt)
        self.dtype = dt.name
        self.bits = int(info.bits)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.tiny)
        self.resolution = 10.0 ** -int(info.precision)

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.tiny:g}, tiny={self.tiny:g}, "
                f"dtype={self.dtype})")

    def __eq__(self, other: object) -> bool:  # PyTorch's: equal where of the same dtype
        return type(other) is type(self) and other.dtype == self.dtype

    __hash__ = None  # type: ignore[assignment]  # PyTorch's finfo is unhashable


class iinfo:  # noqa: N801 - PyTorch's name
    """Machine limits of an integer dtype, as Python ints."""

    def __init__(self, dtype: Any) -> None:
        dt = _info_dtype("iinfo", dtype)
        if dt is D.bool_:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if dt.is_floating_point:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo "
                            "to handle 'torch.iinfo'")  # PyTorch's text
        info = np.iinfo(dt.np)
        self.dtype = dt.name
        self.bits = int(info.bits)
        self.max = int(info.max)
        self.min = int(info.min)

    def __repr__(self) -> str:  # PyTorch's prints the limits as floats, %g
        return f"iinfo(min={float(self.min):g}, max={float(self.max):g}, dtype={self.dtype})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.dtype == self.dtype

    __hash__ = None  # type: ignore[assignment]


def _info_dtype(fn: str, dtype: Any) -> D.DType:
    """PyTorch's parser's error for an argument that is no dtype (a name, a numpy dtype)."""
    if not isinstance(dtype, D.DType):
        raise TypeError(f"{fn}(): argument 'type' (position 1) must be torch.dtype, not "
                        f"{type(dtype).__name__}")
    return dtype


# --- trapezoidal integration ------------------------------------------------------------------


def _trapezoid_parts(name: str, y: Tensor, x: Any, dx: Any, dim: int
                     ) -> tuple[int, Tensor | float]:
    """The wrapped dim and the spacing (x's differences, viewed to y's dims, or the scalar
    dx), with PyTorch's checks and texts."""
    d = sized_dim(y, dim)
    if x is None:
        if y.dtype is D.bool_:
            raise RuntimeError(f"{name}: received a bool input for `y`, but bool is not "
                               "supported")
        step = 1.0 if dx is None else dx.item() if isinstance(dx, Tensor) else dx
        if isinstance(step, (bool, complex)):
            raise RuntimeError(f"{name}: Currently, we only support dx as a real number.")
        return d, float(step)
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'x' must be Tensor, not {type(x).__name__}")
    if y.dtype is D.bool_ or x.dtype is D.bool_:
        raise RuntimeError(f"{name}: received a bool input for `x` or `y`, but bool is not "
                           "supported")
    if x.ndim == 1:
        if x.shape[0] != y.shape[d]:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        shape = [1] * y.ndim
        shape[d] = x.shape[0]
        x = F.reshape(x, tuple(shape))
    elif x.ndim < y.ndim:
        x = F.reshape(x, (1,) * (y.ndim - x.ndim) + tuple(x.shape))
    n = x.shape[d]
    head = (slice(None),) * d
    return d, F.sub(x[head + (slice(1, n),)], x[head + (slice(0, n - 1),)])


def trapezoid(y: Tensor, x: Tensor | None = None, *, dx: Any = 1, dim: int = -1) -> Tensor:
    """The trapezoidal rule along ``dim``: sample points ``x`` (their spacing), or an even
    spacing ``dx`` (1 by default), computed as PyTorch's (sum(y) - (y_0 + y_n) / 2) dx for an
    even spacing."""
    d, step = _trapezoid_parts("trapezoid", y, x, dx, dim)
    n = y.shape[d]
    if n == 0:  # PyTorch's zeros of y's dtype, dim d left out
        from ..creation import zeros

        return zeros(tuple(s for i, s in enumerate(y.shape) if i != d), dtype=y.dtype,
                     device=y.device)
    head = (slice(None),) * d
    if isinstance(step, Tensor):
        pairs = F.add(y[head + (slice(1, n),)], y[head + (slice(0, n - 1),)])
        return F.div(F.sum(F.mul(step, pairs), d), 2.0)
    ends = F.add(y[head + (0,)], y[head + (n - 1,)])
    return F.mul(F.sub(F.sum(y, d), F.mul(ends, 0.5)), step)


def trapz(y: Tensor, x: Tensor | None = None, *, dx: Any = 1, dim: int = -1) -> Tensor:
    """PyTorch's older name of trapezoid."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y: Tensor, x: Tensor | None = None, *, dx: Any = 1,
                         dim: int = -1) -> Tensor:
    """The running trapezoidal integral along ``dim`` (one value fewer than y has)."""
    d, step = _trapezoid_parts("cumulative_trapezoid", y, x, dx, dim)
    n = y.shape[d]
    head = (slice(None),) * d
    pairs = F.add(y[head + (slice(0, max(n - 1, 0)),)], y[head + (slice(1, n),)])
    half = F.div(step, 2.0) if isinstance(step, Tensor) else step / 2.0
    return F.cumsum(F.mul(half, pairs), d)
