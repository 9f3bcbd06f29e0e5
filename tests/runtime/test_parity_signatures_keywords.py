"""A ported script calls by keyword as PyTorch names the parameters (``torch.sum(input=x)``,
``torch.where(c, input=x, other=y)``): each call of the table runs here with the values
PyTorch gives (worked out by hand; no torch needed). The names themselves are swept against
PyTorch's in test_parity_signatures_sweep.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt

X = [[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]]


def x() -> rt.Tensor:
    return rt.tensor(X)


def v() -> rt.Tensor:
    return rt.tensor([1.0, 2.0, 3.0])


CALLS: list[tuple[str, Callable[[], Any], Any]] = [
    ("sum", lambda: rt.sum(input=x()), 5.0),
    ("sum dim", lambda: rt.sum(input=x(), dim=1, keepdim=True), [[2.0], [3.0]]),
    ("sum dtype", lambda: rt.sum(input=rt.tensor([1, 2]), dtype=rt.float64), 3.0),
    ("mean", lambda: rt.mean(input=x()), 5.0 / 6),
    ("mean dim", lambda: rt.mean(input=x(), dim=0), [2.5, 1.5, -1.5]),
    ("prod", lambda: rt.prod(input=v(), dim=0), 6.0),
    ("add", lambda: rt.add(input=v(), other=v(), alpha=2), [3.0, 6.0, 9.0]),
    ("sub", lambda: rt.sub(input=v(), other=1), [0.0, 1.0, 2.0]),
    ("mul", lambda: rt.mul(input=v(), other=2), [2.0, 4.0, 6.0]),
    ("div", lambda: rt.div(input=v(), other=2, rounding_mode="floor"), [0.0, 1.0, 1.0]),
    ("true_divide", lambda: rt.true_divide(input=v(), other=2), [0.5, 1.0, 1.5]),
    ("pow", lambda: rt.pow(input=v(), exponent=2), [1.0, 4.0, 9.0]),
    ("matmul", lambda: rt.matmul(input=x(), other=v()), [6.0, -4.0]),
    ("where", lambda: rt.where(rt.tensor([True, False, True]), input=v(), other=0.0),
     [1.0, 0.0, 3.0]),
    ("where condition", lambda: rt.where(condition=rt.tensor([False, True, False]), input=v(),
                                         other=-v()), [-1.0, 2.0, -3.0]),
    ("clamp", lambda: rt.clamp(input=v(), min=2), [2.0, 2.0, 3.0]),
    ("clip", lambda: rt.clip(input=v(), max=2), [1.0, 2.0, 2.0]),
    ("max", lambda: rt.max(input=x()), 5.0),
    ("max dim", lambda: rt.max(input=x(), dim=1).values, [3.0, 5.0]),
    ("max other", lambda: rt.max(input=v(), other=rt.tensor([2.0, 2.0, 2.0])), [2.0, 2.0, 3.0]),
    ("min other", lambda: rt.min(v(), other=rt.tensor([2.0, 2.0, 2.0])), [1.0, 2.0, 2.0]),
    ("amax", lambda: rt.amax(input=x(), dim=0), [4.0, 5.0, 3.0]),
    ("argmax", lambda: rt.argmax(input=x(), dim=1), [2, 1]),
    ("cumsum", lambda: rt.cumsum(input=v(), dim=0), [1.0, 3.0, 6.0]),
    ("exp", lambda: rt.exp(input=rt.tensor([0.0])), [1.0]),
    ("abs", lambda: rt.abs(input=x()), [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]),
    ("neg", lambda: rt.neg(input=v()), [-1.0, -2.0, -3.0]),
    ("sign", lambda: rt.sign(input=x())[0], [1.0, -1.0, 1.0]),
    ("eq", lambda: rt.eq(input=v(), other=2.0), [False, True, False]),
    ("maximum", lambda: rt.maximum(input=v(), other=rt.tensor(2.0)), [2.0, 2.0, 3.0]),
    ("std", lambda: rt.std(input=v()), 1.0),
    ("var", lambda: rt.var(input=v(), correction=0), 2.0 / 3),
    ("norm", lambda: rt.norm(input=rt.tensor([3.0, 4.0])), 5.0),
    ("logsumexp", lambda: rt.logsumexp(input=rt.tensor([0.0, 0.0]), dim=0), np.log(2.0)),
    ("any", lambda: rt.any(input=rt.tensor([0, 1])), True),
    ("all", lambda: rt.all(input=rt.tensor([0, 1])), False),
    ("reshape", lambda: rt.reshape(input=v(), shape=(3, 1))[2], [3.0]),
    ("transpose", lambda: rt.transpose(input=x(), dim0=0, dim1=1)[0], [1.0, 4.0]),
    ("swapaxes", lambda: rt.swapaxes(input=x(), axis0=0, axis1=1)[2], [3.0, -6.0]),
    ("swapdims", lambda: rt.swapdims(input=x(), dim0=1, dim1=0)[1], [-2.0, 5.0]),
    ("unsqueeze", lambda: rt.unsqueeze(input=v(), dim=0).shape, (1, 3)),
    ("squeeze", lambda: rt.squeeze(input=rt.ones(1, 2), dim=0).shape, (2,)),
    ("flatten", lambda: rt.flatten(input=x()), [1.0, -2.0, 3.0, 4.0, 5.0, -6.0]),
    ("cat", lambda: rt.cat(tensors=[v(), v()], dim=0).shape, (6,)),
    ("concatenate", lambda: rt.concatenate([v(), v()], axis=0).shape, (6,)),
    ("split", lambda: len(rt.split(tensor=v(), split_size_or_sections=1)), 3),
    ("tensor_split", lambda: len(rt.tensor_split(v(), sections=3)), 3),
    ("permute", lambda: rt.permute(input=x(), dims=(1, 0)).shape, (3, 2)),
    ("flip", lambda: rt.flip(input=v(), dims=(0,)), [3.0, 2.0, 1.0]),
    ("tile", lambda: rt.tile(input=v(), dims=(2,)).shape, (6,)),
    ("Tensor.new_zeros", lambda: v().new_zeros(size=(2,)), [0.0, 0.0]),
    ("inverse", lambda: rt.inverse(input=rt.eye(2) * 2)[0], [0.5, 0.0]),
    ("det", lambda: rt.det(input=rt.eye(2) * 2), 4.0),
    ("pinverse", lambda: rt.pinverse(input=rt.eye(2) * 2, rcond=1e-15)[1], [0.0, 0.5]),
    ("mm", lambda: rt.mm(input=x(), mat2=x().T)[0], [14.0, -24.0]),
    ("fmax", lambda: rt.fmax(input=v(), other=rt.tensor(2.0)), [2.0, 2.0, 3.0]),
    ("xlogy", lambda: rt.xlogy(input=rt.tensor([2.0]), other=rt.tensor([1.0])), [0.0]),
    ("zeros_like", lambda: rt.zeros_like(input=v()), [0.0, 0.0, 0.0]),
    ("Tensor.split", lambda: len(v().split(split_size=2)), 2),
    ("gather", lambda: rt.gather(input=v(), dim=0, index=rt.tensor([2, 0])), [3.0, 1.0]),
    ("index_select", lambda: rt.index_select(input=v(), dim=0, index=rt.tensor([1])), [2.0]),
    ("tril", lambda: rt.tril(input=rt.ones(2, 2), diagonal=0)[0], [1.0, 0.0]),
    ("sort", lambda: rt.sort(input=x(), dim=1, descending=True).values[0], [3.0, 1.0, -2.0]),
    ("topk", lambda: rt.topk(input=v(), k=1).values, [3.0]),
    ("dot", lambda: rt.dot(input=v(), tensor=v()), 14.0),
    ("outer", lambda: rt.outer(input=v(), vec2=v())[1], [2.0, 4.0, 6.0]),
    ("isclose", lambda: rt.isclose(input=v(), other=v()), [True, True, True]),
    ("addcmul", lambda: rt.addcmul(input=v(), tensor1=v(), tensor2=v(), value=2),
     [3.0, 10.0, 21.0]),
    ("addcdiv", lambda: rt.addcdiv(input=v(), tensor1=v(), tensor2=v()), [2.0, 3.0, 4.0]),
    ("lerp", lambda: rt.lerp(input=v(), end=rt.zeros(3), weight=0.5), [0.5, 1.0, 1.5]),
    ("median", lambda: rt.median(input=v()), 2.0),
    ("kron", lambda: rt.kron(input=rt.tensor([1.0, 2.0]), other=rt.tensor([1.0, 1.0])),
     [1.0, 1.0, 2.0, 2.0]),
    ("ger", lambda: rt.ger(input=v(), vec2=v())[0], [1.0, 2.0, 3.0]),
    ("round", lambda: rt.round(input=rt.tensor([1.26]), decimals=1), [1.3]),
    ("sigmoid", lambda: rt.sigmoid(input=rt.tensor([0.0])), [0.5]),
    ("softmax", lambda: rt.softmax(input=rt.zeros(2), dim=0), [0.5, 0.5]),
    ("log_softmax", lambda: rt.log_softmax(input=rt.zeros(1), dim=0), [0.0]),
    ("relu", lambda: rt.relu(input=rt.tensor([-1.0, 2.0])), [0.0, 2.0]),
    ("masked_fill", lambda: rt.masked_fill(input=v(), mask=rt.tensor([True, False, False]),
                                           value=0.0), [0.0, 2.0, 3.0]),
    ("clamp_min", lambda: rt.clamp_min(input=v(), min=2.0), [2.0, 2.0, 3.0]),
    ("Tensor.sum", lambda: x().sum(dim=0, keepdim=False, dtype=rt.float64), [5.0, 3.0, -3.0]),
    ("Tensor.add", lambda: v().add(other=1, alpha=2), [3.0, 4.0, 5.0]),
    ("Tensor.pow", lambda: v().pow(exponent=2), [1.0, 4.0, 9.0]),
    ("Tensor.swapaxes", lambda: x().swapaxes(axis0=1, axis1=0)[0], [1.0, 4.0]),
]


@pytest.mark.parametrize(("name", "call", "want"), CALLS, ids=[c[0] for c in CALLS])
def test_keyword_call_gives_pytorchs_value(name: str, call: Callable[[], Any], want: Any) -> None:
    got = call()
    if isinstance(got, rt.Tensor):
        got = got.numpy()
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64),
                               np.asarray(want, dtype=np.float64), rtol=1e-6)


def test_softmax_takes_a_dtype_third() -> None:
    """torch.softmax(input, dim, dtype) and Tensor.softmax(dim, dtype): a dtype passed third
    was taken as nn.functional's ``_stacklevel`` and dropped (a float32 result)."""
    x = rt.zeros(2)
    assert rt.softmax(x, 0, rt.float64).dtype is rt.float64
    assert x.log_softmax(0, rt.float64).dtype is rt.float64
    assert rt.special.softmax(x, 0, rt.float64).dtype is rt.float64
    assert rt.nn.functional.softmax(x, 0, 3, rt.float64).dtype is rt.float64  # F's own order
