"""F.pad against PyTorch 2.13 over seeded random shapes and pads: every mode, negative
(cropping) amounts, empty dims, 1 to 5-D inputs, pad lengths torch refuses; values, input
gradients and error types and texts (at::pad's checks, then constant_pad_nd's narrow,
reflection/replication_padNd's and _pad_circular's, in their order).

Left out: circular pads that wrap a positive amount past what negative amounts leave (torch
copies from memory it never wrote there; we raise "wrapping around more than once")."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

import runtime as rt
import runtime.nn.functional as RF

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _undefined_in_torch(shape: tuple[int, ...], pad: tuple[int, ...], mode: str) -> bool:
    if mode != "circular" or len(pad) % 2 or len(pad) // 2 > len(shape):
        return False
    checks_pass, wraps_past = True, False
    for i in range(len(pad) // 2):
        lo, hi, n = pad[2 * i], pad[2 * i + 1], shape[-1 - i]
        checks_pass &= lo <= n and hi <= n and n + lo + hi >= 0
        left = n - max(-lo, 0) - max(-hi, 0)
        wraps_past |= max(lo, 0) > left or max(hi, 0) > left
    return checks_pass and wraps_past


def _cases(seed: int, count: int) -> list[tuple[Any, ...]]:
    rng = random.Random(seed)
    out: list[tuple[Any, ...]] = []
    while len(out) < count:
        shape = tuple(rng.randint(0, 4) for _ in range(rng.randint(1, 5)))
        k = rng.choice([1, 2, 3]) if rng.random() < 0.9 else rng.randint(0, 4)
        pad = tuple(rng.randint(-3, 4) for _ in range(2 * k))
        if rng.random() < 0.03:
            pad = (*pad, 1)
        mode = rng.choice(["constant", "reflect", "replicate", "circular"])
        value = rng.choice([None, 2.5, 0.0]) if mode == "constant" or rng.random() < 0.03 \
            else None
        dtype = rng.choice([np.float64, np.float32])
        transposed = rng.random() < 0.3
        seen = (shape[-1], *shape[1:-1], shape[0]) if transposed else shape
        if not _undefined_in_torch(seen, pad, mode):
            out.append((shape, pad, mode, value, dtype, transposed))
    return out


def _run(lib: Any, F: Any, x: np.ndarray, pad: tuple[int, ...], mode: str, value: Any,
         transposed: bool) -> tuple[str, Any, Any]:
    t = lib.tensor(x, requires_grad=True)
    src = t.transpose(0, -1) if transposed else t  # a non-contiguous input
    kw = {} if value is None else {"value": value}
    try:
        y = F.pad(src, pad, mode=mode, **kw)
    except Exception as e:  # noqa: BLE001 - the texts are compared
        return f"{type(e).__name__}: {str(e).replace('torch', 'runtime')}", None, None
    w = np.arange(int(np.prod(tuple(y.shape)))).reshape(tuple(y.shape)) % 7
    (y * lib.tensor(w.astype(x.dtype))).sum().backward()
    return "", y.detach().numpy(), t.grad.numpy()


@pytest.mark.parametrize("seed", range(8))
def test_pad_matches_torch(seed: int) -> None:
    for shape, pad, mode, value, dtype, transposed in _cases(seed, 250):
        x = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
        want = _run(torch, TF, x, pad, mode, value, transposed)
        got = _run(rt, RF, x, pad, mode, value, transposed)
        what = f"F.pad({shape}, {pad}, mode={mode!r}, value={value}) {dtype.__name__}"
        assert got[0] == want[0], what
        if want[1] is None:
            continue
        assert got[1].dtype == want[1].dtype and got[1].shape == want[1].shape, what
        np.testing.assert_allclose(got[1], want[1], rtol=1e-6, err_msg=what)
        np.testing.assert_allclose(got[2], want[2], rtol=1e-6, err_msg=what)


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_gradcheck_float64(mode: str) -> None:
    x = rt.tensor(np.random.default_rng(1).standard_normal((2, 3, 4, 5)), requires_grad=True)
    pad = (2, -1, -1, 3) if mode != "circular" else (2, 1, -1, -1)
    assert rt.autograd.gradcheck(lambda t: RF.pad(t, pad, mode=mode), (x,))
