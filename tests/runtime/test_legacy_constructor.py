"""``rt.Tensor(...)`` is PyTorch's legacy constructor, as ``torch.Tensor(...)``: sizes make an
uninitialized tensor of the default float dtype (``nn.Parameter(torch.Tensor(out, in))`` in
older layers), a sequence its values as floats; ``rt.FloatTensor(...)`` and ``x.new(...)``
share its rules with their own dtype."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")

CASES = ["()", "(3)", "(2, 3)", "(0)", "([1, 2])", "([[1, 2]])", "(lib.Size([2, 3]))",
         "(np.array([1, 2]))", "([True, False])", "((1, 2))", "([])", "(2.5)", "(True)",
         "(2, 3.0)", "('ab')", "([1, 2], device='cpu')", "(-1)", "(x)"]


def _outcome(lib: Any, case: str) -> Any:
    x = lib.ones(2, dtype=lib.int64)
    try:
        t = eval(f"lib.Tensor{case}", {"lib": lib, "np": np, "x": x})
    except (TypeError, RuntimeError) as e:
        return "RuntimeError" if isinstance(e, RuntimeError) else "TypeError", str(e)
    return tuple(t.shape), str(t.dtype).rsplit(".", 1)[-1]


@pytest.mark.parametrize("case", CASES)
def test_tensor_constructor_matches_torch(case: str) -> None:
    assert _outcome(rt, case) == _outcome(torch, case)


def test_default_dtype_decides() -> None:
    old = rt.get_default_dtype()
    rt.set_default_dtype(rt.float64)
    try:
        assert rt.Tensor(2).dtype is rt.float64 and rt.Tensor([1, 2]).dtype is rt.float64
    finally:
        rt.set_default_dtype(old)
    assert rt.Tensor(2).dtype is old


def test_old_style_layer() -> None:
    class Layer(rt.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = rt.nn.Parameter(rt.Tensor(3, 4))
            self.bias = rt.nn.Parameter(rt.Tensor(3))
            rt.nn.init.kaiming_uniform_(self.weight)
            rt.nn.init.zeros_(self.bias)

        def forward(self, x: Any) -> Any:
            return x @ self.weight.t() + self.bias

    layer = Layer()
    assert layer.weight.dtype is rt.float32 and layer.weight.requires_grad
    layer(rt.ones(2, 4)).sum().backward()
    assert layer.weight.grad.shape == (3, 4)


def test_a_tensor_shares_its_storage() -> None:
    x = rt.ones(2, dtype=rt.int64)
    y = rt.Tensor(x)
    y.add_(1)
    assert x.tolist() == [2, 2] and y.dtype is rt.int64


def test_typed_constructors_and_new() -> None:
    assert rt.FloatTensor(2, 3).shape == (2, 3) and rt.LongTensor([1, 2]).dtype is rt.int64
    with pytest.raises(TypeError, match=r"^new\(\): data must be a sequence \(got float\)$"):
        rt.FloatTensor(2.5)
    x = rt.ones(2, dtype=rt.float64)
    assert x.new().shape == (0,) and x.new(2, 2).dtype is rt.float64
    assert x.new([1, 2]).dtype is rt.float64
