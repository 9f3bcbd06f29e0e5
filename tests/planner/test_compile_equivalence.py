"""planner.compile gives what eager mode gives: values, gradients, parameters and optimizer
state, over several steps, for every benchmark workload and for a range of training steps."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
from benchmarks.workloads import WORKLOADS

F = rt.nn.functional
STEPS = 4
TOL = 1e-6
# fused kernels sum in another order (vector partial sums) and divide by a row value as a
# multiplication by its reciprocal: float32 results move by a few ulp
FUSED_TOL = 2e-5


def to_np(v: Any) -> Any:
    if isinstance(v, rt.Tensor):
        return np.asarray(v.detach().numpy())
    return v


def assert_same(actual: Any, expected: Any, what: str = "value", tol: float = TOL) -> None:
    """Nested results agree: tensors within TOL (exact shape and dtype), Python values equal."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and actual.keys() == expected.keys(), what
        for k in expected:
            assert_same(actual[k], expected[k], f"{what}[{k!r}]", tol)
    elif isinstance(expected, (tuple, list)):
        assert type(actual) is type(expected) and len(actual) == len(expected), what
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            assert_same(a, e, f"{what}[{i}]", tol)
    elif isinstance(expected, (rt.Tensor, np.ndarray)):
        assert isinstance(actual, type(expected)), f"{what}: {type(actual)}"
        a, e = to_np(actual), to_np(expected)
        assert a.shape == e.shape and a.dtype == e.dtype, f"{what}: {a.shape} {a.dtype} " \
            f"vs {e.shape} {e.dtype}"
        np.testing.assert_allclose(a, e, rtol=tol, atol=tol, err_msg=what)
    elif expected is None:
        assert actual is None, what
    else:
        assert type(actual) is type(expected) and actual == expected, f"{what}: {actual!r} " \
            f"vs {expected!r}"


def no_warnings_call(fn: Callable[..., Any], *args: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a fallback to eager is a failure here
        return fn(*args)


# --- the benchmark workloads ----------------------------------------------------------------


@pytest.mark.parametrize("backend", ["interpreter", "auto"])
@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_workload_compiled_equals_eager(name: str, backend: str) -> None:
    wl = WORKLOADS[name]
    arrays = wl.make_arrays(0)
    eager, compiled = wl.build(rt, arrays), wl.build(rt, arrays)
    step = planner.compile(compiled.fn, backend=backend)
    tol = TOL if backend == "interpreter" else FUSED_TOL
    for i in range(STEPS):
        expected = eager.outputs(eager.fn(*eager.args))
        got = compiled.outputs(no_warnings_call(step, *compiled.args))
        assert got.keys() == expected.keys(), (i, got.keys(), expected.keys())
        for k in expected:
            assert_same(got[k], expected[k], f"step {i} {k}", tol)
    assert step.plan is not None
    assert 1 <= step.captures <= 2  # the first call may find every .grad None, later ones set


# --- training steps on small models ----------------------------------------------------------


def make_model(kind: str, seed: int = 0) -> rt.nn.Module:
    nn = rt.nn
    if kind == "mlp":
        model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 8), nn.Tanh(),
                              nn.Linear(8, 3))
    elif kind == "dropout":
        model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 3))
    elif kind == "ln_gelu":
        model = nn.Sequential(nn.Linear(6, 12), nn.LayerNorm(12), nn.GELU(), nn.Linear(12, 3))
    else:
        raise AssertionError(kind)
    rng = np.random.default_rng(seed)
    with rt.no_grad():
        for p in model.parameters():
            p.copy_(rt.from_numpy(rng.uniform(-0.5, 0.5, p.shape).astype(np.float32)))
    return model


def batches(n: int, seed: int = 1, batch: int = 5) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((batch, 6)).astype(np.float32),
             rng.integers(0, 3, batch).astype(np.int64)) for _ in range(n)]


def opt_state(opt: Any, params: list[Any]) -> list[dict[str, Any]]:
    return [{k: to_np(v) for k, v in opt.state.get(p, {}).items()} for p in params]


def params_and_grads(model: Any) -> list[Any]:
    return [(to_np(p), to_np(p.grad) if p.grad is not None else None)
            for p in model.parameters()]


