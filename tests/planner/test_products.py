"""Matmul steps run as generated products (planner.products, codegen.gemm): which steps, the
same results as eager mode on every layout of the inputs, the same bits on every path of a
plan, and the switch kept by serialization."""

from __future__ import annotations

import json

import numpy as np
import pytest

import planner
import runtime as rt
from benchmarks.workloads import WORKLOADS
from planner.products import product_calls
from planner.steps import PrimitiveStep


def _matmuls(plan):
    return [s for s in plan.steps
            if isinstance(s, PrimitiveStep) and s.name in ("matmul", "matmul_add")]


@pytest.mark.parametrize("name", ["mlp_small", "rnn"])
def test_a_training_step_runs_its_matmuls_as_products_and_matches_eager(name):
    workload = WORKLOADS[name]
    arrays = workload.make_arrays(0)
    eager, compiled_case = workload.build(rt, arrays), workload.build(rt, arrays)
    step = planner.compile(compiled_case.fn, backend="llvm")
    for _ in range(3):
        want = eager.outputs(eager.fn(*eager.args))
        got = compiled_case.outputs(step(*compiled_case.args))
    plan = step.plan
    assert plan.products
    products = plan.executable.products()
    assert products and set(products) <= set(_matmuls(plan))
    program = plan.executable.program()
    assert "_product" in program.plain_program().source  # its products, called one by one
    assert "_drive" in program.source  # planner.native: runs of them in one native call
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=2e-4, atol=2e-5, err_msg=key)


def test_the_interpreter_backend_runs_numpy_matmul():
    workload = WORKLOADS["mlp_small"]
    case = workload.build(rt, workload.make_arrays(0))
    step = planner.compile(case.fn, backend="interpreter")
    step(*case.args)
    step(*case.args)
    assert not step.plan.products and not step.plan.executable.products()
    assert "_product" not in step.plan.executable.program().source


def _two_layer(x, w1, w2):
    return ((x @ w1).relu() @ w2).sum()


@pytest.mark.parametrize("dtype", [rt.float32, rt.float64])
@pytest.mark.parametrize("layout", ["c", "t", "slice"])
def test_any_layout_of_a_2d_input_gives_eager_results(dtype, layout):
    rng = np.random.default_rng(3)
    npdt = np.float32 if dtype == rt.float32 else np.float64

    def arr(shape):
        if layout == "c":
            return rng.standard_normal(shape).astype(npdt)
        if layout == "t":
            return rng.standard_normal(shape[::-1]).astype(npdt).T
        return rng.standard_normal((shape[0] * 2, shape[1] + 3)).astype(npdt)[::2, 1:-2]

    xs = [arr((16, 24)), arr((24, 40)), arr((40, 7))]

    def step(x, w1, w2):
        loss = _two_layer(x, w1, w2)
        loss.backward()
        return loss, w1.grad, w2.grad

    compiled = planner.compile(step, backend="llvm")
    for _ in range(2):
        ts = [rt.tensor(a, requires_grad=True) for a in xs]
        et = [rt.tensor(a, requires_grad=True) for a in xs]
        got = [t.detach().numpy() for t in compiled(*ts)]
        want = [t.detach().numpy() for t in step(*et)]
    assert compiled.plan.executable.products()
    tol = 1e-4 if dtype == rt.float32 else 1e-12
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


def test_float64_gradients_of_products_match_finite_differences():
    rng = np.random.default_rng(5)
    x0, w0 = rng.standard_normal((6, 9)), rng.standard_normal((9, 5))

    def step(x, w):
        loss = ((x @ w).tanh() @ w.t()).pow(2).sum()
        loss.backward()
        return loss, x.grad, w.grad

    compiled = planner.compile(step, backend="llvm")
    for _ in range(2):
        loss, gx, gw = compiled(rt.tensor(x0, requires_grad=True),
                                rt.tensor(w0, requires_grad=True))
    assert compiled.plan.executable.products()

    def f(x, w):
        return float((np.tanh(x @ w) @ w.T).__pow__(2).sum())

    eps = 1e-6
    for arr, grad, which in ((x0, gx, 0), (w0, gw, 1)):
        num = np.zeros_like(arr)
        for idx in np.ndindex(arr.shape):
            hi, lo = arr.copy(), arr.copy()
            hi[idx] += eps
            lo[idx] -= eps
            args_hi = (hi, w0) if which == 0 else (x0, hi)
            args_lo = (lo, w0) if which == 0 else (x0, lo)
            num[idx] = (f(*args_hi) - f(*args_lo)) / (2 * eps)
        np.testing.assert_allclose(grad.numpy(), num, rtol=1e-6, atol=1e-6)
    assert float(loss.detach().numpy()) == pytest.approx(f(x0, w0), rel=1e-12)


def test_batched_products_of_any_layout_give_the_same_values():
    rng = np.random.default_rng(11)
    q0, k0 = rng.standard_normal((2, 3, 8, 4)), rng.standard_normal((2, 3, 8, 4))

    def attention_scores(q, k):
        return (q @ k.transpose(-1, -2)).softmax(-1).sum()

    compiled = planner.compile(attention_scores, backend="llvm")
    want = attention_scores(rt.tensor(q0), rt.tensor(k0)).numpy()
    for _ in range(2):
        got = compiled(rt.tensor(q0), rt.tensor(k0)).numpy()
    assert compiled.plan.executable.products()
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # the same step on inputs laid out otherwise: the same product, the same values
    q1 = np.ascontiguousarray(np.swapaxes(q0, 0, 1)).swapaxes(0, 1)
    assert q1.strides != q0.strides
    np.testing.assert_allclose(compiled(rt.tensor(q1), rt.tensor(k0)).numpy(), want,
                               rtol=1e-12)


