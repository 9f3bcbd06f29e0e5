"""Guards: a call whose inputs or captured state differ from the capture re-plans (and logs
why); a call that matches replays; the plan cache is bounded."""

from __future__ import annotations

import logging
import sys
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt

F = rt.nn.functional
compile_module = sys.modules["planner.compile"]


def arr(*shape: int, seed: int = 0, dtype: Any = np.float32) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def simple_step(x: Any) -> Any:
    return (x.tanh() * 2.0).sum()


def planner_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "planner"]


def test_same_shape_replays(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="planner")
    step = planner.compile(simple_step)
    for seed in range(3):
        a = arr(3, 4, seed=seed)
        out = step(rt.from_numpy(a))
        np.testing.assert_allclose(out.detach().numpy(), simple_step(rt.from_numpy(a)).detach().numpy(),
                                   rtol=1e-6)
    assert step.captures == 1
    assert not [m for m in planner_lines(caplog) if "recompil" in m]


def test_shape_change_recompiles_and_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="planner")
    step = planner.compile(simple_step)
    step(rt.from_numpy(arr(3, 4)))
    assert step.captures == 1
    out = step(rt.from_numpy(arr(5, 2)))
    assert step.captures == 2
    np.testing.assert_allclose(out.detach().numpy(), simple_step(rt.from_numpy(arr(5, 2))).detach().numpy(),
                               rtol=1e-6)
    lines = [m for m in planner_lines(caplog) if "recompil" in m]
    assert len(lines) == 1
    assert "shape" in lines[0] and "argument 0" in lines[0], lines
    # both plans stay cached: going back replays
    step(rt.from_numpy(arr(3, 4, seed=1)))
    step(rt.from_numpy(arr(5, 2, seed=1)))
    assert step.captures == 2


@pytest.mark.parametrize("change", ["requires_grad", "dtype", "no_grad"])
def test_other_guards_recompile(change: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="planner")

    def step_fn(x: Any) -> Any:
        y = (x * x).sum()
        if y.requires_grad:
            (g,) = rt.autograd.grad(y, [x])
            return y, g
        return y, None

    step = planner.compile(step_fn)
    a = arr(4)
    step(rt.tensor(a, requires_grad=True))
    assert step.captures == 1
    if change == "requires_grad":
        x = rt.tensor(a)
        got, expected = step(x), step_fn(rt.tensor(a))
        word = "requires_grad"
    elif change == "dtype":
        x = rt.tensor(a.astype(np.float64), requires_grad=True)
        got, expected = step(x), step_fn(rt.tensor(a.astype(np.float64), requires_grad=True))
        assert got[0].dtype is rt.float64 and got[1].dtype is rt.float64
        word = "dtype"
    else:
        with rt.no_grad():
            got = step(rt.tensor(a, requires_grad=True))
            expected = step_fn(rt.tensor(a, requires_grad=True))
        word = "grad mode"
    assert step.captures == 2
    np.testing.assert_allclose(got[0].detach().numpy(), expected[0].detach().numpy(), rtol=1e-6)
    if expected[1] is None:
        assert got[1] is None
    else:
        np.testing.assert_allclose(got[1].detach().numpy(), expected[1].detach().numpy(), rtol=1e-6)
    lines = [m for m in planner_lines(caplog) if "recompil" in m]
    assert len(lines) == 1 and word in lines[0], lines


def make_linear(seed: int = 0) -> Any:
    lin = rt.nn.Linear(4, 2)
    with rt.no_grad():
        lin.weight.copy_(rt.from_numpy(arr(2, 4, seed=seed)))
        lin.bias.copy_(rt.from_numpy(arr(2, seed=seed + 1)))
    return lin


def test_replacing_parameter_recompiles(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="planner")
    lin = make_linear()

    @rt.no_grad()
    def fwd(x: Any) -> Any:
        return lin(x).sum()

    step = planner.compile(fwd)
    x = rt.from_numpy(arr(3, 4, seed=5))
    step(x)
    step(x)
    assert step.captures == 1
    lin.weight = rt.nn.Parameter(rt.from_numpy(arr(2, 4, seed=9)))
    got = step(x)
    assert step.captures == 2
    np.testing.assert_allclose(got.detach().numpy(), fwd(x).detach().numpy(), rtol=1e-6)
    lines = [m for m in planner_lines(caplog) if "recompil" in m]
    assert len(lines) == 1 and "replaced" in lines[0], lines


