"""A small compiled step's replay (mlp_small's): what its native run is given, and that it
keeps eager's numbers.

The forward's x @ W.T is a product whose B is a view of the weight; a native run gives the
product the weight itself (``codegen.gemm.GemmSpec.b_swapped``) instead of a view made in
Python every call, where only products read that view, as their B."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
from codegen import pyentry

pytestmark = pytest.mark.skipif(not pyentry.available(), reason="no builtin entries here")


def _mlp_step(seed: int = 0, sizes: tuple[int, ...] = (24, 32, 32, 5), batch: int = 16,
              returns_wt: bool = False) -> tuple[Any, Any, tuple[Any, ...]]:
    """A Linear/ReLU stack, its SGD step on cross-entropy (returning the loss, and with
    ``returns_wt`` the first weight's transpose times two too: a reader of W.T that is no
    product) and a batch."""
    rt.manual_seed(seed)
    layers: list[Any] = []
    for n_in, n_out in zip(sizes, sizes[1:]):
        layers += [rt.nn.Linear(n_in, n_out), rt.nn.ReLU()]
    model = rt.nn.Sequential(*layers[:-1])
    opt = rt.optim.SGD(model.parameters(), lr=0.05)
    rng = np.random.default_rng(seed)
    x = rt.from_numpy(rng.standard_normal((batch, sizes[0])).astype(np.float32))
    y = rt.from_numpy(rng.integers(0, sizes[-1], batch))
    first = model[0]

    def step(x: Any, y: Any) -> Any:
        opt.zero_grad()
        out = model(x)
        loss = rt.nn.functional.cross_entropy(out, y)
        if returns_wt:
            loss = loss + (first.weight.t() * 2.0).sum() * 0.0
        loss.backward()
        opt.step()
        return loss

    return model, step, (x, y)


def _run_both(returns_wt: bool = False) -> tuple[Any, list[float], list[float], Any, Any]:
    model_e, eager, args_e = _mlp_step(returns_wt=returns_wt)
    model_c, fn, args_c = _mlp_step(returns_wt=returns_wt)
    step = planner.compile(fn, backend="llvm")
    losses_e = [float(eager(*args_e).item()) for _ in range(6)]
    losses_c = [float(step(*args_c).item()) for _ in range(6)]
    return step, losses_e, losses_c, model_e, model_c


def _native_source(step: Any) -> str:
    program = step.plan.executable.program(False, True)
    native = getattr(program, "native", None)
    assert native is not None, "the plan has no native run"
    return native.source


def test_a_runs_products_read_the_weights_not_views_of_them() -> None:
    step, losses_e, losses_c, model_e, model_c = _run_both()
    source = _native_source(step)
    assert "_drive" in source, source
    # no transposed view of a weight is made in Python: the products take the weights
    assert "permute" not in source, source
    np.testing.assert_allclose(losses_c, losses_e, rtol=1e-5, atol=1e-6)
    for pe, pc in zip(model_e.parameters(), model_c.parameters(), strict=True):
        np.testing.assert_allclose(pc.detach().numpy(), pe.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
        np.testing.assert_allclose(pc.grad.numpy(), pe.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_a_transposed_view_read_by_other_steps_is_still_made() -> None:
    step, losses_e, losses_c, model_e, model_c = _run_both(returns_wt=True)
    np.testing.assert_allclose(losses_c, losses_e, rtol=1e-5, atol=1e-6)
    for pe, pc in zip(model_e.parameters(), model_c.parameters(), strict=True):
        np.testing.assert_allclose(pc.detach().numpy(), pe.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


def test_swapped_operands_need_a_view_only_products_read_as_b() -> None:
    from planner import native

    step, *_ = _run_both()
    plan = step.plan
    exact = {b for _, b in plan.inputs} | {b for _, b in plan.reads}
    found = []
    i = 0
    search = native.Search()
    module = plan.executable.module()
    products = plan.executable.products()
    known = native.Known(set(exact) | set(plan.consts), set())
    while i < len(plan.steps):
        run = native.find_run(plan, i, known, module, products, frozenset(), search,
                              checks=True, commits=True)
        if run is None:
            i += 1
            continue
        swapped = native._swapped_operands(plan, run, exact)
        for view, source in swapped.items():
            step_of = next(s for s in plan.steps if view in s.outputs)
            assert step_of.name == "permute" and step_of.buffers == [source]
            readers = [s for s in plan.steps if view in s.buffers]
            assert readers and all(s.name in ("matmul", "matmul_add")
                                   and s.buffers[1] == view for s in readers)
        found += list(swapped)
        i = run.end
    assert len(found) == 3  # the three weights' W.T


def test_swaps_last_axes_probe() -> None:
    from planner.native import _swaps_last_axes

    f32 = np.dtype(np.float32)
    assert _swaps_last_axes(lambda a: a.T, ((4, 3), f32))
    assert _swaps_last_axes(lambda a: a.swapaxes(-1, -2), ((2, 4, 3), f32))
    assert not _swaps_last_axes(lambda a: a.transpose(1, 0, 2), ((2, 4, 3), f32))
    assert not _swaps_last_axes(lambda a: a.reshape(3, 4), ((4, 3), f32))
    assert not _swaps_last_axes(lambda a: a.T, ((1, 3), f32))  # ambiguous: left alone
    assert not _swaps_last_axes(lambda a: a, ((4,), f32))


def test_contiguous_constants_reach_a_run_without_asarray() -> None:
    step, losses_e, losses_c, *_ = _run_both()
    source = _native_source(step)
    consts = [b for b, v in step.plan.consts.items()
              if isinstance(v, np.ndarray) and v.flags.c_contiguous and f"b{b}" in source]
    assert consts, source  # cross-entropy's class ids, at least
    for b in consts:
        assert f"_asarray(b{b}," not in source, source
    np.testing.assert_allclose(losses_c, losses_e, rtol=1e-5, atol=1e-6)
