"""PyTorch's functions over a tensor's memory the runtime lacked: tensors made over given
strides or a buffer (empty_strided, frombuffer, asarray), the as_strided copies, DLPack
exchange (from_dlpack, to_dlpack, Tensor.__dlpack__), Python callables over the elements
(apply_, map_, map2_) and dim_order."""

from __future__ import annotations

import builtins
import contextlib
import operator
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from .. import _dtype as D
from .._device import array_module, canonical_device
from ..tensor import Tensor
from ..tracing import GraphBreak, MetaArray
from ..tracing import _state as _trace_state
from . import functional as F
from .dispatch import apply
from .inplace import ERR_INTERNAL_OVERLAP, ERR_LEAF_INPLACE
from .naming import renamed
from .registry import Primitive, flops_none, register
from .shapes import wrap_dim
from .torch_names import check_factory_options


def empty_strided(size: Sequence[int], stride: Sequence[int], *, dtype: Any = None,
                  layout: Any = None, device: Any = None, pin_memory: bool | None = None,
                  requires_grad: bool = False) -> Tensor:
    """An uninitialized tensor of ``size`` laid out with ``stride`` (in elements)."""
    from ..creation import empty

    check_factory_options("empty_strided", layout, pin_memory)
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError("as_strided: Negative strides are not supported at the moment, "
                           f"got strides: {list(stride)}")
    extent = 1 + sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else 0
    flat = empty(extent, dtype=dtype, device=device)
    item = flat._data.itemsize
    xp = array_module(flat.device)  # numpy's or CuPy's as_strided over the flat storage
    data = xp.lib.stride_tricks.as_strided(flat._data, size, tuple(s * item for s in stride))
    out = Tensor._make(data, flat.dtype, flat.device)
    out._factory_requires_grad_(requires_grad)
    return out


def empty_permuted(size: Sequence[int], physical_layout: Sequence[int], *, dtype: Any = None,
                   layout: Any = None, device: Any = None, pin_memory: bool | None = None,
                   requires_grad: bool = False) -> Tensor:
    """An uninitialized tensor of ``size`` whose dims lie in memory in the order
    ``physical_layout`` (outermost first)."""
    from ..creation import empty

    check_factory_options("empty_permuted", layout, pin_memory)
    size, order = tuple(size), tuple(physical_layout)
    if len(order) != len(size):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the "
                           f"physical_layout; got {len(size)} and {len(order)}")
    if sorted(order) != list(builtins.range(len(size))):
        raise RuntimeError("Duplicate dim not allowed")
    flat = empty(tuple(size[d] for d in order), dtype=dtype, device=device)
    data = flat._data.transpose([order.index(d) for d in builtins.range(len(size))])
    out = Tensor._make(data, flat.dtype, flat.device)
    out._factory_requires_grad_(requires_grad)
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
    out._factory_requires_grad_(requires_grad)
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
    if np.unique(positions.cpu().numpy()).size != positions.numel():
        raise RuntimeError(ERR_INTERNAL_OVERLAP)
    flat = F.clone(F.reshape(input, (-1,)))
    F.setitem(flat, positions, src)
    return F.named(F.reshape(flat, tuple(input.shape)), "AsStridedScatterBackward0")


# --- as_strided: a view over the storage ---------------------------------------------------------


def _positions(size: Sequence[int], stride: Sequence[int], offset: int) -> np.ndarray:
    """The storage position (in elements) of each element of a tensor of this geometry."""
    pos = np.full(tuple(size), offset, dtype=np.int64)
    for d, (n, s) in enumerate(zip(size, stride)):
        pos = pos + (np.arange(n, dtype=np.int64) * s).reshape(
            (1,) * d + (n,) + (1,) * (len(size) - d - 1))
    return pos


