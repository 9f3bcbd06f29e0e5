"""Tensor ops of issue 11 (item 2) in a compiled step: equal to eager, with no fallback."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt

TOL = 2e-5


def _inputs() -> list[rt.Tensor]:
    r = np.random.default_rng(11)
    x = rt.tensor(r.standard_normal((4, 5)).astype(np.float32), requires_grad=True)
    w = rt.tensor(r.standard_normal((5, 6)).astype(np.float32), requires_grad=True)
    return [x, w]


def _step(x: rt.Tensor, w: rt.Tensor) -> Any:
    h = x @ w
    # put (accumulate or not) checks its flat positions in a check step: no value is read
    loss = (h.put(rt.tensor([1, 1, -1]), rt.tensor([1.0, 2.0, 3.0]), accumulate=True).sum()
            + (h.put(rt.tensor([0, 7]), h[0, :2]) * h).sum()
            + rt.addmm(h[:, :4], h, h.t(), beta=0, alpha=2.0).sum()
            + rt.einsum(h, [0, 1], w, [2, 1], [0, 2]).sum()
            + rt.index_add(h, 0, rt.tensor([1, 1]), h[:2], alpha=0.5).sum()
            + rt.norm(h, p=None, dim=1).sum()
            + (rt.index_copy(h, 1, rt.tensor([4, 0, 4]), h[:, 1:4] * 2) * h).sum())
    loss.backward()
    return loss, x.grad, w.grad


@pytest.mark.parametrize("backend", ["interpreter", "auto"])
def test_put_and_products_compiled_equal_eager(backend: str) -> None:
    eager_in, comp_in = _inputs(), _inputs()
    step = planner.compile(_step, backend=backend)
    for i in range(2):
        for t in eager_in + comp_in:
            t.grad = None
        expected = _step(*eager_in)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a fallback to eager warns: a failure here
            got = step(*comp_in)
        for k, (a, e) in enumerate(zip(got, expected, strict=True)):
            np.testing.assert_allclose(a.detach().numpy(), e.detach().numpy(), rtol=TOL,
                                       atol=TOL, err_msg=f"{i} {k}")
    assert step.captures == 1


def test_put_out_of_range_raises_in_a_compiled_step() -> None:
    def step(x: rt.Tensor, idx: rt.Tensor) -> rt.Tensor:
        return x.put(idx, rt.tensor([1.0]), accumulate=True).sum()

    compiled = planner.compile(step)
    x = rt.tensor(np.zeros(6, np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert compiled(x, rt.tensor([5])).item() == 1.0
    with pytest.raises(IndexError, match="out of range: tried to access index 6 on a tensor "
                       "of 6 elements."):
        compiled(x, rt.tensor([6]))


@pytest.mark.parametrize("backend", ["interpreter", "auto"])
def test_remainder_zero_keeps_the_dividends_sign_compiled(backend: str) -> None:
    """A zero remainder is signed as fmod's (the dividend's), as PyTorch's, compiled as eager
    (numpy's, and the kernels', took the divisor's sign)."""
    a = np.array([-7.5, -3.0, -0.0, 0.0, 3.0, 7.5, -1.0, 2.0], np.float32)
    b = np.array([2.5, 3.0, 2.5, -3.0, -3.0, -2.5, 0.75, 0.5], np.float32)

    def step(x: rt.Tensor, y: rt.Tensor) -> Any:
        return x % y, rt.remainder(x * 2, -1.5), (x + 0) % 2.5

    compiled = planner.compile(step, backend=backend)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = compiled(rt.tensor(a), rt.tensor(b))
    torch = pytest.importorskip("torch")
    want = (torch.tensor(a) % torch.tensor(b), torch.remainder(torch.tensor(a) * 2, -1.5),
            (torch.tensor(a) + 0) % 2.5)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g.numpy(), w.numpy())
        np.testing.assert_array_equal(np.signbit(g.numpy()), np.signbit(w.numpy()))
