"""Read and write the safetensors format (Hugging Face's), implemented here.

A file is: an unsigned 64-bit little-endian header length N; N bytes of UTF-8 JSON mapping
each tensor's name to ``{"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}``
(offsets into the byte buffer after the header), with an optional ``"__metadata__"`` map of
strings to strings; then the byte buffer, every tensor contiguous and little-endian. The
buffer must be covered exactly, without holes or overlaps. Like the format itself, nothing
here can run code, and every size is checked before anything is allocated.

The names follow ``safetensors.numpy``: ``save_file(tensors, filename, metadata=None)``,
``load_file(filename, device="cpu")``, ``save(tensors, metadata=None) -> bytes``,
``load(data) -> dict``, and ``safe_open``; and ``safetensors.torch``'s ``save_model`` and
``load_model``, which keep one name of each group of state-dict entries sharing memory (tied
weights). Writing a file is atomic, as ``rt.save`` is.
"""

from __future__ import annotations

import io
import json
import math
import os
import struct
from collections.abc import Iterable
from typing import Any, BinaryIO

import numpy as np

from . import _dtype as D
from ._device import canonical_device, move_array
from .serialization import raw_bytes
from .tensor import Tensor

# safetensors' dtype codes for the dtypes a runtime tensor can have
_CODE = {"bool": "BOOL", "uint8": "U8", "int8": "I8", "int16": "I16", "int32": "I32",
         "int64": "I64", "float16": "F16", "float32": "F32", "float64": "F64",
         "bfloat16": "BF16", "uint16": "U16", "uint32": "U32", "uint64": "U64"}
_DTYPE = {code: name for name, code in _CODE.items()}
# codes the format defines that have no runtime dtype: named in the error
_KNOWN_CODES = {"BOOL", "U8", "I8", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "F64",
                "I64", "U64", "F8_E4M3", "F8_E5M2", "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2",
                "C64"}
MAX_HEADER_BYTES = 100_000_000  # the limit of the reference implementation


class SafetensorError(ValueError):
    """A malformed safetensors file or an unsupported tensor in it."""


def _array(name: str, t: Any) -> np.ndarray:
    if isinstance(t, Tensor):
        if t.dtype.name not in _CODE:
            raise SafetensorError(f"tensor {name!r}: dtype {t.dtype.name} has no safetensors code")
        arr = np.asarray(move_array(t.detach()._data, "cpu"))
    elif isinstance(t, np.ndarray):
        arr = t
    else:
        raise TypeError(f"save_file: {name!r} is a {type(t).__name__}, expected a Tensor")
    # order="C", not np.ascontiguousarray: that makes a 0-dim tensor (1,)
    return np.asarray(arr.astype(arr.dtype.newbyteorder("<"), copy=False), order="C")


# the order the reference writer lays dtypes out in (its Dtype enum, descending)
_WRITE_RANK = {code: i for i, code in enumerate(
    ["U64", "I64", "F64", "C64", "F32", "U32", "I32", "BF16", "F16", "U16", "I16", "F8_E4M3",
     "F8_E5M2", "I8", "U8", "BOOL"])}


def save(tensors: dict[str, Any], metadata: dict[str, str] | None = None) -> bytes:
    """The safetensors bytes of ``tensors`` (a dict of name -> Tensor)."""
    out = io.BytesIO()
    _write(tensors, metadata, out)
    return out.getvalue()


def _not_a(value: Any) -> str:
    """How the package's (PyO3's) argument errors name a value of the wrong type."""
    return "'None'" if value is None else f"'{type(value).__name__}' object"


