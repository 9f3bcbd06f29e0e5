"""PyTorch's reductions built from sum, mean and amax: any/all, norm/vector_norm, var/std,
logsumexp. Their backward comes from the primitives', and they fuse with their prologue and
epilogue in a compiled step."""

from __future__ import annotations

import builtins
import contextlib
import math
import os
import sys
import warnings
from collections.abc import Iterator
from typing import Any

from .. import _dtype as D
from ..amp.policy import autocast_fp32
from ..tensor import Tensor
from . import functional as F
from .dispatch import named, named_backward
from .naming import renamed
from .shapes import OMITTED, wrap_dim


def any(input: Tensor, dim: Any = None, keepdim: bool = False, *,  # noqa: A001, A002
        out: Tensor | None = None) -> Tensor:
    if out is not None:
        _check_bool_out("any", out)
        return F.written_to(out, any(input, dim, keepdim), "any")
    if _no_dims(dim):  # PyTorch's any(x, ()): no dimension reduced, each element's truth
        return _as_uint8_of(input, F.ne(input, 0 if input.dtype is not D.bool_ else False))
    nonzero = F.cast(F.ne(input, 0 if input.dtype is not D.bool_ else False), D.int64)
    return _as_uint8_of(input, F.gt(F.sum(nonzero, dim, keepdim), 0))


def all(input: Tensor, dim: Any = None, keepdim: bool = False, *,  # noqa: A001, A002
        out: Tensor | None = None) -> Tensor:
    if out is not None:
        _check_bool_out("all", out)
        return F.written_to(out, all(input, dim, keepdim), "all")
    if _no_dims(dim):  # as any's
        return _as_uint8_of(input, F.ne(input, 0 if input.dtype is not D.bool_ else False))
    zero = F.cast(F.eq(input, 0 if input.dtype is not D.bool_ else False), D.int64)
    return _as_uint8_of(input, F.eq(F.sum(zero, dim, keepdim), 0))


def _no_dims(dim: Any) -> bool:
    """An empty dim list: any/all reduce nothing over it (where sum reduces everything)."""
    return isinstance(dim, (tuple, list)) and not dim


def _check_bool_out(name: str, out: Any) -> None:
    if isinstance(out, Tensor) and out.dtype not in (D.bool_, D.uint8):
        raise RuntimeError(f"{name} only supports bool tensor for result, got: "
                           f"{D.scalar_type_name(out.dtype)}")


def _as_uint8_of(x: Tensor, out: Tensor) -> Tensor:
    """any/all's bool result, as uint8 for a uint8 x (PyTorch's legacy rule)."""
    return F.cast(out, D.uint8) if x.dtype is D.uint8 else out


@autocast_fp32
def prod(input: Tensor, dim: Any = OMITTED, keepdim: bool = False, *,  # noqa: A002
         dtype: Any = None, out: Tensor | None = None) -> Tensor:
    """The product of all elements, or along ``dim`` (integers and bools in int64): the last
    of the running product, whose gradient is exact where x has zeros (PyTorch's)."""
    if dim is None:  # PyTorch's overloads: prod(input, *, dtype), prod(input, int dim, ...)
        if keepdim is False and dtype is None and out is None:  # both take two arguments
            raise TypeError(
                "prod() received an invalid combination of arguments - got (Tensor, "
                "dim=NoneType), but expected one of:\n * (Tensor input, *, torch.dtype dtype = "
                "None)\n * (Tensor input, int dim, bool keepdim = False, *, torch.dtype dtype = "
                "None, Tensor out = None)\n")
        raise TypeError("prod(): argument 'dim' must be int, not NoneType")
    if out is not None:
        return F.written_to(out, prod(input, dim, keepdim, dtype=F._out_dtype(dtype, out)), "prod")
    if dtype is not None:
        return F.in_dtype(prod, input, dtype, dim, keepdim)
    if dim is OMITTED:
        if keepdim:
            raise TypeError("prod(): keepdim needs a dim (PyTorch's overloads: prod(*, dtype) "
                            "and prod(int dim, bool keepdim=False, *, dtype))")
        flat = F.reshape(input, (-1,))
        if not flat.numel():
            return F.add(F.sum(flat), 1)  # the empty product, still of x's graph
        if flat.requires_grad and flat.dtype.is_floating_point:
            return _prod_nonfinite(flat, 0, False, "ProdBackward0", whole=True)
        return named(F.getitem(F.cumprod(flat, 0), -1), "ProdBackward0")
    if isinstance(dim, (tuple, list)):
        raise TypeError(f"prod(): argument 'dim' must be int, not {type(dim).__name__}")
    if input.ndim == 0:
        F._axes(dim, 0)
        return F.cumprod(input, 0)
    d = wrap_dim(dim, input.ndim)
    n = input.shape[d]
    if n == 0:
        return F.add(F.sum(input, d, keepdim), 1)
    if input.requires_grad and input.dtype.is_floating_point:
        return _prod_nonfinite(input, d, keepdim, "ProdBackward1", whole=False)
    last = slice(n - 1, n) if keepdim else n - 1
    return named(F.getitem(F.cumprod(input, d), (slice(None),) * d + (last,)), "ProdBackward1")


