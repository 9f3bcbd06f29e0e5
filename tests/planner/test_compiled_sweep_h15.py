"""h15's adversarial sweep of planner.compile's guards and stale plans: a step changed between
calls (its defaults, a tensor it saved written in place, ...) computes what eager mode does,
capturing again where what the plan baked in changed, with no stale replay."""

from __future__ import annotations

import collections
import contextlib
import copy
import functools
import types
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt

nn = rt.nn


def _outcome(fn: Callable[..., Any], *args: Any) -> Any:
    """What a call gives: its returned value, or the type and text of what it raised."""
    try:
        out = fn(*args)
    except Exception as e:  # noqa: BLE001 - compared with the other mode's
        return type(e).__name__, str(e)
    return out.detach().numpy().copy() if isinstance(out, rt.Tensor) else out


def _same(a: Any, b: Any) -> None:
    if isinstance(a, np.ndarray):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    else:
        assert a == b


@pytest.mark.parametrize("make", [lambda: rt.ones(4, 3, requires_grad=True),
                                  lambda: nn.Linear(3, 2)], ids=["tensor", "linear"])
def test_input_saved_for_backward_then_written_in_place_raises(make: Callable[[], Any]) -> None:
    """An argument a forward op saves (Linear's input, for its weight's gradient), written in
    place before the backward: eager mode (and PyTorch) raise "one of the variables needed for
    gradient computation has been modified by an inplace operation"; the capture did not
    move the version of a tensor from outside the step, and the plan computed a gradient
    from the new values, silently."""

    def step(w: Any, x: Any) -> Any:
        loss = (x @ w.t() if isinstance(w, rt.Tensor) else w(x)).sum()
        x.add_(1)
        loss.backward()
        return loss

    w = make()
    for p in [w] if isinstance(w, rt.Tensor) else w.parameters():
        p.grad = rt.zeros_like(p)  # a step that finds them set: captured on its first call
    w2 = copy.deepcopy(w)
    compiled = planner.compile(step)
    for _ in range(3):
        eager, replayed = _outcome(step, w, rt.ones(2, 3)), _outcome(compiled, w2, rt.ones(2, 3))
        assert eager[0] == "RuntimeError" and "modified by an inplace operation" in eager[1]
        assert replayed == eager


def test_input_written_in_place_after_backward_replays() -> None:
    """Written after the backward that saved it: no error, one capture, eager's values."""

    def step(w: Any, x: Any) -> Any:
        loss = (x * w).sum()
        loss.backward()
        x.add_(1)
        return loss

    w, w2 = rt.ones(3, requires_grad=True), rt.ones(3, requires_grad=True)
    w.grad, w2.grad = rt.zeros(3), rt.zeros(3)
    compiled = planner.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            x, x2 = rt.arange(3.0), rt.arange(3.0)
            _same(_outcome(step, w, x), _outcome(compiled, w2, x2))
            np.testing.assert_array_equal(x2.numpy(), x.numpy())
            np.testing.assert_array_equal(w2.grad.numpy(), w.grad.numpy())
    assert compiled.captures == 1


def _same_grad(p: Any, q: Any) -> None:
    assert (q.grad is None) == (p.grad is None)
    if p.grad is not None:
        np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=1e-5, atol=1e-6)


def _planner_said(said: list[warnings.WarningMessage]) -> list[str]:
    """The planner's own warnings among those recorded (``planner...``): not another library's
    that an earlier test imported (JAX warns at each os.fork(), which codegen.forked calls)."""
    return [text for text in map(str, (w.message for w in said)) if text.startswith("planner")]


def _train_pair(step: Callable[..., Any], change: Callable[[int], None], calls: int = 5,
                ) -> tuple[Any, list[str]]:
    """``step(model, opt, x)`` eagerly and compiled on copies of one model and optimizer,
    ``change(i)`` made before call i; every returned value, parameter and gradient equal.
    Returns the compiled step and the warnings it gave."""
    rt.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 2))
    opt = rt.optim.SGD(model.parameters(), lr=0.01)
    model2 = copy.deepcopy(model)
    opt2 = rt.optim.SGD(model2.parameters(), lr=0.01)
    compiled = planner.compile(step)
    x = rt.randn(3, 4)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        for i in range(calls):
            change(i)
            _same(_outcome(step, model, opt, x), _outcome(compiled, model2, opt2, x))
            for p, q in zip(model.parameters(), model2.parameters(), strict=True):
                np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-5,
                                           atol=1e-6)
                _same_grad(p, q)
    return compiled, _planner_said(said)


