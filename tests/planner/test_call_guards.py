"""Values the step reaches through the parameters of the user's functions it calls are
guarded as its own paths are (planner.guards: a call of the user's function, method or module
binds the callee's parameters to the caller's paths): a helper reading ``cfg["scale"]`` from a
dict handed to it, a forward reading ``self.cfg["p"]`` or a private attribute, a child of a
library container (nn.Sequential) doing so, a method of a plain object reading ``self.k``.
Changing such a value captures again, with the log naming its path; a counter a helper
increments through its parameter counts every call. A value the step uses whole, where the
bytecode walk cannot say which part it reads (``cfg.get("k")``, ``for w in ws``,
``cfg[key]``, ``getattr(c, "k")``, a property, ``"k" in cfg``), has its contents guarded:
length and items, or an object's attributes. Before, each of these replayed the captured
value silently."""

from __future__ import annotations

import contextlib
import logging
import sys
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt

nn = rt.nn

needs_calls = pytest.mark.skipif(
    not (3, 11) <= sys.version_info[:2] <= (3, 12),
    reason="calls are followed on the bytecode of Python 3.11 and 3.12 (planner.guards)")
pytestmark = needs_calls


def _run(step: Any, change: Any, calls: int = 4) -> tuple[list[float], list[float], Any]:
    """The step's results eager and compiled, ``change(i)`` made before call i (each run
    starts from ``change(0)``)."""
    x = rt.ones(3)
    results = []
    compiled = planner.compile(step)
    for fn in (step, compiled):
        out = []
        for i in range(calls):
            change(i)
            out.append(float(fn(x)))
        results.append(out)
    return results[0], results[1], compiled


def scaled(x: Any, cfg: dict[str, float]) -> Any:
    return (x * cfg["scale"]).sum()


def test_a_dict_a_helper_reads_through_its_parameter_is_guarded(
        caplog: pytest.LogCaptureFixture) -> None:
    state = {"scale": 1.0}

    def step(x: Any) -> Any:
        return scaled(x, state)

    def change(i: int) -> None:
        state["scale"] = float(i % 2 + 1)

    with caplog.at_level(logging.INFO, logger="planner"):
        want, got, compiled = _run(step, change)
    assert got == want == [3.0, 6.0, 3.0, 6.0]
    assert "the Python value state['scale'] is 2.0 (it was 1.0)" in caplog.text


def test_a_keyword_argument_and_a_nested_call_are_followed() -> None:
    state = {"inner": {"scale": 1.0}}

    def outer(x: Any, *, settings: dict[str, Any]) -> Any:
        return scaled(x, cfg=settings["inner"])

    def step(x: Any) -> Any:
        return outer(x, settings=state)

    def change(i: int) -> None:
        state["inner"]["scale"] = float(i + 1)

    want, got, compiled = _run(step, change)
    assert got == want == [3.0, 6.0, 9.0, 12.0]


def test_an_unchanged_value_behind_a_parameter_captures_once() -> None:
    state = {"scale": 2.0}

    def step(x: Any) -> Any:
        return scaled(x, state)

    want, got, compiled = _run(step, lambda i: None)
    assert got == want == [6.0] * 4
    assert compiled.captures == 1


def bump(counter: dict[str, int]) -> None:
    counter["n"] += 1


def test_a_counter_a_helper_increments_through_its_parameter_counts_every_call() -> None:
    counter = {"n": 0}

    def step(x: Any) -> Any:
        bump(counter)
        return x.sum()

    compiled = planner.compile(step)
    for _ in range(4):
        compiled(rt.ones(2))
    assert counter["n"] == 4
    assert compiled.captures == 1


