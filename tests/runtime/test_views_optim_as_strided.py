"""as_strided (Tensor.as_strided, runtime.as_strided, Tensor.as_strided_) and Tensor.unfold as
views over the storage, as PyTorch's: values, strides and offsets, writes through, shared
version counters, ``_base``, AsStridedBackward0/UnfoldBackward0 gradients (float64
gradcheck, and against torch), PyTorch's error texts, and a compiled step that meets them."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
from runtime.autograd.gradcheck import gradcheck

torch = pytest.importorskip("torch")

R = np.random.default_rng(35)

# each takes the library and a tensor of 24 elements (float64, arange-like), returns a view
VIEWS: dict[str, Callable[[Any, Any], Any]] = {
    "plain": lambda m, x: x.as_strided((3, 2), (2, 1)),
    "offset": lambda m, x: x.as_strided((2, 3), (5, 2), 3),
    "overlap": lambda m, x: x.as_strided((4, 4), (1, 1)),
    "zero_stride": lambda m, x: x.as_strided((3, 5), (0, 2), 1),
    "function": lambda m, x: m.as_strided(x, (2, 2, 2), (6, 1, 3), 2),
    "keywords": lambda m, x: x.as_strided(size=[3], stride=[4], storage_offset=5),
    "scalar": lambda m, x: x.as_strided((), (), 7),
    "empty": lambda m, x: x.as_strided((0, 3), (7, 2), 20),
    # the input a view: the default offset is its own, a given one counts from the storage
    "of_slice": lambda m, x: x[5:].as_strided((3, 3), (1, 1)),
    "of_slice_before": lambda m, x: x[5:].as_strided((3, 3), (1, 1), 0),
    "of_transpose": lambda m, x: x.reshape(4, 6).t().as_strided((4, 3), (1, 6)),
    "of_transpose_default": lambda m, x: x.reshape(4, 6).t()[1:].as_strided((2, 2), (6, 1)),
    "unfold": lambda m, x: x.unfold(0, 5, 3),
    "unfold_rows": lambda m, x: x.reshape(4, 6).unfold(1, 2, 2),
    "unfold_of_transpose": lambda m, x: x.reshape(4, 6).t().unfold(1, 3, 1),
    "unfold_full": lambda m, x: x.reshape(2, 12).unfold(0, 2, 1),
    "unfold_of_step": lambda m, x: x[1::3].unfold(0, 2, 2),
    "unfold_scalar": lambda m, x: x[3].unfold(0, 1, 1),
    "unfold_scalar_empty": lambda m, x: x[3].unfold(-1, 0, 4),
    "unfold_empty_windows": lambda m, x: x.unfold(0, 0, 5),
}


def _base(lib: Any) -> Any:
    return lib.tensor(np.arange(24.0) + 0.5)


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_view_geometry_and_values_as_torch(name: str) -> None:
    ours, theirs = VIEWS[name](rt, _base(rt)), VIEWS[name](torch, _base(torch))
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.stride() == theirs.stride()
    assert ours.storage_offset() == theirs.storage_offset()
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert ours._is_view() and theirs._is_view()


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_view_writes_through_and_shares_the_version(name: str) -> None:
    """fill_ (its result does not depend on the order of writes where the view overlaps
    itself); a view with a zero stride refuses mul_, as torch's."""
    results = []
    for lib in (rt, torch):
        x = _base(lib)
        v = VIEWS[name](lib, x)
        before = x._version
        try:
            v.mul_(-1.0) if 0 in v.stride() else v.fill_(-1.0)
        except RuntimeError as e:
            results.append(str(e))
            continue
        results.append((x.tolist(), x._version - before, v._version == x._version,
                        v._base is x))
    assert results[0] == results[1]


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_gradient_as_torch(name: str) -> None:
    """AsStridedBackward0/UnfoldBackward0: the gradient summed where the view overlaps, none
    for the storage outside the input; the node's name and its edge to the input's node."""
    grads, names = [], []
    for lib in (rt, torch):
        w = lib.tensor(np.linspace(-1.0, 2.0, 24), dtype=lib.float64, requires_grad=True)
        x = w * 1.0
        v = VIEWS[name](lib, x)
        seed = lib.tensor(np.linspace(0.5, 3.0, v.numel()).reshape(tuple(v.shape)),
                          dtype=lib.float64)
        names.append((type(v.grad_fn).__name__,
                      [type(f).__name__ for f, _ in v.grad_fn.next_functions]))
        (v * seed).sum().backward()
        grads.append(w.grad.numpy())
    np.testing.assert_array_equal(grads[0], grads[1])
    assert names[0] == names[1]