def _storage_geometry(arr: Any) -> tuple[Any, int, tuple[int, ...]] | None:
    """(root array, offset and strides in elements) of ``arr`` in the storage it views (its
    root array's memory, as ``storage_offset`` and ``untyped_storage`` read it); None where
    that memory is not one block in order or the strides are not whole elements."""
    root = _root_array(arr)
    item = arr.dtype.itemsize
    if not (root.flags.c_contiguous or root.flags.f_contiguous) or root.nbytes % item:
        return None
    start = _address(arr) - _address(root)
    if start % item or any(s % item for s in arr.strides):
        return None
    return root, start // item, tuple(s // item for s in arr.strides)


def _address(arr: Any) -> int:
    """An array's first element's address: a numpy array's from its array interface (its
    buffer, ``.data``, refuses bfloat16), a CuPy array's from its pointer."""
    if isinstance(arr, np.ndarray):
        return int(arr.__array_interface__["data"][0])
    return int(arr.data.ptr)


def _root_array(arr: Any) -> Any:
    root = arr
    while isinstance(getattr(root, "base", None), type(arr)):  # numpy's or CuPy's arrays
        root = root.base
    return root


def _same_geometry(shape: Sequence[int], strides: Sequence[int], want: Sequence[int]) -> bool:
    """Whether the strides address the same elements (a dim of one element: any stride)."""
    return all(n <= 1 or s == w for n, s, w in zip(shape, strides, want))


def _as_strided_impl(xp: Any, x: Any, *, size: tuple[int, ...], stride: tuple[int, ...],
                     storage_offset: int, in_stride: tuple[int, ...], in_offset: int) -> Any:
    """A view of ``size``/``stride``/``storage_offset`` over the storage of ``x``, an array
    laid out as ``in_stride``/``in_offset`` say. An array laid out otherwise (a gradient or a
    value replayed through a view's history, a planned buffer) is put in a storage of that
    layout first: the result is then a copy of the same values."""
    geometry = _storage_geometry(x)
    if geometry is not None and geometry[1] == in_offset and _same_geometry(
            x.shape, geometry[2], in_stride):
        flat = geometry[0].reshape(-1, order="A").view(x.dtype)
        item = x.dtype.itemsize
        if not all(size):  # numpy's buffer ends where the storage does: an offset past it is
            storage_offset = min(storage_offset, flat.size)  # taken as the end (no element)
        if xp is np:  # its base is the root array: the runtime's test of a view
            return np.ndarray(size, x.dtype, buffer=flat, offset=storage_offset * item,
                              strides=tuple(s * item for s in stride))
        return xp.lib.stride_tricks.as_strided(flat[storage_offset:], size,
                                               tuple(s * item for s in stride))
    inside = _positions(x.shape, in_stride, in_offset)
    shown = _positions(size, stride, storage_offset)
    extent = max([int(p.max()) + 1 for p in (inside, shown) if p.size], default=0)
    storage = xp.zeros(extent, dtype=x.dtype)
    storage[xp.asarray(inside.reshape(-1))] = x.reshape(-1)
    return storage[xp.asarray(shown)]


def _as_strided_bwd(c: Any, g: Tensor) -> tuple[Tensor]:
    """PyTorch's as_strided_backward: the gradient summed into a storage at the elements the
    view shows, read back at the input's elements (an element the input shows more than
    once takes its share)."""
    from ..creation import tensor, zeros
    from .prims import IndexArg

    a = c.attrs
    inside = _positions(c.shape(0), a["in_stride"], a["in_offset"])
    shown = _positions(a["size"], a["stride"], a["storage_offset"])
    if not inside.size or not shown.size:
        return (zeros(c.shape(0), dtype=g.dtype, device=g.device),)
    low = min(int(inside.min()), int(shown.min()))
    extent = max(int(inside.max()), int(shown.max())) + 1 - low
    storage = F.index_backward(g, tensor(shown - low, device=g.device), key=(IndexArg(0),),
                               shape=(extent,))
    flat = (inside - low).reshape(-1)
    first = int(flat[0])
    if np.array_equal(flat, np.arange(first, first + flat.size)):  # the input in C order
        grad = F.reshape(F.getitem(storage, slice(first, first + flat.size)), c.shape(0))
    else:
        grad = F.getitem(storage, tensor(inside - low, device=g.device))
        counts = np.bincount(flat, minlength=extent)[inside - low]
        if counts.max() > 1:
            grad = F.div(grad, tensor(counts.astype(g.dtype.np), device=g.device))
    return (grad,)


