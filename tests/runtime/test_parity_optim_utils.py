"""Against torch 2.13: nn.utils' gradient clipping and parameter vectors, rt.utils.data
(WeightedRandomSampler, StackDataset and ChainDataset new here; collation; random_split),
rt.load's map_location, and compiled training steps with every optimizer equal to eager
without falling back."""

from __future__ import annotations

import collections
import io
import math
import warnings
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
from runtime import nn
from runtime.utils import data

GRADS = [np.arange(12.0).reshape(3, 4) - 5, np.array([3.0, -4.0]), np.array(2.0),
         np.zeros((1, 0))]


def _params(lib: Any) -> list[Any]:
    params = []
    for g in GRADS:
        p = lib.zeros(g.shape, dtype=lib.float64, requires_grad=True)
        p.grad = lib.tensor(g)
        params.append(p)
    return params


@pytest.mark.parametrize("norm_type", [2.0, 1, math.inf, 0.5, 0])
@pytest.mark.parametrize("foreach", [None, False])
def test_clip_grad_norm_matches_torch(norm_type: float, foreach: bool | None) -> None:
    if norm_type == math.inf:  # torch: no inf norm of an empty tensor
        with pytest.raises(RuntimeError, match="cannot compute the inf norm on an empty"):
            nn.utils.clip_grad_norm_(_params(rt), 1.0, norm_type, foreach=foreach)
    ours = _params(rt)[:3]
    total = nn.utils.clip_grad_norm_(ours, 1.0, norm_type, foreach=foreach)
    # torch's total: the norm of the gradients' norms (the joint norm, but for order 0,
    # where it counts the gradients that are not all zero)
    norms = [np.linalg.norm(g.ravel(), norm_type) for g in GRADS[:3]]
    expected = np.linalg.norm(norms, norm_type)
    if norm_type != 0:
        flat = np.concatenate([g.ravel() for g in GRADS])
        assert expected == pytest.approx(np.linalg.norm(flat, norm_type))
    assert total.item() == pytest.approx(expected)
    scale = min(1.0, 1.0 / (expected + 1e-6))
    for p, g in zip(ours, GRADS, strict=False):
        np.testing.assert_allclose(p.grad.numpy(), g * scale, rtol=1e-12)
    torch = pytest.importorskip("torch")
    theirs = _params(torch)[:3]
    ttotal = torch.nn.utils.clip_grad_norm_(theirs, 1.0, norm_type, foreach=foreach)
    assert total.item() == pytest.approx(ttotal.item(), rel=1e-12)
    for p, q in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-12)


def test_vector_to_parameters_as_torchs() -> None:
    """Each parameter becomes a view of its slice of the vector, of the vector's dtype."""
    def run(lib: Any) -> list[Any]:
        params = [lib.zeros(2, 3, requires_grad=True), lib.zeros(4, requires_grad=True)]
        vec = lib.arange(10, dtype=lib.float64)
        lib.nn.utils.vector_to_parameters(vec, params)
        vec[0] = 7.0
        return [(p.detach().numpy().tolist(), str(p.dtype).split(".")[-1], p.requires_grad,
                 p.is_leaf) for p in params]

    ours = run(rt)
    assert ours[0] == ([[7.0, 1.0, 2.0], [3.0, 4.0, 5.0]], "float64", True, True)
    assert ours[1][0] == [6.0, 7.0, 8.0, 9.0]
    vec = nn.utils.parameters_to_vector([rt.tensor(g, requires_grad=True) for g in GRADS])
    assert vec.shape == (15,) and vec.tolist()[11:] == [6.0, 3.0, -4.0, 2.0]
    assert vec.requires_grad and vec.grad_fn is not None
    torch = pytest.importorskip("torch")
    assert ours == run(torch)


