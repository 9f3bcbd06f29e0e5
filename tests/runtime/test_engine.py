"""Engine scenario tests, modelled on PyTorch's test/test_autograd.py.

They assert PyTorch's behaviour (and error texts) for the eager engine:
graph freeing, higher-order gradients, pruning, reentrant backward, deep graphs,
multi-threaded backward and anomaly mode.
"""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap
import threading
import warnings

import numpy as np
import pytest

import runtime as rt
from tests.fakecuda import fake_cuda_fixture  # noqa: F401 - the fake_cuda fixture

ACC_NAMES = ("AccumulateGrad", "torch::autograd::AccumulateGrad")


def npa(t):
    return t.detach().numpy()


# ---------------------------------------------------------------------------
# freeing the graph / retain_graph
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["mul", "exp"])
def test_backward_twice_with_saved_tensors_raises(op):
    x = rt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (x * x).sum() if op == "mul" else x.exp().sum()
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_grad_twice_with_saved_tensors_raises():
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    y = (x.sin() * x).sum()
    rt.autograd.grad(y, [x])
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        rt.autograd.grad(y, [x])


def test_backward_twice_without_saved_tensors_is_allowed():
    x = rt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = rt.tensor([4.0, 5.0, 6.0], requires_grad=True)
    z = (x + y).sum()
    z.backward()
    z.backward()  # nothing saved -> nothing to free -> no error (PyTorch behaviour)
    np.testing.assert_allclose(npa(x.grad), [2.0, 2.0, 2.0])
    np.testing.assert_allclose(npa(y.grad), [2.0, 2.0, 2.0])


def test_retain_graph_accumulates():
    x = rt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    np.testing.assert_allclose(npa(x.grad), [2.0, 4.0, 6.0])
    y.backward(retain_graph=True)
    np.testing.assert_allclose(npa(x.grad), [4.0, 8.0, 12.0])
    y.backward()  # last one frees
    np.testing.assert_allclose(npa(x.grad), [6.0, 12.0, 18.0])
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_partial_graph_freeing_only_frees_executed_nodes():
    # Freeing happens per executed node: a second backward through an untouched
    # branch that shares no executed saved state still raises only when it reaches
    # a freed node.
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    a = x.exp()
    b = a * a
    b.sum().backward(retain_graph=True)
    c = (a * 3.0).sum()
    c.backward()  # ExpBackward0 still has its saved result (retain_graph above)
    np.testing.assert_allclose(npa(x.grad), 2 * np.exp(2 * np.array([1.0, 2.0])) + 3 * np.exp([1.0, 2.0]),
                               rtol=1e-5)
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        (a * 2.0).sum().backward()


# ---------------------------------------------------------------------------
# create_graph / higher order
# ---------------------------------------------------------------------------


def _f_hvp(x):
    return (x ** 3).sum() + x.sum() ** 2


def test_hessian_vector_product_analytic():
    xv = np.array([0.5, -1.0, 2.0], dtype=np.float64)
    vv = np.array([1.0, 2.0, -0.5], dtype=np.float64)
    x = rt.tensor(xv, requires_grad=True)
    v = rt.tensor(vv)
    (g,) = rt.autograd.grad(_f_hvp(x), [x], create_graph=True)
    assert g.requires_grad and g.grad_fn is not None
    np.testing.assert_allclose(npa(g), 3 * xv ** 2 + 2 * xv.sum(), rtol=1e-10)
    (hv,) = rt.autograd.grad((g * v).sum(), [x])
    np.testing.assert_allclose(npa(hv), 6 * xv * vv + 2 * vv.sum(), rtol=1e-10)


