"""Compiled training steps as users write them (functional level): equal to eager mode and
to PyTorch, errors included, with no fallback warning."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

import planner
import runtime as rt

torch = pytest.importorskip("torch")


def _raised(fn: Any) -> tuple[str, str]:
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the error's type and text are compared
        return type(e).__name__, str(e)
    return "", ""


@pytest.mark.parametrize("index, vshape, accumulate", [
    ([5, 0], (2, 6), True), ([-6, 0], (2, 6), True), ([1, 1], (1, 2, 6), True),
    ([1, 1], (3,), True), ([1, 1], (1, 2, 6), False)])
def test_index_put_checks_as_pytorch_eager_and_compiled(index: list[int], vshape: tuple[int, ...],
                                                        accumulate: bool) -> None:
    """index_put(accumulate=True) checked no index (its scatter's numpy error, a ValueError
    naming index_backward, eagerly; numpy's IndexError compiled), and a value with a leading
    one that index_put does not drop reached a reshape's ValueError: PyTorch's IndexError and
    shape-mismatch RuntimeError, eager and compiled alike."""
    def body(lib: Any, w: Any, v: Any, i: Any) -> Any:
        return w.index_put((i,), v, accumulate=accumulate).pow(2).sum()

    def run(lib: Any, fn: Any = None) -> tuple[str, str]:
        w = lib.zeros(5, 6, requires_grad=True)
        v = lib.ones(*vshape, requires_grad=True)
        return _raised(lambda: (fn or (lambda *a: body(lib, *a)))(w, v, lib.tensor(index)))

    expected = run(torch)
    assert expected[0] in ("IndexError", "RuntimeError")
    for fn in (None, planner.compile(lambda w, v, i: body(rt, w, v, i))):
        kind, text = run(rt, fn)
        assert text == expected[1]
        assert kind == expected[0] or (kind, expected[0]) == ("ShapeError", "RuntimeError")


def test_index_put_accumulate_out_of_range_in_a_compiled_step() -> None:
    """The index is the step's argument: a later call's out-of-range index raises PyTorch's
    IndexError from the compiled plan (a check step), and an in-range one replays."""
    w = rt.zeros(5, 3, requires_grad=True)

    def step(i: rt.Tensor) -> rt.Tensor:
        w.grad = None
        loss = w.index_put((i,), rt.ones(2, 3), accumulate=True).pow(2).sum()
        loss.backward()
        return loss

    compiled = planner.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert compiled(rt.tensor([1, 1])).item() == 12.0
        with pytest.raises(IndexError) as info:
            compiled(rt.tensor([5, 0]))
        assert str(info.value) == "index 5 is out of bounds for dimension 0 with size 5"
        assert compiled(rt.tensor([-5, 4])).item() == 6.0
    assert compiled.captures == 1
