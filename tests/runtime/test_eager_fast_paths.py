"""The eager fast paths (dispatch, node construction, tensor creation) keep PyTorch's
observable behaviour."""

from __future__ import annotations

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")


def _sequence_numbers(lib: object) -> list[int]:
    x = lib.ones(3, requires_grad=True)  # type: ignore[attr-defined]
    y = lib.ones(3, requires_grad=True)  # type: ignore[attr-defined]
    a = x * 2  # makes x's accumulator
    first = a.grad_fn._sequence_nr() if lib is torch else a.grad_fn.sequence_nr()
    del a  # x's accumulator dies with the graph: the next product makes a new one
    b = x * y  # makes two accumulators
    c = b * 2
    nums = [b.grad_fn, c.grad_fn]
    acc = b.grad_fn.next_functions[0][0]
    seq = [n._sequence_nr() if lib is torch else n.sequence_nr() for n in nums]
    acc_seq = acc._sequence_nr() if lib is torch else acc.sequence_nr()
    return [s - first for s in seq] + [acc_seq]


def test_accumulators_take_no_sequence_number_as_torchs() -> None:
    # a leaf's AccumulateGrad is numbered UINT64_MAX and does not shift later nodes' numbers
    assert _sequence_numbers(rt) == _sequence_numbers(torch) == [1, 2, (1 << 64) - 1]


def test_accumulator_meta_and_identity() -> None:
    x = rt.ones(2, 3, dtype=rt.float64, requires_grad=True)
    a = x * 2
    b = x + 1
    acc = a.grad_fn.next_functions[0][0]
    assert b.grad_fn.next_functions[0][0] is acc  # alive while a graph holds it
    assert type(acc).__name__ == "AccumulateGrad"
    assert tuple(acc.input_metas[0].shape) == (2, 3)
    assert acc.input_metas[0].dtype is rt.float64
    assert acc.next_functions == ()
    (a.sum() + b.sum()).backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 3.0))


def test_recorded_node_metas_edges_and_saved() -> None:
    x = rt.ones(2, 3, requires_grad=True)
    w = rt.full((3,), 2.0)  # no gradient: no edge
    y = (x * 1.0) * w
    node = y.grad_fn
    assert node.name() == "MulBackward0"
    assert node.next_functions[1] == (None, 0)
    assert node.next_functions[0][0].name() == "MulBackward0"
    assert [tuple(m.shape) for m in node.metas] == [(2, 3), (3,)]
    prod = x * 2.5  # a Python number stays a constant among the metas
    assert prod.grad_fn.metas[1] == 2.5
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 2.0))
