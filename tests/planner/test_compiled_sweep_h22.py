"""h22's sweep of runtime.func inside planner.compile training steps: per-example gradients
(vmap(grad(...))) clipped per example, an ensemble (stack_module_state + functional_call +
vmap), a Jacobian penalty (vmap(jacrev(model))), Hessians, jvp/vjp/linearize, vmap's
randomness modes and views. Each compiled step gives what the same step gives eagerly, over
several calls, captured once and replayed, with no fallback warning -- but where the step
cannot be captured (said at the test)."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
from runtime.func import (
    functional_call,
    grad,
    grad_and_value,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    linearize,
    stack_module_state,
    vjp,
    vmap,
)

nn = rt.nn
F = rt.nn.functional


def _arrays(out: Any) -> list[np.ndarray]:
    outs = out if isinstance(out, tuple | list) else [out]
    return [o.detach().numpy().copy() for o in outs]


def _runs(make: Callable[[], tuple[Callable[..., Any], Callable[[int], tuple[Any, ...]]]],
          calls: int = 3) -> tuple[list[Any], list[Any], Any, list[str]]:
    """The step ``make()`` builds, run ``calls`` times eagerly and compiled from the same seed:
    (eager results, compiled results, the compiled step, the planner's warnings)."""
    results = []
    for compiled in (False, True):
        rt.manual_seed(0)
        step, args = make()
        fn = planner.compile(step) if compiled else step
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            results.append([_arrays(fn(*args(i))) for i in range(calls)])
    said = [str(w.message) for w in caught if str(w.message).startswith("planner")]
    return results[0], results[1], fn, said


def _same(eager: list[Any], compiled: list[Any]) -> None:
    for e_call, c_call in zip(eager, compiled, strict=True):
        for e, c in zip(e_call, c_call, strict=True):
            np.testing.assert_allclose(c, e, rtol=1e-5, atol=1e-6)


def _captured_once(make: Any, calls: int = 3) -> None:
    eager, compiled, fn, said = _runs(make, calls)
    assert said == []
    assert fn.captures == 1
    _same(eager, compiled)


def _per_example_clipped() -> Any:
    model = nn.Linear(3, 2)
    opt = rt.optim.SGD(model.parameters(), lr=0.1)
    params = dict(model.named_parameters())

    def loss_fn(p, x, y):
        return ((functional_call(model, p, (x,)) - y) ** 2).sum()

    def step(x, y):
        grads = vmap(grad(loss_fn), in_dims=(None, 0, 0))(params, x, y)
        norms = rt.stack([g.flatten(1).norm(dim=1) for g in grads.values()]).norm(dim=0)
        scale = (1.0 / (norms + 1e-6)).clamp(max=1.0)
        for k, p in params.items():
            p.grad = (grads[k] * scale.view(-1, *([1] * (grads[k].dim() - 1)))).sum(0)
        opt.step()
        return norms, model.weight, model.bias

    xs, ys = [rt.randn(4, 3) for _ in range(3)], [rt.randn(4, 2) for _ in range(3)]
    return step, lambda i: (xs[i], ys[i])


def test_per_example_gradients_clipped_per_example() -> None:
    _captured_once(_per_example_clipped)


def _ensemble() -> Any:
    models = [nn.Linear(3, 2) for _ in range(3)]
    params, buffers = stack_module_state(models)
    base = copy.deepcopy(models[0])
    opt = rt.optim.Adam(list(params.values()), lr=0.1)

    def step(x):
        opt.zero_grad()
        out = vmap(lambda p, b, x: functional_call(base, (p, b), (x,)),
                   in_dims=(0, 0, None))(params, buffers, x)
        loss = out.pow(2).mean()
        loss.backward()
        opt.step()
        return loss, params["weight"], params["bias"]

    xs = [rt.randn(5, 3) for _ in range(3)]
    return step, lambda i: (xs[i],)


def test_ensemble_stack_module_state_functional_call_vmap() -> None:
    _captured_once(_ensemble)


def _ensemble_with_buffers() -> Any:
    """Batch norm in eval mode: its running stats are stacked buffers, read per model."""
    models = [nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU()).eval()
              for _ in range(2)]
    for m in models:
        m[1].running_mean.uniform_(-1, 1)
    params, buffers = stack_module_state(models)
    base = copy.deepcopy(models[0])
    opt = rt.optim.SGD(list(params.values()), lr=0.1)

    def step(x):
        opt.zero_grad()
        out = vmap(lambda p, b, x: functional_call(base, (p, b), (x,)),
                   in_dims=(0, 0, None))(params, buffers, x)
        loss = out.sum()
        loss.backward()
        opt.step()
        return loss, params["0.weight"]

    xs = [rt.randn(5, 3) for _ in range(3)]
    return step, lambda i: (xs[i],)


