"""Values a compiled step reaches through objects, dicts and lists (``cfg.w``, ``d["w"]``,
``ws[0]``, ``self.scale``, ``cfg.inner.w``): guarded as the paths its bytecode reads them by
(planner.guards.accesses), compiled calls equal to eager ones, each recompile naming the path.
"""

from __future__ import annotations

import io
import logging
import sys
import tokenize
import warnings
from collections import namedtuple
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt

compile_module = sys.modules["planner.compile"]


class Cfg:
    def __init__(self, **values: Any) -> None:
        self.__dict__.update(values)


def _messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "planner"
            and "recompiling" in r.getMessage()]


def _binding(step: Any) -> Any:
    (entry,) = step._cache.values()
    return entry.bindings[0]


def _value(out: Any) -> float:
    return float(out.item())


CFG = Cfg(w=rt.tensor([1.0, 2.0]), scale=1.0, inner=Cfg(w=rt.tensor([1.0, 1.0])))
D = {"w": rt.tensor([1.0, 2.0]), "lr": 0.5}
WS = [rt.tensor([1.0, 2.0])]


def by_attribute(x: Any) -> Any:
    return (x * CFG.w).sum()


def by_key(x: Any) -> Any:
    return (x * D["w"]).sum()


def by_index(x: Any) -> Any:
    return (x * WS[0]).sum()


def nested(x: Any) -> Any:
    return (x * CFG.inner.w).sum()


def scaled(x: Any) -> Any:
    return (x * CFG.scale).sum()


REBIND = {
    "by_attribute": (by_attribute, lambda: setattr(CFG, "w", rt.tensor([3.0, 4.0])), "CFG.w"),
    "by_key": (by_key, lambda: D.update(w=rt.tensor([3.0, 4.0])), "D['w']"),
    "by_index": (by_index, lambda: WS.__setitem__(0, rt.tensor([3.0, 4.0])), "WS[0]"),
    "nested": (nested, lambda: setattr(CFG.inner, "w", rt.tensor([5.0, 5.0])), "CFG.inner.w"),
    "inner_rebound": (nested, lambda: setattr(CFG, "inner", Cfg(w=rt.tensor([2.0, 0.0]))),
                      "CFG.inner.w"),
    "scalar": (scaled, lambda: setattr(CFG, "scale", 0.5), "CFG.scale is 0.5 (it was 1.0)"),
}


@pytest.fixture(autouse=True)
def _fresh_globals() -> Any:
    yield
    CFG.__dict__.update(w=rt.tensor([1.0, 2.0]), scale=1.0, inner=Cfg(w=rt.tensor([1.0, 1.0])))
    D.update(w=rt.tensor([1.0, 2.0]), lr=0.5)
    WS[:] = [rt.tensor([1.0, 2.0])]