def _scaled(model: Any, opt: Any, x: Any, scale: float) -> Any:
    opt.zero_grad()
    loss = (model(x) * scale).tanh().mean()
    loss.backward()
    opt.step()
    return loss


def test_positional_default_rebound_captures_again(caplog: pytest.LogCaptureFixture) -> None:
    """``step.__defaults__ = (3.0,)``: the default a call leaves out was baked into the plan,
    which replayed the old one (PyTorch's dynamo guards the function's defaults)."""

    def step(model: Any, opt: Any, x: Any, scale: float = 1.0) -> Any:
        return _scaled(model, opt, x, scale)

    def change(i: int) -> None:
        if i == 2:
            step.__defaults__ = (3.0,)

    caplog.set_level("INFO", logger="planner")
    compiled, said = _train_pair(step, change)
    assert not said and compiled.captures == 2
    assert any("scale (a default of" in r.getMessage() and "3.0" in r.getMessage()
               for r in caplog.records)


def test_keyword_only_default_changed_captures_again() -> None:
    def step(model: Any, opt: Any, x: Any, *, scale: float = 1.0) -> Any:
        return _scaled(model, opt, x, scale)

    def change(i: int) -> None:
        if i == 2:
            step.__kwdefaults__["scale"] = 0.5
        if i == 3:
            step.__kwdefaults__ = {"scale": 2.0}

    compiled, said = _train_pair(step, change)
    assert not said and compiled.captures == 3


def test_default_dict_rebound_and_mutated() -> None:
    def step(model: Any, opt: Any, x: Any, cfg: dict[str, float] | None = None) -> Any:
        return _scaled(model, opt, x, cfg["scale"])

    step.__defaults__ = ({"scale": 1.0},)

    def change(i: int) -> None:
        if i == 2:
            step.__defaults__ = ({"scale": 2.0},)
        if i == 3:
            step.__defaults__[0]["scale"] = 0.25

    compiled, said = _train_pair(step, change)
    assert not said and compiled.captures == 3


def test_unchanged_defaults_capture_once() -> None:
    def step(model: Any, opt: Any, x: Any, scale: float = 2.0, *, cfg: Any = (1, 2)) -> Any:
        return _scaled(model, opt, x, scale * cfg[1])

    compiled, said = _train_pair(step, lambda i: None)
    assert not said and compiled.captures == 1


NOISE = rt.Generator().manual_seed(3)


def _noisy(w: Any) -> Any:
    loss = (w + rt.randn(3, generator=NOISE)).tanh().sum()
    loss.backward()
    return loss


class _Noisy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(rt.zeros(3))
        self.gen = rt.Generator().manual_seed(1)

    def forward(self) -> Any:
        return (self.w + rt.randn(3, generator=self.gen)).tanh().sum()


def _module_step(m: Any) -> Any:
    loss = m()
    loss.backward()
    return loss


@pytest.mark.parametrize("where", ["global", "attribute"])
def test_generator_read_by_path_captures_once_until_rebound(where: str) -> None:
    """A generator of the user's reached by a name or attribute (``randn(generator=G)``): its
    fields change at every draw (a cached normal, its seed), which were guarded by value, so
    the step captured again at every call (to the recompile limit, then eagerly); the plan
    draws from its state at each replay, so only another generator there captures again."""
    global NOISE
    m = _Noisy()
    w = m.w if where == "global" else None
    for p in m.parameters():
        p.grad = rt.zeros(3)
    compiled = planner.compile(_noisy if where == "global" else _module_step)

    def gen() -> Any:
        return NOISE if where == "global" else m.gen

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for i in range(5):
            if i == 3:
                if where == "global":
                    NOISE = rt.Generator().manual_seed(100)
                else:
                    m.gen = rt.Generator().manual_seed(100)
            state, grad = gen().get_state(), m.w.grad.clone()
            eager = (_noisy(w) if where == "global" else _module_step(m)).item()
            eager_grad, eager_state = m.w.grad.clone(), gen().get_state()
            gen().set_state(state)
            m.w.grad = grad
            replayed = (compiled(w) if where == "global" else compiled(m)).item()
            assert replayed == pytest.approx(eager, rel=1e-6)
            np.testing.assert_allclose(m.w.grad.numpy(), eager_grad.numpy(), rtol=1e-6)
            np.testing.assert_array_equal(gen().get_state().numpy(), eager_state.numpy())
            assert compiled.captures == (1 if i < 3 else 2)


