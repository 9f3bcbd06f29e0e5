"""PyTorch's aliases and small functions the runtime lacked, from its existing ops: Tensor
predicates (is_signed, is_same_size ...), legacy constructors (Tensor.new, torch.range),
``*_copy`` forms of the views, the unsafe splits, rsub, put, the scatters' Tensor methods,
index_reduce and the like, each with PyTorch's defaults, dtypes and texts."""

from __future__ import annotations

import builtins
import inspect
import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import _dtype as D
from ..tensor import Tensor
from . import extras
from . import functional as F
from . import tensor_ops as T
from .layouts import check_factory_options
from .shapes import Size, wrap_dim

# --- Tensor predicates ------------------------------------------------------------------------


def is_same_size(input: Tensor, other: Tensor) -> bool:  # noqa: A002 - PyTorch's name
    return tuple(input.shape) == tuple(other.shape)


def is_signed(input: Tensor) -> bool:  # noqa: A002
    """Whether the dtype holds negative values (floats and signed integers)."""
    return input.dtype.is_floating_point or input.dtype.np.kind == "i"


def is_inference(input: Tensor) -> bool:  # noqa: A002
    """Whether the tensor was made under inference_mode."""
    return bool(input._vc.inference)


def is_conj(input: Tensor) -> bool:  # noqa: A002
    """Real tensors only here: never a lazily conjugated view."""
    return False


def is_neg(input: Tensor) -> bool:  # noqa: A002
    return False


def _is_cpu(self: Tensor) -> bool:
    return self.device == "cpu"


def _real(self: Tensor) -> Tensor:
    """Tensor.real of a real tensor: the tensor itself."""
    return self


def _imag(self: Tensor) -> Tensor:
    raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")


# --- aliases and small ops ----------------------------------------------------------------------


def rsub(input: Tensor, other: Any, alpha: Any = 1, *,  # noqa: A002
         out: Tensor | None = None) -> Tensor:
    """other - alpha * input."""
    if out is not None:
        return F.written_to(out, rsub(input, other, alpha), "rsub")
    return F.named(F.sub(other, input, alpha=alpha), f"RsubBackward{int(not isinstance(other, Tensor))}")


def row_stack(tensors: Sequence[Tensor], *, out: Tensor | None = None) -> Tensor:
    """vstack's other name."""
    from .more_ops import _check_sequence, vstack

    result = vstack(_check_sequence("vstack", tensors, "row_stack"))
    return result if out is None else F.written_to(out, result, "row_stack")


def split_with_sizes(input: Tensor, split_sizes: Sequence[int], dim: int = 0  # noqa: A002
                     ) -> tuple[Tensor, ...]:
    return input.split_with_sizes(split_sizes, dim)


def unsafe_split(input: Tensor, split_size: int, dim: int = 0) -> tuple[Tensor, ...]:  # noqa: A002
    """split, whose pieces PyTorch does not track as views: writable in place."""
    return _unsafe(T.split(input, split_size, dim), input, dim, "UnsafeSplitBackward0")


def unsafe_split_with_sizes(input: Tensor, split_sizes: Sequence[int],  # noqa: A002
                            dim: int = 0) -> tuple[Tensor, ...]:
    return _unsafe(input.split_with_sizes(split_sizes, dim), input, dim,
                   "UnsafeSplitWithSizesBackward0")


def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:  # noqa: A002
    return _unsafe(T.chunk(input, chunks, dim), input, dim, "UnsafeSplitBackward0")


def _unsafe(pieces: Sequence[Tensor], input: Tensor, dim: int,  # noqa: A002
            name: str) -> tuple[Tensor, ...]:
    """The pieces split checked and made, again as outputs of PyTorch's unsafe node."""
    d = T._dim(input, dim)
    return T.split_pieces(input, [p.shape[d] for p in pieces], d, name, unsafe=True)


def sum_to_size(self: Tensor, *size: Any) -> Tensor:
    """self summed down to ``size``, which must expand to self's shape."""
    target = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (list, tuple)) \
        else tuple(size)
    shape = tuple(self.shape)
    lead = len(shape) - len(target)
    if lead < 0 or any(t not in (1, s) for t, s in zip(target, shape[lead:])):
        raise RuntimeError(f"size {{{list(target)}}} is not expandable to size "
                           f"{{{list(shape)}}}.")
    if not target:  # PyTorch's sum_to: a sum, even of a 0-d self (an integer one's is int64)
        return F.sum(self)
    if target == shape:
        return self
    keep = tuple(i + lead for i, t in enumerate(target) if t == 1 and shape[i + lead] != 1)
    out = F.sum(self, tuple(range(lead)) + keep, keepdim=True) if lead or keep else self
    return F.reshape(out, target)


