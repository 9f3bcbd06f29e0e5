"""PyTorch's functions over a tensor's memory the runtime lacked: tensors made over given
strides or a buffer (empty_strided, frombuffer, asarray), the as_strided copies, DLPack
exchange (from_dlpack, to_dlpack, Tensor.__dlpack__), Python callables over the elements
(apply_, map_, map2_) and dim_order."""

from __future__ import annotations

import builtins
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import _dtype as D
from .._device import array_module
from ..tensor import Tensor
from . import functional as F
from .inplace import ERR_INTERNAL_OVERLAP
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
    out.requires_grad_(requires_grad)
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
    flat = empty(*(size[d] for d in order), dtype=dtype, device=device)
    data = flat._data.transpose([order.index(d) for d in builtins.range(len(size))])
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
        root = self._root
        return int(root.data.ptr) if hasattr(root.data, "ptr") else \
            int(root.__array_interface__["data"][0])

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

    def __repr__(self) -> str:
        return f"TypedStorage of {self.size()} {self.dtype} on {self.device}"


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
    if not _TYPED_STORAGE_WARNED[0]:
        _TYPED_STORAGE_WARNED[0] = True
        warnings.warn("TypedStorage is deprecated. It will be removed in the future and "
                      "UntypedStorage will be the only storage class. This should only matter "
                      "to you if you are using storages directly.  To access UntypedStorage "
                      "directly, use tensor.untyped_storage() instead of tensor.storage()",
                      UserWarning, stacklevel=2)
    return TypedStorage(_root(self), self.device, self.dtype)


# --- the names ----------------------------------------------------------------------------------

FUNCTIONS: dict[str, Callable[..., Any]] = {
    "empty_strided": empty_strided, "empty_permuted": empty_permuted,
    "frombuffer": frombuffer, "asarray": asarray,
    "as_strided_copy": as_strided_copy, "as_strided_scatter": as_strided_scatter,
    "from_dlpack": from_dlpack, "to_dlpack": to_dlpack,
}
METHODS: dict[str, Any] = {
    "new_empty_strided": new_empty_strided, "as_strided_scatter": as_strided_scatter,
    "apply_": apply_, "map_": map_, "map2_": map2_, "dim_order": dim_order,
    "__dlpack__": _dlpack, "__dlpack_device__": _dlpack_device, "pin_memory": pin_memory,
    "module_load": module_load, "name": property(lambda self: None),
    "untyped_storage": untyped_storage, "storage": storage,
}
