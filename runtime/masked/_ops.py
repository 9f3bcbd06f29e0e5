"""PyTorch's masked reductions and normalizations (``torch/masked/_ops.py``) on strided
tensors: each masked-out element is replaced by the identity of the operation (``where``) and
the ordinary op runs on the result, so autograd and ``planner.compile`` see rt's own
differentiable ops (where, sum, amax, softmax, ...) and no op of their own.

Left out: ``MaskedTensor`` (torch.masked's tensor subclass) and sparse COO/CSR inputs and
masks (rt has strided tensors only); an input of another layout raises torch's ValueError."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import _dtype as D
from ..ops.layouts import strided
from ..tensor import Tensor

DimOrDims = int | Sequence[int] | None

# integer inputs whose sum/prod is int64 where no dtype is given, as torch's
_PROMOTED_TO_INT64 = frozenset({"uint8", "bool", "int8", "int16", "int32"})


def _rt() -> Any:
    import runtime  # the package's namespace, set up after this module is imported

    return runtime


def _check_strided(message: str, *tensors: Tensor) -> None:
    """torch's ValueError ``message`` (its ``{}`` the layout) for a tensor that is not
    strided (a sparse one, which torch takes in places and rt has not)."""
    for t in tensors:
        layout = getattr(t, "layout", strided)
        if layout is not strided:
            raise ValueError(message.format(layout))


def _reduction_identity(op_name: str, input: Tensor, *args: Any) -> Tensor | None:  # noqa: A002
    """The identity of the reduction ``op_name`` on ``input``'s dtype as a 0-dim tensor (None
    where it is undefined: mean, var, std), as torch's ``_reduction_identity``."""
    rt = _rt()
    dtype, device = input.dtype, input.device
    op_name = op_name.rsplit(".", 1)[-1]

    def const(value: Any, of: D.DType = dtype) -> Tensor:
        return rt.tensor(value, dtype=of, device=device)

    integral = dtype.is_signed or dtype is D.uint8
    if op_name in {"sum", "cumsum"}:
        return const(0)
    if op_name in {"prod", "cumprod"}:
        return const(1)
    if op_name in {"amax", "argmax", "logaddexp", "logsumexp"}:
        if dtype.is_floating_point:
            return const(float("-inf"))
        if integral:
            return const(rt.iinfo(dtype).min)
    elif op_name in {"amin", "argmin"}:
        if dtype.is_floating_point:
            return const(float("inf"))
        if integral:
            return const(rt.iinfo(dtype).max)
    elif op_name in {"mean", "var", "std"}:
        return None  # the mean of the input: no single value
    elif op_name == "norm":
        ord = args[0] if args else 2  # noqa: A001 - torch's name
        if ord == float("-inf"):
            if not dtype.is_floating_point:
                raise AssertionError(f"input must be floating point, got {dtype}")
            return const(float("inf"))
        return const(0)
    elif op_name == "median":  # nanmedian skips NaN
        return const(float("nan"), dtype if dtype.is_floating_point else D.float32)
    raise NotImplementedError(f"identity of {op_name} on {dtype} input")


def _canonical_dim(dim: DimOrDims, ndim: int) -> tuple[int, ...]:
    """``dim`` as a sorted tuple of non-negative dims (None or (): every dim)."""
    if dim == () or dim is None:
        return tuple(range(ndim))
    ndim = max(ndim, 1)
    dims: list[int] = []
    for d in (dim,) if isinstance(dim, int) else dim:
        if d in dims:
            raise RuntimeError(f"dim={d} appears multiple times in the list of dims")
        if d >= ndim or d < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, "
                             f"{ndim - 1}], but got {d})")
        dims.append(d % ndim)
    return tuple(sorted(dims))


def _input_mask(input: Tensor, *args: Any, **kwargs: Any) -> Tensor:  # noqa: A002
    """``mask`` as a bool tensor of ``input``'s shape (broadcast; never downcast)."""
    _check_strided("_input_mask expects strided or sparse COO or sparse CSR tensor but got {}",
                   input)
    mask = kwargs.get("mask")
    if mask is None:
        raise ValueError("_input_mask requires explicit mask")
    if tuple(mask.shape) != tuple(input.shape):
        if mask.ndim > input.ndim:
            raise IndexError("_input_mask expected broadcastable mask (got mask dimensionality "
                             "higher than of the input)")
        mask = _rt().broadcast_to(mask.clone(), tuple(input.shape))
    return mask.to(dtype=D.bool_)


