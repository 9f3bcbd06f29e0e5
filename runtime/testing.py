"""``rt.testing``: PyTorch's ``torch.testing`` (``assert_close``, ``make_tensor`` and the
deprecated ``assert_allclose``), with its pairing rules, default tolerances and messages.

``assert_close(actual, expected)`` walks both inputs together: sequences (not strings) by
position and mappings by key, each leaf pair compared as torch compares it: ``None`` with
``None``, booleans by identity, Python and numpy numbers within tolerance, and tensor-likes
(tensors, or numpy arrays and other array-likes on both sides) by shape, device, dtype and
layout (``check_*``), then values by ``isclose``. The first pair that differs raises, with
PyTorch's text (and the failing item's path), or ``msg`` (a string, or a function of the
generated text)."""

from __future__ import annotations

import cmath
import collections.abc
import contextlib
import math
import warnings
from typing import Any, NoReturn

import numpy as np

from . import _dtype as D
from .tensor import Tensor

__all__ = ["assert_allclose", "assert_close", "make_tensor"]

# {dtype: (rtol, atol)}: PyTorch's defaults; any other dtype compares exactly
_DTYPE_PRECISIONS = {D.float16: (0.001, 1e-5), D.bfloat16: (0.016, 1e-5),
                     D.float32: (1.3e-6, 1e-5), D.float64: (1e-7, 1e-7)}
# the dtype whose tolerances a Python number takes (complex: complex128's, float64's)
_NUMBER_DTYPES = {int: D.int64, float: D.float64, complex: D.float64}


class _Mismatch(Exception):
    """A pair that differs: the exception type to raise, its text, and the item's path."""

    def __init__(self, kind: type[Exception], msg: str, path: tuple[Any, ...] = ()) -> None:
        super().__init__(msg)
        self.kind, self.msg, self.path = kind, msg, path

    def error(self, msg: Any = None) -> Exception:
        if not isinstance(msg, str):
            text = self.msg
            if self.path:
                text += "\n\nThe failure occurred for item " + "".join(
                    str([item]) for item in self.path)
            msg = msg(text) if callable(msg) else text
        return self.kind(msg)


class _Unsupported(Exception):
    """This kind of pair cannot take those inputs: the next is tried."""


def _default_tolerances(*dtypes: Any) -> tuple[float, float]:
    rtols, atols = zip(*[_DTYPE_PRECISIONS.get(d, (0.0, 0.0)) for d in dtypes], strict=True)
    return max(rtols), max(atols)


def _tolerances(*dtypes: Any, rtol: float | None, atol: float | None,
                path: tuple[Any, ...]) -> tuple[float, float]:
    if (rtol is None) ^ (atol is None):
        raise _Mismatch(ValueError, "Both 'rtol' and 'atol' must be either specified or omitted, "
                        f"but got no {'rtol' if rtol is None else 'atol'}.", path)
    if rtol is not None and atol is not None:
        return rtol, atol
    return _default_tolerances(*dtypes)


def _mismatch_text(kind: str, *, extra: str, abs_diff: float, abs_at: Any, atol: float,
                   rel_diff: float, rel_at: Any, rtol: float) -> str:
    equality = rtol == 0 and atol == 0

    def line(name: str, diff: float, at: Any, tol: float) -> str:
        text = (f"{name.title()} difference: {diff}" if at is None else
                f"Greatest {name} difference: {diff} at index {at}")
        return text + ("" if equality else f" (up to {tol} allowed)") + "\n"

    text = f"{kind} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        text += extra.strip() + "\n"
    text += line("absolute", abs_diff, abs_at, atol) + line("relative", rel_diff, rel_at, rtol)
    return text.strip()


def _scalar_text(actual: Any, expected: Any, rtol: float, atol: float) -> str:
    abs_diff = abs(actual - expected)
    rel_diff = math.inf if expected == 0 else abs_diff / abs(expected)
    return _mismatch_text("Scalars", extra=f"Expected {expected} but got {actual}.",
                          abs_diff=abs_diff, abs_at=None, atol=atol, rel_diff=rel_diff,
                          rel_at=None, rtol=rtol)