# (not of_slice_before: it reads storage outside its input, whose values then change the
# output with no gradient to the input, in torch as here)
GRADCHECKED = ["plain", "offset", "overlap", "zero_stride", "function", "of_slice",
               "of_transpose", "unfold", "unfold_rows", "unfold_of_transpose",
               "unfold_of_step"]


@pytest.mark.parametrize("name", GRADCHECKED)
def test_gradcheck_float64(name: str) -> None:
    w = rt.tensor(R.standard_normal(24), requires_grad=True)
    assert gradcheck(lambda t: VIEWS[name](rt, t * 1.0) * 1.5, (w,))


def test_gradient_of_an_input_that_overlaps_itself_is_shared_as_torch() -> None:
    """An expanded input shows each element more than once: each copy takes its share."""
    grads = []
    for lib in (rt, torch):
        y = lib.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
        out = y.expand(2, 2, 3).as_strided((2, 2), (1, 2), 1)
        (out * lib.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=lib.float64)).sum().backward()
        grads.append(y.grad.numpy())
    np.testing.assert_array_equal(grads[0], grads[1])


@pytest.mark.parametrize("name", ["plain", "offset", "function", "of_transpose",
                                  "of_transpose_default", "unfold_rows", "unfold_of_step"])
def test_in_place_on_the_view_reaches_the_base_history_as_torch(name: str) -> None:
    """A write into the view of a value with history: the base's node becomes CopySlices and
    the view's AsStridedBackward0, and both gradients are torch's. (Views that overlap
    themselves are left out: a write through one depends on the order of its elements.)"""
    got = []
    for lib in (rt, torch):
        w = lib.tensor(np.linspace(-1.0, 1.0, 24), dtype=lib.float64, requires_grad=True)
        y = w * 2.0
        v = VIEWS[name](lib, y)
        v.mul_(lib.tensor(np.linspace(1.0, 2.0, v.numel()).reshape(tuple(v.shape)),
                          dtype=lib.float64))
        out = (y * lib.tensor(np.linspace(0.5, 1.5, 24), dtype=lib.float64)).sum() + (
            v * v).sum()
        out.backward()
        got.append((y.detach().numpy(), w.grad.numpy(), type(y.grad_fn).__name__,
                    type(v.grad_fn).__name__))
    np.testing.assert_allclose(got[0][0], got[1][0], rtol=1e-14)
    np.testing.assert_allclose(got[0][1], got[1][1], rtol=1e-14)
    assert got[0][2:] == got[1][2:] == ("CopySlices", "AsStridedBackward0")