def _output_mask(op: Any, input: Tensor, *args: Any, **kwargs: Any) -> Tensor:  # noqa: A002
    """Which elements of ``op(input, *args, **kwargs)`` are masked in: for a reduction, those
    with a masked-in element among the reduced ones; for a normalization, the input mask."""
    name = getattr(op, "__name__", None)
    if not callable(op):
        raise ValueError(f"_output_mask expected masked operation (got {type(op).__name__} "
                         f"object)")
    if name in _REDUCTIONS:
        if name == "norm" and args:
            args = args[1:]  # the ord argument
        dim = args[0] if args else kwargs.get("dim")
        outmask = _input_mask(input, *args, **kwargs)
        for d in reversed(_canonical_dim(dim, input.ndim)):
            outmask = outmask.any(dim=d, keepdim=bool(kwargs.get("keepdim", False)))
        return outmask
    if name in _NORMALIZATIONS:
        return _input_mask(input, *args, **kwargs)
    raise ValueError(f"_output_mask expected masked operation (got callable {op.__module__}."
                     f"{name})")


def _combine_input_and_mask(op: Callable[..., Tensor], input: Tensor,  # noqa: A002
                            mask: Tensor | None, *args: Any) -> Tensor:
    """``input`` with its masked-out elements replaced by the identity of ``op`` (one of this
    module's reductions)."""
    if mask is None:
        return input
    canonical = _input_mask(input, mask=mask)
    return _rt().where(canonical, input, _reduction_identity(op.__name__, input, *args))


def _sum_prod_dtype(input: Tensor, dtype: Any) -> Any:  # noqa: A002
    """sum's and prod's result dtype: ``dtype``, else input's, an integer one as int64."""
    if dtype is not None:
        return dtype
    return D.int64 if input.dtype.name in _PROMOTED_TO_INT64 else input.dtype


def sum(input: Tensor, dim: DimOrDims = None, *, keepdim: bool | None = False,  # noqa: A001,A002
        dtype: Any = None, mask: Tensor | None = None) -> Tensor:
    """The sum of the masked-in elements along ``dim`` (identity 0)."""
    dtype = _sum_prod_dtype(input, dtype)
    dims = _canonical_dim(dim, input.ndim)
    mask_input = _combine_input_and_mask(sum, input, mask)
    _check_strided("masked sum expects strided, sparse_coo or sparse_csr tensor (got {} tensor)",
                   mask_input)
    return _rt().sum(mask_input, dims, bool(keepdim), dtype=dtype)


def prod(input: Tensor, dim: DimOrDims = None, *, keepdim: bool | None = False,  # noqa: A002
         dtype: Any = None, mask: Tensor | None = None) -> Tensor:
    """The product of the masked-in elements along ``dim`` (identity 1)."""
    dtype = _sum_prod_dtype(input, dtype)
    dims = _canonical_dim(dim, input.ndim)
    result = _combine_input_and_mask(prod, input, mask)
    _check_strided("masked prod expects strided, sparse_coo or sparse_csr tensor (got {} tensor)",
                   result)
    result = result.to(dtype=dtype)
    for d in reversed(dims):  # one dim at a time, as torch's
        result = result.prod(dim=d, keepdim=bool(keepdim))
    return result


def _cumulative(op_name: str, identity_of: Callable[..., Tensor], input: Tensor,  # noqa: A002
                dim: int, dtype: Any, mask: Tensor | None) -> Tensor:
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    mask_input = _combine_input_and_mask(identity_of, input, mask)
    _check_strided(f"masked {op_name} expects strided tensor (got {{}} tensor)", mask_input)
    return getattr(_rt(), op_name)(mask_input, d, dtype=dtype).to(dtype=dtype)


def cumsum(input: Tensor, dim: int, *, dtype: Any = None,  # noqa: A002
           mask: Tensor | None = None) -> Tensor:
    """The cumulative sum along ``dim``, masked-out elements counted as 0."""
    return _cumulative("cumsum", sum, input, dim, dtype, mask)


