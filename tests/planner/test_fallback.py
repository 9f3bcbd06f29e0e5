"""What cannot be captured runs eagerly, with one warning naming the line (or raises with
fullgraph=True); a compiled call that fails leaves every piece of state as it was."""

from __future__ import annotations

import dataclasses
import os
import warnings
from typing import Any

import numpy as np
import pytest

import planner
from planner.compile import RECOMPILE_LIMIT
from planner.steps import PrimitiveStep
import runtime as rt
import runtime.ops

F = rt.nn.functional
HERE = os.path.abspath(__file__)


def line_of(marker: str) -> int:
    """The line of this file holding ``marker`` (in a comment)."""
    for i, text in enumerate(open(HERE).read().splitlines(), 1):
        if text.rstrip().endswith(f"# <{marker}>"):
            return i
    raise AssertionError(marker)


def make_model(seed: int = 0) -> Any:
    model = rt.nn.Sequential(rt.nn.Linear(4, 6), rt.nn.Tanh(), rt.nn.Linear(6, 2))
    rng = np.random.default_rng(seed)
    with rt.no_grad():
        for p in model.parameters():
            p.copy_(rt.from_numpy(rng.uniform(-0.5, 0.5, p.shape).astype(np.float32)))
    return model


def step_item(model: Any, opt: Any, x: Any) -> Any:
    opt.zero_grad()
    loss = (model(x) ** 2).mean()
    loss.backward()
    opt.step()
    # an item the step uses (one it only returns is captured: test_item_outputs)
    return loss, loss.item() * 2  # <item>


def step_bool(model: Any, opt: Any, x: Any) -> Any:
    opt.zero_grad()
    out = model(x)
    if out.sum() > 0:  # <bool>
        loss = (out ** 2).mean()
    else:
        loss = out.abs().mean()
    loss.backward()
    opt.step()
    return loss


def step_numpy(model: Any, opt: Any, x: Any) -> Any:
    opt.zero_grad()
    loss = (model(x) ** 2).mean()
    loss.backward()
    opt.step()
    scale = float(loss.detach().numpy())  # <numpy>
    return loss * scale


CASES = {
    "item": (step_item, "item()"),
    "bool": (step_bool, "bool"),
    "numpy": (step_numpy, "numpy()"),
}


def snapshot(model: Any, opt: Any) -> Any:
    params = list(model.parameters())
    return ([p.detach().numpy().copy() for p in params],
            [None if p.grad is None else p.grad.numpy().copy() for p in params],
            [{k: (v.numpy().copy() if isinstance(v, rt.Tensor) else v)
              for k, v in opt.state.get(p, {}).items()} for p in params])


def assert_same_state(a: Any, b: Any) -> None:
    pa, ga, sa = a
    pb, gb, sb = b
    for x, y in zip(pa, pb, strict=True):
        np.testing.assert_array_equal(x, y)
    for x, y in zip(ga, gb, strict=True):
        assert (x is None) == (y is None)
        if x is not None:
            np.testing.assert_array_equal(x, y)
    for x, y in zip(sa, sb, strict=True):
        assert x.keys() == y.keys()
        for k in x:
            np.testing.assert_array_equal(np.asarray(x[k]), np.asarray(y[k]))


def flat(ret: Any) -> list[Any]:
    items = ret if isinstance(ret, tuple) else (ret,)
    return [i.detach().numpy() if isinstance(i, rt.Tensor) else i for i in items]


@pytest.mark.parametrize("name", sorted(CASES))
def test_fallback_warns_once_and_matches_eager(name: str) -> None:
    body, reason = CASES[name]
    (m_e, m_c) = make_model(), make_model()
    o_e = rt.optim.SGD(m_e.parameters(), lr=0.1, momentum=0.9)
    o_c = rt.optim.SGD(m_c.parameters(), lr=0.1, momentum=0.9)
    step = planner.compile(lambda x: body(m_c, o_c, x))
    rng = np.random.default_rng(3)
    caught_all = []
    for i in range(4):
        xa = rng.standard_normal((3, 4)).astype(np.float32)
        if name == "bool" and i % 2:
            xa = -xa
        expected = body(m_e, o_e, rt.from_numpy(xa.copy()))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = step(rt.from_numpy(xa.copy()))
        caught_all += [w for w in caught if issubclass(w.category, RuntimeWarning)]
        for a, b in zip(flat(got), flat(expected), strict=True):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        assert_same_state(snapshot(m_c, o_c), snapshot(m_e, o_e))
    assert len(caught_all) == 1, [str(w.message) for w in caught_all]
    text = str(caught_all[0].message)
    assert f"{HERE}:{line_of(name)}" in text, text
    assert reason in text, text
    assert "eager" in text
    # a new guard (another batch size) is a new capture attempt: one more warning, once
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            xa = rng.standard_normal((2, 4)).astype(np.float32)
            expected = body(m_e, o_e, rt.from_numpy(xa.copy()))
            got = step(rt.from_numpy(xa.copy()))
            for a, b in zip(flat(got), flat(expected), strict=True):
                np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert len([w for w in caught if issubclass(w.category, RuntimeWarning)]) == 1
    assert_same_state(snapshot(m_c, o_c), snapshot(m_e, o_e))


