"""Every check eager mode makes also holds in a compiled step: same exception, same message;
and what eager computes on empty tensors, a compiled step computes too.

Each case is a training step (forward, backward, SGD with momentum) and a bad input. Eager
raises PyTorch's error; the compiled step, on the interpreter and on fused kernels, raises the
very same one, whether the bad input comes on the first call (capture) or after a good one
(replay of a plan captured from good data), and leaves the parameters, their grads and the
optimizer's state as they were: a plan writes state back only when every step succeeded.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np
import pytest

import planner
import runtime as rt
from planner.graph import add_value
from planner.passes import run_default_passes
from runtime.ops import REGISTRY
from runtime.ops import functional as F
from runtime.ops.composite import cross_entropy
from runtime.tensor import Tensor
from tests.runtime.test_empty_tensors import EMPTY_SHAPES, compare_with_torch, empty_values

ROWS, FEATURES, CLASSES = 5, 4, 3
BACKENDS = ("interpreter", "auto")


def _ints(*values: int) -> Tensor:
    return rt.tensor(np.array(values, dtype=np.int64))


def _x(rows: int = ROWS) -> Tensor:
    return rt.tensor(np.linspace(-1.0, 1.0, rows * FEATURES, dtype=np.float32)
                     .reshape(rows, FEATURES))


def _set_rows(y: Tensor, t: Tensor) -> Tensor:
    mask = rt.zeros(ROWS)
    mask[t] = 1.0  # setitem with an index tensor
    return (y.sum(1) * mask).sum()


@dataclass(frozen=True)
class Case:
    """A loss of the model's output y (ROWS x CLASSES) and an extra argument t."""

    name: str
    loss: Callable[[Tensor, Any], Tensor]
    good: tuple[Tensor, Any]  # (x, t)
    bad: tuple[Tensor, Any]
    error: type[Exception]
    message: str
    check: str  # what holds it: a check primitive, or "shape" (a function of shapes)


CASES = [
    Case("cross_entropy target -1", cross_entropy, (_x(), _ints(0, 1, 2, 1, 0)),
         (_x(), _ints(0, 1, -1, 1, 0)), IndexError, "Target -1 is out of bounds.",
         "check_bounds"),
    Case("cross_entropy target = classes", cross_entropy,
         (_x(), _ints(0, 1, 2, 1, 0)), (_x(), _ints(0, 3, 2, 9, 0)), IndexError,
         "Target 3 is out of bounds.", "check_bounds"),
    Case("getitem rows", lambda y, t: y[t].sum(), (_x(), _ints(0, 4, -5)),
         (_x(), _ints(0, 5)), IndexError,
         "index 5 is out of bounds for dimension 0 with size 5", "check_bounds"),
    Case("getitem columns, negative", lambda y, t: y[:, t].sum(), (_x(), _ints(-3, 2)),
         (_x(), _ints(1, -4)), IndexError,
         "index -4 is out of bounds for dimension 0 with size 3", "check_bounds"),
    Case("getitem second index tensor", lambda y, t: y[t, t].sum(), (_x(), _ints(0, 2)),
         (_x(), _ints(0, 4)), IndexError,
         "index 4 is out of bounds for dimension 1 with size 3", "check_bounds"),
    Case("getitem integer", lambda y, t: y[:, t].sum(), (_x(), -3), (_x(), 3), IndexError,
         "index 3 is out of bounds for dimension 1 with size 3", "shape"),
    Case("setitem rows", _set_rows, (_x(), _ints(1, 3)), (_x(), _ints(1, 7)), IndexError,
         "index 7 is out of bounds for dimension 0 with size 5", "check_bounds"),
    Case("amax over an empty dim", lambda y, t: y.amax(0).sum(), (_x(), _ints(0)),
         (_x(0), _ints(0)), IndexError,
         "amax(): Expected reduction dim 0 to have non-zero size.", "shape"),
    Case("max of an empty tensor", lambda y, t: rt.max(y), (_x(), _ints(0)),
         (_x(0), _ints(0)), RuntimeError,
         "max(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
         "reduction dim with the 'dim' argument.", "shape"),
    Case("argmax over an empty dim", lambda y, t: y[F.argmax(y, 0)].sum(), (_x(), _ints(0)),
         (_x(0), _ints(0)), IndexError,
         "argmax(): Expected reduction dim 0 to have non-zero size.", "shape"),
    Case("where on a non-bool condition", lambda y, t: rt.where(t, y, 0.0).sum(),
         (_x(), rt.tensor(np.eye(ROWS, CLASSES, dtype=bool))),
         (_x(), rt.tensor(np.eye(ROWS, CLASSES, dtype=np.int64))), RuntimeError,
         "where expected condition to be a boolean tensor, but got a tensor with dtype Long",
         "shape"),
]


