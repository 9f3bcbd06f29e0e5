"""PyTorch's test/test_serialization.py, ported (``import runtime as torch``), with
adversarial files of rt's own format and of torch.save's, and safetensors round trips
against the ``safetensors`` package.

Ported: SerializationMixin's data round trips (shared tensors stay shared, views keep their
storage), file-like objects (BytesIO, a FilelikeMock without fileno/readinto, a file that
cannot seek), save's errors for a destination that cannot be written, map_location
(strings, devices, dicts, functions), weights_only (the safe load of basic types; False is
refused by design, see rt.load's docstring), path-like paths, lr scheduler and optimizer
state dicts, meta-free module state dicts, pickle-offset files (torch's files after other
bytes), TestBothSerialization's many-tensor round trip, test_serialize_device,
test_serialization_save_warnings, and the weights-only refusals of torch.save files
(test_weights_only_assert, test_weights_only_safe_globals_*, blocklisted os.execv).

Left out: typed and untyped storages as objects (c[4], c[5], c[7] of
_test_serialization_data, test_serialization_storage_slice, test_save_different_dtype_*:
rt has no TypedStorage), sparse, complex and quantized tensors, math bits (conj/neg views),
ZeroTensor, TwoTensor and other tensor subclasses, dill and custom pickle modules and
unpickling arbitrary objects with weights_only=False (rt.load never unpickles code:
DESIGN.md), torch.jit archives, the legacy tar format and Python 2 files,
download_file-based fixtures, gzip streams (rt reads the whole file), mmap, skip_data,
FakeTensorMode, the byte-order tests' big-endian blobs and load endianness settings, 2 GB
and 4 GB files.
"""

from __future__ import annotations

import copy
import io
import json
import os
import pickle
import struct
import zipfile
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import runtime as torch
from runtime.serialization import MAGIC, CheckpointError


def roundtrip(obj: Any, **load_kwargs: Any) -> Any:
    f = io.BytesIO()
    torch.save(obj, f)
    f.seek(0)
    return torch.load(f, **load_kwargs)


def assert_same(a: Any, b: Any) -> None:
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor)
        assert a.dtype == b.dtype and a.shape == b.shape and a.device == b.device
        np.testing.assert_array_equal(a.detach().cpu().float().numpy() if a.dtype ==
                                      torch.bfloat16 else a.detach().cpu().numpy(),
                                      b.detach().cpu().float().numpy() if b.dtype ==
                                      torch.bfloat16 else b.detach().cpu().numpy())
        return
    if isinstance(a, dict):
        assert type(a) is type(b) and list(a) == list(b)
        for k in a:
            assert_same(a[k], b[k])
        return
    if isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_same(x, y)
        return
    assert a == b and type(a) is type(b), (a, b)


class FilelikeMock:
    """PyTorch's FilelikeMock: a BytesIO whose calls are recorded."""

    def __init__(self, data: bytes, has_fileno: bool = True, has_readinto: bool = False):
        if has_readinto:
            self.readinto = self.readinto_opt
        if has_fileno:
            self.fileno = self.fileno_opt
        self.calls: set[str] = set()
        self.bytesio = io.BytesIO(data)

        def trace(fn: Any, name: str) -> Any:
            def result(*args: Any, **kwargs: Any) -> Any:
                self.calls.add(name)
                return fn(*args, **kwargs)
            return result

        for attr in ["read", "readline", "seek", "tell", "write", "flush"]:
            setattr(self, attr, trace(getattr(self.bytesio, attr), attr))

    def fileno_opt(self) -> int:
        raise io.UnsupportedOperation("Not a real file")

    def readinto_opt(self, view: Any) -> int:
        self.calls.add("readinto")
        return self.bytesio.readinto(view)


# -------------------------------------------------------------------- SerializationMixin

def _serialization_data() -> list[Any]:
    a = [torch.randn(5, 5).float() for _ in range(2)]
    b = [a[i % 2] for i in range(4)]  # 0-3
    b += [torch.arange(1, 11).int()]  # 4
    b += [a[0].reshape(-1)[1:4]]  # 5: a view of part of a[0]
    b += [a[0].reshape(-1)[0:2]]  # 6
    return b


def _serialization_assert(b: list[Any], c: list[Any]) -> None:
    assert_same(b, c)
    for i in range(4):
        assert isinstance(c[i], torch.FloatTensor)
    c[0].fill_(10)
    assert_same(c[0], c[2])  # the same tensor saved twice is one tensor loaded
    c[1].fill_(20)
    assert_same(c[1], c[3])
    assert c[0] is c[2] and c[1] is c[3]
    # the views share the loaded a[0]'s memory, as PyTorch's storages
    assert (c[5] == 10).all() and (c[6] == 10).all()
    assert c[6].data_ptr() == c[0].data_ptr()
    assert c[5].data_ptr() == c[0].data_ptr() + 4