def fill(input: Tensor, value: Any) -> Tensor:  # noqa: A002
    """A new tensor of input's shape and dtype filled with ``value``."""
    node = f"FillBackward{int(isinstance(value, Tensor))}"  # PyTorch's, by value's overload
    return F.named(F.fill_(F.clone(input), value), node)


def detach(input: Tensor) -> Tensor:  # noqa: A002
    return input.detach()


def detach_(input: Tensor) -> Tensor:  # noqa: A002
    return input.detach_()


def scalar_tensor(s: Any, *, dtype: Any = None, layout: Any = None, device: Any = None,
                  pin_memory: bool | None = None, requires_grad: bool = False) -> Tensor:
    """A 0-d tensor of ``s``, of the default float dtype unless given (a bool or int too)."""
    from ..creation import full
    from .more_ops import get_default_dtype

    check_factory_options("scalar_tensor", layout, pin_memory)
    return full((), s, dtype=dtype or get_default_dtype(), device=device,
                requires_grad=requires_grad)


_RANGE_DEPRECATED = (
    "torch.range is deprecated and will be removed in a future release because its behavior "
    "is inconsistent with Python's range builtin. Instead, use torch.arange, which produces "
    "values in [start, end).")


def range_(start: Any, end: Any, step: Any = 1, *, dtype: Any = None, layout: Any = None,
           device: Any = None, pin_memory: bool | None = None, requires_grad: bool = False,
           out: Tensor | None = None) -> Tensor:
    """Deprecated: start to end inclusive by step, of the default float dtype unless given."""
    from ..creation import tensor
    from .more_ops import get_default_dtype

    check_factory_options("range", layout, pin_memory)
    warnings.warn(_RANGE_DEPRECATED, UserWarning, stacklevel=2)
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0 and end != start:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    n = int(math.floor((end - start) / step)) + 1
    dt = D.as_dtype(dtype) if dtype is not None else (out.dtype if out is not None
                                                       else get_default_dtype())
    values = np.asarray([start + i * step for i in builtins.range(n)], dtype=np.float64)
    result = tensor(values.astype(dt.np), dtype=dt, device=device,
                    requires_grad=requires_grad)
    return result if out is None else F.written_to(out, result, "range")


# --- legacy constructors and resizes ------------------------------------------------------------


def new(self: Tensor, *args: Any, device: Any = None) -> Tensor:
    """The legacy constructor Tensor.new: no argument: empty; sizes (ints or a Size):
    uninitialized of that shape; a sequence: its values; all of self's dtype and device."""
    return legacy_new(self.dtype, self.device, args, device)


