"""``rt.save``/``rt.load``: checkpoints that cannot run code when loaded.

PyTorch pickles; unpickling a file runs whatever the file says, so a checkpoint from
elsewhere is a program. Ours is data only:

    b"BPCKPT\\x00\\x01"  magic and format version (8 bytes)
    u64 little-endian    length of the header
    header               UTF-8 JSON: {"tree": <object>, "tensors": [<tensor entry>, ...]}
    tensor bytes         each tensor contiguous, little-endian, at its entry's offset

An object is JSON where JSON says enough (None, bools, ints, floats, strings, lists) and a
one-key tagged object where it does not: ``{"dict": [[key, value], ...]}`` (keys keep their
type: an optimizer's state is keyed by int), ``{"tuple": [...]}``, ``{"tensor": index}``.
A tensor entry holds dtype, shape, device, requires_grad, whether it is an nn.Parameter, and
its byte range; or, where tensors saved together share memory (views of one array, tied
weights) or a tensor is a view of part of its memory (``x[1:3]``, ``x.t()``: PyTorch saves
the whole storage and the view's offset and strides), the index of a storage in the header's ``"storages"`` (byte ranges of the data
section holding each shared array once), its byte offset in it and its strides in bytes:
loaded, such tensors share one buffer again, as PyTorch's storages make them. Loading
checks every size against the file before allocating, so a corrupt or hostile file raises
an error, never a crash or a huge allocation.

A file torch.save wrote (its zip layout) is read too, by torch.load(weights_only=True)'s
rules: its pickle may name only what rebuilds tensors, parameters, ordered dicts, dtypes,
devices, sizes, sets, complex numbers and bytes, and may set state on an ordered dict only;
anything else is refused before it is looked up, so the file runs no code of its choosing
(but what the caller marked safe: ``add_safe_globals``, as torch's).
Our format also keeps those objects (tagged ``{"odict": ...}``, ``{"set": ...}``, ...); an
ordered dict's attributes (a state_dict's ``_metadata``) as ``{"odict": ..., "attrs": ...}``,
a Counter (MultiStepLR's milestones) as ``{"counter": ...}``.

Saving to a path is atomic: the bytes go to a temporary file beside the target, are
flushed to disk, and replace the target in one rename, so a crash mid-save leaves the
previous checkpoint intact.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import math
import os
import pickle
import struct
import sys
import tempfile
import warnings
from collections import Counter, OrderedDict
from collections.abc import Callable
from typing import IO, Any, BinaryIO

import numpy as np

from . import _dtype as D
from ._device import canonical_device, move_array
from .tensor import Tensor

MAGIC = b"BPCKPT\x00\x01"
_ALIGN = 64
# a header this long is not a state dict's; refuse it before reading it into memory
MAX_HEADER_BYTES = 256 << 20

PathOrFile = str | os.PathLike[str] | BinaryIO | IO[bytes]
MapLocation = str | Any | Callable[[Any, str], Any] | dict[str, str] | None


class CheckpointError(RuntimeError):
    """A file that is not a checkpoint this module wrote, or one that is damaged."""


class NotACheckpointError(CheckpointError, pickle.UnpicklingError):
    """Bytes that are neither rt.save's nor torch.save's: PyTorch's UnpicklingError (its
    unpickler reads them), and a CheckpointError."""


class EmptyCheckpointError(CheckpointError, EOFError):
    """An empty file: PyTorch's EOFError, and a CheckpointError."""


class WeightsOnlyError(CheckpointError, pickle.UnpicklingError):
    """A torch.save file whose pickle names a global that weights_only refuses: PyTorch's
    UnpicklingError, with its text (and a CheckpointError, as rt's other refusals)."""


# the modules torch's weights-only unpickler refuses even when the caller marks one of
# their functions safe (os.system, sys.exit, ...)
_BLOCKED_MODULES = ("sys", "os", "posix", "nt")
_WEIGHTS_ONLY_DOCS = ("\n\nCheck the documentation of torch.load to learn more about types "
                      "accepted by default with weights_only "
                      "https://pytorch.org/docs/stable/generated/torch.load.html.")


def _refused_global(module: str, name: str) -> WeightsOnlyError:
    """torch.load(weights_only=True)'s error for a global it will not look up: a blocked
    module's, or one not allowed by default, with its texts (without its advice to load
    with weights_only=False, which rt.load refuses)."""
    full_path = f"{module}.{name}"
    if module in _BLOCKED_MODULES:
        return WeightsOnlyError(
            "Weights only load failed. rt.load never unpickles code (weights_only=False is "
            f"not supported).\n\nTrying to load unsupported GLOBAL {full_path} whose module "
            f"{module} is blocked.{_WEIGHTS_ONLY_DOCS}")
    shown = name if module == "builtins" else full_path
    return WeightsOnlyError(
        "Weights only load failed. rt.load never unpickles code (weights_only=False is not "
        "supported); to load this file, please check the recommended steps in the following "
        "error message.\n\tWeightsUnpickler error: Unsupported global: GLOBAL "
        f"{shown} was not an allowed global by default. Please use "
        f"`torch.serialization.add_safe_globals([{shown}])` or the "
        f"`torch.serialization.safe_globals([{shown}])` context manager to allowlist this "
        f"global if you trust this class/function.{_WEIGHTS_ONLY_DOCS}")


# ------------------------------------------------------------------------------------ save


def _root(arr: np.ndarray) -> np.ndarray:
    """The outermost array of ``arr``'s ``base`` chain: what its memory is a view of."""
    while isinstance(arr.base, np.ndarray):
        arr = arr.base
    return arr


def _pointer(arr: np.ndarray) -> int:
    return int(arr.__array_interface__["data"][0])


def _whole(arr: np.ndarray, root: np.ndarray) -> bool:
    """Whether ``arr`` is all of its root's memory in C order (no view of a part of it, nor
    a transposed, strided or broadcast one, which PyTorch saves with the whole storage)."""
    return (arr.flags.c_contiguous and arr.nbytes == root.nbytes
            and _pointer(arr) == _pointer(root))


# what rt itself keeps in a tensor's __dict__ that no class attribute names (the others, views'
# and hooks' fields, default at class level)
_INTERNAL_TENSOR_ATTRIBUTES = frozenset({"_post_accumulate_grad_hooks"})