def _tensor_text(actual: np.ndarray, expected: np.ndarray, matches: np.ndarray, rtol: float,
                 atol: float) -> str:
    total = matches.size
    wrong = total - int(matches.sum())
    extra = f"Mismatched elements: {wrong} / {total} ({wrong / total:.1%})"
    a, e = actual.ravel(), expected.ravel()
    integral = actual.dtype.kind not in "fc"
    if integral:
        a, e = a.astype(np.int64), e.astype(np.int64)
    with np.errstate(all="ignore"):
        abs_diff = np.abs(a - e)
        abs_diff[matches.ravel()] = 0
        # an integer quotient is float32 (the default dtype), as torch's true division
        rel_diff = (abs_diff.astype(np.float32) / np.abs(e).astype(np.float32) if integral
                    else abs_diff / np.abs(e))
    rel_diff[matches.ravel()] = 0
    # torch.max's first maximum, a NaN counting as the largest
    ai, ri = _argmax(abs_diff), _argmax(rel_diff)
    return _mismatch_text("Tensor-likes", extra=extra, abs_diff=abs_diff[ai].item(),
                          abs_at=_index(ai, matches.shape), atol=atol,
                          rel_diff=rel_diff[ri].item(), rel_at=_index(ri, matches.shape),
                          rtol=rtol)


def _index(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(x) for x in np.unravel_index(flat, shape))


def _argmax(x: np.ndarray) -> int:
    nan = np.flatnonzero(np.isnan(x)) if x.dtype.kind in "fc" else np.empty(0, np.int64)
    return int(nan[0]) if nan.size else int(np.argmax(x))


# --- pairs ------------------------------------------------------------------------------------
def _none_pair(actual: Any, expected: Any, path: tuple[Any, ...], **_: Any) -> None:
    if actual is not None and expected is not None:
        raise _Unsupported
    if not (actual is None and expected is None):
        raise _Mismatch(AssertionError, f"None mismatch: {actual} is not {expected}", path)


def _boolean_pair(actual: Any, expected: Any, path: tuple[Any, ...], **_: Any) -> None:
    if not all(isinstance(x, (bool, np.bool_)) for x in (actual, expected)):
        raise _Unsupported
    actual, expected = bool(actual), bool(expected)
    if actual is not expected:
        raise _Mismatch(AssertionError, f"Booleans mismatch: {actual} is not {expected}", path)


def _number_pair(actual: Any, expected: Any, path: tuple[Any, ...], *, rtol: float | None,
                 atol: float | None, equal_nan: bool, check_dtype: bool, **_: Any) -> None:
    if not all(isinstance(x, (int, float, complex, np.number)) for x in (actual, expected)):
        raise _Unsupported
    actual, expected = (x.item() if isinstance(x, np.number) else x for x in (actual, expected))
    rtol, atol = _tolerances(*[_NUMBER_DTYPES.get(type(x), D.int64) for x in (actual, expected)],
                             rtol=rtol, atol=atol, path=path)
    if check_dtype and type(actual) is not type(expected):
        raise _Mismatch(AssertionError, f"The (d)types do not match: {type(actual)} != "
                        f"{type(expected)}.", path)
    if actual == expected:
        return
    if equal_nan and cmath.isnan(actual) and cmath.isnan(expected):
        return
    diff = abs(actual - expected)
    if cmath.isfinite(diff) and diff <= atol + rtol * abs(expected):
        return
    raise _Mismatch(AssertionError, _scalar_text(actual, expected, rtol, atol), path)


def _as_tensor(x: Any) -> Tensor:
    from . import as_tensor

    if isinstance(x, Tensor):
        return x
    try:
        return as_tensor(x)
    except Exception as exc:
        raise _Unsupported from exc


def _tensor_pair(actual: Any, expected: Any, path: tuple[Any, ...], *,
                 allow_subclasses: bool, rtol: float | None, atol: float | None,
                 equal_nan: bool, check_device: bool, check_dtype: bool, check_layout: bool,
                 check_stride: bool, **_: Any) -> None:
    if not (isinstance(actual, type(expected)) or isinstance(expected, type(actual))):
        raise _Unsupported
    if not allow_subclasses and type(actual) is not type(expected):
        raise _Unsupported
    a, e = _as_tensor(actual), _as_tensor(expected)
    rtol, atol = _tolerances(a.dtype, e.dtype, rtol=rtol, atol=atol, path=path)

    def differ(name: str, x: Any, y: Any) -> NoReturn:
        raise _Mismatch(AssertionError,
                        f"The values for attribute '{name}' do not match: {x} != {y}.", path)

    if a.shape != e.shape:
        differ("shape", a.shape, e.shape)
    if a.layout != e.layout:
        if check_layout:
            differ("layout", a.layout, e.layout)
    elif check_stride and a.stride() != e.stride():
        differ("stride()", a.stride(), e.stride())
    if check_device and a.device != e.device:
        differ("device", a.device, e.device)
    if check_dtype and a.dtype is not e.dtype:
        differ("dtype", a.dtype, e.dtype)
    x, y = _host(a), _host(e)
    if a.dtype is not e.dtype:
        from . import promote_types

        common = promote_types(a.dtype, e.dtype).np
        x, y = x.astype(common), y.astype(common)
    _compare_values(x, y, rtol, atol, equal_nan, path)