def legacy_new(dtype: D.DType, default_device: Any, args: tuple[Any, ...], device: Any = None,
               any_tensor: bool = False) -> Tensor:
    """PyTorch's legacy constructors (``x.new(...)``, ``rt.FloatTensor(...)``,
    ``rt.Tensor(...)``) of ``dtype``: no argument: empty, of size (0,); sizes (ints or a
    Size): uninitialized of that shape; one sequence (or array): its values; one tensor: a
    detach of it, of ``dtype`` unless ``any_tensor``."""
    from ..creation import empty, tensor

    dev = device if device is not None else default_device
    if not args:
        return empty(0, dtype=dtype, device=dev)
    if len(args) == 1 and isinstance(args[0], Tensor):
        src = args[0]
        if src.dtype is not dtype and not any_tensor:
            raise TypeError(f"expected {dtype} (got {src.dtype})")
        return src.detach()
    if len(args) == 1 and isinstance(args[0], Size):
        return empty(args[0], dtype=dtype, device=dev)
    if all(type(a) is int for a in args):
        return empty(args, dtype=dtype, device=dev)
    if len(args) == 1 and isinstance(args[0], (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type(args[0]).__name__}'")
    # any sequence, as PyTorch's PySequence_Check: a range, an array.array, a user's
    if len(args) == 1 and isinstance(args[0], (Sequence, np.ndarray)):
        return tensor(args[0], dtype=dtype, device=dev)
    if len(args) == 1:
        raise TypeError(f"new(): data must be a sequence (got {type(args[0]).__name__})")
    if type(args[0]) is not int:  # no overload takes it: PyTorch's parser lists them
        got = ", ".join(type(a).__name__ for a in args)
        raise TypeError(f"new() received an invalid combination of arguments - got ({got}), "
                        "but expected one of:\n * (*, torch.device device = None)\n * "
                        "(torch.Storage storage)\n * (Tensor other)\n * (tuple of ints size, *, "
                        "torch.device device = None)\n * (object data, *, torch.device device = "
                        "None)\n")
    bad = next(i for i, a in enumerate(args) if type(a) is not int)
    raise TypeError(f"new(): argument 'size' failed to unpack the object at pos {bad + 1} with "
                    f"error \"type must be tuple of ints,but got {type(args[bad]).__name__}\"")


def _resized(self: Tensor, sizes: tuple[int, ...]) -> Tensor:
    numel = math.prod(sizes)
    if self.numel() != numel:
        raise RuntimeError(
            f"requested resize to {'x'.join(map(str, sizes))} ({numel} elements in total), but "
            f"the given tensor has a size of {'x'.join(map(str, self.shape))} ({self.numel()} "
            "elements). autograd's resize can only change the shape of a given tensor, while "
            "preserving the number of elements. ")
    return F.reshape(self, sizes)


def resize(self: Tensor, *sizes: Any) -> Tensor:
    """Deprecated: self reshaped to ``sizes`` of the same number of elements."""
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    if len(sizes) == 1 and isinstance(sizes[0], (list, tuple)):
        sizes = tuple(sizes[0])
    return _resized(self, tuple(sizes))


def resize_as(self: Tensor, tensor: Tensor) -> Tensor:
    """Deprecated: self reshaped to tensor's shape, of the same number of elements."""
    warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
    return _resized(self, tuple(tensor.shape))


def _no_derivative_copy(value: Tensor, input: Tensor) -> Tensor:  # noqa: A002
    """detach_copy: PyTorch records it with no derivative (backward through it raises)."""
    from .composite import no_derivative

    return no_derivative(F.clone(value), (input,), RuntimeError,
                         "derivative for aten::detach_copy is not implemented")


# --- copies of views ----------------------------------------------------------------------------


def _copy_named(view: Tensor) -> Tensor:
    """A copy of ``view`` whose node is PyTorch's view_copy op's: the view's, ``_copy``
    appended (SliceBackward0_copy)."""
    fn = view._grad_fn if view._base is None else view.grad_fn
    if type(fn).__name__ == "NotImplemented":  # detach_copy's: a copy already
        return view
    copy = F.clone(view)
    return copy if fn is None or copy is view else F.named(copy, fn.name() + "_copy")


def _copy_of(view: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``torch.<name>``: the view's values in new memory (a tensor, or a tuple of them)."""
    def fn(input: Tensor, *args: Any, out: Any = None, **kwargs: Any) -> Any:  # noqa: A002
        result = view(input, *args, **kwargs)
        if isinstance(result, (list, tuple)):
            copies = tuple(_copy_named(t) for t in result)
            if copies and copies[0]._grad_fn is not None:
                from .composite import one_node

                one_node(copies, copies[0]._grad_fn.name())
            if out is not None:
                for o, c in zip(out, copies):
                    F.written_to(o, c, name)
                return None
            return copies
        copy = _copy_named(result)
        return copy if out is None else F.written_to(out, copy, name)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``torch.{name}``: a copy of the view ``{view.__name__}``."
    sig = inspect.signature(view)
    fn.__signature__ = sig.replace(parameters=[  # type: ignore[attr-defined]
        *sig.parameters.values(),
        inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None)])
    return fn


def _slice(input: Tensor, dim: int = 0, start: int | None = None,  # noqa: A002
           end: int | None = None, step: int = 1) -> Tensor:
    d = wrap_dim(dim, input.ndim)
    key = (slice(None),) * d + (slice(start, end, step),)
    return F.getitem(input, key)


def _view(input: Tensor, size: Any = None, dtype: Any = None) -> Tensor:  # noqa: A002
    """view(size) or view(dtype) (a dtype given in size's place is told by its type)."""
    if isinstance(size, D.DType):
        size, dtype = None, size
    if dtype is not None:
        return input.view(dtype)
    return input.view(*size)


_VIEWS: dict[str, Callable[..., Any]] = {
    "alias": lambda input: F.named(F.reshape(input, tuple(input.shape)), "AliasBackward0"),
    "detach": lambda input: _no_derivative_copy(input.detach(), input),
    "diagonal": lambda input, offset=0, dim1=0, dim2=1: input.diagonal(offset, dim1, dim2),
    "expand": lambda input, size, *, implicit=False: F.expand_view(input, *size),
    "permute": lambda input, dims: F.permute(input, *dims),
    "select": lambda input, dim, index: input.select(dim, index),
    "slice": _slice,
    "split": lambda input, split_size, dim=0: T.split(input, split_size, dim),
    "split_with_sizes": lambda input, split_sizes, dim=0: input.split_with_sizes(split_sizes,
                                                                                 dim),
    "squeeze": lambda input, dim=None: F.squeeze_view(input) if dim is None else
    F.squeeze_view(input, dim),
    "t": lambda input: F.t_(input),
    "transpose": lambda input, dim0, dim1: F.transpose(input, dim0, dim1),
    "unbind": lambda input, dim=0: T.unbind(input, dim),
    "unfold": lambda input, dimension, size, step: input.unfold(dimension, size, step),
    "unsqueeze": lambda input, dim: F.unsqueeze(input, dim),
    "view": _view,
}
for _name, _fn in _VIEWS.items():
    _fn.__name__ = _name


# --- scatters and index ops ---------------------------------------------------------------------


def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0,  # noqa: A002
                     dim2: int = 1) -> Tensor:
    """input with its diagonal (``offset``, ``dim1``, ``dim2``, as Tensor.diagonal) replaced by
    src (differentiable in both)."""
    from ..creation import arange

    d1, d2 = wrap_dim(dim1, input.ndim), wrap_dim(dim2, input.ndim)
    expected = tuple(input.diagonal(offset, d1, d2).shape)
    if tuple(src.shape) != expected:
        raise RuntimeError("expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(expected)}")
    order = [d for d in builtins.range(input.ndim) if d not in (d1, d2)] + [d1, d2]
    out = F.clone(F.permute(input, *order))
    n = expected[-1]
    r0, c0 = (0, offset) if offset >= 0 else (-offset, 0)
    rows = arange(r0, r0 + n, device=input.device)
    cols = arange(c0, c0 + n, device=input.device)
    F.setitem(out, (Ellipsis, rows, cols), src)
    inverse = [order.index(i) for i in builtins.range(input.ndim)]
    return F.named(F.permute(out, *inverse), "DiagonalScatterBackward0")