class _Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.act = nn.ReLU()

    def forward(self, x: Any) -> Any:
        return self.act(self.fc(x))


def _doubled(self: Any, x: Any) -> Any:
    return self.fc(x) * 2


def _net_pair(change: Callable[[int, Any], None], calls: int = 5) -> tuple[Any, list[str]]:
    """A _Net trained eagerly and compiled on copies, ``change(i, model)`` made to both before
    call i: the same losses, parameters and gradients at every call."""
    def step(model: Any, opt: Any, x: Any) -> Any:
        opt.zero_grad()
        loss = model(x).tanh().mean()
        loss.backward()
        opt.step()
        return loss

    rt.manual_seed(0)
    model = _Net()
    model2 = copy.deepcopy(model)
    opt, opt2 = (rt.optim.SGD(m.parameters(), lr=0.01) for m in (model, model2))
    compiled = planner.compile(step)
    x = rt.randn(5, 4)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        for i in range(calls):
            change(i, model)
            change(i, model2)
            _same(_outcome(step, model, opt, x), _outcome(compiled, model2, opt2, x))
            for p, q in zip(model.parameters(), model2.parameters(), strict=True):
                np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-5,
                                           atol=1e-6)
                _same_grad(p, q)
    return compiled, _planner_said(said)


def test_forward_bound_to_an_instance_captures_again(caplog: pytest.LogCaptureFixture) -> None:
    """``model.forward = ...`` (and a submodule's): its calls run that function, as PyTorch's
    Module.__call__ does; the plan replayed the class's forward it captured."""
    def change(i: int, model: Any) -> None:
        if i == 2:
            model.forward = types.MethodType(_doubled, model)
        if i == 3:
            model.fc.forward = functools.partial(nn.functional.linear, weight=model.fc.weight)

    caplog.set_level("INFO", logger="planner")
    compiled, said = _net_pair(change)
    assert not said and compiled.captures == 3
    said = [r.getMessage() for r in caplog.records if "recompiling" in r.getMessage()]
    assert "the forward of _Net (in _Net) was rebound" in said[0]
    assert "the forward of Linear (in _Net) was rebound" in said[1]


def test_forward_of_the_class_rebound_captures_again() -> None:
    """``Net.forward = other`` between calls (no module changes): guarded per call for the
    user's classes; put back, the first plan replays."""
    original = _Net.forward

    def change(i: int, model: Any) -> None:
        if model is not None and i in (2, 3):
            _Net.forward = _doubled if i == 2 else original

    try:
        compiled, said = _net_pair(change)
    finally:
        _Net.forward = original
    assert not said and compiled.captures == 2


def test_submodule_swapped_for_one_without_parameters_names_it(
        caplog: pytest.LogCaptureFixture) -> None:
    """ReLU swapped for a Sigmoid captures again; the log named a missing setting of ReLU
    ('ReLU.inplace is <object object at 0x...>')."""
    def change(i: int, model: Any) -> None:
        if i == 2:
            model.act = nn.Sigmoid()

    caplog.set_level("INFO", logger="planner")
    compiled, said = _net_pair(change)
    assert not said and compiled.captures == 2
    assert any("ReLU was replaced by Sigmoid" in r.getMessage() for r in caplog.records)


def _shared_pair(arg: Callable[[int, Any], Any], calls: int = 4) -> tuple[Any, list[str]]:
    """``step(model, opt, x, arg(i, model))``: a loss, an SGD update and ``w.sum()`` read after
    it, eagerly and compiled on copies; the same values, parameters and gradients."""
    def step(model: Any, opt: Any, x: Any, w: Any) -> Any:
        loss = (model(x) * w.sum()).tanh().mean()
        loss.backward()
        opt.step()
        return loss, w.sum()

    rt.manual_seed(0)
    model = nn.Linear(4, 4)
    for p in model.parameters():
        p.grad = rt.zeros_like(p)
    model2 = copy.deepcopy(model)
    opt, opt2 = (rt.optim.SGD(m.parameters(), lr=0.1) for m in (model, model2))
    compiled = planner.compile(step)
    x = rt.randn(5, 4)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        for i in range(calls):
            eager = step(model, opt, x, arg(i, model))
            replayed = compiled(model2, opt2, x, arg(i, model2))
            for a, b in zip(eager, replayed, strict=True):
                np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-5,
                                           atol=1e-6)
            for p, q in zip(model.parameters(), model2.parameters(), strict=True):
                np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-5,
                                           atol=1e-6)
                _same_grad(p, q)
    return compiled, _planner_said(said)


