"""Issue 11's safetensors save_file/save against safetensors.torch (installed beside PyTorch
2.13): tensors whose memory overlaps (tied weights, a tensor and a view of it) are refused
with its RuntimeError (loaded, they would no longer share memory; they were written twice),
non-overlapping views of one storage are written, a non-contiguous tensor is its ValueError,
a value that is not a tensor its ValueError."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import runtime as rt
import runtime.safetensors as rs

torch = pytest.importorskip("torch")
st = pytest.importorskip("safetensors.torch")

CASES = [
    "save_file({'a': w, 'b': w}, path)",
    "save_file({'a': w, 'b': w[0]}, path)",
    "save_file({'a': w[0], 'b': w[1]}, path)",
    "save_file({'a': w, 'b': w[1], 'c': w[0], 'd': L.ones(2)}, path)",
    "save_file({'a': w[1]}, path)",
    "save_file({'t': w.t()}, path)",
    "save_file({'a': 1}, path)",
    "save_file({'a': L.zeros(0), 'b': L.zeros(0)}, path)",
    "save_file({'a': L.ones(1).expand(3)}, path)",
    "save({'a': w, 'b': w[:1]})",
    "save({'a': w, 'b': w[1:]})",
    "save_file(tied(), path)",
]


def _tied(lib: Any) -> dict[str, Any]:
    m = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.Linear(2, 2))
    m[1].weight = m[0].weight
    return m.state_dict()


def _outcome(lib: Any, module: Any, call: str, path: Path) -> str:
    scope = {"L": lib, "w": lib.arange(6.0).reshape(2, 3), "path": path,
             "tied": lambda: _tied(lib), "save_file": module.save_file, "save": module.save}
    try:
        eval(call, scope)  # noqa: S307 - the table above
    except Exception as e:  # noqa: BLE001 - the texts are compared
        # a set of names prints in hash order: compared sorted
        text = re.sub(r"\{[^{}]*\}", lambda m: str(sorted(m.group(0)[1:-1].split(", "))),
                      str(e).replace("torch", "runtime"))
        return f"{type(e).__name__}: {text}"
    return "written"


@pytest.mark.parametrize("call", CASES)
def test_safetensors_save_refuses_what_safetensors_torch_refuses(call: str,
                                                                 tmp_path: Path) -> None:
    want = _outcome(torch, st, call, tmp_path / "theirs.safetensors")
    got = _outcome(rt, rs, call, tmp_path / "ours.safetensors")
    assert got == want


def test_save_model_still_writes_tied_weights_once(tmp_path: Path) -> None:
    m = rt.nn.Sequential(rt.nn.Linear(2, 2), rt.nn.Linear(2, 2))
    m[1].weight = m[0].weight
    rs.save_model(m, tmp_path / "m.safetensors")
    assert sorted(rs.load_file(tmp_path / "m.safetensors")) == ["0.bias", "0.weight", "1.bias"]