def test_weighted_random_sampler() -> None:
    g = rt.Generator().manual_seed(0)
    sampler = data.WeightedRandomSampler([0.1, 0.9, 0.0, 0.4], 200, generator=g)
    drawn = list(sampler)
    assert len(sampler) == 200 and len(drawn) == 200 and all(type(i) is int for i in drawn)
    counts = collections.Counter(drawn)
    assert counts[2] == 0 and counts[1] > counts[3] > counts[0]
    assert drawn == list(data.WeightedRandomSampler([0.1, 0.9, 0.0, 0.4], 200,
                                                    generator=rt.Generator().manual_seed(0)))
    assert sorted(data.WeightedRandomSampler([1.0, 2.0, 3.0], 3, replacement=False)) == \
        [0, 1, 2]
    assert sampler.weights.dtype == rt.float64
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        data.WeightedRandomSampler([1.0], 0)
    with pytest.raises(ValueError, match="replacement should be a boolean value"):
        data.WeightedRandomSampler([1.0], 1, replacement=0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"weights should be a 1d sequence but given weights "
                                         r"have shape \(1, 2\)"):
        data.WeightedRandomSampler([[1.0, 2.0]], 2)
    loader = data.DataLoader(range(4), batch_size=2,
                             sampler=data.WeightedRandomSampler([1.0] * 4, 6))
    assert len(loader) == 3 and [len(b) for b in loader] == [2, 2, 2]


class _Stream(data.IterableDataset):
    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self) -> Any:
        return iter(range(self.n))

    def __len__(self) -> int:
        return self.n


def test_stack_and_chain_datasets() -> None:
    x, y = rt.arange(6.0).reshape(3, 2), rt.arange(3)
    pair = data.StackDataset(x, y)
    assert len(pair) == 3 and pair[1][0].tolist() == [2.0, 3.0] and pair[1][1].item() == 1
    named = data.StackDataset(image=x, label=y)
    assert set(named[2]) == {"image", "label"} and named[2]["label"].item() == 2
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        data.StackDataset(x, rt.arange(4))
    with pytest.raises(ValueError, match="At least one dataset should be passed"):
        data.StackDataset()
    with pytest.raises(ValueError, match="but both types are given"):
        data.StackDataset(x, label=y)
    batch = next(iter(data.DataLoader(named, batch_size=3)))
    assert batch["image"].shape == (3, 2) and batch["label"].tolist() == [0, 1, 2]
    chain = data.ChainDataset([_Stream(2), _Stream(3)])
    assert list(chain) == [0, 1, 0, 1, 2] and len(chain) == 5
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        list(data.ChainDataset([[1, 2]]))


def test_collation_as_torchs() -> None:
    """Tuples collate (and convert) to lists; numpy scalars and arrays convert to tensors."""
    point = collections.namedtuple("point", "x y")
    samples = [{"a": i, "b": float(i), "t": (i, 2.5), "s": str(i), "p": point(i, 1.0)}
               for i in range(3)]
    batch = data.default_collate(samples)
    assert isinstance(batch["t"], list) and batch["t"][0].tolist() == [0, 1, 2]
    assert batch["b"].dtype == rt.float64 and batch["s"] == ["0", "1", "2"]
    assert isinstance(batch["p"], point) and batch["p"].y.dtype == rt.float64
    ds = data.TensorDataset(rt.arange(4.0), rt.arange(4))
    first = next(iter(data.DataLoader(ds, batch_size=2)))
    assert isinstance(first, list) and first[1].tolist() == [0, 1]
    converted = data.default_convert([np.array([1.0, 2.0]), (np.float64(3.0), "x"),
                                      point(np.array([1]), 2)])
    assert isinstance(converted[0], rt.Tensor) and isinstance(converted[1], list)
    assert isinstance(converted[1][0], rt.Tensor) and converted[1][1] == "x"
    assert isinstance(converted[2], point) and isinstance(converted[2].x, rt.Tensor)
    unbatched = list(data.DataLoader(ds, batch_size=None))
    assert len(unbatched) == 4 and isinstance(unbatched[0], list)
    torch = pytest.importorskip("torch")
    tds = torch.utils.data.TensorDataset(torch.arange(4.0), torch.arange(4))
    assert type(next(iter(torch.utils.data.DataLoader(tds, batch_size=2)))) is type(first)
    assert type(next(iter(torch.utils.data.DataLoader(tds, batch_size=None)))) is \
        type(unbatched[0])
    tconv = torch.utils.data.default_convert([np.array([1.0, 2.0]), (np.float64(3.0), "x")])
    assert [type(v).__name__ for v in tconv] == ["Tensor", "list"]


