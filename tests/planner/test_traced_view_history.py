"""A view the step makes of a value it made, written in place through its base (or the other
way round), inside planner.compile: its autograd history and version counter are eager
mode's (runtime.ops.dispatch._mark_traced_view).

Found by the step fuzzer (seed 731382): ``v7 = v3.flatten(); v3.mul_(2); loss = (v7 **
2).mean()`` gave a compiled gradient without the ``mul_``'s factor, silently: the capture made
the view's value again from its written base, but not its history."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt

VIEWS: dict[str, Callable[[rt.Tensor], rt.Tensor]] = {
    "view": lambda t: t.view(-1),
    "reshape": lambda t: t.reshape(2, 2),
    "flatten": lambda t: t.flatten(),
    "unsqueeze": lambda t: t.unsqueeze(0),
    "transpose": lambda t: t.t(),
    "slice": lambda t: t[1:],
    "select": lambda t: t[0],
    "view_of_view": lambda t: t.view(4)[1:3],
    "expand": lambda t: t[:1].expand(3, 2),
}


def _both(step: Callable[..., Any], *args: Any) -> tuple[Any, Any]:
    made = [[a.detach().clone().requires_grad_(a.requires_grad) for a in args]
            for _ in range(2)]
    eager = step(*made[0])
    compiled = planner.compile(step, fullgraph=True)
    return eager, [compiled(*made[1]) for _ in range(2)]


@pytest.mark.parametrize("make_view", VIEWS.values(), ids=VIEWS.keys())
def test_a_view_read_after_its_base_was_written_takes_the_write_into_its_gradient(
        make_view: Callable[[rt.Tensor], rt.Tensor]) -> None:
    def step(p: rt.Tensor) -> Any:
        base = p * 3
        view = make_view(base)
        base.mul_(2)  # the view shows 6 p now, and its gradient is 6's
        loss = (view ** 2).sum()
        (grad,) = rt.autograd.grad(loss, [p])
        return loss.detach(), grad

    p = rt.tensor([[1.0, 2.0], [-0.5, 3.0]], requires_grad=True)
    eager, calls = _both(step, p)
    for got in calls:
        for g, w in zip(got, eager, strict=True):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)


def test_the_fuzzers_norm_step_trains_as_eagerly() -> None:
    def run(compiled: bool) -> list[float]:
        p0 = rt.tensor(0.3, requires_grad=True)
        p1 = rt.tensor(1.2, requires_grad=True)
        opt = rt.optim.SGD([p0, p1], lr=0.1)

        def step() -> rt.Tensor:
            v3 = (p1 - p0).abs().norm()
            v7 = v3.flatten()
            v3.mul_(2)
            loss = (v7 ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss.detach()

        fn = planner.compile(step, fullgraph=True) if compiled else step
        return [v for _ in range(3) for v in (float(fn()), float(p0), float(p1))]

    np.testing.assert_allclose(run(True), run(False), rtol=1e-6)


@pytest.mark.parametrize("written", ["view", "base"])
def test_a_write_through_one_alias_is_seen_by_what_autograd_saved_of_the_other(
        written: str) -> None:
    # exp saves its result: a write to it through a view (or to the base that a view reads)
    # is eager mode's error at backward, compiled too (the capture gave a gradient)
    def step(p: rt.Tensor) -> rt.Tensor:
        y = p.exp()
        view = y[0:1]
        (view if written == "view" else y).mul_(2)
        (grad,) = rt.autograd.grad((y if written == "view" else view).sum(), [p])
        return grad

    for fn in (step, planner.compile(step)):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            fn(rt.tensor([1.0, 2.0], requires_grad=True))


def test_a_view_shares_its_bases_version_counter_while_capturing() -> None:
    seen = []

    def step(p: rt.Tensor) -> rt.Tensor:
        base = p * 2
        view = base[1:]
        base.add_(1)
        seen.append((view._version, base._version, view._base is base))
        return view.sum()

    p = rt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    step(p)
    with pytest.warns(RuntimeWarning, match="runs eagerly"):  # (it appends to seen)
        planner.compile(step)(p)  # captured first: seen[1] is the capture's
    assert seen[0] == seen[1] == (1, 1, True)
