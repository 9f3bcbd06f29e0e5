"""rt.autograd.Function (custom autograd functions), PyTorch semantics."""

from __future__ import annotations

import numpy as np
import pytest

import runtime as rt

Function = rt.autograd.Function


def npa(t):
    return t.detach().numpy()


class MyMul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g * b, g * a


def test_save_for_backward_and_grad_fn_name():
    a = rt.tensor([1.0, 2.0], requires_grad=True)
    b = rt.tensor([3.0, 4.0], requires_grad=True)
    out = MyMul.apply(a, b)
    assert out.grad_fn.name() == "MyMulBackward"
    assert out.requires_grad and not out.is_leaf
    np.testing.assert_allclose(npa(out), [3.0, 8.0])
    out.sum().backward()
    np.testing.assert_allclose(npa(a.grad), [3.0, 4.0])
    np.testing.assert_allclose(npa(b.grad), [1.0, 2.0])


def test_saved_tensors_freed_after_backward():
    a = rt.tensor([1.0, 2.0], requires_grad=True)
    b = rt.tensor([3.0, 4.0], requires_grad=True)
    out = MyMul.apply(a, b).sum()
    out.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        out.backward()


def test_custom_function_retain_graph():
    a = rt.tensor([1.0, 2.0], requires_grad=True)
    b = rt.tensor([3.0, 4.0], requires_grad=True)
    out = MyMul.apply(a, b).sum()
    out.backward(retain_graph=True)
    out.backward()
    np.testing.assert_allclose(npa(a.grad), [6.0, 8.0])


def test_forward_runs_without_grad_and_ctx_attributes():
    seen = {}

    class Fn(Function):
        @staticmethod
        def forward(ctx, x, scale):
            seen["grad_enabled"] = rt.is_grad_enabled()
            ctx.scale = scale
            return x * scale

        @staticmethod
        def backward(ctx, g):
            return g * ctx.scale, None

    x = rt.tensor([1.0, 2.0], requires_grad=True)
    y = Fn.apply(x, 3.0)
    assert seen["grad_enabled"] is False
    y.sum().backward()
    np.testing.assert_allclose(npa(x.grad), [3.0, 3.0])


def test_needs_input_grad():
    seen = []

    class Fn(Function):
        @staticmethod
        def forward(ctx, a, b, k):
            return a * b * k

        @staticmethod
        def backward(ctx, g):
            seen.append(ctx.needs_input_grad)
            return g, g, None

    a = rt.tensor([1.0], requires_grad=True)
    b = rt.tensor([2.0])
    Fn.apply(a, b, 2.0).sum().backward()
    assert seen == [(True, False, False)]


def test_output_does_not_require_grad_without_grad_inputs_or_under_no_grad():
    a = rt.tensor([1.0])
    b = rt.tensor([2.0])
    out = MyMul.apply(a, b)
    assert not out.requires_grad and out.grad_fn is None
    a2 = rt.tensor([1.0], requires_grad=True)
    with rt.no_grad():
        out2 = MyMul.apply(a2, b)
    assert not out2.requires_grad and out2.grad_fn is None


def test_returning_none_grad():
    class Fn(Function):
        @staticmethod
        def forward(ctx, a, b):
            return a + b

        @staticmethod
        def backward(ctx, g):
            return g, None

    a = rt.tensor([1.0], requires_grad=True)
    b = rt.tensor([2.0], requires_grad=True)
    Fn.apply(a, b).sum().backward()
    assert a.grad.item() == 1.0
    assert b.grad is None


def test_wrong_number_of_grads():
    class Fn(Function):
        @staticmethod
        def forward(ctx, a, b):
            return a + b

        @staticmethod
        def backward(ctx, g):
            return (g,)

    a = rt.tensor([1.0], requires_grad=True)
    b = rt.tensor([2.0], requires_grad=True)
    with pytest.raises(
        RuntimeError, match=r"function FnBackward returned an incorrect number of gradients \(expected 2, got 1\)"
    ):
        Fn.apply(a, b).sum().backward()


def test_wrong_grad_shape():
    class Fn(Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2.0

        @staticmethod
        def backward(ctx, g):
            return rt.ones(2)

    a = rt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="Function FnBackward returned an invalid gradient at index 0"):
        Fn.apply(a).sum().backward()


def test_backward_grad_broadcastable_is_reduced():
    # a gradient that is expandable to the input shape is summed down (PyTorch's validate_outputs)
    class Fn(Function):
        @staticmethod
        def forward(ctx, a):
            return a.sum()

        @staticmethod
        def backward(ctx, g):
            return g.expand(4, 3) * 1.0  # input is (3,)

    a = rt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    Fn.apply(a).backward()
    np.testing.assert_allclose(npa(a.grad), [4.0, 4.0, 4.0])


