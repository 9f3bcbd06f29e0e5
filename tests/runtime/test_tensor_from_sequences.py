"""rt.tensor of nested lists and tuples: the dtype, values and PyTorch's list-of-ndarrays
warning, as torch gives them, whatever mix of scalars, numpy scalars, arrays and tensors the
levels hold (the items' types are read a level at a time, ``creation._nested_types``)."""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import runtime as rt
from runtime.ops.settings import is_warn_always_enabled, set_warn_always

torch = pytest.importorskip("torch")

# each case: a function of the library (rt or torch) building the data
CASES: dict[str, Callable[[Any], Any]] = {
    "floats": lambda lib: [1.0, 2.0, 3.0],
    "nested": lambda lib: [[1.0, 2.0], [3.0, 4.0]],
    "tuples": lambda lib: ((1, 2), (3, 4)),
    "mixed_levels": lambda lib: [[1, 2], (3, np.int16(4))],
    "numpy_scalars": lambda lib: [[np.float32(1.5), 2.0], [3.0, np.float64(4.0)]],
    "arrays": lambda lib: [np.array([1.0, 2.0]), np.array([3.0, 4.0])],
    "deep_array": lambda lib: [[[1.0], [2.0]], [np.array([3.0]), [4.0]]],
    "zero_dim_array_later": lambda lib: [1.0, np.array(2.0)],
    "sub_arrays": lambda lib: [np.ones((2, 3)), np.zeros((2, 3))],
    "empty_arrays": lambda lib: [np.ones((0, 3)), np.ones((0, 3))],
    "tensors": lambda lib: [lib.tensor(1.0), lib.tensor(2.5)],
    "deep_tensors": lambda lib: [[lib.tensor([1]), 2], [3, lib.tensor(4)]],
    "tensor_and_array": lambda lib: [[lib.tensor(1.0)], [np.array(2.0)]],
    "bools": lambda lib: [[True, False], [False, True]],
    "empty_levels": lambda lib: [[], []],
}


@pytest.fixture
def warn_always() -> Iterator[None]:
    old_rt, old_torch = is_warn_always_enabled(), torch.is_warn_always_enabled()
    set_warn_always(True)
    torch.set_warn_always(True)
    yield
    set_warn_always(old_rt)
    torch.set_warn_always(old_torch)


def _made(lib: Any, data: Any) -> tuple[Any, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = lib.tensor(data)
    # torch's message ends "(Triggered internally at ...)"
    return out, [str(w.message).split(" (Triggered")[0] for w in caught
                 if "numpy.ndarrays" in str(w.message)]


def _outcome(lib: Any, data: Any) -> tuple[Any, list[str]]:
    try:
        return _made(lib, data)
    except (TypeError, ValueError) as exc:
        return exc, []


@pytest.mark.parametrize("case", sorted(CASES))
def test_tensor_of_nested_sequences_as_torch(case: str, warn_always: None) -> None:
    got, got_warned = _made(rt, CASES[case](rt))
    want, want_warned = _made(torch, CASES[case](torch))
    assert got.dtype.name == str(want.dtype).removeprefix("torch.")
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert got_warned == want_warned, case


@pytest.mark.parametrize("data", [lambda: [np.array(1.0), 2.0], lambda: [[np.array(1.0)]],
                                  lambda: ([np.array(1.0), np.array(2.0)],)])
def test_a_zero_dim_array_first_is_torchs_error(data: Callable[[], Any]) -> None:
    """PyTorch reads the sizes along the first items: a 0-d array there has no length."""
    with pytest.raises(TypeError) as want:
        torch.tensor(data())
    with pytest.raises(TypeError, match=f"^{re.escape(str(want.value))}$"):
        rt.tensor(data())
