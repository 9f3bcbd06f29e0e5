"""A compiled step that carries state in a tensor it reassigns at each call (an exponential
moving average in a registered buffer, ``self.ema = self.ema * 0.9 + ...``; a tensor counter
``self.count = self.count + 1``; a truncated-BPTT hidden state ``holder.h = cell(x,
holder.h).detach()``), or assigns a buffer a tensor it computes without reading it, replays:
the plan reads the tensor found at the path at each call (guarded by type, shape, dtype, device
and requires_grad, not identity) and the replay stores the new one there, with eager mode's
values and flags; a buffer stays registered (state_dict holds the new value). A step whose
carried tensor requires grad (its backward would reach the graph of the call before) runs
eagerly, saying why."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt

ROOT = Path(__file__).resolve().parents[2]
KINDS = ("ema_buffer", "ema_add_", "counter", "bptt", "lstm_dict", "buffer_unread")


class _Holder:
    pass


class _Ema(rt.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = rt.nn.Linear(4, 3)
        self.register_buffer("ema", rt.zeros(3))

    def forward(self, x: Any) -> Any:
        y = self.lin(x)
        self.ema = self.ema * 0.9 + y.detach().mean(0) * 0.1  # read, then reassigned
        return y


class _EmaInPlace(_Ema):
    """The new average made, then written in place: eager mode leaves it at version 1."""

    def forward(self, x: Any) -> Any:
        y = self.lin(x)
        self.ema = self.ema * 0.9
        self.ema.add_(y.detach().mean(0) * 0.1)
        return y


class _Counter(rt.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = rt.nn.Linear(4, 3)
        self.count = rt.zeros((), dtype=rt.int64)  # a plain attribute, not a buffer

    def forward(self, x: Any) -> Any:
        self.count = self.count + 1
        return self.lin(x) * (1.0 / (self.count + 1))


class _LastMean(rt.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = rt.nn.Linear(4, 3)
        self.register_buffer("last_mean", rt.zeros(3))

    def forward(self, x: Any) -> Any:
        y = self.lin(x)
        self.last_mean = y.detach().mean(0)  # assigned without being read
        return y


def _setup(kind: str) -> tuple[Any, Any, Any, Any]:
    """(model, the step, the carried tensor's getter, the batch), seeded."""
    rt.manual_seed(0)
    if kind == "bptt":
        m = rt.nn.RNNCell(4, 3)
        holder = _Holder()
        holder.h = rt.zeros(5, 3)
        opt = rt.optim.SGD(m.parameters(), lr=0.1)

        def step(x: Any) -> Any:
            opt.zero_grad()
            h = m(x, holder.h)
            loss = h.pow(2).sum()
            loss.backward()
            opt.step()
            holder.h = h.detach()  # truncated BPTT: the value carried, not the graph
            return loss

        carried = lambda: holder.h  # noqa: E731
    elif kind == "lstm_dict":  # two tensors carried in a dict's items
        m = rt.nn.LSTMCell(4, 3)
        state = {"h": rt.zeros(5, 3), "c": rt.zeros(5, 3)}
        opt = rt.optim.SGD(m.parameters(), lr=0.1)

        def step(x: Any) -> Any:
            opt.zero_grad()
            h, c = m(x, (state["h"], state["c"]))
            loss = h.pow(2).sum()
            loss.backward()
            opt.step()
            state["h"] = h.detach()
            state["c"] = c.detach()
            return loss

        carried = lambda: state["c"]  # noqa: E731
    else:
        m = {"ema_buffer": _Ema, "ema_add_": _EmaInPlace, "counter": _Counter,
             "buffer_unread": _LastMean}[kind]()
        opt = rt.optim.SGD(m.parameters(), lr=0.1)
        name = {"ema_buffer": "ema", "ema_add_": "ema", "counter": "count",
                "buffer_unread": "last_mean"}[kind]

        def step(x: Any) -> Any:
            opt.zero_grad()
            loss = m(x).pow(2).sum()
            loss.backward()
            opt.step()
            return loss

        carried = lambda: getattr(m, name)  # noqa: E731
    rt.manual_seed(1)
    return m, step, carried, rt.randn(5, 4)


def _snapshot(m: Any, loss: Any, t: Any) -> dict[str, Any]:
    return {"loss": loss.detach().numpy().copy(),
            "params": {n: p.detach().numpy().copy() for n, p in m.named_parameters()},
            "grads": {n: p.grad.numpy().copy() for n, p in m.named_parameters()},
            "state_dict": {k: v.numpy().copy() for k, v in m.state_dict().items()},
            "buffers": sorted(m._buffers),
            "carried": t.numpy().copy(), "dtype": t.dtype.name,
            "flags": (t.requires_grad, t.is_leaf, t.grad_fn, t._version)}


def _train(kind: str, compiled: bool, backend: str = "auto", calls: int = 5
           ) -> tuple[list[dict[str, Any]], Any, list[str]]:
    m, step, carried, x = _setup(kind)
    fn = planner.compile(step, backend=backend) if compiled else step
    seen = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(calls):
            seen.append(_snapshot(m, fn(x), carried()))
    return seen, fn, [str(w.message) for w in caught if str(w.message).startswith("planner")]


def _assert_same(eager: list[dict[str, Any]], compiled: list[dict[str, Any]],
                 exact: bool) -> None:
    def close(a: Any, b: Any) -> None:
        if exact:
            np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)

    assert len(eager) == len(compiled)
    for e, c in zip(eager, compiled, strict=True):
        for key in ("flags", "dtype", "buffers"):
            assert e[key] == c[key], key
        close(e["loss"], c["loss"])
        close(e["carried"], c["carried"])
        for key in ("params", "grads", "state_dict"):
            assert e[key].keys() == c[key].keys(), key
            for name in e[key]:
                close(e[key][name], c[key][name])


