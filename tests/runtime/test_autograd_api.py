"""rt.autograd.grad / backward API, hooks, retain_grad and grad mode (PyTorch semantics)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import runtime as rt

ACC_NAMES = ("AccumulateGrad", "torch::autograd::AccumulateGrad")


def npa(t):
    return t.detach().numpy()


# ---------------------------------------------------------------------------
# autograd.grad
# ---------------------------------------------------------------------------


def test_grad_returns_tuple_and_does_not_touch_dot_grad():
    x = rt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (x * x).sum()
    res = rt.autograd.grad(y, x)
    assert isinstance(res, tuple) and len(res) == 1
    np.testing.assert_allclose(npa(res[0]), [2.0, 4.0, 6.0])
    assert x.grad is None


def test_grad_wrt_intermediate_tensor():
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3.0
    y = (h * h).sum()
    gh, gx = rt.autograd.grad(y, [h, x])
    np.testing.assert_allclose(npa(gh), 2 * np.array([3.0, 6.0]))
    np.testing.assert_allclose(npa(gx), 2 * np.array([3.0, 6.0]) * 3.0)
    assert x.grad is None and h.grad_fn is not None


def test_grad_allow_unused():
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    z = rt.tensor([5.0], requires_grad=True)
    y = (x * 2.0).sum()
    gx, gz = rt.autograd.grad(y, [x, z], allow_unused=True, retain_graph=True)
    np.testing.assert_allclose(npa(gx), [2.0, 2.0])
    assert gz is None
    gx, gz = rt.autograd.grad(y, [x, z], allow_unused=True, materialize_grads=True,
                              retain_graph=True)
    np.testing.assert_allclose(npa(gz), [0.0])
    with pytest.raises(
        RuntimeError,
        # PyTorch <= 2.12 wording; 2.13 says "The differentiated Tensor at index 1 ..."
        match=r"(One of the differentiated Tensors|The differentiated Tensor at index 1) appears to "
        r"not have been used in the graph\. Set allow_unused=True if this is the desired behavior\.",
    ):
        rt.autograd.grad(y, [x, z])


def test_grad_input_does_not_require_grad():
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    c = rt.tensor([1.0, 2.0])
    y = (x * c).sum()
    with pytest.raises(RuntimeError, match="One of the differentiated Tensors does not require grad"):
        rt.autograd.grad(y, [c])


def test_grad_outputs():
    x = rt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x
    v = rt.tensor([1.0, 0.5, -1.0])
    (g,) = rt.autograd.grad(y, [x], grad_outputs=[v])
    np.testing.assert_allclose(npa(g), 2 * np.array([1.0, 2.0, 3.0]) * [1.0, 0.5, -1.0])
    y2 = x * 2.0
    (g2,) = rt.autograd.grad(y2, x, grad_outputs=v)
    np.testing.assert_allclose(npa(g2), [2.0, 1.0, -2.0])


def test_grad_multiple_outputs():
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    a = (x * x).sum()
    b = (x * 3.0).sum()
    (g,) = rt.autograd.grad([a, b], [x])
    np.testing.assert_allclose(npa(g), [5.0, 7.0])


def test_grad_non_scalar_requires_grad_outputs():
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        rt.autograd.grad(x * 2.0, [x])


# ---------------------------------------------------------------------------
# backward API errors / arguments
# ---------------------------------------------------------------------------


def test_backward_non_scalar_error():
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2.0
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        y.backward()


def test_backward_no_grad_fn_error():
    t = rt.tensor([1.0, 2.0])
    with pytest.raises(
        RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"
    ):
        t.sum().backward()
    x = rt.tensor([1.0], requires_grad=True)
    with pytest.raises(
        RuntimeError, match="element 1 of tensors does not require grad and does not have a grad_fn"
    ):
        rt.autograd.backward([x.sum(), t.sum()])


def test_backward_mismatch_in_shape():
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2.0
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        y.backward(rt.ones(3))
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        rt.autograd.grad(y, [x], grad_outputs=[rt.ones(2, 1)])


def test_backward_with_gradient_argument():
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    y.backward(rt.tensor([3.0, 0.5]))
    np.testing.assert_allclose(npa(x.grad), [6.0, 2.0])


def test_backward_inputs_subset():
    x = rt.tensor([0.5, 0.75], requires_grad=True)
    y = rt.tensor([0.1, 0.9], requires_grad=True)
    z = (x * y).exp().sum()
    rt.autograd.backward([z], inputs=[x])
    np.testing.assert_allclose(npa(x.grad), [0.1 * np.exp(0.05), 0.9 * np.exp(0.675)], rtol=1e-5)
    assert y.grad is None


def test_backward_inputs_non_leaf_fills_grad():
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2.0
    y = (h * h).sum()
    y.backward(inputs=[h])
    np.testing.assert_allclose(npa(h.grad), [4.0, 8.0])
    assert x.grad is None


def test_backward_inputs_empty_error():
    x = rt.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"[`']inputs[`'] argument to `?backward\(\)`? cannot be empty."):
        (x * 2.0).sum().backward(inputs=[])


def test_grad_accumulates_and_can_be_reset():
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    (x * 3.0).sum().backward()
    (x * 3.0).sum().backward()
    np.testing.assert_allclose(npa(x.grad), [6.0, 6.0])
    x.grad = None
    (x * 1.0).sum().backward()
    np.testing.assert_allclose(npa(x.grad), [1.0, 1.0])


def test_requires_grad_only_settable_on_leaves():
    x = rt.tensor([1.0], requires_grad=True)
    y = x * 2.0
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables."):
        y.requires_grad = False
    z = rt.tensor([1.0])
    z.requires_grad = True
    assert z.requires_grad and z.is_leaf


def test_non_leaf_grad_access_warns_and_is_none():
    x = rt.tensor([1.0], requires_grad=True)
    y = x * 2.0
    y.sum().backward()
    with pytest.warns(UserWarning, match="is not a leaf Tensor is being accessed"):
        assert y.grad is None


# ---------------------------------------------------------------------------
# tensor hooks
# ---------------------------------------------------------------------------


def test_leaf_hooks_order_replace_and_remove():
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    calls = []

    def h1(g):
        calls.append(("h1", npa(g).copy()))
        return g * 2.0

    def h2(g):
        calls.append(("h2", npa(g).copy()))
        return g + 1.0

    handle1 = x.register_hook(h1)
    x.register_hook(h2)
    (x * 3.0).sum().backward()
    assert [c[0] for c in calls] == ["h1", "h2"]
    np.testing.assert_allclose(calls[0][1], [3.0, 3.0])
    np.testing.assert_allclose(calls[1][1], [6.0, 6.0])  # h2 sees h1's replacement
    np.testing.assert_allclose(npa(x.grad), [7.0, 7.0])

    handle1.remove()
    calls.clear()
    x.grad = None
    (x * 3.0).sum().backward()
    assert [c[0] for c in calls] == ["h2"]
    np.testing.assert_allclose(npa(x.grad), [4.0, 4.0])


def test_leaf_hook_sees_new_grad_not_accumulated():
    x = rt.tensor([1.0], requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(g.item()))  # returning None keeps the grad
    (x * 2.0).sum().backward()
    (x * 5.0).sum().backward()
    assert seen == [2.0, 5.0]
    assert x.grad.item() == 7.0


def test_non_leaf_hook_replaces_grad_flowing_downstream():
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2.0
    seen = []

    def hook(g):
        seen.append(npa(g).copy())
        return g * 10.0

    y.register_hook(hook)
    (y * y).sum().backward()
    np.testing.assert_allclose(seen[0], [4.0, 8.0])
    np.testing.assert_allclose(npa(x.grad), [80.0, 160.0])


def test_hook_on_tensor_not_requiring_grad_errors():
    t = rt.tensor([1.0])
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
        t.register_hook(lambda g: g)


def test_hooks_with_grad_api():
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1.0
    h.register_hook(lambda g: g * 0.5)
    (gx,) = rt.autograd.grad((h * 4.0).sum(), [x])
    np.testing.assert_allclose(npa(gx), [2.0, 2.0])


# ---------------------------------------------------------------------------
# node hooks
# ---------------------------------------------------------------------------


def test_node_prehook_and_posthook():
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    w = rt.tensor([3.0, 4.0], requires_grad=True)
    y = x * w
    node = y.grad_fn
    assert node.name() == "MulBackward0"
    log = []

    def pre(grad_outputs):
        log.append(("pre", len(grad_outputs), npa(grad_outputs[0]).copy()))
        return (grad_outputs[0] * 2.0,)

    def post(grad_inputs, grad_outputs):
        log.append(("post", len(grad_inputs), npa(grad_outputs[0]).copy()))
        return (grad_inputs[0] + 100.0, grad_inputs[1])

    hpre = node.register_prehook(pre)
    hpost = node.register_hook(post)
    y.sum().backward(retain_graph=True)
    assert [e[0] for e in log] == ["pre", "post"]
    assert log[0][1] == 1 and log[1][1] == 2
    np.testing.assert_allclose(log[0][2], [1.0, 1.0])
    np.testing.assert_allclose(log[1][2], [2.0, 2.0])  # post sees pre's replacement
    np.testing.assert_allclose(npa(x.grad), [106.0, 108.0])
    np.testing.assert_allclose(npa(w.grad), [2.0, 4.0])

    hpre.remove()
    hpost.remove()
    x.grad = None
    w.grad = None
    log.clear()
    y.sum().backward()
    assert log == []
    np.testing.assert_allclose(npa(x.grad), [3.0, 4.0])
    np.testing.assert_allclose(npa(w.grad), [1.0, 2.0])


def test_node_posthook_returning_none_keeps_grads():
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    got = []
    y.grad_fn.register_hook(lambda gi, go: got.append((npa(gi[0]).copy(), npa(go[0]).copy())))
    y.sum().backward()
    np.testing.assert_allclose(got[0][0], np.exp([1.0, 2.0]), rtol=1e-6)
    np.testing.assert_allclose(got[0][1], [1.0, 1.0])
    np.testing.assert_allclose(npa(x.grad), np.exp([1.0, 2.0]), rtol=1e-6)


def test_next_functions_structure():
    x = rt.tensor([1.0], requires_grad=True)
    c = rt.tensor([2.0])
    y = x * c
    nf = y.grad_fn.next_functions
    assert isinstance(nf, tuple) and len(nf) == 2
    assert nf[0][0].name() in ACC_NAMES and nf[0][1] == 0
    assert nf[1] == (None, 0)


# ---------------------------------------------------------------------------
# retain_grad
# ---------------------------------------------------------------------------


def test_retain_grad_non_leaf_and_accumulation():
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2.0
    h.retain_grad()
    assert h.retains_grad
    y = (h * h).sum()
    y.backward(retain_graph=True)
    np.testing.assert_allclose(npa(h.grad), [4.0, 8.0])
    y.backward()
    np.testing.assert_allclose(npa(h.grad), [8.0, 16.0])
    np.testing.assert_allclose(npa(x.grad), [16.0, 32.0])


def test_retain_grad_on_leaf_is_noop():
    x = rt.tensor([1.0], requires_grad=True)
    x.retain_grad()
    assert not x.retains_grad  # leaves always get .grad; retains_grad is for non-leaves
    (x * 2.0).sum().backward()
    assert x.grad.item() == 2.0


def test_retain_grad_sees_hook_result_regardless_of_order():
    # PyTorch 2.x: the retains_grad hook always runs after the other tensor hooks
    x = rt.tensor([1.0], requires_grad=True)
    h = x * 1.0
    h.retain_grad()
    h.register_hook(lambda g: g * 3.0)
    (h * 2.0).sum().backward()
    assert h.grad.item() == 6.0
    assert x.grad.item() == 6.0


# ---------------------------------------------------------------------------
# grad mode
# ---------------------------------------------------------------------------


def test_no_grad_context():
    x = rt.tensor([1.0], requires_grad=True)
    with rt.no_grad():
        assert not rt.is_grad_enabled()
        y = x * 2.0
        leaf = rt.ones(2, requires_grad=True)
        with rt.enable_grad():
            assert rt.is_grad_enabled()
            z = x * 2.0
    assert rt.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None
    assert leaf.requires_grad and leaf.is_leaf
    assert z.requires_grad and z.grad_fn is not None


def test_grad_mode_decorators():
    x = rt.tensor([1.0], requires_grad=True)

    @rt.no_grad()
    def f(t):
        assert not rt.is_grad_enabled()
        return t * 2.0

    @rt.enable_grad()
    def g(t):
        return t * 2.0

    @rt.set_grad_enabled(False)
    def h(t):
        return t * 2.0

    assert not f(x).requires_grad
    assert rt.is_grad_enabled()
    with rt.no_grad():
        assert g(x).requires_grad
        assert not rt.is_grad_enabled()
    assert not h(x).requires_grad
    assert rt.is_grad_enabled()


def test_set_grad_enabled_context_and_call():
    x = rt.tensor([1.0], requires_grad=True)
    with rt.set_grad_enabled(False):
        assert not (x * 2.0).requires_grad
        with rt.set_grad_enabled(True):
            assert (x * 2.0).requires_grad
    assert rt.is_grad_enabled()
    rt.set_grad_enabled(False)  # plain call sets the mode immediately (PyTorch)
    try:
        assert not rt.is_grad_enabled()
        assert not (x * 2.0).requires_grad
    finally:
        rt.set_grad_enabled(True)
    assert rt.is_grad_enabled()


def test_grad_mode_restored_after_exception():
    with pytest.raises(ValueError), rt.no_grad():
        raise ValueError("x")
    assert rt.is_grad_enabled()


def test_grad_mode_is_thread_local():
    entered = threading.Event()
    release = threading.Event()
    seen = {}

    def worker():
        with rt.no_grad():
            seen["worker_inside"] = rt.is_grad_enabled()
            entered.set()
            release.wait(30)
        seen["worker_after"] = rt.is_grad_enabled()

    t = threading.Thread(target=worker)
    t.start()
    assert entered.wait(30)
    x = rt.tensor([1.0], requires_grad=True)
    assert rt.is_grad_enabled()
    assert (x * 2.0).requires_grad
    release.set()
    t.join(30)
    assert seen == {"worker_inside": False, "worker_after": True}

    # a new thread starts with grad enabled even if the spawning thread disabled it
    res = {}
    with rt.no_grad():
        t2 = threading.Thread(target=lambda: res.setdefault("on", rt.is_grad_enabled()))
        t2.start()
        t2.join(30)
    assert res["on"] is True


def test_backward_under_no_grad_still_works():
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    with rt.no_grad():
        y.backward()
    np.testing.assert_allclose(npa(x.grad), [2.0, 4.0])


def test_backward_inputs_unreachable_is_not_an_error():
    x = rt.tensor([1.0], requires_grad=True)
    z = rt.tensor([1.0], requires_grad=True)
    (x * 2.0).sum().backward(inputs=[z])
    assert z.grad is None and x.grad is None


def test_grad_wrt_output_itself_and_duplicate_inputs():
    x = rt.tensor([1.0], requires_grad=True)
    y = (x * 2.0).sum()
    (gy,) = rt.autograd.grad(y, [y])
    assert gy.item() == 1.0
    h = x * 3.0
    yy = (h * h).sum()
    g1, g2 = rt.autograd.grad(yy, [h, h])
    assert g1.item() == 6.0 and g2.item() == 6.0


def test_retain_graph_defaults_to_create_graph():
    x = rt.tensor([1.0, 2.0], dtype=rt.float64, requires_grad=True)
    y = (x.exp() * x).sum()
    rt.autograd.grad(y, [x], create_graph=True)
    (g,) = rt.autograd.grad(y, [x])  # graph retained by the create_graph call
    np.testing.assert_allclose(npa(g), np.exp([1.0, 2.0]) * (1 + np.array([1.0, 2.0])))


def test_hook_result_is_differentiable_under_create_graph():
    x = rt.tensor([2.0], dtype=rt.float64, requires_grad=True)
    h = x * x
    h.register_hook(lambda g: g * x)  # grad of h becomes g*x
    (gx,) = rt.autograd.grad(h.sum() * 1.0, [x], create_graph=True)
    assert gx.item() == 8.0  # (1 * x) * 2x = 2x^2
    (ggx,) = rt.autograd.grad(gx.sum(), [x])
    assert ggx.item() == 8.0  # d(2x^2)/dx = 4x: the hook's product is part of the graph


def test_accumulate_grad_node_hooks():
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    acc = (x * 1.0).grad_fn.next_functions[0][0]
    assert acc.name() in ACC_NAMES
    log = []
    acc.register_prehook(lambda go: log.append(("pre", npa(go[0]).copy(), x.grad)))
    acc.register_hook(lambda gi, go: log.append(("post", gi, npa(go[0]).copy(), npa(x.grad).copy())))
    (x * 3.0).sum().backward()
    assert log[0][0] == "pre" and log[0][2] is None  # before accumulation
    np.testing.assert_allclose(log[0][1], [3.0, 3.0])
    assert log[1][0] == "post" and log[1][1] == ()
    np.testing.assert_allclose(log[1][3], [3.0, 3.0])  # after accumulation


def test_leaf_hook_called_once_with_summed_grad():
    x = rt.tensor([1.0], requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(g.item()))
    (x * 2.0 + x * 3.0 + x.exp() * 0.0).sum().backward()
    assert seen == [5.0]


def test_backward_on_one_element_non_scalar():
    y = rt.tensor([2.0], requires_grad=True)
    (y * 3.0).backward()  # numel() == 1 is enough for an implicit grad
    assert y.grad.item() == 3.0
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        (rt.ones(1, 2, requires_grad=True) * 1.0).backward()


def test_saved_tensors_released_after_backward():
    import gc
    import weakref

    x = rt.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2.0
    wr = weakref.ref(h)
    y = (h * h).sum()
    del h
    gc.collect()
    assert wr() is not None  # kept alive as a saved tensor of MulBackward0
    y.backward()
    gc.collect()
    assert wr() is None  # freed with the graph's buffers
