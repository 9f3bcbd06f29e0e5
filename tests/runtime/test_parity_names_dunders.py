"""Tensor's Python protocols against PyTorch's: numpy's array protocol, ``in``, iteration,
``reversed``, unary ``+``, ``complex()``, the in-place ``//=``, ``%=``, ``**=``."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")

A = np.array([[1.0, 2.0], [3.0, 4.0]])


def _error(fn: Callable[[Any], Any]) -> None:
    texts = []
    for m in (rt, torch):
        with pytest.raises(Exception) as info:
            fn(m)
        texts.append((info.type.__name__, str(info.value)))
    assert texts[0] == texts[1]


def test_numpy_array_protocol() -> None:
    for m in (rt, torch):
        x = m.tensor(A, dtype=m.float32)
        values = np.asarray(x)
        assert values.dtype == np.float32 and values.tolist() == A.tolist()
        assert np.asarray(x, dtype=np.float64).dtype == np.float64
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # torch's __array_wrap__
            result = np.sin(x)
            mask = np.greater(x, 2.0)
        assert isinstance(result, m.Tensor)
        np.testing.assert_allclose(result.numpy(), np.sin(A).astype(np.float32))
        assert mask.dtype == m.uint8 and mask.tolist() == [[0, 0], [1, 1]]
    _error(lambda m: np.asarray(m.ones(2, requires_grad=True)))


def test_contains_iter_reversed_pos_complex() -> None:
    for m in (rt, torch):
        x = m.tensor(A)
        assert 2.0 in x and m.tensor(4.0) in x and 9 not in x
        rows = list(x)
        assert len(rows) == 2 and rows[1].tolist() == [3.0, 4.0]
        assert reversed(m.tensor([1.0, 2.0])).tolist() == [2.0, 1.0]
        assert reversed(m.tensor(3.0)).item() == 3.0
        assert (+x) is x
        assert complex(m.tensor(2.5)) == 2.5 + 0j
    _error(lambda m: "a" in m.tensor(A))
    _error(lambda m: iter(m.tensor(1.0)))
    _error(lambda m: +m.tensor([True]))
    _error(lambda m: complex(m.tensor(A)))


def test_inplace_floordiv_mod_pow() -> None:
    results = []
    for m in (rt, torch):
        y = m.tensor([5.0, 7.0, -3.0])
        z = y
        z //= 2
        assert z is y and y._version == 1
        z %= 2
        z **= 2
        w = m.tensor([5, 7])
        view = w[:1]
        w //= 2
        results.append((y.tolist(), w.tolist(), view.tolist(), y._version))
    assert results[0] == results[1]


def test_inplace_pow_autograd() -> None:
    grads = []
    for m in (rt, torch):
        x = m.tensor([1.5, 2.0], requires_grad=True)
        y = x * 1.0
        y **= 3
        y.sum().backward()
        grads.append((x.grad.tolist(), y.grad_fn.name()))
    assert grads[0] == grads[1]
    _error(lambda m: m.ones(2, requires_grad=True).__ipow__(2))


def test_cuda_array_interface_refused_on_cpu() -> None:
    for m in (rt, torch):
        with pytest.raises(AttributeError, match="Can't get __cuda_array_interface__ on "
                                                 "non-CUDA tensor type: [a-z]+.FloatTensor If "
                                                 "CUDA data is required use tensor.cuda()"):
            m.ones(2).__cuda_array_interface__  # noqa: B018 - the property raises
    assert not hasattr(rt.ones(2), "__cuda_array_interface__")