@pytest.mark.parametrize("kind", KINDS)
def test_carried_state_replays_as_eager(kind: str) -> None:
    eager, _, _ = _train(kind, compiled=False)
    compiled, step, warned = _train(kind, compiled=True)
    assert warned == []
    assert step.captures == 1
    # a new leaf, requiring no grad, at version 0 (1: written in place once made)
    assert eager[-1]["flags"] == (False, True, None, int(kind == "ema_add_"))
    _assert_same(eager, compiled, exact=False)


@pytest.mark.parametrize("kind", ["ema_buffer", "bptt"])
def test_carried_state_is_eagers_bit_for_bit_on_the_interpreter(kind: str) -> None:
    eager, _, _ = _train(kind, compiled=False)
    compiled, step, warned = _train(kind, compiled=True, backend="interpreter")
    assert warned == [] and step.captures == 1
    _assert_same(eager, compiled, exact=True)


def test_the_tensor_at_the_path_now_is_read_and_a_new_one_is_stored() -> None:
    """The plan reads the carried tensor found at the path at each call: one the user put
    there between calls (a reset) is what it reads, without a capture; another shape or
    dtype there is captured again. The buffer stays registered, and its old tensor is left
    as it was (version unchanged)."""
    m, step, _, x = _setup("ema_buffer")
    fn = planner.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            fn(x)
        old = m.ema
        fn(x)
        assert m.ema is not old and old._version == 0 and "ema" in m._buffers
        m.ema = rt.full((3,), 5.0)  # a reset between calls
        want = 5.0 * 0.9 + m.lin(x).detach().mean(0).numpy() * 0.1
        fn(x)
        np.testing.assert_allclose(m.ema.numpy(), want, rtol=1e-5)
    assert fn.captures == 1
    m.ema = rt.zeros(3, dtype=rt.float64)
    fn(x)
    assert fn.captures == 2 and m.ema.dtype is rt.float64


@pytest.mark.parametrize("put", ["a parameter's detach()", "a transposed tensor"])
def test_a_carried_tensor_put_there_sharing_memory_or_out_of_order_is_not_replayed(
        put: str) -> None:
    """The tensor found at the path is read as the plan's state only where it is contiguous
    and shares no memory with another tensor the step reads or writes: the user's
    ``holder.h = lin.weight.detach()`` shows the step's own update of the weight when read after
    ``opt.step()`` in eager mode, which a plan reading its state when it runs would not."""
    def run(compiled: bool) -> tuple[list[np.ndarray], list[str]]:
        rt.manual_seed(0)
        lin = rt.nn.Linear(3, 3)
        opt = rt.optim.SGD(lin.parameters(), lr=0.1)
        holder = _Holder()
        holder.h = rt.zeros(3, 3)

        def step(x: Any) -> Any:
            opt.zero_grad()
            lin(x).pow(2).sum().backward()
            opt.step()
            holder.h = holder.h * 0.5 + lin.bias.detach()
            return holder.h.sum()

        fn = planner.compile(step) if compiled else step
        x = rt.randn(2, 3)
        out = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for i in range(5):
                if i == 3:
                    holder.h = lin.weight.detach() if put.endswith("detach()") else \
                        rt.arange(9.0).reshape(3, 3).t()
                out.append(fn(x).numpy().copy())
        return out, [str(w.message) for w in caught if str(w.message).startswith("planner")]

    want, _ = run(False)
    got, warned = run(True)
    assert len(warned) == 1 and "not contiguous or shares memory" in warned[0]
    for a, b in zip(want, got, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5)


