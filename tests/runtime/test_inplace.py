"""In-place ops, version counters, views and CopySlices (PyTorch semantics)."""

from __future__ import annotations

import numpy as np
import pytest

import runtime as rt

MODIFIED = "one of the variables needed for gradient computation has been modified by an inplace operation"
LEAF_INPLACE = r"a leaf Variable that requires grad is being used in an in-place operation\."


def npa(t):
    return t.detach().numpy()


# ---------------------------------------------------------------------------
# version counter
# ---------------------------------------------------------------------------


INPLACE_OPS = {
    "add_": lambda t: t.add_(1.0),
    "add_tensor_alpha": lambda t: t.add_(rt.ones(4), alpha=2.0),
    "sub_": lambda t: t.sub_(1.0),
    "mul_": lambda t: t.mul_(2.0),
    "div_": lambda t: t.div_(2.0),
    "zero_": lambda t: t.zero_(),
    "fill_": lambda t: t.fill_(3.0),
    "copy_": lambda t: t.copy_(rt.ones(4)),
    "clamp_": lambda t: t.clamp_(min=0.5, max=1.5),
    "sqrt_": lambda t: t.sqrt_(),
    "neg_": lambda t: t.neg_(),
    "setitem_int": lambda t: t.__setitem__(1, 5.0),
    "setitem_slice": lambda t: t.__setitem__(slice(1, 3), rt.tensor([7.0, 8.0])),
    "setitem_index": lambda t: t.__setitem__(rt.tensor([0, 2]), 9.0),
}


@pytest.mark.parametrize("name", sorted(INPLACE_OPS))
def test_inplace_bumps_version_and_returns_self(name):
    t = rt.tensor([1.0, 2.0, 3.0, 4.0])
    v0 = t._version
    out = INPLACE_OPS[name](t)
    assert t._version == v0 + 1
    if not name.startswith("setitem"):
        assert out is t


def test_inplace_values():
    t = rt.tensor([1.0, 4.0, 9.0, 16.0])
    t.add_(rt.tensor([1.0, 1.0, 1.0, 1.0]), alpha=-1.0)
    np.testing.assert_allclose(npa(t), [0.0, 3.0, 8.0, 15.0])
    t.clamp_(min=1.0, max=10.0)
    np.testing.assert_allclose(npa(t), [1.0, 3.0, 8.0, 10.0])
    t[0] = 4.0
    t.sub_(rt.tensor([0.0, 1.0, 0.0, 0.0]), alpha=2.0)
    np.testing.assert_allclose(npa(t), [4.0, 1.0, 8.0, 10.0])
    t.div_(2.0).mul_(3.0)
    np.testing.assert_allclose(npa(t), [6.0, 1.5, 12.0, 15.0])
    t.fill_(4.0).sqrt_().neg_()
    np.testing.assert_allclose(npa(t), [-2.0] * 4)
    assert t._version == 9


def test_out_of_place_ops_do_not_bump_version():
    t = rt.tensor([1.0, 2.0])
    _ = t + 1.0
    _ = t * t
    _ = t[0:1]
    assert t._version == 0


# ---------------------------------------------------------------------------
# saved tensor checks
# ---------------------------------------------------------------------------


def test_modified_saved_input_raises():
    x = rt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1.0
    z = y * y  # saves y
    y.mul_(2.0)
    with pytest.raises(RuntimeError, match=MODIFIED):
        z.sum().backward()


def test_modified_saved_output_raises():
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()  # ExpBackward0 saves its result
    y.add_(1.0)
    with pytest.raises(RuntimeError, match=MODIFIED):
        y.sum().backward()


def test_modified_tensor_not_saved_is_fine():
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2.0
    z = y + 3.0  # add saves nothing
    y.mul_(2.0)
    z.sum().backward()
    np.testing.assert_allclose(npa(x.grad), [2.0, 2.0])


def test_modified_through_detach_raises_but_data_does_not():
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    x.detach().add_(1.0)  # detach() shares the version counter
    with pytest.raises(RuntimeError, match=MODIFIED):
        y.backward()

    x2 = rt.tensor([1.0, 2.0], requires_grad=True)
    y2 = (x2 * x2).sum()
    x2.data.add_(1.0)  # .data does not share the version counter: silently uses new values
    y2.backward()
    np.testing.assert_allclose(npa(x2.grad), [4.0, 6.0])


def test_inplace_on_non_leaf_graph_is_correct():
    x = rt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1.0
    y.mul_(x)  # y = x**2 via in-place: both paths must be differentiated
    assert y.grad_fn.name() == "MulBackward0"
    assert y._version == 1
    y.sum().backward()
    np.testing.assert_allclose(npa(x.grad), [2.0, 4.0, 6.0])