def test_random_split_fractions() -> None:
    g = rt.Generator().manual_seed(0)
    parts = data.random_split(range(10), [0.3, 0.3, 0.4], generator=g)
    assert [len(p) for p in parts] == [3, 3, 4]
    assert sorted(i for p in parts for i in p.indices) == list(range(10))
    assert [len(p) for p in data.random_split(range(11), [0.5, 0.5])] == [6, 5]
    with pytest.raises(ValueError, match="Fraction at index 0 is not between 0 and 1"):
        data.random_split(range(10), [1.5, -0.5])
    with pytest.warns(UserWarning, match="Length of split at index 2 is 0"):
        assert [len(p) for p in data.random_split(range(3), [0.5, 0.5, 0.0])] == [2, 1, 0]


def test_load_with_a_map_location_function() -> None:
    buffer = io.BytesIO()
    rt.save({"w": nn.Parameter(rt.ones(2)), "n": {"x": rt.arange(3)}, "epoch": 4}, buffer)
    seen = []

    def keep(t: rt.Tensor, location: str) -> rt.Tensor:
        seen.append(location)
        return t

    buffer.seek(0)
    out = rt.load(buffer, map_location=keep)
    assert seen == ["cpu", "cpu"] and out["epoch"] == 4
    assert isinstance(out["w"], nn.Parameter) and out["n"]["x"].tolist() == [0, 1, 2]
    buffer.seek(0)
    assert rt.load(buffer, map_location=lambda t, loc: None)["w"].device == "cpu"
    buffer.seek(0)
    assert rt.load(buffer, map_location=lambda t, loc: t.double())["w"].dtype == rt.float64
    buffer.seek(0)
    with pytest.raises(TypeError, match="must return a tensor or None, not int"):
        rt.load(buffer, map_location=lambda t, loc: 3)


# the optimizers new here, and torch's implementation flags (each compiles in ~1 s; the
# others' compiled steps are tested with their own tests)
COMPILED = [("AdamW", {"lr": 0.01, "amsgrad": True, "fused": True}),
            ("ASGD", {"t0": 2}), ("Rprop", {}), ("Adafactor", {"lr": 0.05, "weight_decay": 0.1})]


@pytest.mark.parametrize(("name", "kwargs"), COMPILED)
def test_compiled_step_equals_eager(name: str, kwargs: dict[str, Any]) -> None:
    """zero_grad, forward, backward, clip_grad_norm_, step and a CyclicLR step, compiled:
    5 steps equal eager's, captured once, with no warning (no fallback)."""
    def build() -> tuple[Any, Any, Any]:
        rt.manual_seed(0)
        model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))
        opt = getattr(rt.optim, name)(model.parameters(), **kwargs)
        sched = rt.optim.lr_scheduler.CyclicLR(opt, 0.001, 0.05, step_size_up=2,
                                               cycle_momentum=False)
        return model, opt, sched

    def train(model: Any, opt: Any, sched: Any, x: rt.Tensor, y: rt.Tensor) -> rt.Tensor:
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        opt.step()
        sched.step()
        return loss

    (model, opt, sched), (ref, ref_opt, ref_sched) = build(), build()
    step = planner.compile(train)
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(5):
            x = rt.tensor(rng.standard_normal((4, 6)).astype(np.float32))
            y = rt.tensor(rng.standard_normal((4, 3)).astype(np.float32))
            assert step(model, opt, sched, x, y).item() == pytest.approx(
                train(ref, ref_opt, ref_sched, x, y).item(), rel=1e-5)
    assert step.captures == 1
    assert sched.get_last_lr() == ref_sched.get_last_lr()
    for p, q in zip(model.parameters(), ref.parameters(), strict=True):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


@pytest.mark.parametrize(("n", "replicas", "drop_last"), [(10, 3, False), (10, 3, True),
                                                          (2, 4, False), (9, 3, True)])
def test_distributed_sampler_shards(n: int, replicas: int, drop_last: bool) -> None:
    shards = [list(data.DistributedSampler(range(n), replicas, rank, shuffle=False,
                                           drop_last=drop_last)) for rank in range(replicas)]
    size = (n // replicas) if drop_last else -(-n // replicas)
    assert all(len(s) == size for s in shards)
    assert len(data.DistributedSampler(range(n), replicas, 0, drop_last=drop_last)) == size
    flat = sorted(i for s in shards for i in s)
    assert set(flat) <= set(range(n)) and (drop_last or set(flat) == set(range(n)))
    shuffled = [data.DistributedSampler(range(n), replicas, rank, seed=3, drop_last=drop_last)
                for rank in range(replicas)]
    order = [list(s) for s in shuffled]  # the same permutation on every rank: disjoint
    assert len({i for s in order for i in s}) == min(n, replicas * size)
    for s in shuffled:
        s.set_epoch(1)
    assert [list(s) for s in shuffled] != order or n <= replicas
    torch = pytest.importorskip("torch")
    assert shards == [list(torch.utils.data.DistributedSampler(
        range(n), replicas, rank, shuffle=False, drop_last=drop_last))
        for rank in range(replicas)]


def test_distributed_sampler_errors() -> None:
    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval "
                                         r"\[0, 1\]"):
        data.DistributedSampler(range(3), 2, 2)
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        data.DistributedSampler(range(3))