def cumprod(input: Tensor, dim: int, *, dtype: Any = None,  # noqa: A002
            mask: Tensor | None = None) -> Tensor:
    """The cumulative product along ``dim``, masked-out elements counted as 1."""
    return _cumulative("cumprod", prod, input, dim, dtype, mask)


def _extreme(op: Callable[..., Tensor], input: Tensor, dim: DimOrDims,  # noqa: A002
             keepdim: bool | None, dtype: Any, mask: Tensor | None) -> Tensor:
    dtype = input.dtype if dtype is None else dtype
    op_name = op.__name__
    mask_input = _combine_input_and_mask(op, input, mask)
    dims = _canonical_dim(dim, mask_input.ndim)
    _check_strided(f"masked {op_name} expects strided, sparse_coo or sparse_csr tensor "
                   "(got {} tensor)", mask_input)
    return getattr(_rt(), op_name)(mask_input, dims, bool(keepdim)).to(dtype=dtype)


def amax(input: Tensor, dim: DimOrDims = None, *, keepdim: bool | None = False,  # noqa: A002
         dtype: Any = None, mask: Tensor | None = None) -> Tensor:
    """The maximum of the masked-in elements along ``dim`` (identity: the dtype's lowest)."""
    return _extreme(amax, input, dim, keepdim, dtype, mask)


def amin(input: Tensor, dim: DimOrDims = None, *, keepdim: bool | None = False,  # noqa: A002
         dtype: Any = None, mask: Tensor | None = None) -> Tensor:
    """The minimum of the masked-in elements along ``dim`` (identity: the dtype's highest)."""
    return _extreme(amin, input, dim, keepdim, dtype, mask)


def _arg_extreme(op: Callable[..., Tensor], input: Tensor,  # noqa: A002
                 dim: int | None, keepdim: bool | None, dtype: Any, mask: Tensor | None) -> Tensor:
    dtype = input.dtype if dtype is None else dtype
    op_name = op.__name__
    mask_input = _combine_input_and_mask(op, input, mask)
    _check_strided(f"masked {op_name} expects strided tensor (got {{}} tensor)", mask_input)
    return getattr(_rt(), op_name)(mask_input, dim, bool(keepdim)).to(dtype=dtype)


def argmax(input: Tensor, dim: int | None = None, *, keepdim: bool | None = False,  # noqa: A002
           dtype: Any = None, mask: Tensor | None = None) -> Tensor:
    """The index of the masked-in maximum along ``dim`` (in ``dtype``: input's by default)."""
    return _arg_extreme(argmax, input, dim, keepdim, dtype, mask)


def argmin(input: Tensor, dim: int | None = None, *, keepdim: bool | None = False,  # noqa: A002
           dtype: Any = None, mask: Tensor | None = None) -> Tensor:
    """The index of the masked-in minimum along ``dim`` (in ``dtype``: input's by default)."""
    return _arg_extreme(argmin, input, dim, keepdim, dtype, mask)


def _count(input: Tensor, dim: DimOrDims, keepdim: bool,  # noqa: A002
           inmask: Tensor | None) -> Tensor:
    """How many elements are masked in along ``dim`` (int64)."""
    if inmask is None:
        ones = _rt().ones(tuple(input.shape), dtype=D.int64, device=input.device)
        return sum(ones, dim, keepdim=keepdim)
    return inmask.sum(dim=dim, keepdim=bool(keepdim))


def mean(input: Tensor, dim: DimOrDims = None, *, keepdim: bool | None = False,  # noqa: A002
         dtype: Any = None, mask: Tensor | None = None) -> Tensor:
    """The mean of the masked-in elements along ``dim`` (NaN where none is masked in)."""
    dtype_source = "Optional"
    if dtype is None:
        dtype, dtype_source = input.dtype, "Input"
    if not (dtype.is_floating_point or dtype.is_complex):
        raise ValueError(f"mean(): Could not infer output dtype. {dtype_source} dtype must be "
                         f"either a floating point or complex dtype. Got: {dtype}")
    _check_strided("masked mean expects strided or sparse_csr tensor (got {} tensor)", input)
    inmask = None if mask is None else _input_mask(input, mask=mask)
    count = _count(input, dim, bool(keepdim), inmask)
    total = sum(input, dim, keepdim=keepdim, dtype=dtype, mask=inmask)
    return total / count