OPTIMIZERS: dict[str, Callable[[Any], Any]] = {
    "sgd": lambda ps: rt.optim.SGD(ps, lr=0.1),
    "sgd_momentum": lambda ps: rt.optim.SGD(ps, lr=0.1, momentum=0.9),
    "sgd_nesterov_wd": lambda ps: rt.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True,
                                               weight_decay=0.01),
    "sgd_dampening": lambda ps: rt.optim.SGD(ps, lr=0.05, momentum=0.5, dampening=0.1),
    "adam": lambda ps: rt.optim.Adam(ps, lr=0.01),
    "adam_wd_amsgrad": lambda ps: rt.optim.Adam(ps, lr=0.01, weight_decay=0.1, amsgrad=True),
    "adamw": lambda ps: rt.optim.AdamW(ps, lr=0.01, weight_decay=0.05),
}


def train_pair(kind: str, opt_name: str, body: Callable[..., Any], seeded: bool = False,
               n: int = STEPS) -> planner.CompiledStep:
    """Run ``body(model, opt, x, y)`` eagerly and compiled side by side and compare."""
    runs = []
    for _ in range(2):
        model = make_model(kind)
        opt = OPTIMIZERS[opt_name](list(model.parameters()))
        runs.append((model, opt))
    (m_e, o_e), (m_c, o_c) = runs

    def eager_step(x: Any, y: Any) -> Any:
        return body(m_e, o_e, x, y)

    step = planner.compile(lambda x, y: body(m_c, o_c, x, y))
    for i, (xa, ya) in enumerate(batches(n)):
        if seeded:
            rt.manual_seed(100 + i)
        expected = eager_step(rt.from_numpy(xa.copy()), rt.from_numpy(ya.copy()))
        if seeded:
            rt.manual_seed(100 + i)
        got = no_warnings_call(step, rt.from_numpy(xa.copy()), rt.from_numpy(ya.copy()))
        assert_same(got, expected, f"step {i} result")
        assert_same(params_and_grads(m_c), params_and_grads(m_e), f"step {i} params/grads")
        assert_same(opt_state(o_c, list(m_c.parameters())),
                    opt_state(o_e, list(m_e.parameters())), f"step {i} optimizer state")
    return step


def plain_step(model: Any, opt: Any, x: Any, y: Any) -> Any:
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


@pytest.mark.parametrize("opt_name", sorted(OPTIMIZERS))
def test_mlp_optimizers(opt_name: str) -> None:
    step = train_pair("mlp", opt_name, plain_step)
    assert step.captures <= 3


def test_layernorm_gelu_adam() -> None:
    train_pair("ln_gelu", "adam", plain_step)


def test_dropout_same_masks_with_seeded_generator() -> None:
    step = train_pair("dropout", "sgd_momentum", plain_step, seeded=True)
    assert step.plan.rands  # the masks are drawn at run time, not baked in


def test_dropout_eval_mode_is_deterministic() -> None:
    def body(model: Any, opt: Any, x: Any, y: Any) -> Any:
        model.eval()
        return plain_step(model, opt, x, y)

    step = train_pair("dropout", "sgd", body)
    assert not step.plan.rands


def test_two_micro_batches_accumulate() -> None:
    def body(model: Any, opt: Any, x: Any, y: Any) -> Any:
        opt.zero_grad()
        total = 0.0
        for part in (slice(0, 2), slice(2, 5)):
            loss = F.cross_entropy(model(x[part]), y[part]) * 0.5
            loss.backward()
            total = total + loss.detach()
        opt.step()
        return total

    train_pair("mlp", "adam", body)


def test_zero_grad_keeps_tensors() -> None:
    def body(model: Any, opt: Any, x: Any, y: Any) -> Any:
        opt.zero_grad(set_to_none=False)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    step = train_pair("mlp", "sgd_momentum", body)
    assert step.captures <= 2


def test_no_zero_grad_accumulates_across_calls() -> None:
    def body(model: Any, opt: Any, x: Any, y: Any) -> Any:
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        return loss

    train_pair("mlp", "sgd", body)


def test_returns_tuple_and_dict_with_python_values() -> None:
    def body(model: Any, opt: Any, x: Any, y: Any) -> Any:
        opt.zero_grad()
        out = model(x)
        loss = F.cross_entropy(out, y)
        loss.backward()
        opt.step()
        return loss, {"logits": out.detach(), "n": 5, "name": "mlp", "scale": 0.5,
                      "none": None}, [out.sum().detach(), 3]

    train_pair("mlp", "adam", body)


def test_forward_only_step() -> None:
    def body(model: Any, opt: Any, x: Any, y: Any) -> Any:
        with rt.no_grad():
            out = model(x)
            return F.cross_entropy(out, y), out.amax(1)

    train_pair("mlp", "sgd", body)