def test_argument_sharing_a_parameters_memory_later_captures_again() -> None:
    """``w`` is ``model.weight.detach()`` from the third call on: eager mode's ``w.sum()``
    after ``opt.step()`` reads the updated weight; the plan captured with a tensor of its own
    replayed the value w had before the update."""
    def arg(i: int, model: Any) -> Any:
        return rt.ones(4, 4) if i < 2 else model.weight.detach()

    compiled, said = _shared_pair(arg)
    assert not said and compiled.captures == 2


def test_argument_captured_sharing_a_parameters_array_then_not() -> None:
    """Captured where ``w`` holds the weight's very array (one value of the plan, written by
    the update through the argument), then called with a tensor of its own: the plan wrote the
    update into the argument and left the weight as it was."""
    def arg(i: int, model: Any) -> Any:
        return model.weight.detach() if i < 2 else rt.ones(4, 4)

    compiled, said = _shared_pair(arg)
    assert not said and compiled.captures == 2


def test_argument_viewing_a_parameter_written_runs_eagerly() -> None:
    """``w`` a row of the weight (another array over its memory): the update writes memory
    the argument's value shows, which the plan reads apart; the call runs eagerly, saying so."""
    def arg(i: int, model: Any) -> Any:
        return rt.ones(4) if i < 2 else model.weight.detach()[1]

    compiled, said = _shared_pair(arg)
    assert compiled.captures == 1
    assert said and all("argument 3 or tensor[4, 4], which share memory" in w for w in said)


Batch = collections.namedtuple("Batch", "x y weight")


def test_namedtuple_batch_made_at_every_call_captures_once() -> None:
    """A namedtuple of tensors made anew at every call (a loader's batch) was one argument
    keyed by its id: a capture per call up to the recompile limit, then eager mode. It is its
    fields, as PyTorch's pytree flattens it: one capture, a number field keyed by value."""
    def step(model: Any, opt: Any, batch: Any) -> Any:
        opt.zero_grad()
        loss = ((model(batch.x) - batch.y) ** 2).mean() * batch.weight
        loss.backward()
        opt.step()
        return loss

    rt.manual_seed(0)
    model = nn.Linear(4, 2)
    model2 = copy.deepcopy(model)
    opt, opt2 = (rt.optim.SGD(m.parameters(), lr=0.1) for m in (model, model2))
    compiled = planner.compile(step)
    r = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for i in range(6):
            x, y = (r.standard_normal(s).astype(np.float32) for s in ((5, 4), (5, 2)))
            weight = 1.0 if i < 4 else 0.5
            eager = step(model, opt, Batch(rt.tensor(x), rt.tensor(y), weight))
            replayed = compiled(model2, opt2, Batch(rt.tensor(x), rt.tensor(y), weight))
            np.testing.assert_allclose(replayed.item(), eager.item(), rtol=1e-5)
    for p, q in zip(model.parameters(), model2.parameters(), strict=True):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert compiled.captures == 2  # the weight's second value: a number input from then on


Out = collections.namedtuple("Out", "loss extra")


@pytest.mark.parametrize("backward", [True, False], ids=["training", "aot"])
def test_returned_namedtuples_keep_their_class(backward: bool) -> None:
    """A step returning a namedtuple (``Out(loss, ...)``, nested in a dict and a list too): the
    plan's return templates hold plain tuples, so a replay returned ``(loss, ...)`` where
    eager mode returns ``Out(loss=..., ...)`` (``out.loss`` raised AttributeError)."""
    w = rt.ones(3, requires_grad=True)
    w.grad = rt.zeros(3)

    def step(x: Any) -> Any:
        loss = (w * x).sum()
        if backward:
            loss.backward()
        return Out(loss, {"a": [x.sum(), Out(1, 2.5)]})

    compiled = planner.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            eager, replayed = step(rt.ones(3)), compiled(rt.ones(3))
            assert type(replayed) is Out and type(replayed.extra["a"][1]) is Out
            assert replayed.extra["a"][1] == eager.extra["a"][1]
            assert replayed.loss.item() == eager.loss.item()
            assert replayed.extra["a"][0].item() == eager.extra["a"][0].item()
    assert compiled.captures == 1


