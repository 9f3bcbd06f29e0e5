"""Pickling and deep-copying tensors, views included, as PyTorch does."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")


def _pair(mod):  # a base and a strided view of it, built the same way in both libraries
    x = mod.arange(12.0).reshape(3, 4)
    return x, x[1:, ::2]


@pytest.mark.parametrize("mod", [rt, torch])
def test_view_pickles_alone(mod):
    _, v = _pair(mod)
    w = pickle.loads(pickle.dumps(v))
    np.testing.assert_array_equal(np.asarray(w.tolist()), np.asarray(v.tolist()))
    assert tuple(w.stride()) == (4, 2) and w.storage_offset() == 4
    assert w.is_leaf and w._version == 1 and w._base is None


def test_pickle_matches_torch_on_sharing_and_version():
    got = []
    for mod in (rt, torch):
        x, v = _pair(mod)
        b, w = pickle.loads(pickle.dumps((x, v)))
        w[0, 0] = 100.0  # one pickle of both: torch gives each its own storage
        got.append((b.tolist(), w.tolist(), b._version, w._version))
    assert got[0] == got[1]


def test_pickle_keeps_requires_grad_and_attrs_drops_grad_and_history():
    got = []
    for mod in (rt, torch):
        y = mod.ones(3, requires_grad=True)
        y.grad = mod.full((3,), 2.0)
        y.tag = "w"
        z = y * 2
        yy, zz, vv = pickle.loads(pickle.dumps((y, z, y[1:])))
        got.append((yy.requires_grad, yy.grad is None, yy.tag, zz.requires_grad, zz.is_leaf,
                    vv.requires_grad, vv.is_leaf, zz.tolist()))
    assert got[0] == got[1]


def test_pickle_parameter_and_dtypes():
    p = pickle.loads(pickle.dumps(rt.nn.Parameter(rt.ones(2))))
    assert type(p) is rt.nn.Parameter and p.requires_grad
    for dt in (rt.bfloat16, rt.float16, rt.int8, rt.bool, rt.int64):
        t = rt.ones(2, 3, dtype=dt).t()
        u = pickle.loads(pickle.dumps(t))
        assert u.dtype is dt and u.shape == t.shape and u.stride() == t.stride()
        assert rt.equal(u, t)


def test_deepcopy_shares_storage_of_base_and_view_like_torch():
    got = []
    for mod in (rt, torch):
        x, v = _pair(mod)
        x.requires_grad_(False)
        d = copy.deepcopy((x, v))
        d[1][0, 0] = -1.0  # copied together: one storage
        dv = copy.deepcopy(v)
        dv[0, 0] = -2.0  # copied alone: its own
        got.append((d[0].tolist(), x.tolist(), dv.storage_offset(), tuple(dv.stride()),
                    d[0]._version, dv._version))
    assert got[0] == got[1]


def test_deepcopy_grad_attrs_and_nonleaf_error():
    texts = []
    for mod in (rt, torch):
        y = mod.ones(3, requires_grad=True)
        y.grad = mod.full((3,), 2.0)
        y.tag = [1]
        c = copy.deepcopy(y)
        assert c.grad.tolist() == [2.0] * 3 and c.tag == [1] and c.tag is not y.tag
        assert c.requires_grad and c.is_leaf
        with pytest.raises(RuntimeError) as e:
            copy.deepcopy(y[1:])
        texts.append(str(e.value))
    assert texts[0] == texts[1]
