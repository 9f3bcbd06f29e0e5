"""Differences from PyTorch found by running PyTorch's OpInfo sample inputs through rt
(``tools/opinfo_diff.py``): each case against torch's result where torch is importable, and
against the values PyTorch 2.13 gives otherwise."""

from __future__ import annotations

import pytest

import runtime as rt


def test_squeeze_of_no_dims_squeezes_none():
    x = rt.zeros(1, 2, 1)
    assert tuple(x.squeeze(()).shape) == (1, 2, 1)
    assert tuple(rt.squeeze(x, []).shape) == (1, 2, 1)
    assert tuple(x.squeeze((0, 2)).shape) == (2,)
    assert tuple(x.squeeze().shape) == (2,)


@pytest.mark.parametrize("fn", ["index_copy", "select_scatter", "slice_scatter"])
def test_bool_index_copy_and_scatters(fn):
    x = rt.tensor([True, False, True])
    if fn == "index_copy":
        out = x.index_copy(0, rt.tensor([1, 2]), rt.tensor([True, False]))
        want = [True, True, False]
    elif fn == "select_scatter":
        out = rt.select_scatter(x, rt.tensor(False), 0, 0)
        want = [False, False, True]
    else:
        out = rt.slice_scatter(x, rt.tensor([False, True]), 0, 0, 2)
        want = [False, True, True]
    assert out.dtype is rt.bool and out.tolist() == want


def test_isclose_of_bools_and_ints_computes_in_the_default_float_dtype():
    assert rt.isclose(rt.tensor([True, False]), rt.tensor([True, True])).tolist() == [True, False]
    assert rt.isclose(rt.tensor([True]), rt.tensor([False]), atol=2).tolist() == [True]
    u8 = rt.uint8
    # 1 - 3 does not wrap around to 254
    assert rt.isclose(rt.tensor([1], dtype=u8), rt.tensor([3], dtype=u8), atol=2).tolist() == [True]
    # int64 values past float32's precision compare as float32 values, as PyTorch's
    big = rt.tensor([2 ** 40 + 1]), rt.tensor([2 ** 40])
    assert rt.isclose(*big, atol=0.5, rtol=0).tolist() == [True]
    prev = rt.get_default_dtype()
    rt.set_default_dtype(rt.float64)
    try:
        assert rt.isclose(*big, atol=0.5, rtol=0).tolist() == [False]
    finally:
        rt.set_default_dtype(prev)
    assert rt.allclose(rt.tensor([1, 2]), rt.tensor([1, 2]))


def test_take_along_dim_takes_indices_modulo_the_dim():
    x = rt.arange(25.0).reshape(5, 5)
    for v, col in ((-1, 4), (-5, 0), (-7, 3), (5, 0), (7, 2), (2, 2)):
        got = rt.take_along_dim(x, rt.full((5, 1), v), 1).flatten().tolist()
        assert got == [float(5 * r + col) for r in range(5)], v
    assert rt.take_along_dim(x, rt.full((1, 5), -1), 0).flatten().tolist() == [20., 21., 22., 23., 24.]
    with pytest.raises(RuntimeError, match="index -1 is out of bounds for dimension 0 with size 25"):
        rt.take_along_dim(x, rt.tensor([-1, 3]))  # flattened: checked, as PyTorch's
    w = rt.arange(25.0).reshape(5, 5).requires_grad_()
    rt.take_along_dim(w, rt.full((5, 1), -1), 1).sum().backward()
    assert w.grad[:, 4].tolist() == [1.0] * 5 and float(w.grad.sum()) == 5.0


def test_unique_inverse_of_a_0d_input_is_0d():
    values, inverse, counts = rt.unique(rt.tensor(3.0), return_inverse=True, return_counts=True)
    assert values.tolist() == [3.0] and tuple(inverse.shape) == () and int(inverse) == 0
    assert counts.tolist() == [1]


def test_cov_and_corrcoef_of_one_variable_are_0d():
    assert tuple(rt.cov(rt.tensor([[1.0, 2.0]])).shape) == ()
    assert float(rt.cov(rt.tensor([[1.0, 2.0]]))) == 0.5
    assert tuple(rt.corrcoef(rt.tensor([[1.0, 2.0]])).shape) == ()
    assert tuple(rt.cov(rt.tensor([[1.0, 2.0], [3.0, 1.0]])).shape) == (2, 2)


