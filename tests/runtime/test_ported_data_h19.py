"""PyTorch's test/test_dataloader.py, ported (``import runtime as torch``).

Ported: TestDatasetRandomSplit, TestTensorDataset, TestStackDataset, TestConcatDataset,
TestDataLoader (batching, shuffle, samplers, bulk loading, iterable datasets, chains,
collate and convert, ctor checks, len, worker threads), TestDictDataLoader,
TestNamedTupleDataLoader, TestIndividualWorkerQueue, TestDataLoaderPersistentWorkers'
dataset-not-reset, and the Sampler tests (Random with replacement/num_samples,
WeightedRandom, SubsetRandom, Batch, Distributed).

Left out, outside this project's scope or tied to PyTorch's process workers (rt's workers
are threads, as its DataLoader docstring says): CUDA and pin_memory on CUDA
(test_*pin_memory*, TestCustomPinFn, CUDACountingDataset), everything run through
ErrorTrackingProcess or a subprocess (test_segfault, test_no_segfault, test_timeout,
test_large_sampler_indices, test_proper_exit, test_get_worker_info's worker pids,
test_fd_limit_exceeded, test_early_exit), shared memory (test_default_collate_shared_tensor,
is_shared in workers), worker process seeding (test_worker_seed,
test_worker_seed_reproducibility: each process reseeds its global generator; threads
share it), _generate_state (test_numpy_gen_state: numpy seeding of worker processes),
datapipes (IterDataPipe, test_multiprocessing_iterdatapipe, IntegrationTestDataLoaderDataPipe),
nested tensors (TestDataLoaderDeviceType), os.sched_setaffinity in workers
(TestSetAffinity) and fork safety of conv (TestConvAfterFork).
"""

from __future__ import annotations

import functools
import math
import operator
import tempfile
import warnings
from collections import Counter, namedtuple
from typing import Any

import numpy as np
import pytest

