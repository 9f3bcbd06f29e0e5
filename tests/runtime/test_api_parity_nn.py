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
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # numpy's 0/0
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


# ----------------------------------------------------------------------- module API


def _linear_pair(torch):
    m = rt.nn.Linear(3, 2)
    tm = torch.nn.Linear(3, 2)
    w = np.arange(6.0, dtype=np.float32).reshape(2, 3) / 10
    with rt.no_grad():
        m.weight.copy_(rt.tensor(w))
        m.bias.zero_()
    with torch.no_grad():
        tm.weight.copy_(torch.tensor(w))
        tm.bias.zero_()
    return m, tm


def _as_lists(grads):
    return [None if g is None else g.tolist() for g in grads]


def test_full_backward_hooks_see_and_replace_gradients_as_torch():
    torch = pytest.importorskip("torch")

    def run(lib, m):
        log = []

        def pre(mod, grad_output):
            log.append(("pre", _as_lists(grad_output)))
            return (grad_output[0] * 2,)

        def hook(mod, grad_input, grad_output):
            log.append(("hook", _as_lists(grad_input), _as_lists(grad_output)))
            return None if grad_input[0] is None else (grad_input[0] * 3,)

        m.register_full_backward_pre_hook(pre)
        handle = m.register_full_backward_hook(hook)
        x = lib.ones(1, 3, requires_grad=True)
        (m(x) * lib.tensor([[1.0, 2.0]])).sum().backward()
        log.append(("grads", x.grad.tolist(), m.weight.grad.tolist()))
        with warnings.catch_warnings(record=True) as caught:  # no input needs a gradient
            warnings.simplefilter("always")
            m(lib.ones(1, 3)).sum().backward()
        log.append(("warned", ["no inputs require gradients" in str(w.message)
                               for w in caught]))
        handle.remove()
        m.weight.grad = None
        m(x).sum().backward()
        log.append(("removed", m.weight.grad.tolist()))
        return log

    m, tm = _linear_pair(torch)
    ours, theirs = run(rt, m), run(torch, tm)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a[0] == b[0]
        np.testing.assert_allclose(np.array(_flat(a[1:]), float),
                                   np.array(_flat(b[1:]), float), rtol=1e-6)


def _flat(x):
    if isinstance(x, (list, tuple)):
        return [v for item in x for v in _flat(item)]
    return [np.nan if x is None else x]


def test_full_backward_hook_on_several_inputs_and_outputs():
    torch = pytest.importorskip("torch")

    def run(lib):
        seen = []

        class Two(lib.nn.Module):
            def forward(self, a, k, b):
                return a * b, a + k

        two = Two()
        two.register_full_backward_hook(
            lambda mod, gi, go: seen.append((_as_lists(gi), _as_lists(go))))
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        p, _ = two(a, 5, lib.tensor([3.0, 4.0]))
        p.sum().backward()
        return seen

    # grad_input: a's gradient, None for the int, PyTorch's zeros for b (no gradient)
    assert run(rt) == run(torch) == [([[3.0, 4.0], None, [0.0, 0.0]], [[1.0, 1.0], None])]


def test_backward_hook_errors_match_torch():
    torch = pytest.importorskip("torch")
    for lib in (rt, torch):
        m = lib.nn.Linear(2, 2)
        m.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
        with pytest.raises(RuntimeError, match="Backward hook returned an invalid number of "
                                               "grad_input, got 2, but expected 1"):
            m(lib.ones(1, 2, requires_grad=True)).sum().backward()
        m2 = lib.nn.Linear(2, 2)
        m2.register_full_backward_pre_hook(lambda mod, go: (go[0], go[0]))
        with pytest.raises(RuntimeError, match="Backward pre hook returned an invalid number "
                                               "of grad_output, got 2, but expected 1"):
            m2(lib.ones(1, 2, requires_grad=True)).sum().backward()


