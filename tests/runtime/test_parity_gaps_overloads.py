"""PyTorch's overloads and defaults: repeat_interleave(repeats) alone, randint's and
randint_like's arguments by name, meshgrid without indexing (a warning, then 'ij')."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest

import runtime as rt
from runtime.ops import more_ops

torch = pytest.importorskip("torch")


def _outcome(f: Callable[[Any], Any], m: Any) -> Any:
    try:
        r = f(m)
    except (TypeError, RuntimeError, NotImplementedError) as e:
        return type(e).__name__, str(e)
    return r.tolist(), str(r.dtype).split(".")[-1]


REPEATS: dict[str, Callable[[Any], Any]] = {
    "positions": lambda m: m.repeat_interleave(m.tensor([1, 2, 3])),
    "by_name": lambda m: m.repeat_interleave(repeats=m.tensor([1, 2])),
    "zero": lambda m: m.repeat_interleave(m.tensor([0, 2])),
    "int32": lambda m: m.repeat_interleave(m.tensor([2, 1], dtype=m.int32)),
    "empty": lambda m: m.repeat_interleave(m.tensor([], dtype=m.int64)),
    "output_size": lambda m: m.repeat_interleave(m.tensor([1, 2]), output_size=3),
    "float": lambda m: m.repeat_interleave(m.tensor([1.0, 2.0])),
    "bool": lambda m: m.repeat_interleave(m.tensor([True])),
    "2d": lambda m: m.repeat_interleave(m.tensor([[1, 2]])),
    "0d": lambda m: m.repeat_interleave(m.tensor(2)),
    "negative": lambda m: m.repeat_interleave(m.tensor([-1, 2])),
    "wrong_output_size": lambda m: m.repeat_interleave(m.tensor([1, 2]), output_size=5),
    "tensor_repeats": lambda m: m.repeat_interleave(m.tensor([[1, 2], [3, 4]]),
                                                    m.tensor([1, 2]), dim=0),
    "method": lambda m: m.tensor([5, 6]).repeat_interleave(m.tensor([2, 1])),
}


@pytest.mark.parametrize("name", list(REPEATS))
def test_repeat_interleave(name: str) -> None:
    assert _outcome(REPEATS[name], rt) == _outcome(REPEATS[name], torch)


def test_repeat_interleave_method_needs_repeats() -> None:
    with pytest.raises(TypeError):
        rt.tensor([1, 2]).repeat_interleave()
    with pytest.raises(TypeError):
        torch.tensor([1, 2]).repeat_interleave()


RANDINT: dict[str, Callable[[Any], Any]] = {
    "all_names": lambda m: m.randint(low=1, high=5, size=(2, 3)),
    "high_size_names": lambda m: m.randint(high=5, size=(4,)),
    "size_name": lambda m: m.randint(5, size=(3,)),
    "low_high_then_size_name": lambda m: m.randint(1, 5, size=(3,)),
    "dtype": lambda m: m.randint(2, 5, (3,), dtype=m.float32),
    "generator": lambda m: m.randint(5, (3,), generator=m.Generator().manual_seed(0)),
    "like_high": lambda m: m.randint_like(m.ones(2, 2), high=4),
    "like_low_high": lambda m: m.randint_like(m.ones(3), low=1, high=4),
    "like_positional": lambda m: m.randint_like(m.ones(3, dtype=m.int32), 2, 4),
}


@pytest.mark.parametrize("name", list(RANDINT))
def test_randint_arguments(name: str) -> None:
    ours, theirs = RANDINT[name](rt), RANDINT[name](torch)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]


def test_randint_values_in_range() -> None:
    v = rt.randint(low=-3, high=2, size=(1000,))
    assert v.min().item() == -3 and v.max().item() == 1


def test_meshgrid_without_indexing_warns_once_and_is_ij(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    monkeypatch.setattr(more_ops, "_MESHGRID_WARNED", False)
    a, b = rt.tensor([1, 2]), rt.tensor([3, 4, 5])
    with pytest.warns(UserWarning, match="torch.meshgrid: in an upcoming release, it will be "
                                         "required to pass the indexing argument."):
        grids = rt.meshgrid(a, b)
    assert [g.tolist() for g in grids] == [g.tolist() for g in rt.meshgrid(a, b, indexing="ij")]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rt.meshgrid([a, b])


SIGNATURES: dict[str, Callable[[Any], Any]] = {
    "type_non_blocking": lambda m: m.tensor([1.0]).type(m.float64, non_blocking=True),
    "type_unknown_keyword": lambda m: m.tensor([1.0]).type(m.float64, foo=1),
    "tensordot_out": lambda m: (lambda o: (m.tensordot(m.ones(2, 3), m.ones(3, 2), 1, out=o),
                                           o)[1])(m.empty(0)),
    "tensordot_out_positional": lambda m: (lambda o: (m.tensordot(m.ones(2, 3), m.ones(3, 2),
                                                                  1, o), o)[1])(m.empty(0)),
    "nan_to_num_none": lambda m: m.nan_to_num(m.tensor([float("nan"), 1.0]), nan=None),
    "multinomial_out": lambda m: (lambda o: (m.multinomial(m.tensor([0.0, 1.0]), 1, out=o),
                                             o)[1])(m.empty(0, dtype=m.int64)),
}


@pytest.mark.parametrize("name", list(SIGNATURES))
def test_signature_parity(name: str) -> None:
    assert _outcome(SIGNATURES[name], rt) == _outcome(SIGNATURES[name], torch)


def test_uniform_takes_from_and_to() -> None:
    t = rt.empty(1000)
    t.uniform_(to=5, **{"from": 2})
    assert 2 <= t.min().item() and t.max().item() < 5
    t.uniform_(-1, to=-0.5)
    assert -1 <= t.min().item() and t.max().item() < -0.5
    with pytest.raises(TypeError, match="unexpected keyword argument 'b'"):
        t.uniform_(0, b=1)
