"""``collate`` and ``default_collate_fn_map``, as PyTorch's ``torch.utils.data._utils.collate``:
``default_collate(batch)`` is ``collate(batch, collate_fn_map=default_collate_fn_map)``, so an
entry added to that map (a type, or a tuple of types, to ``fn(batch, *, collate_fn_map)``)
changes how every DataLoader collates that type, and ``collate`` with a map of one's own
builds another collate function with the same handling of dicts, namedtuples and
sequences."""

from __future__ import annotations

import collections.abc
import copy
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .... import _dtype as D
from ....creation import as_tensor, tensor
from ....ops.functional import stack
from ....tensor import Tensor

__all__ = ["collate", "collate_float_fn", "collate_int_fn", "collate_numpy_array_fn",
           "collate_numpy_scalar_fn", "collate_str_fn", "collate_tensor_fn", "default_collate",
           "default_collate_err_msg_format", "default_collate_fn_map", "default_convert",
           "np_str_obj_array_pattern"]

CollateMap = dict[type | tuple[type, ...], Callable[..., Any]]

np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
    "found {}")


def default_convert(data: Any) -> Any:
    """Without batching, as PyTorch's: numpy arrays and scalars become tensors (arrays of
    strings or objects, and string scalars, pass through; one of another dtype no tensor
    has, a datetime64, is as_tensor's TypeError), in mappings, namedtuples and sequences
    too, each kept of its own type where it can be rebuilt (a tuple becomes a list, a range
    a list); the rest passes through."""
    elem_type = type(data)
    if isinstance(data, Tensor):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_"):
        if elem_type.__name__ == "ndarray" and np_str_obj_array_pattern.search(data.dtype.str):
            return data
        return as_tensor(data)
    if isinstance(data, Mapping):
        return _rebuilt_mapping(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # a namedtuple
        return elem_type(*(default_convert(v) for v in data))
    if isinstance(data, tuple):
        return [default_convert(v) for v in data]
    if isinstance(data, Sequence) and not isinstance(data, (str, bytes)):
        return _rebuilt_sequence(data, [default_convert(v) for v in data])
    return data


def _rebuilt_mapping(elem: Mapping[Any, Any], fields: dict[Any, Any]) -> Any:
    """``fields`` in a mapping of ``elem``'s type: a copy of it updated (a mutable mapping
    keeps its extra properties), else the type built from them, else a dict, as
    PyTorch's collate and convert."""
    try:
        if isinstance(elem, collections.abc.MutableMapping):
            clone = copy.copy(elem)
            clone.update(fields)
            return clone
        return type(elem)(fields)
    except TypeError:
        return fields


def _rebuilt_sequence(elem: Sequence[Any], items: list[Any]) -> Any:
    """``items`` in a sequence of ``elem``'s type, as ``_rebuilt_mapping`` (a range, which
    cannot be rebuilt, gives a list)."""
    try:
        if isinstance(elem, collections.abc.MutableSequence):
            clone = copy.copy(elem)
            for i, item in enumerate(items):
                clone[i] = item
            return clone
        return type(elem)(items)  # type: ignore[call-arg]
    except TypeError:
        return items


def collate(batch: Sequence[Any], *, collate_fn_map: CollateMap | None = None) -> Any:
    """Collate a batch by the type of its first element: the function ``collate_fn_map``
    names for that type (else for the first of its keys the element is an instance of);
    mappings, namedtuples and sequences field by field (a tuple's fields as a list); else
    PyTorch's TypeError."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)

    def each(samples: Sequence[Any]) -> Any:
        return collate(samples, collate_fn_map=collate_fn_map)

    if isinstance(elem, Mapping):
        return _rebuilt_mapping(elem, {key: each([d[key] for d in batch]) for key in elem})
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a namedtuple
        return elem_type(*(each(samples) for samples in zip(*batch, strict=False)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if not all(len(e) == size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch, strict=False))
        if isinstance(elem, tuple):
            return [each(samples) for samples in transposed]  # as PyTorch: a list
        return _rebuilt_sequence(elem, [each(samples) for samples in transposed])
    raise TypeError(default_collate_err_msg_format.format(elem_type))


def collate_tensor_fn(batch: Sequence[Tensor], *,
                      collate_fn_map: CollateMap | None = None) -> Tensor:
    return stack(list(batch), 0)


def collate_numpy_array_fn(batch: Sequence[np.ndarray], *,
                           collate_fn_map: CollateMap | None = None) -> Any:
    elem = batch[0]
    if np_str_obj_array_pattern.search(elem.dtype.str) is not None:  # strings, objects
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    return collate([as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch: Sequence[np.generic], *,
                            collate_fn_map: CollateMap | None = None) -> Tensor:
    return tensor(np.array(batch))  # their numpy dtype, as torch.as_tensor(batch)


def collate_float_fn(batch: Sequence[float], *,
                     collate_fn_map: CollateMap | None = None) -> Tensor:
    return tensor(list(batch), dtype=D.float64)


def collate_int_fn(batch: Sequence[int], *, collate_fn_map: CollateMap | None = None) -> Tensor:
    return tensor(list(batch))


def collate_str_fn(batch: Sequence[str | bytes], *,
                   collate_fn_map: CollateMap | None = None) -> Sequence[str | bytes]:
    return batch


default_collate_fn_map: CollateMap = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,  # and np.memmap, a subclass
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,  # no string scalars
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def default_collate(batch: Sequence[Any]) -> Any:
    """Stack a list of samples into a batch, as PyTorch's default_collate: tensors and
    numpy arrays are stacked, numbers become a tensor (ints int64, floats float64), strings
    stay a list, and dicts, namedtuples, tuples and lists are collated field by field;
    ``default_collate_fn_map`` decides each type, as PyTorch's."""
    return collate(batch, collate_fn_map=default_collate_fn_map)
