"""Compiled steps called from several threads. The rule: calls of one compiled step run one at a
time (``step.lock``, held from its guards to its write-back), so N threads making k calls each
leave the state N*k sequential calls leave; different steps that touch the same parameters share
a lock when asked to (``planner.compile(g, lock=f.lock)``), and whoever holds the lock reads a
state no call has half written."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from tests.threads import in_threads as run_in_threads
from tests.threads import switch_interval

import planner
import runtime as rt

THREADS = 4
CALLS = 25  # per thread


def in_threads(*targets: Callable[[], None]) -> None:
    """tests.threads.in_threads, threads taking turns every 10 us instead of every 5 ms, so that
    calls overlap at every point (without the lock, 100 calls from 4 threads lose updates)."""
    with switch_interval(1e-5):
        run_in_threads(*targets)


def mlp_step(backend: str) -> tuple[planner.CompiledStep, Any, Callable[[], Any]]:
    """An Adam step over a small MLP, its input, and a function giving its whole state."""
    model = rt.nn.Sequential(rt.nn.Linear(8, 32), rt.nn.Tanh(), rt.nn.Linear(32, 4))
    rng = np.random.default_rng(0)
    with rt.no_grad():
        for p in model.parameters():
            p.copy_(rt.from_numpy(rng.uniform(-0.5, 0.5, p.shape).astype(np.float32)))
    params = list(model.parameters())
    opt = rt.optim.Adam(params, lr=0.01)

    def train(x: Any) -> Any:
        opt.zero_grad()
        loss = (model(x) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    def state() -> list[Any]:
        return [(p.detach().numpy().copy(), p.grad.numpy().copy(),
                 {k: v.numpy().copy() for k, v in opt.state[p].items()}) for p in params]

    x = rt.from_numpy(rng.standard_normal((16, 8)).astype(np.float32))
    return planner.compile(train, backend=backend), x, state


@pytest.mark.parametrize("backend", ["llvm", "interpreter"])
def test_threads_calling_one_step_equal_sequential_calls(backend: str) -> None:
    # the same input every call: every sequential order gives one state, bit for bit
    step, x, state = mlp_step(backend)
    twin, twin_x, twin_state = mlp_step(backend)
    for _ in range(THREADS * CALLS):
        twin(twin_x)

    def calls() -> None:
        for _ in range(CALLS):
            step(x)

    in_threads(*[calls] * THREADS)  # the first calls capture at once, too
    for (p, g, s), (tp, tg, ts) in zip(state(), twin_state(), strict=True):
        np.testing.assert_array_equal(p, tp)
        np.testing.assert_array_equal(g, tg)
        assert s.keys() == ts.keys()
        for k in s:
            np.testing.assert_array_equal(s[k], ts[k])
    assert step.captures == twin.captures  # no capture raced another


def shared_model_steps(backend: str) -> tuple[Any, Any, Any, Any]:
    """Two compiled steps over one model and optimizer, on one lock: SGD with lr 1 on
    integer-valued float64 data, where every update is exact and takes the gradient of a
    linear loss, which does not depend on the parameters: the final state is the same in
    every order, and a state read at any time says how many calls of each step it holds."""
    w = rt.nn.Parameter(rt.zeros(3, dtype=rt.float64))
    b = rt.nn.Parameter(rt.zeros(3, dtype=rt.float64))
    opt = rt.optim.SGD([w, b], lr=1.0)

    def first(x: Any) -> Any:
        opt.zero_grad()
        loss = (w * x).sum() + (b * x).sum()
        loss.backward()
        opt.step()
        return loss

    def second(x: Any) -> Any:
        opt.zero_grad()
        loss = 2.0 * ((w * x).sum() + (b * x).sum())
        loss.backward()
        opt.step()
        return loss

    step_a = planner.compile(first, backend=backend)
    step_b = planner.compile(second, backend=backend, lock=step_a.lock)
    return step_a, step_b, w, b


def counts(p: np.ndarray) -> tuple[float, float]:
    """(i, j) with p == -(i * [1, 0, 1] + j * 2 * [0, 1, 1]), checked: the calls of each step
    a parameter has seen."""
    i, j = -p[0], -p[1] / 2
    assert p[2] == -(i + 2 * j), p
    return i, j


@pytest.mark.parametrize("backend", ["llvm", "interpreter"])
def test_steps_sharing_a_lock_never_interleave(backend: str) -> None:
    # the watcher must see the calls progress (else it watched nothing): on a loaded machine
    # it may not be scheduled before they end, so the run is tried again, up to 3 times
    for _ in range(3):
        seen = _watched_run(backend)
        if len(set(seen)) > 2:
            break
    assert len(set(seen)) > 2 and all(i == int(i) and j == int(j) for i, j in seen)


def _watched_run(backend: str) -> list[tuple[float, float]]:
    """Two steps sharing a lock, called from four threads while a fifth reads the state
    under the lock: each state it reads is whole calls', none lost; what it saw."""
    step_a, step_b, w, b = shared_model_steps(backend)
    assert step_b.lock is step_a.lock
    xa = rt.from_numpy(np.array([1.0, 0.0, 1.0]))
    xb = rt.from_numpy(np.array([0.0, 1.0, 1.0]))
    seen: list[tuple[float, float]] = []
    finished: list[bool] = []

    def calls(step: Any, x: Any) -> Callable[[], None]:
        def run() -> None:
            for _ in range(CALLS):
                step(x)
                time.sleep(1e-4)  # a gap for the watcher (a lock is not fair: it could starve)
            finished.append(True)
        return run

    def watch() -> None:
        while True:
            last = len(finished) == 4  # read before the state: the state may then be final
            with step_a.lock:  # a state no call has half written
                wi, bi = counts(w.detach().numpy()), counts(b.detach().numpy())
                grad = None if w.grad is None else w.grad.numpy().tolist()
            assert wi == bi, (wi, bi)  # both parameters saw the same calls
            assert grad in (None, [1, 0, 1], [0, 2, 2]), grad  # of one call of one step
            seen.append(wi)
            if last:
                return

    in_threads(calls(step_a, xa), calls(step_b, xb), calls(step_a, xa), calls(step_b, xb),
               watch)
    # no update was lost
    assert counts(w.detach().numpy()) == counts(b.detach().numpy()) == (2 * CALLS, 2 * CALLS)
    return seen


def test_lock_must_be_a_lock() -> None:
    with pytest.raises(TypeError, match="lock must be a lock such as threading.RLock"):
        planner.compile(lambda x: x, lock=3)  # type: ignore[arg-type]
    lock = threading.Lock()
    assert planner.compile(lambda x: x, lock=lock).lock is lock
    assert isinstance(planner.compile(lambda x: x).lock, type(threading.RLock()))
