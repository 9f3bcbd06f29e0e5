"""rt.utils.data: datasets, samplers and DataLoader with PyTorch's semantics."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import runtime as rt
from runtime.utils.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    default_collate,
    random_split,
)


def _ds(n: int = 10) -> TensorDataset:
    return TensorDataset(rt.arange(n), rt.arange(n).float() * 2)


@pytest.mark.parametrize("n,batch,drop_last", [(10, 4, False), (10, 4, True), (8, 4, True),
                                               (3, 5, False), (3, 5, True)])
def test_sequential_batches_match_torch_sizes(n, batch, drop_last):
    dl = DataLoader(_ds(n), batch_size=batch, drop_last=drop_last)
    batches = list(dl)
    assert len(batches) == len(dl)
    flat = [int(i) for x, _ in batches for i in x.tolist()]
    expect = list(range(n))[: (n // batch) * batch if drop_last else n]
    assert flat == expect
    for x, y in batches:
        assert x.dtype == rt.int64 and y.dtype == rt.float32
        np.testing.assert_array_equal(y.numpy(), x.numpy() * 2)
    torch = pytest.importorskip("torch")
    tdl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.arange(n)),
                                      batch_size=batch, drop_last=drop_last)
    assert [len(b[0]) for b in tdl] == [len(b[0]) for b in batches]


def test_shuffle_is_a_permutation_reproducible_from_a_seed():
    def order(seed: int) -> list[list[int]]:
        dl = DataLoader(_ds(23), batch_size=5, shuffle=True,
                        generator=rt.Generator().manual_seed(seed))
        return [x.tolist() for x, _ in dl]

    a, b, c = order(0), order(0), order(1)
    assert a == b and a != c
    assert sorted(i for batch in a for i in batch) == list(range(23))
    # epochs differ: the generator advances
    dl = DataLoader(_ds(23), batch_size=5, shuffle=True, generator=rt.Generator().manual_seed(0))
    assert [x.tolist() for x, _ in dl] != [x.tolist() for x, _ in dl]


def test_shuffle_without_a_generator_follows_manual_seed():
    def order() -> list[int]:
        rt.manual_seed(3)
        return [int(i) for x, _ in DataLoader(_ds(12), batch_size=4, shuffle=True)
                for i in x.tolist()]

    assert order() == order()


def test_default_collate_nested_structures():
    Point = collections.namedtuple("Point", "x y")
    batch = [{"a": rt.ones(2), "b": (1, 2.5), "s": "u", "p": Point(1, np.float32(2))},
             {"a": rt.zeros(2), "b": (3, 4.5), "s": "v", "p": Point(5, np.float32(6))}]
    out = default_collate(batch)
    assert out["a"].shape == (2, 2)
    assert out["b"][0].dtype == rt.int64 and out["b"][0].tolist() == [1, 3]
    assert out["b"][1].dtype == rt.float64  # Python floats collate to float64, as torch
    assert out["s"] == ["u", "v"]
    assert isinstance(out["p"], Point) and out["p"].y.dtype == rt.float32
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([[1, 2], [3]])


def test_map_dataset_without_batching_and_custom_collate():
    class Squares(Dataset):
        def __getitem__(self, i):
            return np.array([i * i])

        def __len__(self):
            return 4

    assert [t.tolist() for t in DataLoader(Squares(), batch_size=None)] == [[0], [1], [4], [9]]
    dl = DataLoader(Squares(), batch_size=2, collate_fn=lambda b: sum(int(x[0]) for x in b))
    assert list(dl) == [1, 13]


def test_iterable_dataset_batches():
    class Stream(IterableDataset):
        def __iter__(self):
            return iter(range(7))

    assert [b.tolist() for b in DataLoader(Stream(), batch_size=3)] == [[0, 1, 2], [3, 4, 5], [6]]
    assert [b.tolist() for b in DataLoader(Stream(), batch_size=3, drop_last=True)] == \
        [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(ValueError, match="expected unspecified shuffle"):
        DataLoader(Stream(), shuffle=True)


def test_samplers():
    g = rt.Generator().manual_seed(0)
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    perm = list(RandomSampler(range(6), generator=g))
    assert sorted(perm) == list(range(6))
    draws = list(RandomSampler(range(3), replacement=True, num_samples=20, generator=g))
    assert len(draws) == 20 and set(draws) <= {0, 1, 2}
    many = list(RandomSampler(range(3), num_samples=7, generator=g))
    assert len(many) == 7 and sorted(many[:3]) == [0, 1, 2]
    assert sorted(SubsetRandomSampler([5, 7, 9], generator=g)) == [5, 7, 9]
    assert list(BatchSampler(range(5), 2, False)) == [[0, 1], [2, 3], [4]]
    assert len(BatchSampler(range(5), 2, True)) == 2
    bs = BatchSampler(SequentialSampler(range(5)), 3, False)
    assert [x.tolist() for x, _ in DataLoader(_ds(5), batch_sampler=bs)] == [[0, 1, 2], [3, 4]]


def test_random_split_and_subsets():
    parts = random_split(_ds(10), [3, 7], generator=rt.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [3, 7]
    assert sorted(parts[0].indices + parts[1].indices) == list(range(10))
    fr = random_split(_ds(10), [0.25, 0.25, 0.5], generator=rt.Generator().manual_seed(0))
    assert [len(p) for p in fr] == [3, 2, 5]  # the remainder goes round-robin, as torch
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        random_split(_ds(10), [3, 3])
    sub = Subset(_ds(10), [9, 1])
    assert sub[0][0].item() == 9 and len(sub) == 2
    cat = ConcatDataset([_ds(3), _ds(2)])
    assert len(cat) == 5 and cat[3][0].item() == 0 and cat[-1][0].item() == 1


def test_errors_name_the_bad_option():
    with pytest.raises(ValueError, match="mutually exclusive with shuffle"):
        DataLoader(_ds(), sampler=SequentialSampler(range(10)), shuffle=True)
    with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive"):
        DataLoader(_ds(), batch_sampler=BatchSampler(range(10), 2, False), batch_size=3)
    with pytest.raises(ValueError, match="batch_size=None option disables auto-batching"):
        DataLoader(_ds(), batch_size=None, drop_last=True)
    with pytest.raises(ValueError, match="num_workers option should be non-negative"):
        DataLoader(_ds(), num_workers=-1)
    with pytest.raises(ValueError, match="persistent_workers option needs num_workers > 0"):
        DataLoader(_ds(), persistent_workers=True)
    with pytest.raises(ValueError, match="batch_size should be a positive integer"):
        DataLoader(_ds(), batch_size=0)
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(rt.ones(3), rt.ones(4))
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        RandomSampler(range(3), num_samples=0)


def test_a_loader_feeds_a_compiled_training_step():
    import copy
    import warnings

    import planner

    rt.manual_seed(0)
    x = rt.randn(32, 4)
    y = (x.sum(1) > 0).long()

    def trainer(model):
        opt = rt.optim.SGD(model.parameters(), lr=0.1)

        def step(xb, yb):
            opt.zero_grad()
            loss = rt.nn.functional.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            return loss
        return step

    model = rt.nn.Linear(4, 2)
    twin = copy.deepcopy(model)
    compiled, eager = planner.compile(trainer(model)), trainer(twin)

    def losses(step):
        dl = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True, drop_last=True,
                        generator=rt.Generator().manual_seed(0))
        return [float(step(xb, yb)) for xb, yb in dl]

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = losses(compiled)
    want = losses(eager)
    assert len(got) == 4
    np.testing.assert_allclose(got, want, rtol=1e-5)
    np.testing.assert_allclose(model.weight.detach().numpy(), twin.weight.detach().numpy(),
                               rtol=1e-5, atol=1e-6)
