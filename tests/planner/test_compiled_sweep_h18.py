"""Ops fixed by the PyTorch test ports of tests/runtime/test_ported_tensor_ops_h18*.py, inside
planner.compile: a compiled step computes what eager mode does (values, gradients, dtypes) and
raises the same errors, with no fallback warning: a same-shape view_as/reshape (now a view),
expand to new leading dims of size 1, ravel of a transposed tensor (now a contiguous copy),
searchsorted/bucketize with a sorter (its range check), a bool-mask write of a 0-d tensor of
another dtype (masked_fill's cast, not index_put's dtype error), an index tensor on a size-0
dimension, clamp_ with one bound. (Floats within 1e-6: a fused sum adds in its own order.)"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt


def _compiled_calls(step: Any, calls: list[tuple[Any, ...]]) -> list[Any]:
    compiled = planner.compile(step)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = [compiled(*a) for a in calls]
    assert not [str(w.message) for w in caught if "runs eagerly" in str(w.message)]
    return got


def _assert_same(got: Any, want: Any) -> None:
    if isinstance(want, rt.Tensor):
        assert (got.dtype, tuple(got.shape)) == (want.dtype, tuple(want.shape))
        g, w = got.detach().numpy(), want.detach().numpy()
        if want.dtype.is_floating_point:  # a fused sum adds in its own order (as equivalence's)
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
        else:
            np.testing.assert_array_equal(g, w)
    elif isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _assert_same(g, w)
    else:
        assert got == want


def _check(step: Any, calls: list[tuple[Any, ...]]) -> None:
    got = _compiled_calls(step, calls)
    for g, a in zip(got, calls, strict=True):
        _assert_same(g, step(*a))


def test_same_shape_view_as_and_reshape_grads() -> None:
    w = rt.randn(3, 4, requires_grad=True)

    def step(x: rt.Tensor) -> Any:
        w.grad = None
        y = (x * w).view_as(w)
        z = y.reshape(3, 4) * 2
        loss = (z + y.view(3, 4)).sum()
        loss.backward()
        return loss, z._base is not None, w.grad.clone()

    _check(step, [(rt.randn(3, 4),) for _ in range(3)])


def test_expand_to_new_leading_dims_of_size_one() -> None:
    v = rt.randn(5, requires_grad=True)

    def step(x: rt.Tensor) -> Any:
        v.grad = None
        e = v.expand(1, 1, 5)
        loss = (e * x).sum()
        loss.backward()
        return loss, e.shape, v.grad.clone()

    _check(step, [(rt.randn(2, 1, 5),) for _ in range(3)])


def test_ravel_of_a_transposed_parameter() -> None:
    m = rt.randn(4, 3, requires_grad=True)

    def step(x: rt.Tensor) -> Any:
        m.grad = None
        r = m.t().ravel()
        loss = (r * x).sum()
        loss.backward()
        return loss, r, m.grad.clone()

    _check(step, [(rt.randn(12),) for _ in range(3)])


def test_searchsorted_with_a_sorter_and_its_range_check() -> None:
    def step(b: rt.Tensor, v: rt.Tensor, s: rt.Tensor) -> Any:
        return rt.searchsorted(b, v, sorter=s), rt.bucketize(v, rt.tensor([0.2, 0.5, 0.9]),
                                                              out_int32=True)

    b, s = rt.tensor([0.9, 0.1, 0.5]), rt.tensor([1, 2, 0])
    _check(step, [(b, rt.rand(6), s) for _ in range(3)])
    compiled = planner.compile(step)
    compiled(b, rt.rand(6), s)
    for run in (compiled, step):
        # (a compiled step's error names the plan step after PyTorch's text)
        with pytest.raises(RuntimeError, match="^torch.searchsorted\\(\\): sorter index out of "
                                               "range"):
            run(b, rt.rand(6), rt.tensor([1, 2, 3]))


def test_mask_write_of_a_zero_dim_tensor_of_another_dtype() -> None:
    def step(x: rt.Tensor, value: rt.Tensor) -> Any:
        y = x.clone()
        y[y > 0] = value
        return y

    _check(step, [(rt.randn(8), rt.tensor(3, dtype=rt.int64)) for _ in range(3)])


def test_index_tensor_on_a_dimension_of_size_zero() -> None:
    def step(x: rt.Tensor, i: rt.Tensor) -> Any:
        return x[:, i] + 1

    compiled = planner.compile(step)
    for run in (compiled, step):
        with pytest.raises(IndexError, match="^index is out of bounds for dimension with size "
                                             "0$"):
            run(rt.empty(3, 0), rt.tensor([0]))


def test_clamp_inplace_with_one_bound() -> None:
    def step(x: rt.Tensor) -> Any:
        return x.clone().clamp_(min=0.1), x.clone().clamp_(max=-0.1)

    _check(step, [(rt.randn(5),) for _ in range(3)])
