"""dtypes against PyTorch: result dtypes of ops on integer and bool tensors, scalar
conversions, and the errors PyTorch raises. Each test states its expected values by hand and,
where torch is importable, also checks them against torch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt

DTYPES = ["bool", "int64", "float16", "float32", "float64"]


def _torch() -> Any:
    return pytest.importorskip("torch")


def _same_as_torch(fn: Callable[[Any], Any]) -> None:
    """fn(rt) and fn(torch) agree: values, dtypes and shapes, or error types and texts."""
    torch = _torch()
    try:
        want = fn(torch)
    except Exception as e:  # noqa: BLE001 - the error itself is compared
        with pytest.raises(type(e)) as got:
            fn(rt)
        assert str(got.value).split("\n")[0] == str(e).split("\n")[0]
        return
    got = fn(rt)
    assert got.dtype.name == str(want.dtype).removeprefix("torch."), (got.dtype, want.dtype)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


# --- masked_fill keeps its input's dtype ----------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("value", [2.5, -2.5, True, 3, float("nan")])
def test_masked_fill_scalar_keeps_dtype(dtype: str, value: Any) -> None:
    def fn(m: Any) -> Any:
        return m.zeros(3, dtype=getattr(m, dtype)).masked_fill(
            m.tensor([True, False, True]), value)

    if dtype == "int64" and value != value:
        with pytest.raises(RuntimeError, match="cannot be converted to type int64_t"):
            fn(rt)
    else:
        assert fn(rt).dtype is getattr(rt, dtype)
    _same_as_torch(fn)


def test_masked_fill_converts_the_value_toward_zero() -> None:
    mask = rt.tensor([True, False])
    assert rt.zeros(2, dtype=rt.int64).masked_fill(mask, -2.7).tolist() == [-2, 0]
    assert rt.zeros(2, dtype=rt.bool).masked_fill(mask, 0.5).tolist() == [True, False]
    big = rt.full((2,), 2**60 + 1).masked_fill(rt.tensor([False, True]), 1.5)
    assert big.tolist() == [2**60 + 1, 1]  # the unmasked int64 values stay exact


# --- clamp of an integer tensor with float bounds ---------------------------------------------


@pytest.mark.parametrize("dtype", ["bool", "int64", "float16", "float64"])
@pytest.mark.parametrize("bounds", [(0.5, 1.5), (0, 1), (None, 2.5), (-1, None)])
def test_clamp_promotes_as_torch(dtype: str, bounds: tuple[Any, Any]) -> None:
    def fn(m: Any) -> Any:
        return m.tensor([0, 1, 2]).to(getattr(m, dtype)).clamp(*bounds)

    out = fn(rt)
    floaty = any(isinstance(b, float) for b in bounds)
    if dtype in ("bool", "int64"):
        assert out.dtype is (rt.float32 if floaty else rt.int64)
    if bounds == (0.5, 1.5) and dtype == "int64":
        assert out.tolist() == [0.5, 1.0, 1.5]
    _same_as_torch(fn)


# --- mean: floating point only, and its dtype= ------------------------------------------------


@pytest.mark.parametrize("dtype", ["bool", "int64"])
def test_mean_of_integers_is_an_error(dtype: str) -> None:
    name = {"bool": "Bool", "int64": "Long"}[dtype]
    with pytest.raises(RuntimeError, match=f"Input dtype must be either a floating point or "
                                           f"complex dtype. Got: {name}"):
        rt.tensor([1, 0]).to(getattr(rt, dtype)).mean()
    _same_as_torch(lambda m: m.tensor([1, 0]).to(getattr(m, dtype)).mean())
    _same_as_torch(lambda m: m.tensor([[1, 0]]).to(getattr(m, dtype)).mean(-1))


def test_mean_dtype() -> None:
    out = rt.tensor([1, 2]).mean(dtype=rt.float64)
    assert out.dtype is rt.float64 and out.item() == 1.5
    out = rt.mean(rt.tensor([[1.0, 2.0]]), (0, 1), True, dtype=rt.float16)
    assert out.dtype is rt.float16 and out.shape == (1, 1)
    with pytest.raises(RuntimeError, match="Optional dtype must be .* Got: Long"):
        rt.tensor([1.0]).mean(dtype=rt.int64)
    _same_as_torch(lambda m: m.tensor([[1, 2], [4, 7]]).mean(0, dtype=m.float64))
    _same_as_torch(lambda m: m.tensor([1.0]).mean(dtype=m.int64))
