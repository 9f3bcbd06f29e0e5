"""Elementwise math, special functions and activations against PyTorch at edge points: NaN,
+-inf, -0.0, 0, +-1, poles, large and tiny values, in float32 and float64. Values are compared
in meaning (NaN places, the signs of infinities and zeros), result dtypes exactly, float64
gradients for the same upward gradient (torch.autograd.grad), and second derivatives
(create_graph) at the regular points.

PyTorch is its own reference only where it agrees with itself: each element is evaluated in
a long tensor (its vectorized loop) and alone (its scalar loop), and where the two differ
(logit's gradient at -0, elu's at NaN...) either answer is accepted. The few places where this
runtime keeps a more accurate answer than PyTorch's are listed in ``_MORE_ACCURATE`` with the
reason."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")

EDGES = [math.nan, math.inf, -math.inf, -0.0, 0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 2.5, -3.0,
         1e-3, 7.0, 1e300, -1e300, 1e-300, -1e-300, 30.0, -30.0, 100.0, -100.0, 0.999, 1e-8,
         20.0, 800.0, -800.0, 3.0, -0.25]
PAIR_EDGES = [math.nan, math.inf, -math.inf, -0.0, 0.0, 1.0, -1.0, 0.5, 2.5, -3.0, 1e-300,
              1e300, -2.0]


def _get(m: Any, path: str) -> Any:
    for part in path.split("."):
        m = getattr(m, part)
    return m


def _fn(path: str, *args: Any, **kwargs: Any) -> Callable[..., Any]:
    return lambda m, *xs: _get(m, path)(*xs, *args, **kwargs)


UNARY: dict[str, Callable[..., Any]] = {n: _fn(n) for n in (
    "abs neg sign sgn exp exp2 expm1 log log2 log10 log1p sqrt rsqrt sin cos tan asin acos atan "
    "sinh cosh tanh asinh acosh atanh sigmoid erf erfc erfinv reciprocal square lgamma digamma "
    "i0 sinc logit nan_to_num special.ndtr special.log_ndtr special.entr special.ndtri "
    "special.i0e special.i1 special.i1e special.expit special.erfc special.erfcx "
    "special.erfinv special.psi "
    "special.gammaln "
    "nn.functional.hardsigmoid nn.functional.hardswish nn.functional.elu nn.functional.selu "
    "nn.functional.celu nn.functional.mish nn.functional.softsign nn.functional.logsigmoid "
    "nn.functional.tanhshrink nn.functional.relu6").split()}
UNARY.update({
    "logit_eps": _fn("logit", eps=0.25),
    "logit_eps0": _fn("logit", eps=0.0),
    "logit_eps_negative": _fn("logit", eps=-0.5),
    "nan_to_num_args": _fn("nan_to_num", nan=1.5, posinf=9.0, neginf=-9.0),
    "celu_alpha": _fn("nn.functional.celu", alpha=0.5),
    "elu_alpha": _fn("nn.functional.elu", alpha=2.0),
})
BINARY: dict[str, Callable[..., Any]] = {n: _fn(n) for n in (
    "atan2 hypot copysign xlogy special.xlog1py special.xlogy logaddexp logaddexp2 fmax fmin "
    "float_power pow add sub mul div true_divide maximum minimum fmod remainder").split()}

# (op, what, predicate on the inputs, reason): where this runtime's answer is kept over
# PyTorch's, which loses it to an overflow or a cancellation in its formula
_MORE_ACCURATE: list[Entry] = [
    ("digamma", "grad", lambda x: np.isfinite(x), "PyTorch's trigamma is 8e-10 off "
     "(1.6449340676 at 1, pi^2/6 = 1.6449340668); this runtime's 4e-16 (compared at 2e-9)"),
    ("special.psi", "grad", lambda x: np.isfinite(x), "digamma's"),
    ("sigmoid", "grad", lambda x: x >= 20, "PyTorch's y (1 - y) keeps none of 1 - y's digits"),
    ("special.expit", "grad", lambda x: x >= 20, "sigmoid's"),
    ("nn.functional.logsigmoid", "grad2", lambda x: x >= 20, "sigmoid's"),
    ("sigmoid", "grad2", lambda x: x >= 20, "sigmoid's"),
    ("special.expit", "grad2", lambda x: x >= 20, "sigmoid's"),
    ("sigmoid", "float32", lambda x: x <= -100, "1 / (1 + exp(100)) is 0 in float32; "
     "this runtime's exp(-100) / (1 + exp(-100)) is the float32 subnormal 3.8e-44"),
    ("special.expit", "float32", lambda x: x <= -100, "sigmoid's"),
    ("nn.functional.logsigmoid", "float32", lambda x: x >= 100, "sigmoid's (subnormals)"),
    ("sinc", "grad", lambda x: (np.abs(x) >= 1e300) | (np.abs(x) <= 1e-8),
     "PyTorch's (pi x cos(pi x) - sin(pi x)) / (pi x^2) overflows to 0 at 1e300 and cancels "
     "below 1e-4 (-2.1e-8 at 1e-8, where -pi^2 x / 3 is -3.3e-8)"),
    ("sinc", "grad2", lambda x: np.abs(x) <= 1e-8, "the same cancellation"),
    ("special.log_ndtr", "grad", lambda x: x <= -1e300, "PyTorch's exp(-x^2/2 - log_ndtr(x)) "
     "is exp(-inf + inf): NaN where the derivative is -x = 1e300"),
    ("special.log_ndtr", "grad2", lambda x: x <= -100, "the same cancellation (-0.99999 at "
     "-800, where -1 + 1/x^2 is -0.9999984)"),
    ("special.ndtr", "float64", lambda x: x <= -30, "PyTorch's 0 at -30 (its erf branch); "
     "erfc(30 / sqrt 2) / 2 is 4.9e-198"),
    ("nn.functional.mish", "grad2", lambda x: x >= 800, "PyTorch's NaN where tanh(softplus(x)) "
     "is 1"),
    ("nn.functional.tanhshrink", "grad2", lambda x: np.abs(x) < 1e-2, "x - tanh(x) cancels"),
    ("i0", "float64", lambda x: (np.abs(x) > 709.78) & (np.abs(x) < 713.98),
     "PyTorch's I0 is inf from 709.78 (its exp(x) overflows; I0 does at 713.98)"),
    ("logaddexp2", "float32", lambda a, b: a == b, "log2(2^a + 2^a) is a + 1 exactly; "
     "PyTorch's ln 2 / ln 2 rounds (-1e-8 at a = -1)"),
    ("logaddexp2", "float64", lambda a, b: a == b, "the same (-4.8e-17)"),
    ("hypot", "grad2", lambda a, b: (np.abs(a) <= 1e-300) | (np.abs(b) <= 1e-300),
     "PyTorch's (r^2 - a^2) / r^3 underflows (-1.5e284 at (1e-300, 0), where it is 0)"),
    ("logit", "grad2", lambda x: (x > 0) & (x <= 1e-300), "PyTorch's NaN where (2x - 1) / "
     "(x (1 - x))^2 is -inf"),
    ("logit_eps_negative", "grad2", lambda x: (x > 0) & (x <= 1e-300), "logit's"),
    ("logaddexp", "grad2", lambda a, b: np.abs(a - b) >= 700, "PyTorch's exp(b - a) "
     "overflows: NaN where the second derivative is 0"),
    ("logaddexp2", "grad2", lambda a, b: np.abs(a - b) >= 700, "logaddexp's"),
    ("sinc", "grad2", lambda x: np.abs(x) >= 1e300, "PyTorch's formula overflows to 0"),
    ("nn.functional.softsign", "grad", lambda x: np.abs(x) >= 1e300, "PyTorch's "
     "-8.3e-317 at 1e300, where 1 / (1 + |x|)^2 is 0"),
    ("logit_eps", "grad2", lambda x: (x < 0.25) | (x > 0.75), "PyTorch's NaN at 0 and 1 "
     "outside [eps, 1 - eps], where the gradient is 0 around them"),
    ("logit_eps0", "grad2", lambda x: (np.abs(x) <= 1e-300), "PyTorch's NaN at +-1e-300 "
     "(-inf inside, 0 outside)"),
    ("special.erfcx", "grad", lambda x: x >= 100, "PyTorch's 2x erfcx(x) - 2/sqrt(pi) "
     "cancels (0 at 1e300, 3e-11 off at 1e3; this runtime's 2e-13)"),
    ("special.erfcx", "grad2", lambda x: x >= 100, "the same"),
    ("special.i1", "grad2", lambda x: (np.abs(x) <= 1e-3) & (x != 0), "PyTorch's derivative "
     "of I0 - I1 / x cancels near 0 (0 at 1e-8, where it is 3x/8)"),
    ("special.i1e", "grad2", lambda x: (np.abs(x) <= 1e-3) & (x != 0), "PyTorch's 0 where "
     "e^-|x|'s kink gives -2 sign(x) I1'(0) = -+1"),
    ("copysign", "grad2", lambda a, b: (a != 0) & (np.abs(a) <= 1e-300), "PyTorch's "
     "(result' a - result) / a^2 underflows (1.5e284 at a = 1e-300, where it is 0)"),
]

# (op, what, predicate, reason): differences left, each a strict xfail in test_known_gap (it
# fails the day the difference is gone: take the entry out then)
KNOWN_GAPS: list[Entry] = [
    ("digamma", "grad2", lambda x: (x <= 0) & (x == np.floor(x)), "PyTorch's polygamma(2) "
     "at the poles (+-inf); this runtime's gradient there is trigamma's value held constant"),
    ("special.psi", "grad2", lambda x: (x <= 0) & (x == np.floor(x)), "digamma's"),
    ("special.i0e", "grad", lambda x: (x == 0) & np.signbit(x), "the sign of the zero "
     "gradient at -0 (PyTorch's i1e(-0) - sgn(-0) i0e is +0; the series' is -0)"),
    ("copysign", "grad2", lambda a, b: a == 0, "PyTorch's NaN at a = 0 (result / a's "
     "derivative); this runtime's gradient there is 0 held constant"),
    ("xlogy", "grad", lambda x, y: (x == 0) & np.signbit(x) & (y < 0), "the sign of y's "
     "zero gradient at x = -0, y < 0 (PyTorch's x / y is +0; a where's zero is -0 after / y)"),
    ("special.xlogy", "grad", lambda x, y: (x == 0) & np.signbit(x) & (y < 0), "xlogy's"),
    ("special.xlog1py", "grad", lambda x, y: (x == 0) & np.signbit(x) & (y < -1), "xlogy's"),
    ("float_power", "grad2", lambda a, b: (b >= 1e300) & (a >= 0) & (a < 1), "pow's second "
     "derivative b (b - 1) a^(b - 2) is inf * 0 = NaN where PyTorch's is 0"),
    ("pow", "grad2", lambda a, b: (b >= 1e300) & (a >= 0) & (a < 1), "float_power's"),
]


Entry = tuple[str, str, Callable[..., Any], str]


def _excused(name: str, what: str, gaps: list[Entry], *xs: np.ndarray) -> np.ndarray:
    """Where an entry of _MORE_ACCURATE or ``gaps`` for ``name`` and ``what`` holds."""
    keep = np.zeros(np.broadcast(*xs).shape, bool)
    for op, aspect, pred, _ in _MORE_ACCURATE + gaps:
        if op == name and aspect == what:
            with np.errstate(invalid="ignore"):
                keep |= np.broadcast_to(pred(*xs), keep.shape)
    return keep


def _np(t: Any) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        return t.detach().numpy(force=True)
    return np.asarray(t.detach().numpy())


def _agree(want: np.ndarray, got: np.ndarray, tol: float, zero_sign: bool) -> np.ndarray:
    """Elementwise: NaN with NaN, equal (a zero's sign included where ``zero_sign``), or
    within ``tol`` relative with the same sign."""
    w, g = want.astype(np.float64), got.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        same_sign = (np.signbit(w) == np.signbit(g)) | (not zero_sign and (w == 0) & (g == 0))
        close = np.isfinite(w) & np.isfinite(g) & (np.abs(g - w) <= tol * np.abs(w)) & same_sign
        return (np.isnan(w) & np.isnan(g)) | ((w == g) & same_sign) | close


def _check(what: str, torch_long: np.ndarray, torch_alone: np.ndarray, got: np.ndarray,
           tol: float, skip: np.ndarray, inputs: list[np.ndarray], zero_sign: bool = True
           ) -> None:
    """``got`` against PyTorch's answer, either loop's where they differ."""
    assert got.shape == torch_long.shape, f"{what}: shape {got.shape}, torch {torch_long.shape}"
    ok = (_agree(torch_long, got, tol, zero_sign) | _agree(torch_alone, got, tol, zero_sign)
          | skip)
    if not ok.all():
        bad = np.argwhere(~ok.reshape(-1))[:, 0][:6]
        flat = [np.broadcast_to(x, ok.shape).reshape(-1) for x in inputs]
        lines = [f"at {tuple(float(x[i]) for x in flat)}: runtime {got.reshape(-1)[i]!r}, "
                 f"torch {torch_long.reshape(-1)[i]!r} / {torch_alone.reshape(-1)[i]!r}"
                 for i in bad]
        pytest.fail(f"{what}: " + "; ".join(lines))


def _torch_both(fn: Callable[[list[Any]], Any], arrays: list[np.ndarray]) -> tuple[Any, Any]:
    """fn over the whole arrays (PyTorch's vectorized loop) and element by element (its
    scalar loop), stacked: numpy arrays of each result."""
    long = _np(fn([torch.tensor(a) for a in arrays]))
    n = arrays[0].size
    alone = np.stack([_np(fn([torch.tensor(a[i:i + 1]) for a in arrays]))
                      for i in range(n)]).reshape(long.shape)
    return long, alone


def _grads(m: Any, fn: Callable[..., Any], arrays: list[np.ndarray], upward: np.ndarray,
           order: int) -> list[np.ndarray]:
    """The gradient of sum(upward * fn(x...)) for each input, or the gradient of the sum of
    the first input's gradient (``order`` 2)."""
    ts = [m.tensor(a, requires_grad=True) for a in arrays]
    out = fn(m, *ts)
    gs = m.autograd.grad((out * m.tensor(upward)).sum(), ts, create_graph=order == 2,
                         allow_unused=True)
    if order == 2:
        first = gs[0]
        if first is None or not first.requires_grad:
            return [np.zeros_like(a) for a in arrays]
        gs = m.autograd.grad(first.sum(), ts, allow_unused=True)
    return [np.zeros_like(a) if g is None else _np(g) for a, g in zip(arrays, gs)]


def _compare(name: str, fn: Callable[..., Any], arrays: list[np.ndarray],
             gaps: list[Entry]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for dt in ("float32", "float64"):
            xs = [a.astype(dt) for a in arrays]
            want_long, want_alone = _torch_both(lambda ts: fn(torch, *ts), xs)
            got = fn(rt, *[rt.tensor(x) for x in xs])
            assert str(got.dtype).split(".")[-1] == want_long.dtype.name, \
                f"{name} {dt}: dtype {got.dtype}, torch {want_long.dtype}"
            _check(f"{name} {dt}", want_long, want_alone, _np(got),
                   1e-12 if dt == "float64" else 2e-6, _excused(name, dt, gaps, *xs), xs)
        positive = np.random.default_rng(0).uniform(0.5, 1.5, np.broadcast(*arrays).shape)
        mixed = positive.copy()
        mixed.reshape(-1)[1::3] *= -1
        grad_tol = 2e-9 if name in ("digamma", "special.psi") else 1e-10
        # the signs of zero gradients for a positive upward gradient; with negative ones too,
        # the signs of infinities (a zero's sign then follows each formula's order of
        # multiplication, where PyTorch's zeros_like gives +0); second derivatives in value,
        # NaN and inf places (1e-15 absolute: PyTorch's 2.8e-17 where hypot's is 0)
        for order, what, upward in ((1, "grad", positive), (1, "grad", mixed),
                                    (2, "grad2", positive)):
            try:
                long = _grads(torch, fn, arrays, upward, order)
            except RuntimeError as e:  # PyTorch has no second derivative (hardsigmoid)
                assert order == 2 and "is not implemented" in str(e), e
                continue
            alone = [np.stack(per).reshape(long[0].shape) if per else None
                     for per in zip(*[_grads(torch, fn, [a.reshape(-1)[i:i + 1] for a in arrays],
                                             upward.reshape(-1)[i:i + 1], order)
                                      for i in range(upward.size)])]
            got = _grads(rt, fn, arrays, upward, order)
            # a second derivative is compared where the function is regular: finite input,
            # finite first derivatives from PyTorch
            skip = _excused(name, what, gaps, *arrays)
            if order == 2:
                first = _grads(torch, fn, arrays, upward, 1)
                irregular = ~np.all([np.isfinite(a) for a in arrays], axis=0)
                for f in first:
                    irregular |= ~np.isfinite(f)
                skip = skip | irregular
            for i, (w, a, g) in enumerate(zip(long, alone, got)):
                if order == 2:  # 1e-15 absolute
                    skip = skip | (np.abs(w - g) <= 1e-15) | (np.abs(a.reshape(w.shape) - g) <= 1e-15)
                _check(f"{name} {what} {i}", w, a.reshape(w.shape), g,
                       grad_tol if order == 1 else 1e-8, skip, arrays,
                       order == 1 and upward is not mixed)


def _inputs(name: str) -> list[np.ndarray]:
    if name in UNARY:
        return [np.array(EDGES)]
    a = np.array(PAIR_EDGES)
    return [np.repeat(a, a.size), np.tile(a, a.size)]


@pytest.mark.parametrize("name", list(UNARY) + list(BINARY))
def test_edges(name: str) -> None:
    _compare(name, {**UNARY, **BINARY}[name], _inputs(name), KNOWN_GAPS)


@pytest.mark.parametrize("gap", [
    pytest.param(g, id=f"{g[0]}-{g[1]}", marks=pytest.mark.xfail(strict=True, reason=g[3]))
    for g in KNOWN_GAPS])
def test_known_gap(gap: Entry) -> None:
    """Each known difference still there: the comparison without its entry fails."""
    _compare(gap[0], {**UNARY, **BINARY}[gap[0]], _inputs(gap[0]),
             [g for g in KNOWN_GAPS if g is not gap])


# --- reductions and rounded division at their edges ---------------------------------------------

_PROD_INPUTS = {
    "one_zero": [2.0, 0.0, 3.0],
    "two_zeros": [2.0, 0.0, 3.0, -0.0],
    "inf_and_zero": [2.0, math.inf, 0.0],
    "nan_and_zero": [2.0, math.nan, 0.0],
    "inf": [2.0, math.inf, 3.0],
    "nan": [2.0, math.nan, 3.0],
    "edges": EDGES[:13],
    "rows": [[2.0, 0.0, 3.0], [0.0, 0.0, 1.0], [1.0, 2.0, 3.0], [math.inf, 0.0, 1.0],
             [math.nan, 0.0, 2.0], [-1.0, 4.0, 5.0]],
}
REDUCTIONS: dict[str, Callable[..., Any]] = {
    "prod": lambda m, x: m.prod(x),
    "prod_dim0": lambda m, x: m.prod(x, 0),
    "prod_dim_last_keepdim": lambda m, x: m.prod(x, -1, keepdim=True),
    "logcumsumexp": lambda m, x: m.logcumsumexp(x, 0),
    "logcumsumexp_last": lambda m, x: m.logcumsumexp(x, -1),
}


def _values_and_grad(m: Any, fn: Callable[..., Any], a: np.ndarray, upward: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
    x = m.tensor(a, requires_grad=True)
    out = fn(m, x)
    (g,) = m.autograd.grad((out * m.tensor(upward.reshape(tuple(out.shape)))).sum(), x)
    return _np(out), _np(g)


@pytest.mark.parametrize("data", list(_PROD_INPUTS))
@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_reduction_edges(name: str, data: str) -> None:
    """prod's gradient where a slice holds an inf or NaN is PyTorch's prod_backward (result /
    x without zeros, the product of the others with one, 0 with two over all of x); the
    running product's was NaN. logcumsumexp's is NaN at a +inf (the count of outputs it
    tops before)."""
    a = np.array(_PROD_INPUTS[data])
    fn = REDUCTIONS[name]
    shape = tuple(fn(torch, torch.tensor(a)).shape)
    upward = np.random.default_rng(1).uniform(0.5, 1.5, shape)
    want, want_g = _values_and_grad(torch, fn, a, upward)
    got, got_g = _values_and_grad(rt, fn, a, upward)
    _check(f"{name} {data}", want, want, got, 1e-12, np.zeros(want.shape, bool), [want])
    # the sign of a zero gradient after a -0 along the dim is PyTorch's product of the others,
    # this runtime's running product's +0 (the sweep's strict xfail)
    _check(f"{name} {data} gradient", want_g, want_g, got_g, 1e-10,
           np.zeros(a.shape, bool), [a], zero_sign=not name.startswith("prod"))


@pytest.mark.parametrize("mode", ["trunc", "floor"])
def test_rounded_division_edges(mode: str) -> None:
    """A rounded quotient keeps its -0 and passes zeros to both operands, as PyTorch's (the
    zero gradient joined by an add made -0 a +0; trunc's was NaN where b is 0 or NaN)."""
    e = np.array(PAIR_EDGES)
    a, b = np.repeat(e, e.size), np.tile(e, e.size)
    for m_name in ("value", "gradient"):
        want = [torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)]
        got = [rt.tensor(a, requires_grad=True), rt.tensor(b, requires_grad=True)]
        tq = torch.div(*want, rounding_mode=mode)
        rq = rt.div(*got, rounding_mode=mode)
        if m_name == "value":
            _check(f"div {mode}", _np(tq), _np(tq), _np(rq), 0.0, np.zeros(a.shape, bool),
                   [a, b])
            continue
        for w, g in zip(torch.autograd.grad(tq.sum(), want), rt.autograd.grad(rq.sum(), got)):
            _check(f"div {mode} gradient", _np(w), _np(w), _np(g), 0.0,
                   np.zeros(a.shape, bool), [a, b])


# --- other dtypes: integers, bools and half floats ---------------------------------------------

_OTHER_DTYPES = ["int64", "int32", "uint8", "bool", "float16", "bfloat16"]
# uint8 softsign: PyTorch's 1 + |x| wraps at 255 (x / 0 = inf); this runtime's is in float
_DTYPE_FREE = {("nn.functional.softsign", "uint8")}


def _raised_or(m: Any, fn: Callable[..., Any], arrays: list[np.ndarray], dtype: str) -> Any:
    try:
        return fn(m, *[m.tensor(a).to(getattr(m, dtype)) for a in arrays])
    except Exception as e:  # noqa: BLE001 - compared with PyTorch's
        return type(e).__name__, str(e).split("\n")[0]


@pytest.mark.parametrize("dtype", _OTHER_DTYPES)
@pytest.mark.parametrize("name", list(UNARY) + list(BINARY))
def test_other_dtypes(name: str, dtype: str) -> None:
    """The result dtype, value or error of each op for integer, bool and half inputs (a bool
    or uint8 operand of hypot/logaddexp was negated in its own dtype: garbage or an error;
    entr's float16 result was float32; log_ndtr/ndtri have PyTorch's half-precision
    error)."""
    if (name, dtype) in _DTYPE_FREE:
        return
    base = np.array([0.0, 1.0, 2.0, 5.0, 0.5] if dtype.startswith(("float", "bfloat"))
                    else [0, 1, 2, 5, 1])
    arrays = [base] if name in UNARY else [base, base[::-1].copy()]
    fn = {**UNARY, **BINARY}[name]
    want = _raised_or(torch, fn, arrays, dtype)
    got = _raised_or(rt, fn, arrays, dtype)
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and got[1] == want[1], f"{name} {dtype}: {got}, torch {want}"
        return
    assert not isinstance(got, tuple), f"{name} {dtype}: runtime raises {got}"
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], \
        f"{name} {dtype}: dtype {got.dtype}, torch {want.dtype}"
    w, g = want.float().numpy(), got.float().numpy() if hasattr(got, "float") else got
    tol = 1e-2 if dtype in ("float16", "bfloat16") else 2e-6
    np.testing.assert_allclose(np.asarray(g, np.float64), w.astype(np.float64), rtol=tol,
                               atol=tol, err_msg=f"{name} {dtype}")


def test_ndtri_of_subnormal_p() -> None:
    """ndtri of a subnormal p is PyTorch's to 1 ulp (its Newton steps on log erfc used erfc's
    subnormal digits, and e^(y^2) overflowed: NaN), its gradient inf."""
    p = np.array([1e-320, 5e-324, 1e-310, 1e-300, 1 - 1e-16])
    want = torch.special.ndtri(torch.tensor(p, requires_grad=True))
    x = rt.tensor(p, requires_grad=True)
    got = rt.special.ndtri(x)
    np.testing.assert_allclose(_np(got), _np(want), rtol=1e-15)
    (g,) = rt.autograd.grad(got.sum(), x)
    assert np.isposinf(_np(g)[:3]).all() and np.isfinite(_np(g)[3:]).all()


@pytest.mark.parametrize(("name", "fn", "arrays"), [
    ("erfc", lambda m, x, **k: m.erfc(x, **k), [np.array([0.0, 1.0, -2.0])]),
    ("special.erfcx", lambda m, x, **k: m.special.erfcx(x, **k), [np.array([0.0, 30.0])]),
    ("xlogy", lambda m, x, y, **k: m.xlogy(x, y, **k), [np.array([0.0, 2.0]), np.array([0.0, 3.0])]),
    ("hypot", lambda m, x, y, **k: m.hypot(x, y, **k), [np.array([3.0, 0.0]), np.array([4.0, 0.0])]),
    ("logaddexp", lambda m, x, y, **k: m.logaddexp(x, y, **k),
     [np.array([1.0, -np.inf]), np.array([2.0, -np.inf])]),
    ("nan_to_num", lambda m, x, **k: m.nan_to_num(x, **k), [np.array([np.nan, np.inf, 1.0])]),
    ("linalg.det", lambda m, x, **k: m.linalg.det(x, **k), [np.array([[1.0, 2.0], [3.0, 4.0]])]),
    ("linalg.solve", lambda m, a, b, **k: m.linalg.solve(a, b, **k),
     [np.array([[2.0, 0.0], [0.0, 4.0]]), np.array([1.0, 2.0])]),
])
def test_out_is_pytorchs(name: str, fn: Callable[..., Any], arrays: list[np.ndarray]) -> None:
    """out= writes the result into out and returns it; a result that needs grad, or a dtype
    out cannot hold, is PyTorch's error."""
    results = []
    for m in (torch, rt):
        out = m.empty(0, dtype=m.float64)
        got = fn(m, *[m.tensor(a) for a in arrays], out=out)
        assert got is out, name
        results.append(_np(out))
        with pytest.raises(RuntimeError) as info:
            fn(m, *[m.tensor(a, requires_grad=True) for a in arrays], out=m.empty(0))
        results.append(str(info.value).split("(")[-1])
        with pytest.raises(RuntimeError) as info:
            fn(m, *[m.tensor(a) for a in arrays], out=m.empty(0, dtype=m.int64))
        results.append(str(info.value))
    np.testing.assert_allclose(results[3], results[0], rtol=1e-15, err_msg=name)
    assert results[4:] == results[1:3], name


@pytest.mark.parametrize("ord_", [0.5, 0.3, -0.5, -1.0, -2.0])
@pytest.mark.parametrize("data", [[0.0, 0.0, 0.0], [0.0, 3.0, -4.0], [-0.0, 2.0, 1e-300],
                                  [1.0, 2.0, 3.0]])
def test_vector_norm_below_one_at_zeros(ord_: float, data: list[float]) -> None:
    """vector_norm for ord < 1 passes 0 to a zero entry, as PyTorch's (|x|^ord's infinite
    slope there times abs's 0 was NaN). Where the norm is inf or NaN PyTorch's 0 * norm^(1-p)
    is NaN there; this runtime's 0 (not compared)."""
    a = np.array(data)
    for dim in (None, 0):
        def fn(m: Any, x: Any, dim: Any = dim) -> Any:
            return m.linalg.vector_norm(x, ord_, dim=dim)

        want, want_g = _values_and_grad(torch, fn, a, np.ones(()))
        got, got_g = _values_and_grad(rt, fn, a, np.ones(()))
        _check(f"vector_norm {ord_}", want, want, got, 1e-12, np.zeros((), bool), [want])
        _check(f"vector_norm {ord_} gradient", want_g, want_g, got_g, 1e-10,
               np.zeros(a.shape, bool), [a], zero_sign=False)


@pytest.mark.parametrize("dim", [None, 0, -1])
@pytest.mark.parametrize("data", [[2.0, 0.0, 3.0, 0.0], [2.0, 0.0, 3.0], [2.0, 5.0, 3.0],
                                  [[2.0, 0.0], [0.0, 3.0], [1.0, 4.0]],
                                  [[2.0, 1.5], [0.5, 3.0], [1.0, 4.0]]])
def test_prod_second_derivative_at_zeros(data: list[Any], dim: int | None) -> None:
    """prod's second derivative where x has zeros is PyTorch's (the product of the others is
    differentiated: the running product's backward held the gradient past a zero constant,
    so d/dx_zero of the others' gradients was lost)."""
    results = []
    for m in (torch, rt):
        x = m.tensor(data, dtype=m.float64, requires_grad=True)
        y = m.prod(x) if dim is None else m.prod(x, dim)
        (g,) = m.autograd.grad(y.sum(), x, create_graph=True)
        weights = m.tensor(np.arange(1.0, g.numel() + 1).reshape(tuple(g.shape)))
        (h,) = m.autograd.grad((g * weights).sum(), x)
        results.append((_np(g), _np(h)))
    for want, got in zip(results[0], results[1]):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


@pytest.mark.xfail(strict=True, reason="cumprod's second derivative at a zero: its backward "
                   "(a primitive's, shared with the planner) holds the gradient past the first "
                   "zero constant, so d/dx_zero of the later positions' gradients is 0")
def test_cumprod_second_derivative_at_zeros() -> None:
    results = []
    for m in (torch, rt):
        x = m.tensor([2.0, 0.0, 3.0], dtype=m.float64, requires_grad=True)
        (g,) = m.autograd.grad((m.cumprod(x, 0) * m.tensor([1.0, 2.0, 3.0])).sum(), x,
                               create_graph=True)
        (h,) = m.autograd.grad((g * m.tensor([1.0, 4.0, 9.0])).sum(), x)
        results.append(_np(h))
    np.testing.assert_allclose(results[1], results[0], rtol=1e-12)