AS_STRIDED = register(Primitive(
    "as_strided", impl=_as_strided_impl, infer=lambda x, **a: (tuple(a["size"]), x.dtype),
    backward=_as_strided_bwd, view=True,
    attrs=("size", "stride", "storage_offset", "in_stride", "in_offset"), flops=flops_none))


def _int_list(value: Any, name: str, position: int) -> tuple[int, ...]:
    """``value`` as a tuple of ints, with PyTorch's argument errors."""
    if not isinstance(value, (tuple, list)):
        raise TypeError(f"as_strided(): argument '{name}' (position {position}) must be tuple "
                        f"of ints, not {type(value).__name__}")
    for i, v in enumerate(value):
        if isinstance(v, (bool, float)) or not hasattr(v, "__index__"):
            raise TypeError(f"as_strided(): argument '{name}' (position {position}) must be "
                            f"tuple of ints, but found element of type {type(v).__name__} at "
                            f"pos {i}")
    return tuple(operator.index(v) for v in value)


def _check_strided(size: tuple[int, ...], stride: tuple[int, ...], offset: int,
                   storage_bytes: int, item: int) -> None:
    """PyTorch's checks of a view's geometry against its storage, in its order."""
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError("as_strided: Negative strides are not supported at the moment, "
                           f"got strides: {list(stride)}")
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    if any(n < 0 for n in size):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(size)} and "
                           f"strides={list(stride)}")
    if not all(size):
        return
    needed = (offset + 1 + sum((n - 1) * s for n, s in zip(size, stride))) * item
    if needed > storage_bytes:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage "
                           f"offset {offset}, and itemsize {item} requiring a storage size of "
                           f"{needed} are out of bounds for storage of size {storage_bytes}")


class _VmapElements(threading.local):
    """Per thread, one entry per running vmap (outermost first): its batched arguments, each
    with its in_dim, and the batch element being run."""

    def __init__(self) -> None:
        self.stack: list[tuple[list[tuple[Tensor, int]], int]] = []


_vmap_elements = _VmapElements()


@contextlib.contextmanager
def vmap_element(batched: list[tuple[Tensor, int]], index: int) -> Iterator[None]:
    """While a vmap runs its function on element ``index`` of the ``batched`` arguments
    (``(tensor, in_dim)`` pairs): ``as_strided`` reads a storage offset as PyTorch's vmap
    does, relative to the batched tensor's (see ``_vmap_shift``)."""
    _vmap_elements.stack.append((batched, index))
    try:
        yield
    finally:
        _vmap_elements.stack.pop()


@contextlib.contextmanager
def outside_vmap_elements() -> Iterator[None]:
    """``as_strided`` with plain storage offsets, for vmap's own views of whole batches."""
    saved, _vmap_elements.stack = _vmap_elements.stack, []
    try:
        yield
    finally:
        _vmap_elements.stack = saved


def _vmap_shift(root: Any) -> int | None:
    """How far (in elements) the running vmaps' current elements sit from their element 0 in
    the storage ``root``, None where no vmap maps over it: PyTorch's as_strided batching rule
    gives element i the offset ``offset + xs[i].storage_offset() - xs.storage_offset()``."""
    shift = None
    for batched, index in _vmap_elements.stack:
        for arg, dim in batched:
            geometry = _storage_geometry(arg._data)
            if geometry is not None and geometry[0] is root:
                shift = (shift or 0) + index * geometry[2][dim]
                break
    return shift


