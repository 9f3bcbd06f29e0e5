"""Parity with PyTorch of nn layers: convolutions' padding modes with padding='same', 1-d
pools with indices, and the other layer fixes of the nn differential check."""

from __future__ import annotations

import numpy as np
import pytest

import runtime as rt

F = rt.nn.functional


def _np(t: object) -> np.ndarray:
    return t.detach().numpy()  # type: ignore[attr-defined]


def _load_from_torch(mod: rt.nn.Module, tmod: object) -> None:
    mod.load_state_dict({k: rt.tensor(v.detach().numpy().copy())
                         for k, v in tmod.state_dict().items()})  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- convolution


def test_conv_same_with_a_padding_mode_pads_by_the_mode_left_low_right_high():
    # kernel (1, 2): 'same' pads the width by 0 on the left and 1 on the right, by reflection
    conv = rt.nn.Conv2d(1, 1, (1, 2), padding="same", padding_mode="reflect", bias=False)
    with rt.no_grad():
        conv.weight.copy_(rt.tensor([[[[1.0, 10.0]]]]))
    x = rt.tensor([[[[1.0, 2.0, 3.0]]]])
    # padded row: 1 2 3 2 -> 1+20, 2+30, 3+20
    np.testing.assert_allclose(_np(conv(x)), [[[[21.0, 32.0, 23.0]]]])
    assert conv._reversed_padding_repeated_twice == [0, 1, 0, 0]


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("dims", [1, 2])
def test_conv_same_padding_modes_match_torch(mode, dims):
    torch = pytest.importorskip("torch")
    tcls = getattr(torch.nn, f"Conv{dims}d")
    rcls = getattr(rt.nn, f"Conv{dims}d")
    kernel = (4,) if dims == 1 else (3, 4)
    kw = dict(padding="same", padding_mode=mode, dilation=1)
    torch.manual_seed(0)
    tm, rm = tcls(2, 3, kernel, **kw), rcls(2, 3, kernel, **kw)
    _load_from_torch(rm, tm)
    xt = torch.randn(2, 2, *(7,) * dims, requires_grad=True)
    xr = rt.tensor(xt.detach().numpy(), requires_grad=True)
    yt, yr = tm(xt), rm(xr)
    np.testing.assert_allclose(_np(yr), yt.detach().numpy(), rtol=1e-5, atol=1e-5)
    (yt * yt).sum().backward()
    (yr * yr).sum().backward()
    np.testing.assert_allclose(_np(xr.grad), xt.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(_np(rm.weight.grad), tm.weight.grad.numpy(), rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------------------ pooling


def test_max_pool1d_returns_indices_along_the_length():
    x = rt.tensor([[[1.0, 5.0, 2.0, 0.0, 7.0, 3.0]]])
    values, indices = rt.nn.MaxPool1d(2, return_indices=True)(x)
    assert values.tolist() == [[[5.0, 2.0, 7.0]]]
    assert indices.tolist() == [[[1, 2, 4]]]
    assert indices.dtype == rt.int64
    v, i = F.max_pool1d(x[0], 3, 2, 1, ceil_mode=True, return_indices=True)
    assert v.tolist() == [[5.0, 5.0, 7.0, 3.0]] and i.tolist() == [[1, 1, 4, 5]]


def test_adaptive_pools_1d_values_and_indices():
    x = rt.tensor([[[1.0, 5.0, 2.0, 0.0, 7.0]]], requires_grad=True)
    avg = rt.nn.AdaptiveAvgPool1d(2)(x)  # windows [0, 3) and [2, 5)
    np.testing.assert_allclose(_np(avg), [[[8 / 3, 3.0]]])
    values, indices = rt.nn.AdaptiveMaxPool1d(3, return_indices=True)(x)  # [0,2) [1,4) [3,5)
    assert values.tolist() == [[[5.0, 5.0, 7.0]]] and indices.tolist() == [[[1, 1, 4]]]
    values.sum().backward()
    assert x.grad.tolist() == [[[0.0, 2.0, 0.0, 0.0, 1.0]]]


@pytest.mark.parametrize("size", [1, 3, 4, 10])
def test_adaptive_pools_1d_match_torch(size):
    torch = pytest.importorskip("torch")
    xt = torch.randn(2, 3, 10)
    xr = rt.tensor(xt.numpy())
    np.testing.assert_allclose(_np(F.adaptive_avg_pool1d(xr, size)),
                               torch.nn.functional.adaptive_avg_pool1d(xt, size).numpy(),
                               rtol=1e-6, atol=1e-6)
    vt, it = torch.nn.functional.adaptive_max_pool1d(xt[0], size, return_indices=True)
    vr, ir = F.adaptive_max_pool1d(xr[0], size, return_indices=True)
    np.testing.assert_array_equal(_np(vr), vt.numpy())
    np.testing.assert_array_equal(_np(ir), it.numpy())


# ---------------------------------------------------------------------- embedding options


def test_embedding_max_norm_renormalizes_the_rows_read_in_place():
    emb = rt.nn.Embedding(3, 2, max_norm=1.0)
    with rt.no_grad():
        emb.weight.copy_(rt.tensor([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]]))
    out = emb(rt.tensor([0, 1, 0]))
    scale = 1.0 / (5.0 + 1e-7)
    np.testing.assert_allclose(_np(out), [[3 * scale, 4 * scale], [0.3, 0.4],
                                          [3 * scale, 4 * scale]], rtol=1e-6)
    # row 2 was not read: left as it was
    np.testing.assert_allclose(_np(emb.weight), [[3 * scale, 4 * scale], [0.3, 0.4],
                                                 [6.0, 8.0]], rtol=1e-6)
    out.sum().backward()
    assert emb.weight.grad.tolist() == [[2.0, 2.0], [1.0, 1.0], [0.0, 0.0]]


def test_embedding_scale_grad_by_freq_divides_by_the_count_in_the_batch():
    w = rt.ones(4, 2, requires_grad=True)
    out = F.embedding(rt.tensor([[1, 1], [1, 3]]), w, scale_grad_by_freq=True)
    assert out.tolist() == [[[1.0, 1.0]] * 2] * 2
    out.sum().backward()
    assert w.grad.tolist() == [[0.0, 0.0], [1.0, 1.0], [0.0, 0.0], [1.0, 1.0]]


def test_embedding_max_norm_and_scale_grad_by_freq_match_torch():
    torch = pytest.importorskip("torch")
    wt = (torch.randn(6, 3, dtype=torch.float64) * 2).requires_grad_()
    wr = rt.tensor(wt.detach().numpy(), requires_grad=True)
    idx = [[1, 3, 3], [5, 1, 1]]
    kw = dict(max_norm=1.5, norm_type=1.0, scale_grad_by_freq=True, padding_idx=5)
    yt = torch.nn.functional.embedding(torch.tensor(idx), wt, **kw)
    yr = F.embedding(rt.tensor(idx), wr, **kw)
    np.testing.assert_allclose(_np(yr), yt.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(_np(wr), wt.detach().numpy(), rtol=1e-12)
    (yt ** 3).sum().backward()
    (yr ** 3).sum().backward()
    np.testing.assert_allclose(_np(wr.grad), wt.grad.numpy(), rtol=1e-12)


# ------------------------------------------------------------------ 3-d norms and dropout


def test_batch_norm_3d_and_instance_norm_3d_match_torch():
    torch = pytest.importorskip("torch")
    x = torch.randn(2, 3, 2, 3, 2)
    for name in ("BatchNorm3d", "InstanceNorm3d"):
        kw = dict(affine=True, track_running_stats=True)
        tm, rm = getattr(torch.nn, name)(3, **kw), getattr(rt.nn, name)(3, **kw)
        for _ in range(2):
            np.testing.assert_allclose(_np(rm(rt.tensor(x.numpy()))), tm(x).detach().numpy(),
                                       rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(_np(rm.running_var), tm.running_var.numpy(), rtol=1e-5)
        rm.eval()
        tm.eval()
        np.testing.assert_allclose(_np(rm(rt.tensor(x.numpy()))), tm(x).detach().numpy(),
                                   rtol=1e-5, atol=1e-5)


def test_batch_norm_3d_checks_rank_and_running_statistics_size():
    with pytest.raises(ValueError, match=r"expected 5D input \(got 4D input\)"):
        rt.nn.BatchNorm3d(3)(rt.ones(2, 3, 4, 4))
    with pytest.raises(RuntimeError, match="running_mean should contain 4 elements not 3"):
        rt.nn.BatchNorm1d(3)(rt.randn(2, 4))


def test_dropout3d_drops_whole_channels_and_is_the_identity_in_eval():
    drop = rt.nn.Dropout3d(0.5)
    y = drop(rt.ones(4, 50, 2, 3, 2)).numpy().reshape(200, -1)
    assert (y.std(-1) == 0).all() and set(np.unique(y)) == {0.0, 2.0}
    y = drop(rt.ones(50, 2, 3, 2)).numpy().reshape(50, -1)  # unbatched: one draw a channel
    assert (y.std(-1) == 0).all() and set(np.unique(y)) == {0.0, 2.0}
    drop.eval()
    x = rt.randn(2, 3, 2, 2, 2)
    assert drop(x) is x or np.array_equal(_np(drop(x)), _np(x))
    assert repr(drop) == "Dropout3d(p=0.5, inplace=False)"


# ------------------------------------------------------------------------- interpolate


def test_interpolate_bicubic_weights_are_pytorchs_cubic_convolution():
    # the four weights sum to 1 (a constant stays constant); align_corners keeps the ends
    x = rt.tensor([[[[0.0, 1.0, 2.0, 3.0]]]])
    y = F.interpolate(x, size=(1, 8), mode="bicubic", align_corners=True)
    assert abs(float(y[0, 0, 0, 0])) < 1e-7 and abs(float(y[0, 0, 0, 7]) - 3.0) < 1e-6
    ones = F.interpolate(rt.ones(1, 1, 3, 4), scale_factor=2.5, mode="bicubic")
    np.testing.assert_allclose(_np(ones), np.ones((1, 1, 7, 10)), rtol=1e-6)
    # without align_corners, output 0 reads source -0.25: floor -1, t = 0.75, taps -2..1
    # clamped to 0, 0, 0, 1; x[0] = 0, so only the far tap (distance 1.25) on x[1] = 1 counts
    y = F.interpolate(x, scale_factor=(1, 2), mode="bicubic")
    a, d = -0.75, 1.25
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    assert abs(float(y[0, 0, 0, 0]) - far) < 1e-7 and abs(far + 0.10546875) < 1e-12


def test_interpolate_area_is_an_adaptive_average_and_trilinear_is_separable():
    x = rt.arange(6.0).reshape(1, 1, 6)
    assert F.interpolate(x, size=3, mode="area").tolist() == [[[0.5, 2.5, 4.5]]]
    v = rt.arange(8.0).reshape(1, 1, 2, 2, 2)
    y = F.interpolate(v, size=(3, 3, 3), mode="trilinear", align_corners=True)
    assert float(y[0, 0, 1, 1, 1]) == 3.5 and y.shape == (1, 1, 3, 3, 3)
    with pytest.raises(NotImplementedError, match="Got 4D input, but trilinear mode needs 5D"):
        F.interpolate(rt.ones(1, 1, 2, 2), size=3, mode="trilinear")
    with pytest.raises(ValueError, match="align_corners option can only be set"):
        F.interpolate(x, size=3, mode="area", align_corners=True)


@pytest.mark.parametrize("mode,dims", [("bicubic", 2), ("area", 1), ("area", 2),
                                       ("trilinear", 3)])
@pytest.mark.parametrize("align_corners", [None, False, True])
@pytest.mark.parametrize("resize", [{"scale_factor": 1.7}, {"scale_factor": 0.6},
                                    {"size": 3}])
def test_interpolate_new_modes_match_torch(mode, dims, align_corners, resize):
    torch = pytest.importorskip("torch")
    if mode == "area" and align_corners is not None:
        return
    xt = torch.randn(2, 3, *(5, 4, 3)[:dims], dtype=torch.float64, requires_grad=True)
    xr = rt.tensor(xt.detach().numpy(), requires_grad=True)
    kw = dict(mode=mode, align_corners=align_corners, **resize)
    yt = torch.nn.functional.interpolate(xt, **kw)
    yr = F.interpolate(xr, **kw)
    np.testing.assert_allclose(_np(yr), yt.detach().numpy(), rtol=1e-10, atol=1e-12)
    g = torch.randn(yt.shape, dtype=torch.float64)
    (yt * g).sum().backward()
    (yr * rt.tensor(g.numpy())).sum().backward()
    np.testing.assert_allclose(_np(xr.grad), xt.grad.numpy(), rtol=1e-10, atol=1e-12)


# --------------------------------------------------------------------- LSTM projections


def test_lstm_proj_size_parameters_state_shapes_and_errors():
    m = rt.nn.LSTM(4, 6, num_layers=2, proj_size=3, bidirectional=True, bias=False)
    shapes = {k: tuple(v.shape) for k, v in m.state_dict().items()}
    assert list(shapes)[:3] == ["weight_ih_l0", "weight_hh_l0", "weight_hr_l0"]
    assert shapes["weight_hh_l0"] == (24, 3) and shapes["weight_hr_l0"] == (3, 6)
    assert shapes["weight_ih_l1_reverse"] == (24, 6)  # two directions of 3
    out, (h, c) = m(rt.randn(5, 2, 4))
    assert out.shape == (5, 2, 6) and h.shape == (4, 2, 3) and c.shape == (4, 2, 6)
    assert repr(m) == "LSTM(4, 6, proj_size=3, num_layers=2, bias=False, bidirectional=True)"
    with pytest.raises(RuntimeError, match=r"Expected hidden\[0\] size \(4, 2, 3\), got"):
        m(rt.randn(5, 2, 4), (rt.zeros(4, 2, 6), rt.zeros(4, 2, 6)))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[1\] size \(4, 2, 6\), got"):
        m(rt.randn(5, 2, 4), (rt.zeros(4, 2, 3), rt.zeros(4, 2, 3)))
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        rt.nn.LSTM(4, 6, proj_size=6)
    with pytest.raises(ValueError, match="proj_size should be a positive integer or zero"):
        rt.nn.LSTM(4, 6, proj_size=-1)


def test_lstm_proj_size_one_step_by_hand():
    m = rt.nn.LSTM(1, 2, proj_size=1, bias=False)
    with rt.no_grad():
        for p in m.parameters():
            p.fill_(0.5)
    out, (h, c) = m(rt.tensor([[[2.0]]]))
    gate = 1 / (1 + np.exp(-1.0))  # every gate sees 0.5 * 2 (h0 = 0)
    c_want = gate * np.tanh(1.0)
    h_want = 0.5 * 2 * gate * np.tanh(c_want)  # the projection sums the two h units
    np.testing.assert_allclose(_np(c), [[[c_want, c_want]]], rtol=1e-6)
    np.testing.assert_allclose(_np(h), [[[h_want]]], rtol=1e-6)
    np.testing.assert_allclose(_np(out), [[[h_want]]], rtol=1e-6)


@pytest.mark.parametrize("batch_first,packed", [(False, False), (True, False), (False, True)])
def test_lstm_proj_size_matches_torch(batch_first, packed):
    torch = pytest.importorskip("torch")
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    kw = dict(num_layers=2, bidirectional=True, proj_size=3, batch_first=batch_first)
    torch.manual_seed(0)
    tm, rm = torch.nn.LSTM(4, 6, **kw).double(), rt.nn.LSTM(4, 6, dtype=rt.float64, **kw)
    _load_from_torch(rm, tm)
    xt = torch.randn(3, 5, 4, dtype=torch.float64, requires_grad=True)
    xr = rt.tensor(xt.detach().numpy(), requires_grad=True)
    h0 = torch.randn(4, 5 if not batch_first else 3, 3, dtype=torch.float64)
    c0 = torch.randn(4, h0.shape[1], 6, dtype=torch.float64)
    state_r = (rt.tensor(h0.numpy()), rt.tensor(c0.numpy()))
    if packed:
        lens = [3, 1, 2, 3, 2]
        ot, (ht, ct) = tm(pack_padded_sequence(xt, torch.tensor(lens), enforce_sorted=False),
                          (h0, c0))
        orr, (hr, cr) = rm(rt.nn.utils.rnn.pack_padded_sequence(xr, rt.tensor(lens),
                                                                enforce_sorted=False), state_r)
        ot, orr = pad_packed_sequence(ot)[0], rt.nn.utils.rnn.pad_packed_sequence(orr)[0]
    else:
        ot, (ht, ct) = tm(xt, (h0, c0))
        orr, (hr, cr) = rm(xr, state_r)
    for a, b in ((orr, ot), (hr, ht), (cr, ct)):
        np.testing.assert_allclose(_np(a), b.detach().numpy(), rtol=1e-10, atol=1e-12)
    (ot.sum() + (ht * ht).sum() + ct.sum()).backward()
    (orr.sum() + (hr * hr).sum() + cr.sum()).backward()
    np.testing.assert_allclose(_np(xr.grad), xt.grad.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(_np(rm.weight_hr_l1_reverse.grad),
                               tm.weight_hr_l1_reverse.grad.numpy(), rtol=1e-9, atol=1e-12)


# ------------------------------------------------------------ gumbel softmax, embedding bag


def test_gumbel_softmax_samples_and_straight_through_gradient():
    rt.manual_seed(0)
    logits = rt.tensor([[0.0, 1.0, 3.0]], requires_grad=True)
    soft = F.gumbel_softmax(logits, tau=0.5)
    assert soft.shape == (1, 3) and abs(float(soft.sum()) - 1.0) < 1e-6
    hard = F.gumbel_softmax(logits, hard=True, dim=0)  # one entry along dim 0: all ones
    assert hard.tolist() == [[1.0, 1.0, 1.0]]
    counts = np.zeros(3)
    for _ in range(800):
        counts += F.gumbel_softmax(logits, hard=True).detach().numpy()[0]
    np.testing.assert_allclose(counts / 800, np.exp([0, 1, 3]) / np.exp([0, 1, 3]).sum(),
                               atol=0.05)  # argmax(logits + Gumbel) ~ softmax(logits)
    y = F.gumbel_softmax(logits, hard=True)
    (y * rt.tensor([[1.0, 2.0, 3.0]])).sum().backward()
    assert logits.grad is not None and float(logits.grad.abs().sum()) > 0


def test_embedding_bag_modes_by_hand():
    w = rt.tensor([[1.0, 0.0], [2.0, 4.0], [3.0, -1.0], [0.0, 8.0]], requires_grad=True)
    idx, offsets = rt.tensor([1, 2, 3, 0, 3]), rt.tensor([0, 2, 2])  # bags [1 2] [] [3 0 3]
    assert F.embedding_bag(idx, w, offsets, mode="sum").tolist() == [[5.0, 3.0], [0.0, 0.0],
                                                                     [1.0, 16.0]]
    assert F.embedding_bag(idx, w, offsets, mode="max").tolist() == [[3.0, 4.0], [0.0, 0.0],
                                                                     [1.0, 8.0]]
    mean = F.embedding_bag(idx, w, offsets, padding_idx=3)  # padding rows are left out
    assert mean.tolist() == [[2.5, 1.5], [0.0, 0.0], [1.0, 0.0]]
    out = F.embedding_bag(idx, w, offsets, mode="sum",
                          per_sample_weights=rt.tensor([1.0, 2.0, 0.5, 1.0, 0.5]))
    assert out.tolist() == [[8.0, 2.0], [0.0, 0.0], [1.0, 8.0]]
    out.sum().backward()
    assert w.grad.tolist() == [[1.0, 1.0], [1.0, 1.0], [2.0, 2.0], [1.0, 1.0]]
    bag = rt.nn.EmbeddingBag.from_pretrained(w.detach(), mode="max")
    assert bag(rt.tensor([[0, 1], [2, 3]])).tolist() == [[2.0, 4.0], [3.0, 8.0]]
    assert repr(bag) == "EmbeddingBag(4, 2, mode='max')"
    with pytest.raises(NotImplementedError, match="only supported for mode='sum'"):
        F.embedding_bag(idx, w, offsets, per_sample_weights=rt.ones(5))
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        F.embedding_bag(idx, w)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_bag_matches_torch(mode, padding_idx):
    torch = pytest.importorskip("torch")
    wt = torch.randn(10, 3, dtype=torch.float64, requires_grad=True)
    wr = rt.tensor(wt.detach().numpy(), requires_grad=True)
    idx = [1, 2, 4, 5, 4, 3, 2, 9, 0, 0]
    for offsets, last in (([0, 4, 4, 7], False), ([0, 3, 3, 10], True), (None, False)):
        kw = dict(mode=mode, padding_idx=padding_idx, include_last_offset=last)
        it, ir = torch.tensor(idx), rt.tensor(idx)
        if offsets is None:
            it, ir = it.view(2, 5), ir.reshape(2, 5)
        ot = None if offsets is None else torch.tensor(offsets)
        orr = None if offsets is None else rt.tensor(offsets)
        yt = torch.nn.functional.embedding_bag(it, wt, ot, **kw)
        yr = F.embedding_bag(ir, wr, orr, **kw)
        np.testing.assert_allclose(_np(yr), yt.detach().numpy(), rtol=1e-12)
        (yt ** 2).sum().backward()
        (yr ** 2).sum().backward()
        np.testing.assert_allclose(_np(wr.grad), wt.grad.numpy(), rtol=1e-12)


# ------------------------------------------------------------------------- compiled steps


def _build_model() -> rt.nn.Module:
    class Model(rt.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = rt.nn.Embedding(12, 4, max_norm=1.0, scale_grad_by_freq=True)
            self.bag = rt.nn.EmbeddingBag(12, 4, mode="max")
            self.conv = rt.nn.Conv1d(4, 4, 4, padding="same", padding_mode="reflect")
            self.bn = rt.nn.BatchNorm1d(4, momentum=None)

        def forward(self, idx: rt.Tensor, offsets: rt.Tensor) -> rt.Tensor:
            x = self.emb(idx).transpose(1, 2)  # (N, 4, L)
            y = self.bn(self.conv(x)).mean(2)
            return y + self.bag(idx.reshape(-1), offsets)

    return Model()


def test_compiled_step_with_the_new_layer_options_equals_eager_without_falling_back():
    import warnings

    import planner

    models = []
    for _ in range(2):
        rt.manual_seed(3)
        models.append(_build_model())
    steps = []
    for model in models:
        opt = rt.optim.SGD(model.parameters(), lr=0.1)

        def step(idx: rt.Tensor, offsets: rt.Tensor, model: rt.nn.Module = model,
                 opt: rt.optim.SGD = opt) -> rt.Tensor:
            opt.zero_grad()
            loss = (model(idx, offsets) ** 2).sum()
            loss.backward()
            opt.step()
            return loss

        steps.append(step)
    compiled = planner.compile(steps[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to eager
        for seed in range(3):
            rt.manual_seed(10 + seed)
            idx, offsets = rt.randint(0, 12, (2, 6)), rt.tensor([0, 5])
            np.testing.assert_allclose(float(compiled(idx, offsets)),
                                       float(steps[1](idx, offsets)), rtol=1e-5)
    for (name, a), b in zip(models[0].state_dict().items(), models[1].state_dict().values()):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-5, atol=1e-6, err_msg=name)
    assert int(models[0].bn.num_batches_tracked) == 3


# ------------------------------------------------------------------------------- conv3d


def test_conv3d_by_hand_and_its_errors():
    w = rt.zeros(1, 1, 2, 1, 1)
    with rt.no_grad():
        w[0, 0, 0, 0, 0], w[0, 0, 1, 0, 0] = 1.0, 10.0
    x = rt.arange(12.0).reshape(1, 1, 3, 2, 2)  # depth planes 0..3, 4..7, 8..11
    y = F.conv3d(x, w)  # plane d + 10 * plane d+1
    assert y.tolist() == [[[[[40.0, 51.0], [62.0, 73.0]], [[84.0, 95.0], [106.0, 117.0]]]]]
    assert F.conv3d(x[0], w, stride=(1, 2, 1)).shape == (1, 2, 1, 2)  # unbatched
    with pytest.raises(RuntimeError, match=r"padded input size per channel: \(3 x 2 x 2\)\. "
                                           r"Kernel size: \(5 x 1 x 1\)"):
        F.conv3d(x, rt.zeros(1, 1, 5, 1, 1))
    with pytest.raises(RuntimeError, match="padding='same' is not supported for strided"):
        F.conv3d(x, w, stride=(2, 1, 1), padding="same")


@pytest.mark.parametrize("kw", [{"padding": (1, 0, 2), "stride": (2, 1, 2)},
                                {"padding": "same", "dilation": 2, "groups": 2},
                                {"padding": 1, "padding_mode": "circular", "bias": False}])
def test_conv3d_matches_torch(kw):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    tm, rm = torch.nn.Conv3d(4, 2, (3, 2, 3), **kw), rt.nn.Conv3d(4, 2, (3, 2, 3), **kw)
    _load_from_torch(rm, tm)
    assert repr(rm) == repr(tm)
    xt = torch.randn(2, 4, 5, 6, 5, requires_grad=True)
    xr = rt.tensor(xt.detach().numpy(), requires_grad=True)
    yt, yr = tm(xt), rm(xr)
    np.testing.assert_allclose(_np(yr), yt.detach().numpy(), rtol=1e-5, atol=1e-5)
    (yt * yt).sum().backward()
    (yr * yr).sum().backward()
    np.testing.assert_allclose(_np(xr.grad), xt.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(_np(rm.weight.grad), tm.weight.grad.numpy(), rtol=1e-4, atol=1e-3)


# ------------------------------------------------------------------------------ CTC loss


def test_ctc_loss_sums_the_alignments_by_hand():
    p = np.array([[0.6, 0.4], [0.3, 0.7]])  # (T=2, C=2), blank 0
    lp = rt.tensor(np.log(p)[:, None, :])
    loss = F.ctc_loss(lp, rt.tensor([[1]]), [2], [1], reduction="sum")
    # "1 1", "- 1" and "1 -" all read as the one label
    want = -np.log(p[0, 1] * p[1, 1] + p[0, 0] * p[1, 1] + p[0, 1] * p[1, 0])
    assert abs(float(loss) - want) < 1e-6
    # "1 1" as a target needs a blank between: impossible in two steps
    inf = F.ctc_loss(lp, rt.tensor([[1, 1]]), [2], [2], reduction="none")
    assert inf.tolist() == [float("inf")]
    zero = F.ctc_loss(lp, rt.tensor([[1, 1]]), [2], [2], zero_infinity=True)
    assert float(zero) == 0.0
    assert repr(rt.nn.CTCLoss(blank=1)) == "CTCLoss()"


def test_ctc_loss_gradcheck_through_log_softmax():
    x = rt.randn(5, 2, 4, dtype=rt.float64, requires_grad=True)

    def fn(x: rt.Tensor) -> rt.Tensor:
        return F.ctc_loss(x.log_softmax(2), rt.tensor([[1, 2], [3, 0]]), [5, 4], [2, 1])

    assert rt.autograd.gradcheck(fn, (x,))


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("flat_targets", [False, True])
def test_ctc_loss_matches_torch(reduction, flat_targets):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    lp = torch.randn(12, 3, 5, dtype=torch.float64).log_softmax(2).requires_grad_()
    targets = torch.tensor([[1, 2, 2, 4], [3, 1, 0, 0], [1, 1, 1, 1]])
    in_lens, tgt_lens = torch.tensor([12, 10, 7]), torch.tensor([4, 2, 0])
    if flat_targets:
        targets = torch.cat([targets[0], targets[1, :2]])
    lr = rt.tensor(lp.detach().numpy(), requires_grad=True)
    args_r = (rt.tensor(targets.numpy()), rt.tensor(in_lens.numpy()), rt.tensor(tgt_lens.numpy()))
    yt = torch.nn.functional.ctc_loss(lp, targets, in_lens, tgt_lens, reduction=reduction)
    yr = F.ctc_loss(lr, *args_r, reduction=reduction)
    np.testing.assert_allclose(_np(yr), yt.detach().numpy(), rtol=1e-10)
    (yt * 1.5).sum().backward()
    (yr * 1.5).sum().backward()  # log_probs.grad of a leaf: torch's formula too
    np.testing.assert_allclose(_np(lr.grad), lp.grad.numpy(), rtol=1e-9, atol=1e-12)


# ------------------------------------------------- MultiheadAttention extra keys and values


def test_mha_add_zero_attn_gives_each_query_a_zero_key_and_value():
    mha = rt.nn.MultiheadAttention(2, 1, add_zero_attn=True, bias=False)
    with rt.no_grad():
        mha.in_proj_weight.copy_(rt.cat([rt.zeros(2, 2), rt.eye(2), rt.eye(2)]))
        mha.out_proj.weight.copy_(rt.eye(2))
    key = rt.tensor([[[1.0, 2.0]]])  # (S=1, N=1, E=2); q = 0: both scores are 0
    out, weights = mha(rt.zeros(1, 1, 2), key, key)
    assert weights.tolist() == [[[0.5, 0.5]]]  # the key and the added zero key
    np.testing.assert_allclose(_np(out), [[[0.5, 1.0]]])
    biased = rt.nn.MultiheadAttention(4, 2, add_bias_kv=True)
    assert list(biased.state_dict())[:4] == ["in_proj_weight", "in_proj_bias", "bias_k",
                                             "bias_v"]
    assert biased(rt.randn(3, 2, 4), rt.randn(5, 2, 4), rt.randn(5, 2, 4))[1].shape == (2, 3, 6)


@pytest.mark.parametrize("bias_kv,zero_attn", [(True, False), (False, True), (True, True)])
def test_mha_add_bias_kv_and_zero_attn_match_torch(bias_kv, zero_attn):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    kw = dict(add_bias_kv=bias_kv, add_zero_attn=zero_attn)
    tm, rm = torch.nn.MultiheadAttention(8, 2, **kw), rt.nn.MultiheadAttention(8, 2, **kw)
    _load_from_torch(rm, tm)
    q, k = torch.randn(4, 2, 8, requires_grad=True), torch.randn(5, 2, 8)
    kpm = torch.tensor([[False, False, True, False, True], [False] * 5])
    mask = torch.rand(4, 5) > 0.6
    ot, wt = tm(q, k, k, key_padding_mask=kpm, attn_mask=mask, average_attn_weights=False)
    qr = rt.tensor(q.detach().numpy(), requires_grad=True)
    orr, wr = rm(qr, rt.tensor(k.numpy()), rt.tensor(k.numpy()),
                 key_padding_mask=rt.tensor(kpm.numpy()), attn_mask=rt.tensor(mask.numpy()),
                 average_attn_weights=False)
    np.testing.assert_allclose(_np(orr), ot.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(wr), wt.detach().numpy(), rtol=1e-5, atol=1e-6)
    (ot ** 2).sum().backward()
    (orr ** 2).sum().backward()
    np.testing.assert_allclose(_np(qr.grad), q.grad.numpy(), rtol=1e-4, atol=1e-5)
    if bias_kv:
        np.testing.assert_allclose(_np(rm.bias_k.grad), tm.bias_k.grad.numpy(), rtol=1e-4,
                                   atol=1e-5)


# ------------------------------------------------- rrelu, in-place forms, upsample aliases


def test_rrelu_slopes_and_the_in_place_functional_forms():
    x = rt.tensor([-2.0, 0.5])
    assert F.rrelu(x, 0.1, 0.3).tolist() == pytest.approx([-0.4, 0.5])  # eval: the mean
    y = rt.nn.RReLU(0.1, 0.3)(-rt.ones(1000)).numpy()  # training: one slope per element
    assert (y <= -0.1 + 1e-6).all() and (y >= -0.3 - 1e-6).all() and y.std() > 0.03
    assert repr(rt.nn.RReLU(0.1, 0.3, inplace=True)) == "RReLU(lower=0.1, upper=0.3, inplace=True)"
    for name, args, want in [("relu_", (), [0.0, 0.5]), ("elu_", (1.0,), [np.expm1(-2), 0.5]),
                             ("leaky_relu_", (0.5,), [-1.0, 0.5]),
                             ("hardtanh_", (-1.0, 0.25), [-1.0, 0.25]),
                             ("threshold_", (0.0, 7.0), [7.0, 0.5])]:
        t = rt.tensor([-2.0, 0.5])
        assert getattr(F, name)(t, *args) is t, name
        np.testing.assert_allclose(t.numpy(), want, rtol=1e-6, err_msg=name)


def test_deprecated_upsample_functions_warn_and_interpolate():
    x = rt.arange(4.0).reshape(1, 1, 2, 2)
    with pytest.warns(UserWarning, match="`nn.functional.upsample_bilinear` is deprecated"):
        y = F.upsample_bilinear(x, scale_factor=2)
    np.testing.assert_allclose(_np(y), _np(F.interpolate(x, scale_factor=2, mode="bilinear",
                                                         align_corners=True)))
    with pytest.warns(UserWarning, match="`nn.functional.upsample_nearest` is deprecated"):
        assert F.upsample_nearest(x, size=4).shape == (1, 1, 4, 4)
    with pytest.warns(UserWarning, match="`nn.functional.upsample` is deprecated"):
        assert F.upsample(x, scale_factor=3).shape == (1, 1, 6, 6)


# ---------------------------------------------------------------------------- 3-d pools


def test_3d_pools_by_hand():
    x = rt.arange(16.0).reshape(1, 2, 2, 2, 2)  # two channels of a 2x2x2 cube
    values, indices = F.max_pool3d(x, 2, return_indices=True)
    assert values.tolist() == [[[[[7.0]]], [[[15.0]]]]] and indices.tolist() == [[[[[7]]],
                                                                                  [[[7]]]]]
    assert F.avg_pool3d(x, 2).tolist() == [[[[[3.5]]], [[[11.5]]]]]
    padded = F.avg_pool3d(x[:, :1], 2, padding=1, count_include_pad=False)
    assert padded[0, 0, 0, 0, 0].item() == 0.0 and padded.shape == (1, 1, 2, 2, 2)
    assert F.adaptive_avg_pool3d(x, (1, 1, 2)).tolist() == [[[[[3.0, 4.0]]], [[[11.0, 12.0]]]]]
    v, i = rt.nn.AdaptiveMaxPool3d(1, return_indices=True)(x[0])
    assert v.tolist() == [[[[7.0]]], [[[15.0]]]] and i.tolist() == [[[[7]]], [[[7]]]]
    with pytest.raises(RuntimeError, match="non-empty 4D or 5D \\(batch mode\\) tensor"):
        F.max_pool3d(rt.ones(2, 3, 4), 2)


@pytest.mark.parametrize("kw", [{"kernel_size": 3, "stride": 2, "padding": 1,
                                 "ceil_mode": True},
                                {"kernel_size": (2, 3, 2), "stride": (1, 2, 2)}])
def test_3d_pools_match_torch(kw):
    torch = pytest.importorskip("torch")
    xt = torch.randn(2, 3, 6, 7, 5, dtype=torch.float64, requires_grad=True)
    xr = rt.tensor(xt.detach().numpy(), requires_grad=True)
    tf = torch.nn.functional
    for name, extra in (("max_pool3d", {"dilation": (2, 1, 1)}),
                        ("avg_pool3d", {"count_include_pad": False}),
                        ("adaptive_avg_pool3d", None), ("adaptive_max_pool3d", None)):
        args = {"output_size": (4, 5, 3)} if extra is None else {**kw, **extra}
        if name == "max_pool3d" and kw.get("padding"):
            args.pop("dilation")
        yt, yr = getattr(tf, name)(xt, **args), getattr(F, name)(xr, **args)
        np.testing.assert_allclose(_np(yr), yt.detach().numpy(), rtol=1e-12, err_msg=name)
        xt.grad, xr.grad = None, None
        (yt ** 2).sum().backward()
        (yr ** 2).sum().backward()
        np.testing.assert_allclose(_np(xr.grad), xt.grad.numpy(), rtol=1e-12, err_msg=name)
        if name.endswith("max_pool3d"):
            it = getattr(tf, name)(xt, **args, return_indices=True)[1]
            ir = getattr(F, name)(xr, **args, return_indices=True)[1]
            np.testing.assert_array_equal(_np(ir), it.numpy())


# -------------------------------------- 3-d pads, channel shuffle, LRN, triplet w/ distance


def test_3d_pads_channel_shuffle_local_response_norm_and_triplet_with_distance():
    x = rt.ones(1, 1, 1, 1, 1)
    assert rt.nn.ZeroPad3d(1)(x).shape == (1, 1, 3, 3, 3)
    assert float(rt.nn.ConstantPad3d((0, 0, 0, 0, 1, 0), 2.0)(x)[0, 0, 0, 0, 0]) == 2.0
    assert rt.nn.ReplicationPad3d(1)(x).sum().item() == 27.0
    shuffled = rt.nn.ChannelShuffle(2)(rt.arange(6.0).reshape(1, 6, 1))
    assert shuffled.flatten().tolist() == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    with pytest.raises(RuntimeError, match="Got 5 channels and 2 groups"):
        F.channel_shuffle(rt.ones(1, 5, 1), 2)
    ch = rt.tensor([[[1.0], [2.0], [3.0]]])  # (N=1, C=3, L=1), size 2: channels c-1, c
    lrn = F.local_response_norm(ch, 2, alpha=1.0, beta=1.0, k=1.0)
    want = [1 / (1 + 0.5), 2 / (1 + 2.5), 3 / (1 + 6.5)]  # mean of (0,1), (1,4), (4,9)
    np.testing.assert_allclose(lrn.flatten().numpy(), want, rtol=1e-6)
    assert repr(rt.nn.LocalResponseNorm(3)) == "LocalResponseNorm(3, alpha=0.0001, beta=0.75, k=1.0)"
    a, p, n = rt.zeros(1, 2), rt.tensor([[3.0, 4.0]]), rt.tensor([[1.0, 0.0]])
    loss = F.triplet_margin_with_distance_loss(
        a, p, n, distance_function=lambda u, v: (u - v).abs().sum(-1), margin=1.0)
    assert loss.item() == 7.0  # 1 + 7 - 1
    with pytest.raises(ValueError, match="expected margin to be greater than 0, got 0"):
        rt.nn.TripletMarginWithDistanceLoss(margin=0)


def test_local_response_norm_matches_torch():
    torch = pytest.importorskip("torch")
    for shape in ((2, 6, 5), (2, 6, 3, 4), (2, 6, 3, 2, 2)):
        xt = torch.randn(*shape, dtype=torch.float64, requires_grad=True)
        xr = rt.tensor(xt.detach().numpy(), requires_grad=True)
        yt = torch.nn.functional.local_response_norm(xt, 3, 0.1, 0.5, 2.0)
        yr = F.local_response_norm(xr, 3, 0.1, 0.5, 2.0)
        np.testing.assert_allclose(_np(yr), yt.detach().numpy(), rtol=1e-12)
        yt.pow(2).sum().backward()
        yr.pow(2).sum().backward()
        np.testing.assert_allclose(_np(xr.grad), xt.grad.numpy(), rtol=1e-10)


def test_conv_transpose3d_by_hand():
    w = rt.ones(1, 1, 2, 1, 1)
    x = rt.tensor([1.0, 10.0]).reshape(1, 1, 2, 1, 1)
    # stride 2: depth i lands at 2i and 2i + 1 (the two taps)
    assert F.conv_transpose3d(x, w, stride=2).flatten().tolist() == [1.0, 1.0, 10.0, 10.0]
    # stride 1: the taps overlap at depth 1; padding 1 crops one plane each side
    assert F.conv_transpose3d(x, w).flatten().tolist() == [1.0, 11.0, 10.0]
    assert F.conv_transpose3d(x, w, padding=(1, 0, 0)).flatten().tolist() == [11.0]


@pytest.mark.parametrize("kw", [{"stride": (2, 1, 2), "padding": (1, 0, 1),
                                 "output_padding": (1, 0, 1)},
                                {"groups": 2, "bias": False, "stride": 3, "padding": 2,
                                 "dilation": (2, 1, 1)}])
def test_conv_transpose3d_matches_torch(kw):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    tm = torch.nn.ConvTranspose3d(4, 6, (3, 2, 3), **kw)
    rm = rt.nn.ConvTranspose3d(4, 6, (3, 2, 3), **kw)
    _load_from_torch(rm, tm)
    assert repr(rm) == repr(tm)
    xt = torch.randn(2, 4, 3, 4, 3, requires_grad=True)
    xr = rt.tensor(xt.detach().numpy(), requires_grad=True)
    yt, yr = tm(xt), rm(xr)
    np.testing.assert_allclose(_np(yr), yt.detach().numpy(), rtol=1e-5, atol=1e-5)
    (yt * yt).sum().backward()
    (yr * yr).sum().backward()
    np.testing.assert_allclose(_np(xr.grad), xt.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(_np(rm.weight.grad), tm.weight.grad.numpy(), rtol=1e-4, atol=1e-3)


# -------------------------------------------------- power pools, unpools, alpha dropout


def test_lp_pool_max_unpool_and_feature_alpha_dropout():
    x = rt.tensor([[[3.0, 4.0, 1.0, 1.0]]])
    np.testing.assert_allclose(_np(F.lp_pool1d(x, 2, 2)), [[[5.0, 2.0 ** 0.5]]], rtol=1e-6)
    assert F.lp_pool1d(x, float("inf"), 2).tolist() == [[[4.0, 1.0]]]
    assert repr(rt.nn.LPPool2d(2, 3)) == "LPPool2d(norm_type=2, kernel_size=3, stride=None, " \
                                          "ceil_mode=False)"
    values, indices = F.max_pool1d_with_indices(x, 2)
    assert indices.tolist() == [[[1, 2]]]
    assert F.max_unpool1d(values, indices, 2).tolist() == [[[0.0, 4.0, 1.0, 0.0]]]
    unpool = rt.nn.MaxUnpool2d(2)
    v, i = F.max_pool2d(rt.arange(16.0).reshape(1, 1, 4, 4), 2, return_indices=True)
    restored = unpool(v, i, output_size=(1, 1, 5, 5))
    assert restored.shape == (1, 1, 5, 5) and restored.sum().item() == 5 + 7 + 13 + 15
    with pytest.raises(ValueError, match="invalid output_size"):
        unpool(v, i, output_size=(9, 9))
    drop = rt.nn.FeatureAlphaDropout(0.5)
    y = drop(rt.randn(8, 50, 6)).numpy()
    constant = (y == y[:, :, :1]).all(-1)  # a dropped channel is one value throughout
    assert 0.3 < constant.mean() < 0.7
    drop.eval()
    z = rt.randn(2, 3, 4)
    assert np.array_equal(_np(drop(z)), _np(z))


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_lp_pool_and_max_unpool_match_torch(dims):
    torch = pytest.importorskip("torch")
    shape = (2, 3, *(8, 6, 4)[:dims])
    xt = torch.randn(*shape, dtype=torch.float64).abs().requires_grad_()
    xr = rt.tensor(xt.detach().numpy(), requires_grad=True)
    tf = torch.nn.functional
    yt = getattr(tf, f"lp_pool{dims}d")(xt, 3.0, 2)
    yr = getattr(F, f"lp_pool{dims}d")(xr, 3.0, 2)
    np.testing.assert_allclose(_np(yr), yt.detach().numpy(), rtol=1e-12)
    yt.sum().backward()
    yr.sum().backward()
    np.testing.assert_allclose(_np(xr.grad), xt.grad.numpy(), rtol=1e-10)
    vt, it = getattr(tf, f"max_pool{dims}d")(xt, 2, return_indices=True)
    vt = vt.detach().requires_grad_()
    vr, ir = getattr(F, f"max_pool{dims}d_with_indices")(xr.detach(), 2)
    vr.requires_grad_()
    ut = getattr(tf, f"max_unpool{dims}d")(vt, it, 2)
    ur = getattr(F, f"max_unpool{dims}d")(vr, ir, 2)
    np.testing.assert_array_equal(_np(ur), ut.detach().numpy())
    (ut * ut).sum().backward()
    (ur * ur).sum().backward()
    np.testing.assert_allclose(_np(vr.grad), vt.grad.numpy(), rtol=1e-12)


def test_compiled_ctc_step_equals_eager_with_new_lengths():
    import warnings

    import planner

    def make() -> tuple[rt.nn.Module, rt.optim.SGD]:
        rt.manual_seed(4)
        model = rt.nn.Linear(3, 5)
        return model, rt.optim.SGD(model.parameters(), lr=0.1)

    (m1, o1), (m2, o2) = make(), make()

    def step(x, targets, in_lens, tgt_lens, model=m1, opt=o1):  # noqa: ANN001
        opt.zero_grad()
        loss = F.ctc_loss(model(x).log_softmax(2), targets, in_lens, tgt_lens)
        loss.backward()
        opt.step()
        return loss

    compiled = planner.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to eager
        for lens in ([6, 4], [5, 6], [6, 6]):
            args = (rt.randn(6, 2, 3), rt.tensor([[1, 2, 2], [3, 1, 4]]), rt.tensor(lens),
                    rt.tensor([3, lens[1] // 3]))
            np.testing.assert_allclose(float(compiled(*args)),
                                       float(step(*args, model=m2, opt=o2)), rtol=1e-5)
    np.testing.assert_allclose(_np(m1.weight), _np(m2.weight), rtol=1e-5, atol=1e-6)


# ------------------------------------------------------- pdist, multilabel margin loss


def test_pdist_and_multilabel_margin_loss_by_hand():
    pts = rt.tensor([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]])
    np.testing.assert_allclose(_np(F.pdist(pts)), [5.0, 1.0, 18.0 ** 0.5], rtol=1e-6)
    with pytest.raises(RuntimeError, match="pdist only supports 2D tensors, got: 3D"):
        F.pdist(rt.ones(1, 2, 3))
    x = rt.tensor([[0.1, 0.2, 0.4, 0.8]])
    y = rt.tensor([[3, 0, -1, 1]])  # targets 3 and 0; the -1 ends the list
    # PyTorch's docs example: (hinge terms over classes 1 and 2) / 4 = 0.85
    assert abs(F.multilabel_margin_loss(x, y).item() - 0.85) < 1e-6
    assert rt.nn.MultiLabelMarginLoss(reduction="none")(x[0], y[0]).shape == ()


def test_pdist_and_multilabel_margin_loss_match_torch():
    torch = pytest.importorskip("torch")
    xt = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    xr = rt.tensor(xt.detach().numpy(), requires_grad=True)
    for p in (1.0, 2.0, float("inf")):
        xt.grad, xr.grad = None, None
        yt, yr = torch.nn.functional.pdist(xt, p), F.pdist(xr, p)
        np.testing.assert_allclose(_np(yr), yt.detach().numpy(), rtol=1e-12)
        yt.sum().backward()
        yr.sum().backward()
        np.testing.assert_allclose(_np(xr.grad), xt.grad.numpy(), rtol=1e-12)
    target = [[3, 0, -1, 1], [1, 2, 3, 0], [-1, 1, 2, 3], [0, 0, -1, 2]]
    st = torch.randn(4, 4, dtype=torch.float64, requires_grad=True)
    sr = rt.tensor(st.detach().numpy(), requires_grad=True)
    lt = torch.nn.functional.multilabel_margin_loss(st, torch.tensor(target), reduction="none")
    lr = F.multilabel_margin_loss(sr, rt.tensor(target), reduction="none")
    np.testing.assert_allclose(_np(lr), lt.detach().numpy(), rtol=1e-12)
    (lt * torch.arange(1.0, 5.0, dtype=torch.float64)).sum().backward()
    (lr * rt.arange(1.0, 5.0, dtype=rt.float64)).sum().backward()
    np.testing.assert_allclose(_np(sr.grad), st.grad.numpy(), rtol=1e-12)


# --------------------------------------------------------------- affine_grid, grid_sample


def test_affine_grid_identity_and_grid_sample_by_hand():
    theta = rt.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    grid = F.affine_grid(theta, [1, 1, 2, 3], align_corners=True)
    assert grid[0, :, :, 0].tolist() == [[-1.0, 0.0, 1.0]] * 2
    assert grid[0, :, 0, 1].tolist() == [-1.0, 1.0]
    img = rt.arange(6.0).reshape(1, 1, 2, 3)
    same = F.grid_sample(img, grid, align_corners=True)
    np.testing.assert_allclose(_np(same), _np(img), atol=1e-6)
    half = rt.tensor([[[[-0.5, 0.0], [2.0, 0.0]]]])  # x between columns 0 and 1; x off the edge
    out = F.grid_sample(img, half, align_corners=True)
    np.testing.assert_allclose(_np(out), [[[[2.0, 0.0]]]], atol=1e-6)  # row y = 0.5: 1.5 + 3/2
    border = F.grid_sample(img, half, padding_mode="border", align_corners=True)
    np.testing.assert_allclose(_np(border), [[[[2.0, 3.5]]]], atol=1e-6)
    with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior"):
        F.affine_grid(theta, [1, 1, 2, 3])
    with pytest.raises(ValueError, match="expected padding_mode to be 'zeros', 'border', or"):
        F.grid_sample(img, half, padding_mode="wrap", align_corners=False)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_matches_torch(mode, padding_mode, align_corners):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    theta = torch.randn(2, 2, 3, dtype=torch.float64, requires_grad=True)
    img = torch.randn(2, 3, 5, 6, dtype=torch.float64, requires_grad=True)
    theta_r = rt.tensor(theta.detach().numpy(), requires_grad=True)
    img_r = rt.tensor(img.detach().numpy(), requires_grad=True)
    kw = dict(mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    tf = torch.nn.functional
    yt = tf.grid_sample(img, tf.affine_grid(theta, [2, 3, 4, 7], align_corners), **kw)
    yr = F.grid_sample(img_r, F.affine_grid(theta_r, [2, 3, 4, 7], align_corners), **kw)
    np.testing.assert_allclose(_np(yr), yt.detach().numpy(), rtol=1e-10, atol=1e-12)
    (yt ** 2).sum().backward()
    (yr ** 2).sum().backward()
    np.testing.assert_allclose(_np(img_r.grad), img.grad.numpy(), rtol=1e-9, atol=1e-12)
    if mode == "bilinear":  # nearest: torch's grid gradient is zeros, here there is none
        np.testing.assert_allclose(_np(theta_r.grad), theta.grad.numpy(), rtol=1e-8,
                                   atol=1e-10)
