"""PyTorch functions written from the runtime's ops: its aliases (arccos, greater...), shape
helpers (atleast_*d, fliplr, hsplit...), integer arithmetic (gcd, lcm), and the like, each
with PyTorch's dtypes, checks and texts."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _dtype as D
from ..tensor import Tensor
from . import functional as F
from . import tensor_ops as T
from .dispatch import named
from .naming import renamed
from .layouts import factory_options as _factory_options

# PyTorch's other names of ops the runtime has
arccos, arccosh, arcsin, arcsinh = F.acos, F.acosh, F.asin, F.asinh
arctan, arctanh = F.atan, F.atanh
greater, greater_equal, less, less_equal, not_equal = F.gt, F.ge, F.lt, F.le, F.ne


def broadcast_shapes(*shapes: Any) -> Any:
    """The shape the given shapes broadcast to (an int is a 1-d shape, a None is skipped),
    checked as PyTorch's ``torch._refs._broadcast_shapes`` checks: a shape that is not a
    sequence, a negative size broadcast and two sizes that do not broadcast raise its
    errors and texts."""
    from collections.abc import Sequence

    from .shapes import Size

    given = tuple((s,) if isinstance(s, int) else s for s in shapes if s is not None)
    for shape in given:
        if not isinstance(shape, Sequence):
            raise RuntimeError(f"Input shapes should be of type ints, a tuple of ints, or a "
                               f"list of ints, got {shape}")
    common = [1] * max((len(s) for s in given), default=0)
    for arg, shape in enumerate(given):
        for idx in range(-1, -1 - len(shape), -1):
            size = shape[idx]
            if size == common[idx]:
                continue
            if common[idx] == 1:
                if size < 0:
                    raise ValueError("Attempting to broadcast a dimension with negative length!")
                common[idx] = size
            if size != 1 and common[idx] != size:
                raise RuntimeError(
                    f"Attempting to broadcast a dimension of length {size} at {idx}! Mismatching "
                    f"argument at index {arg} had {shape}; but expected shape should be "
                    f"broadcastable to {common}")
    return Size(common)


def _atleast(n: int, tensors: tuple[Any, ...]) -> Any:
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return tuple(_atleast(n, (t,)) for t in tensors[0])
    if len(tensors) != 1:
        return tuple(_atleast(n, (t,)) for t in tensors)
    t = tensors[0]
    if t.ndim >= n:
        return t
    if n == 3 and t.ndim == 1:  # PyTorch's (1, N, 1)
        return F.reshape(t, (1, t.shape[0], 1))
    if n == 3 and t.ndim == 2:
        return F.unsqueeze(t, -1)
    return F.reshape(t, (1,) * (n - t.ndim) + tuple(t.shape))


def atleast_1d(*tensors: Any) -> Any:
    return _atleast(1, tensors)


def atleast_2d(*tensors: Any) -> Any:
    return _atleast(2, tensors)


def atleast_3d(*tensors: Any) -> Any:
    return _atleast(3, tensors)


def fliplr(input: Tensor) -> Tensor:  # noqa: A002
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return T.flip(input, [1])


def flipud(input: Tensor) -> Tensor:  # noqa: A002
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return T.flip(input, [0])


def _split_along(name: str, input: Tensor, sections: Any, dim: int, least: int  # noqa: A002
                 ) -> tuple[Tensor, ...]:
    if input.ndim < least:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {least} dimension, but "
                           f"got a tensor with {input.ndim} dimensions!")
    if isinstance(sections, int) and input.shape[dim] % sections:
        raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the size "
                           f"of the dimension {input.shape[dim]} is not divisible by the split_size "
                           f"{sections}!")
    from .structured import tensor_split

    return tuple(tensor_split(input, sections, dim))


def hsplit(input: Tensor, sections: Any) -> tuple[Tensor, ...]:  # noqa: A002
    return _split_along("hsplit", input, sections, 1 if input.ndim > 1 else 0, 1)


def vsplit(input: Tensor, sections: Any) -> tuple[Tensor, ...]:  # noqa: A002
    return _split_along("vsplit", input, sections, 0, 2)


def dsplit(input: Tensor, sections: Any) -> tuple[Tensor, ...]:  # noqa: A002
    return _split_along("dsplit", input, sections, 2, 3)


def inner(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The sum of products over the last dims (a 0-d operand: a product)."""
    if out is not None:
        from .more_ops import _tensordot_out

        return _tensordot_out(out, inner(input, other))
    if input.ndim == 0 or other.ndim == 0:
        return F.mul(input, other)
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but "
                           f"got shapes {list(input.shape)} and {list(other.shape)}")
    from .more_ops import tensordot

    return tensordot(input, other, ([-1], [-1]))


