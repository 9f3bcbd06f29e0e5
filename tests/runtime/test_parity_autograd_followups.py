"""Autograd follow-ups checked against PyTorch 2.13: the gradient through an overwritten
non-leaf (zero_, fill_, copy_), which backward a second time raises, sgn and true_divide, and
the sign of a zero where() picks (its fast path for large masks is a bitwise select)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
from runtime.ops.prims import _where_impl
from runtime.ops.registry import REGISTRY

W = [1.0, 2.0, 3.0]


# --- in-place overwrites of a non-leaf -------------------------------------------------------

def _overwrite(m: Any, case: str) -> tuple[Any, Any]:
    x = m.tensor([1.0, -2.0, 3.0], dtype=m.float64, requires_grad=True)
    s = m.tensor([4.0, 5.0, 6.0], dtype=m.float64, requires_grad=True)
    y = x * 2
    {"zero_": lambda: y.zero_(), "fill_": lambda: y.fill_(3.0),
     "fill_tensor": lambda: y.fill_(s[0]), "copy_": lambda: y.copy_(s),
     "copy_detached": lambda: y.copy_(s.detach()), "copy_broadcast": lambda: y.copy_(s[:1]),
     "masked_fill_": lambda: y.masked_fill_(m.tensor([True, False, True]), 0.0),
     "masked_fill_tensor": lambda: y.masked_fill_(m.tensor([True, False, True]), s[1]),
     "index_fill_": lambda: y.index_fill_(0, m.tensor([1]), 7.0)}[case]()
    (y * m.tensor(W, dtype=m.float64)).sum().backward()
    grads = tuple(None if t.grad is None else t.grad.tolist() for t in (x, s))
    return grads, y.grad_fn.name()


OVERWRITES = {  # case: (x.grad, s.grad) by hand
    "zero_": ([0.0, 0.0, 0.0], None), "fill_": ([0.0, 0.0, 0.0], None),
    "fill_tensor": ([0.0, 0.0, 0.0], [6.0, 0.0, 0.0]), "copy_": ([0.0, 0.0, 0.0], W),
    "copy_detached": ([0.0, 0.0, 0.0], None), "copy_broadcast": ([0.0, 0.0, 0.0], [6.0, 0.0, 0.0]),
    "masked_fill_": ([0.0, 4.0, 0.0], None), "masked_fill_tensor": ([0.0, 4.0, 0.0], [0.0, 4.0, 0.0]),
    "index_fill_": ([2.0, 0.0, 6.0], None),
}


@pytest.mark.parametrize("case", sorted(OVERWRITES))
def test_overwritten_non_leaf_passes_zeros(case: str) -> None:
    assert _overwrite(rt, case)[0] == OVERWRITES[case]


@pytest.mark.parametrize("case", sorted(OVERWRITES))
def test_overwritten_non_leaf_matches_torch(case: str) -> None:
    torch = pytest.importorskip("torch")
    assert _overwrite(rt, case)[0] == _overwrite(torch, case)[0]


@pytest.mark.parametrize("case,name", [("zero_", "ZeroBackward0"), ("fill_", "FillBackward2"),
                                       ("fill_tensor", "FillBackward3")])
def test_fill_node_names(case: str, name: str) -> None:
    assert _overwrite(rt, case)[1] == name


def test_fill_with_a_tensor_value_must_be_0_dim() -> None:
    y = rt.zeros(3)
    with pytest.raises(RuntimeError, match="fill_ only supports 0-dimension value tensor but got "
                                           "tensor with 1 dimensions."):
        y.fill_(rt.ones(2))


def test_zero_grad_momentum_sees_zeros_not_none() -> None:
    """What the brief's momentum/Adam case reads: the overwritten input gets a zero tensor."""
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    g, = rt.autograd.grad(h.zero_().sum(), x, allow_unused=True)
    assert g is not None and g.tolist() == [0.0, 0.0]


# --- backward through the graph a second time -----------------------------------------------