def test_changing_lr_replays_with_new_lr(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="planner")
    runs = []
    for _ in range(2):
        lin = make_linear()
        opt = rt.optim.SGD(lin.parameters(), lr=0.1, momentum=0.9)

        def train(x: Any, lin: Any = lin, opt: Any = opt) -> Any:
            opt.zero_grad()
            loss = (lin(x) ** 2).mean()
            loss.backward()
            opt.step()
            return loss

        runs.append((lin, opt, train))
    (lin_e, opt_e, eager), (lin_c, opt_c, fn) = runs
    step = planner.compile(fn)
    x = rt.from_numpy(arr(3, 4, seed=5))
    for i in range(5):
        if i == 3:
            opt_e.param_groups[0]["lr"] = 0.5
            opt_c.param_groups[0]["lr"] = 0.5
            before = step.captures
        np.testing.assert_allclose(step(x).detach().numpy(), eager(x).detach().numpy(), rtol=1e-6, atol=1e-7)
        for pc, pe in zip(lin_c.parameters(), lin_e.parameters(), strict=True):
            np.testing.assert_allclose(pc.detach().numpy(), pe.detach().numpy(), rtol=1e-6, atol=1e-7)
            np.testing.assert_allclose(opt_c.state[pc]["momentum_buffer"].detach().numpy(),
                                       opt_e.state[pe]["momentum_buffer"].detach().numpy(),
                                       rtol=1e-6, atol=1e-7)
        if i == 3:  # lr is read at each replay: no recompile
            assert step.captures == before
            assert not [m for m in planner_lines(caplog) if "recompil" in m and "'lr'" in m]


def test_lru_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compile_module, "CACHE_SIZE", 2)
    step = planner.compile(simple_step)
    for n in (1, 2, 3):
        step(rt.from_numpy(arr(n)))
    assert step.captures == 3
    step(rt.from_numpy(arr(3)))
    step(rt.from_numpy(arr(2)))
    assert step.captures == 3  # the two most recent stay cached
    out = step(rt.from_numpy(arr(1)))  # the oldest was evicted
    assert step.captures == 4
    np.testing.assert_allclose(out.detach().numpy(), simple_step(rt.from_numpy(arr(1))).detach().numpy(),
                               rtol=1e-6)
    step(rt.from_numpy(arr(3)))  # 3 was least recently used when 1 came back
    assert step.captures == 5
    assert len(step._cache) <= 2


def test_default_cache_size_bounds_entries() -> None:
    step = planner.compile(simple_step, recompile_limit=None)
    for n in range(1, compile_module.CACHE_SIZE + 3):
        step(rt.from_numpy(arr(n)))
    assert len(step._cache) == compile_module.CACHE_SIZE
    assert step.captures == compile_module.CACHE_SIZE + 2


SCALE = 2.0


def test_module_global_scalar_is_guarded() -> None:
    global SCALE
    w = rt.ones(3)

    @planner.compile
    def f(x: Any) -> Any:
        return (x * w * SCALE).sum()

    x = rt.ones(3)
    assert f(x).item() == 6.0
    SCALE = 3.0
    try:
        assert f(x).item() == 9.0
        assert f.captures == 2
    finally:
        SCALE = 2.0


def test_closure_scalar_is_guarded(caplog: pytest.LogCaptureFixture) -> None:
    k = 1.0

    @planner.compile
    def g(x: Any) -> Any:
        return (x * k).sum()

    x = rt.ones(3)
    assert g(x).item() == 3.0
    k = 5.0
    with caplog.at_level(logging.INFO, logger="planner"):
        assert g(x).item() == 15.0
    assert g.captures == 2
    assert any("Python value k" in r.getMessage() for r in caplog.records)


def test_data_dependent_shape_falls_back() -> None:
    x = rt.randn(6)

    @planner.compile
    def f(x: Any) -> Any:
        return x[x > 0].sum()

    with pytest.warns(RuntimeWarning, match="runs eagerly"):
        out = f(x)
    assert out.item() == x[x > 0].sum().item()


def test_freezing_a_parameter_recompiles() -> None:
    lin = rt.nn.Linear(3, 2)

    @planner.compile
    def step(x: Any) -> Any:
        lin.zero_grad()
        loss = lin(x).sum()
        loss.backward()
        return loss

    x = rt.ones(4, 3)
    step(x)
    assert lin.weight.grad is not None
    lin.weight.requires_grad_(False)
    step(x)
    assert lin.weight.grad is None  # zero_grad dropped it and backward no longer fills it
    assert lin.bias.grad is not None
    assert step.captures == 2