def _check_vmap_strided(input: Tensor, size: Sequence[int], stride: Sequence[int], offset: int,
                        own_offset: int, own_stride: tuple[int, ...], shift: int) -> None:
    """PyTorch's check that an as_strided inside vmap stays within the batch element it is
    called on (in element 0's coordinates, as its message gives them)."""
    call = f"result = tensor.as_strided({list(size)}, {list(stride)}, {offset})"
    tail = ("This is not supported inside of vmap, please try to rewrite the `as_strided` call "
            "as a sequence of PyTorch view operations")
    if not all(size):
        return
    if input.numel() == 0:
        raise RuntimeError(f"{call} can access memory outside of `tensor`. `tensor` has no "
                           "storage but the passed-in (size, stride, storage_offset) imply a "
                           f"result with some storage. {tail}")
    lo = own_offset - shift
    hi = lo + sum((n - 1) * s for n, s in zip(input.shape, own_stride)) + 1
    r_hi = offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1
    if offset < lo or r_hi > hi:
        raise RuntimeError(f"{call} can access memory outside of `tensor`. `result` can access "
                           f"some memory in range [{offset}, {r_hi}], but `tensor` can only "
                           f"access some memory in range [{lo}, {hi}]. {tail}")


def as_strided(input: Tensor, size: Sequence[int], stride: Sequence[int],  # noqa: A002
               storage_offset: int | None = None) -> Tensor:
    """A view of ``input``'s storage with ``size``, ``stride`` and ``storage_offset`` (in
    elements; default the input's own offset), as PyTorch's: writes go through, its
    gradient is summed where elements overlap (AsStridedBackward0)."""
    size, stride = _int_list(size, "size", 1), _int_list(stride, "stride", 2)
    if storage_offset is not None and (isinstance(storage_offset, (bool, float))
                                       or not hasattr(storage_offset, "__index__")):
        raise TypeError("as_strided(): argument 'storage_offset' (position 3) must be int, not "
                        f"{type(storage_offset).__name__}")
    if _trace_state.tracer is not None:
        raise GraphBreak("as_strided reads the storage beneath a tensor, which a captured step "
                         "does not lay out as eager mode does")
    geometry = _storage_geometry(input._data)
    if geometry is None:
        raise NotImplementedError("as_strided of a tensor whose storage is not one block of "
                                  "whole elements is not supported here: use .contiguous()")
    root, own_offset, own_stride = geometry
    offset = own_offset if storage_offset is None else operator.index(storage_offset)
    shift = _vmap_shift(root) if _vmap_elements.stack else None
    if shift is not None:
        if storage_offset is None:  # the element's own offset, element 0's in the message
            offset -= shift
        _check_vmap_strided(input, size, stride, offset, own_offset, own_stride, shift)
        offset += shift
    _check_strided(size, stride, offset, int(root.nbytes), input.dtype.itemsize)
    return apply(AS_STRIDED, input, size=size, stride=stride, storage_offset=offset,
                 in_stride=own_stride, in_offset=own_offset)


def as_strided_(input: Tensor, size: Sequence[int], stride: Sequence[int],  # noqa: A002
                storage_offset: int | None = None) -> Tensor:
    """In place: ``input`` takes ``as_strided``'s geometry over its storage."""
    from .inplace_ops import _restride

    if input._rg and input._grad_fn is None and input._base is None:
        raise RuntimeError(ERR_LEAF_INPLACE)
    return _restride(input, renamed(as_strided(input, size, stride, storage_offset),
                                    "AsStridedBackward1"))


def unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:  # noqa: A002
    """Every ``size``-long window along ``dimension``, ``step`` apart, as a new last dim: a
    view of ``input`` (UnfoldBackward0), as PyTorch's."""
    ndim = input.ndim
    d = wrap_dim(dimension, max(ndim, 1))
    n = input.shape[d] if ndim else 1
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is "
                           f"{size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    geometry = None if type(input._data) is MetaArray else _storage_geometry(input._data)
    if geometry is None:  # a captured value, or memory out of order: its values in C order
        in_stride, in_offset = _c_strides(input.shape), 0
    else:
        in_stride, in_offset = geometry[2], geometry[1]
    if ndim == 0:
        out_size, out_stride = (size,), (1,)
    else:
        count = (n - size) // step + 1
        out_size = (*input.shape[:d], count, *input.shape[d + 1:], size)
        out_stride = (*in_stride[:d], in_stride[d] * step, *in_stride[d + 1:], in_stride[d])
    out = apply(AS_STRIDED, input, size=out_size, stride=out_stride, storage_offset=in_offset,
                in_stride=in_stride, in_offset=in_offset)
    return renamed(out, "UnfoldBackward0")


