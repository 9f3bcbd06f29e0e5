"""ModuleList, ModuleDict and ParameterList behave as PyTorch's: registration (parameters,
state_dict keys, repr), list/dict operations, and their errors."""

from __future__ import annotations

from typing import Any

import pytest

import runtime as rt

torch = pytest.importorskip("torch")


def lin(lib: Any, n: int) -> Any:
    return lib.nn.Linear(n, n)


@pytest.mark.parametrize("lib", [rt, torch], ids=["runtime", "torch"])
def test_module_list_operations(lib: Any) -> None:
    ml = lib.nn.ModuleList([lin(lib, 1), lin(lib, 2)])
    ml.append(lin(lib, 3))
    ml.extend([lin(lib, 4)])
    ml.insert(1, lin(lib, 5))
    ml += [lin(lib, 6)]
    assert [m.in_features for m in ml] == [1, 5, 2, 3, 4, 6]
    assert ml[-1].in_features == 6 and len(ml) == 6
    assert [m.in_features for m in ml[1:3]] == [5, 2]
    del ml[0]
    assert [k for k, _ in ml.named_children()] == ["0", "1", "2", "3", "4"]
    ml[0] = lin(lib, 7)
    assert ml.pop(0).in_features == 7
    assert [m.in_features for m in ml] == [2, 3, 4, 6]
    assert list(ml.state_dict())[:2] == ["0.weight", "0.bias"]
    assert len(list(ml.parameters())) == 8


def test_module_list_repr_and_errors_match_torch() -> None:
    for lib in (rt, torch):
        assert repr(lib.nn.ModuleList([lib.nn.ReLU()])) == "ModuleList(\n  (0): ReLU()\n)"
    for lib in (rt, torch):
        with pytest.raises(IndexError, match="^index 3 is out of range$"):
            lib.nn.ModuleList([lib.nn.ReLU()])[3]
        with pytest.raises(TypeError, match="^int is not a Module subclass$"):
            lib.nn.ModuleList([1])
        with pytest.raises(TypeError, match="ModuleList.extend should be called with an "
                           "iterable, but got int"):
            lib.nn.ModuleList().extend(3)


@pytest.mark.parametrize("lib", [rt, torch], ids=["runtime", "torch"])
def test_module_dict_operations(lib: Any) -> None:
    md = lib.nn.ModuleDict({"a": lin(lib, 1)})
    md.update([("b", lin(lib, 2))])
    md["c"] = lin(lib, 3)
    assert list(md) == list(md.keys()) == ["a", "b", "c"]
    assert "b" in md and "z" not in md and len(md) == 3
    assert [m.in_features for m in md.values()] == [1, 2, 3]
    assert md.pop("b").in_features == 2
    del md["a"]
    assert [k for k, _ in md.items()] == ["c"]
    assert list(md.state_dict()) == ["c.weight", "c.bias"]
    with pytest.raises(KeyError):
        md["a"]
    with pytest.raises(TypeError, match="^int is not a Module subclass$"):
        md["x"] = 1
    md.clear()
    assert len(md) == 0 and not list(md.parameters())


@pytest.mark.parametrize("lib", [rt, torch], ids=["runtime", "torch"])
def test_parameter_list(lib: Any) -> None:
    pl = lib.nn.ParameterList([lib.nn.Parameter(lib.ones(2)), lib.zeros(3)])
    assert isinstance(pl[1], lib.nn.Parameter)  # a plain tensor becomes a Parameter
    pl.append(lib.ones(1))
    pl += [lib.ones(4)]
    assert [tuple(p.shape) for p in pl] == [(2,), (3,), (1,), (4,)]
    assert [n for n, _ in pl.named_parameters()] == ["0", "1", "2", "3"]
    pl[0] = lib.zeros(5)
    assert tuple(pl[0].shape) == (5,) and isinstance(pl[0], lib.nn.Parameter)
    assert [tuple(p.shape) for p in pl[1:3]] == [(3,), (1,)]
    with pytest.raises(IndexError, match="^index 4 is out of range$"):
        pl[4]


def test_containers_register_for_optimizers_and_train_mode() -> None:
    model = rt.nn.ModuleDict({"blocks": rt.nn.ModuleList([rt.nn.Linear(2, 2),
                                                          rt.nn.Dropout(0.5)]),
                              "extra": rt.nn.ParameterList([rt.ones(3)])})
    assert [n for n, _ in model.named_parameters()] == [
        "blocks.0.weight", "blocks.0.bias", "extra.0"]
    model.eval()
    assert not model["blocks"][1].training
    opt = rt.optim.SGD(model.parameters(), lr=1.0)
    model["extra"][0].sum().backward()
    opt.step()
    assert model["extra"][0].detach().numpy().tolist() == [0.0, 0.0, 0.0]