ERRORS = [
    lambda m: m.arange(12.0).as_strided((3, 2), (2, 1), 11),
    lambda m: m.arange(12.0).as_strided((3, 5), (4, 1)),
    lambda m: m.arange(12.0)[4:].as_strided((3, 5), (4, 1)),
    lambda m: m.arange(12.0).as_strided((3, 2), (-2, 1)),
    lambda m: m.arange(12.0).as_strided((3, 2), (2,)),
    lambda m: m.arange(12.0).as_strided((3, -2), (2, 1)),
    lambda m: m.arange(12.0).as_strided((3, 2), (2, 1), -1),
    lambda m: m.arange(12.0).as_strided((-3,), (2,), -1),
    lambda m: m.arange(12.0).as_strided((3, 2), (2, 1, 1), -1),
    lambda m: m.arange(12.0).as_strided([3.5, 2], (2, 1)),
    lambda m: m.arange(12.0).as_strided((True,), (1,)),
    lambda m: m.arange(12.0).as_strided(3, (1,)),
    lambda m: m.arange(12.0).as_strided((3,), 1),
    lambda m: m.arange(12.0).as_strided((3,), (1,), 2.0),
    lambda m: m.arange(12, dtype=m.int16).as_strided((3,), (5,), 2),
    lambda m: m.ones(3, requires_grad=True).as_strided_((2,), (1,)),
    lambda m: m.arange(12.0).unfold(0, 13, 2),
    lambda m: m.arange(12.0).unfold(0, 13, 0),
    lambda m: m.arange(12.0).unfold(0, 3, 0),
    lambda m: m.arange(12.0).unfold(0, -1, 0),
    lambda m: m.arange(12.0).unfold(1, 3, 1),
    lambda m: m.arange(12.0).unfold(-2, 3, 1),
    lambda m: m.tensor(3.0).unfold(1, 1, 1),
    lambda m: m.tensor(3.0).unfold(0, 2, 1),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors_as_torch(case: int) -> None:
    got = []
    for lib in (rt, torch):
        try:
            ERRORS[case](lib)
        except Exception as e:  # noqa: BLE001 - the type and text are compared
            got.append((type(e).__name__, str(e)))
        else:
            got.append(None)
    assert got[0] == got[1] and got[0] is not None, got


def test_as_strided_in_place_takes_the_geometry() -> None:
    got = []
    for lib in (rt, torch):
        x = lib.arange(12.0)
        y = x[1:]
        same = y.as_strided_((2, 3), (1, 2), 4)
        y.add_(100.0)
        got.append((same is y, tuple(y.shape), y.stride(), y.storage_offset(), x.tolist(),
                    y._base is x))
    assert got[0] == got[1]


def test_as_strided_in_place_keeps_history() -> None:
    grads = []
    for lib in (rt, torch):
        w = lib.tensor(np.linspace(0.0, 1.0, 6), dtype=lib.float64, requires_grad=True)
        y = w * 3.0
        y.as_strided_((2, 2), (1, 2), 1)
        assert type(y.grad_fn).__name__ == "AsStridedBackward1"
        (y * lib.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=lib.float64)).sum().backward()
        grads.append(w.grad.numpy())
    np.testing.assert_array_equal(grads[0], grads[1])


def test_the_storage_may_hold_another_dtype() -> None:
    """A view of other itemsize (``view(dtype)``) counts its offset and strides in its own
    elements, over the same bytes."""
    got = []
    for lib in (rt, torch):
        x = lib.arange(6, dtype=lib.int64)
        v = x.view(lib.int32).as_strided((3,), (4,), 1)
        v.add_(7)
        got.append((x.tolist(), v.storage_offset(), v.stride()))
    assert got[0] == got[1]


# --- a compiled step ---------------------------------------------------------------------------


def _step_pair(make: Callable[[Any], Any]) -> tuple[Any, Any]:
    """(eager step, its weights) for a step whose view of an intermediate is ``make(y)``."""
    w = rt.tensor(np.linspace(-1.0, 1.0, 24).reshape(2, 12), requires_grad=True)

    def step(x: Any) -> Any:
        y = (x * w).tanh() * 1.5
        v = make(y)
        out = (v * v).sum()
        out.backward()
        return out

    return step, w


COMPILED: dict[str, tuple[Callable[[Any], Any], str | None]] = {
    "as_strided": (lambda y: y.as_strided((3, 4), (2, 1), 1), "as_strided"),
    "unfold": (lambda y: y.unfold(1, 4, 2), None),
    "unfold_of_transpose": (lambda y: y.t().unfold(0, 3, 3), None),
    "unfold_then_write": (lambda y: y.unfold(1, 4, 2).mul_(2.0) + 0 * y.sum(),
                          "a partial view of its base"),
}


@pytest.mark.parametrize("name", sorted(COMPILED))
def test_compiled_step_equals_eager(name: str) -> None:
    """as_strided reads storage a captured step does not lay out as eager mode: the step runs
    eagerly with a warning naming it. unfold depends on values only: it is captured."""
    make, fallback = COMPILED[name]
    x = rt.tensor(np.linspace(0.0, 2.0, 24).reshape(2, 12))
    eager, w_eager = _step_pair(make)
    want = [eager(x).item() for _ in range(3)]
    step, w = _step_pair(make)
    compiled = planner.compile(step)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = [compiled(x).item() for _ in range(3)]
    np.testing.assert_allclose(got, want, rtol=1e-14)
    np.testing.assert_allclose(w.grad.numpy(), w_eager.grad.numpy(), rtol=1e-14)
    messages = [str(c.message) for c in caught]
    if fallback is None:
        assert not messages, messages
    else:
        assert len(messages) == 1 and "runs eagerly" in messages[0], messages
        assert fallback in messages[0], messages
