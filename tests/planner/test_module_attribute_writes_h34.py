"""A compiled step whose module attribute is assigned a tensor the step computes (the old
``nn.utils.weight_norm`` and ``spectral_norm`` hooks, ``nn.utils.prune``, a hand-written
forward pre-hook: ``module.weight = ...`` before every forward) replays: the plan returns that
tensor and the replay stores it at the attribute, with eager mode's values, requires_grad and
grad_fn name, and the next call replays again (one capture). A step that reads the old value
before assigning the new one (state carried from call to call) replays too: the plan reads the
tensor found at the path at each call (tests/planner/test_carried_state_h36.py)."""

from __future__ import annotations

import json
import os
import signal
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
KINDS = ("weight_norm", "spectral_norm", "l1_unstructured", "custom_mask", "hook")


def _scaled_weight(module: Any, inputs: Any) -> None:
    module.weight = module.weight_raw.tanh() * 2.0


def _model(kind: str) -> Any:
    """A Linear(4, 3) whose ``weight`` a forward pre-hook computes, seeded."""
    rt.manual_seed(0)
    lin = rt.nn.Linear(4, 3)
    if kind == "weight_norm":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            return rt.nn.utils.weight_norm(lin)
    if kind == "spectral_norm":
        return rt.nn.utils.spectral_norm(lin)
    if kind == "l1_unstructured":
        return rt.nn.utils.prune.l1_unstructured(lin, "weight", 0.5)
    if kind == "custom_mask":
        mask = rt.tensor([[1.0, 0.0, 1.0, 1.0], [0.0, 1.0, 1.0, 0.0], [1.0, 1.0, 0.0, 1.0]])
        return rt.nn.utils.prune.custom_from_mask(lin, "weight", mask)
    raw = lin.weight
    del lin.weight
    lin.register_parameter("weight_raw", raw)
    lin.weight = raw.detach().clone()
    lin.register_forward_pre_hook(_scaled_weight)
    return lin


def _snapshot(m: Any, loss: Any) -> dict[str, Any]:
    w = m.weight
    return {"loss": loss.detach().numpy().copy(),
            "params": {n: p.detach().numpy().copy() for n, p in m.named_parameters()},
            "grads": {n: p.grad.numpy().copy() for n, p in m.named_parameters()},
            "buffers": {n: b.numpy().copy() for n, b in m.named_buffers()},
            "weight": w.detach().numpy().copy(), "requires_grad": w.requires_grad,
            "is_leaf": w.is_leaf, "version": w._version,
            "grad_fn": None if w.grad_fn is None else w.grad_fn.name()}


def _train(kind: str, compiled: bool, backend: str = "auto", calls: int = 4
           ) -> tuple[list[dict[str, Any]], Any, list[str]]:
    m = _model(kind)
    opt = rt.optim.SGD(m.parameters(), lr=0.1)
    rt.manual_seed(1)
    x = rt.randn(5, 4)

    def step(x: Any) -> Any:
        opt.zero_grad()
        loss = m(x).pow(2).sum()
        loss.backward()
        opt.step()
        return loss

    fn = planner.compile(step, backend=backend) if compiled else step
    seen = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(calls):
            seen.append(_snapshot(m, fn(x)))
    planner_warnings = [str(w.message) for w in caught if str(w.message).startswith("planner")]
    return seen, fn, planner_warnings


def _assert_same(eager: list[dict[str, Any]], compiled: list[dict[str, Any]],
                 exact: bool) -> None:
    def close(a: Any, b: Any) -> None:
        if exact:
            np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)

    assert len(eager) == len(compiled)
    for e, c in zip(eager, compiled, strict=True):
        for key in ("requires_grad", "is_leaf", "grad_fn", "version"):
            assert e[key] == c[key], key
        close(e["loss"], c["loss"])
        close(e["weight"], c["weight"])
        for key in ("params", "grads", "buffers"):
            assert e[key].keys() == c[key].keys()
            for name in e[key]:
                close(e[key][name], c[key][name])