def test_a_carried_tensor_passed_as_the_argument_the_step_writes_in_place() -> None:
    """``step(holder.h)`` where the step runs ``x.mul_(2)`` before reading ``holder.h``:
    eager mode reads the doubled values through the carried tensor, which a plan reading it
    as state apart from the argument would not: captured again, the same as eager."""
    def run(compiled: bool) -> list[np.ndarray]:
        holder = _Holder()
        holder.h = rt.zeros(3)
        w = rt.nn.Parameter(rt.ones(3))

        def step(x: Any) -> None:
            x.mul_(2)
            holder.h = holder.h * 0.5 + (x * w).detach()
            (x * w).sum().backward()

        fn = planner.compile(step) if compiled else step
        out = []
        for i in range(5):
            fn(rt.ones(3) if i < 3 else holder.h)
            out.append(holder.h.numpy().copy())
        return out

    want = run(False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = run(True)
    np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-6)


def test_a_tensor_assigned_anew_has_its_shape_guarded_as_the_step_may_read_it() -> None:
    """``holder.h = rt.ones(holder.h.shape) * s``: the step reads the old tensor's shape only
    (no state of the plan), which the plan bakes in: another shape put there is captured
    again, as eager mode makes the new tensor of that shape."""
    holder = _Holder()
    holder.h = rt.zeros(3)
    w = rt.nn.Parameter(rt.ones(3))

    @planner.compile
    def step(x: Any) -> None:
        holder.h = rt.ones(holder.h.shape) * (x * w).sum().detach()
        (x * w).sum().backward()

    for i in range(4):
        if i == 2:
            holder.h = rt.zeros(2, 2)
        step(rt.ones(3))
        assert holder.h.shape == ((3,) if i < 2 else (2, 2))
    assert step.captures == 2


def test_a_carried_tensor_that_requires_grad_runs_eagerly_saying_why() -> None:
    """Not detached, the carried hidden state's graph reaches the call before: eager mode's
    second call raises "backward through the graph a second time", and so does the
    compiled step, run eagerly."""
    def run(compiled: bool) -> Any:
        rt.manual_seed(0)
        cell = rt.nn.RNNCell(4, 3)
        holder = _Holder()
        holder.h = rt.zeros(5, 3)

        def step(x: Any) -> Any:
            holder.h = cell(x, holder.h)
            loss = holder.h.pow(2).sum()
            loss.backward()
            return loss

        fn = planner.compile(step) if compiled else step
        x = rt.randn(5, 4)
        fn(x)
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            fn(x)

    run(False)
    with pytest.warns(RuntimeWarning, match=r"reads holder\.h before it assigns it a tensor it "
                                            r"computes, and one of them requires grad"):
        run(True)


def test_a_step_returning_the_old_carried_tensor_runs_eagerly_saying_why() -> None:
    """``old = holder.h; holder.h = f(old); return old``: eager mode returns the tensor found
    at the path this call, which a replay cannot give (it would be the captured one)."""
    def run(compiled: bool) -> list[np.ndarray]:
        holder = _Holder()
        holder.h = rt.zeros(3)
        w = rt.nn.Parameter(rt.ones(3))

        def step(x: Any) -> Any:
            old = holder.h
            holder.h = old * 0.5 + (x * w).sum(0).detach()
            (holder.h * w).sum().backward()
            return old.detach()[1:]

        fn = planner.compile(step) if compiled else step
        x = rt.arange(6.0).reshape(2, 3)
        return [fn(x).numpy().copy() for _ in range(3)]

    want = run(False)
    with pytest.warns(RuntimeWarning, match=r"returns the tensor holder\.h held before it "
                                            r"assigned it a new one"):
        got = run(True)
    for a, b in zip(want, got, strict=True):
        np.testing.assert_array_equal(a, b)


_CHILD = """
import json, sys, warnings
sys.path.insert(0, {tests!r})
from test_carried_state_h36 import _train
seen, step, warned = _train({kind!r}, compiled=True)
print(json.dumps({{"loaded": step.plans_loaded, "captures": step.captures, "warned": warned,
                  "losses": [s["loss"].tolist() for s in seen],
                  "carried": [s["carried"].tolist() for s in seen]}}))
"""


def test_a_second_process_loads_the_kept_plan_and_trains_the_same(tmp_path: Path) -> None:
    eager, _, _ = _train("ema_buffer", compiled=False)
    runs = []
    for _ in range(2):
        env = dict(os.environ, BACKPLAN_CACHE_DIR=str(tmp_path))
        child = _CHILD.format(tests=str(Path(__file__).parent), kind="ema_buffer")
        out = subprocess.run([sys.executable, "-c", child], env=env, cwd=ROOT, check=True,
                             capture_output=True, text=True)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    assert [r["loaded"] for r in runs] == [0, 1]
    assert all(r["captures"] == 1 and r["warned"] == [] for r in runs)
    for key in ("losses", "carried"):
        assert runs[0][key] == runs[1][key], key
    np.testing.assert_allclose(runs[1]["carried"], [s["carried"] for s in eager], rtol=1e-5)