@pytest.mark.parametrize("case", sorted(REBIND))
def test_a_value_rebound_behind_a_path_recaptures(case: str,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    """Rebinding ``CFG.w`` (or ``D["w"]``, ``WS[0]``, ``CFG.inner.w``, ``CFG.scale``) between
    calls was replayed with the captured tensor or constant; now the call captures again,
    equals eager, and the log names the path."""
    fn, rebind, named = REBIND[case]
    step = planner.compile(fn)
    x = rt.tensor([1.0, 1.0])
    assert _value(step(x)) == _value(step(x)) == _value(fn(x))
    assert step.captures == 1
    rebind()
    with caplog.at_level(logging.INFO, logger="planner"):
        assert _value(step(x)) == _value(fn(x))
    assert step.captures == 2
    assert any(named in m for m in _messages(caplog)), _messages(caplog)
    assert _value(step(x)) == _value(fn(x)) and step.captures == 2


def test_an_unchanged_path_replays_without_recapturing() -> None:
    step = planner.compile(nested)
    x = rt.tensor([1.0, 2.0])
    for _ in range(3):
        assert _value(step(x)) == 3.0
    CFG.inner.w.mul_(2.0)  # the same tensor, updated in place: read by the plan at replay
    CFG.unread = 7.0  # an attribute the step never reads
    assert _value(step(x)) == 6.0 and step.captures == 1


class Scaler:
    """A plain object whose bound method is the step."""

    def __init__(self) -> None:
        self.w = rt.tensor([1.0, 2.0])
        self.scale = 2.0
        self.calls = 0

    def step(self, x: Any) -> Any:
        self.calls += 1  # only ever incremented: added after each replay
        return (x * self.w * self.scale).sum()


def test_self_of_a_bound_method_is_followed() -> None:
    eager, obj = Scaler(), Scaler()
    step = planner.compile(obj.step)
    x = rt.tensor([1.0, 1.0])
    for change in (None, ("scale", 3.0), ("w", rt.tensor([0.0, 1.0])), None):
        if change is not None:
            setattr(obj, *change)
            setattr(eager, *change)
        assert _value(step(x)) == _value(eager.step(x))
    assert step.captures == 3
    assert obj.calls == eager.calls == 4


def test_a_counter_the_step_increments_is_not_guarded() -> None:
    """``self.n += 1``: eager mode counts every call. A guard on ``n`` would recapture at
    every call (the capture moved it); the plan instead adds the constant after each replay,
    and guards only its type."""
    state = Cfg(n=0, total=0.0)
    counts = {"steps": 0}
    w = rt.tensor([1.0, 2.0], requires_grad=True)

    def fn(x: Any) -> Any:
        state.n += 1
        counts["steps"] += 2
        state.total = state.total - 0.5  # a sum and a store of it: the same idiom
        loss = (x * w).sum()
        loss.backward()
        return loss

    step = planner.compile(fn)
    for _ in range(5):
        step(rt.tensor([1.0, 1.0]))
    assert (state.n, counts["steps"], state.total) == (5, 10, -2.5)
    assert step.captures == 1
    guarded = {str(g.path): g.exact for g in _binding(step).python_values if g.path.name != "w"}
    assert guarded == {"state.n": False, "state.total": False, "counts['steps']": False}


COUNTER = 0


def test_a_global_and_a_closure_counter_count_every_call() -> None:
    global COUNTER
    calls = 0

    def fn(x: Any) -> Any:
        global COUNTER
        nonlocal calls
        COUNTER += 1
        calls += 1
        return (x * 2.0).sum()

    step = planner.compile(fn)
    try:
        for _ in range(4):
            step(rt.ones(2))
        assert (COUNTER, calls, step.captures) == (4, 4, 1)
    finally:
        COUNTER = 0


def test_a_counter_also_read_otherwise_runs_eagerly() -> None:
    """A number the step both uses (baked into the plan) and changes: no plan fits the next
    call, so the step runs eagerly (one warning), never recapturing at every call."""
    state = Cfg(n=1)

    def fn(x: Any) -> Any:
        y = (x * state.n).sum()
        state.n += 1
        return y

    step = planner.compile(fn)
    with pytest.warns(RuntimeWarning, match=r"changes state\.n"):
        got = [_value(step(rt.ones(2))) for _ in range(4)]
    assert got == [2.0, 4.0, 6.0, 8.0] and state.n == 5
    assert step.captures <= 1


def test_a_tensor_stored_on_an_object_is_stored_by_each_replay() -> None:
    """``holder.last = loss`` stored the capture's shape-only tensor there and never again
    (then ran eagerly); the plan returns it and each replay stores it there: the returned
    loss itself, as eager mode's (tests/planner/test_module_attribute_writes_h34.py)."""
    holder = Cfg(last=None)

    def fn(x: Any) -> Any:
        loss = (x * 3.0).sum()
        holder.last = loss
        return loss

    step = planner.compile(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for k in range(3):
            out = step(rt.full((2,), float(k)))
            assert holder.last is out
    assert _value(holder.last) == 12.0 and step.captures == 1


def test_a_value_set_once_is_in_place_before_the_capture() -> None:
    """``flags.ready = True`` changes the state at the first call only: that call runs
    eagerly, the next is captured with the value in place, and replays follow."""
    flags = Cfg(ready=False)

    def fn(x: Any) -> Any:
        flags.ready = True
        return (x * 2.0).sum()

    step = planner.compile(fn)
    for _ in range(3):
        assert _value(step(rt.ones(2))) == 4.0
    assert flags.ready is True
    assert step.captures == 1 and step.warmups == 1


def test_the_capture_before_a_graph_break_does_not_count_twice() -> None:
    """A step that falls back after changing state: the capture's change is put back before
    the call runs eagerly, which makes it once."""
    state = Cfg(n=0, seen=None)

    def fn(x: Any) -> Any:
        state.n += 1
        state.seen = "yes"
        y = (x * 2.0).sum()
        if y.item() > 0:  # a tensor's value steers Python: eager
            return y
        return -y

    step = planner.compile(fn)
    with pytest.warns(RuntimeWarning, match="runs eagerly"):
        step(rt.ones(2))
    assert (state.n, state.seen) == (1, "yes")
    step(rt.ones(2))
    assert state.n == 2


def test_an_argument_object_is_followed(caplog: pytest.LogCaptureFixture) -> None:
    def fn(x: Any, cfg: Any) -> Any:
        return (x * cfg.scale).sum()

    step = planner.compile(fn)
    cfg = Cfg(scale=1.0)
    x = rt.ones(2)
    assert _value(step(x, cfg)) == 2.0
    cfg.scale = 4.0
    with caplog.at_level(logging.INFO, logger="planner"):
        assert _value(step(x, cfg)) == 8.0
    assert step.captures == 2
    assert any("cfg.scale is 4.0 (it was 1.0)" in m for m in _messages(caplog))


HP = {"lr": 0.5}


def test_a_learning_rate_read_from_a_dict_is_guarded() -> None:
    def fn(w: Any) -> Any:
        lr = HP["lr"]
        loss = (w * w).sum()
        (g,) = rt.autograd.grad(loss, [w])
        with rt.no_grad():
            w.sub_(g * lr)
        return loss

    w_eager = rt.tensor([1.0, 2.0], requires_grad=True)
    w_step = rt.tensor([1.0, 2.0], requires_grad=True)
    step = planner.compile(fn)
    try:
        for lr in (0.5, 0.5, 0.25, 0.1):
            HP["lr"] = lr
            fn(w_eager)
            step(w_step)
        np.testing.assert_allclose(w_step.detach().numpy(), w_eager.detach().numpy())
        assert step.captures == 3
    finally:
        HP["lr"] = 0.5


def test_an_optimizer_learning_rate_read_by_the_step_is_not_guarded() -> None:
    """param_groups' numbers are read by the plan at each replay (Tracer.hyper): a step
    that also reads them itself must not recapture when a schedule changes them."""
    w = rt.nn.Parameter(rt.tensor([1.0, 2.0]))
    opt = rt.optim.SGD([w], lr=0.1)

    def fn(x: Any) -> Any:
        opt.zero_grad()
        loss = (x * w).pow(2).sum()
        loss.backward()
        if opt.param_groups[0]["lr"] > 0:
            opt.step()
        return loss

    step = planner.compile(fn)
    for lr in (0.1, 0.1, 0.05, 0.01):
        opt.param_groups[0]["lr"] = lr
        step(rt.ones(2))
    assert step.captures == 1


class Loud:
    """Reading ``w`` runs code: a property that counts, an item lookup that counts, and a
    ``__getattr__``: none is followed by the guards (the plan keeps what it captured)."""

    reads = 0

    def __init__(self) -> None:
        self._w = rt.tensor([1.0, 2.0])

    @property
    def w(self) -> Any:
        type(self).reads += 1
        return self._w

    def __getitem__(self, key: str) -> Any:
        type(self).reads += 1
        return self._w

    def __getattr__(self, name: str) -> Any:
        type(self).reads += 1
        return self._w


LOUD = Loud()


@pytest.mark.parametrize("read", [lambda: LOUD.w, lambda: LOUD["w"], lambda: LOUD.magic],
                         ids=["property", "getitem", "getattr"])
def test_a_path_that_runs_code_is_not_followed(read: Any) -> None:
    step = planner.compile(lambda x: (x * read()).sum())
    Loud.reads = 0
    for _ in range(3):
        assert _value(step(rt.ones(2))) == 3.0
    assert Loud.reads == 1  # the capture's own read, eagerly as the step made it
    assert step.captures == 1


@dataclass
class Slotted:
    __slots__ = ("scale",)
    scale: float


Pair = namedtuple("Pair", "scale bias")  # noqa: PYI024
SLOTTED = Slotted(1.0)
PAIR = Pair(1.0, 0.0)


def test_slots_and_namedtuple_fields_are_followed() -> None:
    global PAIR
    step = planner.compile(lambda x: (x * SLOTTED.scale + PAIR.bias).sum())
    x = rt.ones(2)
    assert _value(step(x)) == 2.0
    SLOTTED.scale = 2.0
    assert _value(step(x)) == 4.0
    PAIR = Pair(1.0, 1.0)
    try:
        assert _value(step(x)) == 6.0
        assert step.captures == 3
    finally:
        SLOTTED.scale, PAIR = 1.0, Pair(1.0, 0.0)


def test_another_kind_of_object_on_the_path_is_named() -> None:
    step = planner.compile(nested)
    x = rt.ones(2)
    step(x)
    binding = _binding(step)
    CFG.inner = {"w": rt.ones(2)}
    assert binding.check((x,)) == "the Python value CFG.inner is a dict (it was a Cfg)"
    del CFG.inner
    assert binding.check((x,)) == "the Python value CFG.inner.w is missing (it was a tensor)"


def test_generated_guards_follow_paths_and_hold_no_literal_of_the_step() -> None:
    step = planner.compile(lambda x: (x * CFG.inner.w * D["w"] * WS[0] * CFG.scale).sum())
    x = rt.ones(2)
    step(x)
    binding = _binding(step)
    assert binding.check((x,)) is None and binding.quick((x,))
    assert sorted(str(g.path) for g in binding.python_values) == [
        "CFG.inner.w", "CFG.scale", "D['w']", "WS[0]"]
    tokens = list(tokenize.generate_tokens(io.StringIO(binding.quick.source).readline))
    assert not [t for t in tokens if t.type == tokenize.STRING]
    assert all(t.string.isdigit() for t in tokens if t.type == tokenize.NUMBER)
    for change in (lambda: setattr(CFG, "scale", 2.0), lambda: D.update(w=rt.ones(2)),
                   lambda: WS.append(1), lambda: setattr(CFG.inner, "w", rt.ones(2))):
        change()
        quick, why = binding.quick((x,)), binding.failed_guard((x,))
        assert quick == (why is None), (quick, why)


def test_a_step_without_paths_pays_only_the_identity_of_what_it_holds() -> None:
    """Names the step calls methods on (the model, the optimizer) are guarded by identity
    only (a name rebound to another model or optimizer captures again: the plan holds the
    old one's parameters and state), a line each in the generated guards."""
    model = rt.nn.Linear(2, 1)
    opt = rt.optim.SGD(model.parameters(), lr=0.1)

    def fn(x: Any) -> Any:
        opt.zero_grad()
        loss = model(x).sum()
        loss.backward()
        opt.step()
        return loss

    step = planner.compile(fn)
    for _ in range(3):
        step(rt.ones(3, 2))
    binding = _binding(step)
    assert sorted(str(g.path) for g in binding.python_values) == ["model", "opt"]
    assert all(g.identity and not g.path.steps for g in binding.python_values)


def test_a_nan_setting_replays() -> None:
    """The same nan object is the same value (as in a tuple comparison): no recapture at
    every call."""
    cfg = Cfg(eps=float("nan"))
    step = planner.compile(lambda x: (x + cfg.eps).sum())
    for _ in range(3):
        assert np.isnan(_value(step(rt.ones(2))))
    assert step.captures == 1


def test_a_counter_given_another_type_fails_as_eager() -> None:
    """The counter's type is guarded (a replay adds to it): rebound to a str, the call
    captures again, and the step's own ``+=`` raises eager mode's error."""
    state = Cfg(n=0)

    def fn(x: Any) -> Any:
        state.n += 1
        return (x * 2.0).sum()

    step = planner.compile(fn)
    step(rt.ones(2))
    step(rt.ones(2))
    state.n = "two"
    with pytest.raises(TypeError, match="can only concatenate str"):
        step(rt.ones(2))
    assert state.n == "two"


class Settings:
    scale = 2.0  # a class attribute, read through the class


def test_class_attributes_and_module_attributes_are_followed() -> None:
    import types

    mod = types.ModuleType("config")
    mod.SHIFT = 1.0
    step = planner.compile(lambda x: (x * Settings.scale + mod.SHIFT).sum())
    x = rt.ones(2)
    assert _value(step(x)) == 6.0
    Settings.scale = 3.0
    try:
        assert _value(step(x)) == 8.0
        mod.SHIFT = 0.0
        assert _value(step(x)) == 6.0
        assert step.captures == 3
    finally:
        Settings.scale = 2.0


def test_a_parameter_read_through_a_module_is_guarded_by_identity() -> None:
    """``model.fc.weight`` read directly (the module's forward never runs, so its own
    parameter guards do not cover it), then replaced."""
    model = rt.nn.Sequential()
    model.fc = rt.nn.Linear(2, 1)
    step = planner.compile(lambda x: (x @ model.fc.weight.T).sum().detach())
    x = rt.ones(1, 2)
    before = _value(step(x))
    model.fc.weight = rt.nn.Parameter(model.fc.weight.detach() * 2.0)
    assert _value(step(x)) == pytest.approx(2.0 * before)
    assert step.captures == 2


class Counting(rt.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = rt.nn.Linear(2, 1)
        self.steps = 1

    def forward(self, x: Any) -> Any:
        return self.fc(x)

    def train_step(self, x: Any) -> Any:
        self.steps += 1
        loss = self(x).sum()
        loss.backward()
        return loss.detach()


class ScaledCounting(Counting):
    def forward(self, x: Any) -> Any:
        return self.fc(x) * self.steps


def test_a_module_counter_counts_every_call() -> None:
    """A module attribute the step increments is one of the module's settings: guarded by
    value, it recaptured at every call; only the step names it, so the replay adds to it."""
    rt.manual_seed(0)
    model, eager = Counting(), Counting()
    eager.load_state_dict(model.state_dict())
    step = planner.compile(model.train_step)
    for _ in range(5):
        got, want = step(rt.ones(3, 2)), eager.train_step(rt.ones(3, 2))
        assert _value(got) == pytest.approx(_value(want))
    assert model.steps == eager.steps == 6
    assert step.captures == 1


def test_a_module_counter_its_forward_reads_runs_eagerly() -> None:
    """The forward (a helper the step calls) reads the counter as a constant: no plan fits
    the next call, so the step runs eagerly and equals eager mode."""
    rt.manual_seed(0)
    model, eager = ScaledCounting(), ScaledCounting()
    eager.load_state_dict(model.state_dict())
    step = planner.compile(model.train_step)
    with pytest.warns(RuntimeWarning, match=r"changes self\.steps"):
        for _ in range(4):
            got, want = step(rt.ones(3, 2)), eager.train_step(rt.ones(3, 2))
            assert _value(got) == pytest.approx(_value(want))
    assert model.steps == eager.steps == 5
    np.testing.assert_allclose(model.fc.weight.grad.numpy(), eager.fc.weight.grad.numpy())


def test_lowering_and_explaining_leave_the_values_the_step_changes() -> None:
    """``lower`` and ``planner.explain`` capture without running the step: the values its
    code changes are put back after the capture."""
    state = Cfg(n=0, last=None)

    def fn(x: Any) -> Any:
        state.n += 1
        state.last = "seen"
        return (x * 2.0).sum()

    step = planner.compile(fn)
    step.lower(rt.ones(2))
    assert "compiles on its first call" in planner.explain(step, rt.ones(2))
    assert (state.n, state.last) == (0, None)


def test_a_tensor_appended_to_a_list_runs_eagerly() -> None:
    """``losses.append(loss)`` kept the capture's shape-only tensor in the list (once, and
    never a real one); a capture that puts one in a list or dict the step reads runs eagerly,
    the list as it was before it."""
    losses: list[Any] = []
    by_name: dict[str, Any] = {}

    def fn(x: Any) -> Any:
        loss = (x * 2.0).sum()
        losses.append(loss)
        by_name.update(last=loss)
        return loss

    step = planner.compile(fn)
    with pytest.warns(RuntimeWarning, match="runs eagerly"):
        for k in range(3):
            step(rt.full((2,), float(k)))
    assert [_value(v) for v in losses] == [0.0, 4.0, 8.0]
    assert _value(by_name["last"]) == 8.0


def test_python_values_appended_to_a_list_are_appended_at_every_call() -> None:
    """Appending Python constants (not tensors of the capture) happens at every call, as in
    eager mode: each replay appends them (it used to be once, at capture, a documented
    limit); the step keeps replaying."""
    seen: list[Any] = []

    def fn(x: Any) -> Any:
        seen.append(1)
        return (x * 2.0).sum()

    step = planner.compile(fn)
    for _ in range(3):
        step(rt.ones(2))
    assert seen == [1, 1, 1] and step.captures == 1


def test_explaining_a_plain_function_leaves_the_values_it_changes() -> None:
    state = Cfg(n=0)

    def fn(x: Any, cfg: Any) -> Any:
        state.n += 1
        cfg.seen = True
        return (x * 2.0).sum()

    cfg = Cfg(seen=False)
    assert "captures" in planner.explain(fn, rt.ones(2), cfg)
    assert (state.n, cfg.seen) == (0, False)