def test_optimizer_match_is_key_equality() -> None:
    """The per-call optimizer guard decides exactly what comparing the captured key would."""
    model = rt.nn.Linear(3, 2)
    params = list(model.parameters())
    opt = rt.optim.Adam(params, lr=0.01, betas=(0.9, 0.999))
    x = rt.from_numpy(arr(4, 3))

    def agrees() -> bool:
        same = compile_module._optimizer_matches(opt, key)
        assert same == (compile_module._optimizer_key(opt) == key)
        return same

    key = compile_module._optimizer_key(opt)
    assert agrees()
    opt.param_groups[0]["betas"] = [0.9, 0.999]  # a list of the same values: the same key
    assert agrees()
    opt.param_groups[0]["lr"] = 0.02  # a number is a replay-time input: the same key
    assert agrees()
    opt.param_groups[0]["lr"] = 0.0  # no update branches on a zero lr: the same key
    assert agrees()
    decay = opt.param_groups[0]["weight_decay"]
    opt.param_groups[0]["weight_decay"] = 0.1  # but they branch on a zero weight decay
    assert not agrees()
    opt.param_groups[0]["weight_decay"] = decay
    opt.param_groups[0]["lr"] = 0.01
    opt.param_groups[0]["extra"] = 1
    assert not agrees()
    del opt.param_groups[0]["extra"]
    assert agrees()
    opt.param_groups[0]["lr"] = float("nan")
    key = compile_module._optimizer_key(opt)
    assert agrees()  # the same nan object: equal, as inside a tuple
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()  # state appears
    assert not agrees()
    key = compile_module._optimizer_key(opt)
    assert agrees()
    opt.state[params[0]]["exp_avg"] = opt.state[params[0]]["exp_avg"].clone()
    assert not agrees()  # another tensor object
    opt.param_groups[0]["params"] = params[::-1]
    assert not agrees()


step = 0  # a module-level loop variable named like opt.step(): an attribute, not a read


def test_attribute_names_are_not_guarded_as_globals() -> None:
    global step
    w = rt.tensor(np.ones(3, np.float32), requires_grad=True)
    opt = rt.optim.SGD([w], lr=0.1)

    @planner.compile
    def train(x: Any) -> Any:
        opt.zero_grad()
        loss = (x * w).sum()
        loss.backward()
        opt.step()
        return loss

    try:
        for step in range(4):  # noqa: B007
            train(rt.ones(3))
    finally:
        step = 0
    assert train.captures == 1


def test_global_read_in_a_comprehension_is_guarded() -> None:
    global SCALE

    @planner.compile
    def f(x: Any) -> Any:
        return sum([(x * SCALE).sum() for _ in range(2)])

    x = rt.ones(3)
    assert f(x).item() == 12.0
    SCALE = 3.0
    try:
        assert f(x).item() == 18.0
        assert f.captures == 2
    finally:
        SCALE = 2.0


