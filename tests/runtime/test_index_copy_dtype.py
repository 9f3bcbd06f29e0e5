"""index_copy refuses a source of another dtype, as PyTorch (it cast it silently)."""

from __future__ import annotations

import re

import pytest

import runtime as rt


@pytest.mark.parametrize("in_place", [False, True])
def test_index_copy_refuses_another_dtype(in_place: bool) -> None:
    x, index, source = rt.ones(2), rt.tensor([0]), rt.ones(1, dtype=rt.float64)
    text = ("index_copy_(): self and source expected to have the same dtype, but got (self) "
            "Float and (source) Double")
    with pytest.raises(RuntimeError, match=re.escape(text)):
        x.index_copy_(0, index, source) if in_place else rt.index_copy(x, 0, index, source)
    assert rt.index_copy(x, 0, index, source.float()).tolist() == [1.0, 1.0]


def test_as_torch() -> None:
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError) as theirs:
        torch.ones(2).index_copy_(0, torch.tensor([0]), torch.ones(1, dtype=torch.float64))
    with pytest.raises(RuntimeError) as ours:
        rt.ones(2).index_copy_(0, rt.tensor([0]), rt.ones(1, dtype=rt.float64))
    assert str(ours.value) == str(theirs.value)


def test_slice_scatter_still_casts_its_source() -> None:
    out = rt.slice_scatter(rt.zeros(4), rt.ones(2, dtype=rt.float64), 0, 0, 2)
    assert out.dtype is rt.float32 and out.tolist() == [1.0, 1.0, 0.0, 0.0]  # as PyTorch
