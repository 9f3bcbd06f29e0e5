"""Indexing primitives with index tensors as arguments (getitem / index_backward / setitem take
``key`` as a template of ``IndexArg`` placeholders), the argmax / argmin primitives, and Adam /
AdamW steps that read no tensor data in Python (capturable)."""

from __future__ import annotations

import numpy as np
import pytest

import runtime as rt
from runtime import optim
from runtime.autograd.node import Meta
from runtime.ops import functional as F
from runtime.ops import prims as P
from runtime.ops.dispatch import apply

torch = pytest.importorskip("torch")

_R = np.random.default_rng(7)


def _i64(a) -> rt.Tensor:
    return rt.tensor(np.asarray(a, dtype=np.int64))


def _meta(t: rt.Tensor) -> Meta:
    return Meta(tuple(t.shape), t.dtype, t.device)


# ---------------------------------------------------------------- the new signature


def test_index_arg_is_a_hashable_placeholder():
    a, b = P.IndexArg(0), P.IndexArg(0)
    assert a == b and hash(a) == hash(b) and a != P.IndexArg(1)
    assert repr(P.IndexArg(2)) == "IndexArg(2)"
    assert P.index_arg_count((slice(None), P.IndexArg(0), None, P.IndexArg(1))) == 2
    assert P.fill_key((1, P.IndexArg(0)), ["arr"]) == (1, "arr")


def test_getitem_records_index_tensors_as_arguments():
    x = rt.tensor(_R.standard_normal((4, 5)), requires_grad=True)
    idx = _i64([3, 0, 3])
    y = x[1:, idx]
    node = y.grad_fn
    assert node.prim is P.GETITEM
    assert node.attrs["key"] == (slice(1, None), P.IndexArg(0))
    assert len(node.metas) == 2
    assert node.metas[1] == Meta((3,), rt.int64, "cpu")
    # lists, numpy arrays and bool masks become int64 tensor arguments as well
    for key, n in (([0, 2], 1), (np.array([1, 1]), 1), ((_i64([0, 1]), _i64([2, 2])), 2),
                   (rt.tensor([True, False, True, True]), 1),
                   (rt.tensor(np.eye(4, 5, dtype=bool)), 2)):
        node = x[key].grad_fn
        assert P.index_arg_count(node.attrs["key"]) == n, key
        assert all(m.dtype is rt.int64 for m in node.metas[1:]), key
        assert not any(isinstance(k, np.ndarray) for k in node.attrs["key"]), key


def test_basic_getitem_stays_a_view_without_index_args():
    x = rt.tensor(_R.standard_normal((4, 5)))
    y = x[1:, None, ::2]
    assert y._base is x
    assert len(y.grad_fn.metas if y.grad_fn else [None]) == 1
    z = x[_i64([0, 1])]
    assert z._base is None  # advanced indexing copies


def test_primitives_called_directly():
    xa = _R.standard_normal((4, 3, 5))
    x = rt.tensor(xa)
    i0, i1 = _i64([[0, 3], [3, 3]]), _i64([4, 0])
    key = (P.IndexArg(0), slice(None), P.IndexArg(1))
    y = apply(P.GETITEM, x, i0, i1, key=key)
    np.testing.assert_array_equal(y.numpy(), xa[i0.numpy(), :, i1.numpy()])

    g = rt.tensor(_R.standard_normal(y.shape))
    gx = F.index_backward(g, i0, i1, key=key, shape=x.shape)
    ref = np.zeros(xa.shape)
    np.add.at(ref, (i0.numpy(), slice(None), i1.numpy()), g.numpy())
    np.testing.assert_allclose(gx.numpy(), ref)  # repeated (3, 0)... entries accumulate

    v = rt.tensor(_R.standard_normal((5,)))
    s = F.index_put(x, v, _i64([1, 2]), key=(P.IndexArg(0), 0))
    ref = xa.copy()
    ref[[1, 2], 0] = v.numpy()
    np.testing.assert_array_equal(s.numpy(), ref)
    np.testing.assert_array_equal(x.numpy(), xa)  # out of place


