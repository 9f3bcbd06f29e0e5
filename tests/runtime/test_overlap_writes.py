"""In-place ops whose written-to tensor shares memory with an input: PyTorch's errors
(assert_no_overlap for index_add_/index_copy_/put_/scatter_*/index_put_/gather(out=),
assert_no_partial_overlap for elementwise ops), where rt computed from a copy of the old
values and returned something; and the same ops where the memory is apart, as torch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")


def _cases(lib: Any) -> dict[str, Callable[[], Any]]:
    x = lib.arange(6.0)
    m = lib.arange(9.0).reshape(3, 3)
    i = lib.tensor([0, 1])
    return {
        "index_add_": lambda: x.index_add_(0, i, x[:2]),
        "index_add_whole": lambda: x.index_add_(0, lib.arange(6), x),
        "index_copy_": lambda: x.index_copy_(0, i, x[2:4]),
        "put_": lambda: x.put_(i, x[:2]),
        "scatter_": lambda: x.scatter_(0, i, x),
        "scatter_add_": lambda: x.scatter_add_(0, i, x),
        "scatter_reduce_": lambda: x.scatter_reduce_(0, i, x[:2], "sum"),
        "index_put_": lambda: x.index_put_((i,), x[:2]),
        "index_put_mask": lambda: x.index_put_((x > 2,), x[:3]),
        "gather_out": lambda: lib.gather(x, 0, i, out=x[:2]),
        "mul_shifted": lambda: x[1:].mul_(x[:-1]),
        "add_transposed": lambda: m.add_(m.t()),
        "sub_reversed_halves": lambda: x[:3].sub_(x[3:]),  # apart: fine
        "mul_self": lambda: x.mul_(x),  # the same elements: fine
        "masked_scatter_": lambda: x.masked_scatter_(x > 2, x),  # PyTorch checks no overlap
        "index_add_apart": lambda: x.index_add_(0, i, lib.ones(2)),
        "gather_out_apart": lambda: lib.gather(x, 0, i, out=lib.empty(2)),
    }


def _outcome(lib: Any, case: str) -> tuple[str, Any]:
    try:
        out = _cases(lib)[case]()
    except RuntimeError as exc:
        return "error", str(exc).split("\n")[0]
    return "value", np.asarray(out.tolist())


@pytest.mark.parametrize("case", sorted(_cases(torch)))
def test_a_write_overlapping_an_input_as_torch(case: str) -> None:
    got, want = _outcome(rt, case), _outcome(torch, case)
    assert got[0] == want[0], (case, got, want)
    if got[0] == "error":
        assert got[1] == want[1]
    else:
        np.testing.assert_array_equal(got[1], want[1])
