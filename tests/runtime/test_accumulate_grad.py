"""AccumulateGrad keeps a gradient's buffer as .grad only when nobody else can see it."""

from __future__ import annotations

import numpy as np
import pytest

import runtime as rt
from runtime.tensor import Tensor


def test_two_leaves_fed_the_same_gradient_do_not_share_it() -> None:
    x = rt.ones(3, requires_grad=True)
    y = rt.ones(3, requires_grad=True)
    (x + y).sum().backward()  # AddBackward hands one tensor to both leaves
    assert not np.shares_memory(x.grad._data, y.grad._data)
    x.grad.add_(1.0)
    np.testing.assert_array_equal(y.grad._data, [1.0, 1.0, 1.0])


def test_user_gradient_is_not_aliased() -> None:
    g = rt.ones(3)
    z = rt.ones(3, requires_grad=True)
    z.backward(g)
    assert not np.shares_memory(z.grad._data, g._data)
    z.backward(g)  # accumulates in place into z.grad, never into g
    np.testing.assert_array_equal(g._data, [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(z.grad._data, [2.0, 2.0, 2.0])


def test_gradient_kept_by_a_hook_is_not_mutated_by_accumulation() -> None:
    kept: list[Tensor] = []
    x = rt.ones(2, requires_grad=True)
    x.register_hook(lambda g: kept.append(g))
    (x * 2.0).sum().backward()
    (x * 2.0).sum().backward()
    np.testing.assert_array_equal(kept[0]._data, [2.0, 2.0])
    np.testing.assert_array_equal(x.grad._data, [4.0, 4.0])


def test_linear_weight_gradient_is_stolen_not_copied(monkeypatch: pytest.MonkeyPatch) -> None:
    lin = rt.nn.Linear(4, 3)
    x = rt.randn(5, 4)
    clones = []
    original = Tensor.clone
    monkeypatch.setattr(Tensor, "clone", lambda self: clones.append(self) or original(self))
    lin(x).sum().backward()
    assert clones == []
    assert lin.weight.grad._data.flags.c_contiguous
    np.testing.assert_allclose(lin.weight.grad._data, np.tile(x._data.sum(0), (3, 1)), rtol=1e-5)


def test_expanded_gradient_is_materialised() -> None:
    x = rt.ones(2, 3, requires_grad=True)
    x.sum().backward()  # SumBackward expands a scalar: a read-only broadcast view
    assert x.grad._data.flags.writeable
    x.sum().backward()
    np.testing.assert_array_equal(x.grad._data, np.full((2, 3), 2.0))
