"""A compiled step that uses the tensor ops of issue 11 equals eager, without falling back,
and its elementwise parts fuse."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt

TOL = 2e-5  # fused kernels sum in another order: float32 results move by a few ulp


def _step(x: rt.Tensor, w: rt.Tensor, idx: rt.Tensor, order: rt.Tensor) -> Any:
    """A loss through every op here; returns the loss, its grads and integer side results."""
    trace = rt.einsum("ii,bj->bj", w[:, :5], x)[:, :1]    # a diagonal, then an outer product
    h = rt.einsum("bi,ij->bj", x, w) + trace * 0.01       # (4, 6)
    a, b = h.chunk(2, 1)
    c, d = h.split([2, 4], 1)
    tri = rt.tril(rt.mm(a, b.t())) + (rt.bmm(h.unsqueeze(0), h.t().unsqueeze(0))).triu(1)[0]
    g = h.gather(1, idx) + rt.index_select(h, 1, order).sum(1, keepdim=True)
    s = h.scatter_add(1, idx, g.detach() * 0 + 1.0).scatter(1, idx, g)
    m = h.masked_fill(h > 0.5, -0.25).repeat(1, 2)
    stats = (h.var(1) + h.std(0, unbiased=False).sum() + h.logsumexp(1) + h.norm(dim=1)
             + rt.linalg.vector_norm(h, 1, dim=1) + h.cumsum(1)[:, -1])
    top = h.topk(3, dim=1).values.sum(1) + h.sort(0, descending=True).values[0].sum()
    mod = (h % 0.75) * h + (h.detach() // 0.5) * 0.1 + rt.square(h) * rt.rsqrt(h * h + 1.0)
    small = (h.flip((0,)) * rt.reciprocal(h * h + 1.0) + rt.narrow(h, 1, 1, 2).tile((1, 3))
             + rt.outer(h[0], h[1])[:4] * rt.dot(h[2], h[3]) + h.amin(0) + rt.movedim(h, 0, 1).t()
             + rt.unbind(h, 1)[2].unsqueeze(1) + rt.where(rt.isfinite(h), h, 0.0))
    loss = (tri.sum() + g.sum() + s.sum() + m.sum() + stats.sum() + top.sum() + mod.sum()
            + small.sum()
            + rt.eye(4, 6).mul(h).sum() + rt.linspace(0, 1, 6).mul(h).sum())
    loss.backward()
    flags = rt.logical_and((~(h > 0)).any(1), rt.all(h < 2.0))
    return loss, x.grad, w.grad, h.argmax(1), (h.argmin(0) % 3) // 1, flags


def _inputs() -> list[Any]:
    r = np.random.default_rng(5)
    x = rt.tensor(r.standard_normal((4, 5)).astype(np.float32), requires_grad=True)
    w = rt.tensor(r.standard_normal((5, 6)).astype(np.float32), requires_grad=True)
    idx = rt.tensor([[0, 3], [5, 5], [2, 1], [4, 0]])
    order = rt.tensor([5, 0, 2])
    return [x, w, idx, order]


def _np(v: Any) -> np.ndarray:
    return np.asarray(v.detach().numpy())


@pytest.mark.parametrize("backend", ["interpreter", "auto"])
def test_tensor_ops_step_compiled_equals_eager(backend: str) -> None:
    eager_in, comp_in = _inputs(), _inputs()
    step = planner.compile(_step, backend=backend)
    for i in range(3):
        for t in eager_in[:2] + comp_in[:2]:
            t.grad = None
        expected = _step(*eager_in)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a fallback to eager warns: a failure here
            got = step(*comp_in)
        for k, (a, e) in enumerate(zip(got, expected, strict=True)):
            a_np, e_np = _np(a), _np(e)
            assert a_np.shape == e_np.shape and a_np.dtype == e_np.dtype, (i, k)
            np.testing.assert_allclose(a_np, e_np, rtol=TOL, atol=TOL, err_msg=f"{i} {k}")
    assert step.captures == 1
    if backend == "auto":
        assert step.plan.kernels, "the elementwise parts fuse into kernels"


def test_view_after_transpose_raises_in_a_compiled_step() -> None:
    def bad(x: rt.Tensor) -> rt.Tensor:
        return x.t().view(-1).sum()

    x = rt.tensor(np.ones((2, 3), np.float32), requires_grad=True)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        planner.compile(bad)(x)


def test_gather_index_out_of_range_raises_in_a_compiled_step() -> None:
    def step(x: rt.Tensor, idx: rt.Tensor) -> rt.Tensor:
        return x.gather(1, idx).sum()

    compiled = planner.compile(step)
    x = rt.tensor(np.ones((2, 3), np.float32))
    assert compiled(x, rt.tensor([[0], [2]])).item() == 2.0
    with pytest.raises(RuntimeError, match="index 3 is out of bounds for dimension 1 with "
                       "size 3"):
        compiled(x, rt.tensor([[0], [3]]))


def test_float16_step_compiled_equals_eager() -> None:
    """float16 runs on float16 storage (numpy computes in it); kernels skip it, unfused."""

    def step(x: rt.Tensor, w: rt.Tensor) -> Any:
        y = ((x.half() * w).tanh() + rt.randn_like(w) * 0).sum()
        y.backward()
        return y, w.grad

    x = rt.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
    w_eager, w_comp = (rt.tensor(np.ones(4, np.float16) * 0.5, requires_grad=True)
                       for _ in range(2))
    expected = step(x, w_eager)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = planner.compile(step)(x, w_comp)
    for a, e in zip(got, expected, strict=True):
        assert a.dtype is rt.float16
        np.testing.assert_array_equal(_np(a), _np(e))
