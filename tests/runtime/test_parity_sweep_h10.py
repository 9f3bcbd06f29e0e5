"""Eager parity with PyTorch for Python numbers of a subclass of int or float (an IntEnum
member, a float subclass): promoted as the numbers they are, not as numpy's int64/float64
arrays (which lifted a float32 tensor to float64, a float16 one too)."""

from __future__ import annotations

import enum
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 3


class Ratio(float):
    pass


class Count(int):
    pass


OPS = [
    lambda x, v: x * v,
    lambda x, v: v * x,
    lambda x, v: x + v,
    lambda x, v: x - v,
    lambda x, v: x / v,
    lambda x, v: x ** v,
    lambda x, v: x.where(x > 1, v),
]


@pytest.mark.parametrize("value", [Level.HIGH, Ratio(0.3), Count(2)])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int8", "int64"])
@pytest.mark.parametrize("op", range(len(OPS)))
def test_a_number_subclass_promotes_as_the_number(value: Any, dtype: str, op: int) -> None:
    data = np.array([0.0, 1.0, 2.0, 3.5]) if "float" in dtype else np.array([0, 1, 2, 3])
    x = rt.tensor(data.tolist(), dtype=getattr(rt, dtype))
    tx = torch.tensor(data.tolist(), dtype=getattr(torch, dtype))
    fn = OPS[op]
    try:
        want = fn(tx, value)
    except RuntimeError:
        with pytest.raises(RuntimeError):
            fn(x, value)
        return
    got = fn(x, value)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(got.float().numpy(), want.float().numpy(), rtol=1e-6)
