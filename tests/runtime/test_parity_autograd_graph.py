"""rt.autograd.graph: saved_tensors_hooks, save_on_cpu, disable_saved_tensors_hooks (torch's)."""

from __future__ import annotations

import numpy as np
import pytest

import runtime as rt

G = rt.autograd.graph


def npa(t):
    return t.detach().numpy()


def test_hooks_pack_and_unpack_every_saved_tensor():
    x = rt.tensor([1.0, 2.0], dtype=rt.float64, requires_grad=True)
    w = rt.tensor([3.0, 4.0], dtype=rt.float64, requires_grad=True)
    packed, unpacked = [], []

    def pack(t):
        packed.append(t)
        return t.detach().numpy().copy()  # anything: here a plain array

    def unpack(arr):
        unpacked.append(arr)
        return rt.tensor(arr)

    with G.saved_tensors_hooks(pack, unpack):
        y = (x * w).exp().sum()  # mul saves x and w, exp its output
    assert len(packed) == 3
    y.backward()
    assert len(unpacked) == 3
    e = np.exp(np.array([3.0, 8.0]))
    np.testing.assert_allclose(npa(x.grad), e * [3.0, 4.0])
    np.testing.assert_allclose(npa(w.grad), e * [1.0, 2.0])
    with pytest.raises(RuntimeError, match="^Trying to backward through the graph a second time"):
        y.backward()


def test_pack_hook_runs_without_recording_and_double_backward_flows():
    x = rt.tensor([1.0, 2.0], dtype=rt.float64, requires_grad=True)
    with G.saved_tensors_hooks(lambda t: t * 1, lambda p: p * 1):
        y = (x * x * x).sum()
    (g,) = rt.autograd.grad(y, x, create_graph=True)
    np.testing.assert_allclose(npa(g), [3.0, 12.0])
    (gg,) = rt.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(npa(gg), [6.0, 12.0])


def test_innermost_hooks_apply_and_custom_functions_use_them():
    class Exp(rt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    x = rt.tensor([0.0, 1.0], requires_grad=True)
    seen = []
    with G.saved_tensors_hooks(lambda t: seen.append("outer") or t, lambda p: p):
        with G.saved_tensors_hooks(lambda t: seen.append("inner") or t, lambda p: p):
            a = Exp.apply(x).sum()
        b = x.exp().sum()
    (a + b).backward()
    assert seen == ["inner", "outer"]
    np.testing.assert_allclose(npa(x.grad), 2 * np.exp([0.0, 1.0]), rtol=1e-6)


def test_unpack_must_return_a_tensor_and_no_version_check():
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    with G.saved_tensors_hooks(lambda t: t, lambda p: 3):
        y = (x * x).sum()
    with pytest.raises(TypeError, match="^Output of saved tensor unpack_hook expected to be a "
                       "Tensor but got result of type int"):
        y.backward()
    with G.saved_tensors_hooks(lambda t: t, lambda p: p):
        h = x * 2
        y = (h * h).sum()
    h.add_(1)  # through hooks versions are not tracked (PyTorch neither)
    y.backward()
    np.testing.assert_allclose(npa(x.grad), [12.0, 20.0])


def test_save_on_cpu_and_disable():
    x = rt.tensor([1.0, 2.0], dtype=rt.float64, requires_grad=True)
    with G.save_on_cpu(pin_memory=True):
        (x.exp() * x).sum().backward()
    np.testing.assert_allclose(npa(x.grad), np.exp([1.0, 2.0]) * [2.0, 3.0])
    with G.disable_saved_tensors_hooks("no hooks here"):
        with pytest.raises(RuntimeError, match="^no hooks here$"):
            with G.saved_tensors_hooks(lambda t: t, lambda p: p):
                pass
    with G.saved_tensors_hooks(lambda t: t, lambda p: p):
        with pytest.raises(RuntimeError, match="^inside$"):
            with G.disable_saved_tensors_hooks("inside"):
                pass
    assert isinstance((x * 2).grad_fn, G.Node)


def test_hooks_match_torch():
    torch = pytest.importorskip("torch")

    def run(lib):
        x = lib.tensor([0.5, -1.0], dtype=lib.float64, requires_grad=True)
        w = lib.tensor([2.0, 3.0], dtype=lib.float64, requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t.detach().clone(), lambda p: p):
            y = (x * w).tanh().sum()
        gx, gw = lib.autograd.grad(y, (x, w), create_graph=True)
        (hx,) = lib.autograd.grad((gx * gw).sum(), x)
        return [gx.detach().numpy(), gw.detach().numpy(), hx.numpy()]

    for a, b in zip(run(rt), run(torch)):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_increment_version_makes_a_saved_tensor_stale():
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    w = rt.tensor([3.0, 4.0])
    y = (x * w).sum()
    G.increment_version([w, w])
    assert w._version == 2
    with pytest.raises(RuntimeError, match=r"is at version 2; expected version 0 instead"):
        y.backward()
