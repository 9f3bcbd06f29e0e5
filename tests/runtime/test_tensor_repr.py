"""``repr`` of a tensor as PyTorch writes it: 4 decimals, whole numbers with a trailing dot,
scientific notation over a wide range, one width for every element, rows wrapped at 80
columns, large tensors summarized, and the dtype, size, grad_fn or requires_grad after."""

from __future__ import annotations

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")

VALUES = [[0.9, 0.9], [0.123456789], [1.0, 2.0], [1e-5, 1.0], [1e10, 1.0],
          [float("nan"), 1.5, float("inf")], [], [[1.5, -2.25], [100.0, 0.001]], [-0.0, 0.0],
          [1e-9], [123456.789], [1e8, 2.0], [float("-inf"), 1.0], 3.14159, 2]


def _same(ours: rt.Tensor, theirs: object) -> None:
    assert repr(ours).replace("runtime.", "torch.") == repr(theirs)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("values", VALUES, ids=[str(v)[:20] for v in VALUES])
def test_values_as_torch(values: object, dtype: str) -> None:
    _same(rt.tensor(values, dtype=getattr(rt, dtype)), torch.tensor(values,
                                                                     dtype=getattr(torch, dtype)))


@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4), (30,), (1001,), (40, 50), (5, 5, 5, 5),
                                   (0, 3), (2, 0), ()])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32, np.bool_])
def test_shapes_as_torch(shape: tuple[int, ...], dtype: type) -> None:
    raw = np.asarray(np.random.default_rng(0).standard_normal(shape) * 10)
    x = raw > 0 if dtype is np.bool_ else raw.astype(dtype)
    _same(rt.from_numpy(np.array(x)), torch.from_numpy(np.array(x)))


def test_autograd_suffixes_as_torch() -> None:
    ours, theirs = rt.tensor([1.5, 2.25], requires_grad=True), torch.tensor(
        [1.5, 2.25], requires_grad=True)
    _same(ours, theirs)
    _same(ours * 2, theirs * 2)
    _same(rt.ones(2, 2) * 1e-7, torch.ones(2, 2) * 1e-7)
    wide = np.random.default_rng(1).standard_normal((4, 9))
    _same(rt.from_numpy(wide).requires_grad_(), torch.from_numpy(wide).requires_grad_())