def test_a_compiled_step_with_a_backward_hook_runs_eagerly_and_says_why():
    import planner

    m = rt.nn.Linear(3, 2)
    calls = []
    m.register_full_backward_hook(lambda mod, gi, go: calls.append(1))

    @planner.compile
    def step(x):
        loss = m(x).sum()
        loss.backward()
        return loss

    x = rt.ones(2, 3, requires_grad=True)
    with pytest.warns(RuntimeWarning, match="runs eagerly: Linear has a full backward"):
        step(x)
    step(x)
    assert len(calls) == 2


def test_forward_hook_always_call_runs_when_forward_raises():
    torch = pytest.importorskip("torch")
    for lib in (rt, torch):
        m = lib.nn.Linear(2, 2)
        seen, plain = [], []
        m.register_forward_hook(lambda mod, args, out: seen.append(out), always_call=True)
        m.register_forward_hook(lambda mod, args, out: plain.append(out))
        with pytest.raises(RuntimeError):
            m(lib.ones(3))
        assert seen == [None] and plain == []
        m(lib.ones(2))
        assert len(seen) == 2 and len(plain) == 1

        def broken(mod, args, out):
            raise ValueError("hook failed")

        m.register_forward_hook(broken, always_call=True)
        with pytest.warns(UserWarning, match="silenced as another error was raised in "
                                             "forward: hook failed"), pytest.raises(RuntimeError):
            m(lib.ones(3))
        handle = m.register_forward_hook(lambda *a: None, always_call=True)
        handle.remove()
        assert handle.id not in getattr(m, "_forward_hooks_always_called")


def test_get_submodule_matches_torch():
    torch = pytest.importorskip("torch")
    for lib in (rt, torch):
        net = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.Sequential(lib.nn.ReLU()))
        assert net.get_submodule("") is net
        assert net.get_submodule("1.0") is net[1][0]
        with pytest.raises(AttributeError, match="^Sequential has no attribute `2`$"):
            net.get_submodule("2")
        with pytest.raises(AttributeError, match=r"^`weight` is not an nn.Module$"):
            net.get_submodule("0.weight")
        with pytest.raises(AttributeError, match="^Linear has no attribute `x`$"):
            net.get_submodule("0.x")


def _grads_pair(torch, seed=0):
    rng = np.random.default_rng(seed)
    ours, theirs = [], []
    for shape in [(3, 4), (4,), (2, 3)]:
        w, g = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
        p, q = rt.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
        p.grad, q.grad = rt.tensor(g), torch.tensor(g)
        ours.append(p)
        theirs.append(q)
    return ours, theirs


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, math.inf, "inf"])
def test_get_total_norm_and_clip_grads_with_norm_match_torch(norm_type):
    torch = pytest.importorskip("torch")
    ours, theirs = _grads_pair(torch)
    got = rt.nn.utils.get_total_norm([p.grad for p in ours], norm_type)
    want = torch.nn.utils.get_total_norm([q.grad for q in theirs], norm_type)
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-5)
    rt.nn.utils.clip_grads_with_norm_(ours, 1.0, got)
    torch.nn.utils.clip_grads_with_norm_(theirs, 1.0, want)
    for p, q in zip(ours, theirs):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-7)
    x = rt.ones(3, requires_grad=True)
    assert not rt.nn.utils.get_total_norm([x * 2]).requires_grad
    assert rt.nn.utils.get_total_norm([]).item() == 0.0
    assert rt.nn.utils.get_total_norm(rt.tensor([3.0, 4.0])).item() == pytest.approx(5.0)
    with pytest.raises(RuntimeError, match="is non-finite, so it cannot be clipped"):
        rt.nn.utils.get_total_norm([rt.tensor([math.inf])], error_if_nonfinite=True)