def median(input: Tensor, dim: int = -1, *, keepdim: bool = False,  # noqa: A002
           dtype: Any = None, mask: Tensor | None = None) -> Tensor:
    """The median of the masked-in elements along ``dim`` (NaN where none is masked in; an
    integer input raises there)."""
    rt = _rt()
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    is_float = input.dtype.is_floating_point
    if not is_float:
        input = input.to(dtype=D.float32)  # noqa: A001
    mask_input = _combine_input_and_mask(median, input, mask)
    _check_strided("masked median expects strided tensor (got {} tensor)", mask_input)
    output = rt.nanmedian(mask_input, d, keepdim).values
    if is_float:
        return output
    if not bool(rt.isnan(output).any()):
        return output.to(dtype=dtype)
    raise ValueError("masked median expects no fully masked out rows if dtype is not floating "
                     "point")


def logsumexp(input: Tensor, dim: DimOrDims = None, *, keepdim: bool = False,  # noqa: A002
              dtype: Any = None, mask: Tensor | None = None) -> Tensor:
    """log(sum(exp)) of the masked-in elements along ``dim`` (identity -inf)."""
    dtype = input.dtype if dtype is None else dtype
    dims = _canonical_dim(dim, input.ndim)
    mask_input = _combine_input_and_mask(logsumexp, input, mask)
    _check_strided("masked logsumexp expects strided tensor (got {} tensor)", mask_input)
    return _rt().logsumexp(mask_input, dims, keepdim=keepdim).to(dtype=dtype)


def logaddexp(input: Tensor, other: Tensor, *, dtype: Any = None,  # noqa: A002
              input_mask: Tensor | None = None, other_mask: Tensor | None = None) -> Tensor:
    """logaddexp of ``input`` and ``other``, each masked-out element counted as -inf."""
    dtype = input.dtype if dtype is None else dtype
    layouts = getattr(input, "layout", strided), getattr(other, "layout", strided)
    if layouts != (strided, strided):
        raise ValueError(f"masked logaddexp expects strided tensors (got {layouts[0]} tensor "
                         f"for input, {layouts[1]} for other)")
    mask_input = _combine_input_and_mask(logaddexp, input, input_mask)
    mask_other = _combine_input_and_mask(logaddexp, other, other_mask)
    return _rt().logaddexp(mask_input, mask_other).to(dtype=dtype)


def norm(input: Tensor, ord: float | None = 2.0, dim: DimOrDims = None, *,  # noqa: A001,A002
         keepdim: bool | None = False, dtype: Any = None,
         mask: Tensor | None = None) -> Tensor:
    """The vector ``ord``-norm of the masked-in elements along ``dim`` (identity 0; +inf for
    ord=-inf)."""
    dtype = input.dtype if dtype is None else dtype
    mask_input = _combine_input_and_mask(norm, input, mask, ord)
    _check_strided("masked norm expects strided tensor (got {} tensor)", mask_input)
    dims = _canonical_dim(dim, input.ndim)
    return _rt().linalg.vector_norm(mask_input, ord, dims, bool(keepdim), dtype=dtype)


def _std_var(input: Tensor, dim: DimOrDims, unbiased: bool | None, *,  # noqa: A002
             correction_opt: float | None, keepdim: bool | None, dtype: Any,
             mask: Tensor | None, take_sqrt: bool) -> Tensor:
    rt = _rt()
    if unbiased is not None and correction_opt is not None:
        raise AssertionError("Only one of unbiased and correction may be given")
    correction = 1.0
    if unbiased is not None:
        correction = 1.0 if unbiased else 0.0
    if correction_opt is not None:
        correction = float(correction_opt)
    if dtype is None:
        dtype = input.dtype if input.dtype.is_floating_point else D.float32
    compute_dtype = dtype if dtype.is_floating_point else D.float32
    _check_strided("masked std/var expects strided tensor (got {} tensor)", input)
    inmask = None if mask is None else _input_mask(input, mask=mask)
    count = _count(input, dim, True, inmask)
    sample_mean = rt.divide(sum(input, dim, keepdim=True, dtype=dtype, mask=inmask), count)
    x = rt.subtract(input, sample_mean)
    total = sum(x * x.conj(), dim, keepdim=keepdim, dtype=compute_dtype, mask=inmask)
    if not keepdim:
        count = count.reshape(tuple(total.shape))
    if correction != 0:
        count = count.to(compute_dtype)
        count = rt.subtract(count, correction)
        count = rt.maximum(count, count.new_zeros([]))
    output = rt.divide(total, count).to(dtype=dtype)
    return rt.sqrt(output) if take_sqrt else output