def vdot(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The dot product of two 1-d tensors (real: as dot)."""
    if out is not None:
        return F.written_to(out, vdot(input, other), "vdot")
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D "
                           "tensors")
    return T.dot(input, other)


def msort(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """input sorted along its first dim."""
    if out is not None:
        return F.written_to(out, msort(input), "msort")
    return T.sort(input, 0).values


def ravel(input: Tensor) -> Tensor:  # noqa: A002
    """PyTorch's ``contiguous().view(-1)``: a view of a contiguous input, else a flat copy
    that is itself contiguous (a strided view of a strided input is not)."""
    from .layouts import contiguous

    return F.reshape(contiguous(input), (-1,))


def isin(elements: Any, test_elements: Any, *, assume_unique: bool = False,
         invert: bool = False) -> Tensor:
    """Whether each of ``elements`` is among ``test_elements`` (either may be a number)."""
    from ..creation import tensor

    like = elements if isinstance(elements, Tensor) else test_elements
    e = elements if isinstance(elements, Tensor) else tensor(elements, device=like.device)
    t = test_elements if isinstance(test_elements, Tensor) else tensor(test_elements,
                                                                        device=like.device)
    from .reductions import any as any_of

    hits = F.eq(F.unsqueeze(F.reshape(e, (-1,)), 1), F.unsqueeze(F.reshape(t, (-1,)), 0))
    found = F.reshape(any_of(hits, 1), tuple(e.shape))
    return T.logical_not(found) if invert else found


def _integers(name: str, a: Tensor, b: Tensor) -> None:
    dt = D.result_dtype([a.dtype, b.dtype], [], [a.ndim, b.ndim])
    if dt.category != 1:
        raise NotImplementedError(f'"{name}_cpu" not implemented for '
                                  f"'{D.scalar_type_name(dt)}'")


def _host_binary(fn: Any, a: Tensor, b: Tensor) -> Tensor:
    from ..creation import tensor

    dt = D.result_dtype([a.dtype, b.dtype], [], [a.ndim, b.ndim])
    # each operand in the result dtype first, as PyTorch's kernel reads it: a 0-d int64 -300
    # beside int8 is -44 (numpy's own promotion took it whole)
    out = fn(*(np.asarray(t.cpu().numpy()).astype(dt.np) for t in (a, b))).astype(dt.np)
    return tensor(out, device=a.device)


def gcd(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The greatest common divisor, elementwise (integers)."""
    if out is not None:
        return F.written_to(out, gcd(input, other), "gcd")
    _integers("gcd", input, other)
    return _host_binary(np.gcd, input, other)


def lcm(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The least common multiple, elementwise (integers)."""
    if out is not None:
        return F.written_to(out, lcm(input, other), "lcm")
    _integers("lcm", input, other)
    return _host_binary(np.lcm, input, other)


def ldexp(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """input * 2 ** other (in a float dtype). A float input and an integer exponent tensor
    take PyTorch's own kernel: the result in the input's dtype (float16 stays float16, where
    the float32 power promoted it), the exact product rounded once (in float64: a float64
    input's 2 ** 200 no longer overflowed float32), a bool exponent its error; otherwise
    PyTorch's input * pow(2.0, other)."""
    if out is not None:
        return F.written_to(out, ldexp(input, other), "ldexp")
    if isinstance(input, Tensor) and input.dtype.is_floating_point \
            and isinstance(other, Tensor) and not other.dtype.is_floating_point:
        if other.dtype is D.bool_:
            raise NotImplementedError("\"ldexp_cpu_exp\" not implemented for 'Bool'")
        power = F.pow(2.0, F.cast(other, D.float64))
        exact = F.mul(F.cast(input, D.float64) if input.dtype is not D.float64 else input, power)
        return renamed(F.cast(exact, input.dtype) if input.dtype is not D.float64 else exact,
                       "LdexpBackward0")
    return renamed(F.mul(input, F.pow(2.0, other)), "LdexpBackward0")


def frexp(input: Tensor, *, out: Any = None) -> Any:  # noqa: A002
    """(mantissa, exponent) with input = mantissa * 2 ** exponent, |mantissa| in [0.5, 1)."""
    from collections import namedtuple

    if out is not None:
        return F.written_to_each(out, frexp(input), "frexp")
    if not input.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    from ..creation import tensor

    mantissa, exponent = np.frexp(np.asarray(input.detach().cpu().numpy()))
    result = namedtuple("frexp", ["mantissa", "exponent"])
    if input.requires_grad:
        mantissa = _frexp_mantissa(input, exponent)
    else:
        mantissa = tensor(mantissa.astype(input.dtype.np), device=input.device)
    return result(mantissa, tensor(exponent.astype(np.int32), device=input.device))


def _frexp_mantissa(input: Tensor, exponent: np.ndarray) -> Tensor:  # noqa: A002
    """input * 2 ** -exponent, the mantissa exactly, with PyTorch's FrexpBackward0 (the
    gradient over 2 ** exponent): one factor, or two where 2 ** -exponent is beyond the
    dtype's range (a subnormal input's)."""
    from ..creation import tensor

    one = np.ones((), input.dtype.np)
    with np.errstate(over="ignore", under="ignore"):
        whole = np.ldexp(one, -exponent)
    parts = [-exponent] if np.all(np.isfinite(whole) & (whole != 0)) else [
        -(exponent // 2), exponent // 2 - exponent]
    out = input
    for part in parts:
        out = F.mul(out, tensor(np.ldexp(one, part), device=input.device))
    return renamed(out, "FrexpBackward0")


@_factory_options()
def logspace(start: Any, end: Any, steps: int, base: float = 10.0, *, dtype: Any = None,
             device: Any = None, requires_grad: bool = False, out: Tensor | None = None
             ) -> Tensor:
    """base ** linspace(start, end, steps)."""
    from ..creation import _made_into, tensor

    if out is not None:
        return _made_into(out, dtype, requires_grad, "logspace", lambda dt: logspace(
            start, end, steps, base, dtype=dt, device=out.device))
    from ..creation import check_space_args

    dt = D.as_dtype(dtype) if dtype is not None else D.default_float
    start, end, steps = check_space_args("logspace", start, end, steps, dt)
    return tensor(_logspace_values(start, end, steps, float(base), dt), dtype=dt, device=device,
                  requires_grad=requires_grad)


def _libm_pow(base: float, exps: np.ndarray) -> np.ndarray:
    """C's pow(base, e) for each e (numpy's vectorized power can differ in the last bit); a
    NaN or an overflow as C gives it."""
    out = []
    with np.errstate(all="ignore"):
        for e in exps.tolist():
            try:
                out.append(math.pow(base, e))
            except (ValueError, OverflowError):
                out.append(float(np.power(base, e)))
    return np.asarray(out, dtype=np.float64)


def _logspace_values(start: Any, end: Any, steps: int, base: float, dt: D.DType) -> np.ndarray:
    """PyTorch's CPU logspace kernel: base ** e in double, cast (integers truncated); the ends
    taken in the dtype (an integer's truncated), step = (end - start, in the dtype) /
    (steps - 1) in double, e the first half start + step * i and the rest
    end - step * (steps - 1 - i), in double; one step is base ** start."""
    if steps <= 1:
        values = _libm_pow(base, np.full(steps, float(start)))
    else:
        if dt.category == 1:
            lo, hi = (int(np.asarray(int(v)).astype(dt.np)) for v in (start, end))  # wrapped
            diff = float(hi - lo)
        else:
            lo, hi = (np.asarray(v, np.float64).astype(dt.np) for v in (start, end))
            diff = float(np.asarray(hi - lo, dt.np))
        step = diff / (steps - 1)
        i = np.arange(steps, dtype=np.float64)
        values = _libm_pow(base, np.where(i < steps // 2, float(lo) + step * i,
                                          float(hi) - step * (steps - 1 - i)))
    if dt.category == 1:
        with np.errstate(invalid="ignore"):
            values = np.trunc(values)
    return values.astype(dt.np)


def diagflat(input: Tensor, offset: int = 0) -> Tensor:  # noqa: A002
    """The flattened input on diagonal ``offset`` of a square matrix."""
    from .extra_ops import diag

    return diag(F.reshape(input, (-1,)), offset)


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:  # noqa: N803
    """The Vandermonde matrix of a 1-d x: columns x ** (N-1) ... x ** 0 (increasing: the
    other way round), in int64 for an integer or bool x."""
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    powers = range(n) if increasing else range(n - 1, -1, -1)
    # PyTorch's promotion with int64: integer and bool x give int64 powers
    base = x if x.dtype.is_floating_point else F.cast(x, D.int64)
    if not n:
        return F.reshape(base[:0], (x.shape[0], 0)) if x.shape[0] else F.reshape(base, (0, 0))
    return F.stack([F.pow(base, p) for p in powers], 1)


def unravel_index(indices: Any, shape: Any) -> tuple[Tensor, ...]:
    """The coordinates in ``shape`` of each flat index."""
    from ..creation import tensor

    t = indices if isinstance(indices, Tensor) else tensor(indices)
    if t.dtype.is_floating_point or t.dtype is D.bool_:
        raise TypeError("expected 'indices' to be integer dtype, but got "
                        f"{t.dtype}")
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    # in int64, as PyTorch's: compared with (and wrapped by) a total that an int32 or uint8
    # index dtype cannot hold
    flat = np.asarray(t.cpu().numpy()).astype(np.int64)
    total = math.prod(dims)
    if np.any(flat >= total) or np.any(flat < -total):
        raise RuntimeError("index out of bounds")
    coords = np.unravel_index(np.where(flat < 0, flat + total, flat), dims)
    return tuple(tensor(c.astype(np.int64), device=t.device) for c in coords)


def unique_consecutive(input: Tensor, return_inverse: bool = False,  # noqa: A002
                       return_counts: bool = False, dim: int | None = None) -> Any:
    """Each run of equal consecutive elements (slices along ``dim``) collapsed to one."""
    from ..creation import tensor

    from .extra_ops import check_unique_dim

    values = np.asarray(input.detach().cpu().numpy())
    axis = None if dim is None else T.sized_dim(input, dim, wrapped_first=True)
    check_unique_dim(input, axis)
    rows = values.reshape(-1) if axis is None else np.moveaxis(values, axis, 0)
    n = rows.shape[0]
    if n == 0:
        starts = np.zeros(0, dtype=np.int64)
    else:
        flat = rows.reshape(n, -1)
        change = np.any(flat[1:] != flat[:-1], axis=1)
        starts = np.concatenate([[0], np.nonzero(change)[0] + 1]).astype(np.int64)
    kept = rows[starts]
    out = kept if axis is None else np.moveaxis(kept, 0, axis)
    from .composite import no_derivative

    # the values are recorded as PyTorch's (UniqueConsecutiveBackward0, whose backward raises)
    result = [no_derivative(tensor(np.ascontiguousarray(out), dtype=input.dtype,
                                   device=input.device), (input,), NotImplementedError,
                            "the derivative for 'unique_consecutive' is not implemented.",
                            "UniqueConsecutiveBackward0")]
    if return_inverse:
        inverse = np.cumsum(np.isin(np.arange(n), starts)) - 1 if n else np.zeros(0, np.int64)
        result.append(tensor(inverse.astype(np.int64).reshape(
            input.shape if axis is None else (n,)), device=input.device))
    if return_counts:
        counts = np.diff(np.concatenate([starts, [n]])) if n else np.zeros(0, np.int64)
        result.append(tensor(counts.astype(np.int64), device=input.device))
    return result[0] if len(result) == 1 else tuple(result)


def is_nonzero(input: Tensor) -> bool:  # noqa: A002
    if input.numel() == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if input.numel() > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item())


def narrow_copy(input: Tensor, dim: int, start: int, length: int, *,  # noqa: A002
                out: Tensor | None = None) -> Tensor:
    if out is not None:
        return F.written_to(out, narrow_copy(input, dim, start, length), "narrow_copy")
    return F.clone(T.narrow(input, dim, start, length))


def is_complex(input: Tensor) -> bool:  # noqa: A002
    """False: runtime has real dtypes only."""
    return False


def _real_identity(input: Tensor) -> Tensor:  # noqa: A002
    """real, conj, resolve_conj, resolve_neg of a real tensor: the tensor itself."""
    return input


real = conj = resolve_conj = resolve_neg = _real_identity


def adjoint(input: Tensor) -> Tensor:  # noqa: A002
    """The conjugate transpose of the last two dims (real: the transpose)."""
    return input.mH


__all__ = [
    "adjoint", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh", "atleast_1d",
    "atleast_2d", "atleast_3d", "broadcast_shapes", "conj", "diagflat", "dsplit", "fliplr",
    "flipud", "frexp", "gcd", "greater", "greater_equal", "hsplit", "inner", "is_complex",
    "is_nonzero", "isin", "lcm", "ldexp", "less", "less_equal", "logspace", "msort",
    "narrow_copy", "not_equal", "ravel", "real", "resolve_conj", "resolve_neg",
    "unique_consecutive", "unravel_index", "vander", "vdot", "vsplit"]


def renorm(input: Tensor, p: float, dim: int, maxnorm: float, *,  # noqa: A002
           out: Tensor | None = None) -> Tensor:
    """Each slice along ``dim`` whose p-norm exceeds ``maxnorm`` scaled down to it (by
    maxnorm / (norm + 1e-7), PyTorch's)."""
    if out is not None:
        return F.written_to(out, renorm(input, p, dim, maxnorm), "renorm")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm:g}")
    from .reductions import vector_norm

    d = T.sized_dim(input, dim)
    others = tuple(i for i in range(input.ndim) if i != d)
    norms = vector_norm(input, p, others, keepdim=True)
    scale = F.where(F.gt(norms, maxnorm), F.div(maxnorm, F.add(norms, 1e-7)), 1.0)
    return named(F.mul(input, scale), "RenormBackward0")


def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:  # noqa: A002
    """input with its slice ``index`` along ``dim`` replaced by src (differentiable in both)."""
    d = T.sized_dim(input, dim)
    n = input.shape[d]
    i = index + n if index < 0 else index
    if not 0 <= i < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(input.shape)} at dimension {d}")
    return named(slice_scatter(input, F.unsqueeze(src, d), d, i, i + 1),
                 "SelectScatterBackward0")


def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start: int | None = None,  # noqa: A002
                  end: int | None = None, step: int = 1) -> Tensor:
    """input with the slice start:end:step along ``dim`` replaced by src."""
    from ..creation import tensor

    d = T.sized_dim(input, dim)
    positions = np.arange(input.shape[d])[slice(start, end, step)]
    want = list(input.shape)
    want[d] = len(positions)
    if tuple(src.shape) != tuple(want):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {want}")
    index = tensor(positions.astype(np.int64), device=input.device)
    if src.dtype is not input.dtype:  # PyTorch casts src here (index_copy would refuse it)
        src = src.to(input.dtype)
    return named(input.index_copy(d, index, src), "SliceScatterBackward0")


def nextafter(input: Tensor, other: Tensor, *, out: Tensor | None = None  # noqa: A002
              ) -> Tensor:
    """The next float after input toward other (no derivative, as PyTorch's)."""
    if out is not None:
        return F.written_to(out, nextafter(input, other), "nextafter")
    from ..creation import tensor
    from .composite import no_derivative

    dt = D.result_dtype([input.dtype, other.dtype], [], [input.ndim, other.ndim])
    if not dt.is_floating_point:  # PyTorch's kernel is for floats (numpy's gave float64)
        raise NotImplementedError(f"\"nextafter_cpu\" not implemented for "
                                  f"'{D.scalar_type_name(dt)}'")
    values = np.nextafter(np.asarray(input.detach().cpu().numpy()).astype(dt.np),
                          np.asarray(other.detach().cpu().numpy()).astype(dt.np))
    return no_derivative(tensor(values, device=input.device), (input, other),
                         RuntimeError, "derivative for aten::nextafter is not implemented",
                         "NextafterBackward0")


def chain_matmul(*matrices: Tensor, out: Tensor | None = None) -> Tensor:
    """The product of the matrices (PyTorch's deprecated name of linalg.multi_dot)."""
    import warnings

    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch "
                  "release. Use torch.linalg.multi_dot instead, which accepts a list of two or "
                  "more tensors rather than multiple parameters.", UserWarning, stacklevel=2)
    from ..linalg import multi_dot

    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for m in matrices:  # PyTorch's: matrices only (multi_dot also takes vectors at the ends)
        if m.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {m.ndim}, expected 2 instead.")
    if len(matrices) == 1:
        return F.clone(matrices[0])
    return multi_dot(list(matrices), out=out)


__all__ += ["chain_matmul", "nextafter", "renorm", "select_scatter", "slice_scatter"]