def test_serialization_real_file(tmp_path: Path) -> None:
    b = _serialization_data()
    with open(tmp_path / "f", "w+b") as f:
        torch.save(b, f)
        f.seek(0)
        _serialization_assert(b, torch.load(f, weights_only=True))
    torch.save(b, str(tmp_path / "g"))
    _serialization_assert(b, torch.load(str(tmp_path / "g"), weights_only=True))


def test_serialization_filelike() -> None:
    b = _serialization_data()
    f = io.BytesIO()
    torch.save(b, f)
    f.seek(0)
    _serialization_assert(b, torch.load(f))


def test_serialization_nonascii_path(tmp_path: Path) -> None:
    d = tmp_path / "\u975eASCII\u30d1\u30b9"
    d.mkdir()
    b = _serialization_data()
    torch.save(b, d / "ckpt.pt")
    _serialization_assert(b, torch.load(d / "ckpt.pt"))


def test_pathlike_serialization(tmp_path: Path) -> None:
    model = torch.nn.Conv2d(20, 32, kernel_size=3)
    torch.save(model.state_dict(), tmp_path / "m.pt")
    loaded = torch.load(tmp_path / "m.pt", weights_only=True)
    assert_same(dict(model.state_dict()), dict(loaded))


def test_serialize_device() -> None:
    for d in ["cpu", "cpu:0", "cuda", "cuda:0"]:
        device = torch.device(d)
        assert copy.deepcopy(device) == device
        assert roundtrip(device) == device


def test_serialization_save_warnings(recwarn: Any) -> None:
    torch.save(torch.nn.Linear(2, 3).state_dict(), io.BytesIO())
    assert len(recwarn) == 0


@pytest.mark.parametrize("map_location", [
    lambda storage, loc: storage, {"cuda:0": "cpu"}, "cpu", "cpu", None])
def test_serialization_map_location(map_location: Any) -> None:
    t = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    for ml in (map_location, torch.device("cpu")):
        loaded = roundtrip(t, map_location=ml)
        assert loaded.device == torch.device("cpu")
        assert loaded.dtype == torch.float
        assert_same(loaded, t)


def test_serialization_filelike_api_requirements() -> None:
    filemock = FilelikeMock(b"", has_readinto=False)
    tensor = torch.randn(3, 5)
    torch.save(tensor, filemock)
    assert {"write", "flush"}.issuperset(filemock.calls)
    filemock.seek(0)
    filemock.calls.clear()
    loaded = torch.load(filemock)
    assert {"read", "readline", "seek", "tell"}.issuperset(filemock.calls)
    assert torch.equal(loaded, tensor)


@pytest.mark.parametrize("mock", [
    lambda x: FilelikeMock(x), lambda x: FilelikeMock(x, has_readinto=True),
    lambda x: FilelikeMock(x, has_fileno=False)])
def test_serialization_filelike_missing_attrs(mock: Any) -> None:
    tensor = torch.randn(3, 10)
    f = mock(b"")
    torch.save(tensor, f)
    f.seek(0)
    assert torch.equal(tensor, torch.load(mock(f.read())))


def test_serialization_filelike_stress() -> None:
    a = torch.randn(11 * (2 ** 7) + 1, 5 * (2 ** 7))
    for has_readinto in (False, True):
        f = FilelikeMock(b"", has_readinto=has_readinto)
        torch.save(a, f)
        f.seek(0)
        assert torch.equal(a, torch.load(FilelikeMock(f.read(), has_readinto=has_readinto)))


def test_serialization_filelike_exceptions() -> None:
    x = torch.rand(10)
    with pytest.raises(AttributeError):
        torch.save("foo", x)
    x.write = "bar"
    x.flush = "baz"
    with pytest.raises(TypeError):
        torch.save("foo", x)
    x.write = str.__add__
    x.flush = str.__mul__
    with pytest.raises(TypeError):
        torch.save("foo", x)
    arr = torch.randint(10, (3, 3), dtype=torch.float).cpu().numpy()
    with pytest.raises(AttributeError):
        torch.save(arr, arr)


def test_load_error_msg() -> None:
    expected = ("You can only torch.load from a file that is seekable. Please pre-load the "
                "data into a buffer like io.BytesIO and try to load from it instead.")
    resource = FilelikeMock(data=b"data")
    delattr(resource, "tell")
    delattr(resource, "seek")
    with pytest.raises(AttributeError, match=expected.replace(".", r"\.")):
        torch.load(resource)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64",
                                   "int32", "int16", "int8", "uint8", "bool"])
def test_save_different_dtype_unallocated(dtype: str) -> None:
    a = torch.tensor([], dtype=getattr(torch, dtype))
    for other in ("float32", "int64", "bool", "bfloat16"):
        b = torch.tensor([], dtype=getattr(torch, other))
        a_loaded, b_loaded = roundtrip([a, b])
        assert_same(a, a_loaded)
        assert_same(b, b_loaded)


def test_safe_load_basic_types() -> None:
    data = {"int": 123, "str": "world", "float": 3.14, "bool": False}
    assert roundtrip(data, weights_only=True) == data


