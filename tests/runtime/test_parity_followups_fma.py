"""lerp, addcmul and add/sub with alpha rounded once, as PyTorch's CPU kernels (an fma):
bit for bit against torch, with their backward nodes, gradients and errors."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import runtime as rt
from runtime.ops.prims import _fma

torch = pytest.importorskip("torch")

FLOATS = ["float32", "float64"]
ALL_FLOATS = FLOATS + ["float16", "bfloat16"]


def _pair(dtype: str, shape: tuple[int, ...], seed: int) -> tuple[list, list]:
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(shape).astype(np.float32) for _ in range(3)]
    arrays[2] = rng.uniform(-0.3, 1.3, shape).astype(np.float32)  # a weight on both sides
    ts = [torch.from_numpy(a).to(getattr(torch, dtype)) for a in arrays]
    rs = [rt.tensor(a).to(getattr(rt, dtype)) for a in arrays]
    return ts, rs


def _bits_equal(t, r) -> None:
    a = t.detach().float().numpy() if t.dtype in (torch.float16, torch.bfloat16) \
        else t.detach().numpy()
    b = r.detach().float().numpy() if r.dtype in (rt.float16, rt.bfloat16) else r.detach().numpy()
    np.testing.assert_array_equal(a, b)
    assert (np.signbit(a) == np.signbit(b)).all()


@pytest.mark.parametrize("dtype", ALL_FLOATS)
@pytest.mark.parametrize("n", [7, 1000])
@pytest.mark.parametrize("w", [0.3, 0.7, -0.2, 1.4])
def test_lerp_scalar_weight_bits(dtype, n, w):
    (ta, tb, _), (ra, rb, _) = _pair(dtype, (n,), n)
    _bits_equal(torch.lerp(ta, tb, w), rt.lerp(ra, rb, w))
    _bits_equal(ta.clone().lerp_(tb, w), ra.clone().lerp_(rb, w))


@pytest.mark.parametrize("dtype", ALL_FLOATS)
def test_lerp_tensor_weight_bits(dtype):
    (ta, tb, tw), (ra, rb, rw) = _pair(dtype, (40, 37), 3)
    _bits_equal(torch.lerp(ta, tb, tw), rt.lerp(ra, rb, rw))
    _bits_equal(torch.lerp(ta.t(), tb.t(), tw.t()[:, :1]), rt.lerp(ra.t(), rb.t(), rw.t()[:, :1]))
    _bits_equal(ta.clone().lerp_(tb, tw), ra.clone().lerp_(rb, rw))


@pytest.mark.parametrize("dtype", ALL_FLOATS)
@pytest.mark.parametrize("value", [1, 0.3, -0.7])
def test_addcmul_bits(dtype, value):
    (ta, tb, tc), (ra, rb, rc) = _pair(dtype, (1000,), 4)
    _bits_equal(torch.addcmul(ta, tb, tc, value=value), rt.addcmul(ra, rb, rc, value=value))
    _bits_equal(ta.clone().addcmul_(tb, tc, value=value), ra.clone().addcmul_(rb, rc, value=value))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("alpha", [0.3, -0.01, 2, -3])
def test_add_sub_alpha_bits(dtype, alpha):
    (ta, tb, _), (ra, rb, _) = _pair(dtype, (1000,), 5)
    _bits_equal(torch.add(ta, tb, alpha=alpha), rt.add(ra, rb, alpha=alpha))
    _bits_equal(torch.sub(ta, tb, alpha=alpha), rt.sub(ra, rb, alpha=alpha))
    _bits_equal(ta.clone().add_(tb, alpha=alpha), ra.clone().add_(rb, alpha=alpha))
    _bits_equal(ta.clone().sub_(tb, alpha=alpha), ra.clone().sub_(rb, alpha=alpha))


@pytest.mark.parametrize("dtype", FLOATS)
def test_special_values_bits(dtype):
    v = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 3e38, -3e38, 1e-40, 5e-45,
                  1e-310 if dtype == "float64" else 1e-39], dtype)
    a, b = (x.ravel() for x in np.meshgrid(v, v))
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    ra, rb = rt.tensor(a), rt.tensor(b)
    with np.errstate(all="ignore"):
        for w in (0.0, 0.25, 0.75):
            _bits_equal(torch.lerp(ta, tb, w), rt.lerp(ra, rb, w))
        for alpha in (2, 0.3, -1.5):
            _bits_equal(torch.add(ta, tb, alpha=alpha), rt.add(ra, rb, alpha=alpha))
        _bits_equal(torch.addcmul(ta, tb, tb, value=0.5), rt.addcmul(ra, rb, rb, value=0.5))


def test_fma_is_rounded_once_where_float64_would_round_twice():
    # (1+2^-23)2^-12 * (1-2^-23)2^-12 + (1+2^-23): the exact sum lies just below a float32
    # halfway point that a float64 sum rounds onto (then to even: 1+2^-22)
    a = np.array([(1 + 2.0**-23) * 2.0**-12], np.float32)
    b = np.array([(1 - 2.0**-23) * 2.0**-12], np.float32)
    c = np.array([1 + 2.0**-23], np.float32)
    assert np.float32(np.float64(a[0]) * np.float64(b[0]) + np.float64(c[0])) != c[0]
    assert _fma(np, a, b, c)[0] == c[0]
    x = np.array([1.0 + 2.0**-52, 3.0 - 2.0**-51])  # float64: against exact fractions
    y, z = np.array([1.0 - 2.0**-52, 1.0 / 3]), np.array([-1.0, 2.0**-60])
    exact = [Fraction(float(p)) * Fraction(float(q)) + Fraction(float(r)) for p, q, r in
             zip(x, y, z)]
    assert list(_fma(np, x, y, z)) == [e.numerator / e.denominator for e in exact]


def test_backward_nodes_and_gradients_match_torch():
    got = []
    for m in (torch, rt):
        x = m.tensor([0.5, -1.0, 2.0], dtype=m.float64, requires_grad=True)
        y = m.tensor([1.5, 0.25, -3.0], dtype=m.float64, requires_grad=True)
        w = m.tensor([0.2, 0.8, 0.5], dtype=m.float64, requires_grad=True)
        outs = [m.lerp(x, y, 0.3), m.lerp(x, y, w), m.addcmul(x, y, w, value=0.5),
                m.add(x, y, alpha=0.3), m.sub(x, y, alpha=0.3)]
        names = [o.grad_fn.name() for o in outs]
        structure = [[type(f).__name__ if f is not None else None
                      for f, _ in o.grad_fn.next_functions] for o in outs]
        sum(o.sum() for o in outs).backward()
        got.append((names, structure, x.grad.tolist(), y.grad.tolist(), w.grad.tolist()))
    assert got[0] == got[1]
    assert got[1][0] == ["LerpBackward0", "LerpBackward1", "AddcmulBackward0", "AddBackward0",
                         "SubBackward0"]


def test_half_nodes_are_torchs():
    x = rt.ones(3, dtype=rt.float16, requires_grad=True)
    assert rt.lerp(x, x * 2, 0.3).grad_fn.name() == "LerpBackward0"
    assert rt.addcmul(x, x, x).grad_fn.name() == "AddcmulBackward0"


@pytest.mark.parametrize("fn", [
    lambda m, x, y, w: m.lerp(x, y, w),
    lambda m, x, y, w: m.lerp(x, y, 0.7),
    lambda m, x, y, w: m.addcmul(x, y, w, value=-0.5),
    lambda m, x, y, w: m.add(x, y, alpha=0.3),
    lambda m, x, y, w: m.sub(x, y[0], alpha=1.7),
])
def test_gradcheck(fn):
    rng = np.random.default_rng(0)
    args = [rt.tensor(rng.standard_normal((3, 4)), requires_grad=True) for _ in range(3)]
    assert rt.autograd.gradcheck(lambda x, y, w: fn(rt, x, y, w), args)


def test_lerp_inplace_with_weight_requiring_grad():
    got = []
    for m in (torch, rt):
        w = m.tensor([0.2, 0.9], requires_grad=True)
        t = m.tensor([1.0, 2.0])
        t.lerp_(m.tensor([3.0, -1.0]), w)
        t.sum().backward()
        got.append((t.grad_fn.name(), w.grad.tolist(), t.tolist()))
    assert got[0] == got[1]


@pytest.mark.parametrize("call", [
    lambda m: m.lerp(m.ones(3), 2.0, 0.5),
    lambda m: m.lerp(m.ones(3), m.ones(3), m.ones(3, dtype=m.float64)),
    lambda m: m.lerp(m.ones(3), m.ones(3, dtype=m.float64), 0.5),
    lambda m: m.lerp(m.ones(3), m.ones(3), 1e39),
    lambda m: m.lerp(m.ones(3, dtype=m.int64), m.ones(3, dtype=m.int64), m.ones(3, dtype=m.int64)),
    lambda m: m.ones(3).lerp_(m.ones(2, 3), 0.5),
])
def test_lerp_errors_are_torchs(call):
    errors = []
    for m in (torch, rt):
        with pytest.raises(Exception) as e:
            call(m)
        errors.append((type(e.value), str(e.value)))
    assert errors[0] == errors[1]


def test_lerp_zero_dim_weight_of_another_dtype():
    t = torch.lerp(torch.ones(3), torch.full((3,), 3.0), torch.tensor(0.3, dtype=torch.float64))
    r = rt.lerp(rt.ones(3), rt.full((3,), 3.0), rt.tensor(0.3, dtype=rt.float64))
    _bits_equal(t, r)


def test_adam_first_moment_matches_torch_bitwise():
    rng = np.random.default_rng(0)
    p0 = rng.standard_normal((16, 9)).astype(np.float32)
    tp, rp = torch.nn.Parameter(torch.from_numpy(p0.copy())), rt.nn.Parameter(rt.tensor(p0))
    to, ro = torch.optim.Adam([tp], lr=1e-2, foreach=False), rt.optim.Adam([rp], lr=1e-2)
    for _ in range(5):
        g = rng.standard_normal((16, 9)).astype(np.float32)
        tp.grad, rp.grad = torch.from_numpy(g), rt.tensor(g)
        to.step()
        ro.step()
    _bits_equal(to.state[tp]["exp_avg"], ro.state[rp]["exp_avg"])
