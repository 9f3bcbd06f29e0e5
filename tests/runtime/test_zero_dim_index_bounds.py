"""A 0-d integer tensor in an index is the integer it holds, for PyTorch: out of range, the
error names the dimension by the index's place in the key (``y[:, t]``: dimension 1), where
a 1-d index tensor's names its place among the index tensors (dimension 0)."""

from __future__ import annotations

from typing import Any

import pytest

import runtime as rt

torch = pytest.importorskip("torch")

KEYS = {
    "slice then 0-d": lambda L: (slice(None), L.tensor(3)),
    "ellipsis then 0-d": lambda L: (Ellipsis, L.tensor(4)),
    "none, int, 0-d": lambda L: (None, 1, L.tensor(3)),
    "0-d first": lambda L: (L.tensor(5),),
    "negative 0-d": lambda L: (slice(None), L.tensor(-4)),
    "1-d then 0-d": lambda L: (L.tensor([0]), L.tensor(3)),
    "slice, 0-d, 1-d": lambda L: (slice(None), L.tensor(3), L.tensor([1])),
    "1-d after a slice": lambda L: (slice(None), L.tensor([3])),
}


@pytest.mark.parametrize("key", list(KEYS))
def test_out_of_range_index_names_pytorchs_dimension(key: str) -> None:
    def message(lib: Any) -> str:
        with pytest.raises(IndexError) as info:
            lib.zeros(5, 3, 4)[KEYS[key](lib)]
        return str(info.value)

    assert message(rt) == message(torch)