def _prod_nonfinite(x: Tensor, d: int, keepdim: bool, name: str, whole: bool) -> Tensor:
    """The product along d (the last of the running product), differentiated as PyTorch's
    prod_backward: result / x where x has no zero, else the product of the others (exclusive
    running products from both ends; 0 past one zero over x whole, its first-order rule).
    Where a slice is finite that formula is itself differentiated, so the second derivative
    at a zero is PyTorch's (the running product's backward, constant past its first zero, had
    none); where it holds an inf or NaN it is held constant (the running product's reversed
    sums were NaN there: inf / inf, 0 * inf)."""
    from .composite import straight_through
    from .ordering import _shifted
    from .tensor_ops import flip, isfinite, logical_not, movedim

    def others(t: Tensor) -> Tensor:
        v = movedim(t, d, -1)
        before = F.cumprod(_shifted(v, 1, 1.0), -1)
        after = flip(F.cumprod(_shifted(flip(v, [-1]), 1, 1.0), -1), [-1])
        return movedim(F.mul(before, after), -1, d)

    c = x.detach()
    last = (slice(None),) * d + (slice(x.shape[d] - 1, x.shape[d]),)
    finite = F.eq(F.sum(F.cast(logical_not(isfinite(c)), D.int64), d, True), 0)
    result = F.getitem(F.cumprod(c, d), last)
    zeros = F.sum(F.cast(F.eq(c, 0), D.int64))
    with_zero = others(c)
    with_zero = F.where(F.eq(zeros, 1), with_zero, 0.0) if whole else with_zero
    slope = F.where(F.eq(zeros, 0), F.div(result, c), with_zero)
    # the formula of x itself where the slice is finite, added as (x - x) times it: 0 in
    # value, the formula as gradient (halves of it held and not: its own derivative once)
    xs = F.where(finite, x, 1.0)
    result_x = F.getitem(F.cumprod(xs, d), last)
    formula = F.where(F.eq(zeros, 0), F.div(result_x, F.where(F.eq(c, 0), 1.0, xs)),
                      others(xs))
    half_sum = F.add(F.mul(slope, 0.5), F.mul(formula, 0.5))
    path = F.add(result, F.sum(F.mul(F.sub(xs, xs.detach()), half_sum), d, True))
    edge = F.sum(F.mul(x, F.where(finite, -0.0, slope)), d, True)
    path = F.where(finite, path, edge)
    value = result
    if not keepdim:
        value, path = F.squeeze(value, d), F.squeeze(path, d)
    return straight_through(value, path, name)


def vector_norm(x: Tensor, ord: Any = 2, dim: Any = None, keepdim: bool = False) -> Tensor:  # noqa: A002
    """(sum |x|^ord)^(1/ord) over ``dim`` (all of x by default); ord inf/-inf: max/min |x|,
    0: the count of nonzeros. A half or bfloat16 x's norm is computed in float32 and rounded
    once, as PyTorch's (its squares would overflow float16 at 256)."""
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {D.scalar_type_name(x.dtype)}")
    if x.dtype in D.LOW_FLOATS:
        result = _vector_norm(F.cast(x, D.float32), ord, dim, keepdim)
        return named(F.cast(result, x.dtype), "LinalgVectorNormBackward0")
    return _vector_norm(x, ord, dim, keepdim)