def _write(tensors: dict[str, Any], metadata: dict[str, str] | None, out: BinaryIO) -> None:
    if not isinstance(tensors, dict):  # safetensors.torch's texts and types throughout
        raise ValueError("Expected a dict of [str, runtime.Tensor] but received "
                         f"{type(tensors)}")
    for name, t in tensors.items():
        if not isinstance(t, (Tensor, np.ndarray)):
            raise ValueError(f"Key `{name}` is invalid, expected runtime.Tensor but received "
                             f"{type(t)}")
    if metadata is not None:
        if not isinstance(metadata, dict):
            raise TypeError(f"argument 'metadata': {_not_a(metadata)} is not an instance of "
                            "'dict'")
        for item in (x for kv in metadata.items() for x in kv):
            if not isinstance(item, str):
                raise TypeError(f"argument 'metadata': {_not_a(item)} is not an instance of "
                                "'str'")
    for name in tensors:
        if not isinstance(name, str):
            raise TypeError(f"argument 'tensor_dict': {_not_a(name)} is not an instance of "
                            "'str'")
        if name == "__metadata__":
            raise SafetensorError(f"invalid tensor name {name!r}")
    _refuse_shared(tensors)
    arrays = {}
    for name, t in tensors.items():
        if isinstance(t, Tensor) and not t.is_contiguous():
            raise ValueError(
                f"You are trying to save a non contiguous tensor: `{name}` which is not allowed. "
                "It either means you are trying to save tensors which are reference of each other "
                "in which case it's recommended to save only the full tensors, and reslice at "
                "load time, or simply call `.contiguous()` on your tensor to pack it before "
                "saving.")
        arrays[name] = _array(name, t)
    codes = {name: _CODE[D.from_numpy_dtype(arr.dtype.newbyteorder("=")).name]
             for name, arr in arrays.items()}
    # the reference writer's layout: by dtype, in the reverse of its Dtype enum's order
    # (larger alignment first), then by name; the same bytes as safetensors.torch.save
    order = sorted(arrays, key=lambda n: (_WRITE_RANK[codes[n]], n))
    header: dict[str, Any] = {}
    if metadata:
        header["__metadata__"] = dict(metadata)
    offset = 0
    for name in order:
        arr = arrays[name]
        header[name] = {"dtype": codes[name], "shape": list(arr.shape),
                        "data_offsets": [offset, offset + arr.nbytes]}
        offset += arr.nbytes
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)  # the data starts 8-byte aligned
    out.write(struct.pack("<Q", len(raw)))
    out.write(raw)
    for name in order:
        if arrays[name].nbytes:
            out.write(raw_bytes(arrays[name]))


def save_file(tensors: dict[str, Any], filename: str | os.PathLike[str],
              metadata: dict[str, str] | None = None) -> None:
    """Write ``tensors`` to ``filename`` atomically (a crash leaves the old file intact)."""
    from .serialization import atomic_write

    atomic_write(os.fspath(filename), lambda out: _write(tensors, metadata, out))


def _bad(what: str) -> SafetensorError:
    """The package's error for a file it cannot read: its phrase first (``header too
    small``, ``invalid offset for tensor `x```, ...), rt's detail after it."""
    return SafetensorError(f"Error while deserializing: {what}")


# the package's error for an entry it cannot parse: a field's JSON, in its order
_FIELDS = ("dtype", "shape", "data_offsets")
_PACKAGE_CODES = ("BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2", "F8_E4M3",
                  "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "I16", "U16", "F16", "BF16", "I32",
                  "U32", "F32", "C64", "F64", "I64", "U64")


def _header(view: memoryview) -> dict[str, Any]:
    if len(view) < 8:
        raise _bad("header too small")
    (n,) = struct.unpack_from("<Q", view, 0)
    if n > MAX_HEADER_BYTES:
        raise _bad("header too large")
    if 8 + n > len(view):
        raise _bad("invalid header length")
    try:
        text = bytes(view[8:8 + n]).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _bad(f"invalid UTF-8 in header: {exc}") from None
    try:
        header = json.loads(text)
    except ValueError as exc:
        raise _bad(f"invalid JSON in header: {exc}") from None
    if not isinstance(header, dict):
        raise _bad("invalid JSON in header: not a JSON object")
    return header