class Scaled(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cfg = {"p": 1.0}
        self._k = 1.0
        self.mask = rt.ones(3)  # a plain tensor attribute, not a buffer

    def forward(self, x: Any) -> Any:
        return x * self.cfg["p"] * self._k * self.mask


@pytest.mark.parametrize("change", ["dict", "private", "tensor"])
@pytest.mark.parametrize("how", ["called", "in_sequential", "method"])
def test_a_forward_reading_its_modules_attributes_is_guarded(change: str, how: str) -> None:
    """``self.cfg["p"]``, ``self._k`` (not a public setting) and a plain tensor attribute,
    read by a module called by the step, by a child of nn.Sequential (whose forward is the
    library's) or by a method the forward calls."""
    rt.manual_seed(0)
    module = Scaled()
    if how == "in_sequential":
        net: Any = nn.Sequential(nn.Identity(), Scaled())
        module = net[1]
    elif how == "method":
        class Outer(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.inner = module

            def helper(self, x: Any) -> Any:
                return self.inner(x) * self.inner.cfg["p"]

            def forward(self, x: Any) -> Any:
                return self.helper(x)

        net = Outer()
    else:
        net = module

    def step(x: Any) -> Any:
        return net(x).sum()

    def apply(i: int) -> None:
        if change == "dict":
            module.cfg["p"] = float(i + 1)
        elif change == "private":
            module._k = float(i + 1)
        else:
            module.mask = rt.full((3,), float(i + 1))

    want, got, compiled = _run(step, apply)
    assert got == want
    assert len(set(want)) == 4


class Config:
    def __init__(self) -> None:
        self.k = 1.0

    def apply(self, x: Any) -> Any:
        return x * self.k


def test_a_method_of_a_plain_object_reads_its_self() -> None:
    cfg = Config()

    def step(x: Any) -> Any:
        return cfg.apply(x).sum()

    def change(i: int) -> None:
        cfg.k = float(i + 1)

    want, got, compiled = _run(step, change)
    assert got == want == [3.0, 6.0, 9.0, 12.0]


def countdown(x: Any, cfg: dict[str, Any], n: int) -> Any:
    return x * cfg["scale"] if n == 0 else countdown(x, cfg, n - 1)


def test_a_recursive_helper_is_walked_once() -> None:
    state = {"scale": 1.0}

    def step(x: Any) -> Any:
        return countdown(x, state, 3).sum()

    def change(i: int) -> None:
        state["scale"] = float(i + 1)

    want, got, compiled = _run(step, change)
    assert got == want == [3.0, 6.0, 9.0, 12.0]


def test_a_training_step_with_a_config_passed_down_matches_eager() -> None:
    """A step that hands a config dict to its loss helper: changing the label smoothing
    between calls captures again and matches eager mode's losses and weights."""
    def loss_of(model: Any, x: Any, y: Any, cfg: dict[str, float]) -> Any:
        return nn.functional.cross_entropy(model(x), y, label_smoothing=cfg["smoothing"])

    results = []
    for compile_it in (False, True):
        rt.manual_seed(0)
        model = nn.Linear(4, 3)
        opt = rt.optim.SGD(model.parameters(), lr=0.1)
        cfg = {"smoothing": 0.0}

        def step(x: Any, y: Any) -> Any:
            opt.zero_grad()
            loss = loss_of(model, x, y, cfg)
            loss.backward()
            opt.step()
            return loss

        fn = planner.compile(step) if compile_it else step
        rng = np.random.default_rng(0)
        losses = []
        for i in range(4):
            cfg["smoothing"] = 0.1 * i
            x = rt.tensor(rng.standard_normal((5, 4)).astype(np.float32))
            y = rt.tensor(rng.integers(0, 3, 5))
            losses.append(float(fn(x, y)))
        results.append((losses, model.weight.detach().numpy().copy()))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-5)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-5, atol=1e-6)


CFG: dict[str, Any] = {}
KEY = "scale"


class Holder:
    def __init__(self) -> None:
        self.scale = 1.0

    @property
    def doubled(self) -> float:
        return self.scale * 2


HOLDER = Holder()


def _reset() -> None:
    CFG.clear()
    CFG.update(scale=1.0, ws=[1.0, 2.0])
    HOLDER.scale = 1.0


WHOLE = {
    "dict_get": (lambda x: (x * CFG.get("scale", 1.0)).sum(),
                 lambda i: CFG.__setitem__("scale", float(i + 1))),
    "for_over_list": (lambda x: sum((x * w).sum() for w in CFG["ws"]),
                      lambda i: CFG["ws"].__setitem__(0, float(i + 1))),
    "appended_item": (lambda x: sum((x * w).sum() for w in CFG["ws"]),
                      lambda i: CFG["ws"].append(1.0) if i else None),
    "key_in_a_global": (lambda x: (x * CFG[KEY]).sum(),
                        lambda i: CFG.__setitem__("scale", float(i + 1))),
    "computed_index": (lambda x: (x * CFG["ws"][len(KEY) - 5]).sum(),
                       lambda i: CFG["ws"].__setitem__(0, float(i + 1))),
    "items_loop": (lambda x: sum((x * v).sum() for k, v in CFG.items() if k == "scale"),
                   lambda i: CFG.__setitem__("scale", float(i + 1))),
    "membership": (lambda x: (x * (2.0 if "extra" in CFG else 1.0)).sum(),
                   lambda i: CFG.__setitem__("extra", 1) if i % 2 else CFG.pop("extra", None)),
    "getattr": (lambda x: (x * getattr(HOLDER, "scale")).sum(),
                lambda i: setattr(HOLDER, "scale", float(i + 1))),
    "property": (lambda x: (x * HOLDER.doubled).sum(),
                 lambda i: setattr(HOLDER, "scale", float(i + 1))),
}