TWICE: dict[str, tuple[Callable[[Any, Any], Any], bool]] = {  # op, whether PyTorch raises
    "mul_scalar": (lambda m, x: x * 2, True),
    "rmul_scalar": (lambda m, x: 2 * x, True),
    "mul_int": (lambda m, x: x * 3, True),
    "mul_bool": (lambda m, x: x * True, True),
    "div_scalar": (lambda m, x: x / 2, True),
    "sum_times_scalar": (lambda m, x: x.sum() * 2, True),
    "mul_tensor": (lambda m, x: x * x.detach(), True),
    "add_scalar": (lambda m, x: x + 2, False),
    "neg": (lambda m, x: -x, False),
    "add_alpha": (lambda m, x: m.add(x.detach(), x, alpha=2), False),
    "sub_alpha": (lambda m, x: m.sub(x.detach(), x, alpha=2), False),
    "add_alpha_same": (lambda m, x: m.add(x, x, alpha=3), False),
    "lerp_scalar_weight": (lambda m, x: m.lerp(x, x.detach() * 2, 0.3), False),
    "lerp_scalar_weight_high": (lambda m, x: m.lerp(x.detach(), x, 0.7), False),
    "lerp_end_scaled": (lambda m, x: m.lerp(x, x * 2, 0.5), True),
    "lerp_tensor_weight": (lambda m, x: m.lerp(x, x.detach(), m.tensor(0.3, dtype=m.float64)),
                           True),
    "lerp_inplace_scalar_weight": (lambda m, x: x.detach().clone().lerp_(x, 0.3), False),
    "tril": (lambda m, x: x.tril(), False),
    "triu": (lambda m, x: x.triu(1), False),
    "diagonal": (lambda m, x: x.diagonal(), False),
    "diag_of_matrix": (lambda m, x: x.diag(), False),
    "diag_of_vector": (lambda m, x: x[0].diag(1), False),
    "trace": (lambda m, x: x.trace(), False),
    "where": (lambda m, x: m.where(x.detach() > 0, x, 0.0), True),
    "relu": (lambda m, x: x.relu(), True),
    "reshape": (lambda m, x: x.reshape(-1), False),
    "sum": (lambda m, x: x.sum(), False),
}


def _raises_second_time(m: Any, op: Callable[[Any, Any], Any]) -> bool:
    x = m.tensor([[1.0, -2.0, 3.0], [0.5, 2.0, -1.0], [1.0, 1.0, 1.0]], dtype=m.float64,
                 requires_grad=True)
    y = op(m, x).sum()
    y.backward()
    try:
        y.backward()
    except RuntimeError as e:
        assert "Trying to backward through the graph a second time" in str(e)
        return True
    return False


@pytest.mark.parametrize("case", sorted(TWICE))
def test_backward_twice(case: str) -> None:
    op, raises = TWICE[case]
    assert _raises_second_time(rt, op) is raises


@pytest.mark.parametrize("case", sorted(TWICE))
def test_backward_twice_as_torch(case: str) -> None:
    torch = pytest.importorskip("torch")
    op, raises = TWICE[case]
    assert _raises_second_time(torch, op) is raises


def test_retain_graph_keeps_scalar_operands() -> None:
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 2).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.tolist() == [4.0, 4.0]


@pytest.mark.parametrize("k", [0, 1, -2])
def test_diag_of_a_vector_keeps_inf_and_nan_on_the_diagonal(k: int) -> None:
    v = [1.0, float("nan"), float("inf")]
    got = rt.tensor(v).diag(k).numpy()
    want = np.zeros((3 + abs(k), 3 + abs(k)))
    want[np.arange(3) + max(-k, 0), np.arange(3) + max(k, 0)] = v
    assert np.array_equal(got, want, equal_nan=True)
    assert rt.tensor([1, 2]).diag().dtype is rt.int64
    x = rt.tensor(v, requires_grad=True)
    x.diag(k).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0]


# --- sgn and true_divide ---------------------------------------------------------------------

def test_sgn_and_true_divide() -> None:
    x = rt.tensor([1.5, -2.0, 0.0], requires_grad=True)
    assert rt.sgn(x).tolist() == [1.0, -1.0, 0.0]
    assert x.true_divide(2).tolist() == [0.75, -1.0, 0.0]
    assert rt.true_divide(x, 2).tolist() == x.divide(2).tolist()
    y = x.detach().clone()
    assert y.true_divide_(2) is y and y.tolist() == [0.75, -1.0, 0.0]
    assert y.sgn_().tolist() == [1.0, -1.0, 0.0]
    y.divide_(-1.0)
    assert y.tolist() == [-1.0, 1.0, -0.0]
    with pytest.raises(TypeError):
        rt.true_divide(x, 2, rounding_mode="floor")
    rt.true_divide(x, 4).sum().backward()
    assert x.grad.tolist() == [0.25, 0.25, 0.25]


def test_sgn_and_true_divide_as_torch() -> None:
    torch = pytest.importorskip("torch")
    a = np.array([1.5, -2.0, 0.0, -0.0])
    for name in ("sgn", "true_divide"):
        args = () if name == "sgn" else (3.0,)
        got = getattr(rt, name)(rt.tensor(a), *args).numpy()
        want = getattr(torch, name)(torch.tensor(a), *args).numpy()
        assert np.array_equal(got, want) and got.dtype == want.dtype
        assert getattr(rt.tensor(a), name)(*args).tolist() == want.tolist()


# --- the sign of a zero where() picks --------------------------------------------------------