def test_inplace_chain_vs_torch():
    torch = pytest.importorskip("torch")
    xv = np.array([-1.5, -0.2, 0.4, 2.0], dtype=np.float32)
    res = {}
    for name, mod in (("rt", rt), ("torch", torch)):
        x = mod.tensor(xv, requires_grad=True)
        w = mod.tensor(xv[::-1].copy(), requires_grad=True)
        y = x * 2.0
        y.add_(w, alpha=3.0)
        y.clamp_(min=-1.0, max=3.0)
        y.sub_(x)
        y.div_(w + 4.0)
        y.addcmul_(x, w, value=0.5)
        (y * y).sum().backward()
        res[name] = (npa(y), npa(x.grad), npa(w.grad))
    for a, b in zip(res["rt"], res["torch"]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------
# leaf checks
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "op",
    [
        lambda t: t.add_(1.0),
        lambda t: t.mul_(2.0),
        lambda t: t.zero_(),
        lambda t: t.fill_(1.0),
        lambda t: t.copy_(rt.ones(3)),
        lambda t: t.clamp_(min=0.0),
        lambda t: t.__setitem__(0, 1.0),
    ],
)
def test_inplace_on_leaf_requiring_grad_raises(op):
    x = rt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=LEAF_INPLACE):
        op(x)
    assert x._version == 0
    np.testing.assert_allclose(npa(x), [1.0, 2.0, 3.0])


def test_inplace_on_view_of_leaf_raises():
    x = rt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(
        RuntimeError,
        match=r"a view of a leaf Variable that requires grad is being used in an in-place operation\.",
    ):
        x[0:2].mul_(2.0)


def test_inplace_on_leaf_under_no_grad_allowed():
    x = rt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with rt.no_grad():
        x.mul_(2.0)
        x.add_(1.0)
        x[0] = 0.0
        x[1:].sub_(1.0)
    np.testing.assert_allclose(npa(x), [0.0, 4.0, 6.0])
    assert x.requires_grad and x.is_leaf and x.grad_fn is None
    assert x._version == 4
    (x * x).sum().backward()
    np.testing.assert_allclose(npa(x.grad), [0.0, 8.0, 12.0])


def test_sgd_style_update_under_no_grad():
    w = rt.tensor([1.0, -1.0], requires_grad=True)
    for _ in range(3):
        loss = (w * w).sum()
        loss.backward()
        with rt.no_grad():
            w.sub_(w.grad * 0.25)
        w.grad = None
    np.testing.assert_allclose(npa(w), [0.125, -0.125])


# ---------------------------------------------------------------------------
# views
# ---------------------------------------------------------------------------


def test_basic_slice_view_shares_storage_and_version():
    x = rt.zeros(5)
    v = x[1:3]
    v.fill_(1.0)
    np.testing.assert_allclose(npa(x), [0.0, 1.0, 1.0, 0.0, 0.0])
    assert x._version == v._version == 1
    x.add_(1.0)
    np.testing.assert_allclose(npa(v), [2.0, 2.0])
    assert v._version == x._version == 2


def test_reshape_and_view_of_contiguous_share_storage():
    x = rt.zeros(2, 3)
    r = x.reshape(6)
    r[4] = 5.0
    assert x[1, 1].item() == 5.0
    v = x.view(3, 2)
    v.add_(1.0)
    assert x[1, 1].item() == 6.0
    assert x._version == r._version == v._version == 2


def test_transpose_view_shares_storage():
    m = rt.zeros(2, 3)
    mt = m.transpose(0, 1)
    assert mt.shape == (3, 2)
    mt[0, 1] = 7.0
    assert m[1, 0].item() == 7.0
    m.t()[2, 0].fill_(3.0)
    assert m[0, 2].item() == 3.0
    assert m._version == mt._version == 2


def test_advanced_index_is_a_copy():
    x = rt.zeros(4)
    y = x[rt.tensor([0, 1])]
    y.fill_(1.0)
    np.testing.assert_allclose(npa(x), [0.0] * 4)
    assert x._version == 0


def test_copy_slices_on_non_leaf():
    x = rt.ones(5, requires_grad=True)
    a = x * 1.0
    a[1:3].mul_(2.0)
    assert a.grad_fn.name() in ("CopySlices", "torch::autograd::CopySlices")
    assert a._version == 1
    np.testing.assert_allclose(npa(a), [1.0, 2.0, 2.0, 1.0, 1.0])
    a.sum().backward()
    np.testing.assert_allclose(npa(x.grad), [1.0, 2.0, 2.0, 1.0, 1.0])


def test_copy_slices_with_other_requiring_grad():
    x = rt.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    w = rt.tensor([10.0, 20.0], requires_grad=True)
    a = x * 1.0
    a[1:3].mul_(w)
    (a * a).sum().backward()
    av = np.array([1.0, 20.0, 60.0, 4.0])
    np.testing.assert_allclose(npa(x.grad), 2 * av * [1.0, 10.0, 20.0, 1.0])
    np.testing.assert_allclose(npa(w.grad), 2 * av[1:3] * [2.0, 3.0])


