"""The generated guards (planner.guards) agree with ``Binding.failed_guard``: they pass
exactly where it finds nothing, over the changes a guard watches (optimizer settings and
state, parameters, modules, requires_grad, .grad presence, Python values), and their source
holds names and int/bool literals only."""

from __future__ import annotations

import io
import tokenize
from collections.abc import Callable
from typing import Any

import pytest

import planner
import runtime as rt

SCALE = 2.0  # a global the step reads: guarded by value


def _setup(opt_name: str) -> tuple[Any, Any, Any, Any]:
    rt.manual_seed(0)
    model = rt.nn.Sequential(rt.nn.Linear(4, 3), rt.nn.Dropout(0.0), rt.nn.Linear(3, 2))
    opt = (rt.optim.Adam(model.parameters(), lr=1e-2, betas=(0.9, 0.99))
           if opt_name == "adam" else rt.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
    x = rt.randn(5, 4)

    @planner.compile
    def step(x: rt.Tensor) -> rt.Tensor:
        opt.zero_grad()
        loss = (model(x) * SCALE).pow(2).mean()
        loss.backward()
        opt.step()
        return loss

    for _ in range(3):  # the warm-up call, the capture, a replay
        step(x)
    return step, model, opt, x


def _binding(step: Any) -> Any:
    (entry,) = step._cache.values()
    return entry.bindings[0]


def _agree(step: Any, x: Any) -> bool:
    binding = _binding(step)
    binding.check((x,))  # builds the generated guards once
    quick = binding.quick((x,))
    slow = binding.failed_guard((x,)) is None
    assert quick == slow or (slow and not quick), (quick, slow)
    return quick


CHANGES: dict[str, Callable[[Any, Any, Any], None]] = {
    "nothing": lambda m, o, x: None,
    "lr": lambda m, o, x: o.param_groups[0].update(lr=o.param_groups[0]["lr"] * 0.5),
    "lr_zero": lambda m, o, x: o.param_groups[0].update(lr=0.0),
    "lr_int": lambda m, o, x: o.param_groups[0].update(lr=1),
    "weight_decay": lambda m, o, x: o.param_groups[0].update(weight_decay=0.1),
    "new_setting": lambda m, o, x: o.param_groups[0].update(extra=True),
    "param_group": lambda m, o, x: o.add_param_group({"params": [rt.nn.Parameter(rt.ones(2))]}),
    "state_dropped": lambda m, o, x: o.state.clear(),
    "requires_grad": lambda m, o, x: m[0].weight.requires_grad_(False),
    "eval": lambda m, o, x: m.eval(),
    "param_replaced": lambda m, o, x: setattr(m[2], "bias", rt.nn.Parameter(rt.zeros(2))),
    "global": lambda m, o, x: globals().update(SCALE=3.0),
}


@pytest.mark.parametrize("opt_name", ["sgd", "adam"])
@pytest.mark.parametrize("change", sorted(CHANGES))
def test_generated_guards_agree_with_failed_guard(opt_name: str, change: str) -> None:
    step, model, opt, x = _setup(opt_name)
    try:
        assert _agree(step, x)
        CHANGES[change](model, opt, x)
        passes = _agree(step, x)
        assert passes == (change in ("nothing", "lr", "lr_zero")), change  # no branch on lr 0
    finally:
        globals()["SCALE"] = 2.0


def test_state_entry_replaced_fails() -> None:
    step, model, opt, x = _setup("adam")
    p = next(iter(opt.state))
    opt.state[p]["exp_avg"] = opt.state[p]["exp_avg"].clone()
    assert not _agree(step, x)


def test_source_holds_names_and_int_literals_only() -> None:
    step, model, opt, x = _setup("adam")
    binding = _binding(step)
    binding.check((x,))
    tokens = list(tokenize.generate_tokens(io.StringIO(binding.quick.source).readline))
    strings = {t.string for t in tokens if t.type == tokenize.STRING}
    numbers = [t.string for t in tokens if t.type == tokenize.NUMBER]
    assert strings == {"'params'"}  # the one key the module writes itself
    assert numbers and all(n.isdigit() for n in numbers)
    assert {t.string for t in tokens if t.type == tokenize.NAME} >= {"passes", "args"}


def test_a_list_the_step_iterates_passes_its_generated_guards() -> None:
    """A list of functions the step loops over is guarded by its length and each item's
    identity: the generated guards take the length step as ``len`` (they subscripted the
    list with "len", raised and left every call to failed_guard's slower walk)."""
    ops: list[Callable[[Any], Any]] = [rt.sin, rt.tanh, lambda t: t * 2]

    def step(x: Any) -> Any:
        x.grad = None
        h = x
        for op in ops:
            h = op(h)
        h.sum().backward()
        return x.grad

    compiled = planner.compile(step, backend="llvm")
    x = rt.randn(8, requires_grad=True)
    for _ in range(2):
        compiled(x)
    (entry,) = compiled._cache.values()
    (binding,) = entry.bindings
    assert any(g.path.steps[-1] == (None, "len") for g in binding.python_values)
    assert binding.quick((x,)) is True and binding.failed_guard((x,)) is None
    ops.append(rt.cos)
    assert binding.quick((x,)) is False and "len(ops)" in binding.failed_guard((x,))
    ops.pop()
    ops[2] = rt.exp
    assert binding.quick((x,)) is False and binding.failed_guard((x,)) is not None



@pytest.mark.parametrize("kind", ["functions", "tensors"])
def test_a_guarded_list_fails_on_an_item_replaced(kind: str) -> None:
    """The items of a guarded list are compared by identity: a list of functions (whose class
    keeps object's __eq__) as one list comparison, tensors (whose __eq__ compares values) by
    their ids, so that a tensor replaced by an equal one fails as well."""
    items: list[Any] = ([rt.sin, rt.tanh, rt.cos] if kind == "functions"
                        else [rt.full((8,), v) for v in (2.0, 3.0, 0.5)])

    def step(x: Any) -> Any:
        x.grad = None
        h = x
        for item in items:
            h = item(h) if kind == "functions" else h * item
        h.sum().backward()
        return x.grad

    compiled = planner.compile(step, backend="llvm")
    x = rt.randn(8, requires_grad=True)
    for _ in range(2):
        compiled(x)
    (entry,) = compiled._cache.values()
    (binding,) = entry.bindings
    assert binding.quick((x,)) is True
    assert ("_map(_id" in binding.quick.source) is (kind == "tensors")
    first = items[1]
    items[1] = first.clone() if kind == "tensors" else rt.exp
    assert binding.quick((x,)) is False and binding.failed_guard((x,)) is not None
    items[1] = first
    assert binding.quick((x,)) is True
    items[1] = [first]  # an item of another type, whose __eq__ the comparison may call
    assert binding.quick((x,)) is False