def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False  # noqa: A002
        ) -> Tensor:
    """A copy of input with source put at the flat positions ``index``."""
    return F.clone(input).put_(index, source, accumulate)


_REDUCES = ("prod", "mean", "amax", "amin")


def index_reduce(input: Tensor, dim: int, index: Tensor, source: Tensor,  # noqa: A002
                 reduce: str, *, include_self: bool = True, out: Tensor | None = None
                 ) -> Tensor:
    """input with source's slices along ``dim`` reduced into the slices ``index`` names."""
    if out is not None:
        return F.written_to(out, index_reduce(input, dim, index, source, reduce,
                                              include_self=include_self), "index_reduce")
    if reduce not in _REDUCES:
        raise RuntimeError("index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    d = wrap_dim(dim, max(input.ndim, 1))
    from .extra_ops import check_index_source

    check_index_source("index_reduce", input, d, index, source)
    _warn_index_reduce_beta()
    n = index.numel()
    shape = [1] * source.ndim
    if source.ndim:
        shape[d] = n
    idx = F.expand(F.reshape(F.cast(index, D.int64), tuple(shape)), *source.shape)
    return F.named(T.scatter_reduce(input, d, idx, source, reduce, include_self=include_self),
                   "IndexReduceBackward0")


_INDEX_REDUCE_WARNED = [False]


def _warn_index_reduce_beta() -> None:
    """PyTorch's TORCH_WARN_ONCE that index_reduce is a beta API."""
    from .settings import is_warn_always_enabled

    if not _INDEX_REDUCE_WARNED[0] or is_warn_always_enabled():
        _INDEX_REDUCE_WARNED[0] = True
        warnings.warn("index_reduce() is in beta and the API may change at any time.",
                      UserWarning, stacklevel=3)


def index_reduce_(self: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                  include_self: bool = True) -> Tensor:
    return F.overwrite(self, index_reduce(F.clone(self), dim, index, source, reduce,
                                          include_self=include_self))


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1,  # noqa: A002
                   out: Tensor | None = None) -> Tensor:
    """nonzero's (n, ndim) indices cut or padded with fill_value to ``size`` rows."""
    from ..creation import full
    from .extra_ops import nonzero

    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, but got "
                           f"size: {size}")
    found = nonzero(input)
    rows = found[:size]
    if rows.shape[0] < size:
        pad = full((size - rows.shape[0], input.ndim), fill_value, dtype=D.int64,
                   device=input.device)
        rows = F.cat([rows, pad], 0)
    return rows if out is None else F.written_to(out, rows, "nonzero_static")