def test_hessian_vector_product_vs_torch():
    torch = pytest.importorskip("torch")
    xv = np.array([[0.3, -0.7], [1.1, 0.2]], dtype=np.float64)
    vv = np.array([[1.0, -1.0], [0.5, 2.0]], dtype=np.float64)

    def f(mod, x, w):
        h = (x @ w).tanh()
        return (h * x.sin()).sum() + (x * x * w).exp().mean()

    res = {}
    for name, mod in (("rt", rt), ("torch", torch)):
        x = mod.tensor(xv, requires_grad=True)
        w = mod.tensor(xv.T.copy() + 0.5, requires_grad=True)
        v = mod.tensor(vv)
        gx, gw = mod.autograd.grad(f(mod, x, w), [x, w], create_graph=True)
        hx, hw = mod.autograd.grad((gx * v).sum(), [x, w])
        res[name] = [np.asarray(t.detach().numpy()) for t in (gx, gw, hx, hw)]
    for a, b in zip(res["rt"], res["torch"]):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_grad_of_grad_of_grad():
    x = rt.tensor(1.5, dtype=rt.float64, requires_grad=True)
    y = x ** 4
    (d1,) = rt.autograd.grad(y, [x], create_graph=True)
    (d2,) = rt.autograd.grad(d1, [x], create_graph=True)
    (d3,) = rt.autograd.grad(d2, [x])
    assert math.isclose(d1.item(), 4 * 1.5 ** 3)
    assert math.isclose(d2.item(), 12 * 1.5 ** 2)
    assert math.isclose(d3.item(), 24 * 1.5)
    assert not d3.requires_grad


def test_backward_create_graph_then_backward_of_grad():
    x = rt.tensor([1.0, 2.0], dtype=rt.float64, requires_grad=True)
    y = (x ** 3).sum()
    y.backward(create_graph=True)
    g = x.grad
    assert g.requires_grad
    np.testing.assert_allclose(npa(g), [3.0, 12.0])
    x.grad = None
    g.sum().backward()
    np.testing.assert_allclose(npa(x.grad), [6.0, 12.0])


def test_grad_without_create_graph_does_not_require_grad():
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    (g,) = rt.autograd.grad((x * x).sum(), [x])
    assert not g.requires_grad
    assert g.grad_fn is None


def test_gradcheck_and_gradgradcheck():
    a = rt.tensor(np.array([0.3, -0.4, 0.9]), dtype=rt.float64, requires_grad=True)
    b = rt.tensor(np.array([1.2, 0.5, -0.7]), dtype=rt.float64, requires_grad=True)

    def fn(a, b):
        return (a * b).sin() + a.exp() * b.tanh() / (b * b + 1.0)

    assert rt.autograd.gradcheck(fn, (a, b))
    assert rt.autograd.gradgradcheck(fn, (a, b))


