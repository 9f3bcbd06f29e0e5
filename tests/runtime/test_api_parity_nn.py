"""Parity with PyTorch of nn, data loading, checkpoints and device utilities: DataLoader
workers, adaptive pooling sizes, 0-dim tensors saved and loaded, loss and attention edge
cases, module hooks and utilities, ``rt.cuda`` and ``rt.backends``."""

from __future__ import annotations

import io
import math
import threading
import time
import warnings

import numpy as np
import pytest

import runtime as rt
from runtime.utils.data import (
    DataLoader,
    Dataset,
    IterableDataset,
    TensorDataset,
    get_worker_info,
)

F = rt.nn.functional


def _ds(n: int = 10) -> TensorDataset:
    return TensorDataset(rt.arange(n), rt.arange(n).float() * 2)


def _batches(dl: DataLoader) -> list[list[int]]:
    return [x.tolist() for x, _ in dl]


def _close(a: rt.Tensor, b: object, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(),  # type: ignore[attr-defined]
                               rtol=rtol, atol=atol, equal_nan=True)


# ----------------------------------------------------------------------- DataLoader workers


@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize("shuffle", [False, True])
def test_workers_yield_the_batches_of_the_main_thread_in_order(workers, shuffle):
    def order(**kw) -> list[list[int]]:
        return _batches(DataLoader(_ds(23), batch_size=4, shuffle=shuffle,
                                   generator=rt.Generator().manual_seed(5), **kw))

    want = order()
    assert order(num_workers=workers) == want
    assert order(num_workers=workers, prefetch_factor=1) == want
    assert sorted(i for b in want for i in b) == list(range(23))


