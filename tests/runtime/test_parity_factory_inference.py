"""Factories against PyTorch: an integer or bool tensor made requiring grad raises the
factories' own text (which names complex dtypes; ``requires_grad_`` keeps its shorter one),
and a list of numpy scalars has their dtypes promoted in the list's order (a list of int16
scalars was int64)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")

FACTORIES = {
    "ones": lambda m: m.ones(2, dtype=m.int64, requires_grad=True),
    "tensor": lambda m: m.tensor([1, 2], requires_grad=True),
    "zeros": lambda m: m.zeros(2, dtype=m.int32, requires_grad=True),
    "arange": lambda m: m.arange(3, requires_grad=True),
    "full": lambda m: m.full((2,), 1, requires_grad=True),
    "randint": lambda m: m.randint(0, 3, (2,), requires_grad=True),
    "randperm": lambda m: m.randperm(3, requires_grad=True),
    "empty_bool": lambda m: m.empty(2, dtype=m.bool, requires_grad=True),
    "ones_like": lambda m: m.ones_like(m.ones(2, dtype=m.int64), requires_grad=True),
    "new_ones": lambda m: m.zeros(2, dtype=m.int64).new_ones(2, requires_grad=True),
    "parameter": lambda m: m.nn.Parameter(m.ones(2, dtype=m.int64)),
    "requires_grad_": lambda m: m.ones(2, dtype=m.int64).requires_grad_(),
    "detach_requires_grad_": lambda m: m.ones(2).long().detach().requires_grad_(True),
}


def _raised(m: Any, fn: Any) -> tuple[str, str]:
    with pytest.raises(Exception) as info:  # noqa: PT011 - compared with torch's below
        fn(m)
    return type(info.value).__name__, str(info.value)


@pytest.mark.parametrize("name", list(FACTORIES))
def test_requiring_grad_of_an_integer_tensor_raises_pytorchs_text(name: str) -> None:
    assert _raised(rt, FACTORIES[name]) == _raised(torch, FACTORIES[name])


LISTS = {
    "int16": [np.int16(1), np.int16(2)],
    "uint8": [np.uint8(1)],
    "int16_and_int": [np.int16(1), 2],
    "int16_and_float": [np.int16(1), 2.5],
    "int8_and_int16": [np.int8(1), np.int16(2)],
    "nested": [[np.int8(1)], [np.int16(2)]],
    "uint8_and_int8": [np.uint8(1), np.int8(1)],
    "int16_and_bool": [np.int16(1), True],
    "bool_and_int": [True, 2],
    "arrays": [np.array([1, 2], np.int16), np.array([3, 4], np.int16)],
    "float16": [np.float16(1)],
    "ints": [[1, 2], [3, 4]],
}


@pytest.mark.parametrize("name", list(LISTS))
@pytest.mark.parametrize("factory", ["tensor", "as_tensor"])
def test_a_list_of_numpy_scalars_has_their_promoted_dtype(name: str, factory: str) -> None:
    data = LISTS[name]
    got, want = getattr(rt, factory)(data), getattr(torch, factory)(data)
    assert got.dtype.name == str(want.dtype).split(".")[-1]
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("data", [[np.uint16(5), 1], [np.int32(1), np.uint32(2)]])
def test_a_list_promoting_a_wide_unsigned_type_is_pytorchs_error(data: list[Any]) -> None:
    assert _raised(rt, lambda m: m.tensor(data)) == _raised(torch, lambda m: m.tensor(data))
