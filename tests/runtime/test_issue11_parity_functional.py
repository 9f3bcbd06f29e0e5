"""Issue 11's functional forms against PyTorch 2.13 over seeded random arguments, in
float32 and float64, the first input non-contiguous in some cases: conv1d/conv2d,
max/avg pools (1-d, 2-d), adaptive pools, embedding, batch_norm (train/eval; running
statistics that require grad are refused as torch refuses them), layer_norm, rms_norm,
group_norm, instance_norm, linear, dropout at p 0 and 1, silu, leaky_relu, softplus.
Values, dtypes, gradients of every float input, error types and texts.

Left out: group_norm with a bias but no weight (torch's backward fails: "tensor does not
have a device")."""

from __future__ import annotations

import random
import warnings
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")


def _maybe(r: random.Random, p: float, value: Any) -> Any:
    return value if r.random() < p else None


def _conv(r: random.Random, rng: np.random.Generator, fn: str) -> tuple[list[Any], dict]:
    nd = 1 if fn == "conv1d" else 2
    g = r.choice([1, 2])
    cin, cout = g * r.randint(1, 2), g * r.randint(1, 2)
    k = tuple(r.randint(1, 3) for _ in range(nd))
    x = rng.standard_normal((r.randint(1, 2), cin) + tuple(r.randint(3, 6) for _ in range(nd)))
    kw: dict[str, Any] = {"groups": g}
    if r.random() < 0.5:
        kw["stride"] = r.randint(1, 2)
    if r.random() < 0.5:
        kw["padding"] = r.choice([0, 1, "same", "valid"])
        if kw["padding"] == "same":
            kw.pop("stride", None)
    if r.random() < 0.4:
        kw["dilation"] = r.randint(1, 2)
    return [x, rng.standard_normal((cout, cin // g) + k),
            _maybe(r, 0.6, rng.standard_normal(cout))], kw


def _pool(r: random.Random, rng: np.random.Generator, fn: str) -> tuple[list[Any], dict]:
    if fn.startswith("adaptive"):
        x = rng.standard_normal((r.randint(1, 2), r.randint(1, 3), r.randint(1, 7),
                                 r.randint(1, 7)))
        kw = {"output_size": r.choice([1, 2, 3, (2, None), (None, 3)])}
        if fn == "adaptive_max_pool2d" and r.random() < 0.5:
            kw["return_indices"] = True
        return [x], kw
    nd = 2 if fn.endswith("2d") else 1
    x = rng.standard_normal((r.randint(1, 2), r.randint(1, 3))
                            + tuple(r.randint(2, 7) for _ in range(nd)))
    k = r.randint(1, 3)
    kw = {"kernel_size": k}
    for name, p, value in (("stride", 0.5, r.randint(1, 3)), ("padding", 0.5, r.randint(0, k // 2)),
                           ("ceil_mode", 0.5, True)):
        if r.random() < p:
            kw[name] = value
    if fn.startswith("max"):
        for name, p, value in (("dilation", 0.4, r.randint(1, 2)), ("return_indices", 0.5, True)):
            if r.random() < p:
                kw[name] = value
    else:
        if r.random() < 0.5:
            kw["count_include_pad"] = False
        if nd == 2 and r.random() < 0.3:
            kw["divisor_override"] = 3
    return [x], kw


def _norm(r: random.Random, rng: np.random.Generator, fn: str) -> tuple[list[Any], dict]:
    if fn == "batch_norm":
        c = r.randint(1, 3)
        x = rng.standard_normal((r.randint(2, 3), c, r.randint(1, 3)))
        stats = [rng.standard_normal(c), rng.random(c) + 0.5]
        if r.random() < 0.8:  # plain buffers: no grad (a stat with one is refused)
            stats = [("stat", s) for s in stats]
        return [x, *stats, _maybe(r, 0.5, rng.standard_normal(c)),
                _maybe(r, 0.5, rng.standard_normal(c))], {
            "training": r.random() < 0.5, "momentum": r.choice([0.1, 0.5]),
            "eps": r.choice([1e-5, 1e-2])}
    shape = (r.randint(1, 3), 4, r.randint(1, 3))
    x = rng.standard_normal(shape)
    if fn == "group_norm":
        weight = _maybe(r, 0.5, rng.standard_normal(4))
        bias = _maybe(r, 0.5, rng.standard_normal(4)) if weight is not None else None
        return [x, r.choice([1, 2, 4]), weight, bias], {"eps": 1e-5}
    if fn == "instance_norm":
        return [x], {"use_input_stats": True, "eps": 1e-5}
    normalized = list(shape[-r.randint(1, 2):])
    weight = _maybe(r, 0.6, rng.standard_normal(normalized))
    if fn == "layer_norm":
        return [x, normalized, weight, _maybe(r, 0.6, rng.standard_normal(normalized))], {
            "eps": r.choice([1e-5, 1e-2])}
    return [x, normalized, weight], {"eps": r.choice([None, 1e-2])}


def _other(r: random.Random, rng: np.random.Generator, fn: str) -> tuple[list[Any], dict]:
    if fn == "embedding":
        n = r.randint(2, 6)
        kw: dict[str, Any] = {}
        for name, p, value in (("padding_idx", 0.4, r.randint(-n, n - 1)),
                               ("max_norm", 0.3, 1.0), ("scale_grad_by_freq", 0.3, True)):
            if r.random() < p:
                kw[name] = value
        return [rng.integers(0, n, (r.randint(1, 3), r.randint(1, 3))),
                rng.standard_normal((n, 3))], kw
    if fn == "linear":
        return [rng.standard_normal((r.randint(1, 3), 4)), rng.standard_normal((3, 4)),
                _maybe(r, 0.5, rng.standard_normal(3))], {}
    if fn == "dropout":
        return [rng.standard_normal((3, 4))], {"p": r.choice([0.0, 1.0]),
                                               "training": r.random() < 0.5}
    x = rng.standard_normal(tuple(r.randint(1, 3) for _ in range(r.randint(1, 3)))) * 5
    kw = {}
    if fn == "leaky_relu" and r.random() < 0.6:
        kw["negative_slope"] = r.choice([0.2, -0.3])
    if fn == "softplus":
        if r.random() < 0.6:
            kw["beta"] = r.choice([0.5, 2.0])
        if r.random() < 0.6:
            kw["threshold"] = r.choice([1.0, 5.0])
    return [x], kw


MAKERS = {"conv1d": _conv, "conv2d": _conv, "max_pool2d": _pool, "avg_pool2d": _pool,
          "max_pool1d": _pool, "avg_pool1d": _pool, "adaptive_avg_pool2d": _pool,
          "adaptive_max_pool2d": _pool, "batch_norm": _norm, "layer_norm": _norm,
          "rms_norm": _norm, "group_norm": _norm, "instance_norm": _norm, "embedding": _other,
          "linear": _other, "dropout": _other, "silu": _other, "leaky_relu": _other,
          "softplus": _other}


def _run(lib: Any, fn: str, arrays: list[Any], kw: dict[str, Any], dt: Any,
         strided: bool) -> tuple[str, Any]:
    leaves: list[Any] = []
    inputs: list[Any] = []
    for j, a in enumerate(arrays):
        frozen = isinstance(a, tuple)  # ("stat", array): no grad
        a = a[1] if frozen else a
        if not isinstance(a, np.ndarray):
            leaves.append(None)
            inputs.append(a)
            continue
        a = a.astype(dt) if a.dtype.kind == "f" else a
        swap = strided and j == 0 and a.ndim > 1
        leaf = lib.tensor(np.ascontiguousarray(np.swapaxes(a, 0, -1)) if swap else a,
                          requires_grad=a.dtype.kind == "f" and not frozen)
        leaves.append(leaf)
        inputs.append(leaf.transpose(0, -1) if swap else leaf)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = getattr(lib.nn.functional, fn)(*inputs, **kw)
    except Exception as e:  # noqa: BLE001 - the texts are compared
        return f"{type(e).__name__}: {str(e).replace('torch', 'X').replace('runtime', 'X')}", None
    outs = list(y) if isinstance(y, tuple) else [y]
    loss = None
    for o in outs:
        if o.dtype.is_floating_point and o.requires_grad:
            w = np.random.default_rng(7).standard_normal(tuple(o.shape)).astype(dt)
            term = (o * lib.tensor(w)).sum()
            loss = term if loss is None else loss + term
    if loss is not None:
        loss.backward()
    values = [o.detach().numpy() for o in outs]
    values += [None if t is None else (t.grad.numpy() if t.requires_grad and t.grad is not None
                                       else t.detach().numpy()) for t in leaves]
    return "", values


@pytest.mark.parametrize("seed", range(4))
def test_functional_forms_match_torch(seed: int) -> None:
    r = random.Random(f"functional{seed}")
    for i in range(100):
        fn = r.choice(sorted(MAKERS))
        arrays, kw = MAKERS[fn](r, np.random.default_rng(i), fn)
        dt, strided = r.choice([np.float32, np.float64]), r.random() < 0.4
        what = f"{fn} {kw} {np.dtype(dt).name} strided={strided}"
        want = _run(torch, fn, arrays, kw, dt, strided)
        got = _run(rt, fn, arrays, kw, dt, strided)
        assert got[0] == want[0], what
        if want[1] is None:
            continue
        tol = 1e-9 if dt == np.float64 else 2e-4
        assert len(got[1]) == len(want[1]), what
        for a, b in zip(want[1], got[1], strict=True):
            assert (a is None) == (b is None), what
            if a is not None:
                assert a.shape == b.shape and a.dtype == b.dtype, what
                np.testing.assert_allclose(b, a, rtol=tol, atol=tol, err_msg=what)


@pytest.mark.parametrize("call", [
    "F.group_norm(lib.ones(1, 4, 1), 4)", "F.group_norm(lib.ones(1, 4), 4)",
    "F.group_norm(lib.ones(1, 4, 1), 2)", "lib.nn.GroupNorm(4, 4)(lib.ones(1, 4, 1))",
    "F.batch_norm(lib.ones(1, 3), lib.zeros(3, requires_grad=True), lib.ones(3), "
    "training=True)",
    "F.batch_norm(lib.ones(2, 3), lib.zeros(3, requires_grad=True), lib.ones(3))",
])
def test_one_value_per_group_and_stats_with_grad_as_torch(call: str) -> None:
    texts = []
    for lib in (torch, rt):
        try:
            out = eval(call, {"lib": lib, "F": lib.nn.functional})  # noqa: S307 - the table
            texts.append(str(tuple(out.shape)))
        except (ValueError, RuntimeError) as e:
            texts.append(f"{type(e).__name__}: {e}")
    assert texts[1] == texts[0]


@pytest.mark.parametrize("threshold", [20.0, 0.0, -1.0])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_softplus_with_beta_zero_and_its_gradient_are_torchs(threshold: float,
                                                             dtype: str) -> None:
    """beta = 0: log(2) / 0 = inf, whose gradient PyTorch takes as sigmoid(0) = 0.5 (nan for
    an infinite or nan x); the quotient's own gradient was 0 * inf, a nan everywhere."""
    x = np.array([-2.0, 0.0, 1.5, np.inf, -np.inf, np.nan], dtype=dtype)
    got, want = [], []
    for lib, out in ((rt, got), (torch, want)):
        t = lib.tensor(x, requires_grad=True)
        y = lib.nn.functional.softplus(t, beta=0, threshold=threshold)
        y.sum().backward()
        out += [y.detach().numpy(), t.grad.numpy()]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