class _Scaler:
    def __init__(self) -> None:
        self.k = 1.0

    def scale(self, y: Any) -> Any:
        return y * self.k


class _Helped(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def helper(self, y: Any) -> Any:
        return y.tanh()

    def forward(self, x: Any) -> Any:
        return self.helper(self.fc(x))


def test_method_shadowed_by_an_attribute_of_the_object_captures_again() -> None:
    """``obj.scale(y)`` runs the class's method until the object is given its own ``scale``
    (or the class another): the call then runs that, which the plan (the method inlined) did
    not; a module's helper method likewise."""
    scaler = _Scaler()
    rt.manual_seed(0)
    model = _Helped()
    model2 = copy.deepcopy(model)
    opt, opt2 = (rt.optim.SGD(m.parameters(), lr=0.1) for m in (model, model2))

    def step(model: Any, opt: Any, x: Any, obj: Any) -> Any:
        opt.zero_grad()
        loss = obj.scale(model(x)).pow(2).mean()
        loss.backward()
        opt.step()
        return loss

    compiled = planner.compile(step)
    x = rt.randn(5, 4)
    original = _Scaler.scale
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for i in range(6):
                if i == 2:
                    scaler.scale = lambda y: y * 0.5
                if i == 3:
                    del scaler.scale
                    _Scaler.scale = lambda self, y: y * 3.0
                if i == 4:
                    for m in (model, model2):
                        m.helper = lambda y: y.sigmoid()
                eager, replayed = step(model, opt, x, scaler), compiled(model2, opt2, x, scaler)
                np.testing.assert_allclose(replayed.item(), eager.item(), rtol=1e-5)
    finally:
        _Scaler.scale = original
    for p, q in zip(model.parameters(), model2.parameters(), strict=True):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert compiled.captures == 4


def test_capture_that_raised_is_logged_as_such(caplog: pytest.LogCaptureFixture) -> None:
    """A step whose capture raises its own error (eager mode's) is captured again at the next
    call; the log gave the reason as 'unknown'."""
    def step(w: Any, x: Any) -> Any:
        loss = (x * w).sum()
        x.add_(1)
        loss.backward()
        return loss

    w = rt.ones(3, requires_grad=True)
    w.grad = rt.zeros(3)
    compiled = planner.compile(step)
    caplog.set_level("INFO", logger="planner")
    for _ in range(2):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            compiled(w, rt.ones(3))
    said = [r.getMessage() for r in caplog.records if "recompiling" in r.getMessage()]
    assert len(said) == 1 and said[0].endswith(
        "step: the last capture, for the same arguments, raised before a plan was made")


GRAD_SCALE = 1.0


class _ScaleGrad(rt.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        return x * 1.0

    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        return g * GRAD_SCALE


def test_global_read_by_a_custom_functions_backward_is_guarded() -> None:
    """A custom autograd Function's backward reading a global (``g * GRAD_SCALE``): the
    capture ran it and baked the value in, but the helpers walked for guards skipped classes,
    so a new value replayed the old one."""
    global GRAD_SCALE

    def step(model: Any, opt: Any, x: Any) -> Any:
        opt.zero_grad()
        loss = _ScaleGrad.apply(model(x)).tanh().mean()
        loss.backward()
        opt.step()
        return loss

    def change(i: int) -> None:
        global GRAD_SCALE
        if i == 2:
            GRAD_SCALE = 5.0

    try:
        compiled, said = _train_pair(step, change)
    finally:
        GRAD_SCALE = 1.0
    assert not said and compiled.captures == 2


def _halve_lr(opt: Any, args: Any, kwargs: Any) -> None:
    for group in opt.param_groups:
        group["lr"] *= 0.5


def test_optimizer_step_hook_registered_later_runs_eagerly_then_replays_again() -> None:
    """A step hook registered after the capture: the plan ran no hook (a capture with one
    falls back: a hook is Python), and nothing guarded it, so it replayed without the hook.
    It runs eagerly now, saying so; the hook removed, the first plan replays again (the key
    had been marked eager for good)."""
    calls: list[int] = []
    handles: list[Any] = []

    def change(i: int) -> None:
        if i == 2:
            handles.extend(opt.register_step_pre_hook(_halve_lr) for opt in opts)
        if i == 4:
            for h in handles:
                h.remove()
        calls.append(i)

    def step(model: Any, opt: Any, x: Any) -> Any:
        opt.zero_grad()
        loss = model(x).tanh().mean()
        loss.backward()
        opt.step()
        return loss

    rt.manual_seed(0)
    models = [nn.Linear(4, 2) for _ in range(2)]
    models[1].load_state_dict(models[0].state_dict())
    opts = [rt.optim.SGD(m.parameters(), lr=0.1) for m in models]
    compiled = planner.compile(step)
    flat_fn, eager_runs = compiled._flat_fn, []

    def counted(spec: Any) -> Any:
        eager_runs.append(len(calls))
        return flat_fn(spec)

    compiled._flat_fn = counted  # type: ignore[method-assign]
    x = rt.randn(5, 4)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        for i in range(7):
            change(i)
            eager, replayed = step(models[0], opts[0], x), compiled(models[1], opts[1], x)
            np.testing.assert_allclose(replayed.item(), eager.item(), rtol=1e-6)
            assert opts[1].param_groups[0]["lr"] == opts[0].param_groups[0]["lr"]
    np.testing.assert_allclose(models[1].weight.detach().numpy(),
                               models[0].weight.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert _planner_said(said) == [
        f"planner: {step.__qualname__} runs eagerly: SGD.step() has step hooks at "
        f"{__file__}:{step.__code__.co_firstlineno + 4}"]
    assert compiled.captures == 1
    assert set(eager_runs) == {1, 3, 4}  # the capture, then the two calls with the hook


def test_call_inside_saved_tensors_hooks_runs_eagerly() -> None:
    """Called inside ``saved_tensors_hooks`` whose pack scales each saved tensor: eager mode's
    gradients use the packed values; a replay ignored the hooks, silently. The call runs
    eagerly now (one warning), and replays again outside."""
    def scaled(t: Any) -> Any:
        return t * 2

    def step(model: Any, opt: Any, x: Any) -> Any:
        opt.zero_grad()
        loss = model(x).tanh().mean()
        loss.backward()
        opt.step()
        return loss

    rt.manual_seed(0)
    models = [nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2)) for _ in range(2)]
    models[1].load_state_dict(models[0].state_dict())
    opts = [rt.optim.SGD(m.parameters(), lr=0.1) for m in models]
    compiled = planner.compile(step)
    x = rt.randn(5, 4)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        for i in range(5):
            hooked = i in (2, 3)
            with (rt.autograd.graph.saved_tensors_hooks(scaled, lambda t: t) if hooked
                  else contextlib.nullcontext()):
                eager = step(models[0], opts[0], x)
                replayed = compiled(models[1], opts[1], x)
            np.testing.assert_allclose(replayed.item(), eager.item(), rtol=1e-6)
            for p, q in zip(models[0].parameters(), models[1].parameters(), strict=True):
                np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-5,
                                           atol=1e-6)
    said_here = _planner_said(said)
    assert len(said_here) == 1 and "saved_tensors_hooks" in said_here[0]
    assert compiled.captures == 1


