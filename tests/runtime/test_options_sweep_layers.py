"""Options of issue 11's layers that the seeded sweeps did not draw, against PyTorch 2.13:
each case is code run alike in both libraries (``L`` the library, ``F`` its functional,
``nn``; inputs made from the same arrays, float64 and float32), then values, dtypes, shapes,
input gradients, error types and texts, and warnings compared.

Cases: adaptive average pools to one cell (a mean over the planes, taken before the rank
check: a 2-D input is pooled), sequences of output sizes as long as the input's rank
(torch's functional ValueError), max pools over windows whose taps in the input are all -inf
next to padding (the first tap in the input takes the gradient, not one in the padding),
batch_norm's parameters and statistics of another dtype than the input (torch's "mixed
dtype" errors; float32 ones of a half input taken, the result in the input's dtype), and
layer_norm, group_norm and rms_norm alike (weights of another shape than normalized_shape
refused, rms_norm's result in the input's dtype)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")


def _flat(out: Any) -> list[Any]:
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    return [out]


def _error(e: Exception) -> str:
    name = "RuntimeError" if type(e).__name__ == "ShapeError" else type(e).__name__
    return f"{name}: {str(e).replace('torch', 'runtime')}"


def _run(lib: Any, code: str, arrays: dict[str, np.ndarray], dtype: str) -> tuple[Any, ...]:
    leaves = {k: lib.tensor(a, dtype=getattr(lib, dtype), requires_grad=True)
              if a.dtype.kind == "f" else lib.tensor(a) for k, a in arrays.items()}
    scope = dict(L=lib, F=lib.nn.functional, nn=lib.nn, **leaves)
    lib.manual_seed(0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            exec(code, scope)  # noqa: S102 - the tables below
        except Exception as e:  # noqa: BLE001 - the texts are compared
            return _error(e), None, None, []
    said = [str(w.message).replace("torch", "runtime") for w in caught]
    outs = [o for o in _flat(scope["out"]) if o is not None]
    rng = np.random.default_rng(1)
    loss = None
    for o in outs:
        if o.dtype.is_floating_point and o.requires_grad:
            term = (o * lib.tensor(rng.standard_normal(tuple(o.shape)), dtype=o.dtype)).sum()
            loss = term if loss is None else loss + term
    if loss is not None:
        loss.backward()
    values = [(str(o.dtype).split(".")[-1], tuple(o.shape), o.detach().numpy().copy())
              for o in outs]
    grads = {k: None if t.grad is None else t.grad.numpy().copy()
             for k, t in leaves.items() if t.requires_grad}
    return "", values, grads, said


def probe(code: str, arrays: dict[str, np.ndarray], dtype: str = "float64",
          warnings_too: bool = True) -> None:
    """Run ``code`` (which sets ``out``) in torch and here, and compare everything (the
    warnings unless ``warnings_too`` is False: one torch gives once a process)."""
    want = _run(torch, code, arrays, dtype)
    got = _run(rt, code, arrays, dtype)
    assert got[0] == want[0], code
    assert got[3] == want[3] or not warnings_too, code
    if want[1] is None:
        return
    tol = 1e-10 if dtype == "float64" else 1e-5
    assert len(got[1]) == len(want[1]), code
    for (wd, ws, wv), (gd, gs, gv) in zip(want[1], got[1], strict=True):
        assert (gd, gs) == (wd, ws), code
        np.testing.assert_allclose(gv, wv, rtol=tol, atol=tol, err_msg=code)
    assert set(got[2]) == set(want[2]), code
    for name, w in want[2].items():
        g = got[2][name]
        assert (g is None) == (w is None), f"{code}: grad of {name}"
        if w is not None:
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=f"{code}: {name}")


def _randn(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


ADAPTIVE = [
    ("out = F.adaptive_avg_pool2d(x, 1)", (5, 4)),
    ("out = nn.AdaptiveAvgPool2d(1)(x)", (5, 4)),
    ("out = nn.AdaptiveAvgPool2d((1, 1))(x)", (5, 4)),
    ("out = nn.AdaptiveAvgPool2d((1, None))(x)", (3, 5, 4)),
    ("out = F.adaptive_avg_pool2d(x, 1)", (0, 3, 4)),
    ("out = F.adaptive_avg_pool2d(x, 1)", (2, 0, 4)),
    ("out = F.adaptive_avg_pool2d(x, 1)", (4,)),
    ("out = F.adaptive_avg_pool2d(x.long(), 1)", (2, 3, 4)),
    ("out = F.adaptive_avg_pool3d(x, 1)", (3, 5, 4)),
    ("out = F.adaptive_avg_pool3d(x, (1, 1, 1))", (2, 3, 5, 4)),
    ("out = F.adaptive_avg_pool3d(x, 1)", (3, 4)),
    ("out = F.adaptive_avg_pool3d(x, (1, 1, 1))", (3, 5, 4)),
    ("out = nn.AdaptiveAvgPool2d((2, None))(x)", (6, 2)),
    ("out = nn.AdaptiveMaxPool2d((None, None), return_indices=True)(x)", (5, 7)),
    ("out = nn.AdaptiveAvgPool2d((4, 3))(x)", (5, 7)),
    ("out = nn.AdaptiveMaxPool3d((None, 2, None))(x)", (3, 4, 5)),
    ("out = nn.AdaptiveAvgPool3d((2, 2, 2))(x)", (3, 4, 5)),
    ("out = nn.AdaptiveAvgPool2d((2, None))(x)", (2, 6, 3)),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(("code", "shape"), ADAPTIVE)
def test_adaptive_pool_sizes_and_ranks_as_torch(code: str, shape: tuple[int, ...],
                                                dtype: str) -> None:
    probe(code, {"x": _randn(*shape)}, dtype)


def _with_minus_inf() -> np.ndarray:
    x = _randn(2, 2, 5, 4, seed=3)
    x[0, 0, :2, :] = -np.inf
    x[1, 1, :, 0] = -np.inf
    x[0, 1] = -np.inf
    return x


MINUS_INF_POOLS = [
    "out = F.max_pool2d(x, 3, stride=1, padding=1, return_indices=True)",
    "out = F.max_pool2d(x, 2, stride=2, padding=1, ceil_mode=True)",
    "out = F.max_pool2d(x, 2, stride=2, ceil_mode=True, return_indices=True)",
    "out = F.max_pool2d(x, 3, stride=2, padding=1, dilation=2, return_indices=True)",
    "out = nn.MaxPool2d(3, 1, 1)(x[0])",
    "out = F.max_pool1d(x[0], 3, stride=1, padding=1, return_indices=True)",
    "out = F.max_pool3d(x[None], 3, stride=1, padding=1, return_indices=True)",
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("code", MINUS_INF_POOLS)
def test_max_pool_of_minus_inf_beside_padding_grads_the_first_tap_in_the_input(
        code: str, dtype: str) -> None:
    probe(code, {"x": _with_minus_inf()}, dtype)


NORM_DTYPES = ["float32", "float64", "bfloat16"]


# (input, weight and bias, running statistics, training); evaluation needs statistics
NORM_MIXES = [(x, w, s, t) for x in NORM_DTYPES for w in (None, *NORM_DTYPES)
              for s in (None, *NORM_DTYPES) for t in (True, False) if s is not None or t]


@pytest.mark.parametrize(("dtype", "weight", "stats", "training"), NORM_MIXES)
def test_batch_norm_of_mixed_dtypes_is_torchs_error_or_result(
        dtype: str, weight: str | None, stats: str | None, training: bool) -> None:
    # float32 parameters of a bfloat16 input are taken (autocast's convolution feeding a
    # float32 BatchNorm): the result is the input's dtype; other mixes are torch's errors

    def run(lib: Any) -> str:
        x = lib.tensor(_randn(2, 3, 4), dtype=getattr(lib, dtype))
        w = None if weight is None else lib.ones(3, dtype=getattr(lib, weight))
        mean, var = (None, None) if stats is None else (
            lib.zeros(3, dtype=getattr(lib, stats)), lib.ones(3, dtype=getattr(lib, stats)))
        try:
            out = lib.nn.functional.batch_norm(x, mean, var, w, w, training=training)
        except RuntimeError as e:
            return str(e)
        return str(out.dtype).split(".")[-1]

    assert run(rt) == run(torch)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_a_float32_batch_norm_of_a_half_input_is_torchs_bits(dtype: str) -> None:
    x = _randn(4, 3, 5, 5).astype(np.float32) * 3 + 1
    g = _randn(4, 3, 5, 5, seed=1).astype(np.float32)

    def run(lib: Any) -> list[np.ndarray]:
        m = lib.nn.BatchNorm2d(3)
        with lib.no_grad():
            m.weight.copy_(lib.tensor([1.5, -2.0, 0.5]))
            m.bias.copy_(lib.tensor([0.1, 0.2, 0.3]))
        t = lib.tensor(x).to(getattr(lib, dtype)).requires_grad_()
        y = m(t)
        y.backward(lib.tensor(g).to(getattr(lib, dtype)))
        assert y.dtype is getattr(lib, dtype) and t.grad.dtype is getattr(lib, dtype)
        m.eval()
        z = m(t)
        return [y.detach().float().numpy(), t.grad.float().numpy(), m.weight.grad.numpy(),
                m.running_mean.numpy(), m.running_var.numpy(), z.detach().float().numpy()]

    for got, want in zip(run(rt), run(torch), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


NORM_CALLS = [
    "out = F.rms_norm(x, (4,), w[0][:3])",
    "out = F.rms_norm(x, (3,), w)",
    "out = F.rms_norm(x, [4], w[0].double())",
    "out = F.rms_norm(x.double(), [4], w[0].float())",
    "out = nn.RMSNorm(4, dtype=L.float64)(x.float())",
    "out = F.layer_norm(x, (4,), w[0][:3])",
    "out = F.layer_norm(x, (4,), None, w[0][:3])",
    "out = F.layer_norm(x, (4,), w)",
    "out = F.layer_norm(x.float(), (4,), w[0].double())",
    "out = F.layer_norm(x.double(), (4,), w[0].float(), w[0].float())",
    "out = F.layer_norm(x.float(), (4,), w[0].float(), w[0].double())",
    "out = F.layer_norm(x.float(), (4,), w[0].bfloat16())",
    "out = F.layer_norm(x.long(), (4,), w[0].float())",
    "out = F.layer_norm(x[:, :3], (4,), w[0].double())",
    "out = F.group_norm(x.float(), 2, w[0].double())",
    "out = F.group_norm(x.double(), 2, w[0].double(), w[0].float())",
    "out = F.group_norm(x.long(), 2, w[0].float())",
    "out = F.group_norm(x.double(), 2, w[0][:3].float())",
]


@pytest.mark.parametrize("code", NORM_CALLS)
def test_norm_weight_shapes_and_dtypes_as_torch(code: str) -> None:
    # rms_norm's result has the input's dtype whatever the weight's; a weight or bias of
    # another shape than normalized_shape is torch's error (layer_norm broadcast a (2, 4)
    # weight); layer_norm and group_norm refuse mixed dtypes as batch_norm. Left out: torch's
    # rms_norm warns once a process of a weight of another dtype ("Mismatch dtype ...")
    probe(code, {"x": _randn(2, 4), "w": _randn(2, 4, seed=1)}, "float32",
          warnings_too="rms" not in code.lower())


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("layer", ["GroupNorm(3, 6)", "LayerNorm(5)", "RMSNorm(5)"])
def test_a_float32_norm_of_a_half_input_gives_the_inputs_dtype(layer: str, dtype: str) -> None:
    x = _randn(4, 6, 5).astype(np.float32) * 3 + 1

    def run(lib: Any) -> tuple[Any, np.ndarray, np.ndarray]:
        m = eval("lib.nn." + layer)  # noqa: S307 - the names above
        with lib.no_grad():
            for p in m.parameters():
                p.copy_(lib.linspace(-1, 2, p.numel()))
        t = lib.tensor(x).to(getattr(lib, dtype)).requires_grad_()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's rms_norm: "Mismatch dtype ..."
            y = m(t)
        y.sum().backward()
        return (str(y.dtype).split(".")[-1], str(t.grad.dtype).split(".")[-1]), \
            y.detach().float().numpy(), t.grad.float().numpy()

    (want_dtypes, *want), (got_dtypes, *got) = run(torch), run(rt)
    assert got_dtypes == want_dtypes == (dtype, dtype)
    ulp = 2.0 ** (-7 if dtype == "bfloat16" else -10)  # an ulp of the order of summation
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=ulp, atol=ulp * np.abs(w).max())


def _mha(extra: str) -> str:
    return ("m = nn.MultiheadAttention(6, 3" + extra + ").to(q.dtype)\n"
            "with L.no_grad():\n"
            "    for i, p in enumerate(m.parameters()):\n"
            "        p.copy_(L.linspace(-1, 1, p.numel(), dtype=p.dtype).reshape(p.shape) * (i + 1)"
            " / 3)\n")


MHA_CAUSAL = [
    _mha("") + "out = m(q, q, q, attn_mask=af, need_weights=False, is_causal=True)",
    _mha("") + "out = m(q, q, q, attn_mask=af > 0, need_weights=False, is_causal=True)",
    _mha(", add_bias_kv=True, add_zero_attn=True")
    + "out = m(q, q, q, attn_mask=af, need_weights=False, is_causal=True)",
    _mha(", kdim=3, batch_first=True")
    + "out = m(q.transpose(0, 1), k.transpose(0, 1), q.transpose(0, 1), attn_mask=af > 0,"
      " need_weights=False, is_causal=True)",
    _mha("") + "out = m(q, q, q, attn_mask=af, need_weights=True, is_causal=True)",
    _mha("") + "out = m(q, q, q, attn_mask=af, key_padding_mask=kb, need_weights=False, "
               "is_causal=True)",
    _mha("") + "out = m(q[:, 0], q[:, 0], q[:, 0], attn_mask=af, need_weights=False, "
               "is_causal=True)",
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("code", MHA_CAUSAL)
def test_multihead_attention_is_causal_hint_as_torch(code: str, dtype: str) -> None:
    # with no key padding mask and no weights asked for, torch drops the given mask and
    # attends causally over every key, the add_bias_kv/add_zero_attn ones included (the
    # mask was applied as given, the hint ignored)
    arrays = {"q": _randn(3, 2, 6), "k": _randn(3, 2, 3, seed=1), "af": _randn(3, 3, seed=2),
              "kb": np.array([[False, True, False], [False, False, True]])}
    probe(code, arrays, dtype)


@pytest.mark.parametrize("rank", [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("dims", [1, 2, 3])
def test_circular_pad_modules_check_the_rank_as_torch(dims: int, rank: int) -> None:
    probe(f"out = nn.CircularPad{dims}d(1)(x)", {"x": _randn(*(2,) * rank)}, "float32")


NEAREST = [
    ("out = F.interpolate(x, mode='nearest', scale_factor=2.3)", (1, 2, 3, 4)),
    ("out = F.interpolate(x, mode='nearest', scale_factor=(1.1, 2.3))", (2, 1, 3, 3)),
    ("out = F.interpolate(x, mode='nearest', scale_factor=(2.2, 1.0))", (1, 1, 4, 3)),
    ("out = nn.Upsample(scale_factor=2.4)(x)", (1, 1, 3, 5)),
    ("out = F.interpolate(x, mode='nearest-exact', scale_factor=2.3)", (1, 2, 3, 4)),
    ("out = F.interpolate(x, mode='nearest', scale_factor=1.4)", (1, 1, 3, 4)),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(("code", "shape"), NEAREST)
def test_nearest_2d_keeps_and_doubles_axes_as_torch(code: str, shape: tuple[int, ...],
                                                    dtype: str) -> None:
    # torch's 2-d nearest kernel copies an axis whose output size equals the input's and
    # halves the index of one doubled, whatever the scale factor (2.3 on 3 rows: 0 0 1 1 2 2).
    # Left out: its 1-d and 3-d kernels map by the scale in the forward but by the doubling
    # in the backward (a gradient that is not the forward's); ours is the forward's
    probe(code, {"x": _randn(*shape)}, dtype)


TRANSPOSED = [
    ("conv_transpose2d", (1, 2, 3, 3), (2, 1, 3, 3),
     dict(stride=1, padding=1, output_padding=1, dilation=2)),
    ("conv_transpose2d", (2, 2, 2, 5), (2, 1, 3, 3),
     dict(stride=2, padding=2, output_padding=2, dilation=3)),
    ("conv_transpose2d", (1, 2, 1, 4), (2, 1, 3, 3),
     dict(stride=(1, 2), padding=(2, 0), output_padding=(1, 2), dilation=3)),
    ("conv_transpose2d", (1, 2, 3, 3), (2, 1, 3, 3),
     dict(stride=1, padding=(1, 3), output_padding=(2, 2), dilation=(3, 4))),
    ("conv_transpose1d", (2, 2, 3), (2, 1, 3), dict(stride=1, padding=1, output_padding=1,
                                                    dilation=2)),
    ("conv_transpose3d", (1, 2, 2, 3, 2), (2, 1, 3, 3, 2),
     dict(stride=1, padding=1, output_padding=1, dilation=2)),
    ("conv_transpose3d", (1, 2, 1, 4, 2), (2, 2, 3, 3, 2),
     dict(stride=(1, 2, 1), padding=(2, 0, 1), output_padding=(1, 2, 0), dilation=3)),
]


@pytest.mark.parametrize(("fn", "shape", "weight", "kw"), TRANSPOSED)
def test_transposed_conv_output_padding_past_the_stride_as_torch(
        fn: str, shape: tuple[int, ...], weight: tuple[int, ...], kw: dict[str, Any]) -> None:
    # an output_padding at or past the stride (allowed below the dilation) with padding: the
    # outputs it adds are the full transposed convolution's (they were zeros), and a depth
    # tap wholly in the padding adds nothing (conv_transpose3d raised narrow()'s error)
    probe(f"out = F.{fn}(x, w, **{kw!r})", {"x": _randn(*shape), "w": _randn(*weight, seed=4)})


def _stack(layer: str, extra: str = "") -> str:
    return (f"m = nn.TransformerEncoder(nn.TransformerEncoderLayer({layer}), 2{extra})"
            ".to(x.dtype)\n"
            "with L.no_grad():\n"
            "    for i, p in enumerate(m.parameters()):\n"
            "        p.copy_(L.linspace(-0.5, 0.5, p.numel(), dtype=p.dtype).reshape(p.shape)"
            " * (i % 5 + 1) / 4)\n")


ENCODERS = [
    _stack("4, 2, 8, dropout=0.0") + "out = m(x)",
    _stack("4, 2, 8, dropout=0.0, batch_first=True, norm_first=True") + "out = m(x)",
    _stack("4, 2, 8, dropout=0.0, batch_first=True, bias=False") + "out = m(x)",
    _stack("4, 1, 8, dropout=0.0, batch_first=True") + "out = m(x)",
    _stack("4, 2, 8, dropout=0.0, batch_first=True, activation=nn.Tanh()") + "out = m(x)",
    _stack("4, 2, 8, dropout=0.0, batch_first=True, activation='gelu'") + "out = m(x)",
    _stack("4, 2, 8, dropout=0.0, batch_first=True", ", enable_nested_tensor=False")
    + "out = m(x, mask=af, src_key_padding_mask=kb)",
    _stack("4, 2, 8, dropout=0.0, batch_first=True") + "out = m(x, mask=af, src_key_padding_mask=kb)",
    _stack("4, 2, 8, dropout=0.0, batch_first=True") + "out = m(x, mask=af > 0, src_key_padding_mask=kb)",
    "m = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0).to(x.dtype)\n"
    "out = m(x, src_mask=af, src_key_padding_mask=kb)",
    "m = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0).to(x.dtype)\n"
    "out = L.tensor([m.activation_relu_or_gelu, nn.TransformerEncoderLayer(4, 2, "
    "activation='gelu').activation_relu_or_gelu, nn.TransformerEncoderLayer(4, 2, "
    "activation=L.tanh).activation_relu_or_gelu])",
]


@pytest.mark.parametrize("code", ENCODERS)
def test_transformer_encoder_masks_and_warnings_as_torch(code: str) -> None:
    # torch's encoder and encoder layer make a bool padding mask float beside a float mask,
    # warning once under their own names (the attention warned again for each layer under
    # its names), and its encoder warns when it will not take its nested-tensor path
    arrays = {"x": _randn(2, 4, 4), "af": _randn(4, 4, seed=2),
              "kb": np.array([[False, False, True, False], [False, True, False, True]])}
    probe(code, arrays, "float32")


@pytest.mark.parametrize("code", [
    "m = nn.LSTM(4, 3, dropout=0.5); out = L.ones(1)",
    "m = nn.RNN(4, 3, 1, 'tanh', True, False, 0.3); out = L.ones(1)",
    "m = nn.GRU(4, 3, dropout=0.2, num_layers=2); out = L.ones(1)",
    "m = nn.GRU(4, 3, proj_size=1)",
    "m = nn.RNN(4, 3, proj_size=1)",
])
def test_recurrent_constructor_warnings_and_errors_as_torch(code: str) -> None:
    # dropout on a single layer warns (it drops nothing); RNN and GRU take proj_size to
    # refuse it with torch's ValueError (a TypeError for the unknown keyword here)
    probe(code, {}, "float32")


# windows wholly in the padding whose index torch computes inside the plane (where it lies
# past it, torch writes out of bounds and may crash the process: never drawn here)
EMPTY_WINDOWS = [
    ("out = F.max_pool2d(x, 2, padding=1, dilation=2, return_indices=True)", (1, 1, 6, 1)),
    ("out = F.max_pool2d(x, 2, padding=1, dilation=2)", (1, 1, 4, 1)),
    ("out = nn.MaxPool2d(2, 1, 1, 2)(x)", (2, 3, 6, 1)),
    ("out = nn.MaxPool2d(2, 1, 1, 2, return_indices=True)(x)", (3, 5, 1)),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(("code", "shape"), EMPTY_WINDOWS)
def test_max_pool_window_wholly_in_padding_grads_its_index_as_torch(
        code: str, shape: tuple[int, ...], dtype: str) -> None:
    # its value is -inf; torch sends its gradient to the element its index names (it was
    # dropped here)
    probe(code, {"x": _randn(*shape, seed=6)}, dtype)


@pytest.mark.parametrize(("dtype", "weight", "stats", "training"), NORM_MIXES)
def test_instance_norm_of_mixed_dtypes_is_torchs_error_or_result(
        dtype: str, weight: str | None, stats: str | None, training: bool) -> None:
    # its weight and bias are checked as batch_norm's; its running statistics may have any
    # float dtype (the result keeps the input's)
    def run(lib: Any) -> str:
        x = lib.tensor(_randn(2, 3, 4), dtype=getattr(lib, dtype))
        w = None if weight is None else lib.ones(3, dtype=getattr(lib, weight))
        mean, var = (None, None) if stats is None else (
            lib.zeros(3, dtype=getattr(lib, stats)), lib.ones(3, dtype=getattr(lib, stats)))
        try:
            out = lib.nn.functional.instance_norm(x, mean, var, w, w, use_input_stats=training)
        except RuntimeError as e:
            return str(e)
        return str(out.dtype).split(".")[-1]

    assert run(rt) == run(torch)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_a_float32_instance_norm_of_a_half_input_as_torch(dtype: str) -> None:
    x = _randn(2, 3, 5).astype(np.float32) * 3 + 1

    def run(lib: Any) -> list[Any]:
        m = lib.nn.InstanceNorm1d(3, affine=True, track_running_stats=True)
        with lib.no_grad():
            m.weight.copy_(lib.tensor([1.5, -2.0, 0.5]))
            m.bias.copy_(lib.tensor([0.1, 0.2, 0.3]))
        t = lib.tensor(x).to(getattr(lib, dtype)).requires_grad_()
        y = m(t)
        y.float().sum().backward()
        m.eval()
        z = m(t)
        return [str(y.dtype).split(".")[-1], str(z.dtype).split(".")[-1],
                y.detach().float().numpy(), t.grad.float().numpy(), m.running_mean.numpy(),
                m.running_var.numpy(), z.detach().float().numpy()]

    want, got = run(torch), run(rt)
    assert got[:2] == want[:2] == [dtype, dtype]
    for g, w in zip(got[2:], want[2:], strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("code", [
    "out = F.cosine_similarity(x, y, eps=10.0)",
    "out = F.cosine_similarity(x * 1e-9, y)",
    "out = nn.CosineSimilarity(0, 3.0)(x, y)",
    "out = F.softmin(x)",
    "out = nn.Softmin()(x[0])",
])
def test_cosine_similarity_eps_and_softmin_dim_as_torch(code: str, dtype: str) -> None:
    # torch clamps the norms to eps in place under no_grad (the gradient is the unclamped
    # norm's; it was zero where clamped), and warns of softmin's implicit dim
    probe(code, {"x": _randn(4, 5), "y": _randn(4, 5, seed=1)}, dtype)


@pytest.mark.parametrize("shape", [(), (4,)])
@pytest.mark.parametrize("code", [
    "out = F.dropout2d(x, 0.0)",
    "out = F.dropout2d(x * 1, 1.0, inplace=True)",
    "out = F.dropout2d(x, 0.5, training=False)",
    "out = F.dropout2d(x, 0.5)",
    "out = nn.Dropout2d(0.3)(x)",
])
def test_dropout2d_of_fewer_than_two_dims_as_torch(code: str, shape: tuple[int, ...]) -> None:
    # torch refuses them only where it would draw (training, 0 < p < 1): p 0 or 1, or
    # evaluation, give its result (they were all refused)
    probe(code, {"x": _randn(*shape)}, "float32")


_EDGES = np.array([[0.0, 1.0, -np.inf, np.inf, np.nan], [1e30, -1e30, 0.0, 1.0, 0.5]])


@pytest.mark.parametrize("norm_type", [2, 1, 3.0, 0.5])
@pytest.mark.parametrize("x", [np.abs(_EDGES), _EDGES, _EDGES * 0,
                               np.random.default_rng(0).standard_normal((4, 6))])
def test_lp_pool_of_zero_infinite_and_nan_windows_as_torch(x: np.ndarray,
                                                           norm_type: float) -> None:
    # torch's sign(out) * relu(|out|): sign passes no gradient, relu none at 0 and a NaN's
    # through (an infinite or all-zero window's gradient was NaN here, a NaN window's 0)
    def run(lib: Any) -> tuple[np.ndarray, np.ndarray]:
        leaf = lib.tensor(x[None, None], requires_grad=True)
        out = lib.nn.functional.lp_pool2d(leaf, norm_type, 2)
        out.sum().backward()
        return out.detach().numpy(), leaf.grad.numpy()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpy's, of inf and NaN arithmetic
        got, want = run(rt), run(torch)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12, equal_nan=True)