@pytest.mark.parametrize("case", list(WHOLE))
def test_a_value_used_whole_has_its_contents_guarded(case: str) -> None:
    fn, change = WHOLE[case]
    _reset()
    want = []
    for i in range(4):
        change(i)
        want.append(float(fn(rt.ones(3))))
    _reset()
    compiled = planner.compile(fn)
    got = []
    for i in range(4):
        change(i)
        got.append(float(compiled(rt.ones(3))))
    assert got == want
    assert len(set(want)) > 1


def test_a_key_the_step_does_not_read_does_not_recapture() -> None:
    """Guards stay precise where the walk sees the reads: changing a key the step never
    reads (its dict is read by constant keys only) replays."""
    cfg = {"a": 1.0, "b": 5.0}

    def step(x: Any) -> Any:
        return (x * cfg["a"]).sum()

    compiled = planner.compile(step)
    for i in range(3):
        cfg["b"] = float(i)
        assert float(compiled(rt.ones(3))) == 3.0
    assert compiled.captures == 1


def test_a_dict_the_step_fills_once_is_captured_after_its_first_call() -> None:
    """``cfg.setdefault`` adds a key at the first call only: that call runs eagerly, the
    next is captured and replays."""
    cfg: dict[str, float] = {}

    def step(x: Any) -> Any:
        return (x * cfg.setdefault("scale", 2.0)).sum()

    compiled = planner.compile(step)
    assert [float(compiled(rt.ones(3))) for _ in range(4)] == [6.0] * 4
    assert cfg == {"scale": 2.0} and compiled.captures == 1


def test_dict_get_guards_the_keys_it_reads_and_a_missing_keys_arrival() -> None:
    """``cfg.get("k", d)`` reads cfg["k"]: another key changing replays, the key read
    changing or a missing key read arriving captures again."""
    cfg: dict[str, Any] = {"a": 1.0, "step": 0}

    def step(x: Any) -> Any:
        return (x * cfg.get("a", 1.0) * cfg.get("b", 1.0)).sum()

    compiled = planner.compile(step)
    got = []
    for i in range(5):
        cfg["step"] = i
        if i == 2:
            cfg["b"] = 3.0
        if i == 4:
            cfg["a"] = 2.0
        got.append((float(compiled(rt.ones(3))), float(step(rt.ones(3)))))
    assert [g for g, _ in got] == [w for _, w in got] == [3.0, 3.0, 9.0, 9.0, 18.0]
    assert compiled.captures == 3


@pytest.mark.parametrize("kind", ["ModuleList", "Sequential", "list"])
def test_layers_the_step_iterates_are_guarded(kind: str, caplog: pytest.LogCaptureFixture
                                              ) -> None:
    """``for m in layers: x = m(x)`` over a ModuleList, an nn.Sequential it does not call,
    or a list of modules: a module appended or one replaced captures again (each layer was
    captured as it was, and replayed so, silently)."""
    rt.manual_seed(0)
    first = [nn.Linear(4, 4), nn.ReLU()]
    layers: Any = nn.ModuleList(first) if kind == "ModuleList" else \
        nn.Sequential(*first) if kind == "Sequential" else list(first)

    def step(x: Any) -> Any:
        for m in layers:
            x = m(x)
        return x.sum()

    compiled = planner.compile(step)
    x = rt.ones(2, 4)
    got, want = [], []
    with caplog.at_level(logging.INFO, logger="planner"):
        for change in (None, lambda: layers.append(nn.Tanh()),
                       lambda: layers.__setitem__(2, nn.Sigmoid())):
            if change is not None:
                change()
            got.append(float(compiled(x)))
            want.append(float(step(x)))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert len(set(want)) == 3 and compiled.captures == 3
    if kind == "list":
        assert "the Sigmoid layers[2] is another" not in caplog.text  # a Tanh was there
        assert "the Tanh layers[2] is another Tanh (by identity)" in caplog.text


def test_a_step_drawing_from_an_iterator_runs_eagerly_and_loses_no_batch() -> None:
    """``next(it)`` (in the step or a helper): a capture would draw a batch that no replay
    draws again (every call replayed the first batch, silently); the step runs eagerly from
    its first call, saying so, and every batch is used once."""
    from runtime.utils.data import DataLoader, TensorDataset

    data = TensorDataset(rt.arange(40.0).reshape(20, 2), rt.arange(20.0))
    w = rt.ones(2, requires_grad=True)
    losses = []
    for compile_it in (False, True):
        it = iter(DataLoader(data, batch_size=2))

        def batch() -> Any:
            return next(it)  # noqa: B023 - this run's iterator

        def step() -> Any:
            x, y = batch()
            return ((x @ w - y) ** 2).mean()

        fn = planner.compile(step) if compile_it else step
        with pytest.warns(RuntimeWarning, match=r"calls next\(\) on it") if compile_it \
                else contextlib.nullcontext():
            losses.append([float(fn()) for _ in range(10)])
        if compile_it:
            assert fn.captures == 0
    assert losses[0] == losses[1] and len(set(losses[0])) == 10
