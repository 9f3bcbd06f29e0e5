"""Compiled training steps fed by a DataLoader, found by the h8 sweep: equal to eager mode,
without a capture per batch nor a fallback."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

import planner
import runtime as rt

nn = rt.nn
F = rt.nn.functional


def _samples(n: int) -> list[dict[str, Any]]:
    r = np.random.default_rng(0)
    return [{"x": r.standard_normal(6).astype(np.float32), "y": int(r.integers(3)),
             "w": float(r.random()), "name": f"image_{i}.png"} for i in range(n)]


def _train(compiled: bool, samples: list[dict[str, Any]], **loader_kwargs: Any) -> Any:
    rt.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
    opt = rt.optim.Adam(model.parameters(), lr=0.01)
    sched = rt.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=40)

    def step(batch: dict[str, Any]) -> Any:
        opt.zero_grad()
        loss = (F.cross_entropy(model(batch["x"]), batch["y"], reduction="none")
                * batch["w"]).mean()
        loss.backward()
        opt.step()
        return loss

    run = planner.compile(step) if compiled else step
    loader = rt.utils.data.DataLoader(samples, batch_size=5, shuffle=True,
                                      generator=rt.Generator().manual_seed(3), **loader_kwargs)
    losses = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            for batch in loader:
                losses.append(float(run(batch)))
                sched.step()
    params = [p.detach().numpy().copy() for p in model.parameters()]
    return losses, params, run.captures if compiled else None


def test_batches_with_names_the_step_ignores_do_not_capture_per_batch() -> None:
    """default_collate keeps a batch's strings (file names) as a list of them: a step that
    never reads them was captured again for every batch (their values were in the key), up
    to the recompile limit, then ran eagerly with a warning. torch.compile guards only what
    the frame reads; here the strings the step does not read leave the key at their second
    value (as changing floats become inputs): two captures, eager's values."""
    samples = _samples(20)
    eager, compiled = _train(False, samples), _train(True, samples)
    np.testing.assert_allclose(compiled[0], eager[0], rtol=1e-4, atol=1e-6)
    for a, b in zip(compiled[1], eager[1], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    assert compiled[2] == 2


def _named_step(kind: str) -> Any:
    rt.manual_seed(0)
    w = nn.Parameter(rt.ones(3))
    opt = rt.optim.SGD([w], lr=0.1)
    table = {n: float(i) for i, n in enumerate("abcdefghijkl")}
    seen: list[Any] = []

    def step(x: rt.Tensor, name: str) -> Any:
        opt.zero_grad()
        loss = (w * x).sum()
        if kind == "compare" and name == "a":
            loss = loss * 2
        if kind == "lookup":
            loss = loss * table[name]
        if kind == "length":
            loss = loss * len(f"{name}!")
        if kind == "store":
            seen[:] = [name]
        loss.backward()
        opt.step()
        return (loss, name) if kind == "return" else loss

    return step, w, seen


def test_string_arguments_left_out_only_where_the_step_does_not_read_them() -> None:
    """A string argument the step never reads leaves the key (two captures for a dozen
    names); one it does read (compared, a dict key, formatted, stored, returned) stays a
    constant of its plan, as before: eager mode's values, and the stand-in a capture passes
    for it never leaks into what the step keeps or returns."""
    names = list("abcadefghijk")
    for kind in ["ignore", "compare", "lookup", "length", "store", "return"]:
        runs = []
        for compiled in (False, True):
            step, w, seen = _named_step(kind)
            run = planner.compile(step) if compiled else step
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the recompile limit's
                out = [run(rt.full((3,), float(i + 1)), n) for i, n in enumerate(names)]
            runs.append(([repr(o) for o in out], w.tolist(), [repr(s) for s in seen]))
        assert runs[1] == runs[0], kind
        if kind == "ignore":
            assert run.captures == 2


def test_python_values_a_step_appends_to_a_list_are_appended_at_every_replay() -> None:
    """``seen.append(k)`` (a closure's list, a Python value appended, no ``len`` read)
    changes no path the step stores into: the capture's append was kept and every replay
    skipped it (eager, and torch.compile, which replays such side effects: one entry per
    call; compiled: one per capture, silently). A replay now appends what the capture
    appended (planner.guards.Watch.appended); a list changed otherwise (``pop``) makes the
    step run eagerly, saying so. Eager mode's entries and values each time."""
    def make(seen: list[Any], kind: str) -> Any:
        rt.manual_seed(0)
        w = nn.Parameter(rt.ones(3))
        opt = rt.optim.SGD([w], lr=0.1)

        def appends(x: rt.Tensor, k: int) -> Any:
            opt.zero_grad()
            loss = (w * x).sum()
            seen.append(k)
            loss.backward()
            opt.step()
            return loss

        def pops(x: rt.Tensor, k: int) -> Any:
            opt.zero_grad()
            loss = (w * x).sum()
            seen.pop()
            loss.backward()
            opt.step()
            return loss

        return (appends if kind == "append" else pops), w

    for kind in ["append", "pop"]:
        runs = []
        for compiled in (False, True):
            seen: list[Any] = list(range(10))
            step, w = make(seen, kind)
            run = planner.compile(step) if compiled else step
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                for i, k in enumerate([0, 1, 0, 0, 1]):
                    run(rt.full((3,), float(i + 1)), k)
            runs.append((seen, w.tolist()))
        assert runs[1] == runs[0], kind
        messages = [str(c.message) for c in caught]
        if kind == "append":
            assert run.captures == 2 and not messages
        else:
            assert any("the step changes seen" in m for m in messages)
