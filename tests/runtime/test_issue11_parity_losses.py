"""Issue 11's losses against PyTorch 2.13 over seeded random arguments: cross_entropy (class
indices of int64/int32, probability targets, (C,), (N, C) and (N, C, d...) inputs, empty
batches, weight, ignore_index (rows ignored, all ignored), label_smoothing, every
reduction), nll_loss, binary_cross_entropy (weight broadcast), binary_cross_entropy_with_logits
(weight, pos_weight broadcast, wrong target sizes), l1, mse, smooth_l1 (beta 0 included),
huber (delta), kl_div (log_target, batchmean); float32 and float64. Values, gradients of
input and (float) target, error types and texts, and the binding errors of non-tensor
arguments."""

from __future__ import annotations

import random
import warnings
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")


def _classes(r: random.Random, rng: np.random.Generator, fn: str, dt: Any,
             kw: dict[str, Any]) -> list[np.ndarray]:
    c, n = r.randint(1, 4), r.choice([0, 1, 2, 3])
    extra = tuple(r.randint(1, 3) for _ in range(r.choice([0, 0, 1, 2])))
    shape = (c,) if r.random() < 0.15 and not extra else (n, c) + extra
    dim = 1 if len(shape) > 1 else 0
    x = rng.standard_normal(shape)
    if fn == "nll_loss":
        x = x - np.log(np.exp(x).sum(axis=dim, keepdims=True))
    probabilities = fn == "cross_entropy" and r.random() < 0.3
    if probabilities:
        t = rng.random(shape)
        t = (t / t.sum(axis=dim, keepdims=True)).astype(dt)
    else:
        t = rng.integers(0, c, shape[:1] + shape[2:] if len(shape) > 1 else ())
        if r.random() < 0.05 and t.size:
            t.flat[0] = c
    if r.random() < 0.3:
        kw["weight"] = (rng.random(c) + 0.1).astype(dt)
    if not probabilities and r.random() < 0.4:
        kw["ignore_index"] = ignored = r.choice([-100, 0, 1, -1])
        if r.random() < 0.5 and t.size:
            t.flat[r.randrange(t.size)] = ignored
        if r.random() < 0.2:
            t[...] = ignored
    if fn == "cross_entropy" and r.random() < 0.4:
        kw["label_smoothing"] = r.choice([0.0, 0.1, 0.5, 1.0])
    if not probabilities and r.random() < 0.05:
        t = t.astype(np.int32)
    return [x.astype(dt), t]


def _binary(r: random.Random, rng: np.random.Generator, fn: str, dt: Any,
            kw: dict[str, Any]) -> list[np.ndarray]:
    shape = tuple(r.randint(0 if r.random() < 0.1 else 1, 3) for _ in range(r.randint(0, 3)))
    x = rng.standard_normal(shape)
    if fn == "binary_cross_entropy":
        x = 1 / (1 + np.exp(-x))
    t = rng.random(shape)
    if r.random() < 0.3:
        t = (t > 0.5).astype(np.float64)
    if r.random() < 0.3:
        w = tuple(s if r.random() < 0.6 else 1 for s in shape)[r.randint(0, len(shape)):]
        kw["weight"] = np.asarray(rng.random(w) + 0.1).astype(dt)
    if fn.endswith("logits") and r.random() < 0.4:
        p = shape[-1:] if shape and r.random() < 0.7 else (1,) if r.random() < 0.5 else shape
        kw["pos_weight"] = np.asarray(rng.random(p) * 3).astype(dt)
    if r.random() < 0.05 and shape:
        t = rng.random((*shape[:-1], shape[-1] + 1))
    return [x.astype(dt), t.astype(dt)]


