"""rt.save/rt.load: state dicts round-trip exactly, saving is atomic, and a damaged or
hostile file raises a clear error (never runs code, never allocates what it claims)."""

from __future__ import annotations

import io
import json
import os
import struct

import numpy as np
import pytest

import runtime as rt
from runtime import serialization as S


def _trained() -> tuple[rt.nn.Module, rt.optim.Optimizer]:
    rt.manual_seed(0)
    model = rt.nn.Sequential(rt.nn.Linear(5, 4), rt.nn.Tanh(), rt.nn.Linear(4, 3))
    opt = rt.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(2):
        opt.zero_grad()
        model(rt.randn(8, 5)).pow(2).mean().backward()
        opt.step()
    return model, opt


def test_module_and_optimizer_round_trip(tmp_path):
    model, opt = _trained()
    path = tmp_path / "ckpt.bp"
    rt.save({"model": model.state_dict(), "opt": opt.state_dict(), "epoch": 7}, path)
    ck = rt.load(path)
    assert ck["epoch"] == 7
    model2 = rt.nn.Sequential(rt.nn.Linear(5, 4), rt.nn.Tanh(), rt.nn.Linear(4, 3))
    opt2 = rt.optim.Adam(model2.parameters(), lr=0.5)
    model2.load_state_dict(ck["model"])
    opt2.load_state_dict(ck["opt"])
    for (k, a), (_, b) in zip(model.state_dict().items(), model2.state_dict().items()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy(), err_msg=k)
    assert opt2.param_groups[0]["lr"] == 0.01
    assert opt2.param_groups[0]["betas"] == (0.9, 0.999)  # a tuple stays a tuple
    s1, s2 = opt.state_dict()["state"], opt2.state_dict()["state"]
    assert set(s1) == set(s2) == {0, 1, 2, 3}  # int keys stay ints
    for i in s1:
        for k in ("exp_avg", "exp_avg_sq"):
            np.testing.assert_array_equal(s1[i][k].numpy(), s2[i][k].numpy())
    # both continue identically
    x = rt.randn(8, 5)
    for m, o in ((model, opt), (model2, opt2)):
        o.zero_grad()
        m(x).pow(2).mean().backward()
        o.step()
    np.testing.assert_array_equal(model[0].weight.detach().numpy(),
                                  model2[0].weight.detach().numpy())


@pytest.mark.parametrize("dtype", [rt.float32, rt.float64, rt.int64, rt.bool])
def test_tensors_keep_dtype_shape_and_flags(dtype):
    t = rt.tensor(np.arange(12).reshape(3, 4) % 3).to(dtype)
    p = rt.nn.Parameter(rt.randn(2, 2))
    e = rt.zeros(0, 3)
    obj = [t, p, e, t, {"k": (t.T, 1.5, float("inf"), None, True, "s")}]
    out = S._deserialize(S.dumps(obj), "x", None)
    assert out[0].dtype == dtype and out[0].shape == (3, 4)
    np.testing.assert_array_equal(out[0].numpy(), t.numpy())
    assert out[3] is out[0]  # one tensor saved once, loaded once
    assert isinstance(out[1], rt.nn.Parameter) and out[1].requires_grad
    assert out[2].shape == (0, 3)
    np.testing.assert_array_equal(out[4]["k"][0].numpy(), t.numpy().T)
    assert out[4]["k"][1:] == (1.5, float("inf"), None, True, "s")


def test_file_objects_and_map_location():
    buf = io.BytesIO()
    rt.save({"w": rt.ones(3)}, buf)
    buf.seek(0)
    out = rt.load(buf, map_location="cpu")
    assert out["w"].device == "cpu" and out["w"].tolist() == [1.0, 1.0, 1.0]


def test_refuses_objects_that_are_not_data(tmp_path):
    class Thing:
        pass

    with pytest.raises(TypeError, match=r"cannot store the object\['x'\] of type Thing"):
        rt.save({"x": Thing()}, tmp_path / "a")
    assert not os.listdir(tmp_path)  # nothing half-written left behind
    with pytest.raises(ValueError, match="weights_only=False"):
        rt.load(tmp_path / "a", weights_only=False)


def test_a_failed_save_leaves_the_previous_checkpoint(tmp_path, monkeypatch):
    path = tmp_path / "ckpt"
    rt.save({"step": 1, "w": rt.ones(1000)}, path)
    before = path.read_bytes()
    real = S._serialize

    def crash(obj, out):  # write part of the file, then die
        real(obj, out)
        out.flush()
        raise KeyboardInterrupt

    monkeypatch.setattr(S, "_serialize", crash)
    with pytest.raises(KeyboardInterrupt):
        rt.save({"step": 2, "w": rt.zeros(1000)}, path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["ckpt"]


def _header(data: bytes) -> dict:
    (n,) = struct.unpack_from("<Q", data, 8)
    return json.loads(data[16:16 + n])


def _with_header(data: bytes, header: dict) -> bytes:
    (n,) = struct.unpack_from("<Q", data, 8)
    raw = json.dumps(header).encode()
    return data[:8] + struct.pack("<Q", len(raw)) + raw + data[16 + n:]


def test_damaged_and_hostile_files_raise_clear_errors():
    good = S.dumps({"w": rt.ones(4, 4)})
    h = _header(good)

    def load(b: bytes) -> object:
        return rt.load(io.BytesIO(b))

    with pytest.raises(S.CheckpointError, match="truncated"):
        load(good[:-10])
    with pytest.raises(S.CheckpointError, match="magic"):
        load(b"hello world, not a checkpoint")
    with pytest.raises(S.CheckpointError, match="pickle"):
        load(b"\x80\x04\x95" + b"\0" * 40)
    with pytest.raises(S.CheckpointError, match="header claims"):
        load(good[:8] + struct.pack("<Q", 1 << 60) + good[16:])
    huge = json.loads(json.dumps(h))
    huge["tensors"][0]["shape"] = [1 << 40, 1 << 40]
    with pytest.raises(S.CheckpointError, match="needs"):
        load(_with_header(good, huge))
    bad_dtype = json.loads(json.dumps(h))
    bad_dtype["tensors"][0]["dtype"] = "object"
    with pytest.raises(S.CheckpointError, match="malformed"):
        load(_with_header(good, bad_dtype))
    bad_ref = json.loads(json.dumps(h))
    bad_ref["tree"] = {"tensor": 5}
    with pytest.raises(S.CheckpointError, match="refers to tensor 5"):
        load(_with_header(good, bad_ref))
    unknown = json.loads(json.dumps(h))
    unknown["tree"] = {"__reduce__": ["os.system", "true"]}
    with pytest.raises(S.CheckpointError, match="does not define"):
        load(_with_header(good, unknown))


def test_torch_checkpoints_are_read_as_weights_only_not_unpickled(tmp_path):
    # a torch.save zip is read by weights_only's rules (test_issue11_parity_checkpoints);
    # a bare pickle is refused
    torch = pytest.importorskip("torch")
    path = tmp_path / "t.pt"
    torch.save({"w": torch.ones(2)}, path)
    assert rt.load(path)["w"].tolist() == [1.0, 1.0]
    path.write_bytes(b"\x80\x04K\x01.")
    with pytest.raises(S.CheckpointError, match="never unpickles"):
        rt.load(path)
