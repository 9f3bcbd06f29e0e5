"""Global settings (set_printoptions, default device, matmul precision, warn_always,
deterministic debug mode, interop threads) and nn.init's deprecated names against PyTorch."""

from __future__ import annotations

import importlib.util
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")


@pytest.fixture
def print_defaults() -> Iterator[None]:
    yield
    for m in (rt, torch):
        m.set_printoptions(profile="default")
        m.set_printoptions(sci_mode=None)


VALUES = [[[1.2345, 2e-6, 300.0], [4.0, 5.0, 6.0]], [float(i) for i in range(20)],
          [1e9, 1.0], [1.5e-5, 2.0], [0.5, 0.25], np.arange(2000.0).tolist(), [3.0, -7.0]]


@pytest.mark.parametrize("options", [{"precision": 2}, {"precision": 6, "sci_mode": True},
                                     {"sci_mode": False}, {"profile": "short"},
                                     {"threshold": 5, "edgeitems": 1}, {"linewidth": 30},
                                     {"profile": "full"}])
def test_set_printoptions(options: dict[str, Any], print_defaults: None) -> None:
    for m in (rt, torch):
        m.set_printoptions(**options)
    for v in VALUES:
        ours = repr(rt.tensor(v, dtype=rt.float32)).replace("runtime.", "torch.")
        theirs = repr(torch.tensor(v, dtype=torch.float32))
        assert ours == theirs


def test_default_device() -> None:
    assert rt.get_default_device() == rt.device("cpu")
    assert str(rt.get_default_device()) == str(torch.get_default_device())
    rt.set_default_device("cpu")
    rt.set_default_device(None)
    rt.set_default_device("cuda")  # as torch's, set without a GPU; a tensor made there fails
    try:
        assert rt.get_default_device() == rt.device("cuda:0")
        if importlib.util.find_spec("cupy") is None:
            with pytest.raises(RuntimeError, match="CuPy"):
                rt.zeros(1)
    finally:
        rt.set_default_device(None)
    assert rt.zeros(1).device.type == "cpu"


def test_float32_matmul_precision() -> None:
    before = rt.get_float32_matmul_precision()
    assert before == torch.get_float32_matmul_precision() == "highest"
    try:
        rt.set_float32_matmul_precision("medium")
        assert rt.get_float32_matmul_precision() == "medium"
        with pytest.warns(UserWarning, match="x is not one of 'highest', 'high', or 'medium'"):
            rt.set_float32_matmul_precision("x")
        assert rt.get_float32_matmul_precision() == "medium"
    finally:
        rt.set_float32_matmul_precision(before)


def test_warn_always_and_interop_threads() -> None:
    assert rt.is_warn_always_enabled() is torch.is_warn_always_enabled() is False
    rt.set_warn_always(True)
    assert rt.is_warn_always_enabled()
    rt.set_warn_always(False)
    assert not rt.is_warn_always_enabled()
    assert rt.get_num_interop_threads() >= 1
    with pytest.raises(RuntimeError, match="Expected positive number of threads"):
        rt.set_num_interop_threads(0)


def test_deterministic_debug_mode() -> None:
    try:
        for mode, expected in (("warn", 1), ("error", 2), (0, 0), (2, 2), ("default", 0)):
            rt.set_deterministic_debug_mode(mode)
            assert rt.get_deterministic_debug_mode() == expected
            assert rt.are_deterministic_algorithms_enabled() == (expected != 0)
        for bad in ("x", 5):
            texts = []
            for m in (rt, torch):
                with pytest.raises(RuntimeError) as info:
                    m.set_deterministic_debug_mode(bad)
                texts.append(str(info.value))
            assert texts[0] == texts[1]
    finally:
        rt.use_deterministic_algorithms(False)


def test_small_queries() -> None:
    x = rt.rand(2)
    assert rt.typename(x) == "runtime.FloatTensor" and rt.typename(3) == torch.typename(3)
    assert rt.typename(rt.tensor([1])) == "runtime.LongTensor"
    assert rt.get_device(x) == torch.get_device(torch.rand(2)) == -1
    assert rt.is_storage(x) is torch.is_storage(torch.rand(2)) is False
    assert rt.set_flush_denormal(False) is False


@pytest.mark.parametrize("name,args", [
    ("uniform", (-0.5, 0.5)), ("normal", (0.0, 0.1)), ("constant", (0.3,)), ("eye", ()),
    ("xavier_uniform", ()), ("xavier_normal", ()), ("kaiming_uniform", ()),
    ("kaiming_normal", ()), ("orthogonal", ()), ("sparse", (0.5,)), ("dirac", ())])
def test_init_deprecated_names(name: str, args: tuple[Any, ...]) -> None:
    shape = (4, 2, 3) if name == "dirac" else (4, 6)
    w = rt.empty(*shape)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = getattr(rt.nn.init, name)(w, *args)
    assert out is w
    assert [(c.category, str(c.message)) for c in caught] == [
        (FutureWarning, f"`nn.init.{name}` is now deprecated in favor of `nn.init.{name}_`.")]
    assert caught[0].filename == __file__
    if name in ("constant", "eye", "dirac"):
        theirs = torch.empty(*shape)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            getattr(torch.nn.init, name)(theirs, *args)
        np.testing.assert_array_equal(w.numpy(), theirs.numpy())


