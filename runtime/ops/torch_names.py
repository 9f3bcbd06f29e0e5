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
from .inplace import ERR_INTERNAL_OVERLAP
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
    return F.sub(other, input, alpha=alpha, out=out)


def row_stack(tensors: Sequence[Tensor], *, out: Tensor | None = None) -> Tensor:
    """vstack's other name."""
    from .more_ops import vstack

    result = vstack(tensors)
    return result if out is None else F.written_to(out, result, "row_stack")


def split_with_sizes(input: Tensor, split_sizes: Sequence[int], dim: int = 0  # noqa: A002
                     ) -> tuple[Tensor, ...]:
    return input.split_with_sizes(split_sizes, dim)


def unsafe_split(input: Tensor, split_size: int, dim: int = 0) -> tuple[Tensor, ...]:  # noqa: A002
    """split, whose pieces PyTorch does not track as views (the same values here)."""
    return tuple(T.split(input, split_size, dim))


def unsafe_split_with_sizes(input: Tensor, split_sizes: Sequence[int],  # noqa: A002
                            dim: int = 0) -> tuple[Tensor, ...]:
    return tuple(input.split_with_sizes(split_sizes, dim))


def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:  # noqa: A002
    return tuple(T.chunk(input, chunks, dim))


def sum_to_size(self: Tensor, *size: Any) -> Tensor:
    """self summed down to ``size``, which must expand to self's shape."""
    target = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (list, tuple)) \
        else tuple(size)
    shape = tuple(self.shape)
    lead = len(shape) - len(target)
    if lead < 0 or any(t not in (1, s) for t, s in zip(target, shape[lead:])):
        raise RuntimeError(f"size {{{list(target)}}} is not expandable to size "
                           f"{{{list(shape)}}}.")
    if target == shape:
        return self
    keep = tuple(i + lead for i, t in enumerate(target) if t == 1 and shape[i + lead] != 1)
    out = F.sum(self, tuple(range(lead)) + keep, keepdim=True) if lead or keep else self
    return F.reshape(out, target)


def fill(input: Tensor, value: Any) -> Tensor:  # noqa: A002
    """A new tensor of input's shape and dtype filled with ``value``."""
    return F.fill_(F.clone(input), value)


def detach(input: Tensor) -> Tensor:  # noqa: A002
    return input.detach()


def detach_(input: Tensor) -> Tensor:  # noqa: A002
    return input.detach_()


def scalar_tensor(s: Any, *, dtype: Any = None, layout: Any = None, device: Any = None,
                  pin_memory: bool | None = None, requires_grad: bool = False) -> Tensor:
    """A 0-d tensor of ``s``, of the default float dtype unless given (a bool or int too)."""
    from ..creation import full
    from .more_ops import get_default_dtype

    _refuse_options("scalar_tensor", layout, pin_memory)
    return full((), s, dtype=dtype or get_default_dtype(), device=device,
                requires_grad=requires_grad)


def _refuse_options(name: str, layout: Any, pin_memory: bool | None) -> None:
    """PyTorch's layout= (strided tensors only here) and pin_memory= (no pinned memory)."""
    if layout is not None and str(layout).rsplit(".", 1)[-1] != "strided":
        raise NotImplementedError(f"{name}(): only strided tensors here, not layout={layout}")
    if pin_memory:
        raise NotImplementedError(f"{name}(): no pinned host memory here (pin_memory=True)")


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

    _refuse_options("range", layout, pin_memory)
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


def empty_strided(size: Sequence[int], stride: Sequence[int], *, dtype: Any = None,
                  layout: Any = None, device: Any = None, pin_memory: bool | None = None,
                  requires_grad: bool = False) -> Tensor:
    """An uninitialized tensor of ``size`` laid out with ``stride`` (in elements)."""
    from ..creation import empty

    _refuse_options("empty_strided", layout, pin_memory)
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError("as_strided: Negative strides are not supported at the moment, "
                           f"got strides: {list(stride)}")
    extent = 1 + sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else 0
    flat = empty(extent, dtype=dtype, device=device)
    item = flat._data.itemsize
    data = np.lib.stride_tricks.as_strided(flat._data, size, tuple(s * item for s in stride))
    out = Tensor._make(data, flat.dtype, flat.device)
    out.requires_grad_(requires_grad)
    return out