def test_mark_dirty():
    class AddOneInplace(Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1.0)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2.0

    x = rt.tensor([1.0, 2.0], requires_grad=True)
    a = x * 1.0
    v0 = a._version
    out = AddOneInplace.apply(a)
    assert out is a
    assert a._version > v0  # (PyTorch bumps twice: add_ and mark_dirty)
    assert a.grad_fn.name() == "AddOneInplaceBackward"
    np.testing.assert_allclose(npa(a), [2.0, 3.0])
    a.sum().backward()
    np.testing.assert_allclose(npa(x.grad), [2.0, 2.0])


def test_mark_dirty_on_leaf_requiring_grad_raises():
    class AddOneInplace(Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1.0)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    x = rt.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(
        RuntimeError, match=r"a leaf Variable that requires grad has been used in an in-place operation\."
    ):
        AddOneInplace.apply(x)


def test_mark_non_differentiable():
    seen = []

    class MaxWithMask(Function):
        @staticmethod
        def forward(ctx, x):
            mask = x > 0
            ctx.mark_non_differentiable(mask)
            ctx.save_for_backward(mask)
            return x * 2.0, mask

        @staticmethod
        def backward(ctx, g, g_mask):
            seen.append(g_mask)
            return g * 2.0

    x = rt.tensor([-1.0, 2.0], requires_grad=True)
    y, mask = MaxWithMask.apply(x)
    assert y.requires_grad
    assert not mask.requires_grad and mask.grad_fn is None
    y.sum().backward()
    np.testing.assert_allclose(npa(x.grad), [2.0, 2.0])
    # the non-differentiable output's gradient is materialized as zeros
    assert seen[0] is not None
    np.testing.assert_allclose(npa(seen[0]), [0.0, 0.0])


def test_non_differentiable_float_output():
    class Fn(Function):
        @staticmethod
        def forward(ctx, x):
            stats = x.detach() * 0.0 + 1.0
            ctx.mark_non_differentiable(stats)
            return x * 3.0, stats

        @staticmethod
        def backward(ctx, g, g2):
            return g * 3.0

    x = rt.tensor([1.0], requires_grad=True)
    y, s = Fn.apply(x)
    assert not s.requires_grad
    (y + s).sum().backward()
    assert x.grad.item() == 3.0