def _check_entry(name: str, info: Any) -> tuple[int, int]:
    """An entry's byte range, once its fields are what the format says."""
    if not isinstance(info, dict):
        raise _bad(f"invalid JSON in header: tensor `{name}` is not a JSON object")
    missing = next((f for f in _FIELDS if f not in info), None)
    if missing is not None:
        raise _bad(f"invalid JSON in header: missing field `{missing}`")
    code, shape, offs = info["dtype"], info["shape"], info["data_offsets"]
    if code not in _DTYPE:
        if code in _KNOWN_CODES:
            raise _bad(f"tensor `{name}`: dtype {code!r} has no runtime dtype")
        raise _bad(f"invalid JSON in header: unknown variant `{code}`, expected one of "
                   f"{', '.join(f'`{c}`' for c in _PACKAGE_CODES)} (not a safetensors dtype)")
    if not (isinstance(shape, list) and all(type(s) is int and s >= 0 for s in shape)):
        raise _bad(f"invalid JSON in header: tensor `{name}` has an invalid shape {shape!r}")
    if not (isinstance(offs, list) and len(offs) == 2 and all(type(o) is int for o in offs)
            and 0 <= offs[0] <= offs[1]):
        raise _bad(f"invalid offset for tensor `{name}` (data_offsets {offs!r})")
    needs = math.prod(shape) * D.as_dtype(_DTYPE[code]).np.itemsize
    if offs[1] - offs[0] != needs:
        raise _bad(f"invalid shape, data type, or offset for tensor `{name}`: data_offsets "
                   f"{offs} hold {offs[1] - offs[0]} bytes, shape {shape} of {code} needs "
                   f"{needs}")
    return offs[0], offs[1]


def _parse(data: bytes | memoryview) -> tuple[dict[str, Any], dict[str, str] | None, memoryview]:
    view = memoryview(data)
    header = _header(view)
    metadata = header.pop("__metadata__", None)
    if metadata is not None and not (isinstance(metadata, dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())):
        raise _bad("invalid JSON in header: __metadata__ must map strings to strings")
    buf = view[8 + struct.unpack_from("<Q", view, 0)[0]:]
    spans = sorted((*_check_entry(name, info), name) for name, info in header.items())
    end = 0
    for begin, stop, name in spans:
        if begin != end:
            raise _bad(f"invalid offset for tensor `{name}` (data_offsets leave a hole or "
                       f"overlap at byte {min(begin, end)})")
        end = stop
    if end != len(buf):
        raise _bad("incomplete metadata, file not fully covered (the tensors cover "
                   f"{end} bytes of a {len(buf)}-byte buffer: the file is truncated or has "
                   "trailing bytes)")
    return header, metadata, buf


def _tensor(info: dict[str, Any], buf: memoryview, device: str) -> Tensor:
    dt = D.as_dtype(_DTYPE[info["dtype"]])
    b, e = info["data_offsets"]
    arr = np.frombuffer(buf[b:e], dtype=dt.np.newbyteorder("<"))
    arr = arr.astype(dt.np, copy=True).reshape(info["shape"])
    return Tensor._make(move_array(arr, device), dt, device)


def _tensors(header: dict[str, Any], buf: memoryview, device: str) -> dict[str, Tensor]:
    return {name: _tensor(info, buf, device) for name, info in header.items()}


# the frameworks the package's safe_open knows (each gives runtime tensors here)
_FRAMEWORKS = {"pt", "torch", "pytorch", "np", "numpy", "tf", "tensorflow", "flax", "jax",
               "mlx", "paddle"}


class safe_open:  # noqa: N801  # the safetensors package's name
    """``with safe_open(filename, framework="pt", device="cpu") as f:`` then ``f.keys()``
    (sorted), ``f.offset_keys()``, ``f.get_tensor(name)``, ``f.get_tensors()``,
    ``f.get_slice(name)`` and ``f.metadata()``, as the safetensors package's: the file is
    checked once, and each tensor is read when asked for. Whatever ``framework`` names,
    the tensors are runtime tensors."""

    def __init__(self, filename: str | os.PathLike[str], framework: str,
                 device: Any = "cpu") -> None:
        if framework not in _FRAMEWORKS:
            raise SafetensorError(f"framework {framework} is invalid")
        with open(filename, "rb") as fh:
            data = fh.read()
        self._header, self._metadata, self._buf = _parse(data)
        self._device = canonical_device(device)

    def __enter__(self) -> safe_open:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def keys(self) -> list[str]:
        return sorted(self._header)

    def metadata(self) -> dict[str, str] | None:
        return self._metadata

    def get_tensor(self, name: str) -> Tensor:
        if name not in self._header:
            raise SafetensorError(f"File does not contain tensor {name}")
        return _tensor(self._header[name], self._buf, self._device)

    def offset_keys(self) -> list[str]:
        """The names in the order of their data in the file."""
        return sorted(self._header, key=lambda n: self._header[n]["data_offsets"][0])

    def get_tensors(self) -> dict[str, Tensor]:
        return {name: self.get_tensor(name) for name in self.offset_keys()}

    def get_slice(self, name: str) -> _Slice:
        """The tensor ``name`` as the package's PySafeSlice: ``get_shape()``,
        ``get_dtype()`` (its code, "F32") and indexing, which reads the tensor."""
        if name not in self._header:
            raise SafetensorError(f"File does not contain tensor {name}")
        return _Slice(self, name)


