"""``out=`` of the factories (zeros, ones, full, empty, arange, linspace, eye, rand, randn,
randint, randperm) and of linalg's ops of several results (qr, eigh, slogdet, svd), against
PyTorch: the result in out's dtype, out resized and returned, and PyTorch's errors."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")

FACTORIES: dict[str, Callable[[Any, Any], Any]] = {
    "zeros": lambda m, o: m.zeros(2, 3, out=o),
    "ones": lambda m, o: m.ones((2,), out=o),
    "full": lambda m, o: m.full((2,), 3.5, out=o),
    "full_bool": lambda m, o: m.full((2,), True, out=o),
    "arange": lambda m, o: m.arange(5, out=o),
    "arange_step": lambda m, o: m.arange(1, 4, 0.5, out=o),
    "linspace": lambda m, o: m.linspace(0, 3, 4, out=o),
    "eye": lambda m, o: m.eye(2, 3, out=o),
}


@pytest.mark.parametrize("dtype", ["float32", "int64", "float64"])
@pytest.mark.parametrize("name", list(FACTORIES))
def test_factory_out(name: str, dtype: str) -> None:
    if name == "arange_step" and dtype == "int64":
        dtype = "float64"  # an int64 step of 0.5 is 0 (an error on both sides: see below)
    results = []
    for m in (rt, torch):
        out = m.ones(4, dtype=getattr(m, dtype))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = FACTORIES[name](m, out)
        assert got is out
        results.append((str(out.dtype).split(".")[-1], tuple(out.shape), out.numpy()))
    assert results[0][:2] == results[1][:2]
    np.testing.assert_array_equal(results[0][2], results[1][2])


@pytest.mark.parametrize("name", ["empty", "rand", "randn", "randint", "randperm"])
def test_random_factory_out_shape_and_dtype(name: str) -> None:
    calls: dict[str, Callable[[Any, Any], Any]] = {
        "empty": lambda m, o: m.empty(2, 3, out=o),
        "rand": lambda m, o: m.rand(2, 3, out=o),
        "randn": lambda m, o: m.randn(2, 3, out=o),
        "randint": lambda m, o: m.randint(5, (2, 3), out=o),
        "randperm": lambda m, o: m.randperm(6, out=o),
    }
    seen = []
    for m in (rt, torch):
        out = m.empty(0, dtype=m.float64)
        assert calls[name](m, out) is out
        seen.append((tuple(out.shape), str(out.dtype).split(".")[-1]))
        if name == "randperm":
            assert sorted(out.tolist()) == list(range(6))
        if name == "randint":
            assert all(0 <= v < 5 for v in out.flatten().tolist())
    assert seen[0] == seen[1]


def _error(f: Callable[[Any], Any], m: Any) -> tuple[str, str]:
    try:
        f(m)
    except Exception as e:  # noqa: BLE001 - the type and text are compared
        return type(e).__name__, str(e)
    raise AssertionError("no error")


ERRORS: dict[str, Callable[[Any], Any]] = {
    "dtype_mismatch": lambda m: m.ones(2, out=m.empty(0), dtype=m.int64),
    "dtype_mismatch_arange": lambda m: m.arange(5, out=m.empty(0), dtype=m.int64),
    "dtype_mismatch_rand": lambda m: m.rand(2, out=m.empty(0), dtype=m.float64),
    "requires_grad": lambda m: m.zeros(2, out=m.ones(2, requires_grad=True)),
    "not_a_tensor": lambda m: m.zeros(2, out=[1]),
    "rand_long": lambda m: m.rand(2, out=m.empty(0, dtype=m.int64)),
    "randn_long": lambda m: m.randn(2, out=m.empty(0, dtype=m.int64)),
    "qr_one": lambda m: m.linalg.qr(m.eye(2), out=(m.empty(0),)),
    "qr_tensor": lambda m: m.linalg.qr(m.eye(2), out=m.empty(0)),
    "eigh_dtype": lambda m: m.linalg.eigh(m.eye(2), out=(m.empty(0),
                                                          m.empty(0, dtype=m.float64))),
    "slogdet_dtype": lambda m: m.linalg.slogdet(m.eye(2), out=(m.empty(0, dtype=m.int64),
                                                                m.empty(0))),
    "svd_two": lambda m: m.linalg.svd(m.eye(2), out=(m.empty(0),) * 2),
    "qr_grad": lambda m: m.linalg.qr(m.eye(2).requires_grad_(), out=(m.empty(0), m.empty(0))),
    "sort_one": lambda m: m.sort(m.ones(2), out=(m.empty(0),)),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_out_errors(name: str) -> None:
    assert _error(ERRORS[name], rt) == _error(ERRORS[name], torch)


def test_factory_out_sets_requires_grad() -> None:
    for m in (rt, torch):
        out = m.empty(0)
        assert m.zeros(2, out=out, requires_grad=True).requires_grad
        with m.no_grad():
            assert not m.zeros(2, out=m.ones(2, requires_grad=True)).requires_grad


def test_arange_out_resize_warns_as_torch() -> None:
    out = rt.ones(4)
    with pytest.warns(UserWarning, match=r"The number of elements in the out tensor of shape "
                      r"\[4\] is 4 which does not match the computed number of elements 2"):
        rt.arange(2, out=out)
    assert out.tolist() == [0.0, 1.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rt.zeros(3, out=rt.ones(5))  # the other factories resize silently, as PyTorch's


@pytest.mark.parametrize("name", ["qr", "eigh", "slogdet", "svd"])
def test_linalg_out_tuple(name: str) -> None:
    a0 = np.array([[2.0, 1.0], [1.0, 3.0]])
    got = []
    for m in (rt, torch):
        outs = tuple(m.empty(0) for _ in range(3 if name == "svd" else 2))
        result = getattr(m.linalg, name)(m.tensor(a0, dtype=m.float32), out=outs)
        assert all(r is o for r, o in zip(result, outs))
        got.append([o.numpy() for o in outs])
    for a, b in zip(*got):
        np.testing.assert_allclose(np.abs(a), np.abs(b), rtol=1e-5, atol=1e-6)