def _trainer(case: Case) -> tuple[Callable[..., Any], list[Any]]:
    """A fresh model, optimizer and training step (same weights every time)."""
    rt.manual_seed(0)
    model = rt.nn.Linear(FEATURES, CLASSES)
    opt = rt.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def step(x: Tensor, t: Any) -> Tensor:
        loss = case.loss(model(x), t)
        loss.backward()
        opt.step()  # grads accumulate from step to step: a failed one must add nothing
        return loss

    return step, [model, opt]


def _state(model: Any, opt: Any) -> list[np.ndarray]:
    arrays = []
    for p in model.parameters():
        arrays.append(p.detach().numpy().copy())
        arrays.append(None if p.grad is None else p.grad.numpy().copy())
        arrays.extend(v.numpy().copy() for v in opt.state.get(p, {}).values())
    return arrays


def _raises(case: Case, fn: Callable[..., Any], args: tuple[Tensor, Any]) -> None:
    with pytest.raises(case.error) as info:
        fn(*args)
    assert str(info.value) == case.message


def _assert_same_state(before: list[Any], after: list[Any]) -> None:
    assert len(before) == len(after)
    for b, a in zip(before, after):
        if b is None:
            assert a is None
        else:
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_eager_raises_pytorchs_error_and_leaves_state(case: Case) -> None:
    step, (model, opt) = _trainer(case)
    step(*case.good)
    before = _state(model, opt)
    _raises(case, step, case.bad)
    _assert_same_state(before, _state(model, opt))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_compiled_raises_what_eager_raises(case: Case, backend: str) -> None:
    step, (model, opt) = _trainer(case)
    compiled = planner.compile(step, backend=backend)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # each case compiles: a fallback to eager would warn
        compiled(*case.good)
        compiled(*case.good)  # planned for the good inputs' shapes and dtypes, replayed
        before = _state(model, opt)
        _raises(case, compiled, case.bad)
    _assert_same_state(before, _state(model, opt))
    compiled(*case.good)  # the plan still runs, and updates state
    assert not np.array_equal(before[0], model.weight.detach().numpy())


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_compiled_raises_on_its_first_call(case: Case, backend: str) -> None:
    step, (model, opt) = _trainer(case)
    before = _state(model, opt)
    _raises(case, planner.compile(step, backend=backend), case.bad)
    _assert_same_state(before, _state(model, opt))


def test_every_check_primitive_has_a_case() -> None:
    checks = {p.name for p in REGISTRY.values() if p.check}
    assert checks == {c.check for c in CASES} - {"shape"}


def test_check_steps_stay_in_the_fused_plan() -> None:
    case = CASES[0]
    step, _ = _trainer(case)
    plan = planner.compile(step).lower(*case.good)
    assert plan.kernels  # fused: the check is a step of its own, never inside a kernel
    assert [s.op for s in plan.steps].count("check_bounds") == 1


def test_mask_shape_is_checked_before_the_step_falls_back() -> None:
    # a bool mask reads the data (nonzero), so the step runs eagerly: with PyTorch's error
    def step(x: Tensor, mask: Tensor) -> Tensor:
        return x[mask].sum()

    x, mask = _x(), rt.tensor(np.ones(ROWS - 1, dtype=bool))
    message = ("The shape of the mask [4] at index 0 does not match the shape of the indexed "
               "tensor [5, 4] at index 0")
    with pytest.raises(IndexError, match=r"^The shape of the mask \[4\]") as eager:
        step(x, mask)
    assert str(eager.value) == message
    with pytest.warns(RuntimeWarning, match="runs eagerly"), \
            pytest.raises(IndexError) as compiled:
        planner.compile(step)(x, mask)
    assert str(compiled.value) == message


