"""Checkpoints against PyTorch 2.13: a torch.save file (state dicts, parameters, views
sharing a storage, every dtype both have, empty and 0-d tensors, nested containers and the
other objects torch.load(weights_only=True) returns) read by rt.load as torch.load reads
it, by path or file object, with map_location; a file whose pickle would run code, or set
an object's state, refused before anything runs; rt.save/rt.load round trips of the same
objects; safetensors files written by the ``safetensors`` package read here and ours read
there (metadata, dtypes, safe_open's keys, offset_keys, get_slice)."""

from __future__ import annotations

import collections
import io
import os
import pickle
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import runtime as rt
from runtime.serialization import CheckpointError

torch = pytest.importorskip("torch")


def _plain(o: Any) -> Any:
    if isinstance(o, (torch.Tensor, rt.Tensor)):
        arr = o.detach().float().numpy() if "bfloat16" in str(o.dtype) else o.detach().numpy()
        return ("T", type(o).__name__ == "Parameter", str(o.dtype).split(".")[-1],
                tuple(o.shape), bool(o.requires_grad), arr.tolist())
    if isinstance(o, dict):
        return type(o).__name__, [(_plain(k), _plain(v)) for k, v in o.items()]
    if isinstance(o, (list, tuple, set)):
        return type(o).__name__, [_plain(v) for v in (sorted(o) if isinstance(o, set) else o)]
    if isinstance(o, (torch.dtype, rt.dtype)):
        return "dtype", str(o).split(".")[-1]
    if isinstance(o, (torch.device, rt.device)):
        return "device", str(o)
    return type(o).__name__, o


def _objects(lib: Any) -> dict[str, Any]:
    base = lib.arange(12.0).reshape(3, 4)
    linear = lib.nn.Linear(3, 2)
    with lib.no_grad():
        linear.weight.copy_(lib.arange(6.0).reshape(2, 3))
        linear.bias.fill_(0.5)
    return {
        "state": linear.state_dict(),
        "param": lib.nn.Parameter(lib.ones(2)), "frozen": lib.nn.Parameter(
            lib.ones(1), requires_grad=False),
        "base": base, "view": base[1:, ::2], "leaf": lib.ones(2, requires_grad=True),
        "dtypes": [lib.ones(2, dtype=getattr(lib, n)) for n in (
            "float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
            "uint8", "bool")],
        "empty": lib.zeros(0, 3), "scalar": lib.tensor(2.5),
        "numbers": (1, 2.5, True, None, "s", 10**20, float("inf")),
        "nested": [{"k": [lib.ones(1)], 3: "int key"}],
        "ordered": collections.OrderedDict(b=1, a=2),
        "others": [b"xy", bytearray(b"z"), {1, 2}, 1 + 2j, lib.float16,
                   lib.device("cpu"), lib.Size([2, 3])],
    }


@pytest.mark.parametrize("as_file", [False, True])
def test_rt_load_reads_torch_save_as_torch_load(tmp_path: Path, as_file: bool) -> None:
    path = tmp_path / "ckpt.pt"
    torch.save(_objects(torch), path)
    want = torch.load(path, weights_only=True)
    if as_file:
        with open(path, "rb") as fh:
            got = rt.load(io.BytesIO(fh.read()), map_location="cpu")
    else:
        got = rt.load(path)
    assert _plain(got) == _plain(want)
    assert type(got["state"]) is collections.OrderedDict
    got["base"][1, 0] = 100.0  # views of one storage share it again, as torch's
    assert float(got["view"][0, 0]) == 100.0
    model = rt.nn.Linear(3, 2)
    model.load_state_dict(got["state"])
    np.testing.assert_array_equal(model.weight.detach().numpy(),
                                  want["state"]["weight"].numpy())


def test_rt_save_round_trips_what_torch_load_returns() -> None:
    buf = io.BytesIO()
    rt.save(_objects(rt), buf)
    buf.seek(0)
    got = rt.load(buf)
    want = io.BytesIO()
    torch.save(_objects(torch), want)
    want.seek(0)
    assert _plain(got) == _plain(torch.load(want, weights_only=True))