def test_gradcheck_detects_wrong_backward():
    class BadSquare(rt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x  # wrong: should be 2*x

    x = rt.tensor(np.array([0.5, 1.5]), dtype=rt.float64, requires_grad=True)
    assert rt.autograd.gradcheck(BadSquare.apply, (x,), raise_exception=False) is False
    with pytest.raises(Exception, match="(?i)jacobian"):
        rt.autograd.gradcheck(BadSquare.apply, (x,))


# ---------------------------------------------------------------------------
# multiple roots
# ---------------------------------------------------------------------------


def test_multiple_roots_backward():
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    a = x * 2.0
    b = x * x
    ga = rt.tensor([1.0, 10.0])
    gb = rt.tensor([100.0, 1000.0])
    rt.autograd.backward([a, b], [ga, gb])
    np.testing.assert_allclose(npa(x.grad), [2 * 1 + 2 * 1 * 100, 2 * 10 + 2 * 2 * 1000])


def test_multiple_roots_shared_subgraph_runs_once():
    calls = []

    class Rec(rt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            calls.append(npa(g).copy())
            return g

    x = rt.tensor([1.0, 2.0], requires_grad=True)
    h = Rec.apply(x)
    a = (h * 2.0).sum()
    b = (h * 3.0).sum()
    rt.autograd.backward([a, b])
    assert len(calls) == 1  # grads from both roots are summed before the node runs
    np.testing.assert_allclose(calls[0], [5.0, 5.0])
    np.testing.assert_allclose(npa(x.grad), [5.0, 5.0])


# ---------------------------------------------------------------------------
# pruning and topological numbers
# ---------------------------------------------------------------------------


def _counting_function():
    counter = {"n": 0}

    class Counting(rt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            counter["n"] += 1
            return g

    return Counting, counter


def test_grad_prunes_branches_leading_only_to_other_leaves():
    Counting, counter = _counting_function()
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    w = rt.tensor([3.0, 4.0], requires_grad=True)
    a = x * 2.0
    b = Counting.apply(w) * 3.0
    loss = (a + b).sum()
    (gx,) = rt.autograd.grad(loss, [x], retain_graph=True)
    np.testing.assert_allclose(npa(gx), [2.0, 2.0])
    assert counter["n"] == 0
    assert w.grad is None and x.grad is None
    loss.backward()
    assert counter["n"] == 1
    np.testing.assert_allclose(npa(w.grad), [3.0, 3.0])


def test_backward_inputs_prunes_and_fills_only_subset():
    Counting, counter = _counting_function()
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    w = rt.tensor([3.0, 4.0], requires_grad=True)
    loss = (x * x).sum() + Counting.apply(w).sum()
    loss.backward(inputs=[x])
    assert counter["n"] == 0
    np.testing.assert_allclose(npa(x.grad), [2.0, 4.0])
    assert w.grad is None


def test_grad_runs_node_on_path_to_intermediate_input():
    Counting, counter = _counting_function()
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    h = Counting.apply(x)
    y = (h * h).sum()
    (gh,) = rt.autograd.grad(y, [h])
    np.testing.assert_allclose(npa(gh), [2.0, 4.0])
    # the Counting node lies *below* h: not needed to get dy/dh
    assert counter["n"] == 0


def _check_topo(node, seen):
    if node is None or id(node) in seen:
        return
    seen.add(id(node))
    children = [n for n, _ in node.next_functions if n is not None]
    for c in children:
        _check_topo(c, seen)
    if node.name() in ACC_NAMES:
        assert node.topological_nr == 0
    else:
        expected = 1 + max((c.topological_nr for c in children), default=-1)
        assert node.topological_nr == max(expected, 0), node.name()


def test_topological_nr():
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    y = rt.tensor([3.0, 4.0], requires_grad=True)
    a = x.exp()
    acc_x = a.grad_fn.next_functions[0][0]
    assert acc_x.name() in ACC_NAMES
    assert acc_x.topological_nr == 0
    assert a.grad_fn.topological_nr == 1
    b = a * y
    assert b.grad_fn.topological_nr == 2
    c = b + a
    assert c.grad_fn.topological_nr == 3
    d = (c * rt.tensor([1.0, 1.0])).sum()  # constant input -> (None, 0) edge
    assert d.grad_fn.topological_nr == 5
    _check_topo(d.grad_fn, set())


def test_sequence_nr_increases():
    x = rt.tensor([1.0], requires_grad=True)
    a = x * 2.0
    b = a.exp()
    c = b + a

    def seq(n):
        return n._sequence_nr()  # PyTorch's method

    assert seq(a.grad_fn) < seq(b.grad_fn) < seq(c.grad_fn)


# ---------------------------------------------------------------------------
# reentrant backward
# ---------------------------------------------------------------------------


class SimulateBackwardError(rt.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 1

    @staticmethod
    def backward(ctx, g):
        raise Exception("Simulate error on backward pass")  # noqa: TRY002


def test_reentrant_child_error():
    # parent graph
    a = rt.rand(3, 3, requires_grad=True)
    c = a * a
    # reentrant child graph
    b = rt.rand(3, 3, requires_grad=True)
    e = b * b
    f = SimulateBackwardError.apply(e)
    reentrant_root = f.sum()

    class ReentrantFunc(rt.autograd.Function):
        @staticmethod
        def forward(ctx, inp):
            return inp.clone()

        @staticmethod
        def backward(ctx, grad):
            reentrant_root.backward()
            return grad

    d = ReentrantFunc.apply(c)
    with pytest.raises(Exception, match="Simulate error"):
        d.sum().backward()


def test_reentrant_backward_computes_child_grads():
    w = rt.tensor([2.0, 3.0], requires_grad=True)
    child_out = (w * w).sum()

    class Reenter(rt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            (gw,) = rt.autograd.grad(child_out, [w])
            return g * gw.sum()

    x = rt.tensor([1.0, 1.0], requires_grad=True)
    Reenter.apply(x).sum().backward()
    np.testing.assert_allclose(npa(x.grad), [10.0, 10.0])
    assert w.grad is None


def test_reentrant_priority():
    order = []

    class MyFunction(rt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, x):
            order.append("MyFunction")
            return x

    class Reentrant(rt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            with rt.enable_grad():
                ctx.x = x.detach().requires_grad_()
                ctx.x = ctx.x - 1
            return ctx.x.detach()

        @staticmethod
        def backward(ctx, x):
            order.append("Reentrant")
            if ctx.x.item() < 0:
                return x
            with rt.enable_grad():
                Reentrant.apply(ctx.x).backward()
            return x

    a = MyFunction.apply(rt.tensor(6.0, requires_grad=True))
    b = Reentrant.apply(rt.tensor(9.0, requires_grad=True))
    v = a * b
    v.backward()
    # reentrant child tasks run before the parent's remaining MyFunction task
    assert len(order) == 11
    assert order.count("Reentrant") == 10
    assert order[-1] == "MyFunction"


class DeepReentrant(rt.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        with rt.enable_grad():
            ctx.x = x.detach().requires_grad_()
            ctx.x = ctx.x - 1
        return ctx.x.detach()

    @staticmethod
    def backward(ctx, x):
        if ctx.x.item() < 0:
            return x
        with rt.enable_grad():
            DeepReentrant.apply(ctx.x).sum().backward()
        return x


def test_deep_reentrant():
    # 2000 nested reentrant backwards: far beyond Python's recursion limit if handled
    # recursively on one thread; the engine must hand off to a pool thread.
    v = rt.tensor(2000.0, requires_grad=True)
    DeepReentrant.apply(v).sum().backward()
    assert v.grad.item() == 1.0
    # reuse of the pool works
    v2 = rt.tensor(200.0, requires_grad=True)
    DeepReentrant.apply(v2).sum().backward()
    assert v2.grad.item() == 1.0


def test_deep_reentrant_hands_off_to_other_threads():
    idents = set()

    class Deep(rt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.n = int(x.item())
            return x * 1

        @staticmethod
        def backward(ctx, g):
            idents.add(threading.get_ident())
            if ctx.n > 0:
                with rt.enable_grad():
                    y = rt.tensor(float(ctx.n - 1), requires_grad=True)
                    Deep.apply(y).backward()
            return g

    v = rt.tensor(1000.0, requires_grad=True)
    Deep.apply(v).backward()
    assert v.grad.item() == 1.0
    assert threading.get_ident() in idents
    assert len(idents) > 1  # past the engine's reentrant depth limit, work moves to a pool thread


def test_deep_reentrant_with_grad():
    class DeepGrad(rt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.n = int(x.item())
            return x * 1

        @staticmethod
        def backward(ctx, g):
            if ctx.n <= 0:
                return g
            with rt.enable_grad():
                y = rt.tensor(float(ctx.n - 1), requires_grad=True)
                (gy,) = rt.autograd.grad(DeepGrad.apply(y) * 2.0, [y])
            return g + gy

    v = rt.tensor(1500.0, requires_grad=True)
    DeepGrad.apply(v).backward()
    # each level adds d(2*DeepGrad(y))/dy = 2 + (its own nested contribution)
    assert v.grad.item() == 1.0 + 2.0 * 1500


def test_error_in_backward_reraised_with_same_type_and_node_name():
    class MyBadFn(rt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom from backward")

    x = rt.tensor([1.0], requires_grad=True)
    y = (MyBadFn.apply(x) * 2.0).sum()
    with pytest.raises(ValueError, match="boom from backward") as ei:
        y.backward()
    # runtime requirement (PyTorch re-raises the bare Python exception): the failing
    # node is named, in the message or in an exception note
    text = str(ei.value) + " ".join(getattr(ei.value, "__notes__", []))
    assert "MyBadFnBackward" in text


def test_error_in_reentrant_backward_reraised_in_outer_caller():
    class Inner(rt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            raise KeyError("inner-fail")

    class Outer(rt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            with rt.enable_grad():
                w = rt.tensor([1.0], requires_grad=True)
                Inner.apply(w).sum().backward()
            return g

    x = rt.tensor([1.0], requires_grad=True)
    with pytest.raises(KeyError, match="inner-fail"):
        Outer.apply(x).sum().backward()
    # engine still usable afterwards
    z = rt.tensor([2.0], requires_grad=True)
    (z * z).sum().backward()
    np.testing.assert_allclose(npa(z.grad), [4.0])


# ---------------------------------------------------------------------------
# deep chains (no recursion in backward nor in graph deletion)
# ---------------------------------------------------------------------------


_DEEP_SCRIPT = textwrap.dedent(
    """
    import gc, sys
    import runtime as rt
    N = 150_000
    x = rt.tensor(1.0, dtype=rt.float64, requires_grad=True)
    y = x
    for _ in range(N):
        y = y * 1.0001
    y.backward()
    expected = 1.0001 ** N
    assert abs(x.grad.item() - expected) / expected < 1e-6, (x.grad.item(), expected)
    del y
    gc.collect()
    # build again and delete without running backward
    y = x
    for _ in range(N):
        y = y + 1.0
    assert y.item() == 1.0 + N
    del y
    gc.collect()
    print("DEEP-OK")
    """
)


def test_deep_chain_backward_and_delete():
    # run in a subprocess: a C-stack overflow during deallocation would kill pytest
    proc = subprocess.run(
        [sys.executable, "-c", _DEEP_SCRIPT],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "DEEP-OK" in proc.stdout
    assert "RecursionError" not in proc.stderr


def test_deep_chain_in_process_no_recursion_error():
    n = 20_000  # well past sys.getrecursionlimit()
    assert n > sys.getrecursionlimit()
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    y = x
    for _ in range(n):
        y = y + 1.0
    y.sum().backward()
    np.testing.assert_allclose(npa(x.grad), [1.0, 1.0])
    del y


# ---------------------------------------------------------------------------
# threads
# ---------------------------------------------------------------------------


def _run_threads(target, n):
    errors = []

    def wrap(i):
        try:
            target(i)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    ts = [threading.Thread(target=wrap, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in ts)
    if errors:
        raise errors[0]


def test_threads_separate_graphs():
    results = {}

    def work(i):
        x = rt.tensor([float(i + 1)] * 4, requires_grad=True)
        for _ in range(30):
            y = (x * x * 0.5).sum()
            y.backward()
        results[i] = npa(x.grad).copy()

    _run_threads(work, 8)
    for i in range(8):
        np.testing.assert_allclose(results[i], [30.0 * (i + 1)] * 4)


def test_threads_shared_leaf_accumulates_sum():
    w = rt.tensor([0.0, 0.0, 0.0], requires_grad=True)
    iters = 40

    def work(i):
        c = rt.tensor([float(i + 1)] * 3)
        for _ in range(iters):
            (w * c).sum().backward()

    n = 6
    _run_threads(work, n)
    expected = iters * sum(range(1, n + 1))
    np.testing.assert_allclose(npa(w.grad), [expected] * 3)


def test_threads_shared_graph_with_retain_graph():
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()

    def work(i):
        for _ in range(10):
            y.backward(retain_graph=True)

    _run_threads(work, 4)
    np.testing.assert_allclose(npa(x.grad), [2.0 * 40, 4.0 * 40])


# ---------------------------------------------------------------------------
# anomaly mode
# ---------------------------------------------------------------------------


def test_anomaly_detects_nan_in_builtin_backward():
    x = rt.tensor([0.0, 1.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with rt.autograd.detect_anomaly():
            y = x.sqrt()
            z = (y * 0.0).sum()
            with pytest.raises(RuntimeError) as ei:
                z.backward()
    msg = str(ei.value)
    assert "Function 'SqrtBackward0' returned nan values in its 0th output." in msg
    # the forward op that created the node is reported (PyTorch: warning carrying the
    # forward traceback, "Error detected in SqrtBackward0")
    extra = " ".join(str(m.message) for m in w) + msg + " ".join(getattr(ei.value, "__notes__", []))
    assert "SqrtBackward0" in extra and "sqrt" in extra.replace("SqrtBackward0", "")


def test_anomaly_detects_nan_in_custom_function():
    class NanBack(rt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g * float("nan")

    x = rt.tensor([1.0, 2.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with rt.autograd.detect_anomaly():
            out = NanBack.apply(x).sum()
            with pytest.raises(RuntimeError, match="Function 'NanBackBackward' returned nan values in its 0th output."):
                out.backward()


def test_no_anomaly_mode_nan_propagates_silently():
    x = rt.tensor([0.0, 1.0], requires_grad=True)
    (x.sqrt() * 0.0).sum().backward()
    assert np.isnan(npa(x.grad)[0])
    assert npa(x.grad)[1] == 0.0


def test_set_detect_anomaly_toggle():
    x = rt.tensor([0.0], requires_grad=True)
    rt.autograd.set_detect_anomaly(True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = (x.sqrt() * 0.0).sum()
            with pytest.raises(RuntimeError, match="returned nan values"):
                y.backward()
    finally:
        rt.autograd.set_detect_anomaly(False)
    (x.sqrt() * 0.0).sum().backward()  # no error once disabled


# ---------------------------------------------------------------------------
# scheduling / more reentrant scenarios
# ---------------------------------------------------------------------------


def _recorder(name, order):
    class Rec(rt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            order.append(name)
            return g

    return Rec


def test_ready_nodes_run_in_decreasing_sequence_nr():
    order = []
    A, B, C = (_recorder(n, order) for n in "ABC")
    x = rt.tensor([1.0], requires_grad=True)
    a = A.apply(x)
    b = B.apply(x)
    c = C.apply(x)
    (a + c + b).sum().backward()
    assert order == ["C", "B", "A"]  # newest node first, as PyTorch's ReadyQueue


def test_reentrant_backward_from_tensor_hook():
    w = rt.tensor([2.0], requires_grad=True)
    other = (w * w * w).sum()
    x = rt.tensor([1.0, 1.0], requires_grad=True)
    h = x * 2.0

    def hook(g):
        other.backward()
        return g

    h.register_hook(hook)
    (h * h).sum().backward()
    assert w.grad.item() == 12.0
    np.testing.assert_allclose(npa(x.grad), [8.0, 8.0])


def test_hook_exception_propagates():
    x = rt.tensor([1.0], requires_grad=True)
    h = x * 2.0

    def bad(g):
        raise ArithmeticError("hook failed")

    h.register_hook(bad)
    with pytest.raises(ArithmeticError, match="hook failed"):
        (h * 3.0).sum().backward()


def test_deep_reentrant_error_propagates_through_pool_threads():
    class DeepFail(rt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.n = int(x.item())
            return x * 1

        @staticmethod
        def backward(ctx, g):
            if ctx.n <= 0:
                raise LookupError("bottom reached")
            with rt.enable_grad():
                y = rt.tensor(float(ctx.n - 1), requires_grad=True)
                DeepFail.apply(y).backward()
            return g

    v = rt.tensor(1200.0, requires_grad=True)
    with pytest.raises(LookupError, match="bottom reached"):
        DeepFail.apply(v).backward()
    # engine and pool still healthy
    v2 = rt.tensor(300.0, requires_grad=True)
    DeepReentrant.apply(v2).sum().backward()
    assert v2.grad.item() == 1.0


def test_deep_reentrant_from_two_threads():
    results = {}

    def work(i):
        v = rt.tensor(900.0 + i, requires_grad=True)
        DeepReentrant.apply(v).sum().backward()
        results[i] = v.grad.item()

    _run_threads(work, 2)
    assert results == {0: 1.0, 1: 1.0}


def test_deep_chain_double_backward():
    x = rt.tensor(1.5, dtype=rt.float64, requires_grad=True)
    y = x
    for _ in range(3000):
        y = y * 1.0
    z = y * y
    (g,) = rt.autograd.grad(z, [x], create_graph=True)
    assert g.item() == pytest.approx(3.0)
    (gg,) = rt.autograd.grad(g, [x])
    assert gg.item() == pytest.approx(2.0)


# ---------------------------------------------------------------------------
# which device's thread runs a node
# ---------------------------------------------------------------------------


def _on_fake_cuda(values):
    """A "cuda:0" tensor through the strict fake CuPy (the fake_cuda fixture)."""
    return rt.tensor(values, device="cuda:0")


def test_input_buffer_device_prefers_the_first_gradient_off_the_cpu(fake_cuda):
    from runtime.autograd import InputBuffer

    buf = InputBuffer(3)
    buf.add(0, rt.tensor([1.0]))
    assert buf.device == "cpu"
    buf.add(2, _on_fake_cuda([1.0]))
    assert buf.device == "cuda:0"  # not the CPU gradient that sits in the first slot


def test_node_fed_cpu_and_gpu_gradients_runs_on_the_gpu_worker(fake_cuda):
    threads = []

    class TwoDevices(rt.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * 1.0, b * 1.0

        @staticmethod
        def backward(ctx, ga, gb):
            threads.append(threading.current_thread().name)
            return ga * 2.0, gb * 3.0

    a = rt.tensor([1.0, 2.0], requires_grad=True)
    b = _on_fake_cuda([1.0, 2.0]).requires_grad_()
    out_a, out_b = TwoDevices.apply(a, b)
    rt.autograd.backward([out_a.sum(), out_b.sum()])
    assert threads == ["autograd-cuda:0"]
    np.testing.assert_allclose(npa(a.grad), [2.0, 2.0])
    np.testing.assert_allclose(b.grad.cpu().numpy(), [3.0, 3.0])


# ---------------------------------------------------------------------------
# ReadyQueue, shared with the plan executor
# ---------------------------------------------------------------------------


def test_ready_queue_pops_by_key_then_push_order():
    from runtime.autograd import ReadyQueue

    q = ReadyQueue()
    for key, item in [((1, 5), "a"), ((0, 9), "b"), ((1, 5), "c"), ((0, 1), "d")]:
        q.push(key, item)
    assert [q.pop() for _ in range(4)] == ["d", "b", "a", "c"]
    assert q.pop(block=False) is None


def test_ready_queue_close_drains_then_wakes_every_parked_pop():
    from runtime.autograd import ReadyQueue

    q = ReadyQueue()
    got = []
    threads = [threading.Thread(target=lambda: got.append(q.pop()), daemon=True)
               for _ in range(3)]
    for t in threads:
        t.start()
    while len(q._parked) < 3:
        threading.Event().wait(0.001)
    q.push(0, "item")  # one parked pop takes it
    assert q.unclaimed() <= 0
    q.close()
    for t in threads:
        t.join()
    assert sorted(got, key=str) == [None, None, "item"]
    q2 = ReadyQueue()
    q2.push(0, "left")
    q2.close()
    assert q2.pop() == "left" and q2.pop() is None  # closed: what is left drains first


def test_ready_queue_pop_interrupted_while_parked_leaves_the_queue_consistent():
    import signal

    from runtime.autograd import ReadyQueue

    assert threading.current_thread() is threading.main_thread()
    q = ReadyQueue()

    def interrupt():
        while not q._parked:
            threading.Event().wait(0.001)
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        t = threading.Thread(target=interrupt, daemon=True)
        t.start()
        with pytest.raises(KeyboardInterrupt):
            q.pop()
        t.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert q._parked == [] and q.unclaimed() == 0
    q.push(0, "next")
    assert q.unclaimed() == 1 and q.pop() == "next"


def test_saved_tensors_by_pytorchs_names():
    """A node's saved operands and output read as PyTorch names them (_saved_self,
    _saved_other, _saved_result), freed by a backward without retain_graph."""
    x = rt.ones(2, requires_grad=True)
    w = rt.full((2,), 3.0, requires_grad=True)
    y = x * w
    e = y.exp()
    assert {"_saved_self", "_saved_other"} <= set(dir(y.grad_fn))
    assert y.grad_fn._saved_self is x and y.grad_fn._saved_other is w
    assert e.grad_fn._saved_result.tolist() == e.tolist()
    assert y.grad_fn._raw_saved_self is not None
    with pytest.raises(AttributeError):
        y.grad_fn._saved_weight
    e.sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.grad_fn._saved_self