def _python_attributes(t: Tensor) -> dict[str, Any]:
    """The attributes a user set on ``t`` (what torch.save keeps as the tensor's state)."""
    return {k: v for k, v in vars(t).items()
            if not hasattr(type(t), k) and k not in _INTERNAL_TENSOR_ATTRIBUTES}


class _Writer:
    def __init__(self) -> None:
        self.tensors: list[Tensor] = []
        self.index: dict[int, int] = {}
        self.entries: list[dict[str, Any]] = []
        self.storages: list[dict[str, int]] = []
        self.arrays: list[np.ndarray] = []  # what the data section holds, in order
        self.attrs: dict[int, Any] = {}  # a tensor's Python attributes, encoded
        self.size = 0

    def tensor(self, t: Tensor, path: str) -> dict[str, int]:
        known = self.index.get(id(t))
        if known is None:  # one tensor referenced twice is loaded as one tensor
            known = self.index[id(t)] = len(self.tensors)
            self.tensors.append(t)
            attrs = _python_attributes(t)
            if attrs:  # torch.save keeps them (``t.foo = "foo"``), so does rt.save
                self.attrs[known] = self.encode(attrs, f"{path}'s attributes")
        return {"tensor": known}

    def _place(self, arr: np.ndarray) -> int:
        self.size = -(-self.size // _ALIGN) * _ALIGN
        offset = self.size
        self.arrays.append(arr)
        self.size += arr.nbytes
        return offset

    def _shared(self) -> dict[int, int]:
        """The storage of each tensor sharing a host array with another one saved: each such
        array is written once, whole (little-endian hosts; elsewhere each tensor apart)."""
        groups: dict[int, list[int]] = {}
        roots: dict[int, np.ndarray] = {}
        for i, t in enumerate(self.tensors):
            arr = t._data
            if (type(arr) is np.ndarray and arr.nbytes and arr.dtype.isnative
                    and sys.byteorder == "little"):
                root = _root(arr)
                if root.flags.c_contiguous:
                    groups.setdefault(id(root), []).append(i)
                    roots[id(root)] = root
        storage_of: dict[int, int] = {}
        for key, members in groups.items():
            root = roots[key]
            if len(members) == 1 and _whole(self.tensors[members[0]]._data, root):
                continue  # a tensor alone over all its memory, in order: saved as itself
            raw = root.reshape(-1).view(np.uint8) if root.dtype != np.uint8 else root.reshape(-1)
            self.storages.append({"offset": self._place(raw), "nbytes": int(raw.nbytes)})
            for i in members:
                storage_of[i] = len(self.storages) - 1
        return storage_of

    def finish(self) -> None:
        """The entries and the data section, once the object's every tensor is known."""
        from .nn.parameter import Parameter

        storage_of = self._shared()
        for i, t in enumerate(self.tensors):
            entry: dict[str, Any] = {
                "dtype": t.dtype.name, "shape": list(t.shape), "device": t.device,
                "requires_grad": bool(t.requires_grad), "parameter": isinstance(t, Parameter)}
            storage = storage_of.get(i)
            if storage is None:
                # np.asarray(order="C"), not np.ascontiguousarray: that makes a 0-dim (1,)
                arr = np.asarray(move_array(t._data, "cpu"), order="C")
                arr = arr.astype(arr.dtype.newbyteorder("<"), copy=False)
                entry.update(offset=self._place(arr), nbytes=int(arr.nbytes))
            else:
                arr = t._data
                entry.update(storage=storage, strides=list(arr.strides),
                             storage_offset=_pointer(arr) - _pointer(_root(arr)))
            if i in self.attrs:
                entry["attrs"] = self.attrs[i]
            self.entries.append(entry)

    def encode(self, obj: Any, path: str) -> Any:
        from ._device import device

        if isinstance(obj, device):  # a str, but loaded as a device
            return {"device": str(obj)}
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, (int, float)) and not isinstance(obj, np.generic):
            return obj
        if isinstance(obj, np.generic):  # a numpy scalar: its Python value
            return self.encode(obj.item(), path)
        if isinstance(obj, Tensor):
            return self.tensor(obj, path)
        if isinstance(obj, list):
            return [self.encode(v, f"{path}[{i}]") for i, v in enumerate(obj)]
        tagged = self._encode_other(obj, path)
        if tagged is not None:
            return tagged
        raise TypeError(
            f"rt.save cannot store {path} of type {type(obj).__name__}: a checkpoint holds "
            "tensors, numbers, strings, None and lists, tuples and dicts of them "
            "(what state_dict() returns), never arbitrary objects")


    def _encode_other(self, obj: Any, path: str) -> dict[str, Any] | None:
        """The tagged form of the other objects torch.load(weights_only=True) gives back:
        tuples (a Size kept as one), dicts (an OrderedDict kept as one), sets, complex
        numbers, bytes, bytearrays and dtypes (devices: ``encode``); None for anything
        else."""
        from .ops.shapes import Size

        def items(values: Any) -> list[Any]:
            return [self.encode(v, f"{path}[{i}]") for i, v in enumerate(values)]

        if isinstance(obj, Size):
            return {"size": [int(v) for v in obj]}
        if isinstance(obj, tuple):
            return {"tuple": items(obj)}
        if isinstance(obj, dict):
            pairs = [[self.encode(k, f"{path} key"), self.encode(v, f"{path}[{k!r}]")]
                     for k, v in obj.items()]
            if type(obj) is Counter:  # MultiStepLR's milestones (torch.load keeps a Counter)
                return {"counter": pairs}
            if not isinstance(obj, OrderedDict):
                return {"dict": pairs}
            attrs = getattr(obj, "__dict__", None)
            if not attrs:
                return {"odict": pairs}
            # a state_dict's _metadata (its modules' versions), which torch.save keeps too
            return {"odict": pairs, "attrs": self.encode(dict(attrs), f"{path} attributes")}
        if isinstance(obj, set):
            return {"set": items(obj)}
        if isinstance(obj, complex):
            return {"complex": [obj.real, obj.imag]}
        if isinstance(obj, (bytes, bytearray)):
            return {type(obj).__name__: base64.b64encode(bytes(obj)).decode("ascii")}
        if isinstance(obj, D.DType):
            return {"dtype": obj.name}
        return None