_NOT_WRITABLE = (
    "The given buffer is not writable, and PyTorch does not support non-writable tensors. This "
    "means you can write to the underlying (supposedly non-writable) buffer using the tensor. "
    "You may want to copy the buffer to protect its data or make it writable before converting "
    "it to a tensor. This type of warning will be suppressed for the rest of this program.")


def frombuffer(buffer: Any, *, dtype: Any, count: int = -1, offset: int = 0,
               requires_grad: bool = False) -> Tensor:
    """A 1-d tensor over the memory of an object of the buffer protocol (shared, as
    PyTorch's: writes to one show in the other)."""
    dt = D.as_dtype(dtype)
    view = memoryview(buffer)
    length = view.nbytes
    if length <= 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if not 0 <= offset < length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({length} bytes) minus 1")
    if count <= 0 and (length - offset) % dt.itemsize:
        raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} "
                         f"bytes) must be a multiple of element size ({dt.itemsize})")
    if count > 0 and count * dt.itemsize > length - offset:
        raise ValueError(f"requested buffer length ({count} * {dt.itemsize} bytes) after "
                         f"offset ({offset} bytes) must not be greater than actual buffer "
                         f"length ({length} bytes)")
    if view.readonly:  # numpy keeps it read-only: a write raises rather than corrupt it
        warnings.warn(_NOT_WRITABLE, UserWarning, stacklevel=2)
    data = np.frombuffer(buffer, dtype=dt.np, count=count, offset=offset)
    out = Tensor._make(data, dt, "cpu")
    out.requires_grad_(requires_grad)
    return out


def asarray(obj: Any, *, dtype: Any = None, device: Any = None, copy: bool | None = None,
            requires_grad: bool | None = None) -> Tensor:
    """obj as a tensor, sharing memory where it can (a tensor, a numpy array, a buffer) unless
    ``copy=True``; ``copy=False`` refuses a conversion that must copy."""
    from ..creation import as_tensor, tensor

    if isinstance(obj, Tensor):
        result = as_tensor(obj, dtype=dtype, device=device)
        if copy:
            result = F.clone(result) if result is obj else result
        elif copy is False and result is not obj and (
                result.dtype is not obj.dtype or result.device != obj.device):
            raise ValueError("can't alias tensor from device 'cpu' to 'cpu'.")
    elif copy:
        result = tensor(obj, dtype=dtype, device=device)
    else:
        result = as_tensor(obj, dtype=dtype, device=device)
    if requires_grad:
        result = result.detach() if result.grad_fn is not None else result
        result.requires_grad_(True)
    return result


# --- legacy constructors and resizes ------------------------------------------------------------


def new(self: Tensor, *args: Any, device: Any = None) -> Tensor:
    """The legacy constructor Tensor.new: no argument: empty; sizes (ints or a Size):
    uninitialized of that shape; a sequence: its values; all of self's dtype and device."""
    from ..creation import empty, tensor

    dev = device if device is not None else self.device
    if not args:
        return empty(0, dtype=self.dtype, device=dev)
    if len(args) == 1 and isinstance(args[0], Tensor):
        src = args[0]
        if src.dtype is not self.dtype:
            raise TypeError(f"expected {self.dtype} (got {src.dtype})")
        return src.detach()
    if all(isinstance(a, int) for a in args) or len(args) == 1 and isinstance(args[0], Size):
        return empty(*args, dtype=self.dtype, device=dev)
    if len(args) == 1 and isinstance(args[0], (list, tuple, np.ndarray)):
        return tensor(args[0], dtype=self.dtype, device=dev)
    raise TypeError(f"new(): invalid arguments {tuple(type(a).__name__ for a in args)}")


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