def test_serialization_new_format_many_tensors(recwarn: Any) -> None:
    x = [torch.ones(200, 200) for _ in range(30)]
    loaded = roundtrip(x, weights_only=True)
    assert_same(x, loaded)
    assert len(recwarn) == 0


def test_lr_scheduler_serialization() -> None:
    sgd = torch.optim.SGD([torch.randn(100, 100, 20, requires_grad=True)], lr=0.1,
                          momentum=0.9)
    lr_scheduler = torch.optim.lr_scheduler.OneCycleLR(sgd, 6.0, total_steps=10)
    f = io.BytesIO()
    torch.save(lr_scheduler.state_dict(), f)
    size = f.tell()
    f.seek(0)
    state = torch.load(f)
    assert state["base_lrs"] == lr_scheduler.base_lrs
    assert "_anneal_func_type" in state or not hasattr(state.get("anneal_func"), "__self__")
    assert size < 1024 * 1024


def test_optimizer_state_round_trip() -> None:
    model = torch.nn.Linear(3, 2)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    model(torch.randn(4, 3)).sum().backward()
    opt.step()
    sd = opt.state_dict()
    loaded = roundtrip(sd)
    assert list(loaded["state"]) == [0, 1]  # int keys stay ints
    assert_same(sd["state"][0]["exp_avg"], loaded["state"][0]["exp_avg"])
    assert_same(sd["state"][0]["step"], loaded["state"][0]["step"])
    assert loaded["param_groups"][0]["lr"] == 0.01
    opt2 = torch.optim.Adam(model.parameters(), lr=0.5)
    opt2.load_state_dict(loaded)
    assert opt2.param_groups[0]["lr"] == 0.01


def test_module_state_dict_metadata_round_trip() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.BatchNorm1d(2))
    sd = model.state_dict()
    loaded = roundtrip(sd)
    assert isinstance(loaded, OrderedDict)
    assert loaded._metadata == sd._metadata
    assert list(loaded) == list(sd)
    model2 = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.BatchNorm1d(2))
    model2.load_state_dict(loaded)
    for k, v in model2.state_dict().items():
        assert_same(v, sd[k])


# ------------------------------------------------- nested containers, dtypes, shapes, views

def test_nested_containers() -> None:
    t = torch.arange(6.0).reshape(2, 3)
    obj = {"a": [t, (t[0], {"deep": [1, 2.5, None, True, "s"]})], 3: {"x": t},
           "od": OrderedDict(b=1, a=2), "set": {1, 2}, "bytes": b"\x00\xff",
           "complex": 1 + 2j, "size": torch.Size([2, 3]), "dtype": torch.float16,
           "tuple": (1, (2, 3)), "empty": [], "emptyd": {}}
    loaded = roundtrip(obj)
    assert list(loaded) == list(obj)
    assert_same(loaded["a"][0], t)
    assert loaded["a"][1][0].data_ptr() == loaded["a"][0].data_ptr()
    assert loaded["a"][1][1] == {"deep": [1, 2.5, None, True, "s"]}
    assert isinstance(loaded["od"], OrderedDict) and list(loaded["od"]) == ["b", "a"]
    for k in ("set", "bytes", "complex", "size", "dtype", "tuple", "empty", "emptyd"):
        assert loaded[k] == obj[k] and type(loaded[k]) is type(obj[k]), k


@pytest.mark.parametrize("shape", [(), (0,), (2, 0, 3), (1,), (3, 4)])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64",
                                   "int32", "int16", "int8", "uint8", "bool"])
def test_dtypes_and_shapes(shape: tuple[int, ...], dtype: str) -> None:
    t = (torch.randn(shape) * 10).to(getattr(torch, dtype))
    loaded = roundtrip(t)
    assert_same(t, loaded)
    assert loaded.stride() == t.contiguous().stride()


def test_requires_grad_and_parameters() -> None:
    p = torch.nn.Parameter(torch.randn(3))
    q = torch.nn.Parameter(torch.randn(3), requires_grad=False)
    t = torch.randn(2, requires_grad=True)
    lp, lq, lt = roundtrip([p, q, t])
    assert isinstance(lp, torch.nn.Parameter) and lp.requires_grad
    assert isinstance(lq, torch.nn.Parameter) and not lq.requires_grad
    assert not isinstance(lt, torch.nn.Parameter) and lt.requires_grad and lt.is_leaf


def test_views_keep_their_storage() -> None:
    base = torch.arange(12.0).reshape(3, 4)
    views = [base, base.t(), base[1:], base[:, 1::2], base.reshape(-1)[3:7]]
    loaded = roundtrip(views)
    for v, lv in zip(views, loaded, strict=True):
        assert_same(v, lv)
        assert lv.stride() == v.stride()
        assert lv.storage_offset() == v.storage_offset()
    loaded[0].add_(100)
    for lv in loaded[1:]:
        assert (lv >= 100).all()


