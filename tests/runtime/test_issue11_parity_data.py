"""rt.utils.data and randperm against PyTorch 2.13: default_collate of every kind of sample
(numbers, bools, strings, bytes, numpy scalars and arrays, tensors, nested dicts, tuples,
lists and namedtuples, unequal lengths, string arrays), default_convert, DataLoader's
batching (batch_size None, drop_last, sampler, batch_sampler, collate_fn, iterable
datasets) and its argument checks, attributes fixed once built, BatchSampler, Subset,
ConcatDataset, random_split's lengths and fractions, the samplers' sizes and checks, and
randperm's argument and dtype checks. Results compared structurally (tensors by dtype,
shape and values), errors by type and text, warnings by text. The permutations are PyTorch's
too (the generators are its Mersenne Twister stream: tests/runtime/test_torch_rng.py)."""

from __future__ import annotations

import collections
import warnings
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")

Point = collections.namedtuple("Point", ["x", "y"])


def _plain(o: Any) -> Any:
    if isinstance(o, (torch.Tensor, rt.Tensor)):
        return "T", str(o.dtype).split(".")[-1], tuple(o.shape), o.detach().numpy().tolist()
    if isinstance(o, dict):
        return "D", type(o).__name__, {k: _plain(v) for k, v in o.items()}
    if isinstance(o, tuple) and hasattr(o, "_fields"):
        return "NT", type(o).__name__, [_plain(v) for v in o]
    if isinstance(o, (list, tuple)):
        return type(o).__name__, [_plain(v) for v in o]
    if isinstance(o, np.ndarray):
        return "np", o.dtype.str, o.tolist()
    if isinstance(o, (torch.dtype, rt.dtype)):
        return "dtype", str(o).split(".")[-1]
    return type(o).__name__, o


def _outcome(lib: Any, code: str) -> str:
    scope = {"lib": lib, "np": np, "data": lib.utils.data, "Point": Point}
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            exec(code, scope)  # noqa: S102 - the table below
    except Exception as e:  # noqa: BLE001 - the texts are compared
        name = "RuntimeError" if type(e).__name__ == "ShapeError" else type(e).__name__
        return f"{name}: {e}".replace("torch", "X").replace("runtime", "X")
    texts = [str(w.message) for w in caught]
    return repr((_plain(scope.get("r")), texts)).replace("torch", "X").replace("runtime", "X")


BATCHES = [
    "[1, 2, 3]", "[1.0, 2.5]", "[True, False]", "['a', 'b']", "[b'a', b'b']",
    "[(1, 2.0), (3, 4.0)]", "[{'a': 1, 'b': [1, 2]}, {'a': 2, 'b': [3, 4]}]",
    "[Point(1, 2.0), Point(3, 4.0)]", "[np.array([1, 2]), np.array([3, 4])]",
    "[np.float32(1.0), np.float32(2)]", "[np.int32(1), np.int32(2)]",
    "[lib.tensor([1., 2]), lib.tensor([3., 4])]", "[lib.tensor(1), lib.tensor(2)]",
    "[[1, 2], [3]]", "[{'a': 1}, {'b': 2}]", "[None, None]", "[np.array(['a'])]",
    "[lib.zeros(2), lib.zeros(3)]", "[np.bool_(True), np.bool_(False)]", "[1, 2.5]",
    "[{'a': (1, 'x')}, {'a': (2, 'y')}]", "[(1,), (2, 3)]", "[np.array(1.5), np.array(2.5)]",
    "[lib.tensor([1], dtype=lib.int32)]", "[object(), object()]",
    "[(np.array([1.5]), {'k': ['s', 't']})]",
]