def _c_strides(shape: Sequence[int]) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(tuple(shape)):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


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


def _expanded_values(other: Tensor, self: Tensor) -> list[Any]:
    """other's values expanded to self's shape (PyTorch's expand_inplace: expand's errors,
    never self broadcast to other's) as a flat list."""
    return other.detach().expand(*self.shape)._data.reshape(-1).tolist()


def map_(self: Tensor, tensor: Tensor, callable: Callable[[Any, Any], Any]  # noqa: A002
         ) -> Tensor:
    """Each element replaced by callable(element, tensor's element) (tensor broadcast)."""
    _refuse_grad(self, "map_")
    other = _expanded_values(tensor, self)
    return _write_values(self, [callable(a, b) for a, b in
                                zip(self._data.reshape(-1).tolist(), other)])


def map2_(self: Tensor, x: Tensor, y: Tensor,
          callable: Callable[[Any, Any, Any], Any]) -> Tensor:  # noqa: A002
    """Each element replaced by callable(element, x's, y's) (x and y broadcast)."""
    _refuse_grad(self, "map2_")
    xs, ys = _expanded_values(x, self), _expanded_values(y, self)
    return _write_values(self, [callable(a, b, c) for a, b, c in
                                zip(self._data.reshape(-1).tolist(), xs, ys)])


# --- DLPack --------------------------------------------------------------------


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


def pin_memory(self: Tensor, device: Any = None) -> Tensor:
    """A copy in page-locked host memory (CuPy's, as the DataLoader's pinning); without a
    GPU, PyTorch's refusal."""
    from ..utils.data.pin import _pinned, can_pin

    if not can_pin():
        raise RuntimeError("Cannot access accelerator device when none is available.")
    return _pinned(self) if self.device == "cpu" else self


def module_load(self: Tensor, other: Tensor, assign: bool = False) -> Tensor:
    """How load_state_dict moves ``other`` into the parameter or buffer self: other itself
    (detached) with ``assign``, else its values copied into self."""
    return other.detach() if assign else self.copy_(other).detach()


class UntypedStorage:
    """The bytes beneath a tensor (its root array's), as far as PyTorch's UntypedStorage
    answers questions about them: where they start, how many, on which device; the bytes
    themselves through ``tolist``. Made by ``Tensor.untyped_storage()``."""

    __slots__ = ("_root", "device")

    def __init__(self, root: Any, device: Any) -> None:
        self._root = root
        self.device = device

    def data_ptr(self) -> int:
        return _address(self._root)

    def nbytes(self) -> int:
        return int(self._root.nbytes)

    size = nbytes

    def __len__(self) -> int:
        return self.nbytes()

    def element_size(self) -> int:
        return 1

    @property
    def is_cuda(self) -> bool:
        return self.device != "cpu"

    def get_device(self) -> int | None:
        return self.device.index  # None on the CPU, as PyTorch's storages

    def untyped(self) -> UntypedStorage:
        return self

    def tolist(self) -> list[int]:
        root = self._root.get() if hasattr(self._root, "get") else self._root
        return np.ascontiguousarray(root).view(np.uint8).reshape(-1).tolist()

    def __repr__(self) -> str:
        return f"UntypedStorage of {self.nbytes()} bytes on {self.device}"