@pytest.mark.parametrize("name", sorted(CASES))
def test_fullgraph_raises(name: str) -> None:
    body, reason = CASES[name]
    model = make_model()
    opt = rt.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    before = snapshot(model, opt)
    step = planner.compile(lambda x: body(model, opt, x), fullgraph=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(planner.CompileError) as info:
            step(rt.from_numpy(np.ones((3, 4), np.float32)))
    assert f"{HERE}:{line_of(name)}" in str(info.value)
    assert reason in str(info.value)
    assert_same_state(snapshot(model, opt), before)  # capture changed nothing


@pytest.mark.parametrize("backend", ["interpreter", "llvm"])
@pytest.mark.parametrize("opt_name", ["sgd_momentum", "adam"])
@pytest.mark.parametrize("victim", ["first", "last"])
def test_failing_replay_leaves_state_untouched(monkeypatch: pytest.MonkeyPatch, opt_name: str,
                                               victim: str, backend: str) -> None:
    model = make_model()
    params = list(model.parameters())
    opt = (rt.optim.SGD(params, lr=0.1, momentum=0.9) if opt_name == "sgd_momentum"
           else rt.optim.Adam(params, lr=0.01))

    def train(x: Any) -> Any:
        opt.zero_grad(set_to_none=False)
        loss = (model(x) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    step = planner.compile(train, backend=backend)
    x = rt.from_numpy(np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32))
    for _ in range(2):
        step(x)  # state (grads, buffers) now exists; the plan replays
    captures = step.captures
    before = snapshot(model, opt)
    versions = [p._vc.v for p in params]
    plan = step.plan
    # a registry primitive the plan calls (a fused kernel step calls compiled code instead,
    # and so does a product the llvm plan runs as generated code)
    generated = plan.executable.products()
    compute = [s for s in plan.steps
               if isinstance(s, PrimitiveStep) and s not in generated]
    target = compute[0] if victim == "first" else compute[-1]
    count = sum(1 for s in compute if s.op == target.op)
    prim = runtime.ops.REGISTRY[target.op]
    calls = {"n": 0}

    def boom(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == count:  # the last use of this primitive in the plan
            raise FloatingPointError("boom")
        return prim.impl(*args, **kwargs)

    # a primitive whose one implementation is its impl (no declared ufunc or fast path)
    monkeypatch.setitem(runtime.ops.REGISTRY, target.op,
                        dataclasses.replace(prim, impl=boom, ufunc=None, specializer=None))
    with pytest.raises(FloatingPointError, match="boom"):
        step(x)
    assert calls["n"] == count
    assert step.captures == captures  # it failed in replay, not in a new capture
    assert_same_state(snapshot(model, opt), before)
    assert [p._vc.v for p in params] == versions
    monkeypatch.undo()
    step(x)  # and it still works afterwards



def _indexed_step() -> tuple[Any, Any]:
    """A training step that slices numpy data by a Python int: a new capture per index."""
    data = np.random.default_rng(3).standard_normal((128, 4)).astype(np.float32)
    w = rt.nn.Parameter(rt.ones(4))
    opt = rt.optim.SGD([w], lr=0.1)

    def step(i: int) -> Any:
        x = rt.from_numpy(data[i * 8:(i + 1) * 8])
        opt.zero_grad()
        loss = (x @ w).pow(2).mean()
        loss.backward()
        opt.step()
        return loss

    return step, w


def test_past_the_recompile_limit_new_arguments_run_eagerly_with_one_warning() -> None:
    """As torch.compile's recompile_limit: after 8 captures a call that needs another runs
    eagerly (one RuntimeWarning naming the change and pointing at the caller); the plans
    made replay; training equals eager throughout."""
    fn, w = _indexed_step()
    ref_fn, ref_w = _indexed_step()
    step = planner.compile(fn)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in [*range(12), 3, 0, 14]:
            np.testing.assert_allclose(float(step(i)), float(ref_fn(i)), rtol=1e-5)
    assert step.captures == RECOMPILE_LIMIT == 8
    (warning,) = [w for w in caught if "recompile_limit" in str(w.message)]
    assert "argument 0: ('int', 8) (was ('int', 7))" in str(warning.message)
    assert warning.filename == __file__
    np.testing.assert_allclose(w.detach().numpy(), ref_w.detach().numpy(), rtol=1e-5)


def test_recompile_limit_none_fullgraph_and_bad_values() -> None:
    fn, _ = _indexed_step()
    step = planner.compile(fn, recompile_limit=None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for i in range(10):
            step(i)
    assert step.captures == 10
    fn, _ = _indexed_step()
    strict = planner.compile(fn, fullgraph=True, recompile_limit=2)
    strict(0), strict(1)
    with pytest.raises(planner.CompileError, match="captured 2 times .recompile_limit."):
        strict(2)
    for bad in (0, -1, 2.5, "8"):
        with pytest.raises(ValueError, match="recompile_limit must be a positive int or None"):
            planner.compile(fn, recompile_limit=bad)