def _copy_of(view: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``torch.<name>``: the view's values in new memory (a tensor, or a tuple of them)."""
    def fn(input: Tensor, *args: Any, out: Any = None, **kwargs: Any) -> Any:  # noqa: A002
        result = view(input, *args, **kwargs)
        if isinstance(result, (list, tuple)):
            copies = tuple(F.clone(t) for t in result)
            if out is not None:
                for o, c in zip(out, copies):
                    F.written_to(o, c, name)
                return None
            return copies
        copy = F.clone(result)
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
    "alias": lambda input: F.reshape(input, tuple(input.shape)),
    "detach": lambda input: _no_derivative_copy(input.detach(), input),
    "diagonal": lambda input, offset=0, dim1=0, dim2=1: input.diagonal(offset, dim1, dim2),
    "expand": lambda input, size, *, implicit=False: F.expand(input, *size),
    "permute": lambda input, dims: F.permute(input, *dims),
    "select": lambda input, dim, index: input.select(dim, index),
    "slice": _slice,
    "split": lambda input, split_size, dim=0: T.split(input, split_size, dim),
    "split_with_sizes": lambda input, split_sizes, dim=0: input.split_with_sizes(split_sizes,
                                                                                 dim),
    "squeeze": lambda input, dim=None: F.squeeze(input) if dim is None else
    F.squeeze(input, dim),
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
    if index.ndim > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector")
    if index.dtype not in (D.int64, D.int32):
        raise TypeError("index_reduce_(): Expected dtype int32/int64 for index but got: "
                        f"{D.scalar_type_name(index.dtype)}")
    if source.dtype is not input.dtype:
        raise RuntimeError("index_reduce_(): self (" + D.scalar_type_name(input.dtype) +
                           ") and source (" + D.scalar_type_name(source.dtype) +
                           ") must have the same scalar type")
    n = index.numel()
    if source.ndim and source.shape[d] != n:
        raise RuntimeError("index_reduce_(): Number of indices (" + str(n) + ") should be "
                           "equal to source.size(dim) (" + str(source.shape[d]) + ")")
    shape = [1] * source.ndim
    if source.ndim:
        shape[d] = n
    idx = F.expand(F.reshape(F.cast(index, D.int64), tuple(shape)), *source.shape)
    return F.named(T.scatter_reduce(input, d, idx, source, reduce, include_self=include_self),
                   "IndexReduceBackward0")


def index_reduce_(self: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                  include_self: bool = True) -> Tensor:
    return F.overwrite(self, index_reduce(F.clone(self), dim, index, source, reduce,
                                          include_self=include_self))


# --- as_strided copies ---------------------------------------------------------------------------


def _strided_positions(input: Tensor, size: Sequence[int], stride: Sequence[int],  # noqa: A002
                       storage_offset: int | None) -> Tensor:
    """The flat positions in input (a contiguous tensor: its storage, from its first element)
    that ``as_strided(size, stride, storage_offset)`` reads, PyTorch's checks first."""
    from ..creation import tensor
    from .storage import storage_offset as own_offset

    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError("as_strided: Negative strides are not supported at the moment, "
                           f"got strides: {list(stride)}")
    if not input.is_contiguous():
        raise NotImplementedError("as_strided of a non-contiguous tensor is not supported here "
                                  "(it reads the storage beneath the view): use .contiguous()")
    own = own_offset(input)
    offset = own if storage_offset is None else storage_offset
    extent = offset + 1 + sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else 0
    available = own + input.numel()
    if extent > available:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage "
                           f"offset {offset}, and itemsize {input.dtype.itemsize} requiring a "
                           f"storage size of {extent * input.dtype.itemsize} are out of bounds "
                           f"for storage of size {available * input.dtype.itemsize}")
    if offset < own:
        raise NotImplementedError("as_strided before the tensor's own first element is not "
                                  "supported here")
    positions = np.full(size, offset - own, dtype=np.int64)
    for d, (n, s) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[d] = n
        positions = positions + (np.arange(n, dtype=np.int64) * s).reshape(shape)
    return tensor(positions, device=input.device)


def as_strided_copy(input: Tensor, size: Sequence[int], stride: Sequence[int],  # noqa: A002
                    storage_offset: int | None = None, *, out: Tensor | None = None
                    ) -> Tensor:
    """The elements ``as_strided`` would show, copied (overlaps: their gradients add)."""
    positions = _strided_positions(input, size, stride, storage_offset)
    result = F.named(F.getitem(F.reshape(input, (-1,)), positions), "AsStridedBackward0")
    return result if out is None else F.written_to(out, result, "as_strided_copy")