def _host(t: Tensor) -> np.ndarray:
    """The tensor's values as a numpy array (a GPU tensor's copied to the host)."""
    return np.asarray(t.detach().cpu().numpy())


def _compare_values(x: np.ndarray, y: np.ndarray, rtol: float, atol: float, equal_nan: bool,
                    path: tuple[Any, ...]) -> None:
    matches = _isclose(x, y, rtol, atol, equal_nan)
    if matches.all():
        return
    if x.shape == ():
        msg = _scalar_text(x.item(), y.item(), rtol, atol)
    else:
        msg = _tensor_text(x, y, matches, rtol, atol)
    raise _Mismatch(AssertionError, msg, path)


def _isclose(x: np.ndarray, y: np.ndarray, rtol: float, atol: float,
             equal_nan: bool) -> np.ndarray:
    """torch.isclose: equal, or (floats) finite and within atol + rtol * |y|; infinities only
    equal themselves; NaNs equal each other only with ``equal_nan``."""
    if x.dtype.kind not in "fc":
        if rtol == 0 and atol == 0:
            return np.asarray(x == y)
        x, y = x.astype(np.float64), y.astype(np.float64)
    with np.errstate(all="ignore"):
        close = np.asarray(x == y)
        finite = np.isfinite(x) & np.isfinite(y)
        close |= finite & (np.abs(x - y) <= atol + rtol * np.abs(y))
    if equal_nan:
        close |= np.isnan(x) & np.isnan(y)
    return close


_PAIRS = (_none_pair, _boolean_pair, _number_pair, _tensor_pair)


def _compare(actual: Any, expected: Any, path: tuple[Any, ...], options: dict[str, Any]) -> None:
    """Raise the first mismatch of the pair (actual, expected), walking sequences and mappings."""
    sequence, mapping = collections.abc.Sequence, collections.abc.Mapping
    if isinstance(actual, sequence) and not isinstance(actual, str) \
            and isinstance(expected, sequence) and not isinstance(expected, str):
        if len(actual) != len(expected):
            raise _Mismatch(AssertionError, "The length of the sequences mismatch: "
                            f"{len(actual)} != {len(expected)}", path)
        for i in range(len(actual)):
            _compare(actual[i], expected[i], (*path, i), options)
        return
    if isinstance(actual, mapping) and isinstance(expected, mapping):
        keys, expected_keys = set(actual.keys()), set(expected.keys())
        if keys != expected_keys:
            raise _Mismatch(AssertionError,
                            "The keys of the mappings do not match:\n"
                            f"Missing keys in the actual mapping: {sorted(expected_keys - keys)}\n"
                            f"Additional keys in the actual mapping: "
                            f"{sorted(keys - expected_keys)}", path)
        ordered: Any = keys
        with contextlib.suppress(Exception):
            ordered = sorted(keys)
        for key in ordered:
            _compare(actual[key], expected[key], (*path, key), options)
        return
    for pair in _PAIRS:
        try:
            pair(actual, expected, path, **options)
            return
        except _Unsupported:
            continue
    raise _Mismatch(TypeError, "No comparison pair was able to handle inputs of type "
                    f"{type(actual)} and {type(expected)}.", path)


def assert_close(actual: Any, expected: Any, *, allow_subclasses: bool = True,
                 rtol: float | None = None, atol: float | None = None, equal_nan: bool = False,
                 check_device: bool = True, check_dtype: bool = True, check_layout: bool = True,
                 check_stride: bool = False, msg: Any = None) -> None:
    """Assert that ``actual`` and ``expected`` are close (``torch.testing.assert_close``):
    ``|actual - expected| <= atol + rtol * |expected|`` elementwise, with the defaults of the
    dtypes compared (float32: rtol 1.3e-6, atol 1e-5; float64: 1e-7 and 1e-7; float16: 1e-3
    and 1e-5; bfloat16: 1.6e-2 and 1e-5; others exactly). ``rtol`` and ``atol`` are given
    together or not at all."""
    __tracebackhide__ = True
    try:
        _compare(actual, expected, (), dict(
            allow_subclasses=allow_subclasses, rtol=rtol, atol=atol, equal_nan=equal_nan,
            check_device=check_device, check_dtype=check_dtype, check_layout=check_layout,
            check_stride=check_stride))
    except _Mismatch as mismatch:
        raise mismatch.error(msg) from None