@pytest.mark.parametrize(
    ("shape", "key"),
    [
        ((4, 5), lambda: (P.IndexArg(0),)),
        ((4, 5), lambda: (slice(1, None), P.IndexArg(0))),
        ((4, 3, 5), lambda: (P.IndexArg(0), slice(None), P.IndexArg(1))),
        ((4, 3, 5), lambda: (None, P.IndexArg(0), Ellipsis, P.IndexArg(1))),
        ((4, 3, 5), lambda: (1, P.IndexArg(0), P.IndexArg(1))),
        ((4, 3, 5), lambda: (slice(None), P.IndexArg(0), P.IndexArg(1))),
        ((4, 3), lambda: (P.IndexArg(0), 2)),
    ],
)
def test_infer_from_shapes_only(shape, key):
    key = key()
    n = P.index_arg_count(key)
    idx_shapes = [(2, 1, 3), (3,)][:n] if n == 2 else [(2, 2)]
    x = rt.tensor(_R.standard_normal(shape))
    idx = [_i64(_R.integers(0, 2, s)) for s in idx_shapes]
    out = apply(P.GETITEM, x, *idx, key=key)
    metas = [_meta(t) for t in idx]
    assert P.GETITEM.infer(_meta(x), *metas, key=key) == (tuple(out.shape), x.dtype)
    assert P.INDEX_BACKWARD.infer(_meta(out), *metas, key=key, shape=x.shape) == (
        tuple(x.shape), x.dtype)
    assert P.SETITEM.infer(_meta(x), 0.0, *metas, key=key) == (tuple(x.shape), x.dtype)
    with pytest.raises(TypeError):
        P.GETITEM.infer(_meta(x), *[Meta(m.shape, rt.float32, "cpu") for m in metas], key=key)


# ---------------------------------------------------------------- gradients against torch


def _both(fn, *arrays):
    rx = [rt.tensor(a, requires_grad=True) for a in arrays]
    tx = [torch.tensor(a, requires_grad=True) for a in arrays]
    ro, to = fn(rt, rx), fn(torch, tx)
    np.testing.assert_allclose(ro.detach().numpy(), to.detach().numpy(), rtol=1e-12)
    g = _R.standard_normal(tuple(to.shape))
    ro.backward(rt.tensor(g))
    to.backward(torch.tensor(g))
    for r, t in zip(rx, tx, strict=True):
        np.testing.assert_allclose(r.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-14)


def _ix(m, a):
    return m.tensor(np.asarray(a, dtype=np.int64))


GRAD_CASES = {
    "repeat": lambda m, xs: xs[0][_ix(m, [0, 2, 0, 0, 1])],
    "pair_repeat": lambda m, xs: xs[0][_ix(m, [[0, 1], [0, 1]]), _ix(m, [2, 2])],
    "slice_idx_slice": lambda m, xs: xs[0][1:, _ix(m, [2, 0, 2]), ::2],
    "separated": lambda m, xs: xs[0][_ix(m, [1, 1]), :, _ix(m, [0, 3])],
    "int_and_idx": lambda m, xs: xs[0][0, _ix(m, [1, 1, 2])],
    "zero_dim_idx": lambda m, xs: xs[0][_ix(m, 2)],
    "none_idx": lambda m, xs: xs[0][None, _ix(m, [1, 0, 1])],
    "ellipsis_idx": lambda m, xs: xs[0][..., _ix(m, [3, 3])],
    "mask": lambda m, xs: xs[0][m.tensor(np.array([True, False, True]))],
    "setitem_repeat_value": lambda m, xs: _put(m, xs, (_ix(m, [2, 0]),)),
    "setitem_view": lambda m, xs: _put_view(m, xs),
}


def _put(m, xs, key):
    y = xs[0] * 1.0
    y[key] = xs[0][0] * 2.0
    return y * xs[0]


def _put_view(m, xs):
    y = xs[0] * 1.0
    row = y[1]  # a view: the write goes through CopySlices
    row[_ix(m, [0, 2])] = xs[0][2, :2] * 3.0
    return y * xs[0]


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_grads_against_torch(name):
    _both(GRAD_CASES[name], _R.standard_normal((3, 4, 5)))


@pytest.mark.parametrize("name", ["repeat", "separated", "setitem_repeat_value", "setitem_view"])
def test_gradgradcheck(name):
    x = rt.tensor(_R.standard_normal((3, 4, 5)), requires_grad=True)
    assert rt.autograd.gradgradcheck(lambda a: GRAD_CASES[name](rt, [a]), [x])


def test_index_tensor_on_other_device_or_dtype_is_rejected_or_moved():
    x = rt.tensor(_R.standard_normal((3, 4)))
    with pytest.raises(TypeError):
        x[rt.tensor([0.0, 1.0])]
    assert x[_i64([1])].shape == (1, 4)