def _pointwise(r: random.Random, rng: np.random.Generator, fn: str, dt: Any,
               kw: dict[str, Any]) -> list[np.ndarray]:
    shape = tuple(r.randint(0 if r.random() < 0.1 else 1, 3) for _ in range(r.randint(0, 3)))
    target_shape = tuple(s if r.random() < 0.5 else 1 for s in shape) if r.random() < 0.15 \
        else shape
    x, t = rng.standard_normal(shape), rng.standard_normal(target_shape)
    if fn == "smooth_l1_loss" and r.random() < 0.6:
        kw["beta"] = r.choice([0.0, 0.5, 2.0])
    if fn == "huber_loss" and r.random() < 0.6:
        kw["delta"] = r.choice([0.5, 2.0, 1.0])
    if fn == "kl_div":
        x, t = np.log(np.abs(x) + 0.1), np.abs(t) + 0.01
        if r.random() < 0.4:
            kw["log_target"], t = True, np.log(t)
        if "reduction" not in kw and r.random() < 0.5:
            kw["reduction"] = "batchmean"
    return [x.astype(dt), t.astype(dt)]


def _case(r: random.Random, i: int) -> tuple[str, list[np.ndarray], dict[str, Any]]:
    fn = r.choice(["cross_entropy"] * 3 + [
        "nll_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits", "l1_loss",
        "smooth_l1_loss", "huber_loss", "mse_loss", "kl_div"])
    dt = r.choice([np.float64, np.float32])
    kw: dict[str, Any] = {}
    reduction = r.choice(["mean", "sum", "none", None])
    if reduction:
        kw["reduction"] = reduction
    rng = np.random.default_rng(i)
    make = _classes if fn in ("cross_entropy", "nll_loss") else \
        _binary if fn.startswith("binary") else _pointwise
    return fn, make(r, rng, fn, dt, kw), kw


def _run(lib: Any, fn: str, arrays: list[np.ndarray], kw: dict[str, Any]) -> tuple[str, Any]:
    ts = [lib.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    kws = {k: lib.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = getattr(lib.nn.functional, fn)(*ts, **kws)
    except Exception as e:  # noqa: BLE001 - the texts are compared
        return f"{type(e).__name__}: {str(e).replace('torch', 'runtime')}", None
    if y.requires_grad:
        w = np.random.default_rng(1).standard_normal(tuple(y.shape)).astype(arrays[0].dtype)
        (y * lib.tensor(w)).sum().backward()
    return "", [y.detach().numpy()] + [None if t.grad is None else t.grad.numpy() for t in ts]


@pytest.mark.parametrize("seed", range(6))
def test_losses_match_torch(seed: int) -> None:
    r = random.Random(f"loss{seed}")
    for i in range(150):
        fn, arrays, kw = _case(r, i)
        what = f"{fn}{[(a.shape, a.dtype.name) for a in arrays]} " \
               f"{ {k: getattr(v, 'shape', v) for k, v in kw.items()} }"
        want, got = _run(torch, fn, arrays, kw), _run(rt, fn, arrays, kw)
        assert got[0] == want[0], what
        if want[1] is None:
            continue
        tol = 1e-9 if arrays[0].dtype == np.float64 else 1e-4
        for a, b in zip(want[1], got[1], strict=True):
            assert (a is None) == (b is None), what
            if a is not None:
                assert a.shape == b.shape and a.dtype == b.dtype, what
                np.testing.assert_allclose(b, a, rtol=tol, atol=tol, err_msg=what)


@pytest.mark.parametrize("call", [
    "F.nll_loss(lib.rand(3, 4), lib.tensor([1, 2, 3]), weight=(1., 2., 3., 4.))",
    "F.nll_loss(lib.rand(3, 4), [1, 2, 3])",
    "F.cross_entropy(lib.rand(3, 4), lib.tensor([1, 2, 3]), weight=2.0)",
    "F.cross_entropy(lib.rand(3, 4), [1, 2, 3])",
    "F.binary_cross_entropy_with_logits(lib.rand(3), lib.rand(3), weight=0.5)",
    "F.binary_cross_entropy_with_logits(lib.rand(3), lib.rand(3), pos_weight=2.0)",
    "F.binary_cross_entropy(lib.rand(3), lib.rand(3), weight=0.5)",
])
def test_non_tensor_arguments_raise_torchs_error(call: str) -> None:
    texts = []
    for lib in (torch, rt):
        with pytest.raises((TypeError, AttributeError)) as info:
            eval(call, {"lib": lib, "F": lib.nn.functional})  # noqa: S307 - the table
        texts.append(f"{info.type.__name__}: {info.value}")
    assert texts[1] == texts[0]