def test_ensemble_with_stacked_buffers() -> None:
    _captured_once(_ensemble_with_buffers)


def _jacobian_penalty(jac: Any) -> Any:
    def make() -> Any:
        model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
        opt = rt.optim.SGD(model.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            J = vmap(jac(model))(x)
            loss = model(x).pow(2).mean() + 0.1 * J.pow(2).sum()
            loss.backward()
            opt.step()
            return loss, model[0].weight

        xs = [rt.randn(2, 3) for _ in range(3)]
        return step, lambda i: (xs[i],)
    return make


@pytest.mark.parametrize("jac", [jacrev, jacfwd], ids=["jacrev", "jacfwd"])
def test_jacobian_penalty(jac: Any) -> None:
    _captured_once(_jacobian_penalty(jac))


def _second_order() -> Any:
    w = rt.randn(3, requires_grad=True)
    opt = rt.optim.SGD([w], lr=0.1)

    def f(v):
        return (v.sin() * w).sum()

    def step(x):
        opt.zero_grad()
        H = hessian(f)(x)
        _, t = jvp(lambda v: v.sin() * w, (x,), (rt.ones(3),))
        gv, val = grad_and_value(f)(x)
        out, vjp_fn = vjp(lambda v: v.cos() * w, x)
        (vx,) = vjp_fn(rt.ones(3))
        _, jvp_fn = linearize(lambda v: v.exp() * w, x)
        loss = H.sum() + t.sum() + gv.sum() + val + vx.sum() + jvp_fn(rt.ones(3)).sum()
        loss.backward()
        opt.step()
        return loss, w

    xs = [rt.randn(3) for _ in range(3)]
    return step, lambda i: (xs[i],)


def test_hessian_jvp_vjp_linearize_grad_and_value() -> None:
    _captured_once(_second_order)


def _dropout_in_vmap(randomness: str) -> Any:
    def make() -> Any:
        model = nn.Linear(3, 2)
        opt = rt.optim.SGD(model.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            out = vmap(lambda r: model(F.dropout(r, 0.5, training=True)),
                       randomness=randomness)(x)
            loss = out.pow(2).mean()
            loss.backward()
            opt.step()
            return loss, out
        xs = [rt.randn(4, 3) for _ in range(3)]
        return step, lambda i: (xs[i],)
    return make


@pytest.mark.parametrize("randomness", ["same", "different"])
def test_dropout_inside_vmap(randomness: str) -> None:
    """randomness="same": the captured step drew once per batch element (as "different"
    does), silently unlike eager mode's one draw for all elements; it now records the first
    element's draws and hands them to the others."""
    _captured_once(_dropout_in_vmap(randomness))


def test_nested_same_over_different_randomness() -> None:
    def make() -> Any:
        def step(x):
            return vmap(lambda r: vmap(lambda q: F.dropout(q, 0.5, training=True),
                                       randomness="different")(r), randomness="same")(x)
        return step, lambda i: (rt.ones(2, 3, 4),)

    eager, compiled, fn, said = _runs(make)
    assert said == [] and fn.captures == 1
    _same(eager, compiled)
    out = eager[0][0]
    assert (out[0] == out[1]).all() and not (out[0][0] == out[0][1]).all()


def test_randomness_error_raises_in_both_modes() -> None:
    def step(x):
        return vmap(lambda r: F.dropout(r, 0.5, training=True))(x)

    for fn in (step, planner.compile(step)):
        for _ in range(2):
            with pytest.raises(RuntimeError, match="called random operation while in randomness"):
                fn(rt.ones(3, 4))


def test_same_randomness_with_elements_drawing_differently_runs_eagerly() -> None:
    """An element drawing what the first did not (here a shape that depends on the element's
    position, through a Python counter) cannot be one recorded draw handed to all: the step
    runs eagerly, with a warning."""
    def make() -> Any:
        def step(x):
            count = iter(range(1, 10))
            return vmap(lambda r: r + rt.rand(next(count)).sum(), randomness="same")(x)
        return step, lambda i: (rt.ones(3, 2),)

    eager, compiled, fn, said = _runs(make)
    assert len(said) == 1 and "randomness='same'" in said[0]
    _same(eager, compiled)


def _views_in_vmap() -> Any:
    w = rt.randn(3, 3, requires_grad=True)
    opt = rt.optim.SGD([w], lr=0.1)

    def step(x):
        opt.zero_grad()
        d = vmap(rt.diagonal)(x * w)
        t = vmap(lambda r: r.t(), out_dims=1)(x * w)
        parts = vmap(lambda r: r.split(1, 0))(x * w)
        loss = d.sum() + t.pow(2).sum() + parts[1].sum()
        loss.backward()
        opt.step()
        return loss, d, t, w

    xs = [rt.randn(2, 3, 3) for _ in range(3)]
    return step, lambda i: (xs[i],)


def test_vmap_of_view_ops() -> None:
    """Eagerly, vmap of a view op gives a view of its input; a capture lays out no storage,
    so there the values are stacked: the same values and gradients."""
    _captured_once(_views_in_vmap)


def test_as_strided_inside_vmap_runs_eagerly() -> None:
    """as_strided reads the storage beneath its input, which a captured step does not lay out
    as eager mode does: the step runs eagerly (a warning naming the line), same values."""
    def make() -> Any:
        w = rt.randn(3, 2, requires_grad=True)

        def step(x):
            y = vmap(lambda r: r.as_strided([2], [1], 0))(x * w)
            loss = y.sum()
            loss.backward()
            return loss, w.grad

        xs = [rt.randn(3, 2) for _ in range(3)]
        return step, lambda i: (xs[i],)

    eager, compiled, fn, said = _runs(make)
    assert len(said) == 1 and "as_strided" in said[0]
    _same(eager, compiled)


def _inference_mode_grad() -> Any:
    def step(x):
        with rt.inference_mode():
            g = grad(lambda v: (v ** 3).sum())(x)
        return g

    xs = [rt.randn(4) for _ in range(3)]
    return step, lambda i: (xs[i],)


def test_grad_under_inference_mode() -> None:
    """grad under inference_mode gave zeros (nothing recorded); now 3 x**2, compiled too."""
    eager, compiled, fn, said = _runs(_inference_mode_grad)
    assert said == []
    _same(eager, compiled)
    assert not np.allclose(eager[0][0], 0)


def _jvp_writes_its_primal() -> Any:
    def step(x):
        buf = x.clone()
        out, t = jvp(lambda v: v.mul_(2), (buf,), (rt.ones(3),))
        return out, t, buf

    xs = [rt.randn(3) for _ in range(3)]
    return step, lambda i: (xs[i],)


def test_jvp_of_a_function_writing_its_primal() -> None:
    _captured_once(_jvp_writes_its_primal)