@pytest.mark.parametrize("kind", KINDS)
def test_a_hook_assigning_the_weight_replays_as_eager(kind: str) -> None:
    eager, _, _ = _train(kind, compiled=False)
    compiled, step, warned = _train(kind, compiled=True)
    assert warned == []
    assert step.captures == 1
    assert eager[-1]["requires_grad"] and eager[-1]["grad_fn"] is not None
    _assert_same(eager, compiled, exact=False)


@pytest.mark.parametrize("kind", ["weight_norm", "spectral_norm"])
def test_the_stored_weight_is_eagers_bit_for_bit_on_the_interpreter(kind: str) -> None:
    """The interpreter runs eager mode's numpy ops: the weight the replay stores, and all
    else, equal eager mode's exactly (spectral_norm's power-iteration buffers too)."""
    eager, _, _ = _train(kind, compiled=False)
    compiled, step, warned = _train(kind, compiled=True, backend="interpreter")
    assert warned == [] and step.captures == 1
    _assert_same(eager, compiled, exact=True)


def test_spectral_norms_buffers_move_at_each_replay() -> None:
    compiled, _, _ = _train("spectral_norm", compiled=True)
    us = [c["buffers"]["weight_u"] for c in compiled]
    assert all(not np.array_equal(a, b) for a, b in zip(us, us[1:]))


def test_the_stored_weight_is_a_new_tensor_with_its_graph_freed() -> None:
    """As eager mode's: a tensor of its own at each call (not the plan's buffer reused), whose
    grad_fn a second backward meets freed."""
    m = _model("weight_norm")
    opt = rt.optim.SGD(m.parameters(), lr=0.1)
    x = rt.randn(5, 4)

    @planner.compile
    def step(x: Any) -> Any:
        opt.zero_grad()
        loss = m(x).pow(2).sum()
        loss.backward()
        opt.step()
        return loss

    weights = []
    for _ in range(3):
        step(x)
        weights.append((m.weight, m.weight.detach().numpy().copy()))
    assert step.captures == 1
    assert len({id(w) for w, _ in weights}) == 3
    for w, value in weights:  # each kept its own values
        np.testing.assert_array_equal(w.detach().numpy(), value)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        m.weight.sum().backward()


class _Holder:
    pass


def test_a_stored_tensor_the_step_returns_is_the_returned_object() -> None:
    """``m.last = out; return out``: one tensor at both, as eager mode's (its grad_fn too);
    a tensor stored at two paths is one tensor at both."""
    m = rt.nn.Linear(4, 3)
    holder = _Holder()
    holder.a = holder.b = None

    @planner.compile
    def step(x: Any) -> Any:
        m.zero_grad()
        out = m(x).sum()
        out.backward()
        holder.a = holder.b = out * 2.0
        m.last = out
        return out

    for _ in range(3):
        out = step(rt.randn(5, 4))
        assert m.last is out and out.grad_fn.name() == "SumBackward0"
        assert holder.a is holder.b and holder.a.grad_fn.name() == "MulBackward0"
        np.testing.assert_allclose(holder.a.detach().numpy(), out.detach().numpy() * 2.0)
    assert step.captures == 1


