"""Differential parity against PyTorch for tensor ops and free functions (issue 11, item 2):
cases an earlier sweep left uncovered, each of which once differed from PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")


def _np(t: object) -> np.ndarray:
    return np.asarray(t.detach().numpy())  # type: ignore[attr-defined]


def _error(fn: object, lib: object) -> tuple[type, str]:
    try:
        fn(lib)  # type: ignore[operator]
    except Exception as e:  # noqa: BLE001
        return type(e), str(e)
    raise AssertionError("no error")


def test_split_negative_size_is_pytorchs_error_before_the_sum() -> None:
    def f(lib: object) -> object:
        return lib.split(lib.zeros(7, 4), [8, -1])  # type: ignore[attr-defined]

    (te, tm), (re, rm) = _error(f, torch), _error(f, rt)
    assert re is te and rm == tm


@pytest.mark.parametrize("dim", [0, 1])
def test_chunk_of_an_empty_dimension_gives_chunks_pieces(dim: int) -> None:
    shape = (0, 2) if dim == 0 else (2, 0)
    x = torch.zeros(shape, requires_grad=True)
    y = rt.zeros(shape, requires_grad=True)
    want, got = torch.chunk(x, 3, dim), rt.chunk(y, 3, dim)
    assert [tuple(p.shape) for p in got] == [tuple(p.shape) for p in want]
    assert type(got[0].grad_fn).__name__ == type(want[0].grad_fn).__name__
    torch.cat(want, dim).sum().backward()
    rt.cat(got, dim).sum().backward()
    assert tuple(y.grad.shape) == tuple(x.grad.shape)


def test_number_remainder_by_tensor_has_no_derivative() -> None:
    x = torch.tensor([7.0, 3.0, 2.0], requires_grad=True)
    y = rt.tensor([7.0, 3.0, 2.0], requires_grad=True)
    want, got = 2.0 % x, 2.0 % y
    np.testing.assert_array_equal(_np(got), _np(want))
    assert type(got.grad_fn).__name__ == type(want.grad_fn).__name__
    (te, tm) = _error(lambda _: want.sum().backward(), torch)
    (re, rm) = _error(lambda _: got.sum().backward(), rt)
    assert re is te and rm == tm
    # the tensor-first remainder keeps its derivative
    got2 = rt.remainder(y, 2.0)
    got2.sum().backward()
    np.testing.assert_array_equal(_np(y.grad), [1.0, 1.0, 1.0])


@pytest.mark.parametrize("dtype,values,number", [
    ("uint8", [7, 3, 0, 2, 9], -2), ("int8", [7, -3, 2, -9, 0], 200)])
def test_div_trunc_integer_by_number_takes_the_number_in_the_tensors_dtype(
        dtype: str, values: list[int], number: int) -> None:
    want = torch.div(torch.tensor(values, dtype=getattr(torch, dtype)), number,
                     rounding_mode="trunc")
    got = rt.div(rt.tensor(values, dtype=getattr(rt, dtype)), number, rounding_mode="trunc")
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_array_equal(_np(got), _np(want))