def test_clip_grad_norm_is_total_norm_then_clip_and_warns_on_empty_generator():
    p = rt.nn.Parameter(rt.ones(2))
    p.grad = rt.tensor([3.0, 4.0])
    assert rt.nn.utils.clip_grad_norm_(p, 1.0).item() == pytest.approx(5.0)
    np.testing.assert_allclose(p.grad.numpy(), [0.6, 0.8], rtol=1e-5)
    with pytest.warns(UserWarning, match="`parameters` is an empty generator, no gradient "
                                         "clipping will occur."):
        assert rt.nn.utils.clip_grad_norm_((q for q in []), 1.0).item() == 0.0


# ----------------------------------------------------------------------- nn.utils.rnn


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["left", "right"])
def test_pad_sequence(batch_first, side):
    seqs = [rt.tensor([1.0, 2.0, 3.0]), rt.tensor([4.0]), rt.tensor([5.0, 6.0])]
    got = rt.nn.utils.rnn.pad_sequence(seqs, batch_first, -1.0, side)
    rows = ([[1, 2, 3], [4, -1, -1], [5, 6, -1]] if side == "right"
            else [[1, 2, 3], [-1, -1, 4], [-1, 5, 6]])
    assert got.tolist() == (rows if batch_first else np.array(rows).T.tolist())
    torch = pytest.importorskip("torch")
    want = torch.nn.utils.rnn.pad_sequence([torch.tensor(s.numpy()) for s in seqs],
                                           batch_first, -1.0, side)
    assert got.tolist() == want.tolist()


def test_pad_sequence_errors_and_gradient():
    with pytest.raises(RuntimeError, match="^Expected padding_side to be one of left or right, "
                                           "but got middle.$"):
        rt.nn.utils.rnn.pad_sequence([rt.ones(2)], padding_side="middle")
    with pytest.raises(RuntimeError, match="^received an empty list of sequences$"):
        rt.nn.utils.rnn.pad_sequence([])
    a = rt.ones(2, 3, requires_grad=True)
    rt.nn.utils.rnn.pad_sequence([a, rt.ones(4, 3)]).sum().backward()
    assert a.grad.tolist() == [[1.0] * 3] * 2