def test_training_loop_captures_once(caplog: pytest.LogCaptureFixture) -> None:
    """zero_grad(set_to_none) clears the .grads before the step reads them: whether the last
    call left them set is not guarded (issue 12: the second call used to capture again)."""
    caplog.set_level(logging.INFO, logger="planner")
    rt.manual_seed(0)
    model = rt.nn.Sequential(rt.nn.Linear(4, 8), rt.nn.ReLU(), rt.nn.Linear(8, 1))
    ref = rt.nn.Sequential(rt.nn.Linear(4, 8), rt.nn.ReLU(), rt.nn.Linear(8, 1))
    ref.load_state_dict(model.state_dict())
    opts = [rt.optim.SGD(m.parameters(), lr=0.1) for m in (model, ref)]

    def train(m: Any, opt: Any, x: Any, y: Any) -> Any:
        opt.zero_grad()
        loss = ((m(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    compiled = planner.compile(train)
    x, y = rt.from_numpy(arr(16, 4)), rt.from_numpy(arr(16, 1, seed=1))
    for _ in range(4):
        got = compiled(model, opts[0], x, y)
        want = train(ref, opts[1], x, y)
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-6)
    assert compiled.captures == 1, planner_lines(caplog)
    for p, q in zip(model.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-7)
    # a .grad cleared by hand afterwards is set again by the next call, as in eager
    for p in model.parameters():
        p.grad = None
    compiled(model, opts[0], x, y)
    assert all(p.grad is not None for p in model.parameters())
    assert compiled.captures == 1


def test_grad_assigned_before_it_is_read_is_not_guarded() -> None:
    w = rt.tensor(np.ones(3, np.float32), requires_grad=True)
    ref = rt.tensor(np.ones(3, np.float32), requires_grad=True)

    def f(p: Any, x: Any) -> Any:
        p.grad = rt.zeros_like(p)  # set before any read: whatever was there does not matter
        (p * x).sum().backward()  # accumulates into the assigned zeros
        return p.grad.sum()

    step = planner.compile(f)
    x = rt.from_numpy(arr(3))
    for _ in range(3):  # None on the first call, set afterwards
        np.testing.assert_allclose(step(w, x).item(), f(ref, x).item(), rtol=1e-6)
        np.testing.assert_allclose(w.grad.numpy(), ref.grad.numpy(), rtol=1e-6)
    assert step.captures == 1


BATCH = np.zeros((8, 4), np.float32)


def _batch_training(read: Any, compiled: bool, rebind: bool) -> tuple[list[float], int | None]:
    """A step that reads its batch from the module global BATCH through ``read``, the batch
    rebound (or refilled in place) before every call."""
    global BATCH
    rng = np.random.default_rng(0)
    BATCH = rng.standard_normal((8, 4)).astype(np.float32)
    w = rt.nn.Parameter(rt.ones(4))
    opt = rt.optim.SGD([w], lr=0.1)

    def step() -> Any:
        x = read(BATCH)
        opt.zero_grad()
        loss = (x @ w).pow(2).mean()
        loss.backward()
        opt.step()
        return loss

    f = planner.compile(step) if compiled else step
    losses = []
    for _ in range(4):
        if rebind:
            BATCH = rng.standard_normal((8, 4)).astype(np.float32)
        else:
            BATCH[:] = rng.standard_normal((8, 4))
        losses.append(float(f()))
    return losses, getattr(f, "captures", None)


@pytest.mark.parametrize("read", [rt.from_numpy, rt.tensor], ids=["from_numpy", "tensor"])
def test_a_global_numpy_array_rebound_between_calls_is_guarded(read: Any) -> None:
    """Baked at capture, a global batch rebound every iteration was replayed stale; it is
    guarded by identity: each rebinding captures again, and training equals eager."""
    want, _ = _batch_training(read, compiled=False, rebind=True)
    got, captures = _batch_training(read, compiled=True, rebind=True)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert captures == 4


def test_a_global_numpy_array_refilled_in_place_through_from_numpy() -> None:
    """``from_numpy`` shares the array's memory: refilled in place, it is read anew at every
    replay, with one capture."""
    want, _ = _batch_training(rt.from_numpy, compiled=False, rebind=False)
    got, captures = _batch_training(rt.from_numpy, compiled=True, rebind=False)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert captures == 1


def test_a_closure_numpy_array_rebound_is_guarded_and_explained() -> None:
    data = np.ones(3, np.float32)
    w = rt.ones(3)

    def f() -> Any:
        return (rt.from_numpy(data) * w).sum()

    step = planner.compile(f)
    assert float(step()) == 3.0
    data = np.full(3, 2.0, np.float32)  # noqa: F841 - read by f through its closure
    assert float(step()) == 6.0 and step.captures == 2
    binding = step._cache[next(iter(step._cache))].bindings[-1]
    data = np.full(3, 5.0, np.float32)  # noqa: F841
    assert binding.check(()) == "the numpy array data is another array (by identity)"


def test_a_backward_hook_added_after_capture_is_not_skipped() -> None:
    """A module's backward hooks are part of the guard, as its forward hooks: the plan
    captured before the hook would have replayed without calling it."""
    model = rt.nn.Linear(3, 2)

    def train(x: Any) -> Any:
        loss = model(x).sum()
        loss.backward()
        return loss.detach()

    step = planner.compile(train)
    x = rt.ones(4, 3)
    step(x)
    calls: list[Any] = []
    model.register_full_backward_hook(lambda m, gi, go: calls.append(go[0].shape))
    with pytest.warns(RuntimeWarning, match="runs eagerly"):
        step(x)
    step(x)
    assert calls == [(4, 2), (4, 2)]


def test_the_default_dtype_is_part_of_the_call_key(caplog: pytest.LogCaptureFixture) -> None:
    """rt.tensor(1.5) and Python floats take the default dtype: a step captured under float32
    captures again under float64 (saying why), and the float32 plan is kept for float32."""
    x = rt.ones(3, requires_grad=True)

    def f(x: Any) -> Any:
        return ((x * 2.5).sum() + rt.tensor(1.5)).detach()

    step = planner.compile(f)
    assert step(x).dtype is rt.float32
    rt.set_default_dtype(rt.float64)
    try:
        with caplog.at_level(logging.INFO, logger="planner"):
            got = step(x)
        assert got.dtype is f(x).dtype is rt.float64
        assert "the default dtype is float64 (was float32)" in caplog.text
    finally:
        rt.set_default_dtype(rt.float32)
    assert step(x).dtype is rt.float32 and step.captures == 2