def test_a_view_alone_saves_its_storage_offset() -> None:
    x = torch.randn(30).as_strided([2, 3], [9, 3], 2)
    loaded = roundtrip(x)
    assert_same(x, loaded)
    assert loaded.storage_offset() == x.storage_offset()
    assert loaded.stride() == x.stride()


def test_tied_weights_stay_tied() -> None:
    emb = torch.nn.Embedding(5, 3)
    head = torch.nn.Linear(3, 5, bias=False)
    head.weight = emb.weight
    loaded = roundtrip({"emb": emb.weight, "head": head.weight})
    assert loaded["emb"] is loaded["head"]


def test_save_is_a_snapshot() -> None:
    t = torch.zeros(3)
    f = io.BytesIO()
    torch.save(t, f)
    t.add_(1)
    f.seek(0)
    assert (torch.load(f) == 0).all()


def test_two_loads_do_not_share() -> None:
    f = io.BytesIO()
    torch.save(torch.zeros(3), f)
    f.seek(0)
    a = torch.load(f)
    f.seek(0)
    b = torch.load(f)
    a.add_(1)
    assert (b == 0).all()


def test_loaded_tensors_are_writable_and_aligned() -> None:
    loaded = roundtrip({"a": torch.randn(3, 3), "b": torch.arange(5)})
    for t in loaded.values():
        t.add_(1)
        arr = t.numpy()
        assert arr.flags.writeable
        assert arr.ctypes.data % arr.dtype.itemsize == 0


def test_save_after_other_bytes() -> None:
    """test_serialization_offset: a checkpoint inside a longer stream, read from where the
    stream stands."""
    a = torch.randn(5, 5)
    f = io.BytesIO()
    pickle.dump(41, f)
    torch.save(a, f)
    f.seek(0)
    assert pickle.load(f) == 41
    assert torch.equal(torch.load(f), a)


# ------------------------------------------------------------------ weights_only, refusals

def test_weights_only_false_is_refused() -> None:
    f = io.BytesIO()
    torch.save(torch.zeros(1), f)
    f.seek(0)
    with pytest.raises(ValueError, match="weights_only=False"):
        torch.load(f, weights_only=False)


def test_save_refuses_objects_that_are_not_data() -> None:
    class HelloWorld:
        def __reduce__(self) -> Any:
            return (print, ("Hello World!",))

    for bad in (HelloWorld(), torch.nn.Linear(2, 2), print, os.execv):
        with pytest.raises(TypeError, match="rt.save cannot store"):
            torch.save(bad, io.BytesIO())


def _torch_file(obj: Any) -> io.BytesIO:
    tt = pytest.importorskip("torch")
    f = io.BytesIO()
    tt.save(obj, f)
    f.seek(0)
    return f


class HelloWorld:
    def __reduce__(self) -> Any:
        return (print, ("Hello World!",))


def test_weights_only_assert_on_torch_file(capsys: Any) -> None:
    f = _torch_file(HelloWorld())
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global: GLOBAL print"):
        torch.load(f, weights_only=True)
    assert capsys.readouterr().out == ""


def test_weights_only_safe_globals_blocklist() -> None:
    f = _torch_file(os.execv)
    with pytest.raises(pickle.UnpicklingError, match="unsupported GLOBAL posix.execv whose "
                                                     "module posix is blocked"):
        torch.load(f)
    f.seek(0)
    with torch.serialization.safe_globals([os.execv]):
        with pytest.raises(pickle.UnpicklingError, match="posix is blocked"):
            torch.load(f)


Point = __import__("collections").namedtuple("Point", ["x", "y"])


def test_weights_only_safe_globals_newobj() -> None:
    p = Point(x=1, y=2)
    f = _torch_file(p)
    with pytest.raises(pickle.UnpicklingError,
                       match=f"GLOBAL {__name__}.Point was not an allowed global by default"):
        torch.load(f, weights_only=True)
    f.seek(0)
    with torch.serialization.safe_globals([Point]):
        assert torch.load(f, weights_only=True) == p


def test_torch_file_round_trip_values_and_sharing() -> None:
    tt = pytest.importorskip("torch")
    base = tt.arange(12.0).reshape(3, 4)
    obj = {"w": base, "v": base[1:], "t": base.t(), "i": tt.arange(3, dtype=tt.int16),
           "e": tt.empty(0, 2), "s": tt.tensor(2.5, dtype=tt.float64),
           "b": tt.tensor([True, False]), "bf": tt.ones(2, dtype=tt.bfloat16),
           "meta": {"step": 3, "name": "x", "lrs": [0.1, 0.01]}}
    loaded = torch.load(_torch_file(obj))
    for k in ("w", "v", "t", "i", "e", "s", "b"):
        np.testing.assert_array_equal(loaded[k].numpy(), obj[k].numpy())
        assert str(loaded[k].dtype).split(".")[1] == str(obj[k].dtype).split(".")[1]
        assert loaded[k].stride() == obj[k].stride()
    assert loaded["bf"].dtype == torch.bfloat16
    assert loaded["meta"] == obj["meta"]
    loaded["w"].add_(100)
    assert (loaded["v"] >= 100).all() and (loaded["t"] >= 100).all()


