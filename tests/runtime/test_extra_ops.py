"""roll, repeat_interleave, nan_to_num, diag, logaddexp, var_mean/std_mean, count_nonzero,
logical_or/xor, index_add, unflatten, split_with_sizes and the in-place scatter_/index_add_:
gradients checked numerically, a compiled step equal to eager without falling back, errors.
(Against PyTorch: test_extra_ops_torch.py.)"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
from runtime.autograd.gradcheck import gradcheck

X = np.random.default_rng(0).standard_normal((3, 4))

DIFFERENTIABLE = {
    "roll": lambda x: rt.roll(x, (1, -3), (0, 1)),
    "roll_flat": lambda x: x.roll(5),
    "repeat_interleave": lambda x: x.repeat_interleave(3, dim=1),
    "repeat_interleave_tensor": lambda x: x.repeat_interleave(rt.tensor([2, 0, 1]), dim=0),
    "nan_to_num": lambda x: rt.nan_to_num(x.masked_fill(x < -0.5, np.inf).masked_fill(
        x > 1.0, np.nan), posinf=3.0),
    "diag_1d": lambda x: rt.diag(x[0], 1),
    "diag_2d": lambda x: rt.diag(x, -1),
    "logaddexp": lambda x: rt.logaddexp(x, x.flip(1) * 3),
    "var_mean": lambda x: rt.var_mean(x, 1)[0] + rt.var_mean(x, 1)[1],
    "std_mean": lambda x: rt.std_mean(x, 0, keepdim=True)[0],
    "index_add": lambda x: x.index_add(1, rt.tensor([0, 3, 0]), x[:, :3] * 2, alpha=0.5),
    "unflatten": lambda x: x.unflatten(1, (2, -1)).sum(2),
}


@pytest.mark.parametrize("name", sorted(DIFFERENTIABLE))
def test_gradients_check(name: str) -> None:
    x = rt.tensor(X, requires_grad=True)
    assert gradcheck(DIFFERENTIABLE[name], (x,))


def test_values() -> None:
    x = rt.tensor(np.arange(12.0).reshape(3, 4))
    np.testing.assert_array_equal(rt.roll(x, 1, 1).numpy(), np.roll(x.numpy(), 1, 1))
    np.testing.assert_array_equal(x.roll(-5).numpy(), np.roll(x.numpy(), -5))
    np.testing.assert_array_equal(x.repeat_interleave(2).numpy(), np.repeat(x.numpy(), 2))
    np.testing.assert_array_equal(rt.diag(x, 1).numpy(), np.diag(x.numpy(), 1))
    np.testing.assert_array_equal(rt.diag(rt.tensor([1.0, 2.0]), -2).numpy(),
                                  np.diag([1.0, 2.0], -2))
    y = rt.tensor([1.0, np.nan, np.inf, -np.inf], dtype=rt.float32)
    f32 = np.finfo(np.float32)
    np.testing.assert_array_equal(rt.nan_to_num(y).numpy(), [1.0, 0.0, f32.max, f32.min])
    np.testing.assert_array_equal(y.nan_to_num(nan=1.0, posinf=2.0, neginf=-3.0).numpy(),
                                  [1.0, 1.0, 2.0, -3.0])
    assert rt.count_nonzero(rt.tensor([[0, 1], [2, 0]]), 0).numpy().tolist() == [1, 1]
    a, b = rt.tensor([True, False, False]), rt.tensor([1, 1, 0])
    assert rt.logical_or(a, b).numpy().tolist() == [True, True, False]
    assert rt.logical_xor(a, b).numpy().tolist() == [False, True, False]
    assert [t.shape for t in x.split_with_sizes([1, 3], 1)] == [(3, 1), (3, 3)]
    z = rt.zeros(2, 4)
    assert z.scatter_(1, rt.tensor([[1], [3]]), 1.0) is z
    assert z.numpy().tolist() == [[0, 1, 0, 0], [0, 0, 0, 1]]
    z.scatter_(1, rt.tensor([[1], [1]]), rt.ones(2, 1), reduce="add")
    assert z.numpy().tolist() == [[0, 2, 0, 0], [0, 1, 0, 1]]
    w = rt.zeros(3)
    w.index_add_(0, rt.tensor([0, 2, 0]), rt.tensor([1.0, 2.0, 3.0]))
    assert w.numpy().tolist() == [4.0, 0.0, 2.0]
    assert rt.logaddexp(rt.tensor([-np.inf]), rt.tensor([-np.inf])).numpy().tolist() == [
        -np.inf]


def test_errors() -> None:
    x = rt.zeros(3, 4)
    with pytest.raises(RuntimeError, match="shifts and dimensions must align"):
        rt.roll(x, (1, 2), 0)
    with pytest.raises(RuntimeError, match="repeats must have the same size as input along "
                                           "dim"):
        x.repeat_interleave(rt.tensor([1, 2]), 0)
    with pytest.raises(RuntimeError, match="diag\\(\\): Supports 1D or 2D tensors. Got 3D"):
        rt.diag(rt.zeros(2, 2, 2))
    with pytest.raises(RuntimeError, match="Number of indices \\(2\\) should be equal to "
                                           "source.size\\(dim\\): \\(3\\), for dim: 1"):
        x.index_add(1, rt.tensor([0, 1]), rt.ones(3, 3))
    with pytest.raises(RuntimeError, match="don't multiply up to the size of dim 1"):
        x.unflatten(1, (3, 2))


def test_a_compiled_step_with_them_equals_eager() -> None:
    def build() -> tuple[Any, Any]:
        w = rt.tensor(np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32),
                      requires_grad=True)
        opt = rt.optim.SGD([w], lr=0.1)

        def step(x: Any) -> Any:
            opt.zero_grad()
            h = rt.roll(x @ w, 2, 1).repeat_interleave(2, dim=0)
            h = rt.nan_to_num(h.masked_fill(h < -1.5, -np.inf), neginf=-4.0)
            h = rt.logaddexp(h, rt.diag(h[:6, :6], 0)[None, :])
            h = h.index_add(1, rt.tensor([0, 5]), h[:, :2])
            v, m = rt.var_mean(h, 1)
            loss = (v + m.square()).sum() + rt.diag(w[:, :4]).square().sum()
            loss.backward()
            opt.step()
            return loss

        return step, w

    x = rt.tensor(np.random.default_rng(2).standard_normal((5, 4)).astype(np.float32))
    eager_step, ew = build()
    fn, w = build()
    step = planner.compile(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = [float(step(x)) for _ in range(3)]
    want = [float(eager_step(x)) for _ in range(3)]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    np.testing.assert_allclose(w.detach().numpy(), ew.detach().numpy(), rtol=1e-5, atol=1e-6)