@pytest.mark.parametrize("mode", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
def test_packed_sequences_through_recurrent_layers_match_torch(mode, bidirectional,
                                                               batch_first):
    torch = pytest.importorskip("torch")
    R, T = rt.nn.utils.rnn, torch.nn.utils.rnn
    torch.manual_seed(0)
    tm = getattr(torch.nn, mode)(3, 4, num_layers=2, bidirectional=bidirectional,
                                 batch_first=batch_first).double()
    m = getattr(rt.nn, mode)(3, 4, num_layers=2, bidirectional=bidirectional,
                             batch_first=batch_first).double()
    m.load_state_dict({k: rt.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 4, 3))
    if batch_first:
        x = np.ascontiguousarray(x.transpose(1, 0, 2))
    lengths = [2, 5, 3, 1]
    tx, rx = torch.tensor(x, requires_grad=True), rt.tensor(x, requires_grad=True)
    tp = T.pack_padded_sequence(tx, lengths, batch_first=batch_first, enforce_sorted=False)
    rp = R.pack_padded_sequence(rx, lengths, batch_first=batch_first, enforce_sorted=False)
    assert rp.batch_sizes.tolist() == tp.batch_sizes.tolist() == [4, 3, 2, 1, 1]
    assert rp.sorted_indices.tolist() == tp.sorted_indices.tolist()
    assert rp.unsorted_indices.tolist() == tp.unsorted_indices.tolist()
    _close(rp.data, tp.data)
    h0 = rng.standard_normal((2 * (2 if bidirectional else 1), 4, 4))
    thx, rhx = torch.tensor(h0), rt.tensor(h0)
    if mode == "LSTM":
        thx, rhx = (thx, thx * 0.5), (rhx, rhx * 0.5)
    tout, th = tm(tp, thx)
    out, h = m(rp, rhx)
    assert isinstance(out, R.PackedSequence)
    tpad, tlen = T.pad_packed_sequence(tout, batch_first, -2.0, total_length=6)
    pad, length = R.pad_packed_sequence(out, batch_first, -2.0, total_length=6)
    assert length.tolist() == tlen.tolist() == lengths and length.dtype == rt.int64
    _close(pad, tpad, rtol=1e-10)
    ths, hs = (th, h) if mode == "LSTM" else ((th,), (h,))
    for a, b in zip(hs, ths):
        _close(a, b, rtol=1e-10)
    (tpad.sum() + sum(t.sum() for t in ths)).backward()
    (pad.sum() + sum(t.sum() for t in hs)).backward()
    _close(rx.grad, tx.grad, rtol=1e-10)
    for name, p in tm.named_parameters():
        _close(getattr(m, name).grad, p.grad, rtol=1e-9)


def test_pack_errors_and_round_trips():
    R = rt.nn.utils.rnn
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order when "
                                           "`enforce_sorted` is True"):
        R.pack_padded_sequence(rt.ones(3, 2), [2, 3])
    with pytest.raises(RuntimeError, match="Length of all samples has to be greater than 0"):
        R.pack_padded_sequence(rt.ones(3, 2), [0, 3], enforce_sorted=False)
    with pytest.raises(RuntimeError, match=r"Expected `len\(lengths\)` to be equal to "
                                           r"batch_size, but got 1 \(batch_size=2\)"):
        R.pack_padded_sequence(rt.ones(3, 2), [3])
    packed = R.pack_padded_sequence(rt.ones(3, 2), [3, 2])
    with pytest.raises(ValueError, match="Expected total_length to be at least the length of "
                                         "the longest sequence in input, but got "
                                         "total_length=2 and max sequence length being 3"):
        R.pad_packed_sequence(packed, total_length=2)
    seqs = [rt.tensor([1.0, 2.0]), rt.tensor([3.0, 4.0, 5.0]), rt.tensor([6.0])]
    back = R.unpack_sequence(R.pack_sequence(seqs, enforce_sorted=False))
    assert [s.tolist() for s in back] == [s.tolist() for s in seqs]
    padded = R.pad_sequence(seqs, batch_first=True)
    assert [s.tolist() for s in R.unpad_sequence(padded, rt.tensor([2, 3, 1]), True)] == \
        [s.tolist() for s in seqs]
    assert R.invert_permutation(rt.tensor([2, 0, 1])).tolist() == [1, 2, 0]


# ----------------------------------------------------------------------- rt.cuda, backends


def test_cuda_without_a_gpu_behaves_as_torch_built_without_cuda():
    if rt.cuda.is_available():
        pytest.skip("a GPU is here")
    try:
        import cupy  # noqa: F401
        no_cuda = (RuntimeError, "No CUDA GPUs are available")
    except ImportError:
        no_cuda = (AssertionError, "Torch not compiled with CUDA enabled")
    assert rt.cuda.device_count() == 0 and rt.cuda.default_generators == ()
    assert rt.cuda.manual_seed(3) is None and rt.cuda.manual_seed_all(3) is None
    assert rt.cuda.empty_cache() is None and rt.cuda.seed() is None
    for fn in (rt.cuda.current_device, rt.cuda.synchronize, rt.cuda.initial_seed):
        with pytest.raises(no_cuda[0], match=f"^{no_cuda[1]}$"):
            fn()
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available() or torch.version.cuda is not None:
        return
    assert torch.cuda.device_count() == 0 and torch.cuda.manual_seed(3) is None
    assert torch.cuda.manual_seed_all(3) is None and torch.cuda.empty_cache() is None
    for fn in (torch.cuda.current_device, torch.cuda.synchronize, torch.cuda.initial_seed):
        with pytest.raises(AssertionError, match="^Torch not compiled with CUDA enabled$"):
            fn()


