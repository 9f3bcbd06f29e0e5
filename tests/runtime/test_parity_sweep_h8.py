"""Differential sweep against PyTorch 2.13 of data loading, checkpoints and the optimizers'
and schedulers' state: each case here found a discrepancy (error text, value or state
layout) that the runtime now shares with PyTorch."""

from __future__ import annotations

import io
import pickle
import warnings
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")


def _error(fn: Any) -> tuple[str, str]:
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type and text are what is compared
        return type(e).__name__, str(e)
    return "ok", ""


@pytest.mark.parametrize("weights", [[0.1, -0.9], [float("nan"), 1.0], [float("inf"), 1.0],
                                     [[0.0, 0.0], [1.0, -1.0]],
                                     [[1.0, float("inf")], [-1.0, 1.0]]])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_multinomial_invalid_weights_message_with_replacement(weights: Any, dtype: str) -> None:
    """More than one draw with replacement is PyTorch's row-by-row kernel, with its own
    texts (a WeightedRandomSampler's default): the first failing row decides, entry by
    entry (a NaN fails as negative), then its sum."""
    def draw(m: Any) -> Any:
        return lambda: m.multinomial(m.tensor(weights, dtype=getattr(m, dtype)), 3, True)
    assert _error(draw(rt)) == _error(draw(torch))


def test_weighted_random_sampler_negative_weight_message() -> None:
    def draw(m: Any, data: Any) -> Any:
        return lambda: list(data.WeightedRandomSampler([0.1, -0.9], 4))
    assert _error(draw(rt, rt.utils.data)) == _error(draw(torch, torch.utils.data))


def _load_outcome(m: Any, path: Any, **kwargs: Any) -> tuple[Any, ...]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = m.load(path, **kwargs)["a"].tolist()
        except Exception as e:  # noqa: BLE001 - the type and text are what is compared
            value = (type(e).__name__, str(e))
    return value, [str(w.message) for w in caught]


@pytest.mark.parametrize("kwargs", [{"encoding": "latin1"}, {"weights_only": True,
                                                             "encoding": "bytes"},
                                    {"weights_only": True, "pickle_module": pickle}])
def test_load_pickle_load_args_and_pickle_module_with_weights_only(tmp_path: Any,
                                                                   kwargs: Any) -> None:
    """torch.load takes ``**pickle_load_args`` and warns that a weights-only load reads
    none; weights_only=True with a pickle_module is its RuntimeError."""
    torch.save({"a": torch.ones(2)}, tmp_path / "t.pt")
    rt.save({"a": rt.ones(2)}, tmp_path / "r.pt")
    assert _load_outcome(rt, tmp_path / "r.pt", **kwargs) == \
        _load_outcome(torch, tmp_path / "t.pt", **kwargs)
    assert _load_outcome(rt, tmp_path / "t.pt", **kwargs) == \
        _load_outcome(torch, tmp_path / "t.pt", **kwargs)


@pytest.mark.parametrize("name", ["Adam", "AdamW"])
@pytest.mark.parametrize("betas", ["int", "np32", "mixed", "tensor_foreach"])
def test_adam_betas_both_floats_or_both_tensors(name: str, betas: str) -> None:
    """torch's Adam and AdamW take betas as two Python floats or two tensors: an int (0), a
    numpy float32 or a tensor beside a float is its ValueError, and so are tensor betas with
    foreach=True (not capturable)."""
    def build(m: Any) -> Any:
        pick = {"int": ((0, 0.99), {}), "np32": ((np.float32(0.9), 0.99), {}),
                "mixed": ((m.tensor(0.9), 0.99), {}),
                "tensor_foreach": ((m.tensor(0.9), m.tensor(0.99)), {"foreach": True})}
        b, kwargs = pick[betas]
        return lambda: getattr(m.optim, name)([m.nn.Parameter(m.ones(2))], betas=b, **kwargs)
    assert _error(build(rt)) == _error(build(torch))
    assert _error(build(rt))[0] == "ValueError"


def _counting(data: Any, n: int) -> Any:
    class Counting(data.IterableDataset):
        def __iter__(self) -> Any:
            return iter(range(n))

        def __len__(self) -> int:
            return n

    return Counting()


def test_iterable_datasets_added_chain() -> None:
    """``a + b`` of two IterableDatasets is torch's ChainDataset (a ConcatDataset refuses
    iterable datasets): a DataLoader reads one after the other."""
    def run(m: Any) -> Any:
        data = m.utils.data
        both = _counting(data, 2) + _counting(data, 3)
        loader = data.DataLoader(both, batch_size=2)
        return type(both).__name__, list(both), len(both), [b.tolist() for b in loader]
    assert run(rt) == run(torch)


@pytest.mark.parametrize("map_location", ["foo", "cpu:0", {"cpu": "tpu"}, 3])
@pytest.mark.parametrize("saved_by", ["torch", "rt"])
def test_load_bad_map_location_is_torchs_error(map_location: Any, saved_by: str) -> None:
    """A map_location naming no device is torch's RuntimeError (it was reported as a damaged
    file for a torch.save file, a ValueError for ours), one neither a string, a dict nor
    callable its TypeError: the same for both formats."""
    buf = io.BytesIO()
    if saved_by == "torch":
        torch.save({"a": torch.ones(2)}, buf)
    else:
        rt.save({"a": rt.ones(2)}, buf)
    raw = buf.getvalue()
    torch_buf = io.BytesIO()
    torch.save({"a": torch.ones(2)}, torch_buf)
    expected = _error(lambda: torch.load(io.BytesIO(torch_buf.getvalue()),
                                         map_location=map_location))
    assert _error(lambda: rt.load(io.BytesIO(raw), map_location=map_location)) == expected


def test_save_and_load_of_a_non_file_are_torchs_errors() -> None:
    assert _error(lambda: rt.save({"a": 1}, 5)) == _error(lambda: torch.save({"a": 1}, 5))
    assert _error(lambda: rt.load(5)) == _error(lambda: torch.load(5))


@pytest.mark.parametrize("value", [np.datetime64("2020-01-01"),
                                   np.array(["2020-01-01"], dtype="datetime64[D]"),
                                   np.timedelta64(1, "D"), np.bytes_(b"a")])
def test_default_convert_numpy_values_no_tensor_holds_raise(value: Any) -> None:
    """default_convert makes every numpy value a tensor but string scalars and arrays of
    strings or objects: a datetime64, timedelta64 or bytes scalar is as_tensor's TypeError
    in torch (it was passed through)."""
    assert _error(lambda: rt.utils.data.default_convert(value))[0] == \
        _error(lambda: torch.utils.data.default_convert(value))[0] == "TypeError"
