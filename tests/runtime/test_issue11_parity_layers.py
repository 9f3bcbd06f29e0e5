"""Issue 11's layers against PyTorch 2.13 over seeded random constructors and inputs (the
harness of test_parity_nn_layers, float64: outputs, input and parameter gradients, buffers,
error types and texts): Conv1d/Conv2d (every padding form and mode, stride, dilation,
groups, bias, wrong channels), MaxPool2d/AvgPool2d/AdaptiveAvg/MaxPool2d (ceil_mode,
return_indices, dilation, count_include_pad, divisor_override, None sizes), Embedding
(padding_idx, max_norm, norm_type, scale_grad_by_freq, indices out of range), BatchNorm1d/2d
(affine, track_running_stats, momentum None/0/1, eval, empty batches), LayerNorm, RMSNorm,
Flatten, Unflatten and the activations, batch sizes 0, 1 and unbatched inputs included.

Left out: the gradient of a max pool window lying wholly in the padding (see
_empty_max_window); its value (-inf) and index are compared in a test of their own."""

from __future__ import annotations

import random
import warnings
from typing import Any

import numpy as np
import pytest

import runtime as rt

from tests.runtime.test_parity_nn_layers import compare

torch = pytest.importorskip("torch")


def _kw(pairs: dict[str, Any]) -> str:
    return "".join(f", {a}={b!r}" for a, b in pairs.items())


def _conv(r: random.Random) -> tuple[str, list[Any], bool]:
    nd, g = r.choice([1, 2]), r.choice([1, 1, 2, 3])
    cin, cout = g * r.randint(1, 2), g * r.randint(1, 3)
    k: Any = r.randint(1, 3)
    if nd == 2 and r.random() < 0.5:
        k = (r.randint(1, 3), r.randint(1, 3))
    pad = r.choice([0, 1, 2, "same", "valid", (1,) * nd,
                    tuple(r.randint(0, 2) for _ in range(nd))])
    kw: dict[str, Any] = {"padding": pad}
    if pad != "same" and r.random() < 0.5:
        kw["stride"] = r.choice([1, 2, 3, tuple(r.randint(1, 3) for _ in range(nd))])
    if r.random() < 0.5:
        kw["dilation"] = r.choice([1, 2, tuple(r.randint(1, 2) for _ in range(nd))])
    kw.update(groups=g, bias=r.random() < 0.7,
              padding_mode=r.choice(["zeros", "reflect", "replicate", "circular"]))
    batch = r.choice([None, 0, 1, 2, 3])
    channels = cin if r.random() < 0.9 else cin + 1
    shape = (() if batch is None else (batch,)) + (channels,) + tuple(
        r.randint(1, 7) for _ in range(nd))
    return f"Conv{nd}d({cin}, {cout}, {k!r}{_kw(kw)})", [shape], True


def _size(r: random.Random) -> Any:
    return r.choice([r.randint(1, 4), (r.randint(1, 4), r.randint(1, 4))])


def _pool(r: random.Random) -> tuple[str, list[Any], bool]:
    kind = r.choice(["max", "avg", "adaptive_avg", "adaptive_max"])
    kw: dict[str, Any] = {}
    if kind in ("max", "avg"):
        kw["kernel_size"] = _size(r)
        if r.random() < 0.6:
            kw["stride"] = r.choice([None, _size(r)])
        if r.random() < 0.6:
            kw["padding"] = r.choice([r.randint(0, 2), (r.randint(0, 2), r.randint(0, 2))])
        if r.random() < 0.5:
            kw["ceil_mode"] = True
    if kind == "max":
        if r.random() < 0.5:
            kw["dilation"] = r.choice([r.randint(1, 2), (r.randint(1, 2), r.randint(1, 2))])
        kw["return_indices"] = r.random() < 0.5
        call = "MaxPool2d(" + _kw(kw)[2:] + ")"
    elif kind == "avg":
        if r.random() < 0.5:
            kw["count_include_pad"] = False
        if r.random() < 0.3:
            kw["divisor_override"] = r.randint(1, 5)
        call = "AvgPool2d(" + _kw(kw)[2:] + ")"
    else:
        size = r.choice([r.randint(1, 5), (r.choice([None, 1, 2, 3]),
                                           r.choice([None, 1, 2, 4]))])
        extra = f", return_indices={r.random() < 0.5}" if kind == "adaptive_max" else ""
        call = f"{'AdaptiveAvgPool2d' if kind == 'adaptive_avg' else 'AdaptiveMaxPool2d'}" \
               f"({size!r}{extra})"
    batch = r.choice([None, 0, 1, 2])
    shape = (() if batch is None else (batch,)) + (r.randint(1, 3), r.randint(1, 8),
                                                   r.randint(1, 8))
    return call, [shape], True


