"""Every layer class against PyTorch 2.13 in float64: built with its arguments in both
libraries, torch's weights copied in, then outputs, input and parameter gradients and buffers
compared on random inputs (batch size 1 and unbatched ones where torch takes them), and the
error texts of wrong ranks, channels and arguments (convolutions, pools, bilinear)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")


def build(lib: Any, call: str) -> Any:
    scope: dict[str, Any] = {name: getattr(lib.nn, name) for name in dir(lib.nn)}
    scope.update(T=lib, nn=lib.nn, np=np)
    lib.manual_seed(0)
    return eval(call, scope)  # noqa: S307 - the tables below


def flat(out: Any) -> list[Any]:
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in flat(o)]
    return [] if out is None else [out]


def error_text(e: Exception) -> str:
    # runtime's ShapeError is a RuntimeError (and ValueError) under another name
    name = "RuntimeError" if type(e).__name__ == "ShapeError" else type(e).__name__
    return f"{name}: {str(e).replace('torch', 'runtime')}"


def run(lib: Any, module: Any, arrays: list[Any], train: bool) -> tuple[str, Any]:
    module.train(train)
    inputs = [None if a is None else lib.tensor(a, requires_grad=a.dtype.kind == "f")
              for a in arrays]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = module(*inputs)
    except Exception as e:  # noqa: BLE001 - the texts are compared
        return error_text(e), None
    outs = flat(out)
    rng = np.random.default_rng(5)
    loss = None
    for o in outs:
        if o.dtype.is_floating_point:
            term = (o * lib.tensor(rng.standard_normal(tuple(o.shape)))).sum()
            loss = term if loss is None else loss + term
    values = [o.detach().numpy().copy() for o in outs]
    if loss is not None and loss.requires_grad:
        loss.backward()
    grads = [None if t is None or t.grad is None else t.grad.numpy().copy() for t in inputs]
    params = {n: None if p.grad is None else p.grad.numpy().copy()
              for n, p in module.named_parameters()}
    buffers = {n: b.detach().numpy().copy() for n, b in module.named_buffers()}
    return "", (values, grads, params, buffers)


def same(a: Any, b: Any, what: str) -> None:
    assert (a is None) == (b is None), what
    if a is not None:
        assert a.shape == b.shape, what
        np.testing.assert_allclose(b, a, rtol=1e-8, atol=1e-10, err_msg=what)


def compare(call: str, arrays: list[Any], train: bool = True) -> None:
    theirs = build(torch, call).double()
    ours = build(rt, call).double()
    ours.load_state_dict({k: rt.tensor(v.detach().numpy().copy())
                          for k, v in theirs.state_dict().items()})
    torch_err, want = run(torch, theirs, arrays, train)
    our_err, got = run(rt, ours, arrays, train)
    assert our_err == torch_err
    if want is None:
        return
    for kind, w, g in zip(("output", "input grad"), want[:2], got[:2], strict=True):
        assert len(g) == len(w), kind
        for i, (a, b) in enumerate(zip(w, g, strict=True)):
            same(a, b, f"{kind} {i}")
    for kind, w, g in zip(("parameter grad", "buffer"), want[2:], got[2:], strict=True):
        assert set(g) == set(w), kind
        for name in w:
            same(w[name], g[name], f"{kind} {name}")


# (constructor, input shapes or integer arrays, train mode)
LAYERS: list[tuple[str, list[Any], bool]] = [
    ("Linear(4, 3)", [(2, 4)], True),
    ("Linear(4, 3)", [(4,)], True),
    ("Linear(4, 3, bias=False)", [(1, 5, 4)], True),
    ("Linear(4, 3)", [(2, 5)], True),
    ("Bilinear(2, 3, 4)", [(5, 2), (5, 3)], True),
    ("Bilinear(2, 3, 4, bias=False)", [(2,), (3,)], True),
    ("Bilinear(2, 3, 4)", [(5, 2), (4, 3)], True),
    ("Bilinear(2, 3, 4)", [(5, 6, 2), (6, 3)], True),
    ("Bilinear(2, 3, 4)", [(5, 3), (5, 3)], True),
    ("BatchNorm1d(3)", [(4, 3)], True),
    ("BatchNorm1d(3)", [(4, 3, 5)], True),
    ("BatchNorm1d(3)", [(4, 3)], False),
    ("BatchNorm1d(3)", [(1, 3)], True),
    ("BatchNorm1d(3)", [(3,)], True),
    ("BatchNorm1d(3)", [(4, 2)], True),
    ("BatchNorm1d(3, momentum=None)", [(4, 3)], True),
    ("BatchNorm1d(3, affine=False, track_running_stats=False)", [(4, 3)], False),
    ("BatchNorm2d(3)", [(2, 3, 4, 4)], True),
    ("BatchNorm2d(3)", [(3, 4, 4)], True),
    ("BatchNorm2d(3, eps=1e-3, momentum=0.3)", [(2, 3, 4, 4)], False),
    ("BatchNorm3d(3)", [(2, 3, 2, 2, 2)], True),
    ("BatchNorm3d(3)", [(3, 2, 2, 2)], True),
    ("BatchNorm2d(3)", [(1, 3, 1, 1)], True),
    ("InstanceNorm1d(3)", [(2, 3, 5)], True),
    ("InstanceNorm1d(3)", [(3, 5)], True),
    ("InstanceNorm1d(3, affine=True, track_running_stats=True)", [(2, 3, 5)], True),
    ("InstanceNorm1d(3, affine=True, track_running_stats=True)", [(2, 3, 5)], False),
    ("InstanceNorm2d(3)", [(2, 3, 4, 4)], True),
    ("InstanceNorm2d(3)", [(3, 4, 4)], True),
    ("InstanceNorm3d(3, affine=True)", [(2, 3, 2, 3, 2)], True),
    ("InstanceNorm1d(3)", [(2, 3, 1)], True),
    ("InstanceNorm2d(3)", [(5,)], True),
    ("GroupNorm(2, 4)", [(3, 4, 5)], True),
    ("GroupNorm(2, 4)", [(3, 4)], True),
    ("GroupNorm(2, 4, affine=False)", [(3, 4, 2, 2)], True),
    ("GroupNorm(2, 4)", [(4,)], True),
    ("GroupNorm(2, 4)", [(3, 6, 5)], True),
    ("LayerNorm(4)", [(2, 3, 4)], True),
    ("LayerNorm((3, 4), elementwise_affine=False)",
                                           [(2, 3, 4)], True),
    ("LayerNorm(4, bias=False)", [(4,)], True),
    ("LayerNorm(4)", [(2, 5)], True),
    ("RMSNorm(4)", [(2, 3, 4)], True),
    ("RMSNorm((3, 4), eps=1e-3)", [(2, 3, 4)], True),
    ("LocalResponseNorm(3)", [(2, 5, 4)], True),
    ("LocalResponseNorm(2, alpha=1e-2, beta=0.5, k=2.0)", [(2, 5, 4, 3)], True),
    ("LocalResponseNorm(3)", [(2, 5, 2, 2, 2)], True),
    ("Embedding(10, 3)", [np.array([[1, 2], [3, 9]])], True),
    ("Embedding(10, 3, padding_idx=2)", [np.array([1, 2, 2, 0])], True),
    ("Embedding(10, 3)", [np.array(4)], True),
    ("Embedding(10, 3, scale_grad_by_freq=True)", [np.array([1, 1, 2, 1])], True),
    ("Embedding(10, 3)", [np.array([10])], True),
    ("Embedding(10, 3)", [np.array([1.0])], True),
    ("Embedding(10, 3, max_norm=1.0)", [np.array([1, 2, 2])], True),
    ("EmbeddingBag(10, 3)", [np.array([[1, 2], [3, 9]])], True),
    ("EmbeddingBag(10, 3, mode='sum')", [np.array([1, 2, 3, 4]), np.array([0, 2])], True),
    ("EmbeddingBag(10, 3, mode='max')", [np.array([1, 2, 3, 4]), np.array([0, 1])], True),
    ("EmbeddingBag(10, 3, mode='mean', include_last_offset=True)",
     [np.array([1, 2, 3, 4]), np.array([0, 1, 4])], True),
    ("EmbeddingBag(10, 3, padding_idx=2)", [np.array([[1, 2], [2, 2]])], True),
    ("ZeroPad1d(2)", [(2, 3)], True),
    ("ZeroPad2d((1, 2, 0, 3))", [(2, 3, 4)], True),
    ("ConstantPad1d((2, -1), 3.5)", [(2, 3, 4)], True),
    ("ConstantPad3d(1, -1.0)", [(1, 2, 2, 2)], True),
    ("ReflectionPad1d(2)", [(2, 3, 5)], True),
    ("ReflectionPad1d(5)", [(2, 3, 5)], True),
    ("ReflectionPad2d((1, 0, 2, 0))", [(3, 4, 4)], True),
    ("ReflectionPad3d(1)", [(1, 2, 3, 3, 3)], True),
    ("ReplicationPad1d((1, 2))", [(3, 5)], True),
    ("ReplicationPad2d(1)", [(2, 2, 3, 3)], True),
    ("ReplicationPad3d(1)", [(2, 2, 2, 2)], True),
    ("CircularPad1d(2)", [(2, 3, 5)], True),
    ("CircularPad2d((1, 2, 3, 0))", [(1, 2, 4, 4)], True),
    ("CircularPad1d(6)", [(2, 3, 5)], True),
    ("PixelShuffle(2)", [(2, 8, 3, 3)], True),
    ("PixelShuffle(2)", [(8, 3, 3)], True),
    ("PixelUnshuffle(2)", [(1, 2, 4, 6)], True),
    ("PixelShuffle(3)", [(1, 8, 3, 3)], True),
    ("ChannelShuffle(2)", [(2, 4, 3)], True),
    ("Upsample(scale_factor=2.0, mode='bilinear', align_corners=True)", [(1, 2, 3, 4)], True),
    ("Upsample(size=(3, 4))", [(1, 2, 5, 2)], True),
    ("Upsample(scale_factor=2)", [(1, 2, 3)], True),
    ("Upsample(scale_factor=1.5, mode='bicubic')", [(1, 1, 4, 4)], True),
    ("Upsample(size=5, mode='linear')", [(1, 2, 3)], True),
    ("Upsample(scale_factor=(2, 1, 3), mode='trilinear')", [(1, 1, 2, 2, 2)], True),
    ("Upsample(scale_factor=0.5, mode='nearest-exact')", [(1, 1, 6, 6)], True),
    ("Upsample(scale_factor=2, mode='area')", [(1, 1, 3, 3)], True),
    ("UpsamplingBilinear2d(scale_factor=2)", [(1, 2, 2, 3)], True),
    ("Upsample(scale_factor=2, mode='bilinear')", [(2, 3, 4)], True),
    ("Fold((4, 5), (2, 2), dilation=1, padding=1, stride=2)", [(1, 8, 6)], True),
    ("Fold((3, 3), 2)", [(4, 4)], True),
    ("Unfold((2, 3), dilation=2, padding=1, stride=(1, 2))", [(1, 2, 5, 6)], True),
    ("Unfold(2)", [(2, 3, 3)], True),
    ("Flatten(0, 2)", [(2, 3, 4, 5)], True),
    ("Unflatten(-1, (2, -1))", [(4, 6)], True),
    ("CosineSimilarity(dim=0, eps=1e-6)", [(3, 4), (3, 4)], True),
    ("CosineSimilarity()", [(3, 4), (1, 4)], True),
    ("PairwiseDistance(p=1.0, eps=1e-3, keepdim=True)", [(3, 4), (3, 4)], True),
    ("PairwiseDistance()", [(4,), (3, 4)], True),
    ("Softmax()", [(2, 3, 4)], True),
    ("Softmax()", [(3,)], True),
    ("LogSoftmax()", [(2, 3, 4, 5)], True),
    ("Softmin(1)", [(2, 3)], True),
    ("Softmax2d()", [(2, 3, 4)], True),
    ("Softmax2d()", [(3, 4)], True),
    ("RNN(3, 4)", [(5, 2, 3)], True),
    ("RNN(3, 4)", [(3,)], True),
    ("RNN(3, 4, nonlinearity='relu', bias=False, batch_first=True)", [(2, 5, 3)], True),
    ("RNN(3, 4, num_layers=2, bidirectional=True)", [(5, 2, 3)], True),
    ("RNN(3, 4)", [(5, 3)], True),
    ("RNN(3, 4)", [(5, 2, 3), (1, 2, 4)], True),
    ("RNN(3, 4)", [(5, 3), (1, 4)], True),
    ("RNN(3, 4)", [(5, 2, 2)], True),
    ("RNN(3, 4)", [(5, 2, 3), (2, 2, 4)], True),
    ("RNN(3, 4)", [(5, 2, 3), (1, 3, 4)], True),
    ("GRU(3, 4)", [(5, 2, 3)], True),
    ("GRU(3, 4)", [(5, 3), (1, 4)], True),
    ("GRU(3, 4, num_layers=2, bias=False, batch_first=True, bidirectional=True)", [(2, 5, 3)], True),
    ("LSTM(3, 4)", [(5, 2, 3)], True),
    ("LSTM(3, 4, proj_size=2)", [(5, 2, 3)], True),
    ("LSTM(3, 4, num_layers=2, batch_first=True, bidirectional=True, proj_size=2)",
     [(2, 5, 3)], True),
    ("LSTM(3, 4)", [(5, 3)], True),
    ("LSTM(3, 4)", [(1, 1, 3)], True),
    ("RNNCell(3, 4)", [(2, 3)], True),
    ("RNNCell(3, 4, nonlinearity='relu')", [(2, 3), (2, 4)], True),
    ("RNNCell(3, 4)", [(3,)], True),
    ("RNNCell(3, 4)", [(3,), (4,)], True),
    ("RNNCell(3, 4)", [(2, 5)], True),
    ("RNNCell(3, 4)", [(2, 3), (3, 4)], True),
    ("RNNCell(3, 4)", [(2, 2, 3)], True),
    ("RNNCell(3, 4)", [(3,), (2, 4)], True),
    ("GRUCell(3, 4, bias=False)", [(2, 3)], True),
    ("GRUCell(3, 4)", [(3,), (4,)], True),
    ("GRUCell(3, 4)", [(2, 3), (2, 5)], True),
    ("LSTMCell(3, 4)", [(2, 3)], True),
    ("LSTMCell(3, 4)", [(3,)], True),
    ("LSTMCell(3, 4)", [(2, 3), (2, 4)], True),
    ("MultiheadAttention(8, 2)", [(5, 2, 8), (5, 2, 8), (5, 2, 8)], False),
    ("MultiheadAttention(8, 2, batch_first=True)", [(2, 5, 8), (2, 6, 8), (2, 6, 8)], False),
    ("MultiheadAttention(8, 2, bias=False, add_bias_kv=True, add_zero_attn=True, kdim=4, vdim=6)",
     [(5, 2, 8), (6, 2, 4), (6, 2, 6)], False),
    ("MultiheadAttention(8, 2)", [(5, 8), (5, 8), (5, 8)], False),
    ("MultiheadAttention(8, 2)", [(5, 2, 8), (5, 2, 7), (5, 2, 8)], False),
    ("MultiheadAttention(8, 4)", [(1, 1, 8), (1, 1, 8), (1, 1, 8)], False),
    ("TransformerEncoderLayer(8, 2, 16, 0.0)", [(5, 2, 8)], False),
    ("TransformerEncoderLayer(8, 2, 16, 0.0, 'gelu', batch_first=True, norm_first=True, "
     "bias=False)", [(2, 5, 8)], False),
    ("TransformerEncoderLayer(8, 2, 16, 0.0)", [(5, 8)], False),
    ("TransformerDecoderLayer(8, 2, 16, 0.0)", [(5, 2, 8), (6, 2, 8)], False),
    ("TransformerDecoderLayer(8, 2, 16, 0.0, norm_first=True)", [(5, 8), (6, 8)], False),
    ("TransformerEncoder(TransformerEncoderLayer(8, 2, 16, 0.0), 2, enable_nested_tensor=False)",
     [(5, 2, 8)], False),
    ("TransformerDecoder(TransformerDecoderLayer(8, 2, 16, 0.0), 2, norm=LayerNorm(8))",
     [(5, 2, 8), (6, 2, 8)], False),
    ("Transformer(8, 2, 1, 1, 16, 0.0)", [(5, 2, 8), (6, 2, 8)], False),
    ("Transformer(8, 2, 1, 1, 16, 0.0, batch_first=True)", [(2, 5, 8), (2, 6, 8)], False),
    ("Transformer(8, 2, 1, 1, 16, 0.0)", [(5, 2, 8), (6, 3, 8)], False),
    ("Transformer(8, 2, 1, 1, 16, 0.0)", [(5, 2, 8), (6, 2, 7)], False),
    ("Dropout(0.3)", [(4, 5)], False),
    ("Dropout1d(0.3)", [(2, 4, 5)], False),
    ("Dropout2d()", [(2, 4, 5, 5)], False),
    ("AlphaDropout(0.2)", [(3, 4)], False),
    ("FeatureAlphaDropout(0.2)", [(2, 3, 4)], False),
    ("Dropout(0.0)", [(4, 5)], True),
    ("Dropout(1.0)", [(4, 5)], True),
    ("Dropout2d(1.0)", [(2, 4, 5, 5)], True),
    ("Identity()", [(2, 3)], True),
    ("ReLU()", [(3, 4)], True),
    ("ReLU6()", [(3, 4)], True),
    ("ELU(0.5)", [(3, 4)], True),
    ("CELU(0.5)", [(3, 4)], True),
    ("SELU()", [(3, 4)], True),
    ("GELU('tanh')", [(3, 4)], True),
    ("GELU()", [(3, 4)], True),
    ("SiLU()", [(3, 4)], True),
    ("Mish()", [(3, 4)], True),
    ("Sigmoid()", [(3, 4)], True),
    ("Tanh()", [(3, 4)], True),
    ("Hardtanh(-0.5, 0.5)", [(3, 4)], True),
    ("Hardswish()", [(3, 4)], True),
    ("Hardshrink(0.3)", [(3, 4)], True),
    ("Softshrink(0.3)", [(3, 4)], True),
    ("Tanhshrink()", [(3, 4)], True),
    ("Softsign()", [(3, 4)], True),
    ("Softplus(2.0, 1.0)", [(3, 4)], True),
    ("LogSigmoid()", [(3, 4)], True),
    ("LeakyReLU(0.2)", [(3, 4)], True),
    ("Threshold(0.1, 20.0)", [(3, 4)], True),
    ("GLU()", [(3, 4)], True),
    ("GLU(0)", [(3, 4)], True),
    ("GLU()", [(3, 5)], True),
    ("PReLU()", [(3, 4)], True),
    ("PReLU(4, 0.1)", [(3, 4, 2)], True),
    ("PReLU(4)", [(3, 5)], True),
    ("PReLU(4)", [(4,)], True),
    ("PReLU(4)", [(2, 4, 3, 3)], True),
    ("RReLU(0.1, 0.3)", [(3, 4)], False),
    ("Softmax(0)", [(3, 4)], True),
]


@pytest.mark.parametrize(("call", "shapes", "train"), LAYERS,
                         ids=[f"{c}-{s}-{t}" for c, s, t in LAYERS])
def test_layer_against_torch(call: str, shapes: list[Any], train: bool) -> None:
    rng = np.random.default_rng(0)
    arrays = [s if isinstance(s, np.ndarray) else rng.standard_normal(s) for s in shapes]
    compare(call, arrays, train)


# functional calls whose error texts (or results) must be PyTorch's; r(*shape) is a random
# float32 tensor
CALLS = """
F.bilinear(r(5, 6, 7), r(6, 3), r(4, 2, 3))|F.bilinear(r(5, 7), r(4, 3), r(4, 2, 3))
F.bilinear(r(5, 7), r(5, 3), r(4, 2, 3), r(3))|F.bilinear(r(5, 2), r(5, 9), r(4, 2, 3), r(3))
F.bilinear(r(5, 2), r(5, 3), r(4, 2, 3), r(3))
nn.LSTMCell(3, 4)(r(2, 3), (r(3, 4), r(2, 4)))|nn.LSTMCell(3, 4)(r(2, 3), (r(2, 4), r(3, 4)))
nn.LSTMCell(3, 4)(r(2, 3), (r(2, 4),))|nn.LSTMCell(3, 4)(r(2, 3), [r(2, 4), r(2, 4)])
nn.LSTMCell(3, 4)(r(3), (r(2, 4), r(2, 4)))|nn.LSTMCell(3, 4)(r(2, 3), (r(2, 5), r(2, 4)))
nn.LSTMCell(3, 4)(r(2, 3), (r(2, 4), r(2, 5)))|nn.LSTMCell(3, 4)(r(2, 3), r(2, 4))
nn.LSTMCell(3, 4)(r(3), (r(4), r(4)))|nn.LSTMCell(3, 4)(r(2, 3), (r(1, 2, 4), r(2, 4)))
nn.GRUCell(3, 4)(r(2, 3), r(1, 2, 4))|nn.RNNCell(3, 4)(r(3), r(1, 4))
nn.LSTM(3, 4)(r(5, 2, 3), (r(1, 3, 4), r(1, 2, 4)))|nn.LSTM(3, 4)(r(5, 2, 3), (r(1, 2, 4), r(1, 2, 5)))
nn.RNN(3, 4, batch_first=True)(r(2, 5, 3), r(1, 5, 4))|nn.GRU(3, 4)(r(1, 2, 3, 3))|nn.LSTM(3, 4)(r(3))
F.grid_sample(r(3, 5, 6), r(4, 3, 2))|F.grid_sample(r(2, 3, 5, 6), r(1, 4, 3, 2))
F.grid_sample(r(2, 3, 5, 6), r(2, 4, 3, 1))|F.grid_sample(r(2, 3, 0, 6), r(2, 4, 3, 2))
F.grid_sample(r(1, 2, 3, 4, 5), r(1, 2, 3, 2, 3), mode='bicubic')|F.grid_sample(r(2, 3, 5, 6), r(2, 4, 3, 2).double())
F.grid_sample(r(2, 3, 5, 6), r(2, 4, 3, 2), mode='bad')|F.grid_sample(r(2, 3, 5, 6), r(2, 4, 3, 2), align_corners=True)
F.affine_grid(r(2, 2, 3), size=[3, 3, 4, 5], align_corners=False)|F.affine_grid(r(2, 2, 3), size=[2, 3, 4])
F.affine_grid(r(2, 2, 3), size=[2, 3, 1, 5], align_corners=False)|F.affine_grid(r(2, 3, 4), size=[2, 3, 4, 5])
F.interpolate(r(2, 3, 5, 6), scale_factor=-1.0)|F.interpolate(r(1, 2, 5), scale_factor=-1.0)
F.interpolate(r(1, 2, 5, 5, 5), size=0)|F.interpolate(r(1, 2, 5, 5), size=(0, 2), mode='bicubic')
F.interpolate(r(1, 2, 5, 5), size=(2, 2), recompute_scale_factor=True)
F.interpolate(r(1, 2, 5, 5), size=(2.0, 2))|F.interpolate(r(1, 2, 5), scale_factor=2, mode='bicubic')
F.interpolate(r(2, 5), size=(2, 2))|F.interpolate(r(3, 5), scale_factor=2)|F.interpolate(r(2, 3, 5, 6), size=(3, 3, 3), mode='trilinear')
F.interpolate(r(2, 3, 5, 6), size=3, mode='linear')|F.interpolate(r(2, 3, 5), size=3, mode='bilinear')
F.interpolate(r(2, 3, 5, 6), size=3, mode='nearest', align_corners=True)|F.interpolate(r(2, 3, 5, 6), mode='bilinear')
F.interpolate(r(2, 3, 5, 6), size=3, scale_factor=2)|F.interpolate(r(2, 3, 5, 6), size=3, mode='cubic')
F.group_norm(r(3, 4, 5), 2, r(6))|F.group_norm(r(3, 4, 5), 2, r(2, 2))|F.group_norm(r(3, 4, 5), 3)
"""
ERROR_CALLS = [c for line in CALLS.strip().splitlines() for c in line.split("|")]


def outcome(lib: Any, call: str) -> str:
    lib.manual_seed(0)
    scope = {"F": lib.nn.functional, "nn": lib.nn, "r": lambda *s: lib.randn(*s)}
    try:
        out = eval(call, scope)  # noqa: S307 - the table above
    except Exception as e:  # noqa: BLE001 - the texts are compared
        return error_text(e)
    return f"shape {[tuple(o.shape) for o in flat(out)]}"


@pytest.mark.parametrize("call", ERROR_CALLS)
def test_functional_errors(call: str) -> None:
    assert outcome(rt, call) == outcome(torch, call)