class _Slice:
    def __init__(self, source: safe_open, name: str) -> None:
        self._source, self._name = source, name

    def get_shape(self) -> list[int]:
        return list(self._source._header[self._name]["shape"])

    def get_dtype(self) -> str:
        return str(self._source._header[self._name]["dtype"])

    def __getitem__(self, index: Any) -> Tensor:
        ndim = len(self.get_shape())  # the package counts a tuple's indices itself
        if isinstance(index, tuple) and sum(i is not Ellipsis and i is not None
                                            for i in index) > ndim:
            raise IndexError(f"too many indices for tensor of dimension {ndim}")
        return self._source.get_tensor(self._name)[index]


def load(data: bytes) -> dict[str, Tensor]:
    """The tensors in safetensors bytes."""
    header, _, buf = _parse(data)
    return _tensors(header, buf, "cpu")


def load_file(filename: str | os.PathLike[str], device: Any = "cpu") -> dict[str, Tensor]:
    """The tensors in a safetensors file, on ``device``."""
    with open(filename, "rb") as fh:
        data = fh.read()
    header, _, buf = _parse(data)
    return _tensors(header, buf, canonical_device(device))


def metadata(filename: str | os.PathLike[str]) -> dict[str, str] | None:
    """The ``__metadata__`` of a safetensors file."""
    with open(filename, "rb") as fh:
        data = fh.read()
    return _parse(data)[1]


# ---- safetensors.torch's save_model / load_model: tied weights saved once ------------------

def _pointer(arr: Any) -> int:
    return arr.__array_interface__["data"][0] if isinstance(arr, np.ndarray) else \
        int(arr.data.ptr)


def _storage(t: Tensor) -> tuple[str, int, int]:
    """Where ``t``'s storage lies, as (device, first byte, size): the array its data is a
    view of (numpy's ``base`` chain, to the outermost array), as PyTorch's storage is."""
    root = t._data
    while isinstance(getattr(root, "base", None), type(root)):
        root = root.base
    return t.device, _pointer(root), root.nbytes


def _is_complete(t: Tensor) -> bool:
    _, start, size = _storage(t)
    return _pointer(t._data) == start and t._data.nbytes == size


def _find_shared_tensors(state_dict: dict[str, Tensor]) -> list[set[str]]:
    """The groups (of two or more) of names whose tensors share a storage, as
    ``safetensors.torch`` finds them."""
    storages: dict[tuple[str, int, int], set[str]] = {}
    for name, t in state_dict.items():
        storage = _storage(t)
        if storage[2]:
            storages.setdefault(storage, set()).add(name)
    return sorted((g for g in storages.values() if len(g) > 1), key=sorted)


def _span(t: Tensor) -> tuple[int, int]:
    """The first and one past the last byte ``t``'s elements occupy."""
    arr = t._data
    start = _pointer(arr)
    if not arr.size:
        return start, start
    low = sum((n - 1) * st for n, st in zip(arr.shape, arr.strides) if st < 0)
    high = sum((n - 1) * st for n, st in zip(arr.shape, arr.strides) if st > 0)
    return start + low, start + high + arr.itemsize