class TypedStorage(UntypedStorage):
    """The storage beneath a tensor counted in elements of its dtype (PyTorch's deprecated
    ``Tensor.storage()``)."""

    __slots__ = ("dtype",)

    def __init__(self, root: Any, device: Any, dtype: D.DType) -> None:
        super().__init__(root, device)
        self.dtype = dtype

    def size(self) -> int:  # type: ignore[override]
        return self.nbytes() // self.dtype.itemsize

    def __len__(self) -> int:
        return self.size()

    def element_size(self) -> int:
        return self.dtype.itemsize

    def untyped(self) -> UntypedStorage:
        return UntypedStorage(self._root, self.device)

    def tolist(self) -> list[Any]:
        root = self._root.get() if hasattr(self._root, "get") else self._root
        flat = np.ascontiguousarray(root).view(np.uint8).reshape(-1)
        return flat.view(self.dtype.np).tolist()

    def _elements(self) -> Any:
        """The storage's elements, in order, as a flat array sharing its memory."""
        return storage_elements(self._root, self.dtype)

    def _index(self, idx: Any) -> int:
        i = operator.index(idx)
        n = self.size()
        if not -n <= i < n:
            raise IndexError(f"index {i} out of range for storage of size {n}")
        return i + n if i < 0 else i

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, slice):
            raise RuntimeError("slices are only supported in UntypedStorage.__getitem__")
        return self._elements()[self._index(idx)].item()

    def __setitem__(self, idx: Any, value: Any) -> None:
        if not isinstance(idx, slice):
            idx = self._index(idx)
        self._elements()[idx] = value.numpy() if isinstance(value, Tensor) else value

    def __iter__(self) -> Iterator[Any]:
        return iter(self.tolist())

    def fill_(self, value: Any) -> TypedStorage:
        self._elements()[...] = value
        return self

    def type(self) -> str:  # noqa: A003 - PyTorch's name
        """The legacy storage type's name (the runtime's module in it, as Tensor.type's)."""
        return f"runtime.{D.scalar_type_name(self.dtype)}Storage"

    def _cast(self, dtype: D.DType) -> TypedStorage:
        """A new storage of ``dtype`` holding self's elements converted (PyTorch's casts)."""
        values = self._elements()
        values = values.get() if hasattr(values, "get") else values
        return TypedStorage(values.astype(dtype.np), self.device, dtype)

    def float(self) -> TypedStorage:  # noqa: A003
        return self._cast(D.float32)

    def double(self) -> TypedStorage:
        return self._cast(D.float64)

    def half(self) -> TypedStorage:
        return self._cast(D.float16)

    def bfloat16(self) -> TypedStorage:
        return self._cast(D.bfloat16)

    def long(self) -> TypedStorage:
        return self._cast(D.int64)

    def int(self) -> TypedStorage:  # noqa: A003
        return self._cast(D.int32)

    def short(self) -> TypedStorage:
        return self._cast(D.int16)

    def char(self) -> TypedStorage:
        return self._cast(D.int8)

    def byte(self) -> TypedStorage:
        return self._cast(D.uint8)

    def bool(self) -> TypedStorage:  # noqa: A003
        return self._cast(D.bool_)

    def __repr__(self) -> str:
        return f"TypedStorage of {self.size()} {self.dtype} on {self.device}"


def storage_elements(root: Any, dtype: D.DType) -> Any:
    """A storage's memory (its root array's) as a flat array of ``dtype`` sharing it; a copy
    where the root is no one block in order (an array numpy made strided from the start)."""
    if not (root.flags.c_contiguous or root.flags.f_contiguous):
        root = root.ravel()
    return root.reshape(-1, order="A").view(dtype.np)


class _LegacyStorageMeta(type):
    """PyTorch's ``torch.FloatStorage`` and its kin: calling one makes a TypedStorage of its
    dtype; a TypedStorage of that dtype is an instance of it."""

    dtype: D.DType

    def __instancecheck__(cls, instance: Any) -> bool:
        return type(instance) is TypedStorage and instance.dtype is cls.dtype

    def __call__(cls, *args: Any, device: Any = None) -> TypedStorage:  # type: ignore[override]
        if len(args) > 1:
            raise TypeError(f"{cls.__name__}(): expected at most one argument (a size or a "
                            f"sequence), got {len(args)}")
        arg = args[0] if args else 0
        if isinstance(arg, (int, np.integer)):
            values = np.zeros(int(arg), dtype=cls.dtype.np)
        else:
            values = np.array(list(arg)).astype(cls.dtype.np)
        return TypedStorage(values, canonical_device("cpu" if device is None else device),
                            cls.dtype)


