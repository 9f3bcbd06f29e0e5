"""Indexing and in-place writes inside a compiled step, against PyTorch (h7's sweep): the
compiled step gives PyTorch's values and gradients, with no fallback to eager mode."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt

torch = pytest.importorskip("torch")


def _run(body: Callable[..., Any], inputs: Callable[[Any, int], tuple[Any, ...]],
         compiled: bool) -> list[np.ndarray]:
    """Three steps of ``loss = (body(w, *inputs) ** 2).sum()`` with SGD: each step's result
    and w's gradient (runtime, compiled where asked)."""
    w = rt.nn.Parameter(rt.arange(120.0).reshape(2, 3, 4, 5) / 100)
    opt = rt.optim.SGD([w], lr=0.1)

    def step(*args: Any) -> Any:
        opt.zero_grad()
        y = body(w, *args) * 1
        (y * y).sum().backward()
        opt.step()
        return y

    run = planner.compile(step) if compiled else step
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for i in range(3):
            out.append(run(*inputs(rt, i)).detach().numpy().copy())
    return [*out, w.detach().numpy().copy()]


def _torch(body: Callable[..., Any], inputs: Callable[[Any, int], tuple[Any, ...]]
           ) -> list[np.ndarray]:
    w = torch.nn.Parameter(torch.arange(120.0).reshape(2, 3, 4, 5) / 100)
    opt = torch.optim.SGD([w], lr=0.1)
    out = []
    for i in range(3):
        opt.zero_grad()
        y = body(w, *inputs(torch, i)) * 1
        (y * y).sum().backward()
        opt.step()
        out.append(y.detach().numpy().copy())
    return [*out, w.detach().numpy().copy()]


CASES: dict[str, tuple[Callable[..., Any], Callable[[Any, int], tuple[Any, ...]]]] = {
    # PyTorch selects an int (a 0-d index tensor) first: idx's dims stay in place
    "int_slice_index": (lambda w, idx: w[1, :, idx], lambda m, i: (m.tensor([i, 3]),)),
    "zero_d_slice_index": (lambda w, i0, idx: w[i0, :, idx],
                           lambda m, i: (m.tensor(i % 2), m.tensor([i, 3]))),
    "none_zero_d_index": (lambda w, i0, idx: w[None, i0, :, idx],
                          lambda m, i: (m.tensor(i % 2), m.tensor([i, 3]))),
    "slice_zero_d_slice_index": (lambda w, i0, idx: w[:, i0, :, idx],
                                 lambda m, i: (m.tensor(i % 3), m.tensor([i, 4]))),
    "setitem_int_slice_index": (
        lambda w, v: (lambda h: (h.__setitem__((1, slice(None), h.new_tensor([0, 3]).long()),
                                               v), h)[1])(w * 2),
        lambda m, i: (m.ones(3, 2, 5) * i,)),
    "setitem_true": (lambda w, v: (lambda h: (h.__setitem__((0, True), v), h)[1])(w * 2),
                     lambda m, i: (m.ones(3, 4, 5) * i,)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_compiled_indexing_as_pytorch(case: str) -> None:
    body, inputs = CASES[case]
    want = _torch(body, inputs)
    for compiled in (False, True):
        got = _run(body, inputs, compiled)
        assert len(got) == len(want)
        for g, t in zip(got, want):
            assert g.shape == t.shape
            np.testing.assert_allclose(g, t, rtol=1e-5, atol=1e-6)


def test_compiled_write_into_a_diagonal() -> None:
    """A write into a diagonal view (``h.diagonal(...).mul_(3)``) writes the base, as eager
    mode's and PyTorch's; the capture writes it back through diagonal_scatter."""
    def body(w: Any) -> Any:
        h = w * 1
        h.diagonal(0, 2, 3).mul_(3)
        h.diagonal(1, 0, 1).add_(h.diagonal(1, 0, 1) * 2)
        return h

    want = _torch(body, lambda m, i: ())
    for compiled in (False, True):
        got = _run(body, lambda m, i: (), compiled)
        for g, t in zip(got, want, strict=True):
            np.testing.assert_allclose(g, t, rtol=1e-5, atol=1e-6)
