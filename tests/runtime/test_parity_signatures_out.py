"""``out=`` as PyTorch's: the result written into out and out returned, an empty out resized
silently and one of another shape resized with PyTorch's warning, a result dtype out cannot
hold PyTorch's error, and no autograd through it (its error where a graph would be
recorded)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt

RESIZED = ("An output with one or more elements was resized since it had shape [2], which does "
           "not match the required output shape [3]. This behavior is deprecated, and in a "
           "future PyTorch release outputs will not be resized unless they have zero elements. "
           "You can explicitly reuse an out tensor t by resizing it, inplace, to zero elements "
           "with t.resize_(0).")


def v() -> rt.Tensor:
    return rt.tensor([1.0, 2.0, 3.0])


def test_out_is_written_and_returned() -> None:
    out = rt.empty(3)
    version = out._version
    got = rt.add(v(), v(), alpha=2, out=out)
    assert got is out
    np.testing.assert_array_equal(out.numpy(), [3.0, 6.0, 9.0])
    assert out._version > version  # written in place, as PyTorch's


def test_an_empty_out_is_resized_silently() -> None:
    out = rt.empty(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rt.exp(rt.zeros(3), out=out)
    np.testing.assert_array_equal(out.numpy(), [1.0, 1.0, 1.0])


def test_an_out_of_another_shape_is_resized_with_pytorchs_warning() -> None:
    out = rt.empty(2)
    with pytest.warns(UserWarning) as caught:
        rt.mul(v(), 2, out=out)
    assert str(caught[0].message) == RESIZED
    assert caught[0].filename == __file__  # it names the caller's line
    np.testing.assert_array_equal(out.numpy(), [2.0, 4.0, 6.0])


def test_a_result_out_cannot_hold_is_pytorchs_error() -> None:
    with pytest.raises(RuntimeError, match="^result type Float can't be cast to the desired "
                                           "output type Long$"):
        rt.add(v(), 1, out=rt.empty(3, dtype=rt.int64))
    wide = rt.add(v(), 1, out=rt.empty(3, dtype=rt.float64))  # a wider one takes it
    assert wide.dtype is rt.float64
    np.testing.assert_array_equal(wide.numpy(), [2.0, 3.0, 4.0])


def test_no_autograd_through_out() -> None:
    x = v().requires_grad_()
    with pytest.raises(RuntimeError, match=r"^sin\(\): functions with out=\.\.\. arguments don't "
                                           r"support automatic differentiation, but one of the "
                                           r"arguments requires grad\.$"):
        rt.sin(x, out=rt.empty(3))
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        rt.sin(v(), out=rt.empty(3, requires_grad=True))
    with rt.no_grad():
        out = rt.sin(x, out=rt.empty(3))
    assert not out.requires_grad and out.grad_fn is None


def test_sum_into_out_is_made_in_outs_dtype() -> None:
    """PyTorch's sum, prod and cumsum with out: the sum is made in out's dtype (a float input
    into an int64 out is not an error)."""
    out = rt.empty(0, dtype=rt.int64)
    rt.sum(rt.tensor([1.5, 2.5]), 0, out=out)
    assert out.item() == 3
    with pytest.raises(RuntimeError, match="^Expected out tensor to have dtype double, but got "
                                           "float instead$"):
        rt.sum(v(), 0, dtype=rt.float64, out=rt.empty(0))


def test_values_and_indices_outs() -> None:
    x = rt.tensor([[1.0, 5.0], [3.0, 2.0]])
    values, indices = rt.empty(0), rt.empty(0, dtype=rt.int64)
    got = rt.max(x, 1, out=(values, indices))
    assert got.values is values and got.indices is indices
    np.testing.assert_array_equal(values.numpy(), [5.0, 3.0])
    np.testing.assert_array_equal(indices.numpy(), [1, 0])
    with pytest.raises(RuntimeError, match="^Expected out tensor to have dtype long int, but got "
                                           "float instead$"):
        rt.sort(x, out=(rt.empty(0), rt.empty(0)))


def test_all_and_any_write_bool_outs_only() -> None:
    with pytest.raises(RuntimeError, match="^all only supports bool tensor for result, got: "
                                           "Float$"):
        rt.all(v(), out=rt.empty(()))
    out = rt.empty((), dtype=rt.bool)
    assert rt.any(v(), out=out) is out and out.item() is True


def test_an_out_call_is_not_autocast() -> None:
    """PyTorch registers no autocast kernel for an out= call: a float32 product into a float32
    out is made in float32 (the out was cast, and the copy written)."""
    a = rt.tensor(np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32))
    out = rt.empty(4, 4)
    with rt.autocast("cpu", dtype=rt.bfloat16):
        got = rt.matmul(a, a, out=out)
    assert got is out and out.dtype is rt.float32
    np.testing.assert_array_equal(out.numpy(), (a @ a).numpy())


def test_a_half_op_writes_its_own_out() -> None:
    """An op computed in float32 for float16 inputs writes the float16 out it was given."""
    out = rt.empty(0, dtype=rt.float16)
    got = rt.sigmoid(rt.zeros(2, dtype=rt.float16), out=out)
    assert got is out
    np.testing.assert_array_equal(out.numpy(), [0.5, 0.5])


def test_sparse_grad_is_refused_not_ignored() -> None:
    with pytest.raises(NotImplementedError, match="sparse_grad=True"):
        rt.gather(v(), 0, rt.tensor([0]), sparse_grad=True)


# (name, the call of a module m: runtime or torch, given an out tensor o)
CALLS: list[tuple[str, Callable[[Any, Any, Any], Any]]] = [
    ("add", lambda m, x, o: m.add(x, 1, out=o)),
    ("exp", lambda m, x, o: m.exp(x, out=o)),
    ("where", lambda m, x, o: m.where(x > 0, x, -x, out=o)),
    ("clamp", lambda m, x, o: m.clamp(x, min=0.5, out=o)),
    ("sum", lambda m, x, o: m.sum(x, 1, out=o)),
    ("mean", lambda m, x, o: m.mean(x, 0, keepdim=True, out=o)),
    ("matmul", lambda m, x, o: m.matmul(x, x.T, out=o)),
    ("cat", lambda m, x, o: m.cat([x, x], 1, out=o)),
    ("cumsum", lambda m, x, o: m.cumsum(x, 0, out=o)),
    ("std", lambda m, x, o: m.std(x, 1, out=o)),
    ("logsumexp", lambda m, x, o: m.logsumexp(x, 1, out=o)),
    ("amax", lambda m, x, o: m.amax(x, 0, out=o)),
    ("tril", lambda m, x, o: m.tril(x, out=o)),
    ("kron", lambda m, x, o: m.kron(x, x, out=o)),
    ("quantile", lambda m, x, o: m.quantile(x, 0.5, dim=1, out=o)),
    ("gather", lambda m, x, o: m.gather(x, 1, m.tensor([[0], [1]]), out=o)),
    ("sigmoid", lambda m, x, o: m.sigmoid(x, out=o)),
]


@pytest.mark.parametrize("shape", [(0,), (2,), (7, 7)])
@pytest.mark.parametrize(("name", "call"), CALLS, ids=[c[0] for c in CALLS])
def test_out_matches_torch(name: str, call: Callable[[Any, Any, Any], Any],
                           shape: tuple[int, ...]) -> None:
    torch = pytest.importorskip("torch")
    data = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    results = []
    for m in (rt, torch):
        out = m.empty(shape)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = call(m, m.tensor(data), out)
        assert got is out
        messages = [str(w.message).split(" (Triggered internally")[0] for w in caught]
        results.append((out.numpy().copy(), messages))
    (ours, our_warnings), (theirs, their_warnings) = results
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6)
    assert our_warnings == their_warnings


@pytest.mark.parametrize("name", ["mm", "bmm", "addmm"])
def test_products_write_out_as_torch(name: str) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    shapes = {"mm": [(3, 4), (4, 5)], "bmm": [(2, 3, 4), (2, 4, 5)],
              "addmm": [(3, 5), (3, 4), (4, 5)]}[name]
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    kwargs = {"beta": 0.5, "alpha": 2.0} if name == "addmm" else {}
    for start in [(0,), (2,)]:  # empty: resized silently; else with PyTorch's warning
        ours, theirs = rt.empty(*start), torch.empty(*start)
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            result = getattr(rt, name)(*map(rt.from_numpy, arrays), out=ours, **kwargs)
        with warnings.catch_warnings(record=True) as want:
            warnings.simplefilter("always")
            getattr(torch, name)(*map(torch.from_numpy, arrays), out=theirs, **kwargs)
        assert result is ours
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-5)
        assert [str(w.message)[:40] for w in got] == [str(w.message)[:40] for w in want]
    grad = rt.from_numpy(arrays[0]).requires_grad_()
    with pytest.raises(RuntimeError, match=f"{name}\\(\\): functions with out=... arguments "
                                           "don't support automatic differentiation"):
        getattr(rt, name)(grad, *map(rt.from_numpy, arrays[1:]), out=rt.empty(0), **kwargs)
