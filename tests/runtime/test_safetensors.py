"""runtime.safetensors reads and writes the safetensors format byte for byte."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

import runtime as rt
from runtime import safetensors as st


def _tensors() -> dict[str, rt.Tensor]:
    rt.manual_seed(1)
    return {"b.weight": rt.randn(3, 4), "a.bias": rt.randn(4).double(),
            "idx": rt.tensor([1, 2, 3]), "mask": rt.tensor([True, False]),
            "empty": rt.zeros(0, 2)}


def test_round_trip_file_and_metadata(tmp_path):
    path = tmp_path / "m.safetensors"
    st.save_file(_tensors(), path, metadata={"format": "pt"})
    out = st.load_file(path)
    for k, t in _tensors().items():
        assert out[k].dtype == t.dtype and out[k].shape == t.shape
        np.testing.assert_array_equal(out[k].numpy(), t.numpy())
    assert st.metadata(path) == {"format": "pt"}


def test_layout_is_the_reference_one():
    data = st.save({"x": rt.ones(2), "y": rt.tensor([7])})
    (n,) = struct.unpack_from("<Q", data, 0)
    assert n % 8 == 0
    header = json.loads(data[8:8 + n])
    # larger dtypes first, then by name; offsets are contiguous
    assert header == {"y": {"dtype": "I64", "shape": [1], "data_offsets": [0, 8]},
                      "x": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}}
    assert data[8 + n:] == np.array([7], "<i8").tobytes() + np.ones(2, "<f4").tobytes()


def test_against_the_safetensors_package(tmp_path):
    stn = pytest.importorskip("safetensors.numpy")
    arrays = {k: t.numpy() for k, t in _tensors().items()}
    theirs = stn.save(arrays, metadata={"k": "v"})
    ours = st.save(_tensors(), metadata={"k": "v"})
    for k, v in stn.load(ours).items():
        np.testing.assert_array_equal(v, arrays[k])
    for k, v in st.load(theirs).items():
        np.testing.assert_array_equal(v.numpy(), arrays[k])


def _file(header: dict, payload: bytes) -> bytes:
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + payload


@pytest.mark.parametrize("header,payload,match", [
    ({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 4, "truncated"),
    ({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 9, "trailing"),
    ({"x": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, b"\0" * 8, "needs 12"),
    ({"x": {"dtype": "F8_E4M3", "shape": [8], "data_offsets": [0, 8]}}, b"\0" * 8,
     "no runtime dtype"),
    ({"x": {"dtype": "Q9", "shape": [4], "data_offsets": [0, 8]}}, b"\0" * 8,
     "not a safetensors dtype"),
    ({"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
      "y": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 4, "overlap"),
    ({"x": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, b"\0" * 4, "shape"),
])
def test_malformed_files_raise(header, payload, match):
    with pytest.raises(st.SafetensorError, match=match):
        st.load(_file(header, payload))


def test_header_length_is_checked_before_reading():
    with pytest.raises(st.SafetensorError, match="header too large"):
        st.load(struct.pack("<Q", 1 << 62) + b"{}")
    with pytest.raises(st.SafetensorError, match="invalid header length"):
        st.load(struct.pack("<Q", 100) + b"{}")