def var(input: Tensor, dim: DimOrDims = None, unbiased: bool | None = None, *,  # noqa: A002
        correction: float | None = None, keepdim: bool | None = False, dtype: Any = None,
        mask: Tensor | None = None) -> Tensor:
    """The variance of the masked-in elements along ``dim`` (NaN where none is masked in)."""
    return _std_var(input, dim, unbiased, correction_opt=correction, keepdim=keepdim,
                    dtype=dtype, mask=mask, take_sqrt=False)


def std(input: Tensor, dim: DimOrDims = None, unbiased: bool | None = None, *,  # noqa: A002
        correction: int | None = None, keepdim: bool | None = False, dtype: Any = None,
        mask: Tensor | None = None) -> Tensor:
    """The standard deviation of the masked-in elements along ``dim``."""
    return _std_var(input, dim, unbiased, correction_opt=correction, keepdim=keepdim,
                    dtype=dtype, mask=mask, take_sqrt=True)


def _normalization(op_name: str, identity_of: Callable[..., Tensor], input: Tensor,  # noqa: A002
                   dim: int, dtype: Any, mask: Tensor | None) -> Tensor:
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    mask_input = _combine_input_and_mask(identity_of, input, mask)
    _check_strided(f"masked {op_name} expects strided tensor (got {{}} tensor)", mask_input)
    return getattr(_rt().nn.functional, op_name)(mask_input, d, dtype=dtype)


def softmax(input: Tensor, dim: int, *, dtype: Any = None,  # noqa: A002
            mask: Tensor | None = None) -> Tensor:
    """softmax along ``dim`` over the masked-in elements (masked-out ones count as -inf)."""
    return _normalization("softmax", amax, input, dim, dtype, mask)


def log_softmax(input: Tensor, dim: int, *, dtype: Any = None,  # noqa: A002
                mask: Tensor | None = None) -> Tensor:
    """log_softmax along ``dim`` over the masked-in elements (masked-out ones count as -inf)."""
    return _normalization("log_softmax", amax, input, dim, dtype, mask)


def softmin(input: Tensor, dim: int, *, dtype: Any = None,  # noqa: A002
            mask: Tensor | None = None) -> Tensor:
    """softmin along ``dim`` over the masked-in elements (masked-out ones count as +inf)."""
    return _normalization("softmin", amin, input, dim, dtype, mask)


def normalize(input: Tensor, ord: float, dim: int, *, eps: float = 1e-12,  # noqa: A001,A002
              dtype: Any = None, mask: Tensor | None = None) -> Tensor:
    """input (masked-out elements as 0) over its masked ``ord``-norm along ``dim`` (at least
    ``eps``)."""
    rt = _rt()
    dtype = input.dtype if dtype is None else dtype
    mask_input = _combine_input_and_mask(sum, input, mask)
    _check_strided("masked normalize expects strided tensor (got {} tensor)", mask_input)
    nrm = norm(input, ord, dim, keepdim=True, dtype=dtype, mask=mask)
    denom = rt.maximum(nrm, nrm.new_full([], eps))
    return rt.divide(mask_input, denom)


_REDUCTIONS = frozenset({"sum", "prod", "amax", "amin", "argmax", "argmin", "mean", "median",
                         "norm", "var", "std", "logsumexp"})
_NORMALIZATIONS = frozenset({"softmax", "log_softmax", "softmin", "normalize", "cumsum",
                             "cumprod"})