class _Slotted:
    __slots__ = ("k",)

    def __init__(self) -> None:
        self.k = 2.0

    def scale(self, y: Any) -> Any:
        return y * self.k


def test_method_of_a_slotted_object_passes_the_generated_guards() -> None:
    """An object with __slots__ (no __dict__): the generated guards' test of its method read
    its __dict__ and failed at every call, sending each to the slower failed_guard."""
    obj = _Slotted()
    w = rt.ones(3, requires_grad=True)
    w.grad = rt.zeros(3)

    def step(x: Any) -> Any:
        loss = obj.scale(w * x).sum()
        loss.backward()
        return loss

    compiled = planner.compile(step)
    for _ in range(3):
        compiled(rt.ones(3))
    binding = next(iter(compiled._cache.values())).bindings[0]
    assert binding.quick is not None and binding.quick((rt.ones(3),))
    assert compiled.captures == 1


class _Tied(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 4, bias=False)
        self.b = nn.Linear(4, 4, bias=False)
        self.b.weight.data = self.a.weight.data.t()  # tied through memory, not one Parameter

    def forward(self, x: Any) -> Any:
        return self.b(self.a(x).tanh())


def test_parameters_sharing_memory_through_a_view_run_eagerly() -> None:
    """``b.weight.data = a.weight.data.t()``: two parameters over one memory. Eager mode's
    updates land one after the other, each seen through the other; the plan read them as two
    values and its write-back of the second undid the first. It runs eagerly, saying so."""
    def step(model: Any, opt: Any, x: Any) -> Any:
        opt.zero_grad()
        loss = model(x).tanh().mean()
        loss.backward()
        opt.step()
        return loss

    models = []
    for _ in range(2):
        rt.manual_seed(0)
        models.append(_Tied())
    opts = [rt.optim.SGD(m.parameters(), lr=0.1) for m in models]
    compiled = planner.compile(step)
    x = rt.randn(5, 4)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        for _ in range(3):
            eager, replayed = step(models[0], opts[0], x), compiled(models[1], opts[1], x)
            np.testing.assert_allclose(replayed.item(), eager.item(), rtol=1e-6)
    np.testing.assert_allclose(models[1].a.weight.detach().numpy(),
                               models[0].a.weight.detach().numpy(), rtol=1e-6)
    said_here = _planner_said(said)
    assert said_here and all("share memory, and the step writes one in place" in w
                             for w in said_here)