def test_rt_file_loads_in_torch() -> None:
    """Not required of rt's format: torch cannot read it; it must say so, not run it."""
    tt = pytest.importorskip("torch")
    f = io.BytesIO()
    torch.save({"a": torch.ones(2)}, f)
    f.seek(0)
    with pytest.raises(Exception):  # noqa: B017,PT011 - torch's own unpickling error
        tt.load(f, weights_only=True)


# -------------------------------------------------------- bad and adversarial files

def _header_file(header: Any, data: bytes = b"", raw: bytes | None = None) -> io.BytesIO:
    body = raw if raw is not None else json.dumps(header).encode()
    return io.BytesIO(MAGIC + struct.pack("<Q", len(body)) + body + data)


@pytest.mark.parametrize("blob", [b"", b"garbage", MAGIC, MAGIC + b"\x01\x02",
                                  MAGIC + struct.pack("<Q", 1 << 62),
                                  MAGIC + struct.pack("<Q", 10) + b"{}",
                                  b"PK\x03\x04" + b"\x00" * 40])
def test_bad_files_raise(blob: bytes) -> None:
    with pytest.raises((CheckpointError, pickle.UnpicklingError, RuntimeError, ValueError)):
        torch.load(io.BytesIO(blob))


def test_a_pickle_is_never_unpickled(tmp_path: Path) -> None:
    """A plain pickle that would run code (a file os.system would touch) is refused."""
    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self) -> Any:
            return (os.system, (f"touch {marker}",))

    for protocol in (2, 4, 5):
        blob = pickle.dumps(Evil(), protocol=protocol)
        with pytest.raises((CheckpointError, pickle.UnpicklingError, RuntimeError)):
            torch.load(io.BytesIO(blob))
    assert not marker.exists()


def test_a_zip_with_an_evil_pickle_runs_nothing(tmp_path: Path) -> None:
    """torch.save's layout, its data.pkl calling os.system: refused before anything runs,
    also with the callee 'allowed' by the caller."""
    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self) -> Any:
            return (os.system, (f"touch {marker}",))

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("archive/data.pkl", pickle.dumps(Evil(), protocol=2))
        z.writestr("archive/version", "3\n")
        z.writestr("archive/byteorder", "little")
    for safe in ([], [os.system]):
        buf.seek(0)
        with torch.serialization.safe_globals(safe):
            with pytest.raises(pickle.UnpicklingError):
                torch.load(buf)
    assert not marker.exists()


@pytest.mark.parametrize("tree", [
    {"__class__": "os.system"}, {"tensor": 0}, {"tensor": -1}, {"dict": [[1]]},
    {"tuple": 5}, {"dtype": "os"}, {"bytes": "!!notbase64"}, {"unknown": 1},
    {"tensor": "0"}, {"set": [[1, 2]]}])
def test_crafted_headers_raise(tree: Any) -> None:
    with pytest.raises((CheckpointError, ValueError, TypeError)):
        torch.load(_header_file({"tree": tree, "tensors": []}))


@pytest.mark.parametrize("entry", [
    {"dtype": "float32", "shape": [4], "offset": 0, "nbytes": 16},
    {"dtype": "float32", "shape": [1 << 40], "offset": 0, "nbytes": 4 << 40},
    {"dtype": "float32", "shape": [-1], "offset": 0, "nbytes": 0},
    {"dtype": "object", "shape": [1], "offset": 0, "nbytes": 8},
    {"dtype": "float32", "shape": [2], "offset": 1 << 62, "nbytes": 8},
    {"dtype": "float32", "shape": [2], "offset": 0, "nbytes": 4},
    {"dtype": "float32", "shape": "x", "offset": 0, "nbytes": 8},
    {"dtype": "float32", "shape": [2], "device": "os.system", "offset": 0, "nbytes": 8}])
def test_crafted_tensor_entries_raise(entry: dict[str, Any]) -> None:
    with pytest.raises((CheckpointError, ValueError, TypeError, RuntimeError)):
        torch.load(_header_file({"tree": {"tensor": 0}, "tensors": [entry]}, b"\0" * 8))


def test_crafted_deep_nesting_raises() -> None:
    deep: Any = 1
    for _ in range(5000):
        deep = [deep]
    raw = json.dumps({"tree": 1, "tensors": []}).replace("1", "X", 1)
    raw = raw.replace('"X"', "1")
    body = ('{"tree":' + "[" * 100000 + "]" * 100000 + ',"tensors":[]}').encode()
    with pytest.raises((CheckpointError, RecursionError, ValueError)):
        torch.load(_header_file(None, raw=body))


def test_header_that_is_not_json_raises() -> None:
    with pytest.raises(CheckpointError):
        torch.load(_header_file(None, raw=b"\xff\xfe not json"))


