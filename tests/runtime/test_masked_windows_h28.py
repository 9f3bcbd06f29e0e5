"""rt.masked (torch.masked's functional reductions and normalizations) and rt.signal.windows
against PyTorch: values, dtypes, shapes, the masked-out positions, error types and texts, and
float64 gradients (gradcheck, and torch's own)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")

_RNG = np.random.default_rng(28)
_X = _RNG.standard_normal((3, 4, 5))
_MASKS = {
    "full": _RNG.random((3, 4, 5)) > 0.4,
    "broadcast": np.array([True, False, True, True, False]),  # (5,): broadcast to (3, 4, 5)
    "row_out": np.broadcast_to(np.array([[True], [False], [True], [True]]), (4, 5)).copy(),
    "none": None,
}
_REDUCTIONS = ["sum", "prod", "amax", "amin", "mean", "logsumexp", "norm", "var", "std"]
_DIMS: list[Any] = [None, 1, (0, 2), -1]


def _lib_args(lib: Any, x: np.ndarray, mask: np.ndarray | None, dtype: str
              ) -> tuple[Any, Any]:
    t = lib.tensor(x).to(getattr(lib, dtype))
    return t, None if mask is None else lib.tensor(mask)


def _same(got: rt.Tensor, want: Any, tol: float = 1e-6) -> None:
    assert tuple(got.shape) == tuple(want.shape)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(got.detach().numpy().astype(np.float64),
                               want.detach().numpy().astype(np.float64), rtol=tol, atol=tol)


def _call(lib: Any, name: str, *args: Any, **kwargs: Any) -> Any:
    return getattr(lib.masked, name)(*args, **kwargs)


@pytest.mark.parametrize("name", _REDUCTIONS)
@pytest.mark.parametrize("dim", _DIMS)
@pytest.mark.parametrize("mask", list(_MASKS))
def test_reductions_match_torch(name: str, dim: Any, mask: str) -> None:
    rx, rm = _lib_args(rt, _X, _MASKS[mask], "float64")
    tx, tm = _lib_args(torch, _X, _MASKS[mask], "float64")
    args = (2.0, dim) if name == "norm" else (dim,)  # norm's ord comes first
    for keepdim in (False, True):
        _same(_call(rt, name, rx, *args, keepdim=keepdim, mask=rm),
              _call(torch, name, tx, *args, keepdim=keepdim, mask=tm))


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool", "float32"])
@pytest.mark.parametrize("name", ["sum", "prod", "amax", "amin", "argmax", "argmin",
                                  "logsumexp", "var", "cumsum", "cumprod"])
def test_dtype_promotion_and_identities(name: str, dtype: str) -> None:
    """sum/prod promote small integers to int64, the rest keep the dtype (var: float32),
    and each masked-out element counts as the op's identity (the dtype's extremes for
    amax/amin)."""
    x = (_X * 3).round() + (3 if dtype in ("uint8", "bool") else 0)
    x = np.clip(x, 0, 1) if dtype == "bool" else x
    dim = 2 if name.startswith(("arg", "cum")) else (0, 2)
    results = []
    for lib in (torch, rt):
        t, m = _lib_args(lib, x, _MASKS["full"], dtype)
        try:
            results.append(("ok", _call(lib, name, t, dim, mask=m)))
        except Exception as e:  # noqa: BLE001 - torch's refusals are rt's too
            results.append((type(e).__name__, str(e).replace("runtime.", "torch.")))
    want, got = results
    assert got[0] == want[0], (got, want)
    if want[0] == "ok":
        _same(got[1], want[1])
    else:
        assert got == want


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin", "cumsum", "cumprod"])
@pytest.mark.parametrize("mask", list(_MASKS))
def test_normalizations_match_torch(name: str, mask: str) -> None:
    for dim in (0, -1):
        rx, rm = _lib_args(rt, _X, _MASKS[mask], "float64")
        tx, tm = _lib_args(torch, _X, _MASKS[mask], "float64")
        _same(_call(rt, name, rx, dim, mask=rm), _call(torch, name, tx, dim, mask=tm))
        # the output dtype
        _same(_call(rt, name, rx, dim, dtype=rt.float32, mask=rm),
              _call(torch, name, tx, dim, dtype=torch.float32, mask=tm))


@pytest.mark.parametrize("mask", list(_MASKS))
def test_normalize_median_arg_and_logaddexp_match_torch(mask: str) -> None:
    rx, rm = _lib_args(rt, _X, _MASKS[mask], "float64")
    tx, tm = _lib_args(torch, _X, _MASKS[mask], "float64")
    for ord_ in (2.0, 1.0, float("inf"), float("-inf")):
        _same(rt.masked.normalize(rx, ord_, 1, mask=rm),
              torch.masked.normalize(tx, ord_, 1, mask=tm))
        _same(rt.masked.norm(rx, ord_, (0, 1), mask=rm), torch.masked.norm(tx, ord_, (0, 1),
                                                                            mask=tm))
    for name in ("median", "argmax", "argmin"):
        _same(_call(rt, name, rx, 1, keepdim=True, mask=rm),
              _call(torch, name, tx, 1, keepdim=True, mask=tm))
    _same(rt.masked.argmax(rx, mask=rm), torch.masked.argmax(tx, mask=tm))
    _same(rt.masked.logaddexp(rx, rx * 2, input_mask=rm, other_mask=rm),
          torch.masked.logaddexp(tx, tx * 2, input_mask=tm, other_mask=tm))
    _same(rt.masked.var(rx, 2, False, mask=rm), torch.masked.var(tx, 2, False, mask=tm))
    _same(rt.masked.std(rx, 2, correction=2, mask=rm, keepdim=True),
          torch.masked.std(tx, 2, correction=2, mask=tm, keepdim=True))


def test_output_mask_matches_torch() -> None:
    for name, args in (("sum", (1,)), ("norm", (2.0, (0, 2))), ("softmax", (1,))):
        m = _MASKS["row_out"]
        got = rt.masked._output_mask(getattr(rt.masked, name), rt.tensor(_X), *args,
                                     mask=rt.tensor(m))
        want = torch.masked._output_mask(getattr(torch.masked, name), torch.tensor(_X), *args,
                                         mask=torch.tensor(m))
        np.testing.assert_array_equal(got.numpy(), want.numpy())


_ERRORS: list[tuple[str, Callable[[Any], Any]]] = [
    ("repeated dim", lambda L: L.masked.sum(L.ones(2, 3), (0, 0))),
    ("dim out of range", lambda L: L.masked.amax(L.ones(2, 3), 2)),
    ("mean of ints", lambda L: L.masked.mean(L.ones(2, 3, dtype=L.int64))),
    ("mean to int", lambda L: L.masked.mean(L.ones(2, 3), dtype=L.int32)),
    ("mask of higher rank", lambda L: L.masked.sum(L.ones(2, 3),
                                                   mask=L.ones(1, 2, 3, dtype=L.bool))),
    ("median of ints, a row all out", lambda L: L.masked.median(
        L.ones(2, 3, dtype=L.int64), 1, mask=L.tensor([[True] * 3, [False] * 3]))),
    ("unbiased and correction", lambda L: L.masked.var(L.ones(2, 3), 0, True, correction=1)),
    ("-inf norm of ints", lambda L: L.masked.norm(L.ones(2, 3, dtype=L.int64),
                                                  float("-inf"), mask=L.ones(2, 3) > 0)),
    ("amax of bools", lambda L: L.masked.amax(L.ones(2, 3, dtype=L.bool),
                                              mask=L.ones(2, 3) > 0)),
]


@pytest.mark.parametrize("what, call", _ERRORS, ids=[e[0] for e in _ERRORS])
def test_errors_match_torch(what: str, call: Callable[[Any], Any]) -> None:
    with pytest.raises(Exception) as want:
        call(torch)
    with pytest.raises(type(want.value)) as got:
        call(rt)
    assert str(got.value).replace("runtime.", "torch.") == str(want.value)


@pytest.mark.parametrize("name", ["sum", "prod", "amax", "amin", "mean", "logsumexp", "norm",
                                  "var", "std", "median"])
def test_reductions_gradcheck(name: str) -> None:
    x = rt.tensor(_X[:2, :3, :3] + 0.05 * np.arange(18).reshape(2, 3, 3), requires_grad=True)
    mask = rt.tensor(_MASKS["full"][:2, :3, :3] | np.eye(3, dtype=bool))  # no row all out
    args = (1,) if name == "median" else (2.0, (0, 2)) if name == "norm" else ((0, 2),)
    assert rt.autograd.gradcheck(lambda t: _call(rt, name, t, *args, mask=mask), (x,))


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin", "cumsum", "cumprod"])
def test_normalizations_grad_match_torch(name: str) -> None:
    """The gradient reaches masked-in elements only (where's backward), as torch's."""
    m = _MASKS["full"] | np.eye(4, 5, dtype=bool)
    cot = _RNG.standard_normal(_X.shape)
    grads = []
    for lib in (rt, torch):
        x = lib.tensor(_X, requires_grad=True)
        out = _call(lib, name, x, 1, mask=lib.tensor(m))
        finite = lib.where(lib.isfinite(out), out, lib.zeros_like(out))  # log_softmax's -inf
        (finite * lib.tensor(cot)).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(*grads, rtol=1e-10, atol=1e-10)


# --- signal.windows ------------------------------------------------------------------------------

_WINDOWS: list[tuple[str, dict[str, Any]]] = [
    ("bartlett", {}), ("blackman", {}), ("cosine", {}), ("exponential", {}),
    ("exponential", {"tau": 2.5}), ("gaussian", {"std": 1.7}), ("general_cosine",
                                                                 {"a": [0.5, 0.3, 0.2]}),
    ("general_hamming", {"alpha": 0.3}), ("hamming", {}), ("hann", {}), ("kaiser", {}),
    ("kaiser", {"beta": 2.0}), ("nuttall", {}),
]


@pytest.mark.parametrize("name, kwargs", _WINDOWS)
def test_windows_match_torch(name: str, kwargs: dict[str, Any]) -> None:
    for m, sym, dtype in ((0, True, None), (1, False, None), (2, True, "float64"),
                          (7, True, "float32"), (8, False, "float64"), (9, False, None)):
        for requires_grad in (False, True):
            extra = {} if dtype is None else {"dtype": getattr(rt, dtype)}
            got = getattr(rt.signal.windows, name)(m, sym=sym, requires_grad=requires_grad,
                                                   **kwargs, **extra)
            extra = {} if dtype is None else {"dtype": getattr(torch, dtype)}
            want = getattr(torch.signal.windows, name)(m, sym=sym, requires_grad=requires_grad,
                                                       **kwargs, **extra)
            # float64: torch's value to the last bits, but for i0 (kaiser)
            _same(got, want, 1e-6 if dtype != "float64" else 2e-15)
            assert got.requires_grad == want.requires_grad
    if name == "exponential":
        _same(rt.signal.windows.exponential(6, center=1.5, sym=False),
              torch.signal.windows.exponential(6, center=1.5, sym=False))


_WINDOW_ERRORS: list[tuple[str, Callable[[Any], Any]]] = [
    ("negative length", lambda L: L.signal.windows.hann(-1)),
    ("integer dtype", lambda L: L.signal.windows.kaiser(4, dtype=L.int64)),
    ("half dtype", lambda L: L.signal.windows.general_cosine(4, a=[1.0], dtype=L.float16)),
    ("tau", lambda L: L.signal.windows.exponential(4, tau=0.0)),
    ("center of a symmetric window", lambda L: L.signal.windows.exponential(4, center=1.0)),
    ("std", lambda L: L.signal.windows.gaussian(4, std=-1.0)),
    ("beta", lambda L: L.signal.windows.kaiser(4, beta=-1.0)),
    ("no coefficients", lambda L: L.signal.windows.general_cosine(4, a=[])),
    ("coefficients not a list", lambda L: L.signal.windows.general_cosine(4, a=3)),
    ("blackman's dtype", lambda L: L.signal.windows.blackman(4, dtype=L.int32)),
]


@pytest.mark.parametrize("what, call", _WINDOW_ERRORS, ids=[e[0] for e in _WINDOW_ERRORS])
def test_window_errors_match_torch(what: str, call: Callable[[Any], Any]) -> None:
    test_errors_match_torch(what, call)


def test_window_layout_other_than_strided_raises() -> None:
    with pytest.raises(ValueError, match="general_cosine is implemented for strided tensors only, got: "
                                         "sparse"):
        rt.signal.windows.hann(4, layout="sparse")


def test_general_cosine_grad_matches_torch() -> None:
    """requires_grad=True makes the coefficients and the linspace leaves, as torch's: the
    window is a non-leaf with a gradient to nothing a caller holds, but it backpropagates."""
    got = rt.signal.windows.general_cosine(5, a=[0.5, 0.5], requires_grad=True)
    want = torch.signal.windows.general_cosine(5, a=[0.5, 0.5], requires_grad=True)
    assert got.is_leaf == want.is_leaf and got.grad_fn is not None
    got.sum().backward()


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_scan_to_bool_raises_as_torch(name: str) -> None:
    """torch's cumsum/cumprod have no bool kernel: dtype=bool (or a bool out=) raises; rt
    scanned in int64 and cast the result to bool."""
    x = rt.tensor([1, 0, 1])
    msg = f'"{name}_out_cpu" not implemented for \'Bool\''
    with pytest.raises(NotImplementedError, match=msg):
        getattr(rt, name)(x, 0, dtype=rt.bool)
    with pytest.raises(NotImplementedError, match=msg):
        getattr(rt, name)(x, 0, out=rt.empty(3, dtype=rt.bool))
    assert getattr(rt, name)(x.bool(), 0).dtype is rt.int64
    for copied in (rt.tensor(True), rt.zeros(2, 0, dtype=rt.bool)):  # no kernel runs: taken
        assert getattr(rt, name)(copied, -1, dtype=rt.bool).dtype is rt.bool


@pytest.mark.parametrize("name", ["hann", "hamming", "bartlett", "blackman", "kaiser"])
def test_torch_window_factories_check_their_options(name: str) -> None:
    """torch.<name>_window's dtype error prints its TensorOptions, and layout=/pin_memory=
    are checked (hamming_window and kaiser_window took and ignored them)."""
    for kwargs in ({"dtype": "int64"}, {"dtype": "uint8", "layout": "strided"},
                   {"pin_memory": True}):
        test_errors_match_torch(name, lambda L, kw=kwargs: getattr(L, f"{name}_window")(
            4, **{k: getattr(L, v) if isinstance(v, str) else v for k, v in kw.items()}))
    with pytest.raises(NotImplementedError, match="only strided tensors here"):
        getattr(rt, f"{name}_window")(4, layout="sparse_coo")
    want = getattr(torch, f"{name}_window")(5, False, layout=torch.strided, pin_memory=False)
    _same(getattr(rt, f"{name}_window")(5, False, layout=rt.strided, pin_memory=False), want)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin"])
def test_integer_0dim_softmax_error_names_the_lastdim_kernel(name: str) -> None:
    """torch runs a 0-dim input through its last-dim kernel, so that is the one its error
    names (rt named the general one), masked or not."""
    for call in (lambda L: getattr(L.nn.functional, name)(L.tensor(3), 0),
                 lambda L: getattr(L.masked, name)(L.tensor(3), -1, mask=L.tensor(True))):
        test_errors_match_torch(name, call)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin"])
def test_integer_empty_softmax_is_an_empty_tensor_of_its_dtype(name: str) -> None:
    """torch's kernel never runs for an empty input: an empty integer one gives an empty
    tensor of its dtype (rt raised the kernel's error), masked or not."""
    for lib_call in (lambda L: getattr(L.nn.functional, name)(L.zeros(2, 0, dtype=L.int64), 0),
                     lambda L: getattr(L.masked, name)(L.zeros(0, dtype=L.int32), 0,
                                                       mask=L.zeros(0, dtype=L.bool))):
        _same(lib_call(rt), lib_call(torch))