def as_strided_scatter(input: Tensor, src: Tensor, size: Sequence[int],  # noqa: A002
                       stride: Sequence[int], storage_offset: int | None = None) -> Tensor:
    """A copy of input with the elements ``as_strided`` would show replaced by src."""
    positions = _strided_positions(input, size, stride, storage_offset)
    if tuple(src.shape) != tuple(positions.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(positions.shape)}")
    if np.unique(positions.numpy()).size != positions.numel():
        raise RuntimeError(ERR_INTERNAL_OVERLAP)
    flat = F.clone(F.reshape(input, (-1,)))
    F.setitem(flat, positions, src)
    return F.named(F.reshape(flat, tuple(input.shape)), "AsStridedScatterBackward0")


# --- Python callables over elements, and small methods ------------------------------------------


def _refuse_grad(self: Tensor, name: str) -> None:
    if self.requires_grad:
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use "
                           f"var.detach().{name}() instead.")
    if self.device != "cpu":
        raise TypeError(f"{name} is only implemented on CPU tensors")


def _write_values(self: Tensor, values: list[Any]) -> Tensor:
    self._data[...] = np.asarray(values).reshape(self._data.shape).astype(self.dtype.np)
    return self


def apply_(self: Tensor, callable: Callable[[Any], Any]) -> Tensor:  # noqa: A002
    """Each element replaced by callable(element) (a Python number; CPU only, no history)."""
    _refuse_grad(self, "apply_")
    return _write_values(self, [callable(v) for v in self._data.reshape(-1).tolist()])


def map_(self: Tensor, tensor: Tensor, callable: Callable[[Any, Any], Any]  # noqa: A002
         ) -> Tensor:
    """Each element replaced by callable(element, tensor's element) (tensor broadcast)."""
    _refuse_grad(self, "map_")
    other = np.broadcast_to(tensor._data, self._data.shape).reshape(-1).tolist()
    return _write_values(self, [callable(a, b) for a, b in
                                zip(self._data.reshape(-1).tolist(), other)])


def map2_(self: Tensor, x: Tensor, y: Tensor,
          callable: Callable[[Any, Any, Any], Any]) -> Tensor:  # noqa: A002
    """Each element replaced by callable(element, x's, y's) (x and y broadcast)."""
    _refuse_grad(self, "map2_")
    xs = np.broadcast_to(x._data, self._data.shape).reshape(-1).tolist()
    ys = np.broadcast_to(y._data, self._data.shape).reshape(-1).tolist()
    return _write_values(self, [callable(a, b, c) for a, b, c in
                                zip(self._data.reshape(-1).tolist(), xs, ys)])


def dim_order(self: Tensor, *, ambiguity_check: bool = False) -> tuple[int, ...]:
    """The dims from outermost to innermost in memory (by stride, ties in dim order)."""
    strides = self.stride()
    return tuple(sorted(builtins.range(self.ndim), key=lambda d: -strides[d]))


def new_empty_strided(self: Tensor, size: Sequence[int], stride: Sequence[int], *,
                      dtype: Any = None, layout: Any = None, device: Any = None,
                      pin_memory: bool | None = None, requires_grad: bool = False) -> Tensor:
    return empty_strided(size, stride, dtype=dtype or self.dtype, layout=layout,
                         device=device or self.device, pin_memory=pin_memory,
                         requires_grad=requires_grad)


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


def _false(self: Tensor) -> bool:
    return False


# --- DLPack and control flow --------------------------------------------------------------------


def from_dlpack(ext_tensor: Any, *, device: Any = None, copy: bool | None = None) -> Tensor:
    """A tensor over the memory of an object of the DLPack protocol (a numpy array, a PyTorch
    or JAX CPU tensor, a DLPack capsule), shared unless ``copy=True``."""
    from ..creation import from_numpy

    if device is not None and str(device) != "cpu":
        raise NotImplementedError(f"from_dlpack(): only the CPU here, not device={device}")
    if type(ext_tensor).__name__ == "PyCapsule":
        ext_tensor = _Capsule(ext_tensor)
    # a bare capsule without flags (an unversioned one) comes read-only: a write raises
    return from_numpy(np.from_dlpack(ext_tensor, copy=copy))


class _Capsule:
    """A bare DLPack capsule (to_dlpack's) as numpy's from_dlpack reads one."""

    def __init__(self, capsule: Any) -> None:
        self.capsule = capsule

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self.capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)  # kDLCPU


def to_dlpack(tensor: Tensor) -> Any:
    """A DLPack capsule of the tensor's memory (no copy; CPU tensors; a versioned one, which
    carries whether it may be written)."""
    return tensor.__dlpack__(max_version=(1, 0))