def _embedding(r: random.Random) -> tuple[str, list[Any], bool]:
    n, dim = r.randint(1, 8), r.randint(1, 4)
    kw: dict[str, Any] = {}
    if r.random() < 0.5:
        kw["padding_idx"] = r.randint(-n, n - 1)
    if r.random() < 0.4:
        kw["max_norm"] = r.choice([0.5, 1.0, 2.0])
    if r.random() < 0.3:
        kw["norm_type"] = r.choice([1.0, 2.0, 3.0])
    if r.random() < 0.3:
        kw["scale_grad_by_freq"] = True
    shape = tuple(r.randint(0, 4) for _ in range(r.randint(0, 3)))
    rng = np.random.default_rng(r.randint(0, 99))
    index = rng.integers(0, n + (1 if r.random() < 0.1 else 0), shape)
    if r.random() < 0.05:
        index = -index - 1
    return f"Embedding({n}, {dim}{_kw(kw)})", [index], True


def _norm(r: random.Random) -> tuple[str, list[Any], bool]:
    kind = r.choice(["bn1", "bn2", "ln", "rms"])
    kw: dict[str, Any] = {}
    if kind in ("bn1", "bn2"):
        c = r.randint(1, 4)
        for name, value, p in (("affine", False, 0.4), ("track_running_stats", False, 0.4),
                               ("momentum", r.choice([None, 0.5, 0.0, 1.0]), 0.4),
                               ("eps", 1e-3, 0.3)):
            if r.random() < p:
                kw[name] = value
        shape: tuple[int, ...] = (r.choice([0, 1, 2, 3]), c)
        if kind == "bn1" and r.random() < 0.5:
            shape += (r.randint(1, 3),)
        if kind == "bn2":
            shape += (r.randint(1, 3), r.randint(1, 3))
            shape = shape[1:] if r.random() < 0.2 else shape
        return f"BatchNorm{kind[2]}d({c}{_kw(kw)})", [shape], r.random() < 0.7
    shape = tuple(r.randint(1, 4) for _ in range(r.randint(1, 4)))
    last = shape[-r.randint(1, len(shape)):]
    if r.random() < 0.05:
        last = (*last[:-1], last[-1] + 1)
    normalized: Any = last[0] if len(last) == 1 and r.random() < 0.5 else list(last)
    if r.random() < 0.3:
        kw["elementwise_affine"] = False
    if kind == "ln":
        if r.random() < 0.3:
            kw["bias"] = False
        if r.random() < 0.3:
            kw["eps"] = 1e-2
        return f"LayerNorm({normalized!r}{_kw(kw)})", [shape], True
    if r.random() < 0.5:
        kw["eps"] = r.choice([None, 1e-2])
    return f"RMSNorm({normalized!r}{_kw(kw)})", [shape], True


def _shape_layer(r: random.Random) -> tuple[str, list[Any], bool]:
    kind = r.choice(["flatten", "unflatten", "act"])
    if kind == "flatten":
        nd = r.randint(1, 4)
        shape = tuple(r.randint(0, 3) for _ in range(nd))
        return f"Flatten({r.randint(-nd, nd - 1)}, {r.randint(-nd, nd - 1)})", [shape], True
    if kind == "unflatten":
        nd = r.randint(1, 3)
        shape = tuple(r.choice([2, 4, 6, 0]) for _ in range(nd))
        sizes = r.choice([(2, -1), (-1, 2), (1, 2, -1), (3, 2), (2, 3), (0, 2)])
        return f"Unflatten({r.randint(-nd, nd - 1)}, {sizes!r})", [shape], True
    act = r.choice(["SiLU()", "LeakyReLU()", f"LeakyReLU({r.choice([0.2, -0.5, 0.0])})",
                    "Softplus()", "SiLU(inplace=True)", "LeakyReLU(0.1, inplace=True)",
                    f"Softplus(beta={r.choice([0.5, 2.0, -1.0, 1.0])}, "
                    f"threshold={r.choice([0.5, 20.0, 1.0, -1.0])})"])
    return act, [tuple(r.randint(0, 3) for _ in range(r.randint(0, 3)))], True