def test_a_step_reading_the_old_value_first_replays_it_as_carried_state() -> None:
    """State carried from call to call (``h = h * 0.5 + x``): the plan reads the tensor found
    at the path at each replay, and the tensor it returns is the one stored there, as eager
    mode's (tests/planner/test_carried_state_h36.py has more)."""
    def run(compiled: bool) -> tuple[list[np.ndarray], Any]:
        holder = _Holder()
        holder.h = rt.zeros(3)
        w = rt.nn.Parameter(rt.ones(3))

        def step(x: Any) -> Any:
            holder.h = holder.h * 0.5 + (x * w).sum(0).detach()
            (holder.h * w).sum().backward()
            return holder.h

        fn = planner.compile(step) if compiled else step
        x = rt.arange(6.0).reshape(2, 3)
        out = []
        for _ in range(3):
            h = fn(x)
            assert h is holder.h
            out.append(h.numpy().copy())
        return out, fn

    want, _ = run(False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got, step = run(True)
    assert step.captures == 1
    for a, b in zip(want, got, strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_value_that_is_not_a_computed_tensor_is_not_stored_by_the_plan() -> None:
    """A tensor from outside the step put at a path is no output of the plan: the first call
    runs eagerly (a value the step sets once, in place for the capture after it), as before."""
    holder = _Holder()
    outside = [rt.ones(3), rt.full((3,), 2.0)]
    holder.t = outside[0]
    w = rt.nn.Parameter(rt.ones(3))

    @planner.compile
    def step(x: Any) -> Any:
        holder.t = outside[1]
        (x * w).sum().backward()

    step(rt.ones(3))
    assert holder.t is outside[1] and step.warmups == 1
    step(rt.ones(3))
    assert holder.t is outside[1] and step.captures == 1
    assert [b.stored for entry in step._cache.values() for b in entry.bindings] == [()]


_CHILD = """
import json, sys, warnings
sys.path.insert(0, {tests!r})
from test_module_attribute_writes_h34 import _train
seen, step, warned = _train({kind!r}, compiled=True)
print(json.dumps({{"loaded": step.plans_loaded, "captures": step.captures, "warned": warned,
                  "losses": [s["loss"].tolist() for s in seen],
                  "weights": [s["weight"].tolist() for s in seen],
                  "grad_fn": [s["grad_fn"] for s in seen]}}))
"""


def test_a_second_process_loads_the_kept_plan_and_trains_the_same(tmp_path: Path) -> None:
    runs = []
    for _ in range(2):
        env = dict(os.environ, BACKPLAN_CACHE_DIR=str(tmp_path))
        child = _CHILD.format(tests=str(Path(__file__).parent), kind="spectral_norm")
        out = subprocess.run([sys.executable, "-c", child], env=env, cwd=ROOT, check=True,
                             capture_output=True, text=True)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    assert [r["loaded"] for r in runs] == [0, 1]
    assert all(r["captures"] == 1 and r["warned"] == [] for r in runs)
    for key in ("losses", "weights", "grad_fn"):
        assert runs[0][key] == runs[1][key], key


def test_a_compiled_modules_hook_never_leaves_a_shape_only_weight() -> None:
    """``planner.compile(model)`` of a weight_norm'd Linear: no path of the step's code
    shows the hook's ``setattr(module, "weight", ...)``, and the capture's shape-only tensor
    was left at ``model.weight`` for good. The module's attributes are watched too: where
    the forward returns a tensor requiring grad (a plan with its own backward) the call runs
    eagerly, saying why; under no_grad the replay stores the weight."""
    m = _model("weight_norm")
    cm = planner.compile(m)
    x = rt.randn(5, 4)
    with pytest.warns(RuntimeWarning, match=r"assigns Linear\.weight a tensor and returns "
                                            "tensors that require grad"):
        cm(x).sum().backward()
    assert type(m.weight.detach().numpy()) is np.ndarray and m.weight.grad_fn is not None

    m = _model("weight_norm")
    cm = planner.compile(m)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for scale in (1.0, 2.0, 3.0):
            with rt.no_grad():
                m.weight_g.mul_(scale)
                got = cm(x)
            want = x.numpy() @ m.weight.numpy().T + m.bias.detach().numpy()
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
            v = m.weight_v.detach().numpy()
            np.testing.assert_allclose(m.weight.numpy(), m.weight_g.detach().numpy() * v
                                       / np.linalg.norm(v, axis=1, keepdims=True), rtol=1e-5)
            assert not m.weight.requires_grad and m.weight.grad_fn is None
    assert cm.forward.captures == 1


@pytest.mark.parametrize("set_to_none", [True, False])
def test_an_argument_the_step_keeps_is_the_calls_argument_after_each_replay(
        set_to_none: bool) -> None:
    """``holder.x = x``: eager mode leaves each call's argument there. The capture found it
    unchanged after a warm-up's eager run of the same call (a step creating its .grads),
    and a replay left the first call's argument there for good; now each replay stores its
    own. Where no warm-up comes first (.grads zeroed in place), the capture's change is seen."""
    holder = _Holder()
    holder.x = None
    lin = rt.nn.Linear(3, 2)
    opt = rt.optim.SGD(lin.parameters(), lr=0.1)
    if not set_to_none:
        lin(rt.ones(1, 3)).sum().backward()

    @planner.compile
    def step(x: Any) -> Any:
        opt.zero_grad(set_to_none=set_to_none)
        holder.x = x
        lin.last_input = x
        loss = lin(x).sum()
        loss.backward()
        opt.step()
        return loss

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for k in range(4):
            x = rt.full((2, 3), float(k))
            step(x)
            assert holder.x is x and lin.last_input is x
    assert step.captures == 1


@pytest.mark.parametrize("set_to_none", [True, False])
def test_a_grad_or_optimizer_state_kept_at_a_path_is_that_live_object(set_to_none: bool) -> None:
    """``holder.g = w.grad``, ``holder.m = opt.state[w]["momentum_buffer"]``: eager mode
    leaves those very objects there (a later in-place zero_grad shows in them); a replay
    stores them once its write-back has made them, not copies."""
    def run(compiled: bool) -> list[Any]:
        holder = _Holder()
        holder.g = holder.m = None
        rt.manual_seed(0)
        lin = rt.nn.Linear(3, 2)
        opt = rt.optim.SGD(lin.parameters(), lr=0.1, momentum=0.9)
        lin(rt.ones(1, 3)).sum().backward()
        opt.step()

        def step(x: Any) -> Any:
            opt.zero_grad(set_to_none=set_to_none)
            loss = lin(x).pow(2).sum()
            loss.backward()
            holder.g = lin.weight.grad
            opt.step()
            holder.m = opt.state[lin.weight]["momentum_buffer"]
            return loss

        fn = planner.compile(step) if compiled else step
        seen = []
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for k in range(3):
                fn(rt.full((2, 3), float(k)))
                assert holder.g is lin.weight.grad
                assert holder.m is opt.state[lin.weight]["momentum_buffer"]
                seen.append((holder.g.numpy().copy(), holder.m.numpy().copy()))
        opt.zero_grad(set_to_none=False)
        assert not holder.g.numpy().any()
        assert not compiled or fn.captures == 1
        return seen

    for (g, m), (cg, cm) in zip(run(False), run(True), strict=True):
        np.testing.assert_allclose(cg, g, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(cm, m, rtol=1e-5, atol=1e-6)


def test_a_view_kept_at_a_path_runs_eagerly_saying_why() -> None:
    """Eager mode's view shares its base's memory, which a tensor stored by a replay would
    not: the step runs eagerly, as eager mode, naming the path."""
    holder = _Holder()
    holder.row = None
    w = rt.nn.Parameter(rt.ones(2, 3))

    @planner.compile
    def step(x: Any) -> Any:
        w.grad = None
        y = x * w
        holder.row = y[0]
        y.sum().backward()

    with pytest.warns(RuntimeWarning, match=r"assigns holder\.row a view of another tensor"):
        step(rt.full((2, 3), 2.0))
    np.testing.assert_array_equal(holder.row.detach().numpy(), np.full(3, 2.0, np.float32))


class _Interrupting:
    """Its stores raise Ctrl-C's SIGINT once ``armed``, as a signal landing among them."""

    armed = False

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        if type(self).armed:
            type(self).armed = False
            signal.raise_signal(signal.SIGINT)


def test_the_stores_are_made_together_under_ctrl_c() -> None:
    """A SIGINT landing in the store of one stored tensor is raised once every store of the
    call is made: the tensors after it, and the parameters, are all of the call."""
    first, second = _Interrupting(), _Holder()
    first.a = second.b = None
    lin = rt.nn.Linear(3, 2)
    opt = rt.optim.SGD(lin.parameters(), lr=0.1)
    x = rt.ones(2, 3)

    @planner.compile
    def step(x: Any) -> Any:
        opt.zero_grad()
        lin(x).pow(2).sum().backward()
        opt.step()
        first.a = lin.weight * 2.0
        second.b = lin.weight * 3.0

    for _ in range(3):
        step(x)
    before = lin.weight.detach().numpy().copy()
    _Interrupting.armed = True
    with pytest.raises(KeyboardInterrupt):
        step(x)
    w = lin.weight.detach().numpy()
    assert not np.array_equal(w, before) and step.captures == 1
    np.testing.assert_allclose(first.a.detach().numpy(), w * 2.0, rtol=1e-6)
    np.testing.assert_allclose(second.b.detach().numpy(), w * 3.0, rtol=1e-6)
