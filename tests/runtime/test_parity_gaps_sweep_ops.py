"""A sweep of tensor ops on unusual but legal inputs (empty, 0-d, integer, bool) against
PyTorch: values, gradients and error texts; each case a difference found and fixed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")


def _outcome(m: Any, f: Callable[[Any], Any]) -> Any:
    try:
        r = f(m)
    except (RuntimeError, TypeError, IndexError, NotImplementedError, ValueError) as e:
        return type(e).__name__, str(e).split("\n")[0]
    rs = r if isinstance(r, tuple) else (r,)
    arrays = [np.asarray(t.detach().numpy()) for t in rs]
    return tuple((tuple(t.shape), str(t.dtype).split(".")[-1],
                  str((a.round(6) if a.dtype.kind == "f" else a).tolist()))
                 for t, a in zip(rs, arrays))


CASES: dict[str, Callable[[Any], Any]] = {
    # reductions over a non-empty dim of an empty tensor: an empty result, not an error
    "median_empty_other_dim": lambda m: m.median(m.zeros(0, 3), 1),
    "mode_empty_other_dim": lambda m: m.mode(m.zeros(0, 3), 1),
    "nanmedian_empty_other_dim": lambda m: m.nanmedian(m.zeros(0, 3), 1),
    "median_all_empty": lambda m: m.median(m.zeros(0, 3)),
    "median_empty_dim": lambda m: m.median(m.zeros(0, 3), 0),
    "kthvalue_empty_dim": lambda m: m.kthvalue(m.zeros(0, 3), 1, 0),
    # the size of a 0-d tensor's dim
    "roll_0d": lambda m: m.roll(m.tensor(1.0), 1, -1),
    "unbind_0d": lambda m: m.unbind(m.tensor(1.0), -1),
    "tensordot_0d": lambda m: m.tensordot(m.tensor(1.0), m.tensor(1.0), dims=([-1], [-1])),
    "chunk_0d": lambda m: m.chunk(m.tensor(1.0), 2),
    "split_0d": lambda m: m.split(m.tensor(1.0), 1),
    "narrow_0d": lambda m: m.narrow(m.tensor(1.0), 0, 0, 1),
    "unflatten_0d": lambda m: m.unflatten(m.tensor(1.0), -1, (1, -1)),
    "unique_dim_0d": lambda m: m.unique(m.tensor(1.0), dim=0),
    "matmul_0d": lambda m: m.matmul(m.tensor(1.0), m.tensor(2.0)),
    # dtypes PyTorch has no kernel for, and its texts
    "matmul_bool": lambda m: m.ones(2, 3, dtype=m.bool) @ m.ones(3, 2, dtype=m.bool),
    "dot_bool": lambda m: m.ones(3, dtype=m.bool) @ m.ones(3, dtype=m.bool),
    "mv_bool": lambda m: m.ones(2, 3, dtype=m.bool) @ m.ones(3, dtype=m.bool),
    "bmm_bool": lambda m: m.ones(2, 2, 3, dtype=m.bool) @ m.ones(2, 3, 2, dtype=m.bool),
    "trace_bool": lambda m: m.trace(m.ones(2, 2, dtype=m.bool)),
    "cov_bool": lambda m: m.cov(m.ones(2, 3, dtype=m.bool)),
    "cov_3d": lambda m: m.cov(m.ones(2, 3, 4)),
    "corrcoef_3d": lambda m: m.corrcoef(m.ones(2, 3, 4)),
    "corrcoef_bool": lambda m: m.corrcoef(m.ones(2, 3, dtype=m.bool)),
    "cdist_int": lambda m: m.cdist(m.ones(2, 3, dtype=m.int64), m.ones(2, 3, dtype=m.int64)),
    "cdist_mixed": lambda m: m.cdist(m.ones(2, 3), m.ones(2, 3, dtype=m.float64)),
    "histc_bool": lambda m: m.histc(m.ones(3, dtype=m.bool)),
    "histc_int": lambda m: m.histc(m.ones(3, dtype=m.int64)),
    "isclose_dtypes": lambda m: m.isclose(m.ones(2), m.ones(2, dtype=m.int64)),
    "nanquantile_empty": lambda m: m.nanquantile(m.ones(0), 0.5),
    "nanquantile_int": lambda m: m.nanquantile(m.ones(3, dtype=m.int64), 0.5),
    "nanquantile_q": lambda m: m.nanquantile(m.ones(3), 1.23456789),
    "quantile_q": lambda m: m.quantile(m.ones(3), 2.0),
    # trapezoid and cumulative_trapezoid
    "trapezoid": lambda m: m.trapezoid(m.tensor([[1.0, 2, 4], [0, 1, 3]])),
    "trapezoid_dx": lambda m: m.trapezoid(m.tensor([[1.0, 2, 4], [0, 1, 3]]), dx=2),
    "trapezoid_x": lambda m: m.trapezoid(m.tensor([[1.0, 2, 4], [0, 1, 3]]),
                                         m.tensor([0.0, 1, 3])),
    "trapezoid_x2d": lambda m: m.trapezoid(m.tensor([[1.0, 2, 4], [0, 1, 3]]),
                                           m.tensor([[0.0, 1, 3], [0, 2, 3]])),
    "trapezoid_dim0": lambda m: m.trapezoid(m.tensor([[1.0, 2, 4], [0, 1, 3]]), dim=0),
    "trapezoid_empty": lambda m: m.trapezoid(m.ones(3, 0)),
    "trapezoid_int": lambda m: m.trapezoid(m.tensor([1, 2, 3])),
    "trapezoid_0d": lambda m: m.trapezoid(m.tensor(1.0)),
    "trapezoid_bool": lambda m: m.trapezoid(m.tensor([True])),
    "trapezoid_x_bool": lambda m: m.trapezoid(m.ones(3), m.tensor([True, False, True])),
    "trapezoid_x_size": lambda m: m.trapezoid(m.ones(3), m.tensor([0.0, 1])),
    "trapz": lambda m: m.trapz(m.tensor([1.0, 2, 4]), dx=0.5),
    "cumulative_trapezoid": lambda m: m.cumulative_trapezoid(m.tensor([[1.0, 2, 4], [0, 1, 3]])),
    "cumulative_trapezoid_x": lambda m: m.cumulative_trapezoid(m.tensor([1.0, 2, 4]),
                                                               m.tensor([0.0, 1, 3])),
    "cumulative_trapezoid_empty": lambda m: m.cumulative_trapezoid(m.ones(3, 0)),
    # addcmul/addcdiv of integers: the value in the integer dtype, integer division refused
    "addcmul_int_half": lambda m: m.addcmul(m.tensor([[1, 2, 3], [-1, 4, 5]]),
                                            m.tensor([[1, 2, 3], [-1, 4, 5]]),
                                            m.tensor([[1, 2, 3], [-1, 4, 5]]), value=0.5),
    "addcmul_int": lambda m: m.addcmul(m.tensor([1, -2]), m.tensor([3, 4]), m.tensor([2, 2]),
                                       value=1.5),
    "addcmul_float_input": lambda m: m.addcmul(m.tensor([1.0, -2]), m.tensor([3, 4]),
                                               m.tensor([2, 2]), value=0.5),
    "addcmul_bool": lambda m: m.addcmul(m.ones(2, dtype=m.bool), m.ones(2, dtype=m.bool),
                                        m.ones(2, dtype=m.bool)),
    "addcdiv_int": lambda m: m.addcdiv(m.tensor([1, 2]), m.tensor([3, 4]), m.tensor([2, 2])),
    "addcdiv_int_into_float": lambda m: m.addcdiv(m.tensor([1.0, 2]), m.tensor([3, 4]),
                                                  m.tensor([2, 2])),
    # matrix transposes and ravel
    "mT_1d": lambda m: m.ones(3).mT,
    "mH_1d": lambda m: m.ones(3).mH,
    "H_3d": lambda m: m.ones(2, 3, 4).H,
    "mH": lambda m: m.arange(6.0).reshape(1, 2, 3).mH,
    "H": lambda m: m.arange(6.0).reshape(2, 3).H,
    "ravel": lambda m: m.arange(6.0).reshape(2, 3).t().ravel(),
}


@pytest.mark.parametrize("name", list(CASES))
def test_case(name: str) -> None:
    assert _outcome(rt, CASES[name]) == _outcome(torch, CASES[name])


def test_transpose_warnings() -> None:
    with pytest.warns(UserWarning, match="Tensor.mT is deprecated on 0-D tensors"):
        assert rt.tensor(2.0).mT.item() == 2.0
    with pytest.warns(UserWarning, match="The use of `x.T` on tensors of dimension other than 2"):
        assert tuple(rt.ones(2, 3, 4).T.shape) == (4, 3, 2)


def test_kthvalue_picks_pytorchs_index_among_ties() -> None:
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(1, 14))
        a = rng.integers(0, 3, (3, n)).astype(float)
        a[rng.random(a.shape) < 0.15] = np.nan
        k = int(rng.integers(1, n + 1))
        ours, theirs = rt.kthvalue(rt.tensor(a), k, 1), torch.kthvalue(torch.tensor(a), k, 1)
        np.testing.assert_array_equal(ours.indices.numpy(), theirs.indices.numpy())
        np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())


def test_kthvalue_gradient_goes_to_pytorchs_element() -> None:
    grads = []
    for m in (rt, torch):
        x = m.tensor([[1.0, 1.0, 2.0], [3.0, 3.0, 3.0]], requires_grad=True)
        m.kthvalue(x, 1, 1).values.sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_array_equal(*grads)


@pytest.mark.parametrize("name", ["floor_divide", "floordiv", "unique", "unique_dim",
                                  "heaviside"])
def test_recorded_without_a_derivative(name: str) -> None:
    calls: dict[str, Callable[[Any, Any], Any]] = {
        "heaviside": lambda m, x: m.heaviside(x, m.tensor(0.5)),
        "floor_divide": lambda m, x: m.floor_divide(x, 2),
        "floordiv": lambda m, x: x // 2,
        "unique": lambda m, x: m.unique(x),
        "unique_dim": lambda m, x: m.unique(x, dim=0),
    }
    seen = []
    for m in (rt, torch):
        x = m.tensor([[3.0, 4.0], [3.0, 4.0]], requires_grad=True)
        y = calls[name](m, x)
        assert y.requires_grad
        with pytest.raises((RuntimeError, NotImplementedError)) as info:
            y.sum().backward()
        seen.append((type(y.grad_fn).__name__, info.type, str(info.value)))
        with m.no_grad():
            assert not calls[name](m, x).requires_grad
    assert seen[0] == seen[1]


def test_remainder_double_backward_still_runs() -> None:
    a = rt.tensor([5.0, -3.5], dtype=rt.float64, requires_grad=True)
    b = rt.tensor([2.0, 1.5], dtype=rt.float64, requires_grad=True)
    assert rt.autograd.gradgradcheck(rt.remainder, (a, b))


SMALL_OPS = ["positive", "deg2rad", "rad2deg", "fix", "angle", "isreal", "isneginf", "isposinf"]
SMALL_INPUTS: dict[str, Callable[[Any], Any]] = {
    "int": lambda m: m.tensor([-2, 0, 3]),
    "bool": lambda m: m.tensor([True, False]),
    "float": lambda m: m.tensor([-1.5, 0.0, -0.0, float("nan"), float("-inf"), 2.0]),
}


@pytest.mark.parametrize("kind", list(SMALL_INPUTS))
@pytest.mark.parametrize("name", SMALL_OPS)
def test_small_elementwise_ops(name: str, kind: str) -> None:
    def call(m: Any) -> Any:
        return getattr(m, name)(SMALL_INPUTS[kind](m))

    assert _outcome(rt, call) == _outcome(torch, call)


@pytest.mark.parametrize("name", ["positive", "deg2rad", "rad2deg", "fix", "angle"])
def test_small_ops_gradients_and_methods(name: str) -> None:
    got = []
    for m in (rt, torch):
        x = m.tensor([-1.5, 2.0, 0.0], dtype=m.float64, requires_grad=True)
        y = getattr(x, name)()
        node = None if y.grad_fn is None else type(y.grad_fn).__name__
        g, = m.autograd.grad(y.sum(), x)
        got.append((node, g.tolist()))
    assert got[0] == got[1]


X6 = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
EXTRAS: dict[str, Callable[[Any], Any]] = {
    "arccos": lambda m: m.arccos(m.tensor([0.5, -1.0])),
    "greater": lambda m: m.greater(m.tensor([1, 2]), 1),
    "less_equal": lambda m: m.tensor([1, 2]).less_equal(1),
    "not_equal": lambda m: m.not_equal(m.tensor([1, 2]), 1),
    "atleast_2d": lambda m: m.atleast_2d(m.tensor(1.0)),
    "atleast_3d_1d": lambda m: m.atleast_3d(m.ones(3)),
    "atleast_3d_2d": lambda m: m.atleast_3d(m.ones(2, 3)),
    "atleast_1d_many": lambda m: m.atleast_1d(m.tensor(1.0), m.ones(2)),
    "fliplr": lambda m: m.fliplr(m.tensor(X6)),
    "fliplr_1d": lambda m: m.fliplr(m.ones(3)),
    "flipud_0d": lambda m: m.flipud(m.tensor(1.0)),
    "hsplit": lambda m: m.hsplit(m.tensor(X6), 3),
    "hsplit_1d": lambda m: m.hsplit(m.ones(4), 2),
    "hsplit_list": lambda m: m.hsplit(m.tensor(X6), [1]),
    "vsplit_1d": lambda m: m.vsplit(m.ones(4), 2),
    "dsplit_2d": lambda m: m.dsplit(m.tensor(X6), 1),
    "inner": lambda m: m.inner(m.tensor(X6), m.tensor(X6)),
    "inner_0d": lambda m: m.inner(m.tensor(2.0), m.tensor(X6)),
    "vdot": lambda m: m.vdot(m.ones(3), m.arange(3.0)),
    "vdot_2d": lambda m: m.vdot(m.tensor(X6), m.tensor(X6)),
    "msort": lambda m: m.msort(m.tensor([[3.0, 1.0], [2.0, 4.0]])),
    "isin": lambda m: m.isin(m.tensor(X6), m.tensor([2.0, 5.0])),
    "isin_scalar": lambda m: m.isin(m.tensor(X6), 2.0),
    "isin_invert": lambda m: m.isin(m.tensor(X6), m.tensor([2.0]), invert=True),
    "gcd": lambda m: m.gcd(m.tensor([4, 6, 0]), m.tensor([6, 9, 5])),
    "gcd_float": lambda m: m.gcd(m.tensor([4.0]), m.tensor([6.0])),
    "lcm": lambda m: m.lcm(m.tensor([4, -6]), m.tensor([6, 9])),
    "ldexp": lambda m: m.ldexp(m.tensor([1.0, 2.0]), m.tensor([2, 3])),
    "ldexp_int": lambda m: m.ldexp(m.tensor([1, 2]), m.tensor([2, 3])),
    "frexp": lambda m: tuple(m.frexp(m.tensor([8.0, 0.3, 0.0, -5.0]))),
    "frexp_int": lambda m: m.frexp(m.tensor([8])),
    "logspace": lambda m: m.logspace(0, 2, 3),
    "logspace_base": lambda m: m.logspace(0, 2, 3, base=2),
    "logspace_int": lambda m: m.logspace(0, 2, 3, dtype=m.int64),
    "diagflat": lambda m: m.diagflat(m.tensor([[1.0, 2.0], [3.0, 4.0]])),
    "diagflat_offset": lambda m: m.diagflat(m.ones(2), 1),
    "vander": lambda m: m.vander(m.tensor([1, 2, 3])),
    "vander_n": lambda m: m.vander(m.tensor([1.0, 2, 3]), N=2, increasing=True),
    "unravel_index": lambda m: m.unravel_index(m.tensor([4, 5]), (2, 3)),
    "unique_consecutive": lambda m: m.unique_consecutive(m.tensor([1, 1, 2, 2, 3, 1]),
                                                         return_counts=True,
                                                         return_inverse=True),
    "unique_consecutive_dim": lambda m: m.unique_consecutive(
        m.tensor([[1, 1], [1, 1], [2, 3]]), dim=0),
    "narrow_copy": lambda m: m.narrow_copy(m.tensor(X6), 1, 0, 2),
    "adjoint": lambda m: m.adjoint(m.tensor(X6)),
    "is_nonzero_many": lambda m: m.is_nonzero(m.ones(2)),
    "put_": lambda m: m.zeros(5).put_(m.tensor([0, 4, -1]), m.tensor([1.0, 2.0, 3.0])),
    "put_accumulate": lambda m: m.zeros(3).put_(m.tensor([0, 0]), m.tensor([1.0, 2.0]),
                                                accumulate=True),
    "put_out_of_range": lambda m: m.zeros(3).put_(m.tensor([5]), m.tensor([1.0])),
    "resize_": lambda m: m.arange(6.0).resize_(2, 2),
    "resize_grad": lambda m: m.ones(2, requires_grad=True).resize_(3),
    "logical_and_": lambda m: m.tensor([True, False]).logical_and_(m.tensor([True, True])),
    "cumsum_": lambda m: m.tensor([1.0, 2.0]).cumsum_(0),
    "sinh_int": lambda m: m.tensor([1, 2]).sinh_(),
}


@pytest.mark.parametrize("name", list(EXTRAS))
def test_extras(name: str) -> None:
    assert _outcome(rt, EXTRAS[name]) == _outcome(torch, EXTRAS[name])


def test_storage_queries() -> None:
    for m in (rt, torch):
        x = m.ones(2, 3)
        assert x.data_ptr() > 0 and x.storage_offset() == 0 and x[1:].storage_offset() == 3
        assert x.get_device() == -1 and not x.is_pinned()
        assert m.is_nonzero(m.tensor([2.0])) and not m.is_complex(x)
        assert m.real(x) is x and m.conj(x) is x


MORE_EXTRAS: dict[str, Callable[[Any], Any]] = {
    "renorm": lambda m: m.renorm(m.tensor([[1.0, 2], [3, 4]]), 2, 0, 2),
    "renorm_p1_dim1": lambda m: m.renorm(m.tensor([[1.0, 2], [3, 4]]), 1, 1, 5),
    "renorm_bad_p": lambda m: m.renorm(m.ones(2, 2), -1, 0, 2),
    "renorm_bad_maxnorm": lambda m: m.renorm(m.ones(2, 2), 2, 0, -1),
    "select_scatter": lambda m: m.select_scatter(m.zeros(2, 3), m.ones(3), 0, 1),
    "select_scatter_neg": lambda m: m.select_scatter(m.zeros(2, 3), m.ones(2), -1, -1),
    "slice_scatter": lambda m: m.slice_scatter(m.zeros(2, 3), m.ones(2, 1), 1, 0, 1),
    "slice_scatter_step": lambda m: m.slice_scatter(m.zeros(2, 3), m.ones(2, 2), 1, step=2),
    "nextafter": lambda m: m.nextafter(m.tensor([1.0, 2.0]), m.tensor([2.0, 1.0])),
}


@pytest.mark.parametrize("name", list(MORE_EXTRAS))
def test_more_extras(name: str) -> None:
    assert _outcome(rt, MORE_EXTRAS[name]) == _outcome(torch, MORE_EXTRAS[name])


@pytest.mark.parametrize("name", ["renorm", "select_scatter", "slice_scatter"])
def test_scatter_and_renorm_gradients(name: str) -> None:
    calls: dict[str, Callable[[Any, Any, Any], Any]] = {
        "renorm": lambda m, a, b: m.renorm(a * 3, 2, 0, 2) * b.sum(),
        "select_scatter": lambda m, a, b: m.select_scatter(a, b, 0, 1),
        "slice_scatter": lambda m, a, b: m.slice_scatter(a, b[None].expand(2, 3)[:, :2], 1,
                                                         0, 2),
    }
    got = []
    for m in (rt, torch):
        a = m.tensor([[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]], dtype=m.float64, requires_grad=True)
        b = m.tensor([0.5, 1.5, -2.0], dtype=m.float64, requires_grad=True)
        y = calls[name](m, a, b)
        (y * m.arange(6.0, dtype=m.float64).reshape(2, 3)).sum().backward()
        got.append((type(y.grad_fn).__name__, a.grad.numpy().round(10).tolist(),
                    b.grad.numpy().round(10).tolist()))
    assert got[0][1:] == got[1][1:]
    if name != "renorm":  # ours: the product's node (renorm's own has b multiplied after)
        assert got[0][0] == got[1][0]


def test_chain_matmul_warns_and_multiplies() -> None:
    with pytest.warns(UserWarning, match="torch.chain_matmul is deprecated"):
        out = rt.chain_matmul(rt.ones(2, 3), rt.ones(3, 2))
    assert out.tolist() == [[3.0, 3.0], [3.0, 3.0]]