def test_anomaly_and_small_tensor_queries() -> None:
    try:
        rt.set_anomaly_enabled(True)
        assert rt.is_anomaly_enabled() and rt.is_anomaly_check_nan_enabled()
        rt.set_anomaly_enabled(True, False)
        assert not rt.is_anomaly_check_nan_enabled()
    finally:
        rt.set_anomaly_enabled(False)
    assert not rt.is_anomaly_enabled()
    assert rt.init_num_threads() is None
    for m in (rt, torch):
        x = m.rand(3)
        assert not m.is_distributed(x) and not x.is_distributed()
        with pytest.warns(UserWarning, match=r"volatile was removed \(Variable.volatile is"):
            assert x.volatile is False
        assert x.is_set_to(x) and x.is_set_to(x[:]) and x.is_set_to(x.view(3))
        assert not x.is_set_to(x.clone()) and not x[:2].is_set_to(x)
        with pytest.raises(RuntimeError, match="reinforce\\(\\) was removed"):
            x.reinforce(1.0)


def test_constants_layouts_and_memory_formats() -> None:
    import pickle

    for name in ("e", "pi", "inf"):
        assert getattr(rt, name) == getattr(torch, name)
    assert np.isnan(rt.nan) and rt.newaxis is None
    assert rt.tensor(np.arange(3.0))[rt.newaxis].shape == (1, 3)
    assert rt.rand(2).layout is rt.strided and isinstance(rt.strided, rt.layout)
    assert isinstance(rt.channels_last, rt.memory_format)
    assert pickle.loads(pickle.dumps(rt.channels_last)) is rt.channels_last
    for shape, fmt in (((2, 3, 4, 5), "channels_last"), ((1, 3, 1, 1), "channels_last"),
                       ((2, 3, 4, 5, 2), "channels_last_3d"), ((2, 3), "channels_last"),
                       ((2, 3), "contiguous_format"), ((2, 3), "preserve_format")):
        data = np.arange(float(np.prod(shape))).reshape(shape)
        ours = rt.tensor(data).is_contiguous(memory_format=getattr(rt, fmt))
        theirs = torch.tensor(data).is_contiguous(memory_format=getattr(torch, fmt))
        assert ours == theirs
    nhwc = torch.rand(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)
    assert rt.tensor(nhwc.numpy()).is_contiguous(memory_format=rt.channels_last) \
        or rt.tensor(nhwc.numpy()).is_contiguous()
    x = rt.rand(2, 3, 4, 5)
    assert x.contiguous(memory_format=rt.channels_last) is x
    assert x.contiguous(memory_format=rt.contiguous_format) is x
    t = rt.rand(4, 3).t()
    assert t.contiguous(memory_format=rt.preserve_format).is_contiguous()
    for m in (rt, torch):
        with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last "
                                               "format"):
            m.rand(2, 3).contiguous(memory_format=m.channels_last)


@pytest.mark.parametrize("name,args", [
    ("get_autocast_cpu_dtype", ()), ("get_autocast_gpu_dtype", ()),
    ("is_autocast_cpu_enabled", ()), ("set_autocast_cpu_enabled", (False,)),
    ("set_autocast_cpu_dtype", ("bfloat16",)), ("set_autocast_gpu_dtype", ("float16",))])
def test_legacy_autocast_names(name: str, args: tuple[Any, ...]) -> None:
    results = []
    for m in (rt, torch):
        values = tuple(getattr(m, a) if isinstance(a, str) else a for a in args)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = getattr(m, name)(*values)
        results.append((str(out).split(".")[-1],
                        [(c.category, str(c.message).split(" (Triggered")[0]) for c in caught]))
    assert results[0] == results[1]


def test_autocast_settings() -> None:
    try:
        rt.set_autocast_enabled("cpu", True)
        assert rt.is_autocast_enabled("cpu")
        rt.set_autocast_enabled(True)  # the legacy form: CUDA's
        assert rt.is_autocast_enabled()
        rt.set_autocast_dtype("cpu", rt.float16)
        assert rt.get_autocast_dtype("cpu") is rt.float16
        rt.set_autocast_cache_enabled(False)
        assert not rt.is_autocast_cache_enabled()
        rt.clear_autocast_cache()
    finally:
        rt.set_autocast_enabled("cpu", False)
        rt.set_autocast_enabled(False)
        rt.set_autocast_dtype("cpu", rt.bfloat16)
        rt.set_autocast_cache_enabled(True)
    assert not rt.is_autocast_enabled("cpu") and rt.is_autocast_cache_enabled()


def test_legacy_tensor_types() -> None:
    for m in (rt, torch):
        assert tuple(m.FloatTensor().shape) == (0,) and tuple(m.FloatTensor(2, 3).shape) == (2, 3)
        assert m.FloatTensor([1, 2]).tolist() == [1.0, 2.0]
        assert m.LongTensor([1, 2]).dtype == m.int64 and m.ByteTensor(3).dtype == m.uint8
        assert tuple(m.DoubleTensor(m.Size([2, 1])).shape) == (2, 1)
        assert isinstance(m.ones(2), m.FloatTensor) and not isinstance(m.ones(2), m.LongTensor)
        assert not isinstance(m.ones(2, dtype=m.float64), m.FloatTensor)
        assert m.HalfTensor.dtype == m.float16 and m.BoolTensor.dtype == m.bool
        assert m.ones(2).type(m.DoubleTensor).dtype == m.float64
    before = rt.get_default_dtype()
    try:
        with pytest.warns(UserWarning, match=r"torch.set_default_tensor_type\(\) is deprecated"):
            rt.set_default_tensor_type(rt.DoubleTensor)
        assert rt.get_default_dtype() is rt.float64 and rt.tensor([1.0]).dtype is rt.float64
        with pytest.warns(UserWarning):
            rt.set_default_tensor_type("torch.FloatTensor")
        assert rt.get_default_dtype() is rt.float32
        with pytest.warns(UserWarning), pytest.raises(
                TypeError, match="only floating-point types are supported as the default type"):
            rt.set_default_tensor_type(rt.LongTensor)
    finally:
        rt.set_default_dtype(before)