def _dlpack(self: Tensor, **kwargs: Any) -> Any:
    if self.device != "cpu":
        return self._data.__dlpack__(**kwargs)
    if self.requires_grad:
        raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
    return self._data.__dlpack__(**kwargs)


def _dlpack_device(self: Tensor) -> Any:
    return self._data.__dlpack_device__()


def cond(pred: Any, true_fn: Callable[..., Any], false_fn: Callable[..., Any],
         operands: tuple[Any, ...] | list[Any] = ()) -> Any:
    """true_fn(*operands) if pred else false_fn(*operands), run eagerly (a captured step
    whose pred is a tensor falls back to eager at this line, as any value read in Python)."""
    if isinstance(pred, Tensor):
        if pred.numel() != 1:
            raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got "
                               f"{pred}.")
        taken = bool(pred.item())
    elif isinstance(pred, (bool, int, float)):
        taken = bool(pred)
    else:
        raise RuntimeError(f"Expected pred to be bool or tensor, but got {pred}.")
    if not isinstance(operands, (tuple, list)):
        raise RuntimeError(f"Expect operands to be a tuple of possibly nested dict/list/tuple "
                           f"that only consists of tensor leaves, but got {operands}.")
    return (true_fn if taken else false_fn)(*operands)


def while_loop(cond_fn: Callable[..., Any], body_fn: Callable[..., Any],
               carried_inputs: tuple[Any, ...] | list[Any]) -> tuple[Any, ...]:
    """body_fn applied to the carried values while cond_fn of them holds, run eagerly; the
    final carried values."""
    if not isinstance(carried_inputs, (tuple, list)):
        raise RuntimeError(f"carried_inputs must be a tuple or list, got "
                           f"{type(carried_inputs).__name__}")
    carried = tuple(carried_inputs)
    while True:
        go = cond_fn(*carried)
        if isinstance(go, Tensor):
            if go.numel() != 1 or go.dtype is not D.bool_:
                raise RuntimeError(f"cond_fn must return a boolean scalar tensor, got {go}")
            go = bool(go.item())
        if not go:
            return carried
        out = body_fn(*carried)
        out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        if len(out) != len(carried):
            raise RuntimeError(f"body_fn must return as many values as it takes: got "
                               f"{len(out)} for {len(carried)}")
        carried = out


# --- the names ----------------------------------------------------------------------------------

FUNCTIONS: dict[str, Callable[..., Any]] = {
    "is_same_size": is_same_size, "is_signed": is_signed, "is_inference": is_inference,
    "is_conj": is_conj, "is_neg": is_neg, "rsub": rsub, "row_stack": row_stack,
    "split_with_sizes": split_with_sizes, "unsafe_split": unsafe_split,
    "unsafe_split_with_sizes": unsafe_split_with_sizes, "unsafe_chunk": unsafe_chunk,
    "fill": fill, "detach": detach, "detach_": detach_, "scalar_tensor": scalar_tensor,
    "range": range_, "empty_strided": empty_strided, "frombuffer": frombuffer,
    "asarray": asarray, "diagonal_scatter": diagonal_scatter, "put": put,
    "index_reduce": index_reduce, "as_strided_copy": as_strided_copy,
    "as_strided_scatter": as_strided_scatter, "nonzero_static": nonzero_static,
    "conj_physical": conj_physical, "conj_physical_": conj_physical_, "imag": imag,
    "from_dlpack": from_dlpack, "to_dlpack": to_dlpack, "cond": cond, "while_loop": while_loop,
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
    "index_reduce_": index_reduce_, "as_strided_scatter": as_strided_scatter,
    "apply_": apply_, "map_": map_, "map2_": map2_, "dim_order": dim_order,
    "new_empty_strided": new_empty_strided, "nonzero_static": nonzero_static,
    "conj_physical": conj_physical, "conj_physical_": conj_physical_,
    "const_data_ptr": lambda self: self.data_ptr(),
    "__dlpack__": _dlpack, "__dlpack_device__": _dlpack_device,
    **{f"is_{n}": property(_false) for n in (
        "meta sparse sparse_csr quantized nested mkldnn xla xpu mps ipu vulkan maia "
        "mtia").split()},
}
