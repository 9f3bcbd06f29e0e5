"""Page-locked host memory for batches (``DataLoader(pin_memory=True)``).

A GPU copies from page-locked (pinned) host memory by DMA, without the staging copy a
pageable array needs. Where CuPy sees a GPU, each CPU tensor of a batch is copied into a
CuPy pinned buffer (``cupyx.empty_pinned``) and handed on as a CPU tensor sharing it; where
none is seen, PyTorch warns and pins nothing, and so does the DataLoader."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...cuda import is_available
from ...tensor import Tensor


def can_pin() -> bool:
    """Whether a GPU is there to pin for."""
    return is_available()


def _pinned(t: Tensor) -> Tensor:
    import cupyx  # type: ignore[import-not-found]

    from ...creation import from_numpy

    src = t.detach().numpy()
    buf = cupyx.empty_pinned(src.shape, src.dtype)
    np.copyto(buf, src)
    return from_numpy(buf)


def pin_memory(data: Any) -> Any:
    """``data`` with every CPU tensor in it (through dicts, tuples, lists) in pinned memory,
    as ``torch.utils.data._utils.pin_memory.pin_memory``."""
    if isinstance(data, Tensor):
        return _pinned(data) if data.device == "cpu" else data
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, Mapping):
        return type(data)({k: pin_memory(v) for k, v in data.items()})  # type: ignore[call-arg]
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # a namedtuple
        return type(data)(*(pin_memory(v) for v in data))
    if isinstance(data, tuple):
        return tuple(pin_memory(v) for v in data)
    if isinstance(data, Sequence):
        return [pin_memory(v) for v in data]
    return data