def test_prune_keeps_a_check_nobody_reads() -> None:
    g = nx.DiGraph(outputs=[], writes=[], returns=None)
    t = add_value(g, "input", [], {}, (3,), rt.int64, "cpu", index=0, phase="forward")
    y = add_value(g, "neg", [("node", t)], {}, (3,), rt.int64, "cpu", phase="forward")
    add_value(g, "check_bounds", [("node", t)],
              {"low": 0, "high": 2, "message": "Target {} is out of bounds."}, (), rt.bool_,
              "cpu", phase="forward")
    add_value(g, "exp", [("node", t)], {}, (3,), rt.float32, "cpu", phase="forward")  # dead
    g.graph["outputs"] = [y]
    run_default_passes(g)
    assert sorted(op for _, op in g.nodes(data="op")) == ["check_bounds", "input", "neg"]


def test_a_check_of_a_constant_runs_when_the_plan_is_made() -> None:
    # folded like any primitive of constants: a passing check leaves nothing to run, a
    # failing one raises eager's error from planning
    def step(x: Tensor, rows: int) -> Tensor:
        return x[rt.arange(rows)].sum()

    plan = planner.compile(step, backend="interpreter").lower(_x(), ROWS)
    assert "check_bounds" not in [s.op for s in plan.steps]
    with pytest.raises(IndexError) as eager:
        step(_x(), ROWS + 1)
    with pytest.raises(IndexError) as compiled:
        planner.compile(step, backend="interpreter")(_x(), ROWS + 1)
    assert str(compiled.value) == str(eager.value) == (
        "index 5 is out of bounds for dimension 0 with size 5")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("shape", "dim"), EMPTY_SHAPES)
def test_compiled_reductions_of_empty_tensors_match_torch(shape: tuple[int, ...], dim: int,
                                                          backend: str) -> None:
    import torch

    def step(x: Tensor) -> list[Any]:
        return empty_values(rt, x, dim)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's "mean of empty slice"
        ours = planner.compile(step, backend=backend, fullgraph=True)(rt.zeros(*shape))
    compare_with_torch(ours, empty_values(torch, torch.zeros(*shape), dim))


@pytest.mark.parametrize("backend", BACKENDS)
def test_clip_grad_norm_error_if_nonfinite_is_captured(backend: str) -> None:
    """``clip_grad_norm_(..., error_if_nonfinite=True)`` tests the norm with a check step,
    not ``.item()``: the step compiles (no fallback) and trains as eager; a non-finite
    gradient raises PyTorch's error on replay and leaves every state as it was."""
    def trainer() -> tuple[Callable[..., Any], list[Any]]:
        rt.manual_seed(0)
        model = rt.nn.Linear(FEATURES, CLASSES)
        opt = rt.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step(x: Tensor) -> Tensor:
            opt.zero_grad()
            loss = (model(x) ** 2).sum()
            loss.backward()
            rt.nn.utils.clip_grad_norm_(model.parameters(), 0.5, error_if_nonfinite=True)
            opt.step()
            return loss.detach()

        return step, [model, opt]

    eager, eager_state = trainer()
    fn, state = trainer()
    compiled = planner.compile(fn, backend=backend)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            np.testing.assert_allclose(float(compiled(_x())), float(eager(_x())), rtol=1e-5)
    assert compiled.captures == 1
    bad = _x()
    bad[0, 0] = float("inf")
    before = _state(*state)
    with np.errstate(invalid="ignore"), pytest.raises(
            RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` "
                                "is non-finite"):
        compiled(bad)
    _assert_same_state(before, _state(*state))
    with np.errstate(invalid="ignore"), pytest.raises(
            RuntimeError, match="is non-finite, so it cannot be clipped"):
        eager(bad)