def _vector_norm(x: Tensor, ord: Any, dim: Any, keepdim: bool) -> Tensor:  # noqa: A002
    a = F.abs(x)
    if ord in (math.inf, -math.inf):
        return _inf_norm(x, a, ord, dim, keepdim)
    if ord < 0:
        _no_identity_on_empty(x, ord, dim)
    if ord == 0:  # the count of nonzeros: PyTorch records it, and its backward gives x none
        count = count_nonzero_with_zero_gradient(x, dim, keepdim)
        if not count.requires_grad:
            return count
        from .composite import straight_through

        return straight_through(count, F.sum(x, dim, keepdim), "LinalgVectorNormBackward0",
                                gradient=False)
    if ord == 1:
        return renamed(F.sum(a, dim, keepdim), "LinalgVectorNormBackward0")
    if ord == 2:
        return renamed(_root(F.sum(F.mul(x, x), dim, keepdim), 2.0),
                       "LinalgVectorNormBackward0")
    powered = F.pow(a, float(ord))
    if ord < 1:  # |x|^ord's slope is infinite at 0 (times abs's 0 there: NaN); PyTorch's 0
        zero = F.eq(a, 0)
        powered = F.where(zero, powered.detach(), F.pow(F.where(zero, 1.0, a), float(ord)))
    return renamed(_root(F.sum(powered, dim, keepdim), float(ord)),
                   "LinalgVectorNormBackward0")


def count_nonzero_with_zero_gradient(x: Tensor, dim: Any = None, keepdim: bool = False
                                     ) -> Tensor:
    """The count of x's nonzeros over ``dim``, with a zero gradient to x (PyTorch's cdist and
    pdist of p = 0): x's sign is 0 where x is, and its gradient is 0."""
    return F.sum(F.where(F.ne(x, 0), 1.0, F.sign(x)), dim, keepdim)


def _no_identity_on_empty(x: Tensor, ord: float, dim: Any) -> None:  # noqa: A002
    """PyTorch's error for a norm of no identity (ord inf or below 0) over no elements."""
    if x.numel():
        return
    name = ("" if ord > 0 else "-") + "inf" if ord in (math.inf, -math.inf) else \
        f"{int(ord)}" if float(ord).is_integer() else f"{ord}"
    if dim is None or isinstance(dim, (tuple, list)) and not dim:
        raise RuntimeError(f"linalg.vector_norm cannot compute the {name} norm on an empty "
                           "tensor because the operation does not have an identity")
    empty = [d for d in F._axes(dim, x.ndim) if x.shape[d] == 0]
    if empty:  # PyTorch's text, its missing space kept
        raise RuntimeError(f"linalg.vector_norm cannot compute the {name} norm on the "
                           f"dimension {empty[0]}because this dimension is empty and the "
                           "operation does not have an identity")


def _inf_norm(x: Tensor, a: Tensor, ord: float, dim: Any, keepdim: bool) -> Tensor:  # noqa: A002
    """max |x| (min for -inf), its gradient shared among the elements at it, 0 where the norm
    is NaN (PyTorch's: amax's mask misses a NaN, and its share became 0/0)."""
    _no_identity_on_empty(x, ord, dim)
    key = a if ord > 0 else F.neg(a)
    top = F.amax(key.detach(), dim, True)
    value = top if ord > 0 else F.neg(top)
    axes = F._axes(dim, x.ndim)
    if not keepdim and axes:
        value = F.squeeze(value, axes)
    if not x.requires_grad:
        return value
    from .composite import straight_through

    hit = F.eq(key, top)
    count = F.clamp(F.sum(F.cast(hit, a.dtype), axes, keepdim), 1.0, None)
    path = F.div(F.sum(F.where(hit, a, 0.0), axes, keepdim), count)
    return straight_through(value, path, "LinalgVectorNormBackward0")