def test_materialize_grads_default_and_disabled():
    seen = []

    class TwoOut(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0, x * 3.0

        @staticmethod
        def backward(ctx, g1, g2):
            seen.append((g1, g2))
            out = 0.0
            if g1 is not None:
                out = out + g1 * 2.0
            if g2 is not None:
                out = out + g2 * 3.0
            return out

    class TwoOutNoMat(TwoOut):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2.0, x * 3.0

    x = rt.tensor([1.0, 1.0], requires_grad=True)
    a, _ = TwoOut.apply(x)
    a.sum().backward()
    _g1, g2 = seen[-1]
    np.testing.assert_allclose(npa(g2), [0.0, 0.0])
    np.testing.assert_allclose(npa(x.grad), [2.0, 2.0])

    x.grad = None
    a, _ = TwoOutNoMat.apply(x)
    a.sum().backward()
    _g1, g2 = seen[-1]
    assert g2 is None
    np.testing.assert_allclose(npa(x.grad), [2.0, 2.0])


def test_identity_returning_input_creates_new_node():
    class Identity(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 5.0

    x = rt.tensor([1.0, 2.0], requires_grad=True)
    y = Identity.apply(x)
    assert y is not x
    assert y.grad_fn is not None and y.grad_fn.name() == "IdentityBackward"
    assert x.is_leaf and x.grad_fn is None
    y.sum().backward()
    np.testing.assert_allclose(npa(x.grad), [5.0, 5.0])


def test_double_backward_through_custom_function():
    class Cube(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3.0 * x ** 2

    x = rt.tensor([1.0, 2.0], dtype=rt.float64, requires_grad=True)
    (g,) = rt.autograd.grad(Cube.apply(x).sum(), [x], create_graph=True)
    assert g.requires_grad
    np.testing.assert_allclose(npa(g), [3.0, 12.0])
    (gg,) = rt.autograd.grad(g.sum(), [x])
    np.testing.assert_allclose(npa(gg), [6.0, 12.0])
    assert rt.autograd.gradcheck(Cube.apply, (x,))
    assert rt.autograd.gradgradcheck(Cube.apply, (x,))


def test_once_differentiable():
    once_differentiable = rt.autograd.function.once_differentiable

    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            assert not rt.is_grad_enabled()
            return g * 2.0 * x

    x = rt.tensor([1.0, 3.0], requires_grad=True)
    Square.apply(x).sum().backward()
    np.testing.assert_allclose(npa(x.grad), [2.0, 6.0])

    # backward ran under no_grad: with a constant grad_output the result is a constant
    (g0,) = rt.autograd.grad(Square.apply(x).sum(), [x], create_graph=True)
    assert not g0.requires_grad
    # with a grad_output requiring grad the result is wired to a DelayedError node
    v = rt.ones(2, requires_grad=True)
    (g,) = rt.autograd.grad(Square.apply(x), [x], grad_outputs=[v], create_graph=True)
    assert g.requires_grad
    np.testing.assert_allclose(npa(g), [2.0, 6.0])
    with pytest.raises(
        RuntimeError, match="trying to differentiate twice a function that was marked with @once_differentiable"
    ):
        g.sum().backward()


def test_custom_function_in_chain_vs_torch():
    torch = pytest.importorskip("torch")

    def make(mod):
        class MyExp(mod.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                r = x.exp()
                ctx.save_for_backward(r)
                return r

            @staticmethod
            def backward(ctx, g):
                (r,) = ctx.saved_tensors
                return g * r

        class ScaleShift(mod.autograd.Function):
            @staticmethod
            def forward(ctx, x, w, k):
                ctx.k = k
                ctx.save_for_backward(x, w)
                return x * w + k

            @staticmethod
            def backward(ctx, g):
                x, w = ctx.saved_tensors
                gx = g * w if ctx.needs_input_grad[0] else None
                gw = (g * x).sum(0) if ctx.needs_input_grad[1] else None
                return gx, gw, None

        return MyExp, ScaleShift

    xv = np.array([[0.1, -0.4, 0.7], [1.2, 0.3, -0.8]])
    wv = np.array([0.5, -1.5, 2.0])
    res = {}
    for name, mod in (("rt", rt), ("torch", torch)):
        MyExp, ScaleShift = make(mod)
        x = mod.tensor(xv, requires_grad=True)
        w = mod.tensor(wv, requires_grad=True)
        h = MyExp.apply(x.sin())
        z = ScaleShift.apply(h, w, 0.25)
        loss = (z.tanh() * h).sum() + (z * z).mean()
        loss.backward()
        res[name] = (loss.item(), npa(x.grad), npa(w.grad))
    assert res["rt"][0] == pytest.approx(res["torch"][0], rel=1e-12)
    np.testing.assert_allclose(res["rt"][1], res["torch"][1], rtol=1e-10)
    np.testing.assert_allclose(res["rt"][2], res["torch"][2], rtol=1e-10)


def test_saved_output_modified_inplace_raises():
    class Exp(Function):
        @staticmethod
        def forward(ctx, x):
            r = x.exp()
            ctx.save_for_backward(r)
            return r

        @staticmethod
        def backward(ctx, g):
            (r,) = ctx.saved_tensors
            return g * r

    x = rt.tensor([1.0, 2.0], requires_grad=True)
    y = Exp.apply(x)
    y.mul_(2.0)
    with pytest.raises(
        RuntimeError,
        match="one of the variables needed for gradient computation has been modified by an inplace operation",
    ):
        y.sum().backward()


def test_function_hooks_and_next_functions():
    a = rt.tensor([1.0, 2.0], requires_grad=True)
    b = rt.tensor([3.0, 4.0])
    out = MyMul.apply(a * 1.0, b)
    nf = out.grad_fn.next_functions
    assert len(nf) == 2
    assert nf[0][0].name() == "MulBackward0"
    assert nf[1][0] is None
    seen = []
    out.grad_fn.register_prehook(lambda go: seen.append("pre"))
    out.grad_fn.register_hook(lambda gi, go: seen.append("post"))
    out.sum().backward()
    assert seen == ["pre", "post"]
    np.testing.assert_allclose(npa(a.grad), [3.0, 4.0])


def test_gradcheck_custom_function_multiple_inputs():
    a = rt.tensor(np.array([0.3, -0.2]), dtype=rt.float64, requires_grad=True)
    b = rt.tensor(np.array([1.1, 0.6]), dtype=rt.float64, requires_grad=True)
    assert rt.autograd.gradcheck(MyMul.apply, (a, b))
    assert rt.autograd.gradgradcheck(MyMul.apply, (a, b))