DS = "ds = data.TensorDataset(lib.arange(10.).reshape(5, 2), lib.arange(5));"
IDS = "class IDS(data.IterableDataset):\n  def __iter__(self): return iter(range(5))\n"
CODES = [f"r = data.default_collate({b})" for b in BATCHES] + [
    "r = data.default_convert([np.array([1, 2]), {'a': np.float64(1.5)}, 'x', 3])",
    DS + "r = [b for b in data.DataLoader(ds, batch_size=2)]",
    DS + "r = [b for b in data.DataLoader(ds, batch_size=2, drop_last=True)]",
    DS + "r = [b for b in data.DataLoader(ds, batch_size=None)]",
    DS + "r = [len(data.DataLoader(ds, batch_size=2)), "
         "len(data.DataLoader(ds, batch_size=2, drop_last=True)), "
         "len(data.DataLoader(ds, batch_size=None))]",
    DS + "r = [b for b in data.DataLoader(ds, batch_size=3, sampler=[4, 0, 2, 1])]",
    DS + "r = [b for b in data.DataLoader(ds, batch_sampler=[[4, 0], [2], [1, 3]])]",
    DS + "r = [b for b in data.DataLoader(ds, batch_sampler=[[4, 0]], batch_size=2)]",
    DS + "r = [b for b in data.DataLoader(ds, batch_sampler=[[4, 0]], shuffle=True)]",
    DS + "r = [b for b in data.DataLoader(ds, sampler=[1], shuffle=True)]",
    DS + "r = [b for b in data.DataLoader(ds, batch_size=None, drop_last=True)]",
    DS + "r = [b for b in data.DataLoader(ds, batch_size=2, collate_fn=lambda b: len(b))]",
    DS + "r = list(data.BatchSampler(data.SequentialSampler(ds), 2, False))",
    "r = list(data.BatchSampler(range(5), 0, False))",
    "r = list(data.BatchSampler(range(5), 2, 'no'))",
    DS + "r = [b for b in data.DataLoader(ds, batch_size=-1)]",
    DS + "r = [b for b in data.DataLoader(ds, num_workers=-1)]",
    DS + "r = [ds[1], len(ds), ds[lib.tensor(2)]]",
    "r = data.TensorDataset(lib.zeros(3), lib.zeros(4))",
    DS + "s = data.Subset(ds, [4, 1]); r = [len(s), s[0], s.__getitems__([0, 1])]",
    DS + "c = data.ConcatDataset([ds, ds]); r = [len(c), c[5], c[-1], c.cumulative_sizes]",
    "r = data.ConcatDataset([])",
    DS + "r = data.ConcatDataset([ds])[10]",
    DS + "r = data.ConcatDataset([ds])[-6]",
    DS + "c = ds + ds; r = [type(c).__name__, len(c)]",
    DS + "r = [len(s) for s in data.random_split(ds, [2, 3])]",
    DS + "r = [len(s) for s in data.random_split(ds, [0.5, 0.5])]",
    "r = [len(s) for s in data.random_split(range(10), [0.3, 0.3, 0.4])]",
    "r = [len(s) for s in data.random_split(range(7), [0.1, 0.1, 0.8])]",
    DS + "r = [len(s) for s in data.random_split(ds, [2, 2])]",
    DS + "r = [len(s) for s in data.random_split(ds, [0.5, 0.6])]",
    DS + "r = [len(s) for s in data.random_split(ds, [-0.5, 1.5])]",
    "r = sorted(i for s in data.random_split(range(10), [3, 7], "
    "generator=lib.Generator().manual_seed(1)) for i in s)",
    "r = list(data.RandomSampler(range(5), replacement=True, num_samples=0))",
    "r = list(data.RandomSampler(range(5), num_samples=-1))",
    "r = [len(data.RandomSampler(range(5), num_samples=7)), "
    "len(list(data.RandomSampler(range(5), num_samples=7)))]",
    "r = list(data.RandomSampler(range(5), replacement=3))",
    "r = sorted(data.SubsetRandomSampler([3, 1, 2]))",
    "r = list(data.WeightedRandomSampler([0.1, 0.9], 5, replacement=False))",
    "r = list(data.WeightedRandomSampler([0.1, 0.9], -1))",
    "class DS(data.Dataset):\n  pass\nr = DS()[3]",
    IDS + "r = list(data.DataLoader(IDS(), batch_size=2))",
    IDS + "r = list(data.DataLoader(IDS(), batch_size=2, shuffle=True))",
    IDS + "r = list(data.DataLoader(IDS(), batch_size=2, drop_last=True))",
    IDS + "r = list(data.DataLoader(IDS(), batch_size=None))",
    IDS + "r = list(data.DataLoader(IDS(), sampler=[1]))",
    IDS + "r = len(data.DataLoader(IDS()))",
    "r = list(data.DataLoader([{'a': 1, 'b': 'x'}, {'a': 2, 'b': 'y'}, {'a': 3, 'b': 'z'}], "
    "batch_size=2))",
    "r = list(data.DataLoader([(1, (2.0, [3])), (4, (5.0, [6]))], batch_size=2))",
    "r = sorted(sum([b.tolist() for b in data.DataLoader(list(range(9)), batch_size=2, "
    "shuffle=True, generator=lib.Generator().manual_seed(0))], []))",
    "r = list(data.DataLoader(range(3), batch_size=2, prefetch_factor=2))",
    "r = list(data.DataLoader(range(3), batch_size=2, persistent_workers=True))",
    "r = list(data.DataLoader(range(3), batch_size=2, timeout=-1))",
    *(f"l = data.DataLoader(range(3), batch_size=2); l.{a} = None" for a in (
        "batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
        "persistent_workers", "collate_fn")),
    "l = data.DataLoader(range(3), batch_size=2, shuffle=True); "
    "r = [type(l.sampler).__name__, l.sampler.replacement, type(l.batch_sampler).__name__]",
    "r = [lib.randperm(0), lib.randperm(1), lib.randperm(3, dtype=lib.float32).sort().values, "
    "lib.randperm(4, dtype=lib.int32).dtype, lib.randperm(lib.tensor(2)).sort().values]",
    *(f"p = lib.randperm({a}); r = [p.sort().values, p.requires_grad]" for a in (
        "-1", "5, dtype=lib.bool", "300, dtype=lib.uint8", "128, dtype=lib.int8",
        "70000, dtype=lib.int16", "3, dtype=lib.uint32", "2050, dtype=lib.float16",
        "3, requires_grad=True", "3, dtype=lib.float32, requires_grad=True", "3.0", "True",
        "lib.tensor(3.0)")),
]


