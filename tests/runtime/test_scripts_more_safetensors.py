"""A Hugging Face-style script: a weight-tied model saved with ``safetensors``' save_model and
loaded with load_model, ported by changing the import (``safetensors.torch`` to
``runtime.safetensors``). The files are byte for byte the package's, each library loads the
other's, the tie survives, and the errors are the package's."""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import runtime as rt
import runtime.safetensors as rt_safetensors

torch = pytest.importorskip("torch")
st_torch = pytest.importorskip("safetensors.torch")

LIBS = {"torch": (torch, st_torch), "runtime": (rt, rt_safetensors)}


def tied_model(lib: ModuleType, head: bool = True) -> Any:
    nn = lib.nn

    class TinyLM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(7, 4)
            self.norm = nn.LayerNorm(4)
            if head:
                self.lm_head = nn.Linear(4, 7, bias=False)
                self.lm_head.weight = self.embed.weight

        def forward(self, idx: Any) -> Any:
            return self.lm_head(self.norm(self.embed(idx)))

    return TinyLM()


def same_weights(model: Any, seed: int = 0) -> Any:
    r = np.random.default_rng(seed)
    lib = torch if isinstance(model, torch.nn.Module) else rt
    with lib.no_grad():
        for _, p in sorted(model.named_parameters()):
            p.copy_(lib.from_numpy(r.standard_normal(tuple(p.shape)).astype(np.float32)))
    return model


@pytest.mark.parametrize(("writer", "reader"), [("torch", "runtime"), ("runtime", "torch"),
                                                ("runtime", "runtime")])
def test_save_model_load_model_keep_the_tie(writer: str, reader: str, tmp_path: Path) -> None:
    wlib, wmod = LIBS[writer]
    rlib, rmod = LIBS[reader]
    path = tmp_path / "model.safetensors"
    source = same_weights(tied_model(wlib))
    wmod.save_model(source, str(path), metadata={"format": "pt"})
    assert wmod.load_file(str(path)).keys() == {"embed.weight", "norm.weight", "norm.bias"}
    target = same_weights(tied_model(rlib), seed=1)
    missing, unexpected = rmod.load_model(target, str(path))
    assert (missing, unexpected) == (set(), [])
    assert target.lm_head.weight is target.embed.weight
    idx = [[1, 2, 3], [6, 0, 5]]
    np.testing.assert_allclose(target(rlib.tensor(idx)).detach().numpy(),
                               source(wlib.tensor(idx)).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_save_model_writes_the_packages_bytes(tmp_path: Path) -> None:
    files = []
    for name, (lib, mod) in LIBS.items():
        path = tmp_path / f"{name}.safetensors"
        mod.save_model(same_weights(tied_model(lib)), str(path))
        files.append(path.read_bytes())
    assert files[0] == files[1]
    assert rt_safetensors.metadata(tmp_path / "runtime.safetensors") == {
        "lm_head.weight": "embed.weight"}


def test_load_model_strict_errors_as_the_package(tmp_path: Path) -> None:
    """A file without the head loaded into a model with one: fine (tied to the embedding);
    a model without the head reading a file of one that has it: the package's texts."""
    messages = []
    for name, (lib, mod) in LIBS.items():
        path = tmp_path / f"{name}.safetensors"
        mod.save_file({"embed.weight": lib.zeros(7, 4), "extra": lib.ones(2)}, str(path))
        model = tied_model(lib, head=False)
        with pytest.raises(RuntimeError) as info:
            mod.load_model(model, str(path))
        messages.append(str(info.value))
        missing, unexpected = mod.load_model(model, str(path), strict=False)
        assert (missing, unexpected) == ({"norm.weight", "norm.bias"}, ["extra"])
    assert messages[0] == messages[1]


def test_parameters_sharing_part_of_one_buffer_are_refused() -> None:
    """Parameters made views of one vector (vector_to_parameters): no name covers the whole
    memory, so the package refuses to save (it would write the vector once per view)."""
    messages = []
    for lib, mod in LIBS.values():
        model = lib.nn.Linear(3, 2)
        vec = lib.nn.utils.parameters_to_vector(model.parameters())
        lib.nn.utils.vector_to_parameters(vec, model.parameters())
        with pytest.raises(RuntimeError) as info:
            mod.save_model(model, "/nonexistent/never-written.safetensors")
        messages.append(re.sub(r"\{.*\}", "{...}", str(info.value)))
    assert messages[0] == messages[1]
    assert "None is covering the entire storage" in messages[0]