def _root(s: Tensor, p: float) -> Tensor:
    """s ** (1/p) whose gradient at s == 0 is 0, as PyTorch's norm gives (the root's own
    derivative there is infinite): the root is taken of 1 there, and masked to 0 ** (1/p): 0,
    or inf for a negative p (a sum of |x| ** p that is 0: every |x| infinite)."""
    zero = F.eq(s, 0.0)
    safe = F.where(zero, 1.0, s)
    root = F.sqrt(safe) if p == 2.0 else F.pow(safe, 1.0 / p)
    return F.where(zero, 0.0 if p > 0 else math.inf, root)


def norm(input: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False,  # noqa: A002
         out: Tensor | None = None, dtype: Any = None) -> Tensor:
    """torch.norm, as PyTorch's (torch/functional.py): "fro" over at most two dims is the
    vector 2-norm, another string (or "fro" over more) linalg.matrix_norm over ``dim`` (all of
    input's by default); a number (None: 2) linalg.vector_norm; in ``dtype`` where given."""
    if out is not None:
        return F.written_same(out, norm(input, p, dim, keepdim, dtype=dtype), "norm", "expected")
    from .. import linalg

    dims = None if dim is None else [dim] if isinstance(dim, int) else dim
    if isinstance(p, str):
        if p == "fro" and (dims is None or len(dims) <= 2):
            result = linalg.vector_norm(input, 2, dims, keepdim, dtype=dtype)
        else:
            return linalg.matrix_norm(input, p, list(range(input.ndim)) if dims is None
                                      else dims, keepdim, dtype=dtype)
    else:
        result = linalg.vector_norm(input, 2.0 if p is None else p, dims, keepdim, dtype=dtype)
    # the inf and 0 norms' node is named already, and is one whose backward a rename would lose
    return result if p in (math.inf, -math.inf, 0) or result is input else named(
        result, "LinalgVectorNormBackward0")


def norm_method(self: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False,
                dtype: Any = None) -> Tensor:
    """Tensor.norm: norm, its dtype fourth (PyTorch's method has no out)."""
    return norm(self, p, dim, keepdim, dtype=dtype)


def _correction(unbiased: Any, correction: Any) -> float:
    if unbiased is not None and correction is not None:
        raise TypeError("var()/std(): pass either unbiased or correction, not both")
    if correction is not None:
        return float(correction)
    return 1.0 if unbiased is None or unbiased else 0.0


@named_backward("VarBackward0")
def var(input: Tensor, dim: Any = None, unbiased: Any = None,  # noqa: A002
        keepdim: bool = False, *, correction: Any = None, out: Tensor | None = None) -> Tensor:
    if out is not None:
        return F.written_to(out, var(input, dim, unbiased, keepdim, correction=correction), "var")
    if isinstance(dim, bool):  # var(unbiased) positionally, as PyTorch's overload
        dim, unbiased = None, dim
    if not input.dtype.is_floating_point:
        raise RuntimeError("std and var only support floating point and complex dtypes")
    return _var(input, dim, unbiased, keepdim, correction)


@F.half_in_float32  # half squares overflow at 256: PyTorch accumulates in float32
def _var(x: Tensor, dim: Any, unbiased: Any, keepdim: bool, correction: Any) -> Tensor:
    axes = F._axes(dim, x.ndim)
    n = math.prod(x.shape[a] for a in axes)
    centered = F.sub(x, F.mean(x, axes, keepdim=True))
    total = F.sum(F.mul(centered, centered), axes, keepdim)
    # n <= correction: PyTorch divides by max(0, n - correction) (inf or nan, no error) and
    # warns, naming the op called (std, var_mean ...)
    dof = n - _correction(unbiased, correction)
    if dof <= 0:
        warnings.warn(f"{_DOF_OP[0] if _DOF_OP else 'var'}(): degrees of freedom is <= 0. "
                      "Correction should be strictly less than the reduction factor (input "
                      "numel divided by output numel).", UserWarning,
                      stacklevel=_outside_runtime())
    value = F.div(total, builtins.max(0.0, dof))
    if isinstance(dim, (list, tuple)) and not dim and x.ndim and x.requires_grad:
        # PyTorch's var_backward over dim=[] counts the elements reduced as its _safe_size
        # of no dims, 1: the gradient is 2 / (1 - correction) (x - mean), inf for the
        # default correction
        from .composite import straight_through

        c = _correction(unbiased, correction)
        factor = math.inf if c == 1 else 1.0 / (1.0 - c)
        spread = F.sub(x, F.mean(x).detach())
        path = F.mul(F.sum(F.mul(spread, spread), axes, keepdim), factor)
        # times 1: the node the callers rename (VarBackward0, StdBackward0) is this one, not
        # the straight-through one, whose class carries its gradient rule
        value = F.mul(straight_through(value, path, "VarBackward0"), 1.0)
    return value