class _FakeCupy:
    """CuPy's surface that rt.cuda and pinning touch, for two pretend GPUs."""

    def __init__(self) -> None:
        import types

        self.synced: list[int] = []
        self.freed: list[str] = []
        self.current = 1
        fake = self

        class Device:
            def __init__(self, index: int) -> None:
                self.index = index

            def __enter__(self):
                self.saved, fake.current = fake.current, self.index

            def __exit__(self, *exc):
                fake.current = self.saved

        class Pool:
            def __init__(self, name: str) -> None:
                self.name = name

            def free_all_blocks(self) -> None:
                fake.freed.append(self.name)

        runtime = types.SimpleNamespace(getDeviceCount=lambda: 2, getDevice=lambda: fake.current,
                                        deviceSynchronize=lambda: fake.synced.append(fake.current))
        self.cuda = types.SimpleNamespace(runtime=runtime, Device=Device)
        self.get_default_memory_pool = lambda: Pool("device")
        self.get_default_pinned_memory_pool = lambda: Pool("pinned")


def test_cuda_with_gpus_through_cupy(monkeypatch):
    import sys
    import types

    fake = _FakeCupy()
    monkeypatch.setitem(sys.modules, "cupy", fake)
    pinned: list[tuple] = []

    def empty_pinned(shape, dtype):
        pinned.append(shape)
        return np.empty(shape, dtype)

    monkeypatch.setitem(sys.modules, "cupyx", types.SimpleNamespace(empty_pinned=empty_pinned))
    monkeypatch.setattr(rt.cuda, "_generators", [])
    assert rt.cuda.device_count() == 2 and rt.cuda.is_available()
    assert rt.cuda.current_device() == 1
    rt.cuda.synchronize()
    rt.cuda.synchronize(0)
    rt.cuda.synchronize("cuda:0")
    rt.cuda.synchronize(rt.device("cuda"))
    assert fake.synced == [1, 0, 0, 1] and fake.current == 1
    with pytest.raises(ValueError, match="^Expected a cuda device, but got: cpu$"):
        rt.cuda.synchronize("cpu")
    rt.cuda.empty_cache()
    assert fake.freed == ["device", "pinned"]
    gens = rt.cuda.default_generators
    assert [g.device for g in gens] == ["cuda:0", "cuda:1"]
    rt.cuda.manual_seed(5)
    assert gens[1].initial_seed() == 5 and gens[0].initial_seed() != 5
    assert rt.cuda.initial_seed() == 5
    rt.cuda.manual_seed_all(7)
    assert [g.initial_seed() for g in gens] == [7, 7]
    rt.cuda.seed_all()
    assert gens[0].initial_seed() == gens[1].initial_seed() != 7
    # DataLoader(pin_memory=True) with a GPU: batches copied into pinned host buffers
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        batches = list(DataLoader(_ds(4), batch_size=2, pin_memory=True, num_workers=1))
    assert [x.tolist() for x, _ in batches] == [[0, 1], [2, 3]]
    assert pinned == [(2,), (2,), (2,), (2,)]


def test_backends_flags_are_settable_with_torch_defaults():
    import runtime.backends as backends
    import runtime.backends.cudnn as cudnn

    assert cudnn is backends.cudnn
    names = {"benchmark": False, "deterministic": False, "enabled": True}
    for name, default in names.items():
        assert getattr(cudnn, name) is default
    assert backends.cuda.matmul.allow_tf32 is False
    assert backends.mps.is_available() is False and backends.cudnn.is_available() is False
    try:
        cudnn.benchmark = True
        cudnn.deterministic = True
        backends.cuda.matmul.allow_tf32 = True
        assert cudnn.benchmark and cudnn.deterministic and backends.cuda.matmul.allow_tf32
    finally:
        cudnn.benchmark = cudnn.deterministic = False
        backends.cuda.matmul.allow_tf32 = False
    torch = pytest.importorskip("torch")
    for name, default in names.items():
        assert getattr(torch.backends.cudnn, name) is default
    assert torch.backends.cuda.matmul.allow_tf32 is False
    assert torch.backends.mps.is_available() is False
