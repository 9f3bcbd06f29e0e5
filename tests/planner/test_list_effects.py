"""A step that changes a list it reads, in place (``events.append("step")``): a replay runs
none of the step's Python, so the capture used to leave its own item in the list and the
replays none, silently. Now a list the step only appends constants to (numbers, strings,
None, tuples of them), and uses by its mutators alone, has them appended again after each
replay, as torch.compile replays a list's mutations; any other change (a pop, a dict or a
tensor appended, an append that depends on the list's length) makes the step run eagerly,
with a warning naming the list."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt

CALLS = 5


def _run(step: Any, compiled: bool, values: list[Any]) -> list[Any]:
    fn = planner.compile(step) if compiled else step
    x = rt.arange(3.0, requires_grad=True)
    out = []
    for v in values:
        out.append(fn(x, v).item())
    return out


def test_constants_appended_are_appended_at_every_replay() -> None:
    def make() -> tuple[list[Any], Any]:
        events: list[Any] = ["start"]

        def step(x: Any, v: float) -> Any:
            events.append("step")
            events.append(2)
            events.append(None)
            events.append(("lr", 0.5))
            (grad,) = rt.autograd.grad((x * x).sum(), [x])
            return grad.sum() * v
        return events, step

    want_events, step = make()
    want = _run(step, False, [1.0] * CALLS)
    got_events, step = make()
    compiled = planner.compile(step)
    x = rt.arange(3.0, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        got = [compiled(x, 1.0).item() for _ in range(CALLS)]
    assert got == want
    assert got_events == want_events
    assert compiled.captures == 1


def test_an_appended_int_argument_is_each_calls_value() -> None:
    """The int is read as a value there (its item would be the plan's input): a constant
    per value, each replay appending its own."""
    seen: list[int] = []

    def step(x: Any, n: int) -> Any:
        seen.append(n)
        return (x * 2).sum()

    compiled = planner.compile(step)
    x = rt.arange(3.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for n in (0, 0, 0, 1, 2, 1):
            assert compiled(x, n).item() == 6.0
    assert seen == [0, 0, 0, 1, 2, 1]


@pytest.mark.parametrize("change", ["pop", "dict", "tensor", "by_length", "insert", "extend"])
def test_other_changes_of_a_list_run_eagerly(change: str) -> None:
    def make() -> tuple[list[Any], Any]:
        items: list[Any] = [1, 2, 3, 4, 5, 6, 7, 8]

        def step(x: Any) -> Any:
            loss = (x * 3).sum()
            if change == "pop":
                items.pop()
            elif change == "dict":
                items.append({"loss": 1.0})
            elif change == "tensor":
                items.append(loss.detach())
            elif change == "by_length":
                if len(items) < 10:
                    items.append(0)
            elif change == "extend":  # its built tuple: the list is used otherwise (escapes)
                items.extend((0, 1))
            else:
                items.insert(0, 9)
            return loss
        return items, step

    want_items, step = make()
    x = rt.arange(3.0)
    want = [step(x).item() for _ in range(CALLS)]
    got_items, step = make()
    compiled = planner.compile(step)
    with pytest.warns(RuntimeWarning, match="runs eagerly: the step changes"):
        got = [compiled(x).item() for _ in range(CALLS)]
    assert got == want
    assert len(got_items) == len(want_items)
    for g, w in zip(got_items, want_items, strict=True):
        if isinstance(w, rt.Tensor):
            np.testing.assert_array_equal(g.numpy(), w.numpy())
        else:
            assert g == w


@pytest.mark.parametrize("kind", ["set", "deque"])
def test_a_set_or_deque_added_to_is_added_to_at_every_replay(kind: str) -> None:
    import collections

    def make() -> tuple[Any, Any]:
        seen: Any = set() if kind == "set" else collections.deque(maxlen=4)

        def step(x: Any, v: float) -> Any:
            if kind == "set":
                seen.add("step")
                seen.add(("v", 1))
            else:
                seen.append("step")
            return (x * v).sum()
        return seen, step

    want_seen, step = make()
    x = rt.arange(3.0)
    want = [step(x, 1.0).item() for _ in range(CALLS)]
    got_seen, step = make()
    compiled = planner.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        got = [compiled(x, 1.0).item() for _ in range(CALLS)]
    assert got == want and got_seen == want_seen and compiled.captures == 1


def test_a_tensor_added_to_a_set_runs_eagerly() -> None:
    """A number argument's stand-in (a tensor) added to a set would stay there for good: the
    step runs eagerly where it adds a tensor, and the set holds what eager mode's holds."""
    seen: set[Any] = set()

    def step(x: Any) -> Any:
        loss = (x * 2).sum()
        seen.add(loss)
        return loss

    compiled = planner.compile(step)
    x = rt.arange(3.0)
    with pytest.warns(RuntimeWarning, match="the step changes seen"):
        for _ in range(3):
            compiled(x)
    assert len(seen) == 3 and all(type(t._data) is np.ndarray for t in seen)


def test_a_tuple_built_in_the_step_and_appended_is_appended_at_every_replay() -> None:
    """``log.append((k, "step"))``: building the tuple used the list below it whole (the
    bytecode walk let every unmodelled op escape the stack), so the step ran eagerly."""
    def make() -> tuple[list[Any], Any]:
        log: list[Any] = []

        def step(x: Any, k: int) -> Any:
            log.append((k, "step"))
            log.extend([1, 2])
            return (x * 2).sum()
        return log, step

    want_log, step = make()
    x = rt.arange(3.0)
    for k in (1, 1, 1, 2, 2):
        step(x, k)
    got_log, step = make()
    compiled = planner.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for k in (1, 1, 1, 2, 2):
            compiled(x, k)
    assert got_log == want_log and compiled.captures == 2
