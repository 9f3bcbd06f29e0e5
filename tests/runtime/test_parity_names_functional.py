"""torch-level names of nn.functional's ops (torch.conv2d, torch.batch_norm, torch.embedding,
torch.dropout, torch.kl_div ...) with their native signatures, against PyTorch: values,
gradients and errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")

g = np.random.default_rng(2)
X4 = g.standard_normal((2, 4, 5, 5))
X3 = g.standard_normal((2, 4, 6))
W2 = g.standard_normal((3, 4, 3, 3))
W1 = g.standard_normal((3, 4, 2))
WT = g.standard_normal((4, 3, 2, 2))
V4 = g.standard_normal(4)
P4 = g.uniform(0.5, 1.5, 4)
M2 = g.standard_normal((5, 4))
N2 = g.standard_normal((5, 4))
T5 = np.array([1.0, -1.0, 1.0, -1.0, 1.0])
WB = g.standard_normal((3, 4, 4))

# each: the call given the module and a tensor maker t(array, grad) (the ones made with
# grad=True are the inputs whose gradients are compared)
CASES: dict[str, Callable[[Any, Any], Any]] = {
    "conv1d": lambda m, t: m.conv1d(t(X3, 1), t(W1, 1), t(V4[:3], 1), 2, 1),
    "conv2d": lambda m, t: m.conv2d(t(X4, 1), t(W2, 1), None, 1, "same"),
    "conv3d": lambda m, t: m.conv3d(t(X4[:, :, None], 1), t(W2[:, :, None], 1), padding=(0, 1, 1)),
    "conv_transpose1d": lambda m, t: m.conv_transpose1d(t(X3, 1), t(WT[:, :, 0], 1), None, 2),
    "conv_transpose2d": lambda m, t: m.conv_transpose2d(t(X4, 1), t(WT, 1), None, 2, 1, 1),
    "conv_transpose3d": lambda m, t: m.conv_transpose3d(t(X4[:, :, None], 1),
                                                        t(WT[:, :, None], 1)),
    "layer_norm": lambda m, t: m.layer_norm(t(X3, 1), [6], t(V4[:2].repeat(3), 1), None, 1e-3),
    "group_norm": lambda m, t: m.group_norm(t(X4, 1), 2, t(P4, 1), t(V4, 1)),
    "batch_norm_train": lambda m, t: m.batch_norm(t(X4, 1), t(P4, 1), t(V4, 1), None, None,
                                                  True, 0.1, 1e-5, True),
    "batch_norm_eval": lambda m, t: m.batch_norm(t(X4, 1), t(P4, 1), None, t(V4, 0),
                                                 t(P4, 0), False, 0.1, 1e-5, True),
    "instance_norm": lambda m, t: m.instance_norm(t(X3, 1), t(P4, 1), t(V4, 1), None, None,
                                                  True, 0.1, 1e-5, False),
    "rms_norm": lambda m, t: m.rms_norm(t(X3, 1), (6,), None, 1e-6),
    "embedding": lambda m, t: m.embedding(t(M2, 1), m.tensor([[0, 4], [2, 2]])),
    "embedding_padding": lambda m, t: m.embedding(t(M2, 1), m.tensor([0, 3, 3]), 3),
    "dropout_eval": lambda m, t: m.dropout(t(X3, 1), 0.3, False),
    "dropout_p0": lambda m, t: m.feature_dropout(t(X3, 1), 0.0, True),
    "alpha_dropout_eval": lambda m, t: m.alpha_dropout(t(X3, 1), 0.5, False),
    "celu": lambda m, t: m.celu(t(X3, 1), 0.7),
    "selu": lambda m, t: m.selu(t(X3, 1)),
    "threshold": lambda m, t: m.threshold(t(X3, 1), 0.1, -2.0),
    "prelu": lambda m, t: m.prelu(t(X4, 1), t(P4, 1)),
    "prelu_method": lambda m, t: t(X4, 1).prelu(t(P4[:1], 1)),
    "hardshrink": lambda m, t: m.hardshrink(t(X3, 1), 0.7),
    "hardshrink_method": lambda m, t: t(X3, 1).hardshrink(),
    "rrelu_eval": lambda m, t: m.rrelu(t(X3, 1)),
    "pixel_shuffle": lambda m, t: m.pixel_shuffle(t(X4, 1), 2),
    "pixel_unshuffle": lambda m, t: m.pixel_unshuffle(t(X4[:, :, :4, :4], 1), 2),
    "channel_shuffle": lambda m, t: m.channel_shuffle(t(X4, 1), 2),
    "cosine_similarity": lambda m, t: m.cosine_similarity(t(M2, 1), t(N2, 1), 0),
    "pairwise_distance": lambda m, t: m.pairwise_distance(t(M2, 1), t(N2, 1), 1.5),
    "pdist": lambda m, t: m.pdist(t(M2, 1), 3.0),
    "bilinear": lambda m, t: m.bilinear(t(M2, 1), t(N2, 1), t(WB, 1), t(V4[:3], 1)),
    "kl_div_mean": lambda m, t: m.kl_div(t(M2, 1), t(np.abs(N2), 1)),
    "kl_div_none_log": lambda m, t: m.kl_div(t(M2, 1), t(N2, 1), 0, log_target=True),
    "kl_div_default": lambda m, t: m.kl_div(t(M2, 1), t(np.abs(N2), 1)),
    "kl_div_mean_int": lambda m, t: m.kl_div(t(M2, 1), t(np.abs(N2), 1), 1),
    "triplet_margin_loss_mean": lambda m, t: m.triplet_margin_loss(
        t(M2, 1), t(N2, 1), t(M2 * 0.5, 0), 1.0, 2.0, 1e-6, True, 1),
    "kl_div_sum": lambda m, t: m.kl_div(t(M2, 1), t(np.abs(N2), 1), 2),
    "bce_logits": lambda m, t: m.binary_cross_entropy_with_logits(
        t(M2, 1), t(np.abs(N2) / 3, 0), t(P4, 0), t(P4 * 2, 0), 2),
    "bce_logits_default": lambda m, t: m.binary_cross_entropy_with_logits(
        t(M2, 1), t(np.abs(N2) / 3, 0)),
    "cosine_embedding_loss": lambda m, t: m.cosine_embedding_loss(
        t(M2, 1), t(N2, 1), t(T5, 0), 0.1),
    "hinge_embedding_loss": lambda m, t: m.hinge_embedding_loss(t(M2[:, 0], 1), t(T5, 0), 0.5,
                                                                0),
    "margin_ranking_loss": lambda m, t: m.margin_ranking_loss(t(M2[:, 0], 1), t(N2[:, 0], 1),
                                                              t(T5, 0), 0.2, 2),
    "poisson_nll_loss": lambda m, t: m.poisson_nll_loss(t(M2, 1), t(np.abs(N2), 0), True,
                                                        True, 1e-8, 1),
    "triplet_margin_loss": lambda m, t: m.triplet_margin_loss(t(M2, 1), t(N2, 1),
                                                              t(M2 * 0.5, 0), 1.0, 2.0),
    "max_pool1d": lambda m, t: m.max_pool1d(t(X3, 1), 2),
    "max_pool1d_stride": lambda m, t: m.max_pool1d(t(X3, 1), 3, 2, 1, 1, True),
    "max_pool2d": lambda m, t: m.max_pool2d(t(X4, 1), (2, 2), [], 1),
    "max_pool3d": lambda m, t: m.max_pool3d(t(X4[:, :, None], 1), (1, 2, 2)),
    "max_pool1d_with_indices": lambda m, t: m.max_pool1d_with_indices(t(X3, 1), 2),
    "avg_pool1d": lambda m, t: m.avg_pool1d(t(X3, 1), 3, 2, 1, False, False),
    "adaptive_avg_pool1d": lambda m, t: m.adaptive_avg_pool1d(t(X3, 1), 4),
    "adaptive_max_pool1d": lambda m, t: m.adaptive_max_pool1d(t(X3, 1), 4),
    "constant_pad_nd": lambda m, t: m.constant_pad_nd(t(X3, 1), [1, 2, 0, 1], 0.5),
    "constant_pad_nd_neg": lambda m, t: m.constant_pad_nd(t(X3, 1), [-1, 2]),
    "convolution": lambda m, t: m.convolution(t(X4, 1), t(W2, 1), t(V4[:3], 1), [1, 2],
                                              [1, 0], [1, 1], False, [0, 0], 1),
    "convolution_1d": lambda m, t: m.convolution(t(X3, 1), t(W1, 1), None, [1], [0], [2],
                                                 False, [0], 1),
    "convolution_transposed": lambda m, t: m.convolution(t(X4, 1), t(WT, 1), None, [2, 2],
                                                         [0, 0], [1, 1], True, [1, 1], 1),
    "native_layer_norm": lambda m, t: m.native_layer_norm(t(X3, 1), [6], t(V4[:2].repeat(3), 1),
                                                          None, 1e-5),
    "native_batch_norm": lambda m, t: m.native_batch_norm(t(X4, 1), t(P4, 1), t(V4, 1), None,
                                                          None, True, 0.1, 1e-5),
    "native_group_norm": lambda m, t: m.native_group_norm(t(X4, 1), t(P4, 1), None, 2, 4, 25,
                                                          2, 1e-5),
    "rnn_tanh_cell": lambda m, t: m.rnn_tanh_cell(t(M2[:, :3], 1), t(N2[:, :2], 1),
                                                  t(WB[0, :2, :3], 1), t(WB[1, :2, :2], 1),
                                                  t(V4[:2], 1), t(P4[:2], 1)),
    "rnn_relu_cell": lambda m, t: m.rnn_relu_cell(t(M2[:, :3], 1), t(N2[:, :2], 1),
                                                  t(WB[0, :2, :3], 1), t(WB[1, :2, :2], 1)),
    "gru_cell": lambda m, t: m.gru_cell(t(M2[:, :3], 1), t(N2[:, :1], 1),
                                        t(WB[0, :3, :3], 1), t(WB[1, :3, :1], 1),
                                        t(V4[:3], 1), t(P4[:3], 1)),
    "lstm_cell": lambda m, t: m.lstm_cell(t(M2[:, :3], 1), (t(N2[:, :1], 1), t(M2[:, 3:], 1)),
                                          t(WB[0, :, :3], 1), t(WB[1, :, :1], 1),
                                          t(V4, 1), t(P4, 1)),
    "grid_sampler": lambda m, t: m.grid_sampler(t(X4[:1], 1), t(np.tanh(X4[1, :2]).transpose(
        1, 2, 0)[None], 1), 0, 1, False),
    "grid_sampler_nearest": lambda m, t: m.grid_sampler(t(X4[:1], 1), t(np.tanh(
        X4[1, :2]).transpose(1, 2, 0)[None], 0), 1, 0, True),
    "affine_grid_generator": lambda m, t: m.affine_grid_generator(
        t(WB[:1, :2, :3], 1), [1, 1, 4, 5], False),
    "conv_tbc": lambda m, t: m.conv_tbc(t(X3.transpose(2, 0, 1), 1), t(W1.transpose(2, 1, 0), 1),
                                        t(V4[:3], 1), 1),
}


def _run(m: Any, name: str) -> tuple[Any, list[Any]]:
    made: list[Any] = []

    def t(a: np.ndarray, grad: int) -> Any:
        x = m.tensor(np.ascontiguousarray(a), requires_grad=bool(grad))
        if grad:
            made.append(x)
        return x

    out = CASES[name](m, t)
    outs = out if isinstance(out, tuple) else (out,)
    total = sum((o.double() * (i + 1)).sum() for i, o in enumerate(outs)
                if o.dtype.is_floating_point)
    total.backward()
    return out, [x.grad for x in made]


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(name: str) -> None:
    (ours, og), (theirs, tg) = _run(rt, name), _run(torch, name)
    outs = ours if isinstance(ours, tuple) else (ours,)
    touts = theirs if isinstance(theirs, tuple) else (theirs,)
    for a, b in zip(outs, touts):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6,
                                   atol=1e-9)
    for a, b in zip(og, tg):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-9)


def test_gradcheck() -> None:
    x = rt.tensor(X4[:1, :, :3, :3], requires_grad=True)
    w = rt.tensor(W2[:, :, :2, :2], requires_grad=True)
    p = rt.tensor(P4, requires_grad=True)
    assert rt.autograd.gradcheck(lambda a, b: rt.conv2d(a, b, None, 1, 1), (x, w))
    assert rt.autograd.gradcheck(
        lambda a, s: rt.batch_norm(a, s, None, None, None, True, 0.1, 1e-5, True), (x, p))
    target = rt.tensor(np.abs(X4[:1, :, :3, :3]))
    assert rt.autograd.gradcheck(lambda a: rt.kl_div(a, target, 1), (x,))
    assert rt.autograd.gradcheck(lambda a, s: rt.group_norm(a, 2, s), (x, p))


def test_batch_norm_updates_running_stats() -> None:
    stats = []
    for m in (rt, torch):
        mean, var = m.zeros(4, dtype=m.float64), m.ones(4, dtype=m.float64)
        m.batch_norm(m.tensor(X4), None, None, mean, var, True, 0.2, 1e-5, False)
        stats.append((mean.numpy(), var.numpy()))
    np.testing.assert_allclose(stats[0][0], stats[1][0])
    np.testing.assert_allclose(stats[0][1], stats[1][1])


def test_feature_dropout_drops_whole_channels() -> None:
    rt.manual_seed(0)
    x = rt.ones(8, 16, 3)
    y = rt.feature_dropout(x, 0.5, True)
    per_channel = y.numpy()
    assert set(np.unique(per_channel)) <= {0.0, 2.0}
    assert np.all(per_channel.min(-1) == per_channel.max(-1))
    assert 0 < (per_channel == 0).mean() < 1
    z = rt.ones(4, 6)
    assert rt.dropout_(z, 0.5, True) is z


def _error(fn: Callable[[Any], Any]) -> None:
    texts = []
    for m in (rt, torch):
        with pytest.raises(Exception) as info:
            fn(m)
        texts.append((info.type.__name__, str(info.value)))
    assert texts[0] == texts[1]


def test_native_batch_norm_eval_and_dropout() -> None:
    for m in (rt, torch):
        out, mean, rstd = m.native_batch_norm(m.tensor(X4), None, None, m.zeros(4, dtype=m.float64),
                                              m.ones(4, dtype=m.float64), False, 0.1, 1e-5)
        assert tuple(mean.shape) == tuple(rstd.shape) == (0,)
        x = m.tensor(X3)
        kept, mask = m.native_dropout(x, 0.5, False)
        assert kept is not x and mask.dtype == m.bool and bool(mask.all())
        np.testing.assert_array_equal(kept.numpy(), X3)
        out, mask = m.native_dropout(m.ones(200, 50), 0.25, True)
        values = out.numpy()
        assert set(np.unique(values)) <= {0.0, np.float32(1 / 0.75)}
        np.testing.assert_array_equal(values != 0, mask.numpy())
        assert 0.6 < mask.numpy().mean() < 0.9


def test_embedding_renorm_() -> None:
    results = []
    for m in (rt, torch):
        w = m.tensor(M2 * 3)
        out = m.embedding_renorm_(w, m.tensor([0, 2, 2]), 1.0, 2.0)
        assert out is w
        results.append(w.numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-7)


def test_lstm_cell_gradcheck() -> None:
    x = rt.tensor(M2[:2, :3], requires_grad=True)
    h = rt.tensor(N2[:2, :1], requires_grad=True)
    c = rt.tensor(M2[:2, 3:], requires_grad=True)
    w_ih = rt.tensor(WB[0, :, :3], requires_grad=True)
    w_hh = rt.tensor(WB[1, :, :1], requires_grad=True)
    assert rt.autograd.gradcheck(lambda *a: rt.lstm_cell(a[0], (a[1], a[2]), a[3], a[4]),
                                 (x, h, c, w_ih, w_hh))


def test_default_reduction_is_none_as_torch_binding() -> None:
    """PyTorch 2.13's torch-level losses give the unreduced loss when ``reduction`` is left
    out (their schema says 1; their Python binding does not apply it)."""
    for name, args in (("kl_div", (M2, np.abs(N2))), ("hinge_embedding_loss", (M2[:, 0], T5)),
                       ("margin_ranking_loss", (M2[:, 0], N2[:, 0], T5))):
        shapes = [tuple(getattr(m, name)(*(m.tensor(a) for a in args)).shape)
                  for m in (rt, torch)]
        assert shapes[0] == shapes[1] == args[0].shape


def test_errors_as_torch() -> None:
    _error(lambda m: m.binary_cross_entropy_with_logits(
        m.tensor(M2), m.tensor(N2), None, m.tensor(P4, requires_grad=True), 1))
    _error(lambda m: m.kl_div(m.tensor(M2), m.tensor(N2), "mean"))
    _error(lambda m: m.hinge_embedding_loss(m.tensor(M2), m.tensor(N2), 1.0, "sum"))
    _error(lambda m: m.dropout(m.tensor(M2), 1.5, True))
    _error(lambda m: m.feature_dropout(m.tensor(V4), 0.5, True))
    _error(lambda m: m.pdist(m.tensor(X3)))


@pytest.mark.parametrize("name", ["dropout", "alpha_dropout", "feature_alpha_dropout",
                                  "feature_dropout", "dropout_", "feature_dropout_"])
def test_dropout_probability_error(name: str) -> None:
    _error(lambda m: getattr(m, name)(m.tensor(X3), -0.1, True))


def test_bce_logits_weight_not_differentiable() -> None:
    _error(lambda m: m.nn.functional.binary_cross_entropy_with_logits(
        m.tensor(M2, requires_grad=True), m.tensor(N2), m.tensor(P4, requires_grad=True)))


def test_native_outputs_requiring_grad() -> None:
    flags = []
    for m in (rt, torch):
        x = m.tensor(X4, requires_grad=True)
        flags.append([
            [t.requires_grad for t in m.native_layer_norm(x, [5], None, None, 1e-5)],
            [t.requires_grad for t in m.native_batch_norm(x, None, None, None, None, True, 0.1,
                                                          1e-5)],
            [t.requires_grad for t in m.native_group_norm(x, None, None, 2, 4, 25, 2, 1e-5)],
            [t.requires_grad for t in m.native_dropout(x, 0.5, True)]])
    assert flags[0] == flags[1]


@pytest.mark.parametrize("dims,stride,padding,dilation,groups", [
    (1, 1, 0, 1, 1), (2, 2, 1, 1, 2), (2, 1, 2, 2, 1), (3, 1, 1, 1, 1)])
def test_nn_grad(dims: int, stride: int, padding: int, dilation: int, groups: int) -> None:
    x = g.standard_normal((2, 4) + (6,) * dims)
    w = g.standard_normal((6, 4 // groups) + (3,) * dims)
    results = []
    for m in (rt, torch):
        conv = getattr(m.nn.functional, f"conv{dims}d")
        out = conv(m.tensor(x), m.tensor(w), None, stride, padding, dilation, groups)
        go = m.tensor(g.standard_normal(tuple(out.shape)) if m is rt else results[0][2])
        gi = getattr(m.nn.grad, f"conv{dims}d_input")(x.shape, m.tensor(w), go, stride,
                                                      padding, dilation, groups)
        gw = getattr(m.nn.grad, f"conv{dims}d_weight")(m.tensor(x), w.shape, go, stride,
                                                       padding, dilation, groups)
        results.append((gi.numpy(), gw.numpy(), go.numpy()))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-9, atol=1e-12)


def test_grid_sampler_2d_3d() -> None:
    grid = np.tanh(X4[1, :2]).transpose(1, 2, 0)[None]
    results = [m.grid_sampler_2d(m.tensor(X4[:1]), m.tensor(grid), 0, 0, False).numpy()
               for m in (rt, torch)]
    np.testing.assert_allclose(results[0], results[1], rtol=1e-7, atol=1e-12)
    grid3 = np.tanh(g.standard_normal((1, 2, 2, 2, 3)))
    results = [m.grid_sampler_3d(m.tensor(X4[:1, :, None]).expand(1, 4, 3, 5, 5).contiguous(),
                                 m.tensor(grid3), 0, 1, True).numpy() for m in (rt, torch)]
    np.testing.assert_allclose(results[0], results[1], rtol=1e-7, atol=1e-12)
    _error(lambda m: m.grid_sampler_2d(m.tensor(X4[:1, :, None]), m.tensor(grid3), 0, 0, False))
    assert rt.is_vulkan_available() is torch.is_vulkan_available() is False