def test_truncated_file_raises() -> None:
    f = io.BytesIO()
    torch.save({"a": torch.randn(100)}, f)
    blob = f.getvalue()
    for cut in (len(blob) - 1, len(blob) - 300, 20):
        with pytest.raises(CheckpointError):
            torch.load(io.BytesIO(blob[:cut]))


def test_load_missing_file_raises() -> None:
    with pytest.raises(FileNotFoundError):
        torch.load("/nonexistent/dir/ckpt.pt")


def test_save_to_missing_dir_raises(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="Parent directory .* does not exist"):
        torch.save(torch.zeros(1), tmp_path / "nope" / "f.pt")


# ---------------------------------------------------------------------------- safetensors

def test_safetensors_round_trip_with_the_package(tmp_path: Path) -> None:
    st = pytest.importorskip("safetensors.numpy")
    from runtime import safetensors as rst
    tensors = {"w": torch.randn(3, 4), "i": torch.arange(5, dtype=torch.int32),
               "b": torch.tensor([True, False]), "e": torch.zeros(0, 2),
               "s": torch.tensor(1.5, dtype=torch.float64), "h": torch.randn(2).half()}
    rst.save_file(tensors, tmp_path / "a.safetensors", metadata={"k": "v"})
    theirs = st.load_file(str(tmp_path / "a.safetensors"))
    for k, t in tensors.items():
        np.testing.assert_array_equal(theirs[k], t.numpy())
        assert theirs[k].dtype == t.numpy().dtype
    st.save_file({k: v.numpy() for k, v in tensors.items()}, str(tmp_path / "b.safetensors"),
                 metadata={"k": "v"})
    ours = rst.load_file(tmp_path / "b.safetensors")
    for k, t in tensors.items():
        assert_same(ours[k], t)
    assert rst.metadata(tmp_path / "b.safetensors") == {"k": "v"}
    assert rst.load(rst.save(tensors)).keys() == tensors.keys()


def test_safetensors_bytes_equal_the_package() -> None:
    st = pytest.importorskip("safetensors.numpy")
    from runtime import safetensors as rst
    tensors = {"b": torch.arange(6.0).reshape(2, 3), "a": torch.arange(4, dtype=torch.int64)}
    assert rst.save(tensors) == st.save({k: v.numpy() for k, v in tensors.items()})


def test_safetensors_bad_files_raise() -> None:
    from runtime import safetensors as rst
    good = rst.save({"a": torch.arange(4.0)})
    for blob in (b"", good[:7], good[:-1], struct.pack("<Q", 1 << 60) + b"{}",
                 struct.pack("<Q", 2) + b"[]"):
        with pytest.raises(Exception):  # noqa: B017,PT011 - the package raises its own
            rst.load(blob)


def test_load_nonexistent_device() -> None:
    """test_load_nonexistent_device: a tensor bound for a GPU this machine lacks (saved
    there, or mapped there) is PyTorch's error, from rt's format and torch's."""
    blobs = [io.BytesIO(torch.serialization.dumps(torch.ones(2)))]
    try:
        import torch as real_torch
        f = io.BytesIO()
        real_torch.save(real_torch.ones(2), f)
        blobs.append(f)
    except ImportError:
        pass
    if torch.cuda.is_available():
        count = torch.cuda.device_count()
        where, msg = f"cuda:{count}", (f"Attempting to deserialize object on CUDA device "
                                       f"{count} but torch.cuda.device_count() is {count}")
    else:
        where, msg = "cuda", ("Attempting to deserialize object on a CUDA device but "
                              "torch.cuda.is_available() is False. If you are running on a "
                              "CPU-only machine, please use torch.load with "
                              "map_location=torch.device('cpu') to map your storages to the "
                              "CPU.")
    for blob in blobs:
        for ml in (where, {"cpu": where}):
            blob.seek(0)
            with pytest.raises(RuntimeError, match=msg.replace("(", r"\(").replace(")", r"\)")
                               .replace(".", r"\.")):
                torch.load(blob, map_location=ml)


def test_mmap_needs_a_path(tmp_path: Path) -> None:
    f = io.BytesIO()
    torch.save(torch.ones(2), f)
    f.seek(0)
    with pytest.raises(ValueError, match="f must be a file path in order to use the mmap "
                                         "argument"):
        torch.load(f, mmap=True)
    torch.save(torch.ones(2), tmp_path / "a.pt")
    assert torch.load(tmp_path / "a.pt", mmap=True).tolist() == [1.0, 1.0]


def test_empty_and_garbage_files_raise_torchs_types() -> None:
    """An empty file is PyTorch's EOFError, bytes of no checkpoint its UnpicklingError
    (both still rt's CheckpointError), a text file its AssertionError."""
    with pytest.raises(EOFError):
        torch.load(io.BytesIO(b""))
    with pytest.raises(CheckpointError):
        torch.load(io.BytesIO(b""))
    with pytest.raises(pickle.UnpicklingError):
        torch.load(io.BytesIO(b"garbage!"))
    with pytest.raises(AssertionError, match="Expected bytes, got str"):
        torch.load(io.StringIO("abc"))


