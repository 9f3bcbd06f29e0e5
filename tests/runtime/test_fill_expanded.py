"""fill_ and zero_ of a tensor whose elements share memory (an expand()ed one), which PyTorch
allows for a number: every element, and the storage it shares with its base, gets the value.
The in-place ops PyTorch refuses there (a tensor value, arithmetic, random fills) raise its
error, as before."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import runtime as rt

OVERLAP = "unsupported operation: more than one element of the written-to tensor"
VIEWS = {
    "expand_rows": lambda m: m.zeros(3).expand(2, 3),
    "expand_column": lambda m: m.arange(6.0).reshape(2, 3)[:, :1].expand(2, 4),
    "expand_transposed": lambda m: m.ones(1, 3).expand(4, 3).t(),
    "expand_int": lambda m: m.arange(3).expand(2, 3),
}
# the base's values after the view is filled with v: the cells the view shares take it
BASE_AFTER = {
    "expand_rows": lambda v: [v, v, v],
    "expand_column": lambda v: [v, 1, 2, v, 4, 5],
    "expand_transposed": lambda v: [[v, v, v]],
    "expand_int": lambda v: [v, v, v],
}


@pytest.mark.parametrize("view", sorted(VIEWS))
@pytest.mark.parametrize("op", ["fill_", "zero_"])
def test_fill_of_an_expanded_tensor_writes_its_storage(view: str, op: str) -> None:
    t = VIEWS[view](rt)
    base = t._base
    version = t._version
    out = t.fill_(3) if op == "fill_" else t.zero_()
    want = 0 if op == "zero_" else 3
    assert out is t and t._version > version
    assert (t.numpy() == want).all()
    np.testing.assert_array_equal(base.numpy(), BASE_AFTER[view](want))


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_fill_of_an_expanded_tensor_equals_pytorchs(view: str) -> None:
    torch = pytest.importorskip("torch")
    ours, theirs = VIEWS[view](rt), VIEWS[view](torch)
    ours.fill_(2.5 if ours.dtype.is_floating_point else 2)
    theirs.fill_(2.5 if theirs.dtype.is_floating_point else 2)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    np.testing.assert_array_equal(ours._base.numpy(), theirs._base.numpy())


@pytest.mark.parametrize("op", [
    lambda t: t.fill_(rt.tensor(2.0)),  # a tensor value: PyTorch checks the overlap
    lambda t: t.add_(1.0),
    lambda t: t.uniform_(),
    lambda t: t.copy_(rt.ones(2, 3)),
])
def test_what_pytorch_refuses_there_raises_its_error(op: Any) -> None:
    with pytest.raises(RuntimeError, match=OVERLAP):
        op(rt.zeros(3).expand(2, 3))


def test_a_view_of_a_leaf_that_requires_grad_still_raises() -> None:
    x = rt.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x.expand(2, 3).fill_(1.0)
