"""rt.testing against torch.testing: assert_close's pairing, tolerances and messages,
assert_allclose's old defaults, make_tensor's ranges, layouts and errors."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import runtime as rt
from runtime.testing import assert_allclose, assert_close, make_tensor


def _t(values, dtype=None):
    return ("T", values, dtype)


def _build(x, lib):
    if isinstance(x, tuple) and len(x) == 3 and x[0] == "T":
        return lib.tensor(x[1], dtype=None if x[2] is None else getattr(lib, x[2]))
    if isinstance(x, list):
        return [_build(v, lib) for v in x]
    if isinstance(x, dict):
        return {k: _build(v, lib) for k, v in x.items()}
    return x


NAN, INF = float("nan"), float("inf")
CASES = [
    (_t([1., 2, 3, 4]), _t([1., 2.1, 3, 4.5]), {}),
    (_t([[1., 2], [3, 4]]), _t([[1., 2], [3, 4.1]]), {}),
    (_t([1, 2]), _t([1, 3]), {}),
    (_t([3, 1, 5]), _t([1, 1, 1]), {}),
    (_t([1., 2]), _t([1., 2], "float64"), {}),
    (_t([1., 2]), _t([1., 2], "float64"), {"check_dtype": False}),
    (_t([1., 2]), _t([1., 2.001], "float64"), {"check_dtype": False}),
    (_t([1, 2, 3], "int32"), _t([1, 2, 4], "int64"), {"check_dtype": False}),
    (_t([1., 2]), _t([1., 2, 3]), {}),
    (_t([[1., 2], [3, 4]]), _t([[1., 2], [3, 4]]), {"check_stride": True}),
    (_t([], "float32"), _t([], "float32"), {}),
    (1.0, 1.1, {}), (1, 2, {}), (1.0, 1, {}), (1.0, 1, {"check_dtype": False}),
    (True, False, {}), (1e-9, 0.0, {}), (0, 1e-9, {"check_dtype": False}),
    (NAN, NAN, {}), (NAN, NAN, {"equal_nan": True}),
    ([1., 2], [1., 2, 3], {}), ({"a": 1}, {"b": 1}, {}), ({"a": _t([1.])}, {"a": _t([2.])}, {}),
    ([_t([1.]), _t([2.])], [_t([1.]), _t([2.5])], {}),
    (_t(1.), 1., {}), (_t(5.), _t(6.), {}), (_t(5.), _t(6.), {"rtol": 0, "atol": 0}),
    (_t([NAN]), _t([NAN]), {}), (_t([NAN]), _t([NAN]), {"equal_nan": True}),
    (_t([1., 2.]), _t([1., INF]), {}), (_t([INF]), _t([INF]), {}), (_t([1e-8]), _t([0.]), {}),
    (_t([1.5, -2.5, 3.0]), _t([1.0, -2.0, 3.0]), {}),
    (_t([0., 1, 2, 3]), _t([0., 1.1, 2.2, 3.3]), {"rtol": 0.05, "atol": 0.0}),
    (_t([1.]), _t([1.]), {"rtol": 0.1}), (_t([1., 2]), _t([1., 2]), {"atol": 1e-3}),
    (_t([True, False]), _t([True, True]), {}),
    (_t([1., 2]), _t([1., 3]), {"msg": "custom"}),
    (None, None, {}), (None, 1, {}), ("a", "a", {}),
    (np.float32(1.0), np.float32(1.5), {}), (np.array([1., 2.]), np.array([1., 2.5]), {}),
    (_t([1., 2.]), np.array([1., 2.]), {}),
]


def _outcome(fn, actual, expected, lib, **kwargs):
    try:
        fn(_build(actual, lib), _build(expected, lib), **kwargs)
    except Exception as exc:  # the library's names printed alike: runtime.float32, torch.float32
        text = str(exc).replace("runtime.tensor.Tensor", "LIB.Tensor")
        text = re.sub(r"\b(torch|runtime)\.(?=[a-zA-Z])", "LIB.", text)
        return type(exc).__name__, text
    return ("passed",)


@pytest.mark.parametrize("actual, expected, kwargs", CASES)
def test_assert_close_as_torch(actual, expected, kwargs) -> None:
    torch = pytest.importorskip("torch")
    ours = _outcome(assert_close, actual, expected, rt, **kwargs)
    theirs = _outcome(torch.testing.assert_close, actual, expected, torch, **kwargs)
    assert ours == theirs


def test_assert_close_messages_without_torch() -> None:
    assert_close(rt.tensor([1., 2.]), rt.tensor([1., 2. + 1e-6]))
    assert_close({"w": [rt.tensor([1.])], "n": 3}, {"w": [rt.tensor([1.])], "n": 3})
    with pytest.raises(AssertionError) as err:
        assert_close(rt.tensor([1., 4., 5.]), rt.tensor([1., 2., 3.]))
    assert str(err.value) == ("Tensor-likes are not close!\n\nMismatched elements: 2 / 3 "
                              "(66.7%)\nGreatest absolute difference: 2.0 at index (1,) (up to "
                              "1e-05 allowed)\nGreatest relative difference: 1.0 at index (1,) "
                              "(up to 1.3e-06 allowed)")
    with pytest.raises(AssertionError) as err:
        assert_close(rt.tensor([1., 4.]), rt.tensor([1., 2.]),
                     msg=lambda m: f"Header\n\n{m}\n\nFooter")
    assert str(err.value).startswith("Header\n\nTensor-likes are not close!\n\n")
    assert str(err.value).endswith("\n\nFooter")
    with pytest.raises(AssertionError) as err:
        assert_close([rt.tensor(1.), {"b": rt.tensor([2.])}], [rt.tensor(1.), {"b": rt.tensor([3.])}])
    assert str(err.value).endswith("The failure occurred for item [1]['b']")
    with pytest.raises(ValueError, match="but got no atol"):
        assert_close(rt.tensor(1.), rt.tensor(1.), rtol=0.1)
    with pytest.raises(TypeError, match="No comparison pair"):
        assert_close(rt.tensor([1.]), [1.0])
    # a Parameter is a Tensor (directly related), unless subclasses are refused
    p = rt.nn.Parameter(rt.tensor([1., 2.]))
    assert_close(p, rt.tensor([1., 2.]))
    with pytest.raises(TypeError):
        assert_close(p, rt.tensor([1., 2.]), allow_subclasses=False)


def test_assert_allclose_is_deprecated_with_its_old_tolerances() -> None:
    with pytest.warns(FutureWarning, match="assert_allclose"):
        assert_allclose(rt.tensor([1., 2.]), [1., 2. + 1e-4])  # float32: rtol 1e-4
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        with pytest.raises(AssertionError):
            assert_allclose(rt.tensor([1., 2.]), [1., 2.01])
        assert_allclose(rt.tensor([1, 2]), rt.tensor([1., 2.]))  # dtypes promoted


@pytest.mark.parametrize("dtype, low, high", [
    (rt.float32, -9, 9), (rt.float64, -9, 9), (rt.int64, -9, 9), (rt.int8, -9, 9),
    (rt.uint8, 0, 9), (rt.bool, 0, 1)])
def test_make_tensor_default_ranges(dtype, low, high) -> None:
    t = make_tensor(40, 30, dtype=dtype, device="cpu")
    assert t.shape == (40, 30) and t.dtype is dtype and t.device.type == "cpu"
    values = t.numpy().astype(np.float64)
    assert values.min() >= low and values.max() < high + (1 if dtype is not rt.float32
                                                           and dtype is not rt.float64 else 0)
    assert len(np.unique(values)) > 1


def test_make_tensor_options() -> None:
    t = make_tensor((3, 4), dtype=rt.float64, device="cpu", low=-1, high=1, requires_grad=True,
                    noncontiguous=True)
    assert t.shape == (3, 4) and not t.is_contiguous() and t.requires_grad
    assert -1 <= float(t.min()) and float(t.max()) < 1
    z = make_tensor(500, dtype=rt.int16, device="cpu", low=-1, high=2, exclude_zero=True)
    assert int((z == 0).sum()) == 0 and set(z.tolist()) <= {-1, 1}
    f = make_tensor(500, dtype=rt.float32, device="cpu", low=0, high=1e-30, exclude_zero=True)
    assert float(f.min()) > 0
    single = make_tensor(1, dtype=rt.float32, device="cpu", noncontiguous=True)
    assert single.is_contiguous()  # fewer than two elements: noncontiguous is ignored
    wide = make_tensor(4, dtype=rt.float32, device="cpu", low=-3e38, high=3e38)
    assert np.isfinite(wide.numpy()).all()


@pytest.mark.parametrize("kwargs, error, text", [
    (dict(low=2, high=1), ValueError, "`low` must be less than `high`, but got 2 >= 1"),
    (dict(low=float("nan")), ValueError, "`low` and `high` cannot be NaN"),
    (dict(dtype="int32", requires_grad=True), ValueError,
     "`requires_grad=True` is not supported for boolean and integral dtypes"),
    (dict(dtype="uint8", low=300, high=400), ValueError,
     "The value interval specified by `low` and `high` is [300, 400)"),
    (dict(noncontiguous=True, memory_format="contiguous_format"), ValueError,
     "mutually exclusive"),
])
def test_make_tensor_errors_as_torch(kwargs, error, text) -> None:
    kwargs = dict(kwargs)
    dtype = getattr(rt, kwargs.pop("dtype", "float32"))
    if "memory_format" in kwargs:
        kwargs["memory_format"] = getattr(rt, kwargs["memory_format"])
    with pytest.raises(error, match=re.escape(text)):
        make_tensor(3, dtype=dtype, device="cpu", **kwargs)


def test_rt_testing_is_exported() -> None:
    assert rt.testing.assert_close is assert_close and rt.testing.make_tensor is make_tensor