def _empty_max_window(call: str, shape: tuple[int, ...]) -> bool:
    """Whether a max pool has a window with no tap in the input (all padding): torch sends
    its gradient to the flat position row * width + column of the window's first tap stepped
    out of the padding, another element where that column is past the width (left out)."""
    if not call.startswith("MaxPool2d"):
        return False
    kw = eval("dict(" + call[len("MaxPool2d("):-1] + ")")  # noqa: S307 - built above
    two = [(lambda v: (v, v) if isinstance(v, int) else v)(kw.get(name, default))
           for name, default in (("kernel_size", 1), ("padding", 0), ("dilation", 1))]
    stride = kw.get("stride") or kw["kernel_size"]
    two.append((stride, stride) if isinstance(stride, int) else stride)
    for axis, size in enumerate(shape[-2:]):
        k, p, d, st = (v[axis] for v in two)
        span = size + 2 * p - d * (k - 1) - 1
        if span < 0:
            continue
        out = (-(-span // st) if kw.get("ceil_mode") else span // st) + 1
        if kw.get("ceil_mode") and (out - 1) * st >= size + p:
            out -= 1
        for o in range(out):
            if not any(0 <= o * st - p + j * d < size for j in range(k)):
                return True
    return False


GENERATORS = {"conv": _conv, "pool": _pool, "embedding": _embedding, "norm": _norm,
              "shape_and_activation": _shape_layer}


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("kind", sorted(GENERATORS))
def test_layers_match_torch(kind: str, seed: int) -> None:
    r = random.Random(f"{kind}{seed}")
    for i in range(60):
        call, arrays, train = GENERATORS[kind](r)
        if _empty_max_window(call, arrays[0]):
            continue
        arrays = [np.random.default_rng(i).standard_normal(a) * 3 if isinstance(a, tuple)
                  else a for a in arrays]
        try:
            compare(call, arrays, train)
        except AssertionError as e:
            raise AssertionError(f"{call} on {[a.shape for a in arrays]} train={train}") from e


def test_max_pool_index_of_a_window_with_nothing_above_minus_inf() -> None:
    # a window wholly in the padding, and one of -inf values: torch's index is its first
    # row and column stepped by the dilation out of the padding
    for x, kw in ((np.random.default_rng(0).standard_normal((1, 1, 6, 1)),
                   dict(kernel_size=2, padding=1, dilation=2)),
                  (np.full((1, 1, 3, 2), -np.inf), dict(kernel_size=3, padding=1, stride=1))):
        want = torch.nn.functional.max_pool2d(torch.tensor(x), return_indices=True, **kw)
        got = rt.nn.functional.max_pool2d(rt.tensor(x), return_indices=True, **kw)
        np.testing.assert_array_equal(got[1].numpy(), want[1].numpy())


def test_conv_same_with_an_odd_total_padding_warns_and_names_the_padded_input() -> None:
    import runtime.ops.conv as conv

    conv._SAME_WARNED.clear()
    with pytest.warns(UserWarning, match="padding='same' with even kernel lengths"):
        rt.nn.functional.conv2d(rt.randn(1, 2, 4, 4), rt.randn(3, 2, 2, 2), padding="same")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once a process, as TORCH_WARN_ONCE
        rt.nn.functional.conv2d(rt.randn(1, 2, 4, 4), rt.randn(3, 2, 2, 2), padding="same")
    with pytest.raises(RuntimeError, match=r"expected input\[1, 7, 3, 5\] to have 6 channels"):
        rt.nn.functional.conv2d(rt.randn(7, 2, 5), rt.randn(3, 2, 2, 3), groups=3,
                                padding="same")