def test_load_takes_torchs_keywords(tmp_path: Any) -> None:
    buffer = io.BytesIO()
    rt.save({"a": rt.ones(2)}, buffer)
    for kwargs in ({"weights_only": None}, {"weights_only": True}, {}):
        buffer.seek(0)
        assert rt.load(buffer, **kwargs)["a"].tolist() == [1.0, 1.0]
    path = tmp_path / "a.pt"  # mmap takes a path only, as torch.load's
    rt.save({"a": rt.ones(2)}, path)
    assert rt.load(path, weights_only=True, mmap=True)["a"].tolist() == [1.0, 1.0]
    buffer.seek(0)
    with pytest.raises(ValueError, match="f must be a file path in order to use the mmap"):
        rt.load(buffer, mmap=True)
    buffer.seek(0)
    with pytest.raises(ValueError, match="weights_only=False"):
        rt.load(buffer, weights_only=False)


def test_safe_open(tmp_path: Any) -> None:
    from runtime.safetensors import SafetensorError, safe_open, save_file

    path = tmp_path / "m.safetensors"
    save_file({"b": rt.arange(3), "a": rt.ones(2, 2, dtype=rt.float16)}, path,
              metadata={"format": "pt"})
    with safe_open(path, framework="pt") as f:
        assert f.keys() == ["a", "b"] and f.metadata() == {"format": "pt"}
        b = f.get_tensor("b")
        assert b.dtype == rt.int64 and b.tolist() == [0, 1, 2]
        assert f.get_tensor("a").dtype == rt.float16
        with pytest.raises(SafetensorError, match="File does not contain tensor c"):
            f.get_tensor("c")
    safetensors = pytest.importorskip("safetensors")
    with safetensors.safe_open(str(path), framework="pt") as f:
        assert f.keys() == ["a", "b"] and f.get_tensor("b").tolist() == [0, 1, 2]


class _Batched:
    """A dataset that reads a batch at once (``__getitems__``), logging its reads."""

    def __init__(self) -> None:
        self.calls: list[Any] = []

    def __len__(self) -> int:
        return 6

    def __getitem__(self, i: int) -> int:
        self.calls.append(i)
        return i

    def __getitems__(self, indices: list[int]) -> list[int]:
        self.calls.append(list(indices))
        return [10 * i for i in indices]


def test_loader_reads_batches_by_getitems() -> None:
    ds = _Batched()
    loader = data.DataLoader(data.Subset(ds, [5, 4, 3, 2]), batch_size=3)
    assert [b.tolist() for b in loader] == [[50, 40, 30], [20]]
    assert ds.calls == [[5, 4, 3], [2]]  # through the Subset, as torch's
    assert list(data.DataLoader(ds, batch_size=None))[:2] == [0, 1]  # one by one


def test_tensor_dataset_errors_as_torchs() -> None:
    with pytest.raises(IndexError, match="tuple index out of range"):
        len(data.TensorDataset())  # torch's constructor takes no tensors; its len fails
    with pytest.raises(IndexError, match="Dimension specified as 0 but tensor has no dim"):
        data.TensorDataset(rt.tensor(1.0))
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        data.TensorDataset(rt.zeros(3), rt.zeros(4))


def test_deprecated_clip_grad_norm() -> None:
    from runtime.nn.utils.clip_grad import clip_grad_norm

    p = rt.zeros(2, requires_grad=True)
    p.grad = rt.tensor([3.0, 4.0])
    with pytest.warns(FutureWarning, match="deprecated in favor of `torch.nn.utils.clip_grad_"):
        assert clip_grad_norm([p], 1.0).item() == pytest.approx(5.0)
    np.testing.assert_allclose(p.grad.numpy(), [0.6, 0.8], rtol=1e-6)