def test_save_to_a_directory_raises_runtime_error(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="open file failed with strerror: Is a directory"):
        torch.save(torch.ones(1), tmp_path)


class ClassThatUsesBuildInstruction:
    def __init__(self, num: int) -> None:
        self.num = num

    def __reduce_ex__(self, proto: int) -> Any:
        return ClassThatUsesBuildInstruction, (self.num,), {"foo": "bar"}


def test_weights_only_safe_globals_build() -> None:
    counter = 0

    def fake_set_state(obj: Any, *args: Any) -> None:
        nonlocal counter
        counter += 1

    f = _torch_file(ClassThatUsesBuildInstruction(2))
    with pytest.raises(pickle.UnpicklingError, match=f"GLOBAL {__name__}."
                       "ClassThatUsesBuildInstruction was not an allowed global by default"):
        torch.load(f, weights_only=True)
    try:
        with torch.serialization.safe_globals([ClassThatUsesBuildInstruction]):
            f.seek(0)
            loaded = torch.load(f, weights_only=True)
            assert loaded.num == 2 and loaded.foo == "bar"
            ClassThatUsesBuildInstruction.__setstate__ = fake_set_state
            f.seek(0)
            loaded = torch.load(f, weights_only=True)
            assert loaded.num == 2 and counter == 1 and not hasattr(loaded, "foo")
    finally:
        ClassThatUsesBuildInstruction.__setstate__ = None


@__import__("dataclasses").dataclass
class ClassThatUsesBuildInstructionAllSlots:
    __slots__ = ["x", "y"]
    x: int
    y: int


@__import__("dataclasses").dataclass
class ClassThatUsesBuildInstructionSomeSlots(ClassThatUsesBuildInstructionAllSlots):
    x: int
    y: int
    c: str


@pytest.mark.parametrize("slots", ["some", "all"])
def test_weights_only_safe_globals_build_with_slots(slots: str) -> None:
    cls = (ClassThatUsesBuildInstructionAllSlots if slots == "all"
           else ClassThatUsesBuildInstructionSomeSlots)
    obj = cls(*((2, 3) if slots == "all" else (2, 3, "foo")))
    f = _torch_file(obj)
    with pytest.raises(pickle.UnpicklingError, match=f"GLOBAL {__name__}.{cls.__name__} was "
                                                     "not an allowed global by default"):
        torch.load(f, weights_only=True)
    f.seek(0)
    with torch.serialization.safe_globals([cls]):
        assert torch.load(f, weights_only=True) == obj


def test_weights_only_blocked_sys_even_when_allowed() -> None:
    f = _torch_file(__import__("sys").exit)
    for allowed in ([], [__import__("sys").exit]):
        f.seek(0)
        with torch.serialization.safe_globals(allowed):
            with pytest.raises(pickle.UnpicklingError, match="whose module sys is blocked"):
                torch.load(f)


def test_round_trip_semantics_equal_torchs() -> None:
    """What a save/load round trip keeps, rt's format against torch's: a non-leaf saved
    as a leaf requiring grad, no .grad, keys of every type, -0.0 and ints past 64 bits, a
    parameter and its .data sharing, views of one storage with their offsets, expanded
    and squeezed strides, empty shapes."""
    tt = pytest.importorskip("torch")

    def facts(mod: Any) -> list[Any]:
        def rtrip(o: Any) -> Any:
            f = io.BytesIO()
            mod.save(o, f)
            f.seek(0)
            return mod.load(f)
        x = mod.ones(2, requires_grad=True)
        nonleaf = rtrip(x * 2)
        x.grad = mod.ones(2)
        d = rtrip({(1, 2): 1, 1.5: 2, None: 3, True: 4, 2 ** 100: 5, "k": -0.0,
                   "neg": -(2 ** 70)})
        p = mod.nn.Parameter(mod.ones(2))
        lp = rtrip([p, p.data, p[0:1]])
        t = mod.arange(10.0)
        views = rtrip({"a": t[2:4], "b": t[5:6]})
        views["a"].fill_(7)
        return [nonleaf.requires_grad, nonleaf.is_leaf, nonleaf.grad_fn, rtrip(x).grad,
                list(d.items()), str(d["k"]), type(lp[0]).__name__,
                lp[1].data_ptr() == lp[0].data_ptr(), lp[2].data_ptr() == lp[0].data_ptr(),
                views["b"].tolist(), views["a"].storage_offset(), views["b"].storage_offset(),
                rtrip(mod.ones(3).expand(4, 3)).stride(), rtrip(mod.ones(1, 3, 1)[..., 0]).stride(),
                [v.stride() for v in rtrip((mod.ones(0), mod.zeros((2, 0))))]]

    assert facts(torch) == facts(tt)


def _st_blob(header: Any, data: bytes = b"") -> bytes:
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + data