def _legacy_storage(name: str, dtype: D.DType) -> type:
    return _LegacyStorageMeta(name, (), {"dtype": dtype, "__module__": "runtime"})


LEGACY_STORAGES: dict[str, type] = {
    f"{D.scalar_type_name(dt)}Storage": _legacy_storage(f"{D.scalar_type_name(dt)}Storage", dt)
    for dt in D.DTYPES if not dt.name.startswith("uint") or dt.name == "uint8"}


def storage_type(self: Tensor) -> type | None:
    """Deprecated: the legacy storage class of self's dtype (``torch.FloatStorage`` for a
    float32 one; None for uint16/32/64, which have none)."""
    _warn_typed_storage()
    return LEGACY_STORAGES.get(f"{D.scalar_type_name(self.dtype)}Storage")


def storage_dtype_check(storage: UntypedStorage, dtype: D.DType, fn: str) -> None:
    """PyTorch's error where a typed ``storage`` is not of ``dtype`` (tensor(), set_())."""
    if isinstance(storage, TypedStorage) and storage.dtype is not dtype:
        if fn == "set_":
            raise RuntimeError(f"Expected a Storage of type {D.type_meta_name(dtype)} or an "
                               f"UntypedStorage, but got type "
                               f"{D.scalar_type_name(storage.dtype)} for argument 1 'storage'")
        raise RuntimeError(f"Expected a Storage of type {D.scalar_type_name(dtype)} or an "
                           f"UntypedStorage, but got {D.scalar_type_name(storage.dtype)}")


def _root(self: Tensor) -> Any:
    root = self._data
    while isinstance(getattr(root, "base", None), type(root)):  # numpy's or CuPy's arrays
        root = root.base
    return root


def untyped_storage(self: Tensor) -> UntypedStorage:
    """The storage beneath self (a view's is its base's)."""
    return UntypedStorage(_root(self), self.device)


_TYPED_STORAGE_WARNED = [False]


def storage(self: Tensor) -> TypedStorage:
    """Deprecated: the storage beneath self in elements of its dtype (PyTorch's warning, once
    a process, as its)."""
    _warn_typed_storage()
    return TypedStorage(_root(self), self.device, self.dtype)


def _warn_typed_storage() -> None:
    if not _TYPED_STORAGE_WARNED[0]:
        _TYPED_STORAGE_WARNED[0] = True
        warnings.warn("TypedStorage is deprecated. It will be removed in the future and "
                      "UntypedStorage will be the only storage class. This should only matter "
                      "to you if you are using storages directly.  To access UntypedStorage "
                      "directly, use tensor.untyped_storage() instead of tensor.storage()",
                      UserWarning, stacklevel=3)


# --- the names ----------------------------------------------------------------------------------

FUNCTIONS: dict[str, Callable[..., Any]] = {
    "empty_strided": empty_strided, "empty_permuted": empty_permuted,
    "frombuffer": frombuffer, "asarray": asarray,
    "as_strided": as_strided, "as_strided_copy": as_strided_copy,
    "as_strided_scatter": as_strided_scatter, "from_dlpack": from_dlpack, "to_dlpack": to_dlpack,
    "UntypedStorage": UntypedStorage, "TypedStorage": TypedStorage,
    "Storage": LEGACY_STORAGES["FloatStorage"], **LEGACY_STORAGES,
}
METHODS: dict[str, Any] = {
    "new_empty_strided": new_empty_strided, "as_strided_scatter": as_strided_scatter,
    "as_strided": as_strided, "as_strided_": as_strided_, "unfold": unfold,
    "_is_view": lambda self: self._base is not None,
    "apply_": apply_, "map_": map_, "map2_": map2_, "dim_order": dim_order,
    "__dlpack__": _dlpack, "__dlpack_device__": _dlpack_device, "pin_memory": pin_memory,
    "module_load": module_load, "name": property(lambda self: None),
    "untyped_storage": untyped_storage, "storage": storage, "storage_type": storage_type,
}