def test_cross_entropy_picks_the_targets_by_a_masked_row_sum_not_a_gather():
    """Each row's target log-probability is a masked row sum (fused with the softmax when
    compiled), no gather: torch's value, and an out-of-range target still raises."""
    logits = rt.tensor(_R.standard_normal((4, 3)), requires_grad=True)
    target = _i64([2, 0, 2, 1])
    seen = []
    orig = P.GETITEM.impl

    def spy(xp, x, *idx, key):
        seen.append((len(idx), key, [np.asarray(i).dtype for i in idx]))
        return orig(xp, x, *idx, key=key)

    object.__setattr__(P.GETITEM, "impl", spy)
    try:
        loss = rt.nn.functional.cross_entropy(logits, target)
    finally:
        object.__setattr__(P.GETITEM, "impl", orig)
    assert seen == []
    tl = torch.nn.functional.cross_entropy(torch.tensor(logits.detach().numpy()),
                                           torch.tensor(target.numpy()))
    np.testing.assert_allclose(loss.item(), tl.item(), rtol=1e-12)
    with pytest.raises(IndexError):
        rt.nn.functional.cross_entropy(logits, _i64([0, 3, 0, 0]))


# ---------------------------------------------------------------- argmax / argmin


@pytest.mark.parametrize("fn", ["argmax", "argmin"])
def test_argmax_argmin_against_torch(fn):
    a = _R.standard_normal((3, 4, 5)).astype(np.float32)
    ties = np.array([[1.0, 3.0, 3.0, -2.0], [-2.0, -2.0, 0.0, 1.0]], dtype=np.float32)
    for arr in (a, ties):
        t = torch.tensor(arr)
        for dim in (None, *range(-arr.ndim, arr.ndim)):
            for keep in (False, True):
                r = getattr(F, fn)(rt.tensor(arr), dim, keep)
                ref = getattr(torch, fn)(t, dim=dim, keepdim=keep)
                assert r.dtype is rt.int64 and r.grad_fn is None
                assert r.shape == tuple(ref.shape), (dim, keep)
                np.testing.assert_array_equal(r.numpy(), ref.numpy())
                prim = getattr(P, fn.upper())
                axis = None if dim is None else dim % arr.ndim
                assert prim.infer(Meta(arr.shape, rt.float32, "cpu"), axis=axis,
                                  keepdim=keep) == (r.shape, rt.int64)
    m = torch.tensor(a).min(1, keepdim=True)
    rv, ri = rt.tensor(a, requires_grad=True).min(1, keepdim=True)
    np.testing.assert_array_equal(ri.numpy(), m.indices.numpy())
    np.testing.assert_allclose(rv.detach().numpy(), m.values.numpy())
    assert not P.ARGMAX.differentiable and not P.ARGMIN.differentiable


def test_argmax_of_int_and_0d():
    assert F.argmax(_i64([[1, 5], [7, 2]]), 1).numpy().tolist() == [1, 0]
    z = rt.tensor(3.0)
    assert F.argmax(z, 0).shape == () and int(F.argmin(z).numpy()) == 0
    with pytest.raises(IndexError, match=r"^argmax\(\): Expected reduction dim to be specified "
                       r"for input\.numel\(\) == 0\.$"):  # PyTorch's error
        F.argmax(rt.zeros(0))


# ---------------------------------------------------------------- capturable Adam / AdamW


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [("Adam", {}), ("Adam", {"amsgrad": True, "weight_decay": 0.1}),
     ("Adam", {"maximize": True}), ("AdamW", {}), ("AdamW", {"amsgrad": True}),
     ("SGD", {"momentum": 0.9, "nesterov": True, "weight_decay": 0.01})],
)
def test_optimizer_steps_read_no_tensor_data(monkeypatch, name, kwargs):
    rt.manual_seed(0)
    model = rt.nn.Sequential(rt.nn.Linear(4, 8), rt.nn.Tanh(), rt.nn.Linear(8, 2))
    opt = getattr(optim, name)(model.parameters(), lr=0.01, **kwargs)
    x = rt.randn(5, 4)
    tmodel = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    tmodel.load_state_dict({k: torch.tensor(v.numpy().copy())
                            for k, v in model.state_dict().items()})
    topt = getattr(torch.optim, name)(tmodel.parameters(), lr=0.01, foreach=False, **kwargs)
    tx = torch.tensor(x.numpy())

    def forbidden(*_a, **_k):
        raise AssertionError("an optimizer step read tensor data in Python")

    for _ in range(4):
        opt.zero_grad()
        (model(x) ** 2).mean().backward()
        topt.zero_grad()
        (tmodel(tx) ** 2).mean().backward()
        topt.step()
        with monkeypatch.context() as mp:
            for attr in ("item", "__float__", "__int__", "__bool__", "__index__", "tolist",
                         "numpy"):
                mp.setattr(rt.Tensor, attr, forbidden, raising=False)
            opt.step()
    for p, tp in zip(model.parameters(), tmodel.parameters(), strict=True):
        np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
        st = opt.state[p]
        assert all(isinstance(v, rt.Tensor) for v in st.values()), st
        if name == "SGD":
            continue
        assert st["step"].shape == () and st["step"].dtype is rt.float32
        assert float(st["step"].item()) == 4.0
