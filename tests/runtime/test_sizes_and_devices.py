"""Creation sizes and device strings refused as PyTorch 2.13 refuses them: a float size (a
``nn.Linear(2.0, 3)``), a device string its parser rejects (``x.to("float64")``), an
accelerator index on a machine without one; a factory given no size at all (``rt.ones()``),
where ``rt.ones(())`` is the 0-d tensor."""

from __future__ import annotations

from typing import Any

import pytest

import runtime as rt

torch = pytest.importorskip("torch")

SIZES = ["2.0", "(2.0, 3)", "[2.0, 3]", "(3, 2.0)", "3, 2.0", "[3, 2.0]", "(2.0,)", "[None]",
         "3, 4, 2.5", "(3, 4, 2.5)", "True", "(True, 2)", "2, True", "(2, 3)", "[]"]


def _outcome(thunk: Any) -> str:
    try:
        out = thunk()
    except Exception as e:  # noqa: BLE001 - the outcome compared is the error
        return f"{type(e).__name__}: {e}"
    return f"shape {tuple(out.shape)}" if hasattr(out, "shape") else "ok"


@pytest.mark.parametrize("fn", ["zeros", "ones", "empty"])
@pytest.mark.parametrize("size", SIZES)
def test_sizes_as_pytorch(fn: str, size: str) -> None:
    assert _outcome(lambda: eval(f"rt.{fn}({size})")) == \
        _outcome(lambda: eval(f"torch.{fn}({size})"))


@pytest.mark.parametrize("make", ["Linear(2.0, 3)", "Linear(2, 3.0)", "Embedding(3.0, 3)",
                                  "Embedding(3, 2.0)", "Conv2d(2, 3.0, 3)",
                                  "Bilinear(2, 3, 4.0)", "MultiheadAttention(4.0, 2)",
                                  "GRU(2.0, 3)", "LSTM(2, 3.0)", "RNN(0, 3)", "LSTM(2, 3, bias=1)",
                                  "GRUCell(2, 3.0)", "BatchNorm1d(2.0)", "RNN(True, 3)"])
def test_layers_with_bad_sizes_raise_pytorchs_errors(make: str) -> None:
    assert _outcome(lambda: eval(f"rt.nn.{make}")) == _outcome(lambda: eval(f"torch.nn.{make}"))


@pytest.mark.parametrize("expr", ['L.ones(2).to("float64")', "L.ones(2).to(3)",
                                  'L.device("foo")', 'L.ones(2, device="gpu")', "L.device(2)",
                                  'L.nn.Linear(2, 2).to("float64")', 'L.device("")',
                                  'L.device("cuda:01")', 'L.device("cuda: 1")',
                                  'L.zeros(2, device="cuda:0x")', 'L.device("CPU")',
                                  'L.device("cpu:0")', 'L.ones(2).to(device="cpux")'])
def test_device_strings_as_pytorch(expr: str) -> None:
    if rt.cuda.is_available():
        pytest.skip("the accelerator's index is valid where one is present")
    assert _outcome(lambda: eval(expr, {"L": rt})).replace("runtime", "torch") == \
        _outcome(lambda: eval(expr, {"L": torch}))


@pytest.mark.parametrize("make", ["L.zeros(0, 3)", "L.zeros(3, 0)", "L.zeros(2, 0, 4)",
                                  "L.zeros(0)", "L.empty(0, 3).contiguous()",
                                  "L.zeros(0, 1, 0)", "L.zeros(4, 3)[:0]", "L.ones(2, 0) * 2"])
def test_an_empty_tensors_strides_are_pytorchs(make: str) -> None:
    """numpy (2.x) gives an empty array it makes strides of 0; PyTorch's are contiguous."""
    assert eval(make, {"L": rt}).stride() == eval(make, {"L": torch}).stride()


INT_LISTS = ["x.flip(0.5)", "x.flip([0, 0.5])", "x.flip(0, 0.5)", "x.flip(0.5, 0)",
             "x.flip((0.5,))", "L.flip(x, (0.5,))", "L.flip(x, [0, 1.0])", "x.permute(0.5, 1)",
             "x.permute([0, 1.5])", "L.permute(x, (0, 1.5))", "x.repeat(2.0, 1)",
             "x.repeat(1, 2.0)", "x.repeat([1, 2.0])", "x.reshape(2.0)", "x.reshape(4, 1.0)",
             "x.reshape((4.0,))", "L.reshape(x, (4, 1.0))", "x.expand(2, 2.0)", "x.expand(2.0)",
             "x.tile(2.0)", "x.tile((1, 2.0))", "x.roll(1.0, 0)", "x.roll(1, 0.5)",
             "x.roll((1, 1.0), (0, 1))", "L.roll(x, 1.0)", "x.permute(None)", "x.flip(None)",
             "x.flip(True)", "x.flip(0, 1)", "x.permute(1, 0)", "x.reshape(-1)",
             "x.expand(2, 2)", "x.repeat(2, 1)", "x.tile((2,))", "x.roll(1)",
             "x.roll((1, 1), (0, 1))", "x.reshape(shape=(4, 1.0))", "x.roll(1, dims=0.5)",
             "x.reshape(L.tensor(4))"]


@pytest.mark.parametrize("expr", INT_LISTS)
def test_int_list_arguments_as_pytorchs_parser(expr: str) -> None:
    """flip, permute, repeat, reshape, expand, tile and roll take a tuple of ints (a method
    also spread): a float, None or a leading bool is PyTorch's parser's TypeError."""
    def outcome(lib: Any) -> str:
        return _outcome(lambda: eval(expr, {"L": lib, "x": lib.ones(2, 2)}))

    assert outcome(rt) == outcome(torch)


NO_SIZE = ["zeros", "ones", "empty", "rand", "randn"]


@pytest.mark.parametrize("name", NO_SIZE)
def test_factory_without_a_size_is_an_error(name: str) -> None:
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError) as expected:
        getattr(torch, name)()
    with pytest.raises(TypeError) as got:
        getattr(rt, name)()
    assert str(got.value) == str(expected.value)
    for size in ((), []):
        assert getattr(rt, name)(size).shape == ()
        assert getattr(rt, name)(size=size).shape == ()


@pytest.mark.parametrize("name", ["new_zeros", "new_ones", "new_empty"])
def test_new_factory_without_a_size_is_an_error(name: str) -> None:
    x = rt.ones(2)
    with pytest.raises(TypeError, match=f'^{name}\\(\\) missing 1 required positional '
                                        'arguments: "size"$'):
        getattr(x, name)()
    assert getattr(x, name)(size=()).shape == ()
    assert getattr(x, name)(size=[2, 3]).shape == (2, 3)
    assert getattr(x, name)(()).shape == ()
    assert x.new().shape == (0,)


def test_zero_dim_tensors_still_make_zero_dim_draws() -> None:
    """The runtime's own calls with a 0-d tensor's shape (rand_like, dropout, LayerNorm(()))."""
    x = rt.tensor(2.0)
    assert rt.rand_like(x).shape == rt.randn_like(x).shape == rt.empty_like(x).shape == ()
    assert rt.nn.functional.dropout(x, 0.5).shape == ()
    assert rt.nn.LayerNorm(()).weight.shape == ()
