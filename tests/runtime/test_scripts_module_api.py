"""Module API that ported training scripts reach for, as PyTorch's: Sequential's list
methods, a parameter, module or buffer set before Module.__init__, and the RNNs' check of
h0's batching."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

import runtime as rt


def layer_names(seq: Any) -> list[tuple[str, str]]:
    return [(key, type(m).__name__) for key, m in seq._modules.items()]


def edited_sequential(lib: ModuleType) -> list[Any]:
    nn = lib.nn
    seq = nn.Sequential(nn.Linear(2, 2))
    seq.append(nn.ReLU())
    assert seq.insert(0, nn.Identity()) is seq
    assert seq.extend([nn.Tanh()]) is seq
    seq.insert(-1, nn.Sigmoid())
    popped = seq.pop(1)
    more = seq + nn.Sequential(nn.ReLU())
    more += nn.Sequential(nn.GELU())
    return [layer_names(more), type(popped).__name__, len(list(more.parameters()))]


def test_sequential_list_methods() -> None:
    want = [[("0", "Identity"), ("1", "ReLU"), ("2", "Sigmoid"), ("3", "Tanh"),
             ("4", "ReLU"), ("5", "GELU")], "Linear", 0]
    assert edited_sequential(rt) == want
    torch = pytest.importorskip("torch")
    assert edited_sequential(torch) == want


@pytest.mark.parametrize(("call", "error", "text"), [
    (lambda nn, s: s.insert(3, nn.ReLU()), IndexError, "Index out of range: 3"),
    (lambda nn, s: s.insert(-3, nn.ReLU()), IndexError, "Index out of range: -3"),
    (lambda nn, s: s + [nn.ReLU()], ValueError,
     "add operator supports only objects of Sequential class, but <class 'list'> is given."),
])
def test_sequential_list_method_errors(call: Any, error: type, text: str) -> None:
    for lib in (rt, pytest.importorskip("torch")):
        with pytest.raises(error) as e:
            call(lib.nn, lib.nn.Sequential(lib.nn.Tanh(), lib.nn.ReLU()))
        assert str(e.value) == text


@pytest.mark.parametrize("lib_name", ["runtime", "torch"])
@pytest.mark.parametrize(("make", "what"), [
    (lambda lib: lib.nn.Parameter(lib.ones(1)), "parameters"),
    (lambda lib: lib.nn.ReLU(), "module"),
    (lambda lib: lib.nn.Buffer(lib.ones(1)), "buffer"),
])
def test_registering_before_init_raises(make: Any, what: str, lib_name: str) -> None:
    lib = pytest.importorskip(lib_name)
    value = make(lib)

    class Early(lib.nn.Module):  # type: ignore[name-defined,misc]
        def __init__(self) -> None:
            self.x = value

    with pytest.raises(AttributeError) as e:
        Early()
    assert str(e.value) == f"cannot assign {what} before Module.__init__() call"


@pytest.mark.parametrize(("kind", "x", "h", "text"), [
    ("GRU", (5, 2, 4), (2, 3), "For batched 3-D input, hx should also be 3-D but got 2-D tensor"),
    ("RNN", (5, 4), (1, 2, 3),
     "For unbatched 2-D input, hx should also be 2-D but got 3-D tensor"),
    ("LSTM", (5, 2, 4), (2, 3),
     "For batched 3-D input, hx and cx should also be 3-D but got (2-D, 2-D) tensors"),
    ("LSTM", (5, 4), (3,),
     "For unbatched 2-D input, hx and cx should also be 2-D but got (1-D, 1-D) tensors"),
])
def test_rnn_hidden_of_other_batching(kind: str, x: tuple[int, ...], h: tuple[int, ...],
                                      text: str) -> None:
    def error(lib: ModuleType) -> str:
        hx = lib.zeros(*h)
        with pytest.raises(RuntimeError) as e:
            getattr(lib.nn, kind)(4, 3)(lib.ones(*x), (hx, hx) if kind == "LSTM" else hx)
        return str(e.value)

    assert error(rt) == text
    torch = pytest.importorskip("torch")
    assert error(torch) == text


def test_lstm_checks_both_batchings_before_sizes() -> None:
    """c0 of the wrong batching is named with h0's dims, before h0's size is checked."""
    def error(lib: ModuleType) -> str:
        with pytest.raises(RuntimeError) as e:
            lib.nn.LSTM(4, 3)(lib.ones(5, 2, 4), (lib.zeros(1, 7, 3), lib.zeros(2, 3)))
        return str(e.value)

    want = "For batched 3-D input, hx and cx should also be 3-D but got (3-D, 2-D) tensors"
    assert error(rt) == want
    torch = pytest.importorskip("torch")
    assert error(torch) == want


@pytest.mark.parametrize("lib_name", ["runtime", "torch"])
def test_optimizer_given_one_tensor_names_its_type(lib_name: str) -> None:
    """optim.SGD(model.weight) in place of [model.weight]: the tensor's type() is named."""
    lib = pytest.importorskip(lib_name)
    with pytest.raises(TypeError) as e:
        lib.optim.SGD(lib.nn.Parameter(lib.ones(2, dtype=lib.float64)), lr=0.1)
    assert str(e.value) == ("params argument given to the optimizer should be an iterable of "
                            f"Tensors or dicts, but got {lib_name}.DoubleTensor")


def edited_parameter_dict(lib: ModuleType) -> list[Any]:
    nn = lib.nn
    d = nn.ParameterDict({"b": nn.Parameter(lib.ones(1)), "a": nn.Parameter(lib.zeros(2))})
    d["c"] = nn.Parameter(lib.ones(3))
    copied = d.copy()
    key, value = d.popitem()
    d.setdefault("z", nn.Parameter(lib.ones(4)))
    kept = d.setdefault("z", nn.Parameter(lib.zeros(1)))
    merged = d | nn.ParameterDict({"q": nn.Parameter(lib.ones(1))})
    d |= d.fromkeys(["x", "y"], nn.Parameter(lib.ones(2)))
    return [list(copied), copied["a"] is d["a"], key, tuple(value.shape), tuple(kept.shape),
            list(merged), list(reversed(d)), [n for n, _ in d.named_parameters()]]


def test_parameter_dict_methods() -> None:
    """copy, popitem (the last inserted), setdefault, fromkeys, |, |= and reversed, as a
    dict's; x and y share one parameter, named once."""
    want = [["a", "b", "c"], True, "c", (3,), (4,), ["a", "b", "z", "q"],
            ["y", "x", "z", "b", "a"], ["a", "b", "z", "x"]]
    assert edited_parameter_dict(rt) == want
    torch = pytest.importorskip("torch")
    assert edited_parameter_dict(torch) == want
