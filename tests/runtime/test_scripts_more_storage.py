"""Checkpoints of tensors that share memory, as scripts save them: a tied model's state dict
(two names, one weight), views of one tensor, a transposed view. Loaded, they share memory as
PyTorch's do (an in-place change through one shows through the others), each shared array is
written once, and a damaged storage table is refused with a clear error."""

from __future__ import annotations

import io
import json
import struct
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import runtime as rt
from runtime import serialization as S

torch = pytest.importorskip("torch")


def round_trip(lib: ModuleType, obj: Any) -> tuple[Any, int]:
    f = io.BytesIO()
    lib.save(obj, f)
    size = len(f.getvalue())
    f.seek(0)
    return lib.load(f, weights_only=True), size


def views(lib: ModuleType) -> dict[str, Any]:
    t = lib.arange(12.0)
    return {"whole": t, "tail": t[4:], "grid": t.view(3, 4), "columns": t.view(3, 4).t(),
            "alone": lib.ones(3), "step": t[::3], "param": lib.nn.Parameter(lib.zeros(2))}


def sharing(loaded: dict[str, Any]) -> list[tuple[str, str, bool]]:
    names = sorted(loaded)
    return [(a, b, bool(np.shares_memory(loaded[a].detach().numpy(),
                                         loaded[b].detach().numpy())))
            for i, a in enumerate(names) for b in names[i + 1:]]


def test_views_are_loaded_sharing_memory_as_pytorchs() -> None:
    got, _ = round_trip(rt, views(rt))
    want, _ = round_trip(torch, views(torch))
    assert sharing(got) == sharing(want)
    for loaded in (got, want):
        loaded["whole"][5] = 100.0  # through one name, seen through the others
    for k in want:
        np.testing.assert_array_equal(got[k].detach().numpy(), want[k].detach().numpy(),
                                      err_msg=k)
    assert isinstance(got["param"], rt.nn.Parameter) and got["param"].requires_grad


def tied_lm(lib: ModuleType) -> Any:
    nn = lib.nn
    model = nn.Sequential(nn.Embedding(64, 32), nn.LayerNorm(32), nn.Linear(32, 64, bias=False))
    model[2].weight = model[0].weight
    return model


def test_tied_state_dict_is_written_once_and_loads_into_a_tied_model() -> None:
    model = tied_lm(rt)
    (loaded, size), untied = round_trip(rt, {"model": model.state_dict(), "step": 3}), \
        round_trip(rt, {"model": {k: v.clone() for k, v in model.state_dict().items()}})[1]
    assert size < 0.6 * untied  # the 64 x 32 weight once, not twice
    assert sharing(loaded["model"]) == sharing(round_trip(
        torch, {"model": tied_lm(torch).state_dict()})[0]["model"])
    fresh = tied_lm(rt)
    fresh.load_state_dict(loaded["model"])
    assert fresh[2].weight is fresh[0].weight
    np.testing.assert_array_equal(fresh[0].weight.detach().numpy(),
                                  model[0].weight.detach().numpy())


def _damaged(change: Any) -> bytes:
    data = S.dumps(views(rt))
    (hlen,) = struct.unpack_from("<Q", data, len(S.MAGIC))
    start = len(S.MAGIC) + 8
    header = json.loads(data[start:start + hlen])
    change(header)
    raw = json.dumps(header).encode()
    return S.MAGIC + struct.pack("<Q", len(raw)) + raw + data[start + hlen:]


def _view_entry(header: dict[str, Any]) -> dict[str, Any]:
    return next(e for e in header["tensors"] if "storage" in e and e["shape"] == [3, 4])


@pytest.mark.parametrize(("change", "message"), [
    (lambda h: _view_entry(h).update(storage=7), "refers to storage 7 of 1"),
    (lambda h: h["storages"][0].update(nbytes=1 << 40), "the file is truncated"),
    (lambda h: _view_entry(h).update(strides=[16, 400]), "reaches byte"),
    (lambda h: _view_entry(h).update(storage_offset=2), "not aligned"),
    (lambda h: _view_entry(h).update(strides=[-16, 4]), "invalid shape, strides or offset"),
    (lambda h: h.update(storages={"a": 1}), "storage table is not a list"),
])
def test_a_damaged_storage_table_is_refused(change: Any, message: str) -> None:
    with pytest.raises(S.CheckpointError, match=message):
        rt.load(io.BytesIO(_damaged(change)))