def raw_bytes(arr: np.ndarray) -> memoryview:
    """The bytes of the C-contiguous ``arr``, uncopied (a buffer of its own dtype would refuse
    ml_dtypes' bfloat16)."""
    return memoryview(arr.reshape(-1).view(np.uint8))


def _serialize(obj: Any, out: BinaryIO) -> None:
    w = _Writer()
    tree = w.encode(obj, "the object")
    w.finish()
    content: dict[str, Any] = {"tree": tree, "tensors": w.entries}
    if w.storages:
        content["storages"] = w.storages
    header = json.dumps(content, allow_nan=True, separators=(",", ":")).encode()
    out.write(MAGIC)
    out.write(struct.pack("<Q", len(header)))
    out.write(header)
    written = 0
    for arr in w.arrays:
        offset = -(-written // _ALIGN) * _ALIGN
        out.write(b"\0" * (offset - written))
        out.write(raw_bytes(arr) if arr.nbytes else b"")
        written = offset + arr.nbytes


def save(obj: Any, f: PathOrFile, pickle_module: Any = None, pickle_protocol: int = 2,
         _use_new_zipfile_serialization: bool = True,
         _disable_byteorder_record: bool = False) -> None:
    """Write ``obj`` (a state dict, or tensors, numbers and strings nested in lists, tuples
    and dicts) to ``f``: a path, replaced atomically, or a writable binary file. torch.save's
    pickle arguments are taken and have no effect: nothing is pickled."""
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        parent = os.path.dirname(path)
        if parent and not os.path.isdir(parent):  # torch's error (not the temporary file's)
            raise RuntimeError(f"Parent directory {parent} does not exist.")
        if os.path.isdir(path):  # torch's error, less its C++ source location
            raise RuntimeError("open file failed with strerror: Is a directory")
        atomic_write(path, lambda out: _serialize(obj, out))
    else:
        if not hasattr(f, "write"):
            raise AttributeError("expected 'f' to be string, path, or a file-like object with "
                                 "a 'write' attribute")
        _serialize(obj, f)


def atomic_write(path: str, write: Callable[[BinaryIO], None]) -> None:
    """Run ``write`` on a temporary file beside ``path``, flush it to disk and rename it over
    ``path``: readers see the old file or the new one, never a part; on any error the
    temporary file is removed and ``path`` is untouched."""
    if os.path.isdir(path):
        raise IsADirectoryError(f"{path!r} is a directory")
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            write(out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    _fsync_dir(folder)


def _fsync_dir(folder: str) -> None:
    """Make the rename itself durable (where the platform lets a directory be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# ------------------------------------------------------------------------------------ load


def _bad(name: str, why: str) -> CheckpointError:
    return CheckpointError(f"rt.load: {name} is not a valid checkpoint: {why}")


def _placed(arr: np.ndarray, dtype: D.DType, saved: str, map_location: MapLocation) -> Tensor:
    """The loaded tensor on its device: the saved one, or as ``map_location`` says (a
    device, a dict from saved devices to devices, or as torch's a function of the tensor on
    the CPU and the saved device's name, returning the tensor to use or None to keep the
    saved device)."""
    if callable(map_location) and not isinstance(map_location, (str, dict)):
        placed = map_location(Tensor._make(arr, dtype, "cpu"), saved)
        if placed is not None:
            if not isinstance(placed, Tensor):
                raise TypeError("rt.load: a map_location function must return a tensor or "
                                f"None, not {type(placed).__name__}")
            return placed
        device = saved
    elif map_location is None:
        device = saved
    elif isinstance(map_location, dict):
        device = _restore_location(map_location.get(saved, saved))
    elif isinstance(map_location, str):  # rt.device too
        device = _restore_location(map_location)
    else:  # torch calls anything else
        raise TypeError(f"'{type(map_location).__name__}' object is not callable")
    _check_cuda_device(device)
    return Tensor._make(move_array(arr, device), dtype, device)


def _check_cuda_device(device: str) -> None:
    """torch.load's errors for a tensor bound for a GPU this machine lacks."""
    if not device.startswith("cuda"):
        return
    from . import cuda

    if not cuda.is_available():
        raise RuntimeError("Attempting to deserialize object on a CUDA device but "
                           "torch.cuda.is_available() is False. If you are running on a "
                           "CPU-only machine, please use torch.load with "
                           "map_location=torch.device('cpu') to map your storages to the CPU.")
    index, count = int(device.partition(":")[2] or 0), cuda.device_count()
    if index >= count:
        raise RuntimeError(f"Attempting to deserialize object on CUDA device {index} but "
                           f"torch.cuda.device_count() is {count}. Please use torch.load with "
                           "map_location to map your storages to an existing device.")


# the map_location tags torch 2.13 registers a restorer for
_RESTORED_TAGS = ("cpu", "cuda", "mps", "meta", "xpu", "hpu", "mtia", "privateuseone")


def _restore_location(location: Any) -> str:
    """The device a ``map_location`` string names, or torch's error for one it does not
    know."""
    # torch tries its restorers by the tag's prefix (cpu, cuda, mps, ...): a string none of
    # them takes is its own error, one that they take is parsed as a device
    unknown = RuntimeError("don't know how to restore data location of "
                           f"torch.storage.UntypedStorage (tagged with {location})")
    if isinstance(location, str) and (not location.startswith(_RESTORED_TAGS)
                                      or location.startswith("cpu:")):  # cpu's takes "cpu"
        raise unknown
    try:
        return canonical_device(location)
    except ValueError:
        raise unknown from None


def _check_entry(e: Any, i: int, data_size: int, name: str) -> tuple[D.DType, tuple[int, ...]]:
    if not isinstance(e, dict):
        raise _bad(name, f"tensor entry {i} is not an object")
    if not isinstance(e.get("dtype"), str):
        raise _bad(name, f"tensor entry {i} has no dtype name")
    try:
        dtype = D.as_dtype(e["dtype"])
        shape = tuple(e["shape"])
        offset, nbytes = e["offset"], e["nbytes"]
    except (KeyError, TypeError, ValueError) as exc:
        raise _bad(name, f"tensor entry {i} is malformed ({exc})") from None
    if not all(type(s) is int and s >= 0 for s in shape) or len(shape) > 64:
        raise _bad(name, f"tensor {i} has an invalid shape {list(shape)}")
    if type(offset) is not int or type(nbytes) is not int or offset < 0:
        raise _bad(name, f"tensor {i} has an invalid byte range")
    if nbytes != math.prod(shape) * dtype.np.itemsize:
        raise _bad(name, f"tensor {i} holds {nbytes} bytes, its shape {list(shape)} of "
                         f"{dtype.name} needs {math.prod(shape) * dtype.np.itemsize}")
    if offset + nbytes > data_size:
        raise _bad(name, f"tensor {i} ends at byte {offset + nbytes} of a data section of "
                         f"{data_size} bytes (the file is truncated)")
    return dtype, shape


class _Storages:
    """The shared arrays of a checkpoint (its header's ``"storages"``), each copied out of the
    file once, and the tensors viewing them."""

    def __init__(self, table: Any, data: memoryview, name: str) -> None:
        if not isinstance(table, list):
            raise _bad(name, "its storage table is not a list")
        self.table, self.data, self.name = table, data, name
        self.arrays: dict[int, np.ndarray] = {}

    def array(self, index: Any) -> np.ndarray:
        if type(index) is not int or not 0 <= index < len(self.table):
            raise _bad(self.name, f"it refers to storage {index!r} of {len(self.table)}")
        if index not in self.arrays:
            s = self.table[index]
            offset = s.get("offset") if isinstance(s, dict) else None
            nbytes = s.get("nbytes") if isinstance(s, dict) else None
            if type(offset) is not int or type(nbytes) is not int or offset < 0 or nbytes < 0:
                raise _bad(self.name, f"storage {index} has an invalid byte range")
            if offset + nbytes > len(self.data):
                raise _bad(self.name, f"storage {index} ends at byte {offset + nbytes} of a "
                                      f"data section of {len(self.data)} bytes (the file is "
                                      "truncated)")
            self.arrays[index] = np.frombuffer(self.data[offset:offset + nbytes],
                                               dtype=np.uint8).copy()
        return self.arrays[index]

    def view(self, e: dict[str, Any], i: int) -> tuple[D.DType, np.ndarray]:
        """Tensor ``i``: a view of its storage, every byte it reaches checked to lie inside."""
        if not isinstance(e.get("dtype"), str):
            raise _bad(self.name, f"tensor entry {i} has no dtype name")
        try:
            dtype = D.as_dtype(e["dtype"])
            shape, strides, offset = tuple(e["shape"]), tuple(e["strides"]), e["storage_offset"]
        except (KeyError, TypeError, ValueError) as exc:
            raise _bad(self.name, f"tensor entry {i} is malformed ({exc})") from None
        storage = self.array(e["storage"])
        size = dtype.np.itemsize
        ints = all(type(v) is int and v >= 0 for v in (*shape, *strides, offset))
        if not ints or len(shape) != len(strides) or len(shape) > 64:
            raise _bad(self.name, f"tensor {i} has an invalid shape, strides or offset")
        if offset % size or any(st % size for st in strides):
            raise _bad(self.name, f"tensor {i} is not aligned to its {dtype.name} elements")
        if math.prod(shape):
            end = offset + sum((n - 1) * st for n, st in zip(shape, strides)) + size
            if end > storage.nbytes:
                raise _bad(self.name, f"tensor {i} reaches byte {end} of a storage of "
                                      f"{storage.nbytes} bytes")
        arr = np.ndarray(shape, dtype=dtype.np, buffer=storage, offset=offset, strides=strides)
        return dtype, arr


_UNKNOWN = object()


def _decode_other(tag: str, v: Any, name: str, decode: Callable[[Any], Any]) -> Any:
    """What ``_Writer._encode_other`` tagged, checked; _UNKNOWN for another tag."""
    from ._device import device
    from .ops.shapes import Size

    try:
        if tag == "size" and isinstance(v, list) and all(type(x) is int for x in v):
            return Size(v)
        if tag == "set" and isinstance(v, list):
            return {decode(x) for x in v}
        if tag == "complex" and isinstance(v, list) and len(v) == 2:
            return complex(float(v[0]), float(v[1]))
        if tag in ("bytes", "bytearray") and isinstance(v, str):
            raw = base64.b64decode(v.encode("ascii"), validate=True)
            return raw if tag == "bytes" else bytearray(raw)
        if tag == "dtype" and isinstance(v, str):
            return D.as_dtype(v)
        if tag == "device" and isinstance(v, str):
            return device(v)
    except (TypeError, ValueError, binascii.Error) as exc:
        raise _bad(name, f"its {tag} {str(v)[:80]} is not valid ({exc})") from None
    return _UNKNOWN


def _deserialize(buf: bytes | memoryview, name: str, map_location: MapLocation) -> Any:
    view = memoryview(buf)
    if bytes(view[:len(MAGIC)]) != MAGIC:
        if bytes(view[:2]) == b"PK":  # torch.save's zip: read as weights_only reads it
            return _load_torch_zip(view, name, map_location)
        if bytes(view[:1]) == b"\x80":
            raise _bad(name, "it looks like a bare pickle (or PyTorch's legacy format); "
                             "rt.load never unpickles those (that could run code from the "
                             "file): re-save it with torch.save or rt.save")
        if not len(view):
            raise EmptyCheckpointError(f"rt.load: {name} is empty")
        raise NotACheckpointError(f"rt.load: {name} is not a valid checkpoint: it does not "
                                  "start with the rt.save magic bytes")
    if len(view) < len(MAGIC) + 8:
        raise _bad(name, "it is truncated inside its header")
    (hlen,) = struct.unpack_from("<Q", view, len(MAGIC))
    start = len(MAGIC) + 8
    if hlen > MAX_HEADER_BYTES or start + hlen > len(view):
        raise _bad(name, f"its header claims {hlen} bytes; the file has {len(view) - start}")
    try:
        header = json.loads(bytes(view[start:start + hlen]))
    except (UnicodeDecodeError, ValueError) as exc:
        raise _bad(name, f"its header is not JSON ({exc})") from None
    if not isinstance(header, dict) or "tree" not in header or \
            not isinstance(header.get("tensors"), list):
        raise _bad(name, "its header lacks the tree or the tensor table")
    data = view[start + hlen:]
    entries = header["tensors"]
    tensors: list[Tensor | None] = [None] * len(entries)
    storages = _Storages(header.get("storages", []), data, name)

    def tensor(i: Any) -> Tensor:
        if type(i) is not int or not 0 <= i < len(entries):
            raise _bad(name, f"it refers to tensor {i!r} of {len(entries)}")
        if tensors[i] is None:
            e = entries[i]
            if isinstance(e, dict) and "storage" in e:
                dtype, arr = storages.view(e, i)
            else:
                dtype, shape = _check_entry(e, i, len(data), name)
                raw = data[e["offset"]:e["offset"] + e["nbytes"]]
                arr = np.frombuffer(raw, dtype=dtype.np.newbyteorder("<"))
                arr = arr.astype(dtype.np, copy=True).reshape(shape)
            t = _placed(arr, dtype, str(e.get("device", "cpu")), map_location)
            if e.get("parameter"):
                from .nn.parameter import Parameter

                t = Parameter(t, requires_grad=bool(e.get("requires_grad", True)))
            elif e.get("requires_grad"):
                t.requires_grad_(True)
            tensors[i] = t
            if "attrs" in e:
                _restore_attributes(t, decode(e["attrs"]), name)
        return tensors[i]  # type: ignore[return-value]

    def decode(o: Any, depth: int = 0) -> Any:
        if depth > 512:
            raise _bad(name, "it nests deeper than 512 levels")
        if o is None or isinstance(o, (bool, int, float, str)):
            return o
        if isinstance(o, list):
            return [decode(v, depth + 1) for v in o]
        if isinstance(o, dict) and len(o) == 2 and "odict" in o and "attrs" in o:
            out = decode({"odict": o["odict"]}, depth + 1)
            attrs = decode(o["attrs"], depth + 1)
            if not (isinstance(attrs, dict) and all(isinstance(k, str) for k in attrs)):
                raise _bad(name, "an ordered dict's attributes are not named by strings")
            out.__dict__.update(attrs)
            return out
        if isinstance(o, dict) and len(o) == 1:
            (tag, v), = o.items()
            if tag == "tensor":
                return tensor(v)
            if tag == "tuple" and isinstance(v, list):
                return tuple(decode(x, depth + 1) for x in v)
            other = _decode_other(tag, v, name, lambda x: decode(x, depth + 1))
            if other is not _UNKNOWN:
                return other
            if tag in ("dict", "odict", "counter") and isinstance(v, list):
                out = {"dict": dict, "odict": OrderedDict, "counter": Counter}[tag]()
                for pair in v:
                    if not (isinstance(pair, list) and len(pair) == 2):
                        raise _bad(name, "a dict item is not a [key, value] pair")
                    key, value = decode(pair[0], depth + 1), decode(pair[1], depth + 1)
                    try:
                        out[key] = value
                    except TypeError:
                        raise _bad(name, f"a dict key {key!r} is not hashable") from None
                return out
        raise _bad(name, f"it holds an object this format does not define: {str(o)[:80]}")

    return decode(header["tree"])


def _restore_attributes(t: Tensor, attrs: Any, name: str) -> None:
    """A tensor's saved Python attributes, set again: never one of its own fields."""
    if not isinstance(attrs, dict) or not all(isinstance(k, str) for k in attrs):
        raise _bad(name, "a tensor's attributes are not named by strings")
    for k, v in attrs.items():
        if hasattr(t, k):
            raise _bad(name, f"a tensor's saved attributes name its attribute {k!r}")
        setattr(t, k, v)


def load(f: PathOrFile, map_location: MapLocation = None, pickle_module: Any = None, *,
         weights_only: bool | None = None, mmap: bool | None = None,
         **pickle_load_args: Any) -> Any:
    """Read what ``rt.save`` wrote, or a torch.save file (as torch.load(weights_only=True)
    reads it). Only data is read (``weights_only`` None or True, as torch's default; False, which in PyTorch allows unpickling arbitrary objects, is
    refused); ``map_location`` moves every tensor to one device (a string or ``rt.device``),
    maps saved devices by a dict, or is a function ``(tensor, saved_device) -> tensor or
    None``, as torch's. ``mmap`` is accepted for torch's signature: the file is read whole
    either way (the tensors are copies, not views of the file); so are torch's
    ``**pickle_load_args`` (``encoding=...``), with its warning that a weights-only load
    reads none of them."""
    if weights_only is False:
        raise ValueError("rt.load(weights_only=False) is not supported: a checkpoint is data "
                         "only, never code")
    if pickle_module is not None:
        if weights_only:  # torch's refusal
            raise RuntimeError("Can not safely load weights when explicit pickle_module is "
                               "specified")
        # torch then unpickles with it, weights_only off
        raise ValueError("rt.load(pickle_module=...) is not supported: a checkpoint is data "
                         "only, never unpickled by a module of the caller's")
    if pickle_load_args:  # (encoding=...) read only by torch's unpickler
        warnings.warn("pickle_load_args only works if `weights_only=False`.", stacklevel=2)
    if mmap and not isinstance(f, (str, os.PathLike)):
        raise ValueError("f must be a file path in order to use the mmap argument")
    name = repr(os.fspath(f)) if isinstance(f, (str, os.PathLike)) else "the file"
    return _deserialize(_read_whole(f), name, map_location)


def _read_whole(f: PathOrFile) -> bytes:
    """The bytes of a path, or of a file object from where it stands (checked as torch.load
    checks one)."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            return fh.read()
    _check_seekable(f)
    buf = f.read()
    if not isinstance(buf, (bytes, bytearray, memoryview)):  # a text file: torch's error
        raise AssertionError(f"Expected bytes, got {type(buf).__name__}")
    return bytes(buf)


def _check_seekable(f: Any) -> None:
    """torch.load's check of a file object: ``f.seek(f.tell())``; a file without them (or
    one that cannot seek) raises their error with PyTorch's advice appended."""
    try:
        f.seek(f.tell())
    except (io.UnsupportedOperation, AttributeError) as e:
        if "seek" in str(e) or "tell" in str(e):
            raise type(e)(f"{e}. You can only torch.load from a file that is seekable. Please "
                          "pre-load the data into a buffer like io.BytesIO and try to load "
                          "from it instead.") from None
        raise


def dumps(obj: Any) -> bytes:
    """``save`` into bytes."""
    out = io.BytesIO()
    _serialize(obj, out)
    return out.getvalue()


# ------------------------------------------------------- PyTorch's checkpoints, read safely

# torch.save's typed storages by name, and the dtypes a pickle names
_TORCH_STORAGES = {
    "FloatStorage": "float32", "DoubleStorage": "float64", "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16", "LongStorage": "int64", "IntStorage": "int32",
    "ShortStorage": "int16", "CharStorage": "int8", "ByteStorage": "uint8",
    "BoolStorage": "bool"}


# what a pickle's torch.storage.UntypedStorage names: a storage of bytes
_UNTYPED = object()
# what it names as torch.Tensor and torch.nn.Parameter: markers for _rebuild_from_type_v2's
# type, never the classes (a pickle could call those)
_TENSOR_TYPE = object()
_PARAMETER_TYPE = object()


class _TorchStorage:
    """A storage a torch.save pickle names: its dtype and its bytes in the archive, read on
    first use (one array however many tensors view it)."""

    def __init__(self, dtype: D.DType, key: str, location: str, numel: int) -> None:
        self.dtype, self.key, self.location, self.numel = dtype, key, location, numel
        self.array: np.ndarray | None = None


class _Placement(Exception):  # noqa: N818 - a carrier, never seen by the caller
    """What placing a tensor as ``map_location`` says raised, carried out of the unpickler
    (whose other errors mean a damaged file) to be raised as it is."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


def _allowed_globals() -> dict[tuple[str, str], Any]:
    """The globals a torch.save pickle may name (torch.load(weights_only=True)'s defaults,
    less what rt has no use for): each an object, or the name of the reader's method that
    rebuilds it."""
    from ._device import device
    from .ops.shapes import Size

    return {
        ("collections", "OrderedDict"): OrderedDict, ("collections", "Counter"): Counter,
        ("torch._utils", "_rebuild_tensor_v2"): "_rebuild_tensor",
        ("torch._utils", "_rebuild_tensor_v3"): "_rebuild_tensor_v3",
        ("torch._utils", "_rebuild_parameter"): "_rebuild_parameter",
        ("torch._utils", "_rebuild_parameter_with_state"): "_rebuild_parameter_with_state",
        ("torch._tensor", "_rebuild_from_type_v2"): "_rebuild_from_type_v2",
        ("torch", "Tensor"): _TENSOR_TYPE,
        ("torch.nn.parameter", "Parameter"): _PARAMETER_TYPE,
        ("torch.storage", "UntypedStorage"): _UNTYPED,
        ("torch", "device"): device, ("torch", "Size"): Size,
        ("builtins", "set"): set, ("builtins", "complex"): complex,
        ("builtins", "bytearray"): bytearray, ("_codecs", "encode"): _latin1_bytes,
    }


def _torch_dtype_global(module: str, name: str) -> D.DType | None:
    """The dtype a pickle names as ``torch.float32`` or as a typed storage
    (``torch.FloatStorage``), None for any other global."""
    if module != "torch":
        return None
    if name in _TORCH_STORAGES:
        return D.as_dtype(_TORCH_STORAGES[name])
    try:
        return D.as_dtype(name)
    except (TypeError, ValueError, KeyError, AttributeError):
        return None


class _TorchUnpickler:
    """torch.load(weights_only=True)'s rules: a pickle may name only the functions and
    classes that rebuild tensors, parameters, ordered dicts, dtypes, devices, sizes, sets,
    complex numbers and bytes; anything else is refused before it is looked up, so a file
    never runs code of its choosing."""

    def __init__(self, archive: Any, prefix: str, name: str, map_location: MapLocation,
                 big_endian: bool) -> None:
        self.archive, self.prefix, self.name = archive, prefix, name
        self.map_location, self.big_endian = map_location, big_endian
        self.storages: dict[str, _TorchStorage] = {}

    def load(self, data: bytes) -> Any:
        outer = self

        class Restricted(pickle._Unpickler):  # the Python one: its BUILD can be replaced
            dispatch = dict(pickle._Unpickler.dispatch)

            def find_class(self, module: str, name: str) -> Any:
                return outer.find_class(module, name)

            def persistent_load(self, pid: Any) -> Any:
                return outer.persistent_load(pid)

            def load_build(self) -> None:
                # state set on an ordered dict (a state_dict's _metadata), as plain
                # attributes, or on an instance of a class the caller marked safe
                # (add_safe_globals), as pickle sets it: never a dtype's or device's fields
                state = self.stack.pop()
                inst = self.stack[-1]
                if type(inst) in _user_allowed_globals().values():
                    _set_state(inst, state)
                    return
                if type(inst) is not OrderedDict or not isinstance(state, dict) \
                        or not all(isinstance(k, str) for k in state):
                    raise _bad(outer.name, f"its pickle sets the state of a "
                                           f"{type(inst).__name__}, which rt.load refuses")
                inst.__dict__.update(state)

            dispatch[pickle.BUILD[0]] = load_build

        try:
            return Restricted(io.BytesIO(data), encoding="utf-8").load()
        except CheckpointError:
            raise
        except _Placement as placement:  # a bad map_location, not a damaged file
            raise placement.error from None
        except Exception as exc:  # noqa: BLE001 - a damaged pickle, named
            raise _bad(self.name, f"its pickle cannot be read ({type(exc).__name__}: "
                                  f"{exc})") from None

    def find_class(self, module: str, name: str) -> Any:
        module = "builtins" if module == "__builtin__" else module
        if module in _BLOCKED_MODULES:  # even where the caller marked it safe, as torch's
            raise _refused_global(module, name)
        found = _allowed_globals().get((module, name))
        if isinstance(found, str):  # one of this reader's rebuilds
            return getattr(self, found)
        if found is not None:
            return found
        found = _user_allowed_globals().get(f"{module}.{name}")
        if found is not None:  # add_safe_globals: the caller's word that it is safe
            return found
        dtype = _torch_dtype_global(module, name)
        if dtype is not None:
            return dtype
        raise _refused_global(module, name)

    def persistent_load(self, pid: Any) -> _TorchStorage:
        if isinstance(pid, tuple) and len(pid) == 5 and pid[1] is _UNTYPED:
            pid = (*pid[:1], D.uint8, *pid[2:])  # bytes, given a dtype by _rebuild_tensor_v3
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"
                and isinstance(pid[1], D.DType) and isinstance(pid[2], str)
                and type(pid[4]) is int and pid[4] >= 0):
            raise _bad(self.name, f"its pickle refers to an unknown object {str(pid)[:80]}")
        _, dtype, key, location, numel = pid
        if key not in self.storages:
            self.storages[key] = _TorchStorage(dtype, key, str(location), numel)
        return self.storages[key]

    def _array(self, storage: _TorchStorage) -> np.ndarray:
        if storage.array is None:
            try:
                raw = self.archive.read(f"{self.prefix}data/{storage.key}")
            except KeyError:
                raise _bad(self.name, f"its storage {storage.key!r} is missing") from None
            itemsize = storage.dtype.np.itemsize
            if len(raw) < storage.numel * itemsize:
                raise _bad(self.name, f"its storage {storage.key!r} holds {len(raw)} bytes, "
                                      f"{storage.numel} {storage.dtype.name} need "
                                      f"{storage.numel * itemsize}")
            order = ">" if self.big_endian else "<"
            arr = np.frombuffer(raw[:storage.numel * itemsize],
                                dtype=storage.dtype.np.newbyteorder(order))
            storage.array = arr.astype(storage.dtype.np, copy=True)
        return storage.array

    def _rebuild_tensor(self, storage: Any, offset: Any, size: Any, stride: Any,
                        requires_grad: Any, backward_hooks: Any, metadata: Any = None) -> Tensor:
        if not isinstance(storage, _TorchStorage):
            raise _bad(self.name, "a tensor of its pickle has no storage")
        shape, strides = tuple(size), tuple(stride)
        if not (type(offset) is int and offset >= 0 and len(shape) == len(strides)
                and all(type(v) is int and v >= 0 for v in shape + strides)):
            raise _bad(self.name, f"a tensor has an invalid layout {shape}, {strides}")
        arr = self._array(storage)
        last = offset + sum((n - 1) * s for n, s in zip(shape, strides, strict=True)) \
            if all(shape) else offset - 1
        if math.prod(shape) and last >= arr.size:
            raise _bad(self.name, f"a tensor reads element {last} of a storage of {arr.size}")
        itemsize = arr.itemsize
        view = np.lib.stride_tricks.as_strided(
            arr[offset:] if math.prod(shape) else arr[:0], shape,
            tuple(s * itemsize for s in strides)) if math.prod(shape) else \
            np.zeros(shape, arr.dtype)
        saved = storage.location.split(":")[0] if storage.location else "cpu"
        try:
            t = _placed(view, storage.dtype, "cuda" if saved == "cuda" else "cpu",
                        self.map_location)
        except Exception as exc:  # noqa: BLE001 - the caller's map_location: raised as is
            raise _Placement(exc) from None
        if requires_grad:
            t.requires_grad_(True)
        return t

    def _rebuild_tensor_v3(self, storage: Any, offset: Any, size: Any, stride: Any,
                           requires_grad: Any, backward_hooks: Any, dtype: Any,
                           metadata: Any = None) -> Tensor:
        """torch.save's form for a dtype without a typed storage (uint16, uint32, uint64):
        an untyped storage's bytes, read as ``dtype``."""
        if not isinstance(storage, _TorchStorage) or not isinstance(dtype, D.DType):
            raise _bad(self.name, "a tensor of its pickle has no storage")
        if storage.dtype is not dtype:
            raw = self._array(storage)
            if storage.dtype is not D.uint8 or raw.size % dtype.np.itemsize:
                raise _bad(self.name, f"its storage {storage.key!r} is not of {dtype.name}")
            typed = _TorchStorage(dtype, storage.key, storage.location,
                                  raw.size // dtype.np.itemsize)
            order = ">" if self.big_endian else "<"
            typed.array = raw.view(dtype.np.newbyteorder(order)).astype(dtype.np)
            storage = self.storages[storage.key] = typed
        return self._rebuild_tensor(storage, offset, size, stride, requires_grad,
                                    backward_hooks, metadata)

    def _rebuild_parameter_with_state(self, data: Any, requires_grad: Any,
                                      backward_hooks: Any, state: Any) -> Any:
        """A parameter with Python attributes (``p.foo = ...``), set again."""
        return self._set_attributes(self._rebuild_parameter(data, requires_grad,
                                                            backward_hooks), state)

    def _rebuild_from_type_v2(self, func: Any, new_type: Any, args: Any, state: Any) -> Any:
        """A tensor (or parameter) with Python attributes: rebuilt by the tensor rebuild the
        pickle names, its attributes set again."""
        if func not in (self._rebuild_tensor, self._rebuild_tensor_v3, self._rebuild_parameter) \
                or new_type not in (_TENSOR_TYPE, _PARAMETER_TYPE) \
                or not isinstance(args, tuple):
            raise _bad(self.name, "its pickle rebuilds a tensor of a type rt.load refuses")
        out = func(*args)
        if new_type is _PARAMETER_TYPE and not isinstance(out, Tensor):
            raise _bad(self.name, "a parameter of its pickle holds no tensor")
        if new_type is _PARAMETER_TYPE:
            from .nn.parameter import Parameter

            if not isinstance(out, Parameter):
                out = Parameter(out, requires_grad=out.requires_grad)
        return self._set_attributes(out, state)

    def _set_attributes(self, obj: Any, state: Any) -> Any:
        """torch's _set_obj_state: a dict of attributes (or a pair with slots), by name."""
        if isinstance(state, tuple):
            if len(state) != 2:
                raise _bad(self.name, f"a tensor's state {str(state)[:80]} is invalid")
            parts = state
        else:
            parts = (state, None)
        for part in parts:
            if not part:
                continue
            if not isinstance(part, dict) or not all(isinstance(k, str) for k in part):
                raise _bad(self.name, "a tensor's attributes are not named by strings")
            for k, v in part.items():
                if hasattr(obj, k):  # the tensor's own fields and methods are not state
                    raise _bad(self.name, f"a tensor's state names its attribute {k!r}")
                setattr(obj, k, v)
        return obj

    def _rebuild_parameter(self, data: Any, requires_grad: Any, backward_hooks: Any) -> Any:
        from .nn.parameter import Parameter

        if not isinstance(data, Tensor):
            raise _bad(self.name, "a parameter of its pickle holds no tensor")
        return Parameter(data, requires_grad=bool(requires_grad))


# ---------------------------------------------- globals the caller marks safe to unpickle

_marked_safe_globals: set[Any] = set()


def add_safe_globals(safe_globals: list[Any]) -> None:
    """Mark classes or functions (or ``(obj, "module.qualname")`` pairs) safe for a torch.save
    file's pickle to name, as torch.serialization.add_safe_globals: rt.load then builds
    them (and sets an instance's state, as pickle does) where it refused the file."""
    global _marked_safe_globals
    _marked_safe_globals = _marked_safe_globals.union(set(safe_globals))


def get_safe_globals() -> list[Any]:
    """The globals add_safe_globals marked safe."""
    return list(_marked_safe_globals)


def clear_safe_globals() -> None:
    """Forget every global add_safe_globals marked safe."""
    global _marked_safe_globals
    _marked_safe_globals = set()


class safe_globals:  # noqa: N801  # torch's name
    """``with safe_globals([...]):`` add_safe_globals for the block only."""

    def __init__(self, safe_globals: list[Any]) -> None:
        self.safe_globals = safe_globals

    def __enter__(self) -> None:
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc: object) -> None:
        global _marked_safe_globals
        _marked_safe_globals = _marked_safe_globals.difference(set(self.safe_globals))


def _user_allowed_globals() -> dict[str, Any]:
    """The marked globals by the name a pickle gives them: ``module.qualname``, or the one
    given with them (torch's checks and errors for a malformed pair)."""
    out: dict[str, Any] = {}
    for f in _marked_safe_globals:
        if isinstance(f, tuple):
            if len(f) != 2:
                raise ValueError("Expected tuple of length 2 (global, str of callable full "
                                 f"path), but got tuple of length: {len(f)}")
            if type(f[1]) is not str:
                raise TypeError("Expected second item in tuple to be str of callable full "
                                f"path, but got: {type(f[1])}")
            out[f[1]] = f[0]
        else:
            out[f"{f.__module__}.{f.__qualname__}"] = f
    return out


def _set_state(inst: Any, state: Any) -> None:
    """pickle's BUILD on an instance of a marked class: its __setstate__, else its
    attributes and slots."""
    setstate = getattr(inst, "__setstate__", None)
    if setstate is not None and getattr(type(inst), "__setstate__", None) is not \
            getattr(object, "__setstate__", None):
        setstate(state)
        return
    slotstate = None
    if isinstance(state, tuple) and len(state) == 2:
        state, slotstate = state
    if state:
        inst.__dict__.update(state)
    if slotstate:
        for k, v in slotstate.items():
            setattr(inst, k, v)


def _latin1_bytes(text: Any, encoding: Any = "latin1") -> bytes:
    """Protocol 2's form of bytes (``_codecs.encode(str, "latin1")``), and only that."""
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise CheckpointError("rt.load: a pickle's _codecs.encode is refused beyond bytes")
    return text.encode("latin1")


def _torch_archive(buf: bytes | memoryview, name: str) -> tuple[Any, str]:
    """A torch.save file's zip and the name of its pickle."""
    import zipfile

    try:
        archive = zipfile.ZipFile(io.BytesIO(bytes(buf)))
        pickles = [n for n in archive.namelist() if n.endswith("data.pkl")
                   and n.count("/") == 1]
    except zipfile.BadZipFile as exc:
        raise _bad(name, f"it is a damaged zip ({exc})") from None
    if len(pickles) != 1:
        raise _bad(name, "it is a zip, but not one torch.save wrote")
    return archive, pickles[0]


def _globals_in_pickle(data: bytes) -> set[str]:
    """The ``module.name`` of every global a pickle names, read by pickletools' parser (no
    object is built): GLOBAL's argument, or the two strings STACK_GLOBAL takes."""
    import pickletools

    found: set[str] = set()
    pushed: list[Any] = []  # what each opcode pushed, where it is a string
    memo: dict[Any, Any] = {}
    for op, arg, _ in pickletools.genops(data):
        if op.name == "GLOBAL":
            found.add(arg.replace(" ", ".", 1))
        elif op.name == "STACK_GLOBAL" and len(pushed) >= 2:
            found.add(f"{pushed[-2]}.{pushed[-1]}")
        if op.name in ("MEMOIZE", "BINPUT", "LONG_BINPUT", "PUT"):
            memo[len(memo) if op.name == "MEMOIZE" else arg] = pushed[-1] if pushed else None
        elif op.name in ("BINGET", "LONG_BINGET", "GET"):
            pushed.append(memo.get(arg))
        elif op.name not in ("FRAME", "PROTO"):
            pushed.append(arg if isinstance(arg, str) and "UNICODE" in op.name else None)
    return found


def get_unsafe_globals_in_checkpoint(f: PathOrFile) -> list[str]:
    """torch.serialization's: the globals a torch.save file's pickle names that a
    weights-only load refuses (neither allowed by default nor marked safe), found without
    loading anything (sorted); a file rt.save wrote names none."""
    buf = _read_whole(f)
    if buf[:len(MAGIC)] == MAGIC:
        return []
    if buf[:2] != b"PK":
        raise ValueError("Expected input to be a checkpoint returned by torch.save")
    archive, pickle_name = _torch_archive(buf, "the file")
    safe = {f"{m}.{n}" for m, n in _allowed_globals()} | set(_user_allowed_globals())
    unsafe = []
    for full in _globals_in_pickle(archive.read(pickle_name)) - safe:
        module, _, name = full.rpartition(".")
        if module in _BLOCKED_MODULES or _torch_dtype_global(module, name) is None:
            unsafe.append(full)
    return sorted(unsafe)


def _load_torch_zip(buf: bytes | memoryview, name: str, map_location: MapLocation) -> Any:
    """A torch.save file (its zip layout): the pickle read by _TorchUnpickler's rules."""
    archive, pickle_name = _torch_archive(buf, name)
    prefix = pickle_name[:-len("data.pkl")]
    try:
        order = archive.read(f"{prefix}byteorder").decode().strip()
    except KeyError:
        order = "little"
    reader = _TorchUnpickler(archive, prefix, name, map_location, order == "big")
    return reader.load(archive.read(pickle_name))