class _Marker:
    ran = False


def _mark() -> None:
    _Marker.ran = True


class _Evil:
    def __reduce__(self) -> Any:
        return (_mark, ())


def _with_pickle(payload: bytes) -> io.BytesIO:
    """A torch.save zip whose data.pkl is ``payload``."""
    good = io.BytesIO()
    torch.save({"x": torch.ones(1)}, good)
    source = zipfile.ZipFile(io.BytesIO(good.getvalue()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for n in source.namelist():
            z.writestr(n, payload if n.endswith("data.pkl") else source.read(n))
    out.seek(0)
    return out


def test_a_file_that_would_run_code_is_refused_before_it_runs(tmp_path: Path) -> None:
    path = tmp_path / "evil.pt"
    torch.save({"a": _Evil()}, path)
    with pytest.raises(CheckpointError, match="GLOBAL .*_mark was not an allowed global by default"):
        rt.load(path)
    assert not _Marker.ran
    with pytest.raises(CheckpointError, match="posix.system|nt.system"):
        rt.load(_with_pickle(pickle.dumps(os.system, protocol=2)))
    # BUILD on a dtype would rewrite a global object's fields
    with pytest.raises(CheckpointError, match="sets the state of a DType"):
        rt.load(_with_pickle(b"\x80\x02ctorch\nfloat16\n}X\x02\x00\x00\x00npq\x00K\x01sb."))
    assert rt.float16.np == np.float16
    with pytest.raises(CheckpointError, match="bare pickle"):
        rt.load(io.BytesIO(pickle.dumps({"a": 1})))
    with pytest.raises(ValueError, match="weights_only=False"):
        rt.load(path, weights_only=False)


def test_safetensors_files_interoperate(tmp_path: Path) -> None:
    st = pytest.importorskip("safetensors.torch")
    tensors = {n: torch.arange(6).reshape(2, 3).to(getattr(torch, n)) for n in (
        "float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
        "uint8", "bool")}
    tensors.update(empty=torch.zeros(0, 2), scalar=torch.tensor(2.5))
    theirs, ours = tmp_path / "theirs.safetensors", tmp_path / "ours.safetensors"
    st.save_file(tensors, theirs, metadata={"format": "pt", "k": "v"})
    loaded = rt.safetensors.load_file(theirs)
    assert _plain(loaded) == _plain(st.load_file(theirs))
    assert rt.safetensors.metadata(theirs) == {"format": "pt", "k": "v"}
    rt.safetensors.save_file(loaded, ours, metadata={"a": "b"})
    assert _plain(dict(sorted(st.load_file(ours).items()))) == _plain(dict(sorted(
        tensors.items())))
    from safetensors import safe_open as their_open

    for path in (theirs, ours):
        with their_open(path, "pt") as a, rt.safetensors.safe_open(path, "pt") as b:
            assert b.keys() == a.keys() and b.offset_keys() == a.offset_keys()
            assert b.metadata() == a.metadata()
            x, y = a.get_slice("float32"), b.get_slice("float32")
            assert y.get_shape() == x.get_shape() and y.get_dtype() == x.get_dtype()
            for index in (np.s_[0:1], np.s_[:, 1], np.s_[1], np.s_[...]):
                assert _plain(y[index]) == _plain(x[index])
            assert _plain(b.get_tensors()) == _plain(a.get_tensors())


def test_torch_save_and_load_arguments_are_taken() -> None:
    buf = io.BytesIO()
    rt.save({"a": rt.ones(2)}, buf, pickle_protocol=4, _use_new_zipfile_serialization=False,
            _disable_byteorder_record=True)
    buf.seek(0)
    assert rt.load(buf, "cpu", None, weights_only=True, mmap=False)["a"].tolist() == [1.0, 1.0]
    buf.seek(0)
    with pytest.raises(ValueError, match="pickle_module"):  # torch would unpickle with it
        rt.load(buf, None, pickle)
