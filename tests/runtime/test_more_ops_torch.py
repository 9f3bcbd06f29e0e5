"""The ops of runtime.ops.more_ops and the inverse/hyperbolic primitives against PyTorch:
values and gradients on the same inputs, and error types and texts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")

g = np.random.default_rng(0)
X = g.standard_normal((4, 5))
U = g.uniform(-0.9, 0.9, (4, 5))  # inside asin/acos/atanh's domain
BIG = 1.5 + g.uniform(0, 3, (4, 5))  # inside acosh's

CASES: dict[str, Callable[[Any, Any], Any]] = {
    "asin": lambda m, x: m.asin(x * 0 + m.tensor(U)) * x,
    "acos": lambda m, x: (x * 0.3).clamp(-0.9, 0.9).acos(),
    "atan": lambda m, x: m.atan(x * 3),
    "sinh": lambda m, x: m.sinh(x),
    "cosh": lambda m, x: x.cosh(),
    "asinh": lambda m, x: m.asinh(x * 4),
    "acosh": lambda m, x: m.acosh(x * x + 1.5),
    "atanh": lambda m, x: m.atanh(x * 0.3),
    "atan2": lambda m, x: m.atan2(x[:3], x[1:].flip(0)),
    "atan2_broadcast": lambda m, x: x.atan2(x[0]),
    "fmod": lambda m, x: m.fmod(x * 5, 1.5),
    "fmod_tensor": lambda m, x: m.fmod(x[1:] * 4, x[:3].abs() + 0.5),
    "hypot": lambda m, x: m.hypot(x[:3], x[1:]),
    "hstack": lambda m, x: m.hstack([x, x[:, :2] * 2]),
    "hstack_1d": lambda m, x: m.hstack([x[0], x[1]]),
    "vstack": lambda m, x: m.vstack([x[0], x[1:3]]),
    "dstack": lambda m, x: m.dstack([x, x * 3]),
    "dstack_1d": lambda m, x: m.dstack([x[0], x[1]]),
    "column_stack": lambda m, x: m.column_stack([x[0], x[1:3].T, x[3]]),
    "meshgrid_ij": lambda m, x: m.meshgrid(x[0, :3], x[1], indexing="ij"),
    "meshgrid_xy": lambda m, x: m.meshgrid(x[0, :3], x[1], x[2, :2], indexing="xy"),
    "trace": lambda m, x: m.trace(x),
    "trace_tall": lambda m, x: x[:, :3].T.trace(),
    "diff": lambda m, x: m.diff(x),
    "diff_n2_dim0": lambda m, x: m.diff(x, n=2, dim=0),
    "diff_pre_append": lambda m, x: m.diff(x, dim=1, prepend=x[:, :1] * 2, append=x[:, :2]),
    "diff_method": lambda m, x: x.diff(n=3),
    "rot90": lambda m, x: m.rot90(x),
    "rot90_k2": lambda m, x: m.rot90(x, 2),
    "rot90_k3": lambda m, x: x.reshape(2, 2, 5).rot90(3, (2, 0)),
    "rot90_neg": lambda m, x: m.rot90(x, -1, (1, 0)),
    "tensordot_int": lambda m, x: m.tensordot(x.reshape(2, 2, 5), x.reshape(5, 2, 2), 1),
    "tensordot_lists": lambda m, x: m.tensordot(x.reshape(2, 2, 5), x.reshape(5, 2, 2),
                                                dims=([2, 0], [0, 2])),
    "tensordot_zero": lambda m, x: m.tensordot(x[0], x[1, :3], dims=0),
    "reshape_as": lambda m, x: x.reshape_as(x.T),
    "softmin": lambda m, x: m.nn.functional.softmin(x, 1),
    "softmin_module": lambda m, x: m.nn.Softmin(dim=0)(x),
    "softshrink": lambda m, x: m.nn.functional.softshrink(x, 0.4),
    "hardshrink": lambda m, x: m.nn.Hardshrink(0.3)(x),
    "pairwise_distance": lambda m, x: m.nn.functional.pairwise_distance(x[:2], x[2:]),
    "pairwise_distance_p1": lambda m, x: m.nn.PairwiseDistance(1.0, keepdim=True)(x[:2],
                                                                                   x[2:]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(name: str) -> None:
    xr, xt = rt.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
    a, b = CASES[name](rt, xr), CASES[name](torch, xt)
    a = a if isinstance(a, tuple) else (a,)
    b = b if isinstance(b, tuple) else (b,)
    for u, v in zip(a, b, strict=True):
        assert tuple(u.shape) == tuple(v.shape)
        np.testing.assert_allclose(u.detach().numpy(), v.detach().numpy(), rtol=1e-12,
                                   atol=1e-14)
        assert u.dtype.name == str(v.dtype).removeprefix("torch.")
    up = [g.standard_normal(tuple(v.shape)) for v in b]
    sum((u * rt.tensor(w)).sum() for u, w in zip(a, up)).backward()
    sum((v * torch.tensor(w)).sum() for v, w in zip(b, up)).backward()
    np.testing.assert_allclose(xr.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("op", ["asin", "acos", "atanh", "acosh"])
def test_out_of_domain_is_nan_as_in_torch(op: str) -> None:
    x = np.array([-2.0, 0.5, 2.0, 0.99])
    np.testing.assert_array_equal(np.isnan(getattr(rt, op)(rt.tensor(x)).numpy()),
                                  np.isnan(getattr(torch, op)(torch.tensor(x)).numpy()))


def test_fmod_keeps_the_sign_of_the_dividend_as_torch() -> None:
    a = np.array([-7.5, 7.5, -3.0, 3.0, 0.0])
    for b in (2.0, -2.0):
        np.testing.assert_array_equal(rt.fmod(rt.tensor(a), b).numpy(),
                                      torch.fmod(torch.tensor(a), b).numpy())
    ai = np.array([-7, 7, -3, 3])
    got = rt.fmod(rt.tensor(ai), 2)
    want = torch.fmod(torch.tensor(ai), 2)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert got.dtype.name == str(want.dtype).removeprefix("torch.")


def test_finfo_and_iinfo_match_torch() -> None:
    for name in ("float32", "float64", "float16"):
        a, b = rt.finfo(getattr(rt, name)), torch.finfo(getattr(torch, name))
        for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
            assert getattr(a, field) == getattr(b, field), (name, field)
    a, b = rt.iinfo(rt.int64), torch.iinfo(torch.int64)
    assert (a.bits, a.min, a.max) == (b.bits, b.min, b.max)
    assert rt.finfo().eps == torch.finfo().eps
    assert rt.get_default_dtype().name == str(torch.get_default_dtype()).removeprefix("torch.")


def _message(fn: Any) -> tuple[type, str]:
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return type(e), str(e).split("\n")[0]
    raise AssertionError("no error")


@pytest.mark.parametrize("case", ["rot90_dims", "rot90_same", "rot90_1d", "tensordot",
                                  "tensordot_lists", "diff_0d", "diff_order", "meshgrid",
                                  "finfo", "iinfo", "uniform", "normal", "hstack_empty"])
def test_errors_match_torch(case: str) -> None:
    def call(m: Any) -> Any:
        x = m.zeros(3, 4)
        if case == "rot90_dims":
            return m.rot90(x, 1, (0,))
        if case == "rot90_same":
            return m.rot90(x, 1, (1, 1))
        if case == "rot90_1d":
            return m.rot90(m.zeros(3))
        if case == "tensordot":
            return m.tensordot(x, m.zeros(3, 4), 1)
        if case == "tensordot_lists":
            return m.tensordot(x, x, ([0, 1], [0]))
        if case == "diff_0d":
            return m.diff(m.tensor(1.0))
        if case == "diff_order":
            return m.diff(x, n=-1)
        if case == "meshgrid":
            return m.meshgrid(m.zeros(3), m.zeros(2), indexing="yx")
        if case == "finfo":
            return m.finfo(m.int64)
        if case == "iinfo":
            return m.iinfo(m.float32)
        if case == "uniform":
            return x.uniform_(2.0, 1.0)
        if case == "normal":
            return x.normal_(0.0, -1.0)
        return m.hstack([])

    got, want = _message(lambda: call(rt)), _message(lambda: call(torch))
    assert got[0] is want[0]
    assert got[1] == want[1].replace("torch.", "runtime.") or got[1] == want[1]


def test_parameter_dict_matches_torch() -> None:
    found = []
    for m in (rt, torch):
        d = m.nn.ParameterDict({"w": m.zeros(2, 3), "b": m.nn.Parameter(m.ones(3))})
        d["extra"] = m.zeros(1)
        d.update([("w2", m.ones(4)), ("a", m.ones(1))])
        del d["extra"]
        module = m.nn.Module()
        module.d = d
        assert all(isinstance(p, m.nn.Parameter) for p in d.values())
        assert "w" in d and len(d) == 4 and d.get("nope") is None
        found.append(([n for n, _ in module.named_parameters()], list(d), d.pop("b").shape[0]))
    assert found[0] == found[1]


@pytest.mark.parametrize("fn", ["dropout1d", "dropout2d"])
def test_channel_dropout_errors_match_torch(fn: str) -> None:
    if fn == "dropout1d":
        assert _message(lambda: rt.nn.functional.dropout1d(rt.zeros(2, 3, 4, 5), 0.5)) == \
            _message(lambda: torch.nn.functional.dropout1d(torch.zeros(2, 3, 4, 5), 0.5))
    assert _message(lambda: getattr(rt.nn.functional, fn)(rt.zeros(2, 3, 4), 1.5)) == \
        _message(lambda: getattr(torch.nn.functional, fn)(torch.zeros(2, 3, 4), 1.5))


@pytest.mark.parametrize("shape", [(4, 6, 3, 3), (4, 6, 5), (4, 6, 2, 2, 2)])
def test_dropout2d_drops_what_torchs_drops(shape: tuple[int, ...]) -> None:
    """One draw per (sample, channel) whatever the rank, as PyTorch's (which warns below and
    above 4-D): the zero pattern is constant over the rest of each channel in both."""
    import warnings

    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        a = rt.nn.functional.dropout2d(rt.ones(*shape), 0.5).numpy()
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        b = torch.nn.functional.dropout2d(torch.ones(*shape), 0.5).numpy()
    assert [str(w.message) for w in ours] == [str(w.message) for w in theirs]
    for v in (a, b):
        flat = v.reshape(shape[0], shape[1], -1)
        assert np.all((flat == 0).all(-1) | (flat == 2.0).all(-1))


def test_reprs_match_torch() -> None:
    for make in (lambda m: m.nn.Dropout(0.25), lambda m: m.nn.Dropout2d(0.1, inplace=True),
                 lambda m: m.nn.Dropout1d(), lambda m: m.nn.Softmin(1),
                 lambda m: m.nn.Softshrink(0.3), lambda m: m.nn.Hardshrink(),
                 lambda m: m.nn.PairwiseDistance()):
        assert repr(make(rt)) == repr(make(torch))


IMG = g.standard_normal((2, 3, 5, 7))
INTERPOLATE = [
    {"scale_factor": 2}, {"size": (3, 4)}, {"size": 9, "mode": "nearest-exact"},
    {"size": (8, 11), "mode": "bilinear"},
    {"size": (8, 11), "mode": "bilinear", "align_corners": True},
    {"scale_factor": 1.7, "mode": "bilinear"}, {"scale_factor": (0.5, 0.6), "mode": "bilinear"},
    {"scale_factor": (1.5, 0.6), "mode": "nearest-exact"},
    {"scale_factor": 2.3, "mode": "nearest", "recompute_scale_factor": True},
    {"size": (1, 3), "mode": "bilinear", "align_corners": True},
]


@pytest.mark.parametrize("kw", INTERPOLATE, ids=str)
def test_interpolate_matches_torch(kw: dict[str, Any]) -> None:
    xr, xt = rt.tensor(IMG, requires_grad=True), torch.tensor(IMG, requires_grad=True)
    a = rt.nn.functional.interpolate(xr, **kw)
    b = torch.nn.functional.interpolate(xt, **kw)
    assert tuple(a.shape) == tuple(b.shape)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12, atol=1e-12)
    w = g.standard_normal(tuple(b.shape))
    (a * rt.tensor(w)).sum().backward()
    (b * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(xr.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_linear_interpolate_and_upsample_match_torch() -> None:
    seq = g.standard_normal((2, 3, 6))
    for kw in ({"size": 10, "mode": "linear"}, {"scale_factor": 0.5, "mode": "linear",
                                                  "align_corners": True}):
        np.testing.assert_allclose(
            rt.nn.functional.interpolate(rt.tensor(seq), **kw).numpy(),
            torch.nn.functional.interpolate(torch.tensor(seq), **kw).numpy(), rtol=1e-12)
    for make in (lambda m: m.nn.Upsample(scale_factor=2, mode="bilinear"),
                 lambda m: m.nn.Upsample(size=(4, 4)), lambda m: m.nn.AdaptiveMaxPool2d(3)):
        up_r, up_t = make(rt), make(torch)
        assert repr(up_r) == repr(up_t)
        np.testing.assert_allclose(up_r(rt.tensor(IMG)).numpy(),
                                   up_t(torch.tensor(IMG)).numpy(), rtol=1e-12)


@pytest.mark.parametrize("size", [3, (5, 7), (2, 3), (4, 5), (1, 1), (None, 2)])
def test_adaptive_max_pool2d_matches_torch(size: Any) -> None:
    xr, xt = rt.tensor(IMG, requires_grad=True), torch.tensor(IMG, requires_grad=True)
    (a, ia), (b, ib) = (rt.nn.functional.adaptive_max_pool2d(xr, size, True),
                        torch.nn.functional.adaptive_max_pool2d(xt, size, True))
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    np.testing.assert_array_equal(ia.numpy(), ib.numpy())
    a.sum().backward()
    b.sum().backward()
    np.testing.assert_array_equal(xr.grad.numpy(), xt.grad.numpy())
    unbatched = rt.nn.functional.adaptive_max_pool2d(rt.tensor(IMG[0]), size)
    np.testing.assert_array_equal(
        unbatched.numpy(), torch.nn.functional.adaptive_max_pool2d(torch.tensor(IMG[0]),
                                                                   size).numpy())


def test_clamp_with_tensor_bounds_matches_torch() -> None:
    lo, hi = g.standard_normal(5) * 0.5, g.standard_normal((4, 1)) + 1.0
    got = []
    for m in (rt, torch):
        x = m.tensor(X, requires_grad=True)
        a, b = m.tensor(lo, requires_grad=True), m.tensor(hi, requires_grad=True)
        y = m.clamp(x, min=a, max=b) + x.clamp(max=b) * 2 + x.clamp(a)
        y.sum().backward()
        z = m.tensor(X).clone()
        z.clamp_(min=m.tensor(lo))
        got.append([v.detach().numpy() for v in (y, x.grad, a.grad, b.grad, z)])
    for u, v in zip(*got, strict=True):
        np.testing.assert_allclose(u, v, rtol=1e-12)
    assert _message(lambda: rt.clamp(rt.zeros(2), None, None)) == \
        _message(lambda: torch.clamp(torch.zeros(2), None, None))


def test_softmax_dtype_and_implicit_dim_match_torch() -> None:
    x32 = X.astype(np.float32)
    for fn in ("softmax", "log_softmax"):
        a = getattr(rt.nn.functional, fn)(rt.tensor(x32), 1, dtype=rt.float64)
        b = getattr(torch.nn.functional, fn)(torch.tensor(x32), 1, dtype=torch.float64)
        assert a.dtype is rt.float64
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)
        for x in (X, X[0], X.reshape(2, 2, 5)):
            with pytest.warns(UserWarning, match="Implicit dimension choice"):
                a = getattr(rt.nn.functional, fn)(rt.tensor(x))
            with pytest.warns(UserWarning):
                b = getattr(torch.nn.functional, fn)(torch.tensor(x))
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)


@pytest.mark.parametrize("case", ["both", "neither", "mode", "bilinear_3d", "corners",
                                  "sizes"])
def test_interpolate_errors_match_torch(case: str) -> None:
    def call(m: Any) -> Any:
        x = m.zeros(1, 2, 4, 4)
        f = m.nn.functional.interpolate
        if case == "both":
            return f(x, size=3, scale_factor=2)
        if case == "neither":
            return f(x)
        if case == "mode":
            return f(x, size=3, mode="cubic")
        if case == "bilinear_3d":
            return f(m.zeros(1, 2, 4), size=3, mode="bilinear")
        if case == "corners":
            return f(x, size=3, align_corners=True)
        return f(x, size=(3, 3, 3))

    got, want = _message(lambda: call(rt)), _message(lambda: call(torch))
    assert got[0] is want[0]
    if case != "mode":
        assert got[1] == want[1]


@pytest.mark.parametrize("bad", [5, "ab", [3], [("a",)], [(1, 2, 3)]], ids=str)
@pytest.mark.parametrize("container", ["ModuleDict", "ParameterDict"])
def test_dict_update_errors_match_torch(container: str, bad: Any) -> None:
    assert _message(lambda: getattr(rt.nn, container)().update(bad)) == \
        _message(lambda: getattr(torch.nn, container)().update(bad))