import runtime as torch
from runtime.utils.data import (
    ChainDataset,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from runtime.utils.data._utils import collate as _collate


def assert_equal(a: Any, b: Any) -> None:
    """PyTorch TestCase.assertEqual's leniency: tensors, numbers and sequences of them
    compare by value (exactly)."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        na = a.numpy() if isinstance(a, torch.Tensor) else np.asarray(a)
        nb = b.numpy() if isinstance(b, torch.Tensor) else np.asarray(b)
        assert na.shape == nb.shape or na.size == nb.size == 1, (na.shape, nb.shape)
        np.testing.assert_array_equal(na.reshape(nb.shape) if na.size == nb.size else na, nb)
        return
    if isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys()
        for k in a:
            assert_equal(a[k], b[k])
        return
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        assert len(a) == len(b), (len(a), len(b))
        for x, y in zip(a, b, strict=True):
            assert_equal(x, y)
        return
    assert a == b, (a, b)


# ----------------------------------------------------------------- TestDatasetRandomSplit

def test_lengths_must_equal_dataset_size() -> None:
    with pytest.raises(ValueError):
        random_split([1, 2, 3, 4], [1, 2])


def test_splits_have_correct_size() -> None:
    splits = random_split([1, 2, 3, 4, 5, 6], [2, 4])
    assert len(splits) == 2
    assert len(splits[0]) == 2
    assert len(splits[1]) == 4
    splits = random_split([1, 2, 3, 4, 5, 6], [0.5, 0.5])
    assert len(splits) == 2
    assert len(splits[0]) == 3
    assert len(splits[1]) == 3
    assert len(random_split(range(3), [0.5, 0.5],
                            generator=torch.Generator().manual_seed(1))) == 2
    splits = random_split(range(106), [0.1, 0.2, 0.3, 0.4],
                          generator=torch.Generator().manual_seed(1))
    assert [len(s) for s in splits] == [11, 22, 31, 42]


def test_splits_are_mutually_exclusive() -> None:
    for data, lengths in (([5, 2, 3, 4, 1, 6], [2, 4]), ([5, 2, 3, 4, 1, 6], [0.33, 0.67]),
                          ([1, 2, 3, 4], [0.25, 0.75])):
        splits = random_split(data, lengths)
        all_values = list(splits[0]) + list(splits[1])
        assert sorted(data) == sorted(all_values)


def test_splits_indexing_type() -> None:
    class CustomDataset:
        def __init__(self, custom_list: list[int]) -> None:
            self.data = custom_list

        def __getitem__(self, key: Any) -> int:
            assert type(key) is int
            return self.data[key]

        def __len__(self) -> int:
            return len(self.data)

    x = [1, 2, 3, 4, 5]
    for lengths in ([5], [1.0]):
        dataset = random_split(CustomDataset(x), lengths)[0]
        for _ in DataLoader(dataset):
            pass


def test_splits_reproducibility() -> None:
    assert [list(x) for x in random_split(range(10), [3, 7],
                                          generator=torch.Generator().manual_seed(1))] == \
        [[5, 6, 1], [2, 0, 8, 9, 3, 7, 4]]
    for lengths in ([60, 40], [0.5, 0.5], [0.33, 0.33, 0.34]):
        a = random_split(range(100), lengths, generator=torch.Generator().manual_seed(42))
        b = random_split(range(100), lengths, generator=torch.Generator().manual_seed(42))
        assert [list(s) for s in a] == [list(s) for s in b]


def test_incomplete_fractional_splits() -> None:
    with pytest.raises(ValueError):
        random_split([1, 2, 3, 4], [0.1])
    with pytest.raises(ValueError):
        random_split([1, 2, 3, 4], [1.1])


def test_splits_generator() -> None:
    state = torch.get_rng_state()
    a = torch.rand(10)
    torch.set_rng_state(state)
    random_split(range(10), [5, 5])
    b = torch.rand(10)
    assert not torch.equal(a, b)

    state = torch.get_rng_state()
    a = torch.rand(10)
    torch.set_rng_state(state)
    random_split(range(10), [5, 5], generator=torch.Generator().manual_seed(42))
    b = torch.rand(10)
    assert torch.equal(a, b)


def test_slicing_of_subset_of_dataset() -> None:
    dataset = TensorDataset(torch.tensor([1, 2, 3, 4, 5]))
    subset_of_dataset = Subset(dataset, [0, 1, 2, 3, 4])
    assert_equal(subset_of_dataset[:], dataset[:])
    assert_equal(subset_of_dataset[1:2], dataset[1:2])
    assert_equal(subset_of_dataset[0:-1:2], dataset[0:-1:2])
    subset1, _ = random_split(dataset, [3, 2])
    assert_equal(subset1[:], dataset[subset1.indices[:]])
    assert_equal(subset1[0:2], dataset[subset1.indices[0:2]])
    assert_equal(subset1[0:-1:2], dataset[subset1.indices[0:-1:2]])


def test_slicing_of_subset_of_subset() -> None:
    dataset = TensorDataset(torch.tensor([1, 2, 3, 4, 5]))
    subset_of_dataset = Subset(dataset, [0, 1, 2, 3, 4])
    subset_of_subset = Subset(subset_of_dataset, [0, 1, 2, 3, 4])
    assert_equal(subset_of_subset[:], dataset[:])
    assert_equal(subset_of_subset[0:2], dataset[0:2])
    assert_equal(subset_of_subset[0:-1:2], dataset[0:-1:2])
    subset1, _ = random_split(dataset, [4, 1])
    subset_of_subset1, _ = random_split(subset1, [3, 1])
    idx = [subset1.indices[i] for i in subset_of_subset1.indices]
    assert_equal(subset_of_subset1[:], dataset[idx.copy()])
    assert_equal(subset_of_subset1[0:2], dataset[idx[0:2]])
    assert_equal(subset_of_subset1[0:-1:2], dataset[idx[0:-1:2]])


# ------------------------------------------------------------------------ helper datasets

class CountingDataset(Dataset):
    def __init__(self, n: int) -> None:
        self.n = n

    def __getitem__(self, i: int) -> int:
        return i

    def __len__(self) -> int:
        return self.n


class CountingIterableDataset(IterableDataset):
    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self) -> int:
        return self.n


class ErrorDataset(Dataset):
    def __init__(self, size: int) -> None:
        self.size = size

    def __len__(self) -> int:
        return self.size


class SeedDataset(Dataset):
    def __init__(self, size: int) -> None:
        self.size = size

    def __getitem__(self, idx: int) -> int:
        return torch.initial_seed()

    def __len__(self) -> int:
        return self.size


class WorkerSpecificIterableDataset(IterableDataset):
    def __init__(self, sizes_for_all_workers: list[int]) -> None:
        self.sizes_for_all_workers = sizes_for_all_workers

    def __iter__(self):
        worker_info = torch.utils.data.get_worker_info()
        assert worker_info is not None
        return iter(range(self.sizes_for_all_workers[worker_info.id]))

    def __len__(self) -> int:
        return sum(self.sizes_for_all_workers)


class ErrorIterableDataset(IterableDataset):
    def __iter__(self):
        raise RuntimeError("Error in __iter__")


def error_worker_init_fn(_: int) -> None:
    raise RuntimeError("Error in worker_init_fn")


class BulkLoadingDataset(Dataset):
    def __init__(self, length: int) -> None:
        self.length = length

    def __getitem__(self, indices: Any) -> torch.Tensor:
        assert isinstance(indices, (list, tuple))
        return torch.as_tensor(indices)

    def __len__(self) -> int:
        return self.length


class BulkLoadingSampler(torch.utils.data.Sampler):
    def __init__(self, dataset: Dataset, batch_size: int) -> None:
        self.dataset = dataset
        self.batch_size = batch_size

    def __iter__(self):
        for x in torch.randperm(len(self.dataset)).split(self.batch_size):
            yield x.tolist()

    def __len__(self) -> int:
        return int(math.ceil(len(self.dataset) / float(self.batch_size)))


class TestMultiEpochDataset(IterableDataset):
    def __init__(self, length: int) -> None:
        self.length = length

    def __iter__(self):
        worker_info = torch.utils.data.get_worker_info()
        assert worker_info is not None
        for _ in range(self.length // worker_info.num_workers):
            yield worker_info.id

    def __len__(self) -> int:
        return self.length


class CustomList(list):
    pass


class CustomDict(dict):
    pass


# ---------------------------------------------------------------------- TestTensorDataset

def test_tensor_dataset_len() -> None:
    source = TensorDataset(torch.randn(15, 10, 2, 3, 4, 5), torch.randperm(15))
    assert len(source) == 15


def test_tensor_dataset_getitem() -> None:
    t = torch.randn(15, 10, 2, 3, 4, 5)
    lab = torch.randn(15, 10)
    source = TensorDataset(t, lab)
    for i in range(15):
        assert_equal(t[i], source[i][0])
        assert_equal(lab[i], source[i][1])


def test_tensor_dataset_getitem_1d() -> None:
    t = torch.randn(15)
    lab = torch.randn(15)
    source = TensorDataset(t, lab)
    for i in range(15):
        assert_equal(t[i], source[i][0])
        assert_equal(lab[i], source[i][1])


def test_tensor_dataset_single_tensor() -> None:
    t = torch.randn(5, 10)
    source = TensorDataset(t)
    assert len(source) == 5
    for i in range(5):
        assert_equal(t[i], source[i][0])


def test_tensor_dataset_many_tensors() -> None:
    ts = [torch.randn(5, 10, 2, 3, 4, 5), torch.randn(5, 10), torch.randn(5, 10, 2, 5),
          torch.randn(5, 10, 3, 7)]
    source = TensorDataset(*ts)
    assert len(source) == 5
    for i in range(5):
        for j, t in enumerate(ts):
            assert_equal(t[i], source[i][j])


def test_tensor_dataset_size_mismatch() -> None:
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(torch.randn(5, 2), torch.randn(4))


# ----------------------------------------------------------------------- TestStackDataset

def test_stack_empty() -> None:
    with pytest.raises(ValueError, match="At least one dataset should be passed"):
        StackDataset()


def test_stack_mixed() -> None:
    with pytest.raises(ValueError, match="Supported either"):
        StackDataset(TensorDataset(torch.randn(15, 10)), a=TensorDataset(torch.randn(10, 15)))


def test_stack_size_mismatch() -> None:
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(TensorDataset(torch.randn(15, 10)), TensorDataset(torch.randn(10, 15)))
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(a=TensorDataset(torch.randn(15, 10)), b=TensorDataset(torch.randn(10, 15)))


def test_stack_len() -> None:
    assert len(StackDataset(TensorDataset(torch.randn(15, 10)),
                            TensorDataset(torch.randn(15)))) == 15
    assert len(StackDataset(TensorDataset(torch.randn(15, 10)))) == 15
    assert len(StackDataset(a=TensorDataset(torch.randn(15, 10)),
                            b=TensorDataset(torch.randn(15)))) == 15
    assert len(StackDataset(a=TensorDataset(torch.randn(15, 10)))) == 15


def test_stack_single() -> None:
    t = TensorDataset(torch.randn(15, 10))
    source = StackDataset(t)
    for i in range(15):
        assert_equal(t[i], source[i][0])
    source = StackDataset(a=t)
    for i in range(15):
        assert_equal(t[i], source[i]["a"])


def test_stack_getitem() -> None:
    t = TensorDataset(torch.randn(15, 10))
    lab = TensorDataset(torch.randn(15, 5, 4))
    source = StackDataset(t, lab)
    for i in range(15):
        assert_equal(t[i], source[i][0])
        assert_equal(lab[i], source[i][1])
    source = StackDataset(a=t, b=lab)
    for i in range(15):
        assert_equal(t[i], source[i]["a"])
        assert_equal(lab[i], source[i]["b"])


class GetItemsDataset(Dataset):
    def __init__(self, short: bool = False) -> None:
        self.data = torch.randn(4)
        self.short = short

    def __getitem__(self, item: Any) -> torch.Tensor:
        return self.data[item]

    def __getitems__(self, items: list[int]) -> torch.Tensor:
        return self.data[items][:-1] if self.short else self.data[items]

    def __len__(self) -> int:
        return 4


def test_stack_getitems() -> None:
    t = GetItemsDataset()
    lab = [1, 2, 3, 4]
    batch = StackDataset(t, lab).__getitems__([0, 1, 2, 3])
    for i in range(4):
        assert_equal(t[i], batch[i][0])
        assert_equal(lab[i], batch[i][1])
    batch = StackDataset(t=t, l=lab).__getitems__([0, 1, 2, 3])
    for i in range(4):
        assert_equal(t[i], batch[i]["t"])
        assert_equal(lab[i], batch[i]["l"])


def test_stack_getitems_raises_index_error() -> None:
    source = StackDataset(GetItemsDataset(), [1, 2, 3, 4])
    with pytest.raises(IndexError):
        source.__getitems__([0, 4])


def test_stack_getitems_value_error() -> None:
    source = StackDataset(GetItemsDataset(short=True), [1, 2, 3, 4])
    with pytest.raises(ValueError, match="Nested dataset's output size mismatch. Expected 4, got 3"):
        source.__getitems__([0, 1, 2, 3])


# ---------------------------------------------------------------------- TestConcatDataset

def test_concat_two_singletons() -> None:
    result = ConcatDataset([[0], [1]])
    assert len(result) == 2
    assert result[0] == 0
    assert result[1] == 1


def test_concat_two_non_singletons() -> None:
    result = ConcatDataset([[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]])
    assert len(result) == 10
    assert result[0] == 0
    assert result[5] == 5


def test_concat_two_non_singletons_with_empty() -> None:
    result = ConcatDataset([[0, 1, 2, 3, 4], [], [5, 6, 7, 8, 9]])
    assert len(result) == 10
    assert result[0] == 0
    assert result[5] == 5


def test_concat_raises_index_error() -> None:
    result = ConcatDataset([[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]])
    with pytest.raises(IndexError):
        result[11]


def test_concat_negative_index() -> None:
    result = ConcatDataset([[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]])
    assert result[-1] == 9
    with pytest.raises(ValueError, match="absolute value of index should not exceed dataset length"):
        result[-11]


def test_concat_add_dataset() -> None:
    ds = [TensorDataset(torch.rand(7, 3, 28, 28), torch.rand(7)) for _ in range(3)]
    result = ds[0] + ds[1] + ds[2]
    assert len(result) == 21
    assert (ds[0][0][0] - result[0][0]).abs().sum() == 0
    assert (ds[1][0][0] - result[7][0]).abs().sum() == 0
    assert (ds[2][0][0] - result[14][0]).abs().sum() == 0


def test_concat_iterable_dataset_err() -> None:
    d1 = TensorDataset(torch.rand(7, 3, 28, 28), torch.rand(7))
    it1 = CountingIterableDataset(5)
    it2 = CountingIterableDataset(10)
    for datasets in ([d1, it2, it1], [it2], [it1, d1]):
        with pytest.raises(AssertionError, match="does not support IterableDataset"):
            ConcatDataset(datasets)


def test_concat_empty() -> None:
    with pytest.raises(AssertionError, match="datasets should not be an empty iterable"):
        ConcatDataset([])


# ------------------------------------------------------------------------- TestDataLoader

@pytest.fixture
def data() -> tuple[torch.Tensor, torch.Tensor, TensorDataset]:
    d = torch.randn(100, 2, 3, 5)
    labels = torch.randperm(50).repeat(2)
    return d, labels, TensorDataset(d, labels)


def _test_sequential(data: Any, loader: DataLoader) -> None:
    d, labels, dataset = data
    batch_size = loader.batch_size
    if batch_size is None:
        for idx, (sample, target) in enumerate(loader):
            assert_equal(sample, d[idx])
            assert_equal(target, labels[idx])
        assert idx == len(dataset) - 1
    else:
        for i, (sample, target) in enumerate(loader):
            idx = i * batch_size
            assert_equal(sample, d[idx:idx + batch_size])
            assert_equal(target, labels[idx:idx + batch_size])
        assert i == math.floor((len(dataset) - 1) / batch_size)


def _test_shuffle(data: Any, loader: DataLoader) -> None:
    d, labels, dataset = data
    found_data = dict.fromkeys(range(d.size(0)), 0)
    batch_size = loader.batch_size or 1
    seen = 0
    for i, (batch_samples, batch_targets) in enumerate(loader):
        if loader.batch_size is None:
            batch_samples, batch_targets = [batch_samples], [batch_targets]
        for sample, target in zip(batch_samples, batch_targets, strict=True):
            for data_point_idx, data_point in enumerate(d):
                if data_point.eq(sample).all():
                    assert not found_data[data_point_idx]
                    found_data[data_point_idx] += 1
                    break
            assert_equal(target, labels[data_point_idx])
            seen += 1
        assert sum(found_data.values()) == seen == min((i + 1) * batch_size, len(dataset))
    assert i == math.floor((len(dataset) - 1) / batch_size)


def _test_error(loader: DataLoader) -> None:
    it = iter(loader)
    errors = 0
    while True:
        try:
            next(it)
        except NotImplementedError:
            errors += 1
        except StopIteration:
            assert errors == math.ceil(float(len(loader.dataset)) / loader.batch_size)
            return


def test_error_in_init(data: Any) -> None:
    for num_workers in [0, 2]:
        loader = DataLoader(ErrorIterableDataset(), num_workers=num_workers)
        with pytest.raises(RuntimeError, match="Error in __iter__"):
            list(iter(loader))
    loader = DataLoader(data[2], num_workers=2, worker_init_fn=error_worker_init_fn)
    with pytest.raises(RuntimeError, match="Error in worker_init_fn"):
        list(iter(loader))


def test_typing() -> None:
    class SomeDatasetClass(Dataset[list[torch.Tensor]]):
        pass

    def _create_dataloader(is_train: bool) -> DataLoader[list[torch.Tensor]]:
        pass


def test_invalid_assign_after_init(data: Any) -> None:
    dl = DataLoader(data[2])
    for attr in ("batch_size", "sampler", "batch_sampler", "drop_last", "dataset"):
        with pytest.raises(ValueError):
            setattr(dl, attr, {})


def test_sequential_nonbatch(data: Any) -> None:
    _test_sequential(data, DataLoader(data[2], batch_size=None))


def test_sequential_batch(data: Any) -> None:
    _test_sequential(data, DataLoader(data[2]))
    _test_sequential(data, DataLoader(data[2], batch_size=2))


def test_bulk_loading_nobatch() -> None:
    n = 35
    ds = BulkLoadingDataset(n)
    sampler = BulkLoadingSampler(ds, batch_size=4)
    for num_workers in [0, 4]:
        dl = DataLoader(ds, num_workers=num_workers, batch_size=None, sampler=sampler)
        assert not dl._auto_collation
        samples = list(dl)
        assert not samples[0].is_pinned()
        assert set(torch.cat(samples, 0).tolist()) == set(range(n))


def test_growing_dataset() -> None:
    dataset = [torch.ones(4) for _ in range(4)]
    dataloader_seq = DataLoader(dataset, shuffle=False)
    dataloader_shuffle = DataLoader(dataset, shuffle=True)
    dataset.append(torch.ones(4))
    assert len(dataloader_seq) == 5
    assert len(dataloader_shuffle) == 5


def test_multiple_dataloaders(data: Any) -> None:
    loader1_it = iter(DataLoader(data[2], num_workers=1))
    loader2_it = iter(DataLoader(data[2], num_workers=2))
    for it in (loader1_it, loader1_it, loader2_it, loader2_it, loader1_it, loader2_it):
        next(it)
    del loader1_it
    del loader2_it


def test_invalid_ctor_args_combinations(data: Any) -> None:
    dataset = data[2]
    with pytest.raises(ValueError, match="num_workers option should be non-negative"):
        DataLoader(dataset, num_workers=-1)
    with pytest.raises(ValueError, match="timeout option should be non-negative"):
        DataLoader(dataset, timeout=-1)
    with pytest.raises(ValueError, match="batch_size=None option disables auto-batching and "
                                         "is mutually exclusive"):
        DataLoader(dataset, batch_size=None, drop_last=True)
    import multiprocessing
    valid_ctx = list(multiprocessing.get_all_start_methods())[-1]
    with pytest.raises(ValueError, match=r"multi-process loading \(num_workers > 0\), but got"):
        DataLoader(dataset, num_workers=0, multiprocessing_context=valid_ctx)
    with pytest.raises(ValueError, match="should specify a valid start method in"):
        DataLoader(dataset, num_workers=1, multiprocessing_context="bad")
    with pytest.raises(TypeError, match="multiprocessing_context option should be a valid context "):
        DataLoader(dataset, num_workers=1, multiprocessing_context=object())

    sampler = torch.utils.data.SequentialSampler(dataset)
    batch_sampler = torch.utils.data.BatchSampler(sampler, 3, False)
    with pytest.raises(ValueError, match="sampler option is mutually exclusive with shuffle"):
        DataLoader(dataset, batch_size=11, sampler=sampler, shuffle=True)
    with pytest.raises(ValueError, match="sampler option is mutually exclusive with shuffle"):
        DataLoader(dataset, batch_sampler=batch_sampler, sampler=sampler, shuffle=True)
    with pytest.raises(ValueError, match="sampler option is mutually exclusive with shuffle"):
        DataLoader(dataset, batch_sampler=batch_sampler, sampler=sampler, shuffle=3)
    for kwargs in ({"batch_size": 11}, {"shuffle": True}, {"drop_last": True},
                   {"drop_last": 3}):
        with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive with"):
            DataLoader(dataset, batch_sampler=batch_sampler, **kwargs)

    it_ds = CountingIterableDataset(20)
    for kwargs, what in (({"shuffle": True}, "shuffle"), ({"shuffle": 3}, "shuffle"),
                         ({"sampler": torch.utils.data.SequentialSampler(it_ds)}, "sampler"),
                         ({"sampler": 3}, "sampler"),
                         ({"batch_sampler": torch.utils.data.BatchSampler(
                             torch.utils.data.SequentialSampler(it_ds), 3, False)},
                          "batch_sampler"),
                         ({"batch_sampler": 3}, "batch_sampler")):
        with pytest.raises(ValueError, match="DataLoader with IterableDataset: expected "
                                             f"unspecified {what}"):
            DataLoader(it_ds, **kwargs)


@pytest.mark.parametrize("coll_ty", [list, tuple])
@pytest.mark.parametrize("num_workers", [0, 1])
def test_builtin_collection_conversion(coll_ty: type, num_workers: int) -> None:
    for dataset in (CountingDataset(20), CountingIterableDataset(20)):
        fetched = coll_ty(DataLoader(dataset, batch_size=None, num_workers=num_workers))
        assert fetched == coll_ty(range(20))
        fetched = coll_ty(DataLoader(dataset, batch_size=2, num_workers=num_workers))
        assert_equal(fetched, coll_ty(torch.tensor([i, i + 1]) for i in range(0, 20, 2)))


def test_iterable_style_dataset_single_process() -> None:
    dataset = CountingIterableDataset(20)
    dataloader = DataLoader(dataset, batch_size=None)
    fetched = list(dataloader)
    assert len(fetched) == 20
    for i, d in enumerate(fetched):
        assert isinstance(d, int)
        assert d == i
    assert len(dataloader) == len(dataset)

    fetched = list(DataLoader(CountingIterableDataset(20), batch_size=7))
    assert len(fetched) == 3
    assert fetched[0].tolist() == list(range(7))
    assert fetched[1].tolist() == list(range(7, 14))
    assert fetched[2].tolist() == list(range(14, 20))

    fetched = list(DataLoader(CountingIterableDataset(20), batch_size=7, drop_last=True))
    assert len(fetched) == 2
    assert fetched[0].tolist() == list(range(7))
    assert fetched[1].tolist() == list(range(7, 14))


@pytest.mark.parametrize("prefetch_factor", [2, 3, 4])
def test_iterable_style_dataset_workers(prefetch_factor: int) -> None:
    num_workers = 3
    sizes_for_all_workers = [0, 4, 20]
    expected = sorted(functools.reduce(operator.iadd,
                                       (list(range(s)) for s in sizes_for_all_workers), []))
    dataset = WorkerSpecificIterableDataset(sizes_for_all_workers)
    dataloader = DataLoader(dataset, num_workers=num_workers, batch_size=None,
                            prefetch_factor=prefetch_factor)
    fetched = sorted(iter(dataloader))
    assert len(fetched) == len(expected)
    for a, b in zip(fetched, expected, strict=True):
        assert isinstance(a, int)
        assert a == b
    assert len(dataloader) == len(dataset)

    dataset = WorkerSpecificIterableDataset(sizes_for_all_workers)
    fetched = list(DataLoader(dataset, num_workers=num_workers, batch_size=7,
                              prefetch_factor=prefetch_factor))
    assert len(fetched) == 4
    assert {tuple(t.tolist()) for t in fetched} == {
        tuple(range(4)), tuple(range(7)), tuple(range(7, 14)), tuple(range(14, 20))}

    dataset = WorkerSpecificIterableDataset(sizes_for_all_workers)
    fetched = list(DataLoader(dataset, num_workers=num_workers, batch_size=7, drop_last=True,
                              prefetch_factor=prefetch_factor))
    assert len(fetched) == 2
    assert {tuple(t.tolist()) for t in fetched} == {tuple(range(7)), tuple(range(7, 14))}


@pytest.mark.parametrize("num_workers", [0, 3])
def test_iterable_style_dataset_len_warning(num_workers: int) -> None:
    # NOTE [ IterableDataset and __len__ ]: each worker yields the whole dataset here, so
    # 3 workers fetch 60 samples; a warning once len(dataloader) was asked and exceeded
    kwargs = {"num_workers": num_workers}
    if num_workers:
        kwargs["prefetch_factor"] = 2
    dataloader = DataLoader(CountingIterableDataset(20), **kwargs)
    it = iter(dataloader)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(20 if num_workers == 0 else 40):
            next(it)
    assert len(dataloader) == 20
    it = iter(dataloader)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(20):
            next(it)
    if num_workers == 0:
        with pytest.raises(StopIteration):
            next(it)
        return
    for _ in range(3):
        with pytest.warns(UserWarning, match=r"but [0-9]+ samples have been fetched\. For "
                                             "multiprocessing data-loading, this"):
            next(it)


def test_chain_iterable_style_dataset(data: Any) -> None:
    dataset1 = CountingIterableDataset(20)
    dataset2 = CountingIterableDataset(15)
    expected = list(range(20)) + list(range(15))
    for num_workers in [0, 1]:
        for chained_dataset in [dataset1 + dataset2, ChainDataset([dataset1, dataset2])]:
            fetched = list(DataLoader(chained_dataset, num_workers=num_workers))
            assert len(fetched) == len(expected)
            for e, d in zip(expected, fetched, strict=True):
                assert isinstance(d, torch.Tensor)
                assert_equal(e, d)
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        list(iter(dataset1 + data[2]))
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        list(iter(ChainDataset([dataset1, data[2]])))


@pytest.mark.parametrize("ctx", [None, "fork", "spawn", "forkserver"])
def test_multiprocessing_contexts(ctx: str | None) -> None:
    import multiprocessing
    if ctx is not None and ctx not in multiprocessing.get_all_start_methods():
        pytest.skip(f"{ctx} is not a start method here")
    reference = [torch.arange(3), torch.arange(3, 6), torch.arange(6, 9), torch.arange(9, 11)]
    common = {"num_workers": 3, "batch_size": 3}
    assert_equal(reference, list(DataLoader(CountingDataset(11), multiprocessing_context=ctx,
                                            **common)))
    if ctx is not None:
        assert_equal(reference, list(DataLoader(CountingDataset(11),
                                                multiprocessing_context=multiprocessing
                                                .get_context(ctx), **common)))


def test_multi_epochs_reproducibility() -> None:
    num_workers, batch_size, num_epochs = 2, 10, 3
    dataset = TestMultiEpochDataset(batch_size * num_workers)
    dataloader = DataLoader(dataset, batch_size=batch_size, shuffle=False,
                            num_workers=num_workers)
    for _ in range(num_epochs):
        for batch_idx, sample in enumerate(dataloader):
            assert sample.tolist() == [batch_idx % num_workers] * batch_size


def test_shuffle(data: Any) -> None:
    _test_shuffle(data, DataLoader(data[2], shuffle=True))


def test_shuffle_batch_none(data: Any) -> None:
    _test_shuffle(data, DataLoader(data[2], batch_size=None, shuffle=True))


def test_shuffle_batch(data: Any) -> None:
    _test_shuffle(data, DataLoader(data[2], batch_size=2, shuffle=True))


def test_shuffle_reproducibility(data: Any) -> None:
    for num_workers in (0, 2):
        def fn() -> DataLoader:
            return DataLoader(data[2], shuffle=True, num_workers=num_workers,
                              generator=torch.Generator().manual_seed(42))
        assert_equal(list(fn()), list(fn()))


def test_sequential_workers(data: Any) -> None:
    _test_sequential(data, DataLoader(data[2], num_workers=4))


def test_seqential_batch_workers(data: Any) -> None:
    _test_sequential(data, DataLoader(data[2], batch_size=2, num_workers=4))


def test_seqential_batch_workers_prefetch(data: Any) -> None:
    _test_sequential(data, DataLoader(data[2], batch_size=2, num_workers=4, prefetch_factor=3))


def test_shuffle_workers(data: Any) -> None:
    _test_shuffle(data, DataLoader(data[2], shuffle=True, num_workers=4))


def test_shuffle_batch_workers(data: Any) -> None:
    _test_shuffle(data, DataLoader(data[2], batch_size=2, shuffle=True, num_workers=4))


def test_shuffle_batch_workers_prefetch(data: Any) -> None:
    _test_shuffle(data, DataLoader(data[2], batch_size=2, shuffle=True, num_workers=4,
                                   prefetch_factor=3))


def test_random_sampler(data: Any) -> None:
    from runtime.utils.data import RandomSampler
    dataset = data[2]

    def sample_stat(sampler: Any) -> tuple[int, int, int, int]:
        counts = Counter(sampler)
        count_repeated = sum(val > 1 for val in counts.values())
        return count_repeated, min(counts.keys()), max(counts.keys()), sum(counts.values())

    n = len(dataset) + 1
    count_repeated, minval, maxval, count_total = sample_stat(
        RandomSampler(dataset, replacement=True, num_samples=n))
    assert count_repeated > 0 and minval >= 0 and maxval < len(dataset) and count_total == n

    count_repeated, minval, maxval, count_total = sample_stat(RandomSampler(dataset))
    assert (count_repeated, minval, maxval, count_total) == (0, 0, len(dataset) - 1,
                                                             len(dataset))

    n = len(dataset) * 2
    count_repeated, minval, maxval, count_total = sample_stat(RandomSampler(dataset,
                                                                            num_samples=n))
    assert (count_repeated, minval, maxval, count_total) == (len(dataset), 0,
                                                             len(dataset) - 1, n)

    n = len(dataset) - 1
    count_repeated, minval, maxval, count_total = sample_stat(RandomSampler(dataset,
                                                                            num_samples=n))
    assert count_repeated == 0 and minval >= 0 and maxval < len(dataset) and count_total == n

    n = len(dataset) + 1
    count_repeated, minval, maxval, count_total = sample_stat(RandomSampler(dataset,
                                                                            num_samples=n))
    assert (count_repeated, minval, maxval, count_total) == (1, 0, len(dataset) - 1, n)

    with pytest.raises(TypeError, match="replacement should be a boolean value, but got "
                                        "replacement=0"):
        RandomSampler(dataset, replacement=0)


@pytest.mark.parametrize("replacement", [True, False])
def test_random_sampler_len(data: Any, replacement: bool) -> None:
    from runtime.utils.data import RandomSampler
    dataset = data[2]
    num_samples = len(dataset) + 5
    sampler = RandomSampler(dataset, replacement=replacement, num_samples=num_samples)
    assert len(sampler) == num_samples
    assert sum(1 for _ in sampler) == num_samples
    assert len(DataLoader(dataset, batch_size=1, sampler=sampler)) == num_samples
    assert len(DataLoader(dataset, batch_size=6, sampler=sampler)) == \
        int(math.ceil(float(num_samples) / 6))


def test_random_sampler_bad_num_samples(data: Any) -> None:
    from runtime.utils.data import RandomSampler
    for bad in (0, -1, 2.5):
        with pytest.raises(ValueError, match="num_samples should be a positive integer value, "
                                             f"but got num_samples={bad}"):
            RandomSampler(data[2], num_samples=bad)


def test_distributed_sampler_invalid_rank() -> None:
    from runtime.utils.data.distributed import DistributedSampler
    dataset = torch.IntTensor(range(10))
    with pytest.raises(ValueError, match="Invalid rank"):
        DistributedSampler(dataset, 3, 3)
    with pytest.raises(ValueError, match="Invalid rank"):
        DistributedSampler(dataset, 3, -1)


def test_duplicating_data_with_drop_last() -> None:
    from runtime.utils.data.distributed import DistributedSampler
    num_processes, num_batches = 4, 9
    data_set = torch.IntTensor(range(num_batches))
    scanned_data = torch.IntTensor([])
    for i in range(num_processes):
        s = DistributedSampler(data_set, num_processes, i)
        d_loader = DataLoader(data_set, batch_size=int(num_batches / num_processes),
                              drop_last=True, sampler=s)
        for d in d_loader:
            scanned_data = torch.cat((scanned_data, d), 0)
    assert scanned_data.size() == scanned_data.unique().size()


def _samplers(dataset: Any, seeded: bool) -> list[Any]:
    from runtime.utils.data import RandomSampler, SubsetRandomSampler, WeightedRandomSampler
    weights = [0.1, 0.9, 0.4, 0.7, 3.0, 0.6]

    def g() -> Any:
        return torch.Generator().manual_seed(42) if seeded else None
    return [
        lambda: RandomSampler(dataset, num_samples=5, replacement=True, generator=g()),
        lambda: RandomSampler(dataset, replacement=False, generator=g()),
        lambda: WeightedRandomSampler(weights, num_samples=5, replacement=True, generator=g()),
        lambda: WeightedRandomSampler(weights, num_samples=5, replacement=False, generator=g()),
        lambda: SubsetRandomSampler(range(10), generator=g()),
    ]


def test_sampler_reproducibility(data: Any) -> None:
    for fn in _samplers(data[2], True):
        assert list(fn()) == list(fn())
    for fn in _samplers(data[2], False):
        sampler = fn()
        torch.manual_seed(0)
        l1 = list(sampler) + list(sampler)
        torch.manual_seed(0)
        l2 = list(sampler) + list(sampler)
        assert l1 == l2
        its = (iter(sampler), iter(sampler))
        ls: tuple[list[int], list[int]] = ([], [])
        for idx in range(len(sampler)):
            for i in range(2):
                if idx == 0:
                    torch.manual_seed(0)
                ls[i].append(next(its[i]))
        assert ls[0] == ls[1]


def test_sampler_orders_equal_torch(data: Any) -> None:
    """The seeded samplers draw PyTorch's indices (rt's samplers follow its streams)."""
    tt = pytest.importorskip("torch")
    from torch.utils.data import (RandomSampler, SubsetRandomSampler,  # noqa: F401
                                  WeightedRandomSampler)
    weights = [0.1, 0.9, 0.4, 0.7, 3.0, 0.6]
    ds = list(range(100))
    cases = [
        ("RandomSampler", (ds,), {"num_samples": 5, "replacement": True}),
        ("RandomSampler", (ds,), {"num_samples": 70, "replacement": True}),
        ("RandomSampler", (ds,), {"replacement": False}),
        ("RandomSampler", (ds,), {"replacement": False, "num_samples": 250}),
        ("WeightedRandomSampler", (weights, 5), {"replacement": True}),
        ("WeightedRandomSampler", (weights, 5), {"replacement": False}),
        ("SubsetRandomSampler", (range(10),), {}),
    ]
    for name, args, kwargs in cases:
        ours = getattr(torch.utils.data, name)(*args, **kwargs,
                                               generator=torch.Generator().manual_seed(42))
        theirs = getattr(tt.utils.data, name)(*args, **kwargs,
                                              generator=tt.Generator().manual_seed(42))
        assert list(ours) == list(theirs), (name, kwargs)


def test_shuffle_order_equals_torch() -> None:
    tt = pytest.importorskip("torch")
    ours = DataLoader(list(range(20)), batch_size=3, shuffle=True, drop_last=True,
                      generator=torch.Generator().manual_seed(7))
    theirs = tt.utils.data.DataLoader(list(range(20)), batch_size=3, shuffle=True,
                                      drop_last=True, generator=tt.Generator().manual_seed(7))
    assert [b.tolist() for b in ours] == [b.tolist() for b in theirs]
    torch.manual_seed(3)
    tt.manual_seed(3)
    ours = DataLoader(list(range(20)), batch_size=4, shuffle=True)
    theirs = tt.utils.data.DataLoader(list(range(20)), batch_size=4, shuffle=True)
    assert [b.tolist() for b in ours] == [b.tolist() for b in theirs]
    assert [b.tolist() for b in ours] == [b.tolist() for b in theirs]


def test_random_split_equals_torch() -> None:
    tt = pytest.importorskip("torch")
    for lengths in ([3, 7], [0.3, 0.7], [0.1, 0.2, 0.3, 0.4]):
        ours = random_split(range(10), lengths, generator=torch.Generator().manual_seed(1))
        theirs = tt.utils.data.random_split(range(10), lengths,
                                            generator=tt.Generator().manual_seed(1))
        assert [list(s) for s in ours] == [list(s) for s in theirs]


@pytest.mark.parametrize("num_workers", [0, 4])
def test_sampler(data: Any, num_workers: int) -> None:
    indices = range(2, 12)
    dl = DataLoader(data[2], sampler=indices, batch_size=2, num_workers=num_workers)
    assert len(dl) == 5
    for i, (inp, _target) in enumerate(dl):
        assert len(inp) == 2
        assert_equal(inp, data[0][i * 2 + 2:i * 2 + 4])


@pytest.mark.parametrize("num_workers", [0, 4])
def test_batch_sampler(data: Any, num_workers: int) -> None:
    batches = []
    for i in range(0, 20, 5):
        batches.append(tuple(range(i, i + 2)))
        batches.append(tuple(range(i + 2, i + 5)))
    dl = DataLoader(data[2], batch_sampler=batches, num_workers=num_workers)
    assert len(dl) == 8
    for i, (inp, _target) in enumerate(dl):
        offset = i * 5 // 2
        size = 2 if i % 2 == 0 else 3
        assert len(inp) == size
        assert_equal(inp, data[0][offset:offset + size])


def test_batch_sampler_checks_and_len() -> None:
    from runtime.utils.data import BatchSampler, SequentialSampler
    s = SequentialSampler(range(10))
    assert list(BatchSampler(s, 3, False)) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert list(BatchSampler(s, 3, True)) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert len(BatchSampler(s, 3, False)) == 4
    assert len(BatchSampler(s, 3, True)) == 3
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="batch_size should be a positive integer value, "
                                             f"but got batch_size={bad}"):
            BatchSampler(s, bad, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value, but got "
                                         "drop_last=1"):
        BatchSampler(s, 2, 1)


def test_weighted_random_sampler_checks() -> None:
    from runtime.utils.data import WeightedRandomSampler
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, "
                                         "but got num_samples=0"):
        WeightedRandomSampler([1.0, 2.0], 0)
    with pytest.raises(ValueError, match="replacement should be a boolean value, but got "
                                         "replacement=1"):
        WeightedRandomSampler([1.0, 2.0], 1, replacement=1)
    with pytest.raises(ValueError, match=r"weights should be a 1d sequence but given weights "
                                         r"have shape \(1, 2\)"):
        WeightedRandomSampler([[1.0, 2.0]], 1)
    s = WeightedRandomSampler([0.0, 1.0, 0.0], 20)
    assert list(s) == [1] * 20
    assert len(s) == 20


def test_numpy() -> None:
    class TestDataset(Dataset):
        def __getitem__(self, i: int) -> np.ndarray:
            return np.ones((2, 3, 4)) * i

        def __len__(self) -> int:
            return 1000

    batch = next(iter(DataLoader(TestDataset(), batch_size=12)))
    assert isinstance(batch, torch.DoubleTensor)
    assert batch.size() == torch.Size([12, 2, 3, 4])


def test_error() -> None:
    _test_error(DataLoader(ErrorDataset(100), batch_size=2, shuffle=True))


def test_error_workers() -> None:
    _test_error(DataLoader(ErrorDataset(41), batch_size=2, shuffle=True, num_workers=4))


def test_partial_workers(data: Any) -> None:
    loader = iter(DataLoader(data[2], batch_size=2, num_workers=4))
    for i, _ in enumerate(loader):
        if i == 10:
            break
    assert i == 10
    del loader


def test_len(data: Any) -> None:
    def check_len(dl: Any, expected: int) -> None:
        assert len(dl) == expected
        assert sum(1 for _ in dl) == expected
    check_len(data[2], 100)
    check_len(DataLoader(data[2], batch_size=2), 50)
    check_len(DataLoader(data[2], batch_size=3), 34)


def test_iterabledataset_len() -> None:
    class TenDataset(torch.utils.data.IterableDataset):
        def __len__(self) -> int:
            return 10

        def __iter__(self):
            return iter(range(10))

    for batch_size, drop_last, expected in ((1, False, 10), (1, True, 10), (2, False, 5),
                                            (2, True, 5), (3, False, 4), (3, True, 3)):
        assert len(DataLoader(TenDataset(), batch_size=batch_size,
                              drop_last=drop_last)) == expected


def test_iterabledataset_without_len() -> None:
    class NoLen(IterableDataset):
        def __iter__(self):
            return iter(range(3))

    with pytest.raises(TypeError, match="object of type 'NoLen' has no len()"):
        len(DataLoader(NoLen()))


def test_numpy_scalars() -> None:
    class ScalarDataset(Dataset):
        def __init__(self, dtype: Any) -> None:
            self.dtype = dtype

        def __getitem__(self, i: int) -> Any:
            return self.dtype()

        def __len__(self) -> int:
            return 4

    dtypes = {np.float64: torch.DoubleTensor, np.float32: torch.FloatTensor,
              np.float16: torch.HalfTensor, np.int64: torch.LongTensor,
              np.int32: torch.IntTensor, np.int16: torch.ShortTensor,
              np.int8: torch.CharTensor, np.uint8: torch.ByteTensor}
    for dt, tt in dtypes.items():
        batch = next(iter(DataLoader(ScalarDataset(dt), batch_size=2)))
        assert isinstance(batch, tt), (dt, batch.dtype)


def test_default_convert_mapping_keep_type() -> None:
    data = CustomDict({"a": 1, "b": 2})
    converted = _collate.default_convert(data)
    assert converted == data
    assert type(converted) is CustomDict


def test_default_convert_sequence_keep_type() -> None:
    data = CustomList([1, 2, 3])
    converted = _collate.default_convert(data)
    assert converted == data
    assert type(converted) is CustomList


def test_default_convert_sequence_dont_keep_type() -> None:
    assert _collate.default_convert(range(2)) == [0, 1]


def test_default_convert_numpy() -> None:
    out = _collate.default_convert({"a": np.arange(3), "b": (np.float32(1.5), "s")})
    assert isinstance(out["a"], torch.Tensor) and out["a"].dtype == torch.int64
    assert isinstance(out["b"], list)
    assert out["b"][0].dtype == torch.float32 and out["b"][1] == "s"
    strings = np.array(["a", "b"])
    assert _collate.default_convert(strings) is strings


def test_default_collate_dtype() -> None:
    arr = [1, 2, -1]
    collated = _collate.default_collate(arr)
    assert_equal(collated, torch.tensor(arr))
    assert collated.dtype == torch.int64
    arr = [1.1, 2.3, -0.9]
    collated = _collate.default_collate(arr)
    assert_equal(collated, torch.tensor(arr, dtype=torch.float64))
    assert collated.dtype == torch.float64
    arr = [True, False]
    collated = _collate.default_collate(arr)
    assert_equal(collated, torch.tensor(arr))
    assert collated.dtype == torch.bool
    arr = ["a", "b", "c"]
    assert arr == _collate.default_collate(arr)


def test_default_collate_mapping_keep_type() -> None:
    batch = [CustomDict({"a": 1, "b": 2}), CustomDict({"a": 3, "b": 4})]
    collated = _collate.default_collate(batch)
    assert type(collated) is CustomDict
    assert_equal(dict(collated), {"a": torch.tensor([1, 3]), "b": torch.tensor([2, 4])})


def test_default_collate_sequence_keep_type() -> None:
    batch = [CustomList([1, 2, 3]), CustomList([4, 5, 6])]
    collated = _collate.default_collate(batch)
    assert type(collated) is CustomList
    assert_equal(list(collated), [torch.tensor([1, 4]), torch.tensor([2, 5]),
                                  torch.tensor([3, 6])])


def test_default_collate_sequence_dont_keep_type() -> None:
    collated = _collate.default_collate([range(2), range(2)])
    assert isinstance(collated, list)
    assert_equal(collated, [torch.tensor([0, 0]), torch.tensor([1, 1])])


def test_default_collate_tuples_become_lists() -> None:
    collated = _collate.default_collate([(1, 2.0, "a"), (3, 4.0, "b")])
    assert isinstance(collated, list)
    assert_equal(collated[0], torch.tensor([1, 3]))
    assert collated[1].dtype == torch.float64
    assert collated[2] == ("a", "b")


def test_default_collate_bad_numpy_types() -> None:
    arr = np.array(["a", "b", "c"])
    assert_equal(list(arr), list(_collate.default_collate(arr)))
    for bad in (np.array([[["a", "b", "c"]]]), np.array([object(), object(), object()]),
                np.array([[[object(), object(), object()]]])):
        with pytest.raises(TypeError):
            _collate.default_collate(bad)


def test_default_collate_bad_type_message() -> None:
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors, numpy "
                                        "arrays, numbers, dicts or lists; found <class "
                                        "'object'>"):
        _collate.default_collate([object(), object()])


def test_default_collate_numpy_memmap() -> None:
    with tempfile.TemporaryFile() as f:
        arr = np.array([[0, 1], [2, 3], [4, 5], [6, 7]])
        arr_memmap = np.memmap(f, dtype=arr.dtype, mode="w+", shape=arr.shape)
        arr_memmap[:] = arr[:]
        arr_new = np.memmap(f, dtype=arr.dtype, mode="r", shape=arr.shape)
        t = _collate.default_collate(list(arr_new))
    assert (t == t.new_tensor([[0, 1], [2, 3], [4, 5], [6, 7]])).all().item()


def test_default_collate_bad_sequence_type() -> None:
    batch = [["X"], ["X", "X"]]
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal "
                                           "size"):
        _collate.default_collate(batch)
    with pytest.raises(RuntimeError):
        _collate.default_collate(batch[::-1])


def test_default_collate_equals_torch() -> None:
    tt = pytest.importorskip("torch")
    batch = [{"x": np.full((2,), i, dtype=np.float32), "n": i, "f": i / 2, "b": bool(i % 2),
              "s": str(i), "t": (np.int16(i), [i, i + 1])} for i in range(3)]
    ours = torch.utils.data.default_collate(batch)
    theirs = tt.utils.data.default_collate(batch)

    def same(a: Any, b: Any) -> None:
        if isinstance(b, tt.Tensor):
            assert isinstance(a, torch.Tensor)
            assert str(a.dtype) == str(b.dtype).replace("torch.", "runtime."), (a.dtype, b.dtype)
            np.testing.assert_array_equal(a.numpy(), b.numpy())
        elif isinstance(b, dict):
            assert a.keys() == b.keys()
            for k in b:
                same(a[k], b[k])
        elif isinstance(b, (list, tuple)):
            assert type(a) is type(b) and len(a) == len(b)
            for x, y in zip(a, b, strict=True):
                same(x, y)
        else:
            assert a == b
    same(ours, theirs)


def test_excessive_thread_creation_warning(data: Any) -> None:
    with pytest.warns(UserWarning, match=r"excessive worker creation might get DataLoader "
                                         "running slow or even freeze"):
        DataLoader(data[2], batch_size=2, num_workers=1000)


def test_worker_init_fn_runs_in_each_worker() -> None:
    ids: list[int] = []
    dl = DataLoader(CountingDataset(8), batch_size=2, num_workers=2,
                    worker_init_fn=ids.append)
    assert [b.tolist() for b in dl] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert sorted(ids) == [0, 1]


def test_get_worker_info() -> None:
    assert torch.utils.data.get_worker_info() is None
    infos: list[Any] = []

    class InfoDataset(Dataset):
        def __getitem__(self, idx: int) -> int:
            info = torch.utils.data.get_worker_info()
            infos.append(info)
            return info.id

        def __len__(self) -> int:
            return 6

    dataset = InfoDataset()
    out = torch.cat(list(DataLoader(dataset, batch_size=2, num_workers=2))).tolist()
    assert out == [0, 0, 1, 1, 0, 0]
    info = infos[0]
    assert info.num_workers == 2 and info.dataset is dataset
    for k in ["id", "num_workers", "seed", "dataset"]:
        assert f"{k}=" in repr(info)
    # PyTorch 2.13's WorkerInfo is a frozen dataclass (the older test's RuntimeError
    # "Cannot assign attributes to WorkerInfo objects" is gone)
    import dataclasses
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'id'"):
        info.id = 3999
    with pytest.raises(TypeError):  # a slots dataclass's, in PyTorch too
        info.a = 3
    assert torch.utils.data.get_worker_info() is None


# -------------------------------------------------------------------- TestDictDataLoader

class DictDataset(Dataset):
    def __len__(self) -> int:
        return 4

    def __getitem__(self, ndx: int) -> dict[str, Any]:
        return {"a_tensor": torch.empty(4, 2).fill_(ndx), "another_dict": {"a_number": ndx}}


@pytest.mark.parametrize("persistent_workers", [False, True])
def test_dict_sequential_batch(persistent_workers: bool) -> None:
    kwargs = {"num_workers": 1} if persistent_workers else {}
    loader = DataLoader(DictDataset(), batch_size=2, shuffle=False,
                        persistent_workers=persistent_workers, **kwargs)
    batch_size = loader.batch_size
    for i, sample in enumerate(loader):
        idx = i * batch_size
        assert set(sample.keys()) == {"a_tensor", "another_dict"}
        assert set(sample["another_dict"].keys()) == {"a_number"}
        t = sample["a_tensor"]
        assert t.size() == torch.Size([batch_size, 4, 2])
        assert (t[0] == idx).all()
        assert (t[1] == idx + 1).all()
        n = sample["another_dict"]["a_number"]
        assert n.size() == torch.Size([batch_size])
        assert n[0] == idx
        assert n[1] == idx + 1


def test_pin_memory_with_only_device_does_not_pin() -> None:
    loader = DataLoader(DictDataset(), batch_size=2)
    for sample in loader:
        assert not sample["a_tensor"].is_pinned()


# --------------------------------------------------------- TestDataLoaderPersistentWorkers

class DummyDataset(Dataset):
    def __init__(self) -> None:
        self.data = list(range(10))

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, idx: Any) -> int:
        if torch.is_tensor(idx):
            idx = idx.tolist()
        assert self.start == 0
        return self.data[idx]


def test_persistent_workers_sequential(data: Any) -> None:
    loader = DataLoader(data[2], batch_size=2, num_workers=2, persistent_workers=True)
    for _ in range(2):
        _test_sequential(data, loader)


def test_persistent_workers_invalid() -> None:
    with pytest.raises(ValueError, match="persistent_workers option needs num_workers > 0"):
        DataLoader(CountingDataset(4), persistent_workers=True)
    with pytest.raises(ValueError, match="prefetch_factor option could only be specified in "
                                         "multiprocessing"):
        DataLoader(CountingDataset(4), prefetch_factor=2)


# -------------------------------------------------------------- TestNamedTupleDataLoader

class NamedTupleDataset(Dataset):
    Batch = namedtuple("Batch", ["data", "label", "random_tensor"])
    Data = namedtuple("Data", ["positive", "negative"])

    def __len__(self) -> int:
        return 4

    def __getitem__(self, ndx: int) -> Any:
        return self.Batch(data=self.Data(positive=ndx, negative=-ndx), label=str(ndx),
                          random_tensor=torch.randn(3))


def test_dataloader_with_namedtuple() -> None:
    dataset = NamedTupleDataset()
    for batch in DataLoader(dataset, batch_size=2):
        assert isinstance(batch, NamedTupleDataset.Batch)
        assert not batch.random_tensor.is_pinned()
        assert isinstance(batch.data, NamedTupleDataset.Data)
        assert isinstance(batch.data.positive, torch.Tensor)
        assert batch.label in (("0", "1"), ("2", "3"))  # strings stay PyTorch's tuple
    for batch in DataLoader(dataset, batch_size=None):
        assert isinstance(batch, NamedTupleDataset.Batch)
        assert isinstance(batch.data, NamedTupleDataset.Data)
        assert not isinstance(batch.data.positive, torch.Tensor)


# ------------------------------------------------------------- TestIndividualWorkerQueue

class TestWorkerQueueDataset(Dataset):
    def __init__(self, d: list[int]) -> None:
        self.data = d

    def __getitem__(self, item: int) -> tuple[int, int]:
        return torch.utils.data.get_worker_info().id, self.data[item]

    def __len__(self) -> int:
        return len(self.data)


@pytest.mark.parametrize("batch_size", [8, 16, 32, 64])
def test_ind_worker_queue(batch_size: int) -> None:
    # PyTorch's test records each worker's id through worker_init_fn on its dataset copy;
    # rt's worker threads share the dataset, so each sample asks get_worker_info()
    dataset = TestWorkerQueueDataset(list(range(128)))
    for num_workers in range(1, 3):
        loader = DataLoader(dataset, batch_size=batch_size, shuffle=False,
                            num_workers=num_workers, timeout=5)
        current_worker_idx = 0
        for i, (worker_ids, sample) in enumerate(loader):
            assert worker_ids.tolist() == [current_worker_idx] * batch_size
            assert sample.tolist() == list(range(i * batch_size, (i + 1) * batch_size))
            current_worker_idx = (current_worker_idx + 1) % num_workers


def test_legacy_constructor_takes_any_sequence() -> None:
    """torch.IntTensor(range(10)) (test_distributed_sampler_invalid_rank's dataset): the
    legacy constructors take any sequence, as PyTorch's PySequence_Check; bytes is an
    invalid data type, an iterator or a dict is no sequence."""
    import array
    assert torch.IntTensor(range(4)).tolist() == [0, 1, 2, 3]
    assert torch.IntTensor(range(4)).dtype == torch.int32
    assert torch.Tensor(array.array("f", [1, 2])).tolist() == [1.0, 2.0]
    with pytest.raises(TypeError, match="new\\(\\): invalid data type 'bytes'"):
        torch.Tensor(b"ab")
    with pytest.raises(TypeError, match=r"new\(\): data must be a sequence \(got dict\)"):
        torch.Tensor({1: 2})
    with pytest.raises(TypeError, match=r"data must be a sequence \(got list_iterator\)"):
        torch.Tensor(iter([1]))


@pytest.mark.parametrize("kwargs", [{"shuffle": True, "seed": 3}, {"shuffle": False},
                                    {"shuffle": True, "drop_last": True}])
@pytest.mark.parametrize("n", [10, 11])
def test_distributed_sampler_equals_torch(kwargs: dict[str, Any], n: int) -> None:
    tt = pytest.importorskip("torch")
    from runtime.utils.data import DistributedSampler
    for rank in range(3):
        ours = DistributedSampler(list(range(n)), num_replicas=3, rank=rank, **kwargs)
        theirs = tt.utils.data.DistributedSampler(list(range(n)), num_replicas=3, rank=rank,
                                                  **kwargs)
        ours.set_epoch(2)
        theirs.set_epoch(2)
        assert list(ours) == list(theirs)
        assert len(ours) == len(theirs)


def test_unseeded_samplers_follow_manual_seed_as_torch() -> None:
    tt = pytest.importorskip("torch")
    for name, args, kwargs in (("SubsetRandomSampler", (range(8),), {}),
                               ("WeightedRandomSampler", ([1.0, 2.0, 3.0], 6), {}),
                               ("RandomSampler", (range(8),), {}),
                               ("RandomSampler", (range(8),),
                                {"replacement": True, "num_samples": 5})):
        torch.manual_seed(5)
        tt.manual_seed(5)
        ours = list(getattr(torch.utils.data, name)(*args, **kwargs))
        theirs = list(getattr(tt.utils.data, name)(*args, **kwargs))
        assert ours == theirs, name
        assert_equal(torch.rand(3), tt.rand(3).numpy())  # the same draws consumed


class SynchronizedSeedDataset(Dataset):
    """PyTorch's: each worker waits at a barrier on its first sample, so every worker
    fetches one; each sample is torch.initial_seed() in its worker."""

    def __init__(self, size: int, num_workers: int) -> None:
        import threading
        self.size = size
        self.barrier = threading.Barrier(num_workers, timeout=30)
        self.synced: set[int] = set()

    def __getitem__(self, idx: int) -> int:
        info = torch.utils.data.get_worker_info()
        if info.id not in self.synced:
            self.synced.add(info.id)
            self.barrier.wait()
        return torch.initial_seed()

    def __len__(self) -> int:
        return self.size


def test_worker_seed() -> None:
    """Each worker's default generator is seeded with its own seed (base seed + id)."""
    num_workers = 6
    dataset = SynchronizedSeedDataset(num_workers, num_workers)
    with pytest.warns(UserWarning, match="excessive worker creation"):
        dataloader = DataLoader(dataset, batch_size=1, num_workers=num_workers)
        seeds = {int(batch[0]) for batch in dataloader}
    assert len(seeds) == num_workers


def test_worker_seed_reproducibility() -> None:
    num_workers = 6

    def get_dataloader() -> DataLoader:
        return DataLoader(SynchronizedSeedDataset(num_workers, num_workers), batch_size=1,
                          num_workers=num_workers, generator=torch.Generator().manual_seed(42))

    with pytest.warns(UserWarning, match="excessive worker creation"):
        assert {int(b) for b in get_dataloader()} == {int(b) for b in get_dataloader()}


def test_worker_init_fn() -> None:
    """torch.manual_seed in worker_init_fn seeds that worker's generator (and not the main
    thread's)."""
    torch.manual_seed(7)
    dataloader = DataLoader(SeedDataset(4), batch_size=2, num_workers=2,
                            worker_init_fn=lambda _: torch.manual_seed(12345))
    for batch in dataloader:
        assert batch[0] == 12345
        assert batch[1] == 12345
    assert torch.initial_seed() == 7


class RandomDatasetMock(Dataset):
    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.tensor([torch.rand(1).item(), torch.randn(1).item()])

    def __len__(self) -> int:
        return 1000


def test_random_seed() -> None:
    """test_utils.py's TestDataLoaderUtils.test_random_seed: a seeded loader whose workers
    draw torch's random numbers gives the same batches (its random.uniform column is left
    out: Python's random module is one per process, shared by rt's worker threads)."""
    def run() -> list[torch.Tensor]:
        dataloader = DataLoader(RandomDatasetMock(), batch_size=2, num_workers=2,
                                shuffle=True, timeout=300)
        it = iter(dataloader)
        return [next(it) for _ in range(4)]

    torch.manual_seed(2018)
    x1 = run()
    torch.manual_seed(2018)
    x2 = run()
    assert_equal(x1, x2)


def test_dataloader_utils_keep_and_drop() -> None:
    """test_utils.py's TestDataLoaderUtils: a tensor as the dataset."""
    dataset = torch.randn(5, 3, 3, 2)
    for num_workers in (0, 2):
        assert len(list(DataLoader(dataset, batch_size=3, num_workers=num_workers,
                                   drop_last=False))) == 2
        assert len(list(DataLoader(dataset, batch_size=3, num_workers=num_workers,
                                   drop_last=True))) == 1


def test_assert_true() -> None:
    """test_utils.py's TestAssert."""
    torch._assert(True, "foo")
    with pytest.raises(AssertionError, match="bar"):
        torch._assert(False, "bar")
    torch._assert(torch.tensor([True], dtype=torch.bool), "foo")
    with pytest.raises(AssertionError, match="bar"):
        torch._assert(torch.tensor([False], dtype=torch.bool), "bar")


def test_device_context_and_default_device() -> None:
    """test_utils.py's TestDeviceUtils on the CPU (rt has no meta device: DESIGN.md's
    devices are the CPU and CUDA GPUs)."""
    with torch.device("cpu") as dev:
        x = torch.empty(3, 3)
        m = torch.nn.Linear(4, 5)
    assert x.device.type == "cpu"
    assert dev == torch.device("cpu")
    assert m.weight.device.type == "cpu"
    try:
        torch.set_default_device("cpu")
        r = torch.empty(2, 2)
    finally:
        torch.set_default_device(None)
    assert r.device.type == "cpu"


def test_timeout_needs_workers() -> None:
    """PyTorch's single-process iterator asserts timeout == 0 (a timeout bounds the wait for
    a worker's batch only)."""
    loader = DataLoader([1, 2], timeout=5)
    with pytest.raises(AssertionError, match="_SingleProcessDataLoaderIter requires "
                                             "timeout == 0"):
        iter(loader)
    assert [b.tolist() for b in DataLoader([1, 2], timeout=5, num_workers=1)] == [[1], [2]]


def test_iterable_dataset_is_abstract() -> None:
    """IterableDataset is an abstract collections.abc.Iterable, as PyTorch's: without
    __iter__ it cannot be instantiated."""
    import collections.abc
    with pytest.raises(TypeError, match="Can't instantiate abstract class IterableDataset"):
        IterableDataset()

    class NoIter(IterableDataset):
        pass

    with pytest.raises(TypeError, match="Can't instantiate abstract class NoIter"):
        NoIter()
    assert isinstance(CountingIterableDataset(3), collections.abc.Iterable)
    assert list(CountingIterableDataset(3)) == [0, 1, 2]


def test_default_collate_of_ints_past_int64_overflows_as_torch() -> None:
    """default_collate([2 ** 63, 1]) is torch.tensor of the list: PyTorch's ValueError
    (rt.tensor made it float64, numpy's promotion)."""
    for batch in ([2 ** 63, 1], [1, -(2 ** 63) - 1], [2 ** 64, 1]):
        with pytest.raises(ValueError, match="Overflow when unpacking long long"):
            _collate.default_collate(batch)
    for data in ([[2 ** 63], [1]], [-1, 2 ** 63]):
        with pytest.raises(ValueError, match="Overflow when unpacking long long"):
            torch.tensor(data)
    assert torch.tensor([2 ** 63, 1.5]).dtype == torch.float32
    assert torch.tensor([2 ** 63, 1], dtype=torch.float64).tolist() == [2.0 ** 63, 1.0]


@pytest.mark.parametrize("arr,name", [(np.array(["2020-01-01"], dtype="datetime64[D]"),
                                       "datetime64"),
                                      (np.array(["a"]), "str_"),
                                      (np.array([object()]), "object_"),
                                      (np.array([1], dtype=np.longdouble), "longdouble")])
def test_numpy_arrays_of_no_tensor_dtype_raise_torch_error(arr: np.ndarray, name: str) -> None:
    """default_convert/as_tensor/tensor/from_numpy of an array no tensor dtype fits: PyTorch's
    TypeError naming the numpy type and listing the supported ones."""
    msg = (f"can't convert np.ndarray of type numpy.{name}. The only supported types are: "
           "float64, float32, float16, complex64, complex128, int64, int32, int16, int8, "
           "uint64, uint32, uint16, uint8, and bool.")
    fns = [torch.as_tensor, torch.from_numpy, torch.tensor,
           lambda a: torch.tensor(a, dtype=torch.float32)]
    if name in ("datetime64", "longdouble"):
        fns.append(_collate.default_convert)
    for fn in fns:
        with pytest.raises(TypeError) as info:
            fn(arr)
        assert str(info.value) == msg


def test_numpy_array_of_the_other_byte_order_raises_torch_error() -> None:
    arr = np.array([1, 2], dtype=">f4" if np.little_endian else "<f4")
    for fn in (torch.as_tensor, torch.tensor, torch.from_numpy):
        with pytest.raises(ValueError, match="given numpy array has byte order different "
                                             "from the native byte order"):
            fn(arr)


def test_worker_draws_equal_torchs() -> None:
    """A dataset drawing rt.rand in two workers gives PyTorch's numbers: each worker's
    generator is seeded with PyTorch's worker seed (base seed + id), for a loader with its
    own generator and for one seeded by manual_seed."""
    tt = pytest.importorskip("torch")

    def batches(mod: Any) -> list[list[float]]:
        class DS(mod.utils.data.Dataset):
            def __getitem__(self, i: int) -> Any:
                info = mod.utils.data.get_worker_info()
                return mod.tensor([float(i), mod.rand(1).item(),
                                   float(mod.initial_seed() % 1000003),
                                   float(info.seed % 1000003)])

            def __len__(self) -> int:
                return 8

        out = [b.tolist() for b in mod.utils.data.DataLoader(
            DS(), batch_size=2, num_workers=2, generator=mod.Generator().manual_seed(42))]
        mod.manual_seed(5)
        out += [b.tolist() for b in mod.utils.data.DataLoader(DS(), batch_size=2,
                                                              num_workers=2, shuffle=True)]
        return out

    assert batches(torch) == batches(tt)


def test_worker_key_error_prints_readably() -> None:
    """A KeyError raised in a worker is raised again with a message that prints as text
    (torch's KeyErrorMessage): KeyError's str() is its argument's repr, which showed the
    carried traceback's newlines as backslash-n."""
    class Bad(Dataset):
        def __getitem__(self, i: int) -> int:
            raise KeyError("boom")

        def __len__(self) -> int:
            return 2

    with pytest.raises(KeyError) as info:
        list(DataLoader(Bad(), num_workers=1))
    text = str(info.value)
    assert text.startswith("Caught KeyError in DataLoader worker")
    assert "\n" in text and "\\n" not in text
    assert text.splitlines()[-1] == "KeyError: 'boom'"


def test_text_in_tensor_data_raises_torch_errors() -> None:
    """WeightedRandomSampler("abc", 2) (torch.as_tensor of its weights) and rt.tensor of
    text: PyTorch's errors (a str alone, or after numbers, an invalid data type; a str as
    the first scalar of a list 'too many dimensions')."""
    from runtime.utils.data import WeightedRandomSampler
    with pytest.raises(TypeError, match="new\\(\\): invalid data type 'str'"):
        WeightedRandomSampler("abc", 2)
    for data, err, msg in (("abc", TypeError, "new\\(\\): invalid data type 'str'"),
                           (b"ab", TypeError, "new\\(\\): invalid data type 'bytes'"),
                           ([b"a"], TypeError, "new\\(\\): invalid data type 'bytes'"),
                           ([1, "a"], TypeError, "new\\(\\): invalid data type 'str'"),
                           ([[1], ["a"]], TypeError, "new\\(\\): invalid data type 'str'"),
                           (["a"], ValueError, "too many dimensions 'str'"),
                           ([["ab", "c"]], ValueError, "too many dimensions 'str'")):
        with pytest.raises(err, match=msg):
            torch.tensor(data)
        with pytest.raises(err, match=msg):
            torch.as_tensor(data, dtype=torch.float64)
    assert torch.tensor(bytearray(b"ab")).tolist() == [97, 98]


def test_weighted_sampler_of_no_weights_and_empty_multinomial() -> None:
    from runtime.utils.data import WeightedRandomSampler
    with pytest.raises(RuntimeError, match=r"invalid multinomial distribution \(sum of "
                                           r"probabilities <= 0\)"):
        list(WeightedRandomSampler([], 2, generator=torch.Generator().manual_seed(0)))
    for replacement in (True, False):
        assert torch.multinomial(torch.ones(0, 3), 2, replacement).shape == (0, 2)


def test_random_split_of_float_lengths_that_are_no_fractions() -> None:
    """random_split(range(5), [2.0, 3.0]): PyTorch's randperm(5.0) TypeError (rt split by
    the dataset's length)."""
    with pytest.raises(TypeError, match="randperm"):
        random_split(range(5), [2.0, 3.0])
    # PyTorch accepts a negative length: its slices, indices[0:-1] and indices[-1:5]
    assert [len(s) for s in random_split(range(5), [-1, 6])] == [4, 1]


# ------------------------------------------- TestDataLoaderPersistentWorkers (its reruns)

def test_persistent_sequential_and_shuffle(data: Any) -> None:
    """TestDataLoaderPersistentWorkers reruns TestDataLoader with persistent workers: the
    same batches epoch after epoch from the same threads."""
    for kwargs in ({"batch_size": 2}, {"batch_size": None}, {"batch_size": 3}):
        loader = DataLoader(data[2], num_workers=2, persistent_workers=True, **kwargs)
        for _ in range(2):
            _test_sequential(data, loader)
    loader = DataLoader(data[2], batch_size=2, shuffle=True, num_workers=2,
                        persistent_workers=True)
    for _ in range(2):
        _test_shuffle(data, loader)


def test_persistent_multi_epochs_iterable() -> None:
    num_workers, batch_size = 2, 10
    dataset = TestMultiEpochDataset(batch_size * num_workers)
    dataloader = DataLoader(dataset, batch_size=batch_size, shuffle=False,
                            num_workers=num_workers, persistent_workers=True)
    for _ in range(3):
        for batch_idx, sample in enumerate(dataloader):
            assert sample.tolist() == [batch_idx % num_workers] * batch_size


def test_persistent_partial_epochs_restart() -> None:
    """An epoch left early, then a full one: the full epoch starts at the beginning."""
    dataloader = DataLoader(CountingDataset(10), batch_size=2, num_workers=2,
                            persistent_workers=True)
    it = iter(dataloader)
    next(it)
    next(it)
    assert [b.tolist() for b in dataloader] == [[i, i + 1] for i in range(0, 10, 2)]
    assert [b.tolist() for b in dataloader] == [[i, i + 1] for i in range(0, 10, 2)]


def test_persistent_shuffle_reproducibility(data: Any) -> None:
    def epochs() -> list[Any]:
        loader = DataLoader(data[2], batch_size=4, shuffle=True, num_workers=2,
                            persistent_workers=True, generator=torch.Generator().manual_seed(3))
        return [[b[1].tolist() for b in loader] for _ in range(2)]
    a, b = epochs(), epochs()
    assert a == b and a[0] != a[1]


@pytest.mark.parametrize("persistent", [False, True])
def test_epochs_of_worker_draws_equal_torchs(persistent: bool) -> None:
    """Three shuffled epochs whose samples draw rt.rand in two workers, persistent or not:
    PyTorch's orders and numbers (each epoch's base seed and sampler draws, the workers'
    generators kept across epochs when persistent)."""
    tt = pytest.importorskip("torch")

    def epochs(mod: Any) -> list[Any]:
        class DS(mod.utils.data.Dataset):
            def __getitem__(self, i: int) -> Any:
                return mod.tensor([float(i), mod.rand(1).item()])

            def __len__(self) -> int:
                return 6

        loader = mod.utils.data.DataLoader(DS(), batch_size=2, shuffle=True, num_workers=2,
                                           persistent_workers=persistent,
                                           generator=mod.Generator().manual_seed(3))
        return [[b.tolist() for b in loader] for _ in range(3)]

    assert epochs(torch) == epochs(tt)


def test_worker_number_warning_once_per_iterator_not_per_persistent_epoch() -> None:
    """check_worker_number_rationality warns at construction and at each new iterator with
    workers, as PyTorch's; a persistent loader's later epochs reuse theirs and do not warn."""
    import os
    n = len(os.sched_getaffinity(0)) + 1 if hasattr(os, "sched_getaffinity") else 1000
    with pytest.warns(UserWarning, match="excessive worker creation"):
        loader = DataLoader(CountingDataset(4), num_workers=n, persistent_workers=True)
    with pytest.warns(UserWarning, match="excessive worker creation"):
        list(loader)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        list(loader)
    with pytest.warns(UserWarning, match="excessive worker creation"):
        plain = DataLoader(CountingDataset(4), num_workers=n)
    for _ in range(2):
        with pytest.warns(UserWarning, match="excessive worker creation"):
            list(plain)


def test_manual_seed_in_a_worker_leaves_the_gpu_generators(monkeypatch: Any) -> None:
    """torch.manual_seed in worker_init_fn seeds that worker only: rt's GPU generators are
    the main thread's, so a worker's seeding leaves them (it reseeded them all)."""
    seeded: list[int] = []
    monkeypatch.setattr(torch.cuda, "manual_seed_all", seeded.append)
    torch.manual_seed(3)
    assert seeded == [3]
    dl = DataLoader(SeedDataset(4), batch_size=2, num_workers=2,
                    worker_init_fn=lambda _: torch.manual_seed(12345))
    assert [b.tolist() for b in dl] == [[12345, 12345], [12345, 12345]]
    assert seeded == [3]
    assert torch.initial_seed() == 3
