"""Op-level tests: gradcheck / gradgradcheck for every primitive and composite,
values and grads against PyTorch, a hypothesis property test for broadcasting
binary ops, and bad-input errors.

Every case is written once as ``fn(m, *xs)`` where ``m`` is either ``runtime``
or ``torch``, so the same expression is evaluated by both libraries.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes

import planner
import runtime as rt

_R = np.random.default_rng(20261123)


def N(*shape: int) -> np.ndarray:
    """Standard normal."""
    return _R.standard_normal(shape)


def P(*shape: int) -> np.ndarray:
    """Positive, away from zero (log / sqrt / pow base / divisor)."""
    return _R.uniform(0.5, 2.0, shape)


def NZ(*shape: int) -> np.ndarray:
    """Either sign, |x| >= 0.3 (abs / sign / relu kinks avoided)."""
    return _R.choice([-1.0, 1.0], shape) * _R.uniform(0.3, 1.5, shape)


def apart(sa: tuple[int, ...], sb: tuple[int, ...]) -> list[np.ndarray]:
    """Two arrays whose broadcast pairs differ by >= 0.3 (no ties for max/min)."""
    na, nb = int(np.prod(sa)), int(np.prod(sb))
    a = 0.3 * (2 * _R.permutation(na)).reshape(sa)
    b = 0.3 * (2 * _R.permutation(nb) + 1).reshape(sb)
    c = 0.3 * max(na, nb)
    return [a - c, b - c]


def avoid(x: np.ndarray, points: tuple[float, ...], gap: float = 0.05) -> np.ndarray:
    for p in points:
        near = np.abs(x - p) < gap
        x = np.where(near, p + np.where(x >= p, gap, -gap) * 2, x)
    return x


def C(m, arr):
    arr = np.asarray(arr)
    if arr.dtype == np.bool_:
        return m.tensor(arr, dtype=m.bool)
    if arr.dtype.kind in "iu":
        return m.tensor(arr.astype(np.int64), dtype=m.int64)
    raise AssertionError(arr.dtype)


def F(m):
    return m.nn.functional


@dataclass
class Case:
    id: str
    fn: Callable
    inputs: list
    gg: bool = False  # also gradgradcheck
    torch: bool = True  # compare against torch
    tol32: tuple[float, float] = (1e-5, 1e-6)
    prims: tuple[str, ...] = field(default_factory=tuple)

    def param(self):
        return pytest.param(self, id=self.id)


CASES: list[Case] = []


def case(id, fn, inputs, **kw):
    CASES.append(Case(id, fn, inputs, **kw))


# ---------------------------------------------------------------- elementwise binary
case("add_2d_1d", lambda m, a, b: a + b, [N(3, 4), N(4)])
case("add_3d_bcast", lambda m, a, b: a + b, [N(2, 1, 3), N(1, 4, 1)])
case("add_scalar", lambda m, a: a + 2.5, [N(3, 4)])
case("radd_scalar", lambda m, a: 2.5 + a, [N(3, 4)])
case("add_0d", lambda m, a, b: a + b, [N(), N(2, 3)])
case("sub_bcast", lambda m, a, b: a - b, [N(3, 1), N(1, 4)])
case("rsub_scalar", lambda m, a: 1.0 - a, [N(3, 4)])
case("mul_same", lambda m, a, b: a * b, [N(3, 4), N(3, 4)], gg=True)
case("mul_3d_bcast", lambda m, a, b: a * b, [N(2, 1, 3), N(1, 4, 1)], gg=True)
case("mul_scalar", lambda m, a: a * 3, [N(3, 4)])
case("mul_self", lambda m, a: a * a, [N(3, 4)], gg=True)
case("div_bcast", lambda m, a, b: a / b, [N(3, 4), P(4)], gg=True)
case("div_scalar", lambda m, a: a / 4.0, [N(3, 4)])
case("rdiv_scalar", lambda m, a: 2.0 / a, [P(3, 4)], gg=True)
case("neg", lambda m, a: -a, [N(3, 4)])
case("pow_scalar_float", lambda m, a: a**2.5, [P(3, 4)], gg=True)
case("pow_scalar_int", lambda m, a: a**3, [N(3, 4)], gg=True)
case("pow_method", lambda m, a: a.pow(2), [N(3, 4)])
case("pow_half", lambda m, a: a**0.5, [P(3, 4)])
case("pow_neg", lambda m, a: a**-1.5, [P(3, 4)])
case("pow_tensor_bcast", lambda m, a, b: a**b, [P(3, 4), N(4)], gg=True)
case("pow_tensor_method", lambda m, a, b: a.pow(b), [P(2, 1, 3), N(1, 4, 1)])
case("rpow_scalar", lambda m, a: 2.0**a, [N(3, 4)])
case("maximum_2d_1d", lambda m, a, b: m.maximum(a, b), apart((3, 4), (4,)))
case("maximum_3d_bcast", lambda m, a, b: a.maximum(b), apart((2, 1, 3), (1, 4, 1)))
case("minimum_2d_1d", lambda m, a, b: m.minimum(a, b), apart((3, 4), (4,)))
case("minimum_3d_bcast", lambda m, a, b: a.minimum(b), apart((2, 1, 3), (1, 4, 1)))
_COND = _R.random((3, 4)) > 0.5
_COND_B = np.array([[True], [False], [True]])
case("where_bcast", lambda m, a, b: m.where(C(m, _COND), a, b), [N(3, 4), N(4)])
case("where_cond_bcast", lambda m, a, b: m.where(C(m, _COND_B), a, b), [N(1, 4), N(3, 1)])

# ---------------------------------------------------------------- elementwise unary
case("exp", lambda m, a: a.exp(), [N(3, 4)], gg=True)
case("exp_fn", lambda m, a: m.exp(a), [N(2, 3)])
case("polygamma_2", lambda m, a: m.polygamma(2, a), [P(3, 4)])  # special_host
case("topk_values", lambda m, a: m.topk(a, 2, 1).values, [N(3, 4)])  # stl_pick
case("log", lambda m, a: a.log(), [P(3, 4)], gg=True)
case("log_fn", lambda m, a: m.log(a), [P(2, 3)])
case("sin", lambda m, a: a.sin(), [N(3, 4)])
case("cos", lambda m, a: m.cos(a), [N(3, 4)])
case("tanh", lambda m, a: a.tanh(), [N(3, 4)], gg=True)
case("tanh_fn", lambda m, a: m.tanh(a), [N(2, 3)])
case("sqrt", lambda m, a: a.sqrt(), [P(3, 4)], gg=True)
case("sqrt_fn", lambda m, a: m.sqrt(a), [P(2, 3)])
case("abs", lambda m, a: a.abs(), [NZ(3, 4)])
case("abs_fn", lambda m, a: m.abs(a), [NZ(2, 3)])
case("sign", lambda m, a: a.sign() * a, [NZ(3, 4)])
case("erf", lambda m, a: a.erf(), [N(3, 4)])
case("erfc", lambda m, a: a.erfc() + m.erfc(a * 3), [N(3, 4)], gg=True)
case("linalg_inv", lambda m, a: m.linalg.inv(
    a + m.eye(3, dtype=a.dtype, device=a.device) * 3), [N(2, 3, 3)], gg=True)
case("linalg_det", lambda m, a: m.linalg.det(a), [N(2, 3, 3)])
case("linalg_logabsdet", lambda m, a: m.linalg.slogdet(a)[1], [N(3, 3)])
case("linalg_cholesky", lambda m, a: m.linalg.cholesky(
    a @ a.transpose(-1, -2) + m.eye(3, dtype=a.dtype, device=a.device)), [N(2, 3, 3)])
case("linalg_eigh", lambda m, a: (lambda e: e.eigenvalues + (e.eigenvectors ** 4).sum(-1))(
    m.linalg.eigh(a + a.transpose(-1, -2))), [N(2, 3, 3)])
case("linalg_svd", lambda m, a: (lambda r: r.S + (r.U ** 4).sum(-2) + (r.Vh ** 4).sum(-1))(
    m.linalg.svd(a, full_matrices=False)), [N(2, 3, 4)])
case("linalg_qr", lambda m, a: (lambda r: (r.Q ** 2).sum(-2) * 3 + r.R.sum(-2))(
    m.linalg.qr(a)), [N(2, 4, 3)])
case("linalg_solve_triangular", lambda m, a, b: m.linalg.solve_triangular(
    a + m.eye(3, dtype=a.dtype, device=a.device) * 3, b, upper=True), [N(2, 3, 3), N(3, 2)],
    gg=True)
case("linalg_lu", lambda m, a: (lambda r: (r[0] * 2 + r[1]).sum(-1) + r[2].sum(-2))(
    m.linalg.lu(a)), [N(2, 3, 3)])
case("linalg_matrix_exp", lambda m, a: m.linalg.matrix_exp(a * 0.5), [N(2, 3, 3)], gg=True)
case("linalg_pinv", lambda m, a: (lambda b: m.linalg.pinv(b) + m.linalg.pinv(
    b + b.mT, hermitian=True))(a + m.eye(3, dtype=a.dtype, device=a.device) * 3), [N(2, 3, 3)])
case("log1p", lambda m, a: a.log1p(), [P(3, 4) - 0.4], gg=True)
case("log1p_small", lambda m, a: m.log1p(a * 1e-4), [N(2, 3)])
case("expm1", lambda m, a: a.expm1(), [N(3, 4)], gg=True)
case("expm1_fn", lambda m, a: m.expm1(a * 1e-4), [N(2, 3)])
case("log2", lambda m, a: a.log2(), [P(3, 4)], gg=True)
case("log10", lambda m, a: m.log10(a), [P(3, 4)])
case("tan", lambda m, a: a.tan(), [N(3, 4) * 0.5], gg=True)
case("asin", lambda m, a: a.asin(), [N(3, 4) * 0.2], gg=True)
case("acos", lambda m, a: m.acos(a), [N(3, 4) * 0.2], gg=True)
case("atan", lambda m, a: a.atan(), [N(3, 4) * 2], gg=True)
case("sinh", lambda m, a: m.sinh(a), [N(3, 4)], gg=True)
case("cosh", lambda m, a: a.cosh(), [N(3, 4)], gg=True)
case("asinh", lambda m, a: a.asinh(), [N(3, 4) * 3], gg=True)
case("acosh", lambda m, a: m.acosh(a), [P(3, 4) + 1.2], gg=True)
case("atanh", lambda m, a: a.atanh(), [N(3, 4) * 0.2], gg=True)
case("atan2", lambda m, a, b: m.atan2(a, b), [N(3, 4), N(4)], gg=True)
case("fmod", lambda m, a, b: m.fmod(a, b), [N(3, 4) * 3, avoid(N(4), (0,)) + 0.0], gg=True)
case("floor", lambda m, a: a.floor() * a, [avoid(N(3, 4) * 3, (-3, -2, -1, 0, 1, 2, 3))])
case("ceil", lambda m, a: m.ceil(a) + a, [avoid(N(3, 4) * 3, (-3, -2, -1, 0, 1, 2, 3))])
case("trunc", lambda m, a: a.trunc() * a, [avoid(N(3, 4) * 3, (-3, -2, -1, 0, 1, 2, 3))])
case("frac", lambda m, a: a.frac(), [avoid(N(3, 4) * 3, (-3, -2, -1, 0, 1, 2, 3))])
case("round", lambda m, a: m.round(a) * a, [avoid(N(3, 4) * 3, (-2.5, -1.5, -0.5, 0.5, 1.5, 2.5))])
case("round_decimals", lambda m, a: a.round(decimals=2) + m.round(a, decimals=-1), [N(3, 4) * 30])
case("lerp_scalar", lambda m, a, b: m.lerp(a, b, 0.3) + a.lerp(b, 0.8), [N(3, 4), N(3, 4)])
case("lerp_tensor", lambda m, a, b, w: m.lerp(a, b, w), [N(3, 4), N(4), N(3, 4) * 0.6])
case("addcmul", lambda m, a, b, c: m.addcmul(a, b, c, value=0.5) + a.addcmul(b, c),
     [N(3, 4), N(3, 4), N(4)])
case("addcdiv", lambda m, a, b, c: m.addcdiv(a, b, c, value=-2) + a.addcdiv(b, c),
     [N(3, 4), N(3, 4), P(3, 4)])
case("clamp_min", lambda m, a: a.clamp(min=-0.5), [avoid(N(3, 4), (-0.5,))])
case("clamp_max", lambda m, a: a.clamp(max=0.5), [avoid(N(3, 4), (0.5,))])
case("clamp_both", lambda m, a: a.clamp(-0.5, 0.5), [avoid(N(3, 4), (-0.5, 0.5))])
case("to_cpu", lambda m, a: a.to("cpu") * 2, [N(3, 4)])
case("cpu", lambda m, a: a.cpu() * 2, [N(3, 4)])
case(
    "to_device_same",  # the primitive itself, called directly (Tensor.to skips a same-device move)
    lambda m, a: (rt.ops.functional.to_device(a, "cpu") if m is rt else a.to("cpu")) * 2,
    [N(3, 4)],
)

# ---------------------------------------------------------------- reductions
_DIMS = [None, 0, -1, 1, (0, 2), (-1, -3), (2, 0, 1)]
for _d in _DIMS:
    for _k in (False, True):
        _kw = {} if _d is None else {"dim": _d}
        if _d is None and _k:
            continue
        case(
            f"sum_dim{_d}_keep{_k}",
            lambda m, a, _kw=_kw, _k=_k: a.sum(**_kw, keepdim=_k) if _kw else a.sum(),
            [N(2, 3, 4)],
            gg=_d in (None, (0, 2)) and not _k,
        )
        case(
            f"mean_dim{_d}_keep{_k}",
            lambda m, a, _kw=_kw, _k=_k: a.mean(**_kw, keepdim=_k) if _kw else a.mean(),
            [N(2, 3, 4)],
        )
        case(
            f"amax_dim{_d}_keep{_k}",
            lambda m, a, _kw=_kw, _k=_k: a.amax(**_kw, keepdim=_k) if _kw else a.amax(),
            [N(2, 3, 4)],
        )
case("sum_fn_dim", lambda m, a: m.sum(a, 1), [N(3, 4)])
case("sum_fn_keepdim", lambda m, a: m.sum(a, dim=0, keepdim=True), [N(3, 4)])
case("mean_fn", lambda m, a: m.mean(a), [N(3, 4)])
case("amax_fn", lambda m, a: m.amax(a, dim=1), [N(3, 4)])
case("sum_1d", lambda m, a: a.sum(), [N(5)])
case("max_all", lambda m, a: a.max(), [N(3, 4)])
case("max_dim_values", lambda m, a: a.max(1)[0], [N(3, 4)])
case("max_dim_keepdim", lambda m, a: a.max(dim=-1, keepdim=True)[0], [N(2, 3, 4)])
case("max_dim0_values", lambda m, a: a.max(0)[0], [N(3, 4)])
# the argmax / argmin primitives (max(dim) / min(dim) indices) feed a differentiable output
case("max_min_dim_indices",
     lambda m, a: a.max(1)[0] + a.min(1)[1].to(a.dtype) + a.max(-1, keepdim=True)[1][:, 0].to(a.dtype)
     + a.min(0)[1][:3].to(a.dtype), [N(3, 4)])

# ---------------------------------------------------------------- shape / views
case("reshape", lambda m, a: a.reshape(6, 4), [N(2, 3, 4)])
case("reshape_tuple", lambda m, a: a.reshape((4, -1, 2)), [N(2, 3, 4)])
case("reshape_flat", lambda m, a: a.reshape(-1), [N(2, 3, 4)])
case("view", lambda m, a: a.view(3, 8), [N(2, 3, 4)])
case("permute", lambda m, a: a.permute(2, 0, 1), [N(2, 3, 4)])
case("permute_neg", lambda m, a: a.permute(-1, 1, 0), [N(2, 3, 4)])
case("transpose", lambda m, a: a.transpose(0, 2), [N(2, 3, 4)])
case("diagonal", lambda m, a: a.diagonal(1, 0, 2) * a.diagonal(-1, -1, 1).sum(), [N(2, 3, 4)],
     gg=True)
case("transpose_neg", lambda m, a: a.transpose(-1, -2), [N(2, 3, 4)])
case("t", lambda m, a: a.t(), [N(3, 4)])
case("T", lambda m, a: a.T * 1.0, [N(3, 4)])
case("expand", lambda m, a: a.expand(2, 3, 4), [N(3, 1)])
case("expand_minus1", lambda m, a: a.expand(-1, 4), [N(3, 1)])
case("expand_1d", lambda m, a: a.expand(2, 3, 4), [N(4)])
case("unsqueeze", lambda m, a: a.unsqueeze(1), [N(3, 4)])
case("unsqueeze_neg", lambda m, a: a.unsqueeze(-1), [N(3, 4)])
case("squeeze_all", lambda m, a: a.squeeze(), [N(3, 1, 4, 1)])
case("squeeze_dim", lambda m, a: a.squeeze(1), [N(3, 1, 4)])
case("flatten", lambda m, a: a.flatten(), [N(2, 3, 4)])
case("permute_then_reshape", lambda m, a: a.permute(1, 0).reshape(-1) * 1.0, [N(3, 4)])
case("contiguous", lambda m, a: a.t().contiguous(), [N(3, 4)])
case("clone", lambda m, a: a.clone(), [N(3, 4)])

# ---------------------------------------------------------------- indexing
case("getitem_int", lambda m, a: a[1], [N(3, 4)], gg=True)
case("getitem_slice", lambda m, a: a[:, 1:3], [N(3, 4)], gg=True)
case("getitem_step", lambda m, a: a[::2], [N(5, 3)])
case("getitem_step_start", lambda m, a: a[1::2, ::3], [N(5, 7)])
case("getitem_neg_int", lambda m, a: a[-1], [N(3, 4)])
case("getitem_neg_slice", lambda m, a: a[-2:, :-1], [N(3, 4)])
case("getitem_none", lambda m, a: a[None, :, None], [N(3, 4)])
case("getitem_ellipsis", lambda m, a: a[..., 1], [N(2, 3, 4)])
case("getitem_ellipsis_none", lambda m, a: a[..., None, 1:], [N(2, 3, 4)])
case("getitem_int_ellipsis_step", lambda m, a: a[1, ..., ::2], [N(2, 3, 4)])
case("getitem_mixed", lambda m, a: a[0, -2:, None], [N(2, 3, 4)])
# negative steps are PyTorch's ValueError (test_parity_sweep_h7): the reversed rows and
# every other column from the end, through flip
case("getitem_neg_step", lambda m, a: a.flip(0).flip(1)[:, 1:4:2], [N(3, 5)])
case("getitem_idx_repeat", lambda m, a: a[C(m, [0, 2, 0, 1, 2, 2])], [N(3, 4)], gg=True)
case("getitem_list_repeat", lambda m, a: a[[1, 1, 0]], [N(3, 4)])
case("getitem_idx_dim1", lambda m, a: a[:, C(m, [3, 0, 3])], [N(3, 4)])
case("getitem_idx_pair", lambda m, a: a[C(m, [0, 1, 1]), C(m, [2, 2, 0])], [N(3, 4)], gg=True)
case("getitem_idx_2d", lambda m, a: a[C(m, [[0, 2], [2, 2]])], [N(3, 4)])
case("getitem_idx_neg", lambda m, a: a[C(m, [-1, 0, -1])], [N(3, 4)])
case("getitem_idx_numpy", lambda m, a: a[np.array([2, 2, 1])] if m is rt else a[[2, 2, 1]], [N(3, 4)])

# ---------------------------------------------------------------- in-place on non-leaves
def _setitem_slice(m, a, b):
    y = a * 1.0
    y[1:] = b * 2.0
    return y


def _setitem_index(m, a, b):
    y = a * 1.0
    y[C(m, [2, 0])] = b
    return y * a


def _setitem_scalar(m, a):
    y = a * 1.0
    y[:, 0] = 5.0
    return y * a


def _setitem_bcast(m, a, b):
    y = a * 2.0  # (not exp: ExpBackward0 saves its output, so torch would refuse too)
    y[..., 1:3] = b
    return y


def _copy_view(m, a, b):
    y = a * 1.0
    y[:, 1].copy_(b)
    return y


def _copy_bcast(m, a, b):
    y = a * 1.0
    y.copy_(b)
    return y * a


def _fill_view(m, a):
    y = a * 1.0
    y[1].fill_(2.0)
    return y * a


def _zero(m, a, b):
    y = a * b
    y[:, ::2].zero_()
    return y


def _inplace_chain(m, a, b):
    y = a * 1.0
    y.mul_(b)
    y.add_(a, alpha=2.0)
    y.sub_(b, alpha=0.5)
    y.div_(b + 3.0)
    y.clamp_(-0.8, 0.8)
    y.addcmul_(a, b, value=0.5)
    y.addcdiv_(a, b + 3.0, value=2.0)
    y.lerp_(a, 0.25)
    y.neg_()
    return y


def _inplace_sqrt(m, a):
    y = a * 2.0
    y.sqrt_()
    return y


case("setitem_slice", _setitem_slice, [N(3, 4), N(2, 4)])
case("setitem_index", _setitem_index, [N(3, 4), N(2, 4)])
case("setitem_scalar", _setitem_scalar, [N(3, 4)])
case("setitem_bcast", _setitem_bcast, [N(3, 4), N(2)])
case("copy_view", _copy_view, [N(3, 4), N(3)])
case("copy_bcast", _copy_bcast, [N(3, 4), N(4)])
case("fill_view", _fill_view, [N(3, 4)])
case("zero_view", _zero, [N(3, 4), N(3, 4)])
case("inplace_chain", _inplace_chain, [avoid(N(3, 4), (-0.8, 0.8), 0.1), P(3, 4)])
case("inplace_sqrt", _inplace_sqrt, [P(3, 4)])

# ---------------------------------------------------------------- cat / stack
case("cat_dim0", lambda m, a, b: m.cat([a, b], dim=0), [N(2, 3), N(1, 3)])
case("cat_dim1", lambda m, a, b: m.cat([a, b], dim=1), [N(2, 3), N(2, 2)])
case("cat_neg", lambda m, a, b, c: m.cat([a, b, c], dim=-1), [N(2, 3, 1), N(2, 3, 2), N(2, 3, 3)])
case("cat_same_tensor", lambda m, a: m.cat([a, a], 0), [N(2, 3)])
case("stack_dim0", lambda m, a, b: m.stack([a, b]), [N(2, 3), N(2, 3)])
case("stack_dim1", lambda m, a, b: m.stack([a, b], dim=1), [N(2, 3), N(2, 3)])
case("stack_neg", lambda m, a, b, c: m.stack([a, b, c], dim=-1), [N(2, 3), N(2, 3), N(2, 3)])

# ---------------------------------------------------------------- matmul
case("matmul_2d", lambda m, a, b: a @ b, [N(3, 4), N(4, 5)], gg=True)
case("matmul_1d_2d", lambda m, a, b: a @ b, [N(4), N(4, 5)], gg=True)
case("matmul_2d_1d", lambda m, a, b: a @ b, [N(3, 4), N(4)])
case("matmul_1d_1d", lambda m, a, b: a @ b, [N(4), N(4)])
case("matmul_batched_2d", lambda m, a, b: a @ b, [N(2, 3, 4), N(4, 5)], gg=True)
case("matmul_bcast_4d_3d", lambda m, a, b: m.matmul(a, b), [N(2, 1, 3, 4), N(5, 4, 2)], gg=True)
case("matmul_1d_3d", lambda m, a, b: a.matmul(b), [N(4), N(2, 4, 3)])
case("matmul_3d_1d", lambda m, a, b: a.matmul(b), [N(2, 3, 4), N(4)])
case("matmul_self", lambda m, a: a @ a, [N(3, 3)])
case("addmm", lambda m, c, a, b: m.addmm(c, a, b), [N(3, 5), N(3, 4), N(4, 5)], gg=True)
case("addmm_bias", lambda m, c, a, b: m.addmm(c, a, b), [N(5), N(3, 4), N(4, 5)], gg=True)
case("addmm_scaled", lambda m, c, a, b: m.addmm(c, a, b, beta=0.5, alpha=2.0),
     [N(1, 5), N(3, 4), N(4, 5)])
case("addmm_method", lambda m, c, a, b: c.addmm(a, b), [N(3, 5), N(3, 4), N(4, 5)])

# ---------------------------------------------------------------- composites
case("relu", lambda m, a: F(m).relu(a), [NZ(3, 4)])
case("relu_method", lambda m, a: a.relu(), [NZ(3, 4)])
case("relu_fn", lambda m, a: m.relu(a), [NZ(3, 4)])
case("sigmoid", lambda m, a: F(m).sigmoid(a), [N(3, 4)])
case("sigmoid_method", lambda m, a: a.sigmoid(), [N(3, 4)])
case("sigmoid_fn", lambda m, a: m.sigmoid(a), [N(3, 4)])
case("F_tanh", lambda m, a: F(m).tanh(a), [N(3, 4)])
case("gelu", lambda m, a: F(m).gelu(a), [N(3, 4)])
case("gelu_none", lambda m, a: F(m).gelu(a, approximate="none"), [N(3, 4)])
case("gelu_tanh", lambda m, a: F(m).gelu(a, approximate="tanh"), [N(3, 4)])
case("softmax_last", lambda m, a: F(m).softmax(a, dim=-1), [N(3, 4)], gg=True)
case("softmax_dim0", lambda m, a: F(m).softmax(a, 0), [N(3, 4)], gg=True)
case("softmax_method_3d", lambda m, a: a.softmax(1), [N(2, 3, 4)])
case("log_softmax_last", lambda m, a: F(m).log_softmax(a, dim=-1), [N(3, 4)])
case("log_softmax_dim0", lambda m, a: F(m).log_softmax(a, dim=0), [N(3, 4)])
case("log_softmax_method", lambda m, a: a.log_softmax(1), [N(2, 3, 4)])
_TGT = np.array([1, 0, 4, 4])
for _red in ("mean", "sum", "none"):
    case(
        f"cross_entropy_{_red}",
        lambda m, a, _red=_red: F(m).cross_entropy(a, C(m, _TGT), reduction=_red),
        [N(4, 5)],
    )
    case(
        f"mse_loss_{_red}",
        lambda m, a, b, _red=_red: F(m).mse_loss(a, b, reduction=_red),
        [N(3, 4), N(3, 4)],
    )
case("cross_entropy_default", lambda m, a: F(m).cross_entropy(a, C(m, _TGT)), [N(4, 5)])
case("mse_loss_default", lambda m, a, b: F(m).mse_loss(a, b), [N(3, 4), N(3, 4)])
# torch's own float32 layer_norm backward is ~2e-6 off the float64 result (rt's is closer)
_LN32 = (1e-5, 1e-5)
case("layer_norm", lambda m, a: F(m).layer_norm(a, (4,)), [N(3, 4)], gg=True, tol32=_LN32)
case("layer_norm_2d_shape", lambda m, a: F(m).layer_norm(a, (3, 4)), [N(2, 3, 4)], tol32=_LN32)
case(
    "layer_norm_affine",
    lambda m, a, w, b: F(m).layer_norm(a, (4,), w, b),
    [N(3, 4), N(4), N(4)],
    gg=True,
    tol32=_LN32,
)
case(
    "layer_norm_affine_2d",
    lambda m, a, w, b: F(m).layer_norm(a, (3, 4), weight=w, bias=b, eps=1e-3),
    [N(2, 3, 4), N(3, 4), N(3, 4)],
    tol32=_LN32,
)
case(
    "layer_norm_weight_only",
    lambda m, a, w: F(m).layer_norm(a, (4,), weight=w),
    [N(3, 4), N(4)],
    tol32=_LN32,
)
case("linear", lambda m, x, w: F(m).linear(x, w), [N(2, 3), N(5, 3)])
case("linear_bias", lambda m, x, w, b: F(m).linear(x, w, b), [N(2, 3), N(5, 3), N(5)])
case("linear_3d_bias", lambda m, x, w, b: F(m).linear(x, w, bias=b), [N(2, 4, 3), N(5, 3), N(5)])
case("linear_1d", lambda m, x, w, b: F(m).linear(x, w, b), [N(3), N(5, 3), N(5)])
case(
    "dropout_seeded",
    lambda m, a: F(m).dropout(a, p=0.4, training=True, generator=rt.Generator().manual_seed(7)),
    [N(4, 5)],
    torch=False,
)
case("dropout_eval", lambda m, a: F(m).dropout(a, p=0.4, training=False), [N(3, 4)])
case("dropout_p0", lambda m, a: F(m).dropout(a, p=0.0), [N(3, 4)])
# the tensor ops' primitives (tests/runtime/test_tensor_ops.py covers the ops in full)
case("remainder_bcast", lambda m, a, b: a % b, [N(3, 4), P(4)])
case("cumsum_dim1", lambda m, a: a.cumsum(1), [N(3, 4)], gg=True)
case("cumprod_dim1", lambda m, a: a.cumprod(1), [N(3, 4)], gg=True)
case("prod_dim0", lambda m, a: a.prod(0), [N(3, 4)], gg=True)
case("scatter_reduce_amax",
     lambda m, a, b: a.scatter_reduce(1, m.tensor([[0, 1, 0], [2, 2, 1]]), b, "amax",
                                      include_self=False), [N(2, 3), N(2, 3)])
case("scatter_reduce_prod",
     lambda m, a, b: a.scatter_reduce(1, m.tensor([[0, 1, 0], [2, 2, 1]]), b, "prod"),
     [N(2, 3), N(2, 3)])
case("sort_values", lambda m, a: a.sort(1, descending=True).values, [N(3, 4)])
# views over the storage (tests/runtime/test_views_optim_as_strided.py has the rest)
case("as_strided_overlap", lambda m, a: a.as_strided((3, 3), (2, 1), 1), [N(3, 4)], gg=True)
case("tensor_unfold", lambda m, a: a.t().unfold(1, 2, 1), [N(3, 4)], gg=True)
# unfold and fold (tests/runtime/test_conv.py covers convolution and pooling in full)
case("unfold_strided", lambda m, a: F(m).unfold(a, (2, 3), padding=1, stride=(2, 1)),
     [N(2, 3, 5, 4)], gg=True)
case("fold_dilated", lambda m, a: F(m).fold(a, (5, 6), (2, 2), dilation=2), [N(2, 8, 12)],
     gg=True)
# a small chain mixing several ops
case(
    "chain_mlp",
    lambda m, x, w, b: (F(m).gelu(x @ w + b).softmax(-1) * 2.0).sum(0),
    [N(3, 4), N(4, 5), N(5)],
    gg=True,
)

assert len({c.id for c in CASES}) == len(CASES), "duplicate case ids"
GG_CASES = [c for c in CASES if c.gg]
TORCH_CASES = [c for c in CASES if c.torch]


def _rt_inputs(arrays, dtype=rt.float64, requires_grad=True):
    return [rt.tensor(np.asarray(a), dtype=dtype, requires_grad=requires_grad) for a in arrays]


# ================================================================ gradcheck
@pytest.mark.parametrize("c", [c.param() for c in CASES])
def test_gradcheck(c: Case):
    xs = _rt_inputs(c.inputs)
    assert rt.autograd.gradcheck(lambda *a: c.fn(rt, *a), xs)


@pytest.mark.parametrize("c", [c.param() for c in GG_CASES])
def test_gradgradcheck(c: Case):
    xs = _rt_inputs(c.inputs)
    assert rt.autograd.gradgradcheck(lambda *a: c.fn(rt, *a), xs)


def test_gradgradcheck_covers_requested_ops():
    ids = " ".join(c.id for c in GG_CASES)
    for op in ("mul", "div", "exp", "tanh", "pow", "matmul", "sum", "softmax", "layer_norm", "getitem"):
        assert op in ids, op


def test_gradcheck_detects_wrong_backward():
    """Sanity: our gradcheck calls are not vacuous."""

    class Bad(rt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

        @staticmethod
        def backward(ctx, g):
            return g * 3.0

    x = rt.tensor(N(3), dtype=rt.float64, requires_grad=True)
    with pytest.raises(Exception):  # noqa: B017 - gradcheck raises its own error type
        rt.autograd.gradcheck(Bad.apply, [x])
    assert not rt.autograd.gradcheck(Bad.apply, [x], raise_exception=False)


# ================================================================ against torch
def _dtname(d) -> str:
    return str(d).removeprefix("torch.").removeprefix("runtime.")


def _tdt(torch, dt):
    return {"float32": torch.float32, "float64": torch.float64}[dt]


def _compare_with_torch(c: Case, dt: str):
    torch = pytest.importorskip("torch")
    rdt, tdt = getattr(rt, dt), _tdt(torch, dt)
    rtol, atol = c.tol32 if dt == "float32" else (1e-9, 1e-11)
    rx = _rt_inputs(c.inputs, dtype=rdt)
    tx = [torch.tensor(np.asarray(a), dtype=tdt, requires_grad=True) for a in c.inputs]
    ro = c.fn(rt, *rx)
    to = c.fn(torch, *tx)
    assert ro.shape == tuple(to.shape), c.id
    assert _dtname(ro.dtype) == _dtname(to.dtype), c.id
    np.testing.assert_allclose(ro.detach().numpy(), to.detach().numpy(), rtol=rtol, atol=atol, err_msg=c.id)
    gout = np.random.default_rng(1).standard_normal(tuple(to.shape))
    ro.backward(rt.tensor(gout, dtype=rdt))
    to.backward(torch.tensor(gout, dtype=tdt))
    for i, (r, t) in enumerate(zip(rx, tx, strict=True)):
        if t.grad is None:
            assert r.grad is None or not np.any(r.grad.numpy()), (c.id, i)
            continue
        assert r.grad is not None, (c.id, i)
        assert r.grad.shape == r.shape, (c.id, i)
        assert r.grad.dtype == rdt, (c.id, i)
        np.testing.assert_allclose(
            r.grad.numpy(), t.grad.numpy(), rtol=rtol, atol=atol, err_msg=f"{c.id} grad {i}"
        )


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("c", [c.param() for c in TORCH_CASES])
def test_against_torch(c: Case, dt: str):
    _compare_with_torch(c, dt)


def test_max_dim_indices_against_torch():
    torch = pytest.importorskip("torch")
    a = N(3, 4, 5)
    for dim in (0, 1, -1):
        for keep in (False, True):
            rv, ri = rt.tensor(a, requires_grad=True).max(dim, keepdim=keep)
            tv, ti = torch.tensor(a, dtype=torch.float32).max(dim, keepdim=keep)
            np.testing.assert_allclose(rv.detach().numpy(), tv.numpy())
            assert ri.dtype == rt.int64
            assert not ri.requires_grad
            np.testing.assert_array_equal(ri.numpy(), ti.numpy())


@pytest.mark.parametrize("op", ["eq", "ne", "lt", "le", "gt", "ge"])
@pytest.mark.parametrize("dt", ["float32", "float64", "int64"])
def test_comparisons_against_torch(op, dt):
    import operator

    torch = pytest.importorskip("torch")
    f = getattr(operator, op)
    a = np.array([[0, 1, 2, 3], [3, 2, 1, 0], [1, 1, 1, 1]])
    b = np.array([1, 1, 2, 0])
    if dt != "int64":
        a, b = a + 0.5, b + 0.5
    rdt = getattr(rt, dt)
    ra = rt.tensor(a, dtype=rdt, requires_grad=dt != "int64")
    rb = rt.tensor(b, dtype=rdt)
    ta, tb = torch.tensor(a), torch.tensor(b)
    for r, t in ((f(ra, rb), f(ta, tb)), (f(ra, 1.5), f(ta, 1.5)), (f(rb, ra), f(tb, ta))):
        assert r.dtype == rt.bool
        assert not r.requires_grad and r.grad_fn is None
        np.testing.assert_array_equal(r.numpy(), t.numpy())


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_cast_against_torch(dt):
    torch = pytest.importorskip("torch")
    a = N(3, 4)
    rdt, tdt = getattr(rt, dt), _tdt(torch, dt)
    other_r = rt.float64 if dt == "float32" else rt.float32
    other_t = torch.float64 if dt == "float32" else torch.float32
    rx = rt.tensor(a, dtype=rdt, requires_grad=True)
    tx = torch.tensor(a, dtype=tdt, requires_grad=True)
    ry, ty = rx.to(other_r), tx.to(other_t)
    assert ry.dtype == other_r and ry.requires_grad
    (ry * ry).sum().backward()
    (ty * ty).sum().backward()
    assert rx.grad.dtype == rdt
    np.testing.assert_allclose(rx.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)
    for meth in ("float", "double"):
        r = getattr(rx, meth)()
        assert _dtname(r.dtype) == _dtname(getattr(tx, meth)().dtype)
        assert r.requires_grad
    # cast to an integer type is not differentiable
    ri = rx.long()
    assert ri.dtype == rt.int64 and not ri.requires_grad
    np.testing.assert_array_equal(ri.numpy(), tx.long().numpy())


def test_cast_gradcheck():
    x = rt.tensor(N(3, 4), dtype=rt.float64, requires_grad=True)
    # float64 -> float64 cast is the identity; float32 round trip is checked vs torch above
    assert rt.autograd.gradcheck(lambda t: t.to(rt.float64) * t.double(), [x])


def test_sign_values_and_zero_grad():
    x = rt.tensor([-2.0, 0.0, 3.0], requires_grad=True)
    y = x.sign()
    np.testing.assert_array_equal(y.detach().numpy(), [-1.0, 0.0, 1.0])
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 0.0])


def test_dropout_seeded_semantics():
    x = rt.tensor(P(50, 40), dtype=rt.float64, requires_grad=True)
    p = 0.25
    y = F(rt).dropout(x, p=p, training=True, generator=rt.Generator().manual_seed(3))
    y2 = F(rt).dropout(x, p=p, training=True, generator=rt.Generator().manual_seed(3))
    y3 = F(rt).dropout(x, p=p, training=True, generator=rt.Generator().manual_seed(4))
    yv = y.detach().numpy()
    np.testing.assert_array_equal(yv, y2.detach().numpy())
    assert not np.array_equal(yv, y3.detach().numpy())
    keep = yv != 0
    np.testing.assert_allclose(yv[keep], x.detach().numpy()[keep] / (1 - p))
    assert 0.65 < keep.mean() < 0.85
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), keep / (1 - p))
    # p=1 zeroes everything; eval mode is the identity
    z = F(rt).dropout(x, p=1.0, training=True, generator=rt.Generator().manual_seed(0))
    assert not np.any(z.detach().numpy())
    e = F(rt).dropout(x, p=p, training=False)
    np.testing.assert_array_equal(e.detach().numpy(), x.detach().numpy())


def test_getitem_repeated_index_scatter_add():
    x = rt.tensor(np.arange(4.0), requires_grad=True)
    x[rt.tensor([1, 1, 3, 1])].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 3.0, 0.0, 1.0])


def test_negative_step_is_refused_as_pytorch():
    # PyTorch's Python indexing refuses a step below one (flip reverses)
    a = N(3, 5)
    with pytest.raises(ValueError, match="^step must be greater than zero$"):
        rt.tensor(a, dtype=rt.float64)[::-1, 3:0:-2]
    with pytest.raises(ValueError, match="^slice step cannot be zero$"):
        rt.tensor(a)[:, ::0]


def test_integer_tensors_cannot_require_grad():
    with pytest.raises(RuntimeError, match="floating point"):
        rt.tensor([1, 2], requires_grad=True)


def test_basic_slice_is_view_and_advanced_is_copy():
    x = rt.tensor(np.arange(12.0).reshape(3, 4))
    v = x[1:, ::2]
    v.mul_(0.0)
    assert x.numpy()[1:, ::2].sum() == 0
    c = x[rt.tensor([0, 0])]
    c.add_(100.0)
    assert x.numpy()[0, 0] == 0.0


# ================================================================ hypothesis property test
_BIN = {
    "add": (lambda m, a, b: a + b, np.add, False),
    "sub": (lambda m, a, b: a - b, np.subtract, False),
    "mul": (lambda m, a, b: a * b, np.multiply, False),
    "div": (lambda m, a, b: a / b, np.divide, True),
    "pow": (lambda m, a, b: a**b, np.power, True),
    "maximum": (lambda m, a, b: m.maximum(a, b), np.maximum, False),
    "minimum": (lambda m, a, b: m.minimum(a, b), np.minimum, False),
}
_SHAPES = mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=1, max_side=3)


def _hyp_arrays(op, shapes, seed):
    r = np.random.default_rng(seed)
    sa, sb = shapes.input_shapes
    a = r.uniform(0.5, 2.0, sa) if op == "pow" else r.standard_normal(sa)
    b = r.uniform(0.5, 2.0, sb) if _BIN[op][2] else r.standard_normal(sb)
    return a, b


@settings(max_examples=30, deadline=None)
@given(op=st.sampled_from(sorted(_BIN)), shapes=_SHAPES, seed=st.integers(0, 2**16))
def test_property_binary_values_vs_numpy(op, shapes, seed):
    a, b = _hyp_arrays(op, shapes, seed)
    fn, npf, _ = _BIN[op]
    out = fn(rt, rt.tensor(a, dtype=rt.float64), rt.tensor(b, dtype=rt.float64))
    assert out.shape == shapes.result_shape
    np.testing.assert_allclose(out.numpy(), npf(a, b), rtol=1e-12, atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(op=st.sampled_from(sorted(_BIN)), shapes=_SHAPES, seed=st.integers(0, 2**16))
def test_property_binary_grads_vs_torch(op, shapes, seed):
    torch = pytest.importorskip("torch")
    a, b = _hyp_arrays(op, shapes, seed)
    fn = _BIN[op][0]
    ra, rb = rt.tensor(a, requires_grad=True), rt.tensor(b, requires_grad=True)
    ta = torch.tensor(a, dtype=torch.float32, requires_grad=True)
    tb = torch.tensor(b, dtype=torch.float32, requires_grad=True)
    ro, to = fn(rt, ra, rb), fn(torch, ta, tb)
    g = np.random.default_rng(seed + 1).standard_normal(shapes.result_shape).astype(np.float32)
    ro.backward(rt.tensor(g))
    to.backward(torch.tensor(g))
    np.testing.assert_allclose(ro.detach().numpy(), to.detach().numpy(), rtol=1e-5, atol=1e-6)
    for r, t in ((ra, ta), (rb, tb)):
        assert r.grad.shape == r.shape
        np.testing.assert_allclose(r.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-5)


# ================================================================ bad input
@pytest.mark.parametrize(
    ("name", "fn"),
    [
        ("add", lambda a, b: a + b),
        ("sub", lambda a, b: a - b),
        ("mul", lambda a, b: a * b),
        ("div", lambda a, b: a / b),
        ("maximum", lambda a, b: rt.maximum(a, b)),
    ],
)
def test_non_broadcastable_raises_torch_text(name, fn):
    # PyTorch's RuntimeError and text; a ValueError too (this runtime's shape errors are)
    a, b = rt.ones(2, 3), rt.ones(4)
    for error in (RuntimeError, ValueError):
        with pytest.raises(error, match=r"^The size of tensor a \(3\) must match the size of "
                                        r"tensor b \(4\) at non-singleton dimension 1$"):
            fn(a, b)


def test_where_non_broadcastable():
    with pytest.raises(RuntimeError, match="size of tensor a .3. must match the size of tensor b"):
        rt.where(rt.ones(2, 3) > 0, rt.ones(2, 3), rt.ones(4))


def test_inplace_non_broadcastable_raises_torch_text():
    with pytest.raises(RuntimeError, match=r"^The size of tensor a \(2\) must match the size of "
                                           r"tensor b \(4\) at non-singleton dimension 0$"):
        rt.ones(2, 3).add_(rt.ones(4, 3))


@pytest.mark.parametrize(("sa", "sb", "text"), [
    ((2, 3), (4, 5), "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
    ((3,), (4, 5), "mat1 and mat2 shapes cannot be multiplied (1x3 and 4x5)"),
    ((1, 2, 3), (4, 5), "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
    ((3,), (4,), "inconsistent tensor size, expected tensor [3] and src [4] to have the same "
                 "number of elements, but got 3 and 4 elements respectively"),
    ((3, 4), (5,), "size mismatch, got input (3), mat (3x4), vec (5)"),
    ((2, 3, 4), (5,), "size mismatch, got input (6), mat (6x4), vec (5)"),
    ((2, 2, 3), (2, 4, 5), "Expected size for first two dimensions of batch2 tensor to be: "
                           "[2, 3] but got: [2, 4]."),
    ((2, 1, 2, 3), (3, 4, 5), "Expected size for first two dimensions of batch2 tensor to be: "
                              "[6, 3] but got: [6, 4]."),
    ((5, 2, 3), (4, 3, 2), "The size of tensor a (5) must match the size of tensor b (4) at "
                           "non-singleton dimension 0"),
])
def test_matmul_shape_mismatch(sa, sb, text):
    # PyTorch's texts, by the path its matmul takes; eager and captured alike
    with pytest.raises(RuntimeError) as eager:
        rt.ones(*sa) @ rt.ones(*sb)
    assert str(eager.value) == text
    with pytest.raises(RuntimeError) as captured:
        planner.compile(lambda a, b: a @ b, fullgraph=True)(rt.ones(*sa), rt.ones(*sb))
    assert str(captured.value) == text
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError) as theirs:
        torch.ones(sa) @ torch.ones(sb)
    assert str(theirs.value) == text


def test_cat_shape_mismatch():
    # PyTorch's text; a ShapeError: a RuntimeError, as PyTorch's, and a ValueError, as before
    with pytest.raises(ValueError, match="Sizes of tensors must match except in dimension 0"):
        rt.cat([rt.ones(2, 3), rt.ones(2, 4)], dim=0)


def test_reshape_bad_size():
    with pytest.raises(ValueError, match=r"shape '\[4, 2\]' is invalid for input of size 6"):
        rt.ones(2, 3).reshape(4, 2)


def test_float_indices_type_error():
    x = rt.ones(3, 4)
    with pytest.raises(TypeError):
        x[rt.tensor([0.0, 1.0])]


def test_sum_bad_dim():
    with pytest.raises((ValueError, IndexError)):
        rt.ones(2, 3).sum(dim=2)


def test_erf_of_a_zero_dim_tensor():
    import math

    x = rt.tensor(0.5, dtype=rt.float64, requires_grad=True)
    y = x.erf()
    assert y.shape == () and abs(y.item() - math.erf(0.5)) < 1e-15
    y.backward()
    assert abs(x.grad.item() - 2 / math.sqrt(math.pi) * math.exp(-0.25)) < 1e-12


def test_rounding_values_and_dtypes_against_torch():
    torch = pytest.importorskip("torch")
    half = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997]
    for name in ("round", "floor", "ceil", "trunc", "frac"):
        ours = getattr(rt, name)(rt.tensor(half))
        theirs = getattr(torch, name)(torch.tensor(half))
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=name)
    for name in ("round", "floor", "ceil", "trunc"):  # an integer tensor is its own result
        ours = getattr(rt, name)(rt.tensor([1, -2, 3]))
        theirs = getattr(torch, name)(torch.tensor([1, -2, 3]))
        assert ours.dtype is rt.int64 and str(theirs.dtype) == "torch.int64", name
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    for name in ("log1p", "expm1", "log2", "log10", "tan"):  # integers become float32
        ours = getattr(rt, name)(rt.tensor([1, 2, 3]))
        assert ours.dtype is rt.float32, name
    tiny = np.array([1e-10, -1e-12, 3e-8])
    np.testing.assert_array_equal(rt.log1p(rt.tensor(tiny)).numpy(), np.log1p(tiny))
    np.testing.assert_array_equal(rt.expm1(rt.tensor(tiny)).numpy(), np.expm1(tiny))


def test_isclose_allclose_equal_against_torch():
    torch = pytest.importorskip("torch")
    inf, nan = float("inf"), float("nan")
    a = [1.0, 1.0 + 1e-6, inf, -inf, nan, 0.0, 1e-9, 2.0]
    b = [1.0, 1.0, inf, inf, nan, -0.0, 0.0, 2.1]
    for kw in ({}, {"equal_nan": True}, {"rtol": 0.1}, {"atol": 1e-8, "rtol": 0.0}):
        ours = rt.isclose(rt.tensor(a), rt.tensor(b), **kw)
        theirs = torch.isclose(torch.tensor(a), torch.tensor(b), **kw)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=str(kw))
    ours = rt.tensor([1, 5, 9]).isclose(rt.tensor([1, 6, 12]), rtol=0.2, atol=0)
    theirs = torch.tensor([1, 5, 9]).isclose(torch.tensor([1, 6, 12]), rtol=0.2, atol=0)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert rt.allclose(rt.ones(3), rt.ones(3) + 1e-9) and not rt.allclose(rt.ones(2), rt.zeros(2))
    assert rt.equal(rt.ones(2, 3), rt.ones(2, 3)) and not rt.equal(rt.ones(3), rt.ones(2))
    assert not rt.tensor([nan]).equal(rt.tensor([nan]))
    with pytest.raises(RuntimeError, match="did not match"):
        rt.isclose(rt.ones(2), rt.ones(2, dtype=rt.float64))


def test_new_tensor_helpers_and_metadata_against_torch():
    torch = pytest.importorskip("torch")
    for lib in (rt, torch):
        x = lib.ones(2, 3, dtype=lib.float64)
        assert tuple(x.new_ones(2).shape) == (2,) and x.new_ones(2).dtype == lib.float64
        assert x.new_full((2, 2), 7.0).tolist() == [[7.0, 7.0], [7.0, 7.0]]
        assert tuple(x.new_empty(4, 1).shape) == (4, 1)
        assert x.new_tensor([1, 2]).dtype == lib.float64
        assert x.new_zeros(3, dtype=lib.int64).dtype == lib.int64
        t = x.t()
        assert t.stride() == (1, 3) and t.stride(0) == 1 and not t.is_contiguous()
        assert x.is_contiguous() and x.ndimension() == 2 and x.nelement() == 6
        assert x.element_size() == 8
    m = rt.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    y = m * 1.0
    y.masked_fill_(rt.tensor([[True, False, False], [False, False, True]]), -1.0)
    y.sum().backward()
    np.testing.assert_array_equal(y.detach().numpy(), [[-1, 1, 2], [3, 4, -1]])
    np.testing.assert_array_equal(m.grad.numpy(), [[0, 1, 1], [1, 1, 0]])
    np.testing.assert_array_equal(m.detach().where(m.detach() > 2, -m.detach()).numpy(),
                                  [[0, -1, -2], [3, 4, 5]])


@pytest.mark.parametrize("backend", ["interpreter", "llvm"])
def test_new_pointwise_ops_compile_without_fallback(backend):
    x = rt.tensor(np.abs(N(4, 5)) + 0.1, requires_grad=True)
    y = rt.tensor(N(4, 5))

    def step(x, y):
        z = (x.log1p() + x.expm1().tan() * 0.1 + x.log2() - m_floor(y) * y.frac()
             + rt.lerp(x, y, 0.25) + rt.addcdiv(x, y, x + 1, value=0.5) + y.round(decimals=1))
        (gx,) = rt.autograd.grad(z.sum(), [x])
        return z, gx

    m_floor = rt.floor
    want = step(x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = planner.compile(step, backend=backend)(x, y)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-6)