def test_the_checked_program_rounds_as_the_fast_one():
    workload = WORKLOADS["mlp_small"]
    case = workload.build(rt, workload.make_arrays(0))
    step = planner.compile(case.fn, backend="llvm")
    step(*case.args)
    step(*case.args)
    plan = step.plan
    binding = next(iter(step._cache.values())).bindings[0]
    import importlib
    compile_module = importlib.import_module("planner.compile")
    arrays = [a._data.copy() for a in case.args]
    state = {slot: compile_module._read_slot(binding.slots[slot], case.args).copy()
             for slot, _ in plan.reads}
    fast = plan.executable.program()(plan, list(arrays), dict(state), binding.generators)
    checked = plan.executable.program(checked=True)(plan, list(arrays), dict(state),
                                                    binding.generators)
    for (slot, a), (slot2, b) in zip(fast[1], checked[1]):
        assert slot == slot2
        from planner.plan import materialize
        assert np.array_equal(materialize(a), materialize(b)), slot


def test_products_survive_serialization_and_bad_values_are_refused():
    workload = WORKLOADS["mlp_small"]
    case = workload.build(rt, workload.make_arrays(0))
    step = planner.compile(case.fn, backend="llvm")
    step(*case.args)
    step(*case.args)
    text = step.plan.dumps()
    loaded = planner.Plan.loads(text)
    assert loaded.products and set(product_calls(loaded)) and len(product_calls(loaded)) == \
        len(product_calls(step.plan))
    doc = json.loads(text)
    doc["products"] = 1
    with pytest.raises(ValueError, match="products"):
        planner.Plan.loads(json.dumps(doc))


def _epilogues(plan):
    return [s for s in plan.steps if isinstance(s, PrimitiveStep) and s.name == "matmul_add"]


def test_a_bias_add_becomes_the_products_epilogue_with_the_same_numbers():
    rng = np.random.default_rng(2)
    a0, w0, d0 = (rng.standard_normal(s).astype(np.float32) for s in ((9, 20), (30, 20),
                                                                      (9, 30)))

    def step(a, w, d):
        return a @ w.t() + d  # an add alone (with the tanh after it, a kernel would take it)

    compiled = planner.compile(step, backend="llvm")
    args = [rt.tensor(x) for x in (a0, w0, d0)]
    for _ in range(2):
        got = compiled(*args).numpy()
    plan = compiled.plan
    assert len(_epilogues(plan)) == 1 and plan.stats["product_epilogues"] == 1
    assert not [s for s in plan.steps if isinstance(s, PrimitiveStep) and s.name == "add"]
    np.testing.assert_allclose(got, step(*args).numpy(), rtol=1e-5, atol=1e-6)
    # the product, rounded, then the addend: what the unfused steps give
    from codegen import gemm

    assert np.array_equal(got, np.add(gemm.matmul(a0, w0.T), d0))
    # an addend whose columns are not contiguous: added after the product, same numbers
    d_cols = np.ascontiguousarray(d0.T).T
    assert d_cols.strides[-1] != 4
    assert np.array_equal(compiled(args[0], args[1], rt.tensor(d_cols)).numpy(), got)


def test_a_product_something_else_reads_keeps_its_add_apart():
    rng = np.random.default_rng(4)
    a0, b0, d0 = (rng.standard_normal(s) for s in ((5, 6), (6, 7), (7,)))

    def step(a, b, d):
        p = a @ b
        return p + d, p

    compiled = planner.compile(step, backend="llvm")
    args = [rt.tensor(x) for x in (a0, b0, d0)]
    for _ in range(2):
        got = compiled(*args)
    assert not _epilogues(compiled.plan)
    want = step(*args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-12)


def test_gradients_summed_over_rnn_steps_are_epilogues():
    workload = WORKLOADS["rnn"]
    case = workload.build(rt, workload.make_arrays(0))
    step = planner.compile(case.fn, backend="llvm")
    step(*case.args)
    step(*case.args)
    epilogues = _epilogues(step.plan)
    assert {s.phase for s in epilogues} == {"forward", "backward"}
    assert set(epilogues) <= set(step.plan.executable.products())


def test_addmm_compiles_to_one_product_with_its_gradients():
    rng = np.random.default_rng(8)
    c0, a0, b0 = (rng.standard_normal(s) for s in ((6,), (4, 5), (5, 6)))

    def step(c, a, b):
        loss = rt.addmm(c, a, b).tanh().sum()
        loss.backward()
        return loss, c.grad, a.grad, b.grad

    compiled = planner.compile(step, backend="llvm")
    for _ in range(2):
        got = compiled(*(rt.tensor(x, requires_grad=True) for x in (c0, a0, b0)))
    want = step(*(rt.tensor(x, requires_grad=True) for x in (c0, a0, b0)))
    assert _epilogues(compiled.plan)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=1e-12,
                                   atol=1e-13)
