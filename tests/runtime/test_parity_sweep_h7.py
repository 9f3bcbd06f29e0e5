"""Indexing, views and in-place writes against PyTorch (h7's sweep): writes into an expand()ed
tensor, the argument parser's errors, and the like."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest

import runtime as rt

torch = pytest.importorskip("torch")


def _outcome(fn: Callable[[Any], Any], m: Any) -> tuple[Any, ...]:
    """fn(m)'s value (lists), or its exception's type and text, and the warnings' first
    words."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = fn(m)
            result: tuple[Any, ...] = ("value", out.tolist() if hasattr(out, "tolist") else out)
        except Exception as e:  # noqa: BLE001 - the error is what is compared
            result = ("error", type(e).__name__, str(e))
    return (*result, [str(w.message).split(" (Triggered")[0] for w in caught])


def _same(fn: Callable[[Any], Any]) -> None:
    assert _outcome(fn, rt) == _outcome(fn, torch)


def _set(x: Any, key: Any, value: Any) -> Any:
    x[key] = value
    return x


# --- t[key] = v on an expand()ed tensor ------------------------------------------------------
# PyTorch copies into t[key] (its error only where that view has an element twice) and
# index_put_s an advanced key, with its deprecation warnings
EXPANDED_SETS: dict[str, Callable[[Any], Any]] = {
    "row_number": lambda m: _set(m.zeros(3).expand(2, 3), 0, 2.0),
    "row_tensor": lambda m: _set(m.zeros(3).expand(2, 3), 0, m.tensor([1.0, 2.0, 3.0])),
    "element": lambda m: _set(m.zeros(3).expand(2, 3), (0, 0), m.tensor(3.0)),
    "slice_of_row": lambda m: _set(m.zeros(3).expand(2, 3), (1, slice(1, None)), 2.0),
    "int_row": lambda m: _set(m.zeros(3, dtype=m.long).expand(2, 3), -1, 7),
    "index": lambda m: _set(m.zeros(3).expand(2, 3), m.tensor([1]), m.tensor([1.0, 2.0, 3.0])),
    "list": lambda m: _set(m.zeros(3).expand(2, 3), [1], 4.0),
    "mask": lambda m: _set(m.zeros(3).expand(2, 3), m.tensor([True, False]), 1.0),
    "mask_2d": lambda m: _set(m.zeros(3).expand(2, 3),
                              m.tensor([[True, False, True], [False, False, False]]), 1.0),
    "mask_row": lambda m: _set(m.zeros(3).expand(2, 3), m.tensor([True, False]),
                               m.tensor([1.0, 2.0, 3.0])),
    "row_then_index": lambda m: _set(m.zeros(3).expand(2, 3), (0, m.tensor([1])), 4.0),
    "slice_then_index": lambda m: _set(m.zeros(3).expand(2, 3),
                                       (slice(None), m.tensor([1])), 4.0),
}


@pytest.mark.parametrize("case", sorted(EXPANDED_SETS))
def test_setitem_on_expanded_tensor(case: str) -> None:
    _same(EXPANDED_SETS[case])


def test_setitem_on_expanded_tensor_refuses_a_view_with_shared_elements() -> None:
    # the column of an expand() has one element twice: PyTorch's copy_ refuses it (its row
    # has not)
    for key in ((slice(None), 0), Ellipsis, 0):
        _same(lambda m, key=key: _set(m.zeros(3).expand(2, 3), key, 5.0))


def test_setitem_on_expanded_tensor_writes_its_base() -> None:
    def fn(m: Any) -> Any:
        base = m.arange(3.0)
        base.expand(2, 3)[1] = m.tensor([4.0, 5.0, 6.0])
        return base

    _same(fn)


def test_setitem_on_expanded_tensor_gradients() -> None:
    def fn(m: Any) -> Any:
        a = m.zeros(3, dtype=m.float64, requires_grad=True)
        x = a.clone().expand(2, 3)
        v = m.tensor([1.0, 2.0], dtype=m.float64, requires_grad=True)
        x[1, 1:] = v * 2
        (x * m.arange(6.0, dtype=m.float64).reshape(2, 3)).sum().backward()
        return [x.tolist(), a.grad.tolist(), v.grad.tolist()]

    _same(fn)