def conj_physical(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The conjugate, materialized: a real tensor is returned as it is."""
    return input if out is None else F.written_to(out, F.clone(input), "conj_physical")


def conj_physical_(input: Tensor) -> Tensor:  # noqa: A002
    return input


def imag(input: Tensor) -> Tensor:  # noqa: A002
    return _imag(input)


def as_subclass(self: Tensor, cls: type) -> Tensor:
    """An alias of self (its memory and autograd history: a view, as PyTorch's
    AliasBackward0) of the Tensor subclass ``cls``."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"as_subclass(): argument 'cls' must be a subclass of Tensor, not "
                        f"{cls!r}")
    alias = F.named(self.view(tuple(self.shape)), "AliasBackward0")
    alias.__class__ = cls
    return alias


def to_dense(self: Tensor, dtype: Any = None, *, masked_grad: bool | None = None) -> Tensor:
    """A strided tensor is dense already: self (cast to ``dtype`` where given)."""
    return self if dtype is None else self.to(dtype)


def _false(self: Tensor) -> bool:
    return False


# --- the names ----------------------------------------------------------------------------------

FUNCTIONS: dict[str, Callable[..., Any]] = {
    "is_same_size": is_same_size, "is_signed": is_signed, "is_inference": is_inference,
    "is_conj": is_conj, "is_neg": is_neg, "rsub": rsub, "row_stack": row_stack,
    "split_with_sizes": split_with_sizes, "unsafe_split": unsafe_split,
    "unsafe_split_with_sizes": unsafe_split_with_sizes, "unsafe_chunk": unsafe_chunk,
    "fill": fill, "detach": detach, "detach_": detach_, "scalar_tensor": scalar_tensor,
    "range": range_, "diagonal_scatter": diagonal_scatter, "put": put,
    "index_reduce": index_reduce, "nonzero_static": nonzero_static,
    "conj_physical": conj_physical, "conj_physical_": conj_physical_, "imag": imag,
    **{f"{n}_copy": _copy_of(v, f"{n}_copy") for n, v in _VIEWS.items()},
}

METHODS: dict[str, Any] = {
    "is_same_size": is_same_size, "is_signed": is_signed, "is_conj": is_conj,
    "is_neg": is_neg, "is_cpu": property(_is_cpu), "real": property(_real),
    "imag": property(_imag), "multiply": F.mul, "multiply_": F.mul_, "subtract": F.sub,
    "subtract_": F.sub_, "negative": F.neg, "negative_": F.neg_, "sum_to_size": sum_to_size,
    "new": new, "resize": resize, "resize_as": resize_as, "unsafe_split": unsafe_split,
    "unsafe_split_with_sizes": unsafe_split_with_sizes, "unsafe_chunk": unsafe_chunk,
    "diagonal_scatter": diagonal_scatter, "select_scatter": extras.select_scatter,
    "slice_scatter": extras.slice_scatter, "put": put, "index_reduce": index_reduce,
    "index_reduce_": index_reduce_, "nonzero_static": nonzero_static,
    "conj_physical": conj_physical, "conj_physical_": conj_physical_,
    "const_data_ptr": lambda self: self.data_ptr(), "to_dense": to_dense,
    "as_subclass": as_subclass,
    **{f"is_{n}": property(_false) for n in (
        "meta sparse sparse_csr quantized nested mkldnn xla xpu mps ipu vulkan maia "
        "mtia").split()},
}