N = 2048  # past where's fast path threshold (1024 elements)
ZEROS = np.resize(np.array([-0.0, 0.0, -1.0, 1.0, -2.5, 3.0, np.inf, -np.inf, np.nan],
                           np.float32), N)

SIGNED: dict[str, Callable[[Any, Any], Any]] = {
    "where_zero_first": lambda m, x: m.where(x <= 0, 0.0, x),
    "where_zero_second": lambda m, x: m.where(x > 0, x, 0.0),
    "where_two_arrays": lambda m, x: m.where(x > 0, x, -x),
    "where_minus_zero": lambda m, x: m.where(x > 0, x, -0.0),
    "masked_fill": lambda m, x: x.masked_fill(x < 0, 0.0),
    "threshold": lambda m, x: m.nn.functional.threshold(x, 0.0, 0.0),
    "leaky_relu": lambda m, x: m.nn.functional.leaky_relu(x),
}


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return (a.dtype == b.dtype and np.array_equal(np.signbit(a), np.signbit(b))
            and np.array_equal(a, b, equal_nan=True))


ZERO = np.float32(0.0)
BY_HAND: dict[str, Callable[[np.ndarray], np.ndarray]] = {  # numpy's where: exact
    "where_zero_first": lambda x: np.where(x <= 0, ZERO, x),
    "where_zero_second": lambda x: np.where(x > 0, x, ZERO),
    "where_two_arrays": lambda x: np.where(x > 0, x, -x),
    "where_minus_zero": lambda x: np.where(x > 0, x, -ZERO),
    "masked_fill": lambda x: np.where(x < 0, ZERO, x),
    "threshold": lambda x: np.where(x <= 0, ZERO, x),
    "leaky_relu": lambda x: np.where(x > 0, x, x * np.float32(0.01)),
}


@pytest.mark.parametrize("n", [9, N])
@pytest.mark.parametrize("case", sorted(SIGNED))
def test_where_zero_sign_by_hand(case: str, n: int) -> None:
    x = ZEROS[:n]
    assert _same_bits(SIGNED[case](rt, rt.tensor(x)).numpy(), BY_HAND[case](x))


@pytest.mark.parametrize("case", sorted(SIGNED))
def test_where_zero_sign_as_torch(case: str) -> None:
    torch = pytest.importorskip("torch")
    got = SIGNED[case](rt, rt.tensor(ZEROS)).numpy()
    assert _same_bits(got, SIGNED[case](torch, torch.tensor(ZEROS)).numpy())


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64])
def test_where_fast_path_is_numpys_where(dt: type) -> None:
    rng = np.random.default_rng(0)
    x = rng.choice(ZEROS[:9], (40, 30)).astype(dt)
    y = rng.choice(ZEROS[:9], (40, 30)).astype(dt)
    cond = rng.random((40, 30)) < 0.5
    where = REGISTRY["where"]
    for a, b in [(0, x), (0.0, x), (-0.0, x), (x, 0.0), (x, -0.0), (x, y), (2.5, x),
                 (x, y[0]), (y[:, :1], x), (x[::-1], y.T.copy().T)]:
        want = np.where(cond, a, b).astype(dt, copy=False)
        assert _same_bits(_where_impl(np, cond, a, b), want)
        metas = [(cond.shape, cond.dtype)] + [(v.shape, v.dtype) if isinstance(v, np.ndarray)
                                               else v for v in (a, b)]
        fast = where.specialize(metas, {}, (want.shape, want.dtype))
        assert fast is not None and _same_bits(fast(cond, a, b), want)


# --- the compiled path ----------------------------------------------------------------------

def _compiled_matches_eager(fn: Callable[..., Any], *inputs: np.ndarray) -> None:
    step = planner.compile(fn)
    for k in range(2):
        args = [rt.tensor(a + k) for a in inputs]
        eager = fn(*[rt.tensor(a + k) for a in inputs])
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # a fallback to eager fails here
            got = step(*args)
        for g, e in zip(got, eager, strict=True):
            assert _same_bits(g.numpy(), e.numpy())


def test_compiled_where_zero_sign_matches_eager() -> None:
    def fn(x: Any) -> Any:
        return (rt.where(x > 0, x, 0.0), rt.where(x <= 0, 0.0, x), x.masked_fill(x < 0, 0.0))

    _compiled_matches_eager(fn, ZEROS)


def test_compiled_overwritten_non_leaf_gradient() -> None:
    w0 = np.array([0.5, -1.0, 2.0], np.float32)

    def fn(w: Any) -> Any:
        w = w.detach().requires_grad_()
        y = w * 2
        y.zero_()
        (y + w).sum().backward()
        return (w.grad,)

    _compiled_matches_eager(fn, w0)
    assert fn(rt.tensor(w0))[0].tolist() == [1.0, 1.0, 1.0]