SETTINGS = collections.OrderedDict(scale=1.0)


def test_global_ordered_dict_entry_changed_captures_again() -> None:
    """``SETTINGS["scale"]`` of an OrderedDict: a path stepped into dicts by exact type only,
    so the value was baked in unguarded and a new one replayed the old."""
    def step(model: Any, opt: Any, x: Any) -> Any:
        return _scaled(model, opt, x, SETTINGS["scale"])

    def change(i: int) -> None:
        if i == 2:
            SETTINGS["scale"] = 3.0

    try:
        compiled, said = _train_pair(step, change)
    finally:
        SETTINGS["scale"] = 1.0
    assert not said and compiled.captures == 2


FROZEN = {"0.bias"}
WINDOW = collections.deque([1.0, 2.0], maxlen=4)


def test_global_set_and_deque_changed_capture_again() -> None:
    """A set the step tests membership in (which parameters it penalizes) and a deque it
    indexes: neither was followed by the guards, so the plan replayed what it baked in."""
    def step(model: Any, opt: Any, x: Any) -> Any:
        opt.zero_grad()
        loss = model(x).tanh().mean() * WINDOW[-1]
        for name, p in model.named_parameters():
            if name not in FROZEN:
                loss = loss + 0.01 * p.pow(2).sum()
        loss.backward()
        opt.step()
        return loss

    def change(i: int) -> None:
        if i == 2:
            FROZEN.add("2.weight")
        if i == 3:
            WINDOW.append(0.5)

    try:
        compiled, said = _train_pair(step, change)
    finally:
        FROZEN.discard("2.weight")
        WINDOW.pop()
    assert not said and compiled.captures == 3


WEIGHTS: collections.defaultdict[str, float] = collections.defaultdict(float, main=1.0, aux=0.5)


def test_global_defaultdict_entry_changed_captures_again_without_inserting() -> None:
    """``WEIGHTS["aux"]`` of a defaultdict: not followed by the guards (a stale plan); now
    followed, and a key deleted later reads as missing, not inserted by the guard's read."""
    def step(model: Any, opt: Any, x: Any) -> Any:
        return _scaled(model, opt, x, WEIGHTS["main"] + WEIGHTS["aux"])

    def change(i: int) -> None:
        if i == 2:
            WEIGHTS["aux"] = 2.0

    try:
        compiled, said = _train_pair(step, change)
        assert not said and compiled.captures == 2
        del WEIGHTS["aux"]
        binding = next(iter(compiled._cache.values())).bindings[0]
        assert binding.check((None,) * 3) is not None  # (the guards fail before the args)
        assert "aux" not in WEIGHTS
    finally:
        WEIGHTS["aux"] = 0.5