@pytest.mark.parametrize("blob", [
    b"\x00" * 3, b"\xff" * 8 + b"{}", struct.pack("<Q", 4) + b"{}",
    struct.pack("<Q", 2) + b"\xff\xfe", struct.pack("<Q", 3) + b"{x}",
    _st_blob({"x": {"dtype": "F32", "shape": [1]}}, b"\0" * 4),
    _st_blob({"x": {"dtype": "Q32", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 4),
    _st_blob({"x": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}}, b"\0" * 4),
    _st_blob({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}, b"\0" * 4),
    _st_blob({"x": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, b"\0" * 8),
    _st_blob({"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 8),
    _st_blob({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 4),
    _st_blob({"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
              "y": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 4)])
def test_safetensors_errors_start_as_the_packages(blob: bytes) -> None:
    """rt.safetensors' errors for a malformed file begin with the package's own text
    ('Error while deserializing: header too small', '... invalid offset for tensor `x`',
    ...), rt's detail after it."""
    stn = pytest.importorskip("safetensors.numpy")
    from runtime import safetensors as rst
    with pytest.raises(Exception) as theirs:  # noqa: PT011 - the package's SafetensorError
        stn.load(blob)
    with pytest.raises(rst.SafetensorError) as ours:
        rst.load(blob)
    want = str(theirs.value)
    got = str(ours.value)
    # serde's own wording after "invalid JSON in header:" is not reproduced, only its phrase
    prefix = want.split(": ", 2)[:2] if "in header" in want else [want]
    # the package names the first bad tensor in its hash map's order (x or y): not compared
    assert got.startswith(": ".join(prefix).split("`")[0]), (got, want)


@pytest.mark.parametrize("weights_only", [True, None])
def test_serialization_python_attr(weights_only: Any) -> None:
    """A tensor's (and a parameter's) Python attributes survive save and load, as
    torch.save's; ones holding objects a checkpoint cannot hold are refused at save."""
    def check(t: Any) -> None:
        t.foo = "foo"
        t.pi = 3.14
        t.other = torch.ones(2)
        loaded = roundtrip(t, weights_only=weights_only)
        assert_same(loaded, t)
        assert loaded.foo == t.foo and loaded.pi == t.pi
        assert_same(loaded.other, t.other)
        assert type(loaded) is type(t)

    check(torch.zeros(3, 3))
    check(torch.nn.Parameter(torch.zeros(3, 3)))
    t = torch.zeros(1)
    t.obj = object()
    with pytest.raises(TypeError, match="rt.save cannot store"):
        torch.save(t, io.BytesIO())


def test_hooks_and_views_are_not_saved_as_attributes() -> None:
    x = torch.ones(2, requires_grad=True)
    x.register_hook(lambda g: g)
    x.register_post_accumulate_grad_hook(lambda t: None)
    v = x[0:1]
    v.retain_grad()
    lx, lv = roundtrip([x, v])
    assert vars(lx) == {} and "_retains_grad" not in vars(lv)


def test_crafted_attributes_cannot_replace_tensor_fields() -> None:
    f = io.BytesIO()
    t = torch.zeros(2)
    t.foo = 1
    torch.save(t, f)
    blob = f.getvalue().replace(b'"foo"', b'"add"')
    with pytest.raises(CheckpointError, match="attributes name its attribute 'add'"):
        torch.load(io.BytesIO(blob))


def test_get_unsafe_globals_in_checkpoint() -> None:
    """torch.serialization.get_unsafe_globals_in_checkpoint: the globals of a torch.save
    file a weights-only load refuses, PyTorch's list, found without running anything; the
    ones marked safe left out; none in an rt.save file; bytes of no checkpoint its
    ValueError."""
    tt = pytest.importorskip("torch")
    import argparse
    import datetime
    class Evil:
        def __reduce__(self) -> Any:
            return (os.system, ("true",))

    cases = [({"a": tt.ones(2), "p": tt.nn.Parameter(tt.ones(1)), "d": tt.float16,
               "s": tt.Size([1]), "dev": tt.device("cpu")}, []),
             (tt.nn.Linear(2, 2).state_dict(), []),
             ({"a": argparse.Namespace(x=1)}, ["argparse.Namespace"]),
             (Point(1, 2), [f"{__name__}.Point"]),
             (Evil(), [f"{os.system.__module__}.system"]),
             (datetime.date(2020, 1, 1), ["datetime.date"])]
    for obj, want in cases:
        f = _torch_file(obj)
        assert torch.serialization.get_unsafe_globals_in_checkpoint(f) == want
        f.seek(0)
        assert sorted(tt.serialization.get_unsafe_globals_in_checkpoint(f)) == want
    f = _torch_file({"a": argparse.Namespace(x=1)})
    with torch.serialization.safe_globals([argparse.Namespace]):
        assert torch.serialization.get_unsafe_globals_in_checkpoint(f) == []
    f = io.BytesIO()
    torch.save({"a": torch.ones(1)}, f)
    f.seek(0)
    assert torch.serialization.get_unsafe_globals_in_checkpoint(f) == []
    with pytest.raises(ValueError, match="Expected input to be a checkpoint returned by "
                                         "torch.save"):
        torch.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(b"garbage"))