def _outside_runtime() -> int:
    """The stacklevel, for a warning its caller gives, of the first frame outside runtime (the
    user's line, as PyTorch's C++ warnings point at)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    level, frame = 2, sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(root):
        frame, level = frame.f_back, level + 1
    return level


# the outermost op of the var family being computed (its degrees-of-freedom warning's name)
_DOF_OP: list[str] = []


@contextlib.contextmanager
def dof_op(name: str) -> Iterator[None]:
    """var/std's degrees-of-freedom warning within names ``name`` (unless an outer op is
    named already: std's var is std's)."""
    _DOF_OP.append(_DOF_OP[0] if _DOF_OP else name)
    try:
        yield
    finally:
        _DOF_OP.pop()


@named_backward("StdBackward0")
def std(input: Tensor, dim: Any = None, unbiased: Any = None,  # noqa: A002
        keepdim: bool = False, *, correction: Any = None, out: Tensor | None = None) -> Tensor:
    if out is not None:
        return F.written_to(out, std(input, dim, unbiased, keepdim, correction=correction), "std")
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    with dof_op("std"):
        return _std(input, dim, unbiased, keepdim, correction)


@F.half_in_float32
def _std(x: Tensor, dim: Any, unbiased: Any, keepdim: bool, correction: Any) -> Tensor:
    # sqrt's gradient is infinite at 0: PyTorch's std_backward masks it to 0 there
    return _root(var(x, dim, unbiased, keepdim, correction=correction), 2.0)


@named_backward("LogsumexpBackward0")
def logsumexp(input: Tensor, dim: Any, keepdim: bool = False, *,  # noqa: A002
              out: Tensor | None = None) -> Tensor:
    if dim is None:  # PyTorch's parser: dim is a required list of ints
        raise TypeError("logsumexp(): argument 'dim' (position 2) must be tuple of ints, not "
                        "NoneType")
    if out is not None:
        if isinstance(out, Tensor) and not out.dtype.is_floating_point:
            raise RuntimeError("logsumexp(): Expected floating point type for result tensor, but "
                               f"got: {D.scalar_type_name(out.dtype)}")
        return F.written_to(out, logsumexp(input, dim, keepdim), "logsumexp")
    if not input.dtype.is_floating_point:
        input = F.cast(input, D.default_float)
    axes = F._axes(dim, input.ndim)
    if not input.numel():
        return F.log(F.sum(F.exp(input), axes, keepdim))
    if not keepdim and input.ndim and isinstance(dim, (list, tuple)) and not dim:
        # PyTorch's: dim=[] reduces every dim, and its result (shape []) takes the maximum
        # unsqueezed (no dim to squeeze it by) in place
        raise RuntimeError(f"output with shape [] doesn't match the broadcast shape "
                           f"{[1] * input.ndim}")
    m = F.amax(input.detach(), axes, keepdim=True)
    # an all -inf row (or +inf max) would give inf - inf: shift by 0 there, as PyTorch does
    m = F.where(F.eq(F.abs(m), math.inf), 0.0, m)
    result = F.add(F.log(F.sum(F.exp(F.sub(input, m)), axes, keepdim=True)), m)
    return result if keepdim else F.squeeze(result, axes) if axes else result