def assert_allclose(actual: Any, expected: Any, rtol: float | None = None,
                    atol: float | None = None, equal_nan: bool = True, msg: str = "") -> None:
    """Deprecated since PyTorch 1.12: ``assert_close`` with the old defaults (float32 rtol
    1e-4 and atol 1e-5, float64 1e-5 and 1e-8, float16 1e-3 and 1e-3), dtypes promoted."""
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be "
                  "removed in a future release. Please use `torch.testing.assert_close()` "
                  "instead. You can find detailed upgrade instructions in "
                  "https://github.com/pytorch/pytorch/issues/61844.", FutureWarning,
                  stacklevel=2)
    from . import tensor

    if not isinstance(actual, Tensor):
        actual = tensor(actual)
    if not isinstance(expected, Tensor):
        expected = tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        old = {D.float16: (1e-3, 1e-3), D.float32: (1e-4, 1e-5), D.float64: (1e-5, 1e-8)}
        rtols, atols = zip(*[old.get(t.dtype, (0.0, 0.0)) for t in (actual, expected)])
        rtol, atol = max(rtols), max(atols)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan,
                 check_device=True, check_dtype=False, check_stride=False, msg=msg or None)


# --- make_tensor ------------------------------------------------------------------------------
def _kind(dtype: Any) -> str:
    """'bool', 'int', 'float' or '' (unsupported) for a runtime dtype."""
    if dtype is D.bool_:
        return "bool"
    kind = np.dtype(dtype.np).kind
    return {"i": "int", "u": "int", "f": "float"}.get(kind, "")


def make_tensor(*shape: Any, dtype: Any, device: Any, low: float | None = None,
                high: float | None = None, requires_grad: bool = False,
                noncontiguous: bool = False, exclude_zero: bool = False,
                memory_format: Any = None) -> Tensor:
    """A tensor of ``shape``, ``dtype`` and ``device`` filled with values drawn uniformly
    from ``[low, high)`` (``torch.testing.make_tensor``): by default [0, 2) for bool, [0, 10)
    for unsigned and [-9, 10) for signed integers, [-9, 9) for floats; bounds outside the
    dtype's finite range are clamped to it. ``noncontiguous``: every other element of a
    tensor twice as wide in its last axis; ``exclude_zero``: zeros become 1 (integers) or the
    dtype's smallest normal number (floats)."""
    from . import empty, finfo, iinfo, randint

    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = tuple(shape[0])
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError("The parameters `noncontiguous` and `memory_format` are mutually "
                         f"exclusive, but got noncontiguous={noncontiguous} and "
                         f"memory_format={memory_format}")
    kind = _kind(dtype)
    if requires_grad and kind in ("bool", "int"):
        raise ValueError("`requires_grad=True` is not supported for boolean and integral "
                         f"dtypes, but got dtype={dtype}")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:
        shape = (*shape[:-1], 2 * shape[-1])
    if kind == "bool":
        lo, hi = _bounds(low, high, dtype, 0, 2, 0, 2)
        result = randint(lo, hi, shape, device=device, dtype=dtype)
    elif kind == "int":
        info = iinfo(dtype)
        lo, hi = _bounds(low, high, dtype, info.min,
                         info.max + (1 if dtype is not D.int64 else 0), -9, 10)
        result = randint(lo, hi, shape, device=device, dtype=dtype)
    elif kind == "float":
        info = finfo(dtype)
        lo, hi = _bounds(low, high, dtype, info.min, info.max, -9, 9)
        result = empty(shape, device=device, dtype=dtype)
        if hi - lo >= info.max:  # the draw's span must stay finite
            result.uniform_(lo / 2, hi / 2).mul_(2)
        else:
            result.uniform_(lo, hi)
    else:
        raise TypeError(f"The requested dtype '{dtype}' is not supported by "
                        "torch.testing.make_tensor(). To request support, file an issue at: "
                        "https://github.com/pytorch/pytorch/issues")
    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.contiguous(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = 1 if kind in ("bool", "int") else finfo(dtype).tiny
    if kind == "float":
        result.requires_grad = requires_grad
    return result


def _bounds(low: float | None, high: float | None, dtype: Any, lowest: float,
            highest: float, default_low: float, default_high: float) -> tuple[Any, Any]:
    """make_tensor's [low, high), checked and clamped to [lowest, highest); integer bounds
    rounded up (randint's high is exclusive)."""
    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and _kind(dtype) == "float":
        warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or "
                      "complex types is deprecated since 2.1 and will be removed in 2.3. "
                      "Use `torch.full(...)` instead.", FutureWarning, stacklevel=3)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), "
                         f"but {dtype} only supports [{lowest}, {highest})")
    low, high = min(max(low, lowest), highest), min(max(high, lowest), highest)
    if _kind(dtype) in ("bool", "int"):
        return math.ceil(low), math.ceil(high)
    return low, high
