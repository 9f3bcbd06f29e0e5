"""nn.attention.SDPBackend and sdpa_kernel against torch.nn.attention: within the context
scaled_dot_product_attention runs (math, or flash where PyTorch's CPU flash kernel takes the
inputs) or raises PyTorch's error; the previous backends come back after it."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import runtime as rt
import runtime.nn.attention as ra

torch = pytest.importorskip("torch")
ta = pytest.importorskip("torch.nn.attention")

SHAPES = {"3d": ((2, 3, 4), (2, 5, 4), (2, 5, 4)),
          "4d other value width": ((1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 6)),
          "4d": ((1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4))}
OPTIONS = [{}, {"attn_mask": np.zeros((3, 5))}, {"dropout_p": 0.5}, {"is_causal": True},
           {"attn_mask": np.zeros((3, 5), bool)}]
BACKENDS = [["MATH"], ["FLASH_ATTENTION"], ["EFFICIENT_ATTENTION"], ["CUDNN_ATTENTION"], [],
            ["EFFICIENT_ATTENTION", "MATH"]]


def _run(lib: Any, mod: Any, shapes: Any, options: dict[str, Any], names: list[str]) -> Any:
    rng = np.random.default_rng(0)
    q, k, v = (lib.tensor(rng.standard_normal(s)) for s in shapes)
    kw = {key: lib.tensor(val) if isinstance(val, np.ndarray) else val
          for key, val in options.items()}
    backends = [getattr(mod.SDPBackend, n) for n in names]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch says why a fused kernel was not used
            with mod.sdpa_kernel(backends):
                out = lib.nn.functional.scaled_dot_product_attention(q, k, v, **kw)
    except RuntimeError as e:
        return str(e)
    return "ran" if "dropout_p" in options else out.numpy()


@pytest.mark.parametrize("names", BACKENDS, ids=str)
@pytest.mark.parametrize("options", OPTIONS, ids=str)
@pytest.mark.parametrize("shape", list(SHAPES))
def test_sdpa_kernel_matches_torch(shape, options, names):
    want = _run(torch, ta, SHAPES[shape], options, names)
    got = _run(rt, ra, SHAPES[shape], options, names)
    if isinstance(want, np.ndarray):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    else:
        assert got == want


def test_sdpa_kernel_restores_the_backends_and_checks_its_argument():
    q = rt.randn(1, 1, 2, 4, dtype=rt.float64)
    with pytest.raises(RuntimeError, match="No viable backend"):
        with ra.sdpa_kernel(ra.SDPBackend.EFFICIENT_ATTENTION):
            rt.nn.functional.scaled_dot_product_attention(q, q, q)
    assert rt.nn.functional.scaled_dot_product_attention(q, q, q).shape == (1, 1, 2, 4)
    for lib, mod in ((torch, ta), (rt, ra)):
        with pytest.raises(AssertionError, match="Backend must be an instance of SDPBackend or "
                                                 "a list of SDPBackend instances, got tuple"):
            with mod.sdpa_kernel((mod.SDPBackend.MATH,)):
                pass
    assert [(m.name, m.value) for m in ra.SDPBackend] == \
        [(name, int(m)) for name, m in ta.SDPBackend.__members__.items()]