@pytest.mark.parametrize("kw", [dict(beta=0.5, alpha=1.7), dict(beta=1.5, alpha=2.7),
                                dict(beta=0, alpha=2)])
def test_integer_products_truncate_float_beta_and_alpha(kw):
    a = rt.arange(4).reshape(2, 2)
    beta, alpha = int(kw["beta"]), int(kw["alpha"])
    mm = [[2, 3], [6, 11]]
    want = [[beta * a[i][j].item() + alpha * mm[i][j] for j in range(2)] for i in range(2)]
    assert rt.addmm(a, a, a, **kw).tolist() == want
    assert rt.addmm(a, a, a, **kw).dtype is rt.int64
    assert rt.baddbmm(a[None], a[None], a[None], **kw).tolist() == [want]
    assert rt.addbmm(a, a[None], a[None], **kw).tolist() == want
    assert rt.addmv(a[0], a, a[1], **kw).tolist() == [beta * 0 + alpha * 3, beta * 1 + alpha * 13]


def test_addr_of_bools_is_logical_and_refuses_float_scalars_for_integers():
    b, t = rt.tensor([True, False]), rt.tensor([True, True])
    ones, zeros = rt.ones(2, 2, dtype=rt.bool), rt.zeros(2, 2, dtype=rt.bool)
    assert rt.addr(zeros, b, t).tolist() == [[True, True], [False, False]]
    assert rt.addr(ones, b, t, beta=0).tolist() == [[True, True], [False, False]]
    assert rt.addr(ones, b, t, alpha=False).tolist() == [[True, True], [True, True]]
    assert rt.addr(zeros, b, t, alpha=False).dtype is rt.bool
    z = rt.zeros(2, 2, dtype=rt.int64)
    with pytest.raises(RuntimeError, match="For integral input tensors, argument alpha must not "
                                           "be a floating point number."):
        rt.addr(z, z[0], z[0], alpha=0.5)
    with pytest.raises(RuntimeError, match="argument beta must not"):
        rt.addr(zeros, b, t, beta=0.5)


def test_against_torch():
    torch = pytest.importorskip("torch")
    x = torch.arange(25.0).reshape(5, 5)
    for v in (-11, -6, -1, 6):
        idx = torch.full((5, 2), v)
        assert rt.take_along_dim(rt.arange(25.0).reshape(5, 5), rt.full((5, 2), v), 1).tolist() \
            == torch.take_along_dim(x, idx, 1).tolist()
    a, ta = rt.arange(4).reshape(2, 2), torch.arange(4).reshape(2, 2)
    for kw in (dict(beta=0.2, alpha=0.6), dict(beta=2.9, alpha=1.1)):
        assert rt.addmv(a[0], a, a[1], **kw).tolist() == torch.addmv(ta[0], ta, ta[1], **kw).tolist()
        assert rt.addmm(a, a, a, **kw).tolist() == torch.addmm(ta, ta, ta, **kw).tolist()
    b, tb = rt.tensor([True, False]), torch.tensor([True, False])
    for kw in (dict(), dict(beta=0, alpha=True), dict(beta=True, alpha=False), dict(beta=2, alpha=3)):
        for fill in (True, False):
            assert rt.addr(rt.full((2, 2), fill), b, rt.tensor([True, True]), **kw).tolist() == \
                torch.addr(torch.full((2, 2), fill), tb, torch.tensor([True, True]), **kw).tolist()
    assert rt.isclose(rt.tensor([3, 1], dtype=rt.uint8), rt.tensor([1, 3], dtype=rt.uint8),
                      atol=2).tolist() == torch.isclose(torch.tensor([3, 1], dtype=torch.uint8),
                                                        torch.tensor([1, 3], dtype=torch.uint8),
                                                        atol=2).tolist()
    assert tuple(torch.cov(torch.tensor([[1.0, 2.0]])).shape) == tuple(
        rt.cov(rt.tensor([[1.0, 2.0]])).shape)
    assert tuple(torch.zeros(1, 1).squeeze(()).shape) == tuple(rt.zeros(1, 1).squeeze(()).shape)