class _Slow(Dataset):
    """Item i sleeps (i % 3) ms, so worker threads finish out of order."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.threads: set[str] = set()

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> int:
        self.threads.add(threading.current_thread().name)
        time.sleep((i % 3) / 1000)
        return i


def test_workers_are_threads_and_fetch_concurrently():
    ds = _Slow(24)
    got = [b.tolist() for b in DataLoader(ds, batch_size=2, num_workers=3)]
    assert got == [[i, i + 1] for i in range(0, 24, 2)]
    assert len(ds.threads) == 3 and threading.current_thread().name not in ds.threads
    out_of_order = [b.tolist() for b in DataLoader(ds, batch_size=2, num_workers=3,
                                                   in_order=False)]
    assert sorted(i for b in out_of_order for i in b) == list(range(24))


def test_worker_info_and_init_fn():
    seen: dict[int, tuple[int, int, object]] = {}
    lock = threading.Lock()

    class Info(Dataset):
        def __len__(self) -> int:
            return 8

        def __getitem__(self, i: int) -> int:
            info = get_worker_info()
            with lock:
                seen[i] = (info.id, info.num_workers, info.dataset)
            return info.seed

    inits: list[int] = []
    ds = Info()
    dl = DataLoader(ds, batch_size=1, num_workers=2, worker_init_fn=inits.append,
                    generator=rt.Generator().manual_seed(0))
    seeds = [int(b) for b in dl]
    assert sorted(inits) == [0, 1]
    assert {v[0] for v in seen.values()} == {0, 1}
    assert all(v[1] == 2 and v[2] is ds for v in seen.values())
    # task k goes to worker k % 2, whose seed is the base seed plus its id, as PyTorch's
    assert seeds[1] - seeds[0] == 1 and seeds[0::2] == [seeds[0]] * 4
    info = get_worker_info()
    assert info is None
    # each worker draws from its own seeded generators, not the process's
    rng_draws = []

    class Draw(Dataset):
        def __len__(self) -> int:
            return 4

        def __getitem__(self, i: int) -> float:
            return float(get_worker_info().rng.numpy_generator.random())

    for _ in range(2):
        rng_draws.append([float(b) for b in DataLoader(
            Draw(), batch_size=1, num_workers=2, generator=rt.Generator().manual_seed(1))])
    assert rng_draws[0] == rng_draws[1]


def test_iterable_dataset_split_by_worker_info_matches_torch():
    class Stream(IterableDataset):
        def __iter__(self):
            info = get_worker_info()
            if info is None:
                return iter(range(11))
            return iter(range(info.id, 11, info.num_workers))

    got = [b.tolist() for b in DataLoader(Stream(), batch_size=2, num_workers=2)]
    assert got == [[0, 2], [1, 3], [4, 6], [5, 7], [8, 10], [9]]
    dropped = [b.tolist() for b in DataLoader(Stream(), batch_size=2, num_workers=2,
                                              drop_last=True)]
    assert dropped == [[0, 2], [1, 3], [4, 6], [5, 7], [8, 10]]
    torch = pytest.importorskip("torch")

    class TStream(torch.utils.data.IterableDataset):
        def __iter__(self):
            info = torch.utils.data.get_worker_info()
            return iter(range(info.id, 11, info.num_workers))

    for drop_last in (False, True):
        want = [b.tolist() for b in torch.utils.data.DataLoader(
            TStream(), batch_size=2, num_workers=2, drop_last=drop_last)]
        assert want == (dropped if drop_last else got)


def test_persistent_workers_keep_their_threads_between_epochs():
    dl = DataLoader(_ds(10), batch_size=3, num_workers=2, persistent_workers=True)
    first = iter(dl)
    workers = list(first._workers)
    assert _batches(first) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert all(t.is_alive() for t in workers)
    second = iter(dl)
    assert second is first and second._workers == workers
    assert _batches(second) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    # a new epoch after a partial one starts from the beginning
    it = iter(dl)
    next(it)
    assert _batches(iter(dl)) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    transient = iter(DataLoader(_ds(10), batch_size=3, num_workers=2))
    threads = list(transient._workers)
    list(transient)
    assert not any(t.is_alive() for t in threads)


def test_a_worker_exception_is_raised_in_the_main_thread():
    class Bad(Dataset):
        def __len__(self) -> int:
            return 6

        def __getitem__(self, i: int) -> int:
            if i == 3:
                raise ValueError("bad item 3")
            return i

    it = iter(DataLoader(Bad(), batch_size=2, num_workers=2))
    assert next(it).tolist() == [0, 1]
    with pytest.raises(ValueError, match=r"Caught ValueError in DataLoader worker thread 1\."
                                         r"(.|\n)*bad item 3"):
        next(it)
    assert next(it).tolist() == [4, 5]  # as PyTorch: the iterator goes on

    def init(worker_id: int) -> None:
        raise KeyError("no init")

    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker thread"):
        list(DataLoader(_ds(4), num_workers=1, worker_init_fn=init))


def test_timeout_raises_torch_error():
    class Hang(Dataset):
        def __len__(self) -> int:
            return 2

        def __getitem__(self, i: int) -> int:
            time.sleep(0.5)
            return i

    with pytest.raises(RuntimeError, match=r"^DataLoader timed out after 0.05 seconds$"):
        list(DataLoader(Hang(), num_workers=1, timeout=0.05))
    assert [int(b) for b in DataLoader(Hang(), num_workers=2, timeout=5)] == [0, 1]


def test_worker_option_errors_match_torch():
    cases = [
        (dict(num_workers=-1), ValueError, "num_workers option should be non-negative; use "
                                           "num_workers=0 to disable multiprocessing."),
        (dict(timeout=-1), ValueError, "timeout option should be non-negative"),
        (dict(prefetch_factor=2), ValueError, "prefetch_factor option could only be specified "
                                              "in multiprocessing.let num_workers > 0 to "
                                              "enable multiprocessing, otherwise set "
                                              "prefetch_factor to None."),
        (dict(num_workers=1, prefetch_factor=-1), ValueError,
         "prefetch_factor option should be non-negative"),
        (dict(persistent_workers=True), ValueError,
         "persistent_workers option needs num_workers > 0"),
        (dict(multiprocessing_context="spawn"), ValueError,
         "multiprocessing_context can only be used with multi-process loading (num_workers > "
         "0), but got num_workers=0"),
        (dict(num_workers=1, multiprocessing_context="nope"), ValueError, None),
        (dict(num_workers=1, multiprocessing_context=3), TypeError, None),
    ]
    for kwargs, err, text in cases:
        with pytest.raises(err) as info:
            DataLoader(_ds(), **kwargs)
        if text is not None:
            assert str(info.value) == text
    with pytest.raises(AssertionError, match="prefetch_factor must be greater than 0"):
        iter(DataLoader(_ds(), num_workers=1, prefetch_factor=0))
    dl = DataLoader(_ds(4), num_workers=1, multiprocessing_context="spawn")
    assert _batches(dl) == [[0], [1], [2], [3]]
    torch = pytest.importorskip("torch")
    tds = torch.utils.data.TensorDataset(torch.arange(4))
    for kwargs, err, text in cases:
        with pytest.raises(err) as info:
            torch.utils.data.DataLoader(tds, **kwargs)
        if text is not None:
            assert str(info.value) == text


def test_pin_memory_without_a_gpu_warns_as_torch():
    if rt.cuda.is_available():
        pytest.skip("a GPU is here: batches are pinned")
    text = ("'pin_memory' argument is set as true but no accelerator is found, then device "
            "pinned memory won't be used.")
    for workers in (0, 2):
        with pytest.warns(UserWarning, match="no accelerator is found") as record:
            got = _batches(DataLoader(_ds(4), batch_size=2, pin_memory=True,
                                      num_workers=workers))
        assert str(record[0].message) == text and got == [[0, 1], [2, 3]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DataLoader(_ds(4), pin_memory=True)  # the warning comes with iteration, as torch's
    torch = pytest.importorskip("torch")
    if torch.accelerator.is_available():
        return
    with pytest.warns(UserWarning) as record:
        list(torch.utils.data.DataLoader(torch.arange(4), pin_memory=True))
    assert text in [str(r.message) for r in record]


def test_dataloader_signature_matches_torch():
    torch = pytest.importorskip("torch")
    import inspect

    ours = inspect.signature(DataLoader.__init__).parameters
    theirs = inspect.signature(torch.utils.data.DataLoader.__init__).parameters
    assert list(ours) == list(theirs)
    for name, p in theirs.items():
        assert ours[name].kind == p.kind, name
        assert ours[name].default == p.default, name


def test_collate_fn_and_generator_are_honoured():
    dl = DataLoader(_ds(6), batch_size=3, collate_fn=lambda b: [int(x) for x, _ in b],
                    num_workers=2)
    assert list(dl) == [[0, 1, 2], [3, 4, 5]]
    a = _batches(DataLoader(_ds(9), batch_size=3, shuffle=True, num_workers=2,
                            generator=rt.Generator().manual_seed(7)))
    b = _batches(DataLoader(_ds(9), batch_size=3, shuffle=True, num_workers=0,
                            generator=rt.Generator().manual_seed(7)))
    assert a == b


# ----------------------------------------------------------------------- adaptive pooling


@pytest.mark.parametrize("size,want", [((2, None), (1, 1, 2, 4)), ((None, 3), (1, 1, 3, 3)),
                                       ((None, None), (1, 1, 3, 4)), (2, (1, 1, 2, 2))])
def test_adaptive_pool_none_keeps_the_input_size(size, want):
    x = rt.arange(12.0).reshape(1, 1, 3, 4)
    for layer in (rt.nn.AdaptiveAvgPool2d(size), rt.nn.AdaptiveMaxPool2d(size)):
        assert tuple(layer(x).shape) == want
        assert tuple(layer(x[0]).shape) == want[1:]
    assert tuple(F.adaptive_avg_pool2d(x, size).shape) == want
    assert tuple(F.adaptive_max_pool2d(x, size).shape) == want
    torch = pytest.importorskip("torch")
    tx = torch.arange(12.0).reshape(1, 1, 3, 4)
    _close(rt.nn.AdaptiveAvgPool2d(size)(x), torch.nn.AdaptiveAvgPool2d(size)(tx))
    _close(rt.nn.AdaptiveMaxPool2d(size)(x), torch.nn.AdaptiveMaxPool2d(size)(tx))


def test_adaptive_pool_bad_sizes_raise_as_torch():
    x = rt.ones(1, 1, 3, 4)
    with pytest.raises(RuntimeError, match="adaptive_avg_pool2d: output_size must be 2"):
        F.adaptive_avg_pool2d(x, (1, 2, 3))
    with pytest.raises(TypeError):
        F.adaptive_avg_pool2d(x, None)


# ----------------------------------------------------------------------- 0-dim checkpoints


def test_save_load_keeps_zero_dim_tensors():
    b = io.BytesIO()
    rt.save({"loss": rt.tensor(2.5), "n": rt.tensor(3), "v": rt.arange(6).reshape(2, 3).t()}, b)
    b.seek(0)
    got = rt.load(b)
    assert got["loss"].shape == () and got["loss"].item() == 2.5
    assert got["n"].shape == () and got["n"].dtype == rt.int64
    assert got["v"].tolist() == [[0, 3], [1, 4], [2, 5]]


def test_safetensors_keeps_zero_dim_tensors():
    from runtime import safetensors

    got = safetensors.load(safetensors.save({"s": rt.tensor(1.5), "m": rt.ones(2, 2)}))
    assert got["s"].shape == () and got["s"].item() == 1.5 and got["m"].shape == (2, 2)


def test_optimizer_state_round_trip_keeps_step_zero_dim():
    m = rt.nn.Linear(2, 2)
    opt = rt.optim.Adam(m.parameters())
    m(rt.ones(1, 2)).sum().backward()
    opt.step()
    b = io.BytesIO()
    rt.save(opt.state_dict(), b)
    b.seek(0)
    state = rt.load(b)["state"][0]
    assert state["step"].shape == () and state["step"].item() == 1.0
    opt2 = rt.optim.Adam(m.parameters())
    opt2.load_state_dict(rt.load(io.BytesIO(b.getvalue())))
    assert opt2.state_dict()["state"][0]["step"].shape == ()


# ----------------------------------------------------------------------- binary_cross_entropy


def _bce_pair(x, t, dtype: str, reduction: str = "mean", weight=None):
    torch = pytest.importorskip("torch")
    tdt = getattr(torch, dtype)
    rx = rt.tensor(np.array(x), dtype=getattr(rt, dtype), requires_grad=True)
    rtg = rt.tensor(np.array(t), dtype=getattr(rt, dtype), requires_grad=True)
    tx = torch.tensor(np.array(x), dtype=tdt, requires_grad=True)
    ttg = torch.tensor(np.array(t), dtype=tdt, requires_grad=True)
    rw = None if weight is None else rt.tensor(np.array(weight), dtype=getattr(rt, dtype))
    tw = None if weight is None else torch.tensor(np.array(weight), dtype=tdt)
    rl = F.binary_cross_entropy(rx, rtg, weight=rw, reduction=reduction)
    tl = torch.nn.functional.binary_cross_entropy(tx, ttg, weight=tw, reduction=reduction)
    scale = np.linspace(1, 2, max(rl.numel(), 1)).reshape(rl.shape)
    (rl * rt.tensor(scale, dtype=rl.dtype)).sum().backward()
    (tl * torch.tensor(scale, dtype=tdt)).sum().backward()
    return rl, tl, rx.grad, tx.grad, rtg.grad, ttg.grad


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_bce_at_zero_and_one_has_torch_loss_and_gradient(dtype):
    x, t = [1.0, 0.0, 0.5, 1.0, 0.0], [1.0, 0.0, 1.0, 0.0, 1.0]
    rx = rt.tensor(x, dtype=getattr(rt, dtype), requires_grad=True)
    loss = F.binary_cross_entropy(rx, rt.tensor(t, dtype=getattr(rt, dtype)), reduction="sum")
    loss.backward()
    # 0 + 0 + log 2 + 100 + 100 (logs clamped at -100); gradients (x - t) / max(x(1-x), eps)
    assert loss.item() == pytest.approx(200 + math.log(2), rel=1e-6)
    eps = float(np.float32(1e-12))
    np.testing.assert_allclose(rx.grad.numpy(), [0, 0, -2, 1 / eps, -1 / eps], rtol=1e-6)
    for reduction in ("mean", "sum", "none"):
        rl, tl, rgx, tgx, rgt, tgt = _bce_pair(x, t, dtype, reduction, weight=[1, 2, 3, 4, 5])
        _close(rl, tl)
        _close(rgx, tgx, rtol=1e-6)
        finite = np.isfinite(tgt.numpy())  # PyTorch's target gradient at x = 0, 1 is ±inf
        assert np.all(np.sign(rgt.numpy()) == np.sign(tgt.numpy()))
        np.testing.assert_allclose(rgt.numpy()[finite], tgt.numpy()[finite], rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_bce_gradients_match_torch_on_random_and_tiny_inputs(dtype, reduction):
    rng = np.random.default_rng(0)
    x, t = rng.uniform(0, 1, 64), rng.uniform(0, 1, 64)
    x[:6] = [1e-30, 1e-13, 1e-11, 1e-8, 1 - 1e-7, 0.5]
    t[:3] = [1.0, 0.3, 0.6]
    rl, tl, rgx, tgx, rgt, tgt = _bce_pair(x.tolist(), t.tolist(), dtype, reduction)
    tol = 1e-5 if dtype == "float32" else 1e-10
    _close(rl, tl, rtol=tol)
    _close(rgx, tgx, rtol=tol, atol=0)
    _close(rgt, tgt, rtol=tol, atol=tol)


def test_bce_second_derivative_matches_torch():
    x = rt.tensor([0.3, 0.7], dtype=rt.float64, requires_grad=True)
    t = rt.tensor([0.2, 1.0], dtype=rt.float64)
    (g,) = rt.autograd.grad(F.binary_cross_entropy(x, t), x, create_graph=True)
    (h,) = rt.autograd.grad(g.sum(), x)
    # d2/dx2 of -(t log x + (1-t) log(1-x)) / 2 = (t / x^2 + (1-t) / (1-x)^2) / 2
    xs, ts = np.array([0.3, 0.7]), np.array([0.2, 1.0])
    np.testing.assert_allclose(h.numpy(), (ts / xs**2 + (1 - ts) / (1 - xs) ** 2) / 2)


@pytest.mark.parametrize("bad", [1.5, -0.1, float("nan")])
def test_bce_input_outside_zero_one_raises_torch_error(bad):
    with pytest.raises(RuntimeError, match="^all elements of input should be between 0 and 1$"):
        F.binary_cross_entropy(rt.tensor([0.5, bad]), rt.tensor([1.0, 1.0]))
    with pytest.raises(RuntimeError, match="^all elements of input should be between 0 and 1$"):
        rt.nn.BCELoss()(rt.tensor([bad]), rt.tensor([1.0]))
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match="^all elements of input should be between 0 and 1$"):
        torch.nn.functional.binary_cross_entropy(torch.tensor([0.5, bad]), torch.ones(2))


# ----------------------------------------------------------------------- attention masks


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kind", ["bool", "float"])
def test_sdpa_fully_masked_row_is_zero_with_zero_gradient(dtype, kind):
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal(s) for s in ((1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4)))
    keep = np.ones((3, 5), bool)
    keep[1] = False
    keep[2, 1] = False
    mask = keep if kind == "bool" else np.where(keep, 0.0, -np.inf)
    rdt = getattr(rt, dtype)
    rq, rk, rv = (rt.tensor(a, dtype=rdt, requires_grad=True) for a in (q, k, v))
    rmask = rt.tensor(mask) if kind == "bool" else rt.tensor(mask, dtype=rdt)
    out = F.scaled_dot_product_attention(rq, rk, rv, attn_mask=rmask)
    (out * out).sum().backward()
    assert np.all(out.detach().numpy()[:, :, 1] == 0)
    assert np.all(rq.grad.numpy()[:, :, 1] == 0)
    assert np.isfinite(rk.grad.numpy()).all() and np.isfinite(rv.grad.numpy()).all()
    torch = pytest.importorskip("torch")
    tdt = getattr(torch, dtype)
    tq, tk, tv = (torch.tensor(a, dtype=tdt, requires_grad=True) for a in (q, k, v))
    tmask = torch.tensor(mask) if kind == "bool" else torch.tensor(mask, dtype=tdt)
    tout = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, attn_mask=tmask)
    (tout * tout).sum().backward()
    _close(out, tout)
    for a, b in ((rq, tq), (rk, tk), (rv, tv)):
        _close(a.grad, b.grad)


def test_mha_all_padded_keys_match_torch_with_and_without_weights():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    tm = torch.nn.MultiheadAttention(4, 2, batch_first=True)
    m = rt.nn.MultiheadAttention(4, 2, batch_first=True)
    m.load_state_dict({k: rt.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x = torch.randn(2, 3, 4)
    pad = torch.tensor([[False, False, True], [True, True, True]])
    rx = rt.tensor(x.numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's, on the NaN path
        for need_weights in (True, False):
            tout, tw = tm(x, x, x, key_padding_mask=pad, need_weights=need_weights)
            out, w = m(rx, rx, rx, key_padding_mask=rt.tensor(pad.numpy()),
                       need_weights=need_weights)
            _close(out, tout)  # NaN rows with weights (softmax), zero ones without (sdpa)
            assert np.isnan(out.detach().numpy()[1]).all() == need_weights
            if need_weights:
                _close(w, tw)


# ----------------------------------------------------------------------- ignored targets


@pytest.mark.parametrize("kwargs", [{}, {"label_smoothing": 0.1}, {"weight": [0.5, 1, 2, 3]},
                                    {"weight": [0.5, 1, 2, 3], "label_smoothing": 0.2}])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_all_ignored_targets_give_nan_loss_and_zero_gradient(kwargs, dtype):
    rng = np.random.default_rng(2)
    logits = rng.standard_normal((3, 4))
    x = rt.tensor(logits, dtype=getattr(rt, dtype), requires_grad=True)
    kw = dict(kwargs)
    if "weight" in kw:
        kw["weight"] = rt.tensor(kw["weight"], dtype=getattr(rt, dtype))
    loss = F.cross_entropy(x, rt.tensor([-100, -100, -100]), **kw)
    loss.backward()
    assert math.isnan(loss.item()) and np.all(x.grad.numpy() == 0)
    x.grad = None
    nll = F.nll_loss(x, rt.tensor([7, 7, 7]), ignore_index=7)
    nll.backward()
    assert math.isnan(nll.item()) and np.all(x.grad.numpy() == 0)
    # partly ignored: unchanged
    x.grad = None
    part = F.cross_entropy(x, rt.tensor([1, -100, 3]), **kw)
    part.backward()
    torch = pytest.importorskip("torch")
    tx = torch.tensor(logits, dtype=getattr(torch, dtype), requires_grad=True)
    tkw = dict(kwargs)
    if "weight" in tkw:
        tkw["weight"] = torch.tensor(tkw["weight"], dtype=getattr(torch, dtype))
    tpart = torch.nn.functional.cross_entropy(tx, torch.tensor([1, -100, 3]), **tkw)
    tpart.backward()
    _close(part, tpart)
    _close(x.grad, tx.grad)
    tx.grad = None
    tloss = torch.nn.functional.cross_entropy(tx, torch.tensor([-100, -100, -100]), **tkw)
    tloss.backward()
    assert math.isnan(tloss.item()) and torch.all(tx.grad == 0)