def test_setitem_value_requiring_grad():
    v = rt.tensor([1.0, 2.0], requires_grad=True)
    a = rt.zeros(5)
    a[1:3] = v
    assert a.requires_grad and a.grad_fn is not None
    (a * a).sum().backward()
    np.testing.assert_allclose(npa(v.grad), [2.0, 4.0])


def test_setitem_advanced_index_value_requiring_grad():
    v = rt.tensor([3.0, 5.0], requires_grad=True)
    x = rt.tensor([1.0, 1.0, 1.0, 1.0], requires_grad=True)
    a = x * 2.0
    a[rt.tensor([0, 3])] = v
    np.testing.assert_allclose(npa(a), [3.0, 2.0, 2.0, 5.0])
    (a * rt.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    np.testing.assert_allclose(npa(v.grad), [1.0, 4.0])
    np.testing.assert_allclose(npa(x.grad), [0.0, 4.0, 6.0, 0.0])


def test_setitem_scalar_overwrites_gradient():
    x = rt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a = x * 3.0
    a[0] = 0.0
    a.sum().backward()
    np.testing.assert_allclose(npa(x.grad), [0.0, 3.0, 3.0])


VIEW_SCENARIOS = {}


def _scenario(fn):
    VIEW_SCENARIOS[fn.__name__] = fn
    return fn


@_scenario
def slice_mul_then_square(mod, x, w):
    a = x * 1.0
    a[1:3].mul_(2.0)
    return (a * a).sum()


@_scenario
def view_of_view_inplace(mod, x, w):
    a = x.reshape(2, 3) * 1.0
    a.t()[1].mul_(w[0:2])  # column 1 of a
    return (a * a).sum()


@_scenario
def base_modified_after_view_taken(mod, x, w):
    a = x * 1.0
    v = a[1:4]
    a.mul_(w)  # view v must see the base's new history
    return (v * v).sum()


@_scenario
def view_modified_then_base_used(mod, x, w):
    a = x * 2.0
    v = a[0:3]
    v.add_(w[0:3])
    return (a * a.sin()).sum()


@_scenario
def two_views_inplace(mod, x, w):
    a = x.reshape(2, 3) * 1.0
    a[0].mul_(w[0:3])
    a[:, 2].add_(w[3:5])
    return (a.exp() * a).sum()


@_scenario
def setitem_grad_value_into_nonleaf(mod, x, w):
    a = x.exp()
    b = a * 1.0
    b[2:5] = w[1:4] * 2.0
    return (b * a).sum()


@_scenario
def inplace_on_view_then_view_used(mod, x, w):
    a = x * 1.0
    v = a[1:4]
    v.mul_(w[0:3])
    v.add_(1.0)
    return (v * v).sum() + a.sum()


@_scenario
def transpose_view_inplace(mod, x, w):
    a = (x * 1.0).reshape(2, 3)
    a.T.mul_(w.reshape(3, 2))
    return (a.exp() * x.reshape(2, 3)).sum()


@_scenario
def unsqueeze_permute_views(mod, x, w):
    a = (x * 2.0).reshape(2, 3)
    b = a.unsqueeze(0).permute(2, 0, 1)  # (3, 1, 2) view
    b[1].mul_(w[0:2])
    return (a * a).sum()


@pytest.mark.parametrize("name", sorted(VIEW_SCENARIOS))
def test_view_inplace_scenarios_vs_torch(name):
    torch = pytest.importorskip("torch")
    xv = np.array([0.5, -1.0, 1.5, 2.0, -0.3, 0.8])
    wv = np.array([1.2, -0.7, 0.4, 2.5, -1.1, 0.9])
    res = {}
    for mname, mod in (("rt", rt), ("torch", torch)):
        x = mod.tensor(xv, requires_grad=True)
        w = mod.tensor(wv, requires_grad=True)
        out = VIEW_SCENARIOS[name](mod, x, w)
        out.backward()
        res[mname] = (
            out.item(),
            npa(x.grad),
            None if w.grad is None else npa(w.grad),
        )
    assert res["rt"][0] == pytest.approx(res["torch"][0], rel=1e-10)
    np.testing.assert_allclose(res["rt"][1], res["torch"][1], rtol=1e-10, atol=1e-12)
    if res["torch"][2] is None:
        assert res["rt"][2] is None
    else:
        np.testing.assert_allclose(res["rt"][2], res["torch"][2], rtol=1e-10, atol=1e-12)


def test_view_of_saved_tensor_modified_raises():
    x = rt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a = x * 1.0
    b = a * a  # saves a
    a[0:1].mul_(2.0)  # modifies a through a view -> shared version counter
    with pytest.raises(RuntimeError, match=MODIFIED):
        b.sum().backward()


def test_view_ops_share_storage_and_copies_do_not():
    x = rt.zeros(2, 3)
    u = x.unsqueeze(0)
    p = x.permute(1, 0)
    f = x.flatten()
    u[0, 1, 2] = 1.0
    assert x[1, 2].item() == 1.0
    p[0, 1] = 2.0
    assert x[1, 0].item() == 2.0
    f[0] = 3.0
    assert x[0, 0].item() == 3.0
    assert x._version == u._version == p._version == f._version == 3
    # reshape of a non-contiguous tensor, clone and advanced indexing copy
    r = x.t().reshape(6)
    c = x.clone()
    r.fill_(9.0)
    c.fill_(9.0)
    assert x[0, 0].item() == 3.0
    assert x._version == 3


def test_detach_of_view_inplace_modifies_base():
    x = rt.zeros(4)
    d = x[1:3].detach()
    d.fill_(5.0)
    np.testing.assert_allclose(npa(x), [0.0, 5.0, 5.0, 0.0])
    assert x._version == 1


def test_inplace_on_expanded_tensor_raises():
    e = rt.zeros(1).expand(3)
    with pytest.raises(
        RuntimeError,
        match="unsupported operation: more than one element of the written-to tensor refers to a "
        r"single memory location. Please clone\(\) the tensor before performing the operation.",
    ):
        e.add_(1.0)


def test_view_inplace_double_backward():
    x = rt.tensor([1.0, 2.0, 3.0], dtype=rt.float64, requires_grad=True)
    a = x * 1.0
    a[0:2].mul_(x[1:3])  # a = [x0*x1, x1*x2, x2]
    y = (a * a).sum()
    (g,) = rt.autograd.grad(y, [x], create_graph=True)
    x0, x1, x2 = 1.0, 2.0, 3.0
    np.testing.assert_allclose(
        npa(g), [2 * x0 * x1 * x1, 2 * x0 * x0 * x1 + 2 * x1 * x2 * x2, 2 * x1 * x1 * x2 + 2 * x2]
    )
    (gg,) = rt.autograd.grad(g.sum(), [x])
    # d/dx of sum(g)
    np.testing.assert_allclose(
        npa(gg),
        [2 * x1 * x1 + 4 * x0 * x1,
         4 * x0 * x1 + 2 * x0 * x0 + 2 * x2 * x2 + 4 * x1 * x2,
         4 * x1 * x2 + 2 * x1 * x1 + 2],
    )


def test_inplace_with_self_as_other_raises_like_torch():
    # mul_(self, other=self) saves `other`, which is the tensor being written: PyTorch refuses
    x = rt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a = x * 1.0
    a.mul_(a)
    np.testing.assert_allclose(npa(a), [1.0, 4.0, 9.0])
    with pytest.raises(RuntimeError, match=MODIFIED):
        a.sum().backward()


def _retained_after_inplace(lib):
    """.grad of tensors that retain it, after in-place writes to them, a view of them, or
    their base (PyTorch moves the retains_grad hook onto the new node: rebase_history)."""
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2
    h.retain_grad()
    h.mul_(3)
    (h * h).sum().backward()
    a = h.grad
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2
    h.retain_grad()
    h[:1].mul_(5)
    (h * 1).sum().backward()
    b = h.grad
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2
    v = h[1:]
    v.retain_grad()
    h.mul_(3)
    (v * v).sum().backward()
    return [t.detach().numpy() for t in (a, b, v.grad, x.grad)]


def test_retain_grad_follows_inplace_writes():
    got = _retained_after_inplace(rt)
    # by hand: h = 6x, loss = h^2: dh = 2h = [12, 24]; h * 1: ones; v = 6 x[1]: 2 v = 24
    for g, want in zip(got, ([12.0, 24.0], [1.0, 1.0], [24.0], [0.0, 144.0]), strict=True):
        np.testing.assert_array_equal(g, want)
    torch = pytest.importorskip("torch")
    for g, want in zip(got, _retained_after_inplace(torch), strict=True):
        np.testing.assert_array_equal(g, want)


def test_inplace_on_an_empty_tensor_is_no_overlap():
    """numpy gives an empty array stride 0 on every axis: no element overlaps another, so an
    in-place op (and clipping an empty gradient) runs, as PyTorch's does."""
    t = rt.tensor(np.ones((2, 0, 3), np.float32))
    assert t.mul_(2.0).shape == (2, 0, 3)
    p = rt.nn.Parameter(rt.ones(0, 3))
    p.grad = rt.ones(0, 3)
    assert float(rt.nn.utils.clip_grad_norm_([p], 1.0)) == 0.0
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        rt.ones(1, 3).expand(2, 3).mul_(2)