def test_forward_only_under_no_grad() -> None:
    def body(model: Any, opt: Any, x: Any, y: Any) -> Any:
        with rt.no_grad():
            return F.cross_entropy(model(x), y)

    step = train_pair("mlp", "sgd", body)
    assert all(d["phase"] == "forward" for _, d in step.plan.graph.nodes(data=True))


def test_returning_a_tensor_with_a_live_graph_compiles_its_backward() -> None:
    # the caller may differentiate what it gets back: its grad_fn runs the compiled backward
    # plan (planner.aot; tests/planner/test_aot_module.py), with no fallback to eager
    model, twin = make_model("mlp"), make_model("mlp")

    @planner.compile
    def forward(x: Any, y: Any) -> Any:
        return F.cross_entropy(model(x), y)

    xa, ya = next(iter(batches(1)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loss = forward(rt.from_numpy(xa.copy()), rt.from_numpy(ya.copy()))
    assert loss.grad_fn is not None and loss.grad_fn.name() == "CompiledFunctionBackward"
    loss.backward()
    F.cross_entropy(twin(rt.from_numpy(xa.copy())), rt.from_numpy(ya.copy())).backward()
    for p, q in zip(model.parameters(), twin.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_input_gradient_step() -> None:
    model_e, model_c = make_model("ln_gelu"), make_model("ln_gelu")

    def make(model: Any) -> Callable[..., Any]:
        def step(x: Any, y: Any) -> Any:
            loss = F.cross_entropy(model(x), y)
            (gx,) = rt.autograd.grad(loss, [x])
            return loss, gx

        return step

    eager, compiled = make(model_e), planner.compile(make(model_c))
    for i, (xa, ya) in enumerate(batches(STEPS)):
        x_e = rt.tensor(xa, requires_grad=True)
        x_c = rt.tensor(xa, requires_grad=True)
        expected = eager(x_e, rt.from_numpy(ya.copy()))
        got = no_warnings_call(compiled, x_c, rt.from_numpy(ya.copy()))
        assert_same(got, expected, f"step {i}")
        assert x_c.grad is None
        assert all(p.grad is None for p in model_c.parameters())
        assert_same(params_and_grads(model_c), params_and_grads(model_e))
    assert compiled.captures == 1


def test_grad_of_several_inputs_and_params() -> None:
    def body(model: Any, opt: Any, x: Any, y: Any) -> Any:
        w = model[0].weight
        loss = F.cross_entropy(model(x), y)
        gw, gb = rt.autograd.grad(loss, [w, model[-1].bias])
        with rt.no_grad():
            w.sub_(gw * 0.1)
        return loss, gw, gb

    train_pair("mlp", "sgd", body)


def test_explicit_generators_advance_alike() -> None:
    """Random draws in a replayed plan come from the step's generator, in eager order, and
    leave it where eager leaves it (no reseeding between calls)."""
    gens = [rt.Generator().manual_seed(7), rt.Generator().manual_seed(7)]

    def make(gen: Any) -> Any:
        def step(x: Any) -> Any:
            noise = rt.randn(*x.shape, generator=gen)
            keep = rt.rand(*x.shape, generator=gen)
            return (x * noise + keep).sum(), noise, keep

        return step

    eager, compiled = make(gens[0]), planner.compile(make(gens[1]))
    x = rt.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3))
    seen = []
    for i in range(3):
        expected = eager(x)
        got = no_warnings_call(compiled, x)
        assert_same(got, expected, f"call {i}")
        seen.append(to_np(got[1]))
    assert not np.array_equal(seen[0], seen[1])  # each call draws fresh numbers
    assert_same(rt.rand(4, generator=gens[1]), rt.rand(4, generator=gens[0]), "after")
    assert compiled.captures == 1


def test_broadcast_gradient_accumulates_over_calls() -> None:
    # the gradient of a sum is a broadcast view; kept as .grad it must be writable next call
    x_e = rt.tensor([0.5, -1.0], requires_grad=True)
    x_c = rt.tensor([0.5, -1.0], requires_grad=True)

    def step(x: Any) -> Any:
        loss = x.sum().exp()
        loss.backward()
        return loss

    compiled = planner.compile(step)
    for _ in range(3):
        step(x_e)
        compiled(x_c)
        np.testing.assert_allclose(x_c.grad.numpy(), x_e.grad.numpy(), rtol=1e-6)
    assert x_c.grad._data.flags.writeable