def _refuse_shared(tensors: dict[str, Any]) -> None:
    """safetensors.torch's save refuses tensors whose memory overlaps (tied weights, a view
    and its base: loaded, they would no longer share it); views of one storage that do not
    overlap are written."""
    failing = []
    for group in _find_shared_tensors({n: t for n, t in tensors.items()
                                       if isinstance(t, Tensor)}):
        areas = sorted((*_span(tensors[n]), n) for n in group)
        runs = [{areas[0][2]}]
        last_stop = areas[0][1]
        for start, stop, name in areas[1:]:
            if start >= last_stop:
                runs.append({name})
            else:
                runs[-1].add(name)
            last_stop = stop
        failing += [run for run in runs if len(run) > 1]
    if failing:
        raise RuntimeError(
            "\n            Some tensors share memory, this will lead to duplicate memory on disk "
            f"and potential differences when loading them again: {failing}.\n            A "
            "potential way to correctly save your model is to use `save_model`.\n            More "
            "information at https://huggingface.co/docs/safetensors/torch_shared_tensors\n"
            "            ")


def _remove_duplicate_names(state_dict: dict[str, Tensor], *,
                            preferred_names: Iterable[str] = ()) -> dict[str, list[str]]:
    """For each group sharing a storage, the name kept (the first, in sorted order, of those
    covering the whole storage; a preferred one first) and the names dropped."""
    preferred = set(preferred_names)
    to_remove: dict[str, list[str]] = {}
    for shared in _find_shared_tensors(state_dict):
        complete = {n for n in shared if _is_complete(state_dict[n])}
        if not complete:
            raise RuntimeError(
                "Error while trying to find names to remove to save state dict, but found no "
                f"suitable name to keep for saving amongst: {shared}. None is covering the "
                "entire storage.Refusing to save/load the model since you could be storing "
                "much more memory than needed. Please refer to "
                "https://huggingface.co/docs/safetensors/torch_shared_tensors for more "
                "information. Or open an issue.")
        keep = sorted(preferred & complete or complete)[0]
        to_remove[keep] = [n for n in sorted(shared) if n != keep]
    return to_remove


def save_model(model: Any, filename: str | os.PathLike[str],
               metadata: dict[str, str] | None = None, force_contiguous: bool = True) -> None:
    """``model``'s state dict to ``filename``, each group of entries sharing memory (tied
    weights) saved once under its first name, the others recorded in the metadata as
    ``{dropped: kept}``, as ``safetensors.torch.save_model``. Tensors are written
    contiguous whatever ``force_contiguous`` says (it is accepted for the signature)."""
    state_dict = model.state_dict()
    for kept, dropped in _remove_duplicate_names(state_dict).items():
        for name in dropped:
            metadata = {} if metadata is None else metadata
            metadata.setdefault(name, kept)  # the user's own entry wins
            del state_dict[name]
    save_file(state_dict, filename, metadata=metadata)


def load_model(model: Any, filename: str | os.PathLike[str], strict: bool = True,
               device: Any = "cpu") -> tuple[set[str], list[str]]:
    """Load what ``save_model`` wrote into ``model``: ``(missing, unexpected)``, a name
    dropped for sharing memory with a loaded one counting as neither; with ``strict``,
    either being non-empty raises ``load_state_dict``'s error."""
    state_dict = load_file(filename, device=device)
    to_removes = _remove_duplicate_names(model.state_dict(), preferred_names=state_dict)
    missing_keys, unexpected = model.load_state_dict(state_dict, strict=False)
    missing = set(missing_keys)
    unexpected = list(unexpected)
    for group in to_removes.values():
        for name in group:
            if name in missing:
                missing.remove(name)
            else:
                unexpected.append(name)
    if strict and (missing or unexpected):
        error = f"Error(s) in loading state_dict for {type(model).__name__}:"
        if missing:
            keys = ", ".join(f'"{k}"' for k in sorted(missing))
            error += f"\n    Missing key(s) in state_dict: {keys}"
        if unexpected:
            keys = ", ".join(f'"{k}"' for k in sorted(unexpected))
            error += f"\n    Unexpected key(s) in state_dict: {keys}"
        raise RuntimeError(error)
    return missing, unexpected