@pytest.mark.parametrize("code", CODES)
def test_data_matches_torch(code: str) -> None:
    assert _outcome(rt, code) == _outcome(torch, code)


@pytest.mark.parametrize("seed", [0, 7, 2**40 + 3])
def test_permutations_equal_torchs_for_the_same_seed(seed: int) -> None:
    """randperm, the DataLoader's shuffle (its base seed drawn first, every epoch), the
    samplers and random_split draw PyTorch's Mersenne Twister stream as it does."""
    td, rd = torch.utils.data, rt.utils.data

    def both(make: Any) -> tuple[Any, Any]:
        outs = []
        for lib, data in ((torch, td), (rt, rd)):
            lib.manual_seed(seed)
            outs.append(make(lib, data, lib.Generator().manual_seed(seed)))
        return outs[0], outs[1]

    def plain(x: Any) -> Any:
        if isinstance(x, (list, tuple)):
            return [plain(v) for v in x]
        return x.tolist() if hasattr(x, "tolist") else x

    cases = [
        lambda lib, data, g: [lib.randperm(n) for n in (10, 7, 1, 0, 300)],
        lambda lib, data, g: [lib.randperm(10, generator=g) for _ in range(2)],
        lambda lib, data, g: [list(data.DataLoader(list(range(10)), batch_size=4,
                                                   shuffle=True, generator=g))
                              for _ in range(3)],
        lambda lib, data, g: [list(data.DataLoader(list(range(9)), batch_size=2,
                                                   shuffle=True)) for _ in range(2)],
        lambda lib, data, g: list(data.RandomSampler(range(7), replacement=True,
                                                     num_samples=40, generator=g)),
        lambda lib, data, g: [list(data.RandomSampler(range(7), num_samples=17, generator=g)),
                              list(data.RandomSampler(range(7)))],
        lambda lib, data, g: list(data.SubsetRandomSampler([5, 6, 7, 8], generator=g)),
        lambda lib, data, g: [list(s.indices) for s in data.random_split(range(10), [3, 7],
                                                                          generator=g)],
        lambda lib, data, g: [list(s.indices) for s in data.random_split(range(10),
                                                                          [0.3, 0.7])],
    ]
    for make in cases:
        want, got = both(make)
        assert plain(got) == plain(want)


def test_fork_rng_puts_randperms_stream_back() -> None:
    rt.manual_seed(1)
    rt.randperm(5)
    with rt.random.fork_rng():
        rt.randperm(5)
    after = rt.randperm(5).tolist()
    rt.manual_seed(1)
    rt.randperm(5)
    assert rt.randperm(5).tolist() == after
