"""PyTorch's test/test_indexing.py, ported by hand for device 'cpu' and the
float32/float64/int64/bool dtypes with ``import runtime as torch`` (helpers and the list of
what is left out in tests/runtime/test_ported_tensor_ops_h18.py).

Left out here: the ``strided.set_(storage, offset, size, stride)`` parts of
test_advancedindex (the runtime refuses set_ with an offset: NotImplementedError), half
precision variants, the MPS/CUDA/XLA-only tests, DeterministicGuard (deterministic CUDA
kernels), float8 and complex dtypes.
"""

from __future__ import annotations

import random
import warnings
from typing import Any

import numpy as np
import pytest

import runtime as torch
from tests.runtime.test_ported_tensor_ops_h18 import ALL, assert_equal, make_tensor


def _consec(size: tuple[int, ...], start: int = 1, dtype: torch.dtype = torch.float32
            ) -> torch.Tensor:
    sequence = torch.ones(int(np.prod(size)), dtype=torch.float32).cumsum(0)
    sequence.add_(start - 1)
    return sequence.view(*size).to(dtype)


def test_index() -> None:
    reference = _consec((3, 3, 3))
    assert_equal(reference[torch.LongTensor()], reference.new(0, 3, 3))
    assert_equal(reference[0], _consec((3, 3)), atol=0, rtol=0)
    assert_equal(reference[1], _consec((3, 3), 10), atol=0, rtol=0)
    assert_equal(reference[2], _consec((3, 3), 19), atol=0, rtol=0)
    assert_equal(reference[0, 1], _consec((3,), 4), atol=0, rtol=0)
    assert_equal(reference[0:2], _consec((2, 3, 3)), atol=0, rtol=0)
    assert reference[2, 2, 2].item() == 27
    assert_equal(reference[:], _consec((3, 3, 3)), atol=0, rtol=0)
    assert_equal(reference[..., 2], torch.tensor([[3.0, 6.0, 9.0], [12.0, 15.0, 18.0],
                                                  [21.0, 24.0, 27.0]]))
    assert_equal(reference[0, ..., 2], torch.tensor([3.0, 6.0, 9.0]))
    assert_equal(reference[..., 2], reference[:, :, 2])
    assert_equal(reference[0, ..., 2], reference[0, :, 2])
    assert_equal(reference[0, 2, ...], reference[0, 2])
    for key in ((..., 2, 2, 2), (2, ..., 2, 2), (2, 2, ..., 2), (2, 2, 2, ...)):
        assert reference[key].item() == 27
    assert_equal(reference[...], reference)
    r5 = _consec((3, 3, 3, 3, 3))
    assert_equal(r5[..., 1, 0], r5[:, :, :, 1, 0])
    assert_equal(r5[2, ..., 1, 0], r5[2, :, :, 1, 0])
    assert_equal(r5[2, 1, 0, ..., 1], r5[2, 1, 0, :, 1])
    assert_equal(r5[...], r5)
    reference = _consec((5, 5, 5))
    idx = torch.LongTensor([2, 4])
    assert_equal(reference[idx], torch.stack([reference[2], reference[4]]))
    assert_equal(reference[2, None], reference[2].unsqueeze(0))
    assert_equal(reference[2, None, None], reference[2].unsqueeze(0).unsqueeze(0))
    assert_equal(reference[2:4, None], reference[2:4].unsqueeze(1))
    assert_equal(reference[None, 2, None, None],
                 reference.unsqueeze(0)[:, 2].unsqueeze(0).unsqueeze(0))
    assert_equal(reference[None, 2:5, None, None],
                 reference.unsqueeze(0)[:, 2:5].unsqueeze(2).unsqueeze(2))
    assert_equal(torch.empty(0, 5, 5), reference[slice(0)])
    assert_equal(torch.empty(0, 5), reference[slice(0), 2])
    assert_equal(torch.empty(0, 5), reference[2, slice(0)])
    assert_equal(torch.tensor([]), reference[2, 1:1, 2])
    reference = _consec((10, 10, 10))
    assert_equal(reference[1:5:2], torch.stack([reference[1], reference[3]], 0))
    assert_equal(reference[1:6:2], torch.stack([reference[1], reference[3], reference[5]], 0))
    assert_equal(reference[1:9:4], torch.stack([reference[1], reference[5]], 0))
    assert_equal(reference[2:4, 1:5:2], torch.stack([reference[2:4, 1], reference[2:4, 3]], 1))
    assert_equal(reference[3, 1:6:2],
                 torch.stack([reference[3, 1], reference[3, 3], reference[3, 5]], 0))
    assert_equal(reference[None, 2, 1:9:4],
                 torch.stack([reference[2, 1], reference[2, 5]], 0).unsqueeze(0))
    assert_equal(reference[:, 2, 1:6:2],
                 torch.stack([reference[:, 2, 1], reference[:, 2, 3], reference[:, 2, 5]], 1))
    lst = [list(range(i, i + 10)) for i in range(0, 100, 10)]
    tensor = torch.DoubleTensor(lst)
    for _ in range(100):
        s1 = random.randrange(10)
        idx1 = slice(s1, s1 + random.randrange(1, 10 - s1 + 1), random.randrange(1, 8))
        if random.randrange(2) == 0:
            s2 = random.randrange(10)
            idx2 = slice(s2, s2 + random.randrange(1, 10 - s2 + 1), random.randrange(1, 8))
            want, got = [row[idx2] for row in lst[idx1]], tensor[idx1, idx2]
        else:
            want, got = lst[idx1], tensor[idx1]
        assert_equal(torch.DoubleTensor(want), got)
    for bad in (slice(1, 9, 0), slice(1, 9, -1)):
        with pytest.raises(ValueError):
            reference[bad]
    for key in ((1, 1, 1, 1), (1, 1, 1, slice(1, 1)), (3,) * 8, 0.0, (0.0, slice(0.0, 2.0)),
                (0.0, slice(None), slice(0.0, 2.0)), (0.0, ..., slice(0.0, 2.0)),
                (0.0, slice(None), 0.0)):
        with pytest.raises(IndexError):
            reference[key]
    with pytest.raises(TypeError):
        reference[0.0:2.0]
    with pytest.raises(TypeError, match="^Tensor does not support deleting items$"):
        del reference[0]


def _ri(indices: Any) -> Any:
    choice = random.randint(0, 2)
    if choice == 0:
        return torch.LongTensor(indices)
    return list(indices) if choice == 1 else tuple(indices)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.int64])
def test_advancedindex_integer_arrays(dtype: torch.dtype) -> None:
    def consec(size: tuple[int, ...], start: int = 1) -> torch.Tensor:
        return _consec(size, start, dtype)

    def t(values: Any) -> torch.Tensor:
        return torch.tensor(values, dtype=dtype)

    x = consec((10,))
    assert_equal(x[[0]], consec((1,)))
    assert_equal(x[_ri([0]),], consec((1,)))
    assert_equal(x[_ri([3]),], consec((1,), 4))
    assert_equal(x[[2, 3, 4]], consec((3,), 3))
    assert_equal(x[_ri([2, 3, 4]),], consec((3,), 3))
    assert_equal(x[_ri([0, 2, 4]),], t([1, 3, 5]))
    x[[0]] = -2
    assert_equal(x[[0]], t([-2]))
    x[[0]] = -1
    assert_equal(x[_ri([0]),], t([-1]))
    x[[2, 3, 4]] = 4
    assert_equal(x[[2, 3, 4]], t([4, 4, 4]))
    x[_ri([2, 3, 4]),] = 3
    assert_equal(x[_ri([2, 3, 4]),], t([3, 3, 3]))
    x[_ri([0, 2, 4]),] = t([5, 4, 3])
    assert_equal(x[_ri([0, 2, 4]),], t([5, 4, 3]))
    strided = consec((10,))[::2]
    assert_equal(strided[[0]], t([1]))
    assert_equal(strided[_ri([3]),], t([7]))
    assert_equal(strided[_ri([1, 2]),], t([3, 5]))
    assert_equal(strided[_ri([[2, 1], [0, 3]]),], t([[5, 3], [1, 7]]))
    reference = consec((3, 2))
    assert_equal(reference[_ri([0, 1, 2]), _ri([0])], t([1, 3, 5]))
    assert_equal(reference[_ri([0, 1, 2]), _ri([1])], t([2, 4, 6]))
    assert_equal(reference[_ri([0]), _ri([0])], consec((1,)))
    assert_equal(reference[_ri([2]), _ri([1])], consec((1,), 6))
    assert_equal(reference[(_ri([0, 0]), _ri([0, 1]))], t([1, 2]))
    assert_equal(reference[(_ri([0, 1, 1, 0, 2]), _ri([1]))], t([2, 4, 4, 2, 6]))
    assert_equal(reference[(_ri([0, 0, 1, 1]), _ri([0, 1, 0, 0]))], t([1, 2, 3, 3]))
    rows = _ri([[0, 0], [1, 2]])
    assert_equal(reference[rows, ([0],)], t([[1, 1], [3, 5]]))
    assert_equal(reference[rows, _ri([1, 0])], t([[2, 1], [4, 5]]))
    columns = _ri([[0, 1], [1, 0]])
    assert_equal(reference[rows, columns], t([[1, 2], [4, 5]]))
    reference[_ri([0]), _ri([1])] = -1
    assert_equal(reference[_ri([0]), _ri([1])], t([-1]))
    reference[_ri([0, 1, 2]), _ri([0])] = t([-1, 2, -4])
    assert_equal(reference[_ri([0, 1, 2]), _ri([0])], t([-1, 2, -4]))
    reference[rows, columns] = t([[4, 6], [2, 3]])
    assert_equal(reference[rows, columns], t([[4, 6], [2, 3]]))
    reference = t([[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]).t_()
    assert_equal(reference[_ri([0, 1, 2]), _ri([0])], t([0, 1, 2]))
    assert_equal(reference[_ri([0, 1, 2]), _ri([1])], t([4, 5, 6]))
    assert_equal(reference[_ri([0]), _ri([0])], t([0]))
    assert_equal(reference[_ri([2]), _ri([1])], t([6]))
    assert_equal(reference[(_ri([0, 0]), _ri([0, 1]))], t([0, 4]))
    assert_equal(reference[(_ri([0, 1, 1, 0, 3]), _ri([1]))], t([4, 5, 5, 4, 7]))
    assert_equal(reference[(_ri([0, 0, 1, 1]), _ri([0, 1, 0, 0]))], t([0, 4, 1, 1]))


def _np_key(indices: Any) -> Any:
    return tuple(i.tolist() if isinstance(i, torch.Tensor) else i for i in indices)


def _assert_get_eq(t: torch.Tensor, indexer: Any) -> None:
    assert_equal(t[indexer], torch.tensor(t.numpy()[_np_key(indexer)], dtype=t.dtype))


def _assert_set_eq(t: torch.Tensor, indexer: Any, value: Any) -> None:
    got = t.clone()
    got[indexer] = value
    want = t.clone().numpy()
    want[_np_key(indexer)] = value if isinstance(value, int) else value.numpy()
    assert_equal(got, torch.tensor(want, dtype=t.dtype))


def _set_tensor(t: torch.Tensor, indexer: Any) -> torch.Tensor:
    part = t[indexer]
    return torch.randperm(part.numel()).view(part.size()).to(t.dtype)


S, E = slice(None), Ellipsis
_INDEXERS_2D = [(S, [1, 3]), ([0, 2], S), (S, [[0, 1], [2, 3]]), ([-1], [0]), ([0, 2], [-1]),
                (S, [-1])]
_INDEXERS_3D = [
    (S, S, (0, 3, 4)), (S, (2, 4, 5, 7), S), ((2, 3), S, S), (S, (0, 2, 3), (1, 3, 4)),
    (S, (0,), (1, 2, 4)), (S, (0, 1, 3), (4,)), (S, ((0, 1), (1, 0)), ((2, 3),)),
    (S, ((0, 1), (2, 3)), ((0,),)), (S, ((5, 6),), ((0, 3), (4, 4))), ((0, 2, 3), (1, 3, 4), S),
    ((0,), (1, 2, 4), S), ((0, 1, 3), (4,), S), (((0, 1), (1, 0)), ((2, 1), (3, 5)), S),
    (((0, 1), (1, 0)), ((2, 3),), S), (((0, 1), (2, 3)), ((0,),), S),
    (((2, 1),), ((0, 3), (4, 4)), S), (((2,),), ((0, 3), (4, 1)), S), ((0, 2, 3), S, (1, 3, 4)),
    ((0, 2),), ((0, 2), S), ((0, 2), E), ((0, 2), S, E), ((0, 2), E, S), ((0, 2), (1, 3)),
    ((0, 2), (1, 3), E), (E, (1, 3), (2, 3)), (E, (2, 3, 4)), (E, S, (2, 3, 4)),
    (S, E, (2, 3, 4)), (E, S, S, (0, 3, 4)), (S, E, S, (0, 3, 4)), (S, S, E, (0, 3, 4)),
    (S, S, (0, 3, 4), E), (E, ((0, 1), (1, 0)), ((2, 1), (3, 5)), S),
    (((0, 1), (1, 0)), ((2, 1), (3, 5)), E, S), (((0, 1), (1, 0)), ((2, 1), (3, 5)), S, E)]
_INDEXERS_4D = [
    (S, S, S, (0, 3, 4)), (S, S, (2, 4, 5, 7), S), (S, (2, 3), S, S), ((1, 2), S, S, S),
    (S, S, (0, 2, 3), (1, 3, 4)), (S, S, (0,), (1, 2, 4)), (S, S, (0, 1, 3), (4,)),
    (S, S, ((0, 1), (1, 0)), ((2, 3),)), (S, S, ((0, 1), (2, 3)), ((0,),)),
    (S, S, ((5, 6),), ((0, 3), (4, 4))), (S, (0, 2, 3), (1, 3, 4), S), (S, (0,), (1, 2, 4), S),
    (S, (0, 1, 3), (4,), S), (S, ((0, 1), (3, 4)), ((2, 3), (0, 1)), S),
    (S, ((0, 1), (3, 4)), ((2, 3),), S), (S, ((0, 1), (3, 2)), ((0,),), S),
    (S, ((2, 1),), ((0, 3), (6, 4)), S), (S, ((2,),), ((0, 3), (4, 2)), S),
    ((0, 1, 2), (1, 3, 4), S, S), ((0,), (1, 2, 4), S, S), ((0, 1, 2), (4,), S, S),
    (((0, 1), (0, 2)), ((2, 4), (1, 5)), S, S), (((0, 1), (1, 2)), ((2, 0),), S, S),
    (((2, 2),), ((0, 3), (4, 5)), S, S), (((2,),), ((0, 3), (4, 5)), S, S),
    (S, (3, 4, 6), (0, 2, 3), (1, 3, 4)), (S, (2, 3, 4), (1, 3, 4), (4,)),
    (S, (0, 1, 3), (4,), (1, 3, 4)), (S, (6,), (0, 2, 3), (1, 3, 4)), (S, (2, 3, 5), (3,), (4,)),
    (S, (0,), (4,), (1, 3, 4)), (S, (6,), (0, 2, 3), (1,)),
    (S, ((0, 3), (3, 6)), ((0, 1), (1, 3)), ((5, 3), (1, 2))), ((2, 2, 1), (0, 2, 3), (1, 3, 4), S),
    ((2, 0, 1), (1, 2, 3), (4,), S), ((0, 1, 2), (4,), (1, 3, 4), S), ((0,), (0, 2, 3), (1, 3, 4), S),
    ((0, 2, 1), (3,), (4,), S), ((0,), (4,), (1, 3, 4), S), ((1,), (0, 2, 3), (1,), S),
    (((1, 2), (1, 2)), ((0, 1), (2, 3)), ((2, 3), (3, 5)), S), (E, (0, 3, 4)), (E, S, (0, 3, 4)),
    (E, S, S, (0, 3, 4)), (S, E, (0, 3, 4)), (S, S, E, (0, 3, 4)), (S, (0, 2, 3), (1, 3, 4)),
    (S, (0, 2, 3), (1, 3, 4), E), (E, (0, 2, 3), (1, 3, 4), S), ((0,), (1, 2, 4)),
    ((0,), (1, 2, 4), S), ((0,), (1, 2, 4), E), ((0,), (1, 2, 4), E, S), ((1,),),
    ((0, 2, 1), (3,), (4,)), ((0, 2, 1), (3,), (4,), S), ((0, 2, 1), (3,), (4,), E),
    (E, (0, 2, 1), (3,), (4,))]


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.int64])
def test_advancedindex_vs_numpy(dtype: torch.dtype) -> None:
    reference = _consec((3, 2), dtype=dtype)
    assert_equal(reference[_ri([0, 2]),], torch.tensor([[1, 2], [5, 6]], dtype=dtype))
    assert_equal(reference[_ri([1]), ...], torch.tensor([[3, 4]], dtype=dtype))
    assert_equal(reference[..., _ri([1])], torch.tensor([[2], [4], [6]], dtype=dtype))
    with pytest.raises(IndexError):
        reference[_ri([1]), _ri([0, 2]), _ri([3])]
    reference = torch.empty(10, dtype=dtype)
    for bad in (10, -11):
        for key in (bad, torch.LongTensor([bad]), [bad]):
            with pytest.raises(IndexError, match="out of"):
                reference[key]
    for shape, indexers, value, dupes in (
            ((4, 5), _INDEXERS_2D, 44, [(S, [0, 1, 1, 2, 2])]), ((4, 8, 5), _INDEXERS_3D, 212, []),
            ((3, 9, 8, 6), _INDEXERS_4D, 1333, [])):
        reference = torch.arange(0.0, int(np.prod(shape)), dtype=dtype).view(*shape)
        for indexer in indexers + dupes:
            _assert_get_eq(reference, indexer)
        for indexer in indexers:
            _assert_set_eq(reference, indexer, value)
            _assert_set_eq(reference, indexer, _set_tensor(reference, indexer))


@pytest.mark.parametrize("dtype", ALL)
def test_advancedindex_backward_matches_index_put(dtype: torch.dtype) -> None:
    """(The file's assert_backward_eq, run on the CPU against an index_put of the gradient.)"""
    reference = make_tensor((4, 8, 5), dtype).float()
    for indexer in _INDEXERS_3D[:12]:
        x = reference.detach().clone().requires_grad_(True)
        out = x[indexer]
        g = torch.rand_like(out)
        out.backward(g)
        want = torch.zeros_like(reference)
        want_np = want.numpy()
        np.add.at(want_np, _np_key(indexer), g.numpy())
        assert_equal(x.grad, torch.from_numpy(want_np))


def test_advancedindex_big() -> None:
    reference = torch.arange(0, 123344, dtype=torch.int)
    assert_equal(reference[[0, 123, 44488, 68807, 123343],],
                 torch.tensor([0, 123, 44488, 68807, 123343], dtype=torch.int))


def test_set_item_to_scalar_tensor() -> None:
    m, n = random.randint(1, 10), random.randint(1, 10)
    z = torch.randn([m, n])
    w = torch.tensor(1.0, requires_grad=True)
    z[:, 0] = w
    z.sum().backward()
    assert w.grad.item() == m


def test_single_multiple_int_none() -> None:
    v = torch.randn(5, 7, 3)
    assert v[4].shape == (7, 3)
    assert v[4, :, 1].shape == (7,)
    assert v[None].shape == (1, 5, 7, 3)
    assert v[:, None].shape == (5, 1, 7, 3)
    assert v[:, None, None].shape == (5, 1, 1, 7, 3)
    assert v[..., None].shape == (5, 7, 3, 1)


def test_step() -> None:
    v = torch.arange(10)
    assert_equal(v[::1], v)
    assert v[::2].tolist() == [0, 2, 4, 6, 8]
    assert v[::3].tolist() == [0, 3, 6, 9]
    assert v[::11].tolist() == [0]
    assert v[1:6:2].tolist() == [1, 3, 5]


def test_step_assignment() -> None:
    v = torch.zeros(4, 4)
    v[0, 1::2] = torch.tensor([3.0, 4.0])
    assert v[0].tolist() == [0, 3, 0, 4]
    assert v[1:].sum().item() == 0


def test_bool_indices() -> None:
    v = torch.randn(5, 7, 3)
    mask = torch.tensor([True, False, True, True, False], dtype=torch.bool)
    assert v[mask].shape == (3, 7, 3)
    assert_equal(v[mask], torch.stack([v[0], v[2], v[3]]))
    v = torch.tensor([True, False, True], dtype=torch.bool)
    mask = torch.tensor([True, False, False], dtype=torch.bool)
    u8 = torch.tensor([1, 0, 0], dtype=torch.uint8)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        v1, v2 = v[mask], v[u8]
        assert_equal(v1, v2)
        assert_equal(v[mask], torch.tensor([True], dtype=torch.bool))
    assert len(w) == 1
    assert "indexing with dtype torch.uint8 is now deprecated" in str(w[0].message)


def test_list_indices() -> None:
    t = torch.randn(1000)
    indices = [range(i, i + 10) for i in range(990)]
    for i in (len(indices), 100, 32):
        assert t[indices[:i]].shape == (i, 10)
    # fewer than 32 sequences (ranges too, as PySequence_Check) are the tuple of them
    with pytest.warns(UserWarning, match="Using a non-tuple sequence for multidimensional"):
        with pytest.raises(IndexError, match="too many indices"):
            t[indices[:31]]


def test_bool_indices_accumulate() -> None:
    mask = torch.zeros(size=(10,), dtype=torch.bool)
    y = torch.ones(size=(10, 10))
    y.index_put_((mask,), y[mask], accumulate=True)
    assert_equal(y, torch.ones(size=(10, 10)))


def test_multiple_bool_indices() -> None:
    v = torch.randn(5, 7, 3)
    mask1 = torch.tensor([1, 0, 1, 1, 0], dtype=torch.bool)
    mask2 = torch.tensor([1, 1, 1], dtype=torch.bool)
    assert v[mask1, :, mask2].shape == (3, 7)


def test_multi_dimensional_bool_mask() -> None:
    x = torch.randn(2, 2, 3)
    b = ((True, False), (False, False))
    m = torch.tensor(b, dtype=torch.bool)
    z, t, f = torch.tensor(0), torch.tensor(True), torch.tensor(False)
    for mask in (b, m):
        assert x[mask,].shape == (1, 3)
        assert x[mask, ::2].shape == (1, 2)
        assert x[mask, None].shape == (1, 1, 3)
        assert x[mask, 0].shape == (1,)
        assert x[mask, z].shape == (1,)
        assert x[mask, True].shape == (1, 3)
        assert x[mask, True, True, True, True].shape == (1, 3)
        assert x[mask, False].shape == (0, 3)
        assert x[mask, True, True, False, True].shape == (0, 3)
        assert x[mask, t].shape == (1, 3)
        assert x[mask, f].shape == (0, 3)
    x = torch.randn(3, 2, 2, 5)
    assert x[:, m, :].shape == (3, 1, 5)
    assert x[0, m, ::2].shape == (1, 3)
    assert x[..., m, ::2].shape == (3, 1, 3)
    assert x[None, ..., m, ::2].shape == (1, 3, 1, 3)


def test_bool_mask_assignment() -> None:
    mask = torch.tensor([1, 0], dtype=torch.bool)
    v = torch.tensor([[1, 2], [3, 4]])
    v[mask, :] = 0
    assert_equal(v, torch.tensor([[0, 0], [3, 4]]))
    v = torch.tensor([[1, 2], [3, 4]])
    v[:, mask] = 0
    assert_equal(v, torch.tensor([[0, 2], [0, 4]]))


def test_multi_dimensional_bool_mask_assignment() -> None:
    v = torch.tensor([[[[1], [2]], [[3], [4]]]])
    mask = torch.tensor([[1, 0], [0, 1]], dtype=torch.bool)
    v[:, mask, :] = 0
    assert_equal(v, torch.tensor([[[[0], [2]], [[3], [0]]]]))


def test_byte_mask() -> None:
    v = torch.randn(5, 7, 3)
    mask = torch.ByteTensor([1, 0, 1, 1, 0])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        res = v[mask]
    assert res.shape == (3, 7, 3)
    assert_equal(res, torch.stack([v[0], v[2], v[3]]))
    assert len(w) == 1
    v = torch.tensor([1.0])
    assert_equal(v[v == 0], torch.tensor([]))


def test_byte_mask_accumulate() -> None:
    mask = torch.zeros(size=(10,), dtype=torch.uint8)
    y = torch.ones(size=(10, 10))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        y.index_put_((mask,), y[mask], accumulate=True)
    assert_equal(y, torch.ones(size=(10, 10)))
    assert len(w) == 2


def test_index_put_accumulate_expanded_values() -> None:
    t = torch.zeros((5, 2))
    indices = [torch.tensor([0, 1, 2, 3]), torch.tensor([1])]
    out = t.index_put_(indices, torch.tensor(1.0), accumulate=True)
    assert_equal(out[:, 1], torch.tensor([1., 1., 1., 1., 0.]))
    out = t.index_put_(indices, torch.tensor([1.0]), accumulate=True)
    assert_equal(out[:, 1], torch.tensor([2., 2., 2., 2., 0.]))
    t = torch.zeros(4, 3, 2)
    indices = [torch.tensor([0]), torch.arange(3)[:, None], torch.arange(2)[None, :]]
    t.index_put_(indices, torch.tensor([-1.0, -2.0]), accumulate=True)
    t.index_put_(indices, torch.tensor([[-1.0, -2.0]]), accumulate=True)
    assert_equal(t[0], torch.tensor([[-2.0, -4.0]] * 3))
    assert_equal(t[1:], torch.zeros(3, 3, 2))


def test_index_put_accumulate_duplicate_indices() -> None:
    for i in range(1, 128):
        indices = torch.empty(i, dtype=torch.double).uniform_(-1, 1).cumsum(0).long()
        inp = torch.randn(int(indices.abs().max().item()) + 1)
        values = torch.randn(indices.size(0))
        output = inp.index_put((indices,), values, accumulate=True)
        want = inp.tolist()
        for k, v in zip(indices.tolist(), values.tolist(), strict=True):
            want[k] += v
        assert_equal(output, torch.tensor(want))


def test_index_ind_dtype() -> None:
    x = torch.randn(4, 4)
    ind_long = torch.randint(4, (4,), dtype=torch.long)
    ind_int = ind_long.int()
    assert_equal(x[ind_long, ind_long], x[ind_int, ind_int])
    assert_equal(x[ind_long, :], x[ind_int, :])
    assert_equal(x[:, ind_long], x[:, ind_int])
    ind_long = torch.arange(4, dtype=torch.long)
    ind_int = ind_long.int()
    src = torch.randn(4)
    for accum in (True, False):
        ref, res = x.clone(), x.clone()
        torch.index_put_(ref, (ind_long, ind_long), src, accum)
        torch.index_put_(res, (ind_int, ind_int), src, accum)
        assert_equal(ref, res)


def test_index_put_accumulate_empty() -> None:
    with pytest.raises(RuntimeError):
        torch.rand([]).index_put([], torch.tensor([1.0]), True)


def test_multiple_byte_mask() -> None:
    v = torch.randn(5, 7, 3)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert v[torch.ByteTensor([1, 0, 1, 1, 0]), :, torch.ByteTensor([1, 1, 1])].shape == (3, 7)
    assert len(w) == 2


def test_byte_mask2d() -> None:
    v, c = torch.randn(5, 7, 3), torch.randn(5, 7)
    assert v[c > 0].shape == (int((c > 0).sum()), 3)


def test_int_indices() -> None:
    v = torch.randn(5, 7, 3)
    assert v[[0, 4, 2]].shape == (3, 7, 3)
    assert v[:, [0, 4, 2]].shape == (5, 3, 3)
    assert v[:, [[0, 1], [4, 3]]].shape == (5, 2, 2, 3)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool, torch.bfloat16])
def test_index_put_and_index_src_datatype(dtype: torch.dtype) -> None:
    src = torch.ones(3, 2, 4, dtype=dtype)
    res = src.index_put_((torch.tensor([0, 2, 1]),), torch.ones(3, 2, 4, dtype=dtype),
                         accumulate=True)
    assert res.shape == src.shape
    src = torch.ones(3, 2, 4, dtype=dtype)
    res = src[[0, 2, 1], :, :]
    assert res.shape == src.shape
    src[[0, 2, 1], :, :] = res
    assert res.shape == src.shape


def test_int_indices2d_and_broadcast() -> None:
    x = torch.arange(0, 12).view(4, 3)
    rows, columns = torch.tensor([[0, 0], [3, 3]]), torch.tensor([[0, 2], [0, 2]])
    assert x[rows, columns].tolist() == [[0, 2], [9, 11]]
    rows, columns = torch.tensor([0, 3]), torch.tensor([0, 2])
    assert x[rows[:, None], columns].tolist() == [[0, 2], [9, 11]]


def test_empty_index() -> None:
    x = torch.arange(0, 12).view(4, 3)
    idx = torch.tensor([], dtype=torch.long)
    assert x[idx].numel() == 0
    y = x.clone()
    y[idx] = -1
    assert_equal(x, y)
    y[torch.zeros(4, 3).bool()] = -1
    assert_equal(x, y)


def test_empty_ndim_index() -> None:
    x = torch.randn(5)
    assert_equal(torch.empty(0, 2), x[torch.empty(0, 2, dtype=torch.int64)])
    x = torch.randn(2, 3, 4, 5)
    assert_equal(torch.empty(2, 0, 6, 4, 5), x[:, torch.empty(0, 6, dtype=torch.int64)])
    x = torch.empty(10, 0)
    assert x[[1, 2]].shape == (2, 0)
    assert x[[], []].shape == (0,)
    with pytest.raises(IndexError, match="for dimension with size 0"):
        x[:, [0, 1]]


def test_empty_ndim_index_bool() -> None:
    with pytest.raises(IndexError):
        torch.randn(5)[torch.empty(0, 2, dtype=torch.uint8)]


def test_empty_slice() -> None:
    z = torch.randn(2, 3, 4, 5)[:, :, :, 1][:, 1:1, :]
    assert z.shape == (2, 0, 4)
    assert z.stride() == (60, 20, 5)
    assert z.is_contiguous()


def test_index_getitem_copy_bools_slices() -> None:
    true, false = torch.tensor(1, dtype=torch.uint8), torch.tensor(0, dtype=torch.uint8)
    for a in (torch.randn(2, 3), torch.tensor(3.0)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert a.data_ptr() != a[True].data_ptr()
            assert_equal(torch.empty(0, *a.shape), a[False])
            assert a.data_ptr() != a[true].data_ptr()
            assert_equal(torch.empty(0, *a.shape), a[false])
        assert a.data_ptr() == a[None].data_ptr()
        assert a.data_ptr() == a[...].data_ptr()


def test_index_setitem_bools_slices() -> None:
    true, false = torch.tensor(1, dtype=torch.uint8), torch.tensor(0, dtype=torch.uint8)
    for a in (torch.randn(2, 3), torch.tensor(3)):
        neg = torch.ones_like(a) * -1
        neg_exp = neg.unsqueeze(0).unsqueeze(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            a[True] = neg_exp
            assert_equal(a, neg)
            a[False] = 5
            assert_equal(a, neg)
            a[true] = neg_exp * 2
            assert_equal(a, neg * 2)
            a[false] = 5
            assert_equal(a, neg * 2)
        a[None] = neg_exp * 3
        assert_equal(a, neg * 3)
        a[...] = neg_exp * 4
        assert_equal(a, neg * 4)
        if a.dim() == 0:
            with pytest.raises(IndexError):
                a[:] = neg_exp * 5


def test_index_scalar_with_bool_mask() -> None:
    u8, b = torch.tensor(True, dtype=torch.uint8), torch.tensor(True, dtype=torch.bool)
    for a in (torch.tensor(1), torch.tensor(True, dtype=torch.bool)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert_equal(a[u8], a[b])


def test_setitem_expansion_error() -> None:
    a = torch.randn(2, 3)
    a_expanded = a.expand(torch.Size([5, 1]) + a.size())
    with pytest.raises(RuntimeError):
        a[True] = a_expanded
    with pytest.raises(RuntimeError):
        a[torch.tensor(True)] = a_expanded


def test_getitem_scalars() -> None:
    zero, one = torch.tensor(0, dtype=torch.int64), torch.tensor(1, dtype=torch.int64)
    a = torch.randn(2, 3)
    assert_equal(a[0], a[zero])
    assert_equal(a[0][1], a[zero][one])
    assert_equal(a[0, 1], a[zero, one])
    assert_equal(a[0, one], a[zero, 1])
    assert a[0, 1].data_ptr() == a[zero, one].data_ptr()
    assert a[1].data_ptr() == a[one.int()].data_ptr()
    assert a[1].data_ptr() == a[one.short()].data_ptr()
    r = torch.randn(())
    with pytest.raises(IndexError):
        r[:]
    with pytest.raises(IndexError):
        r[zero]
    assert_equal(r, r[...])


def test_setitem_scalars() -> None:
    zero = torch.tensor(0, dtype=torch.int64)
    a = torch.randn(2, 3)
    with_number, with_scalar = a.clone(), a.clone()
    b = torch.randn(3)
    with_number[0] = b
    with_scalar[zero] = b
    assert_equal(with_number, with_scalar)
    a[1, zero] = 7.7
    assert abs(a[1, 0].item() - 7.7) < 1e-6
    r = torch.randn(())
    with pytest.raises(IndexError):
        r[:] = 8.8
    with pytest.raises(IndexError):
        r[zero] = 8.8
    r[...] = 9.9
    assert abs(r.item() - 9.9) < 1e-6


def test_basic_advanced_combined() -> None:
    x = torch.arange(0, 12).view(4, 3)
    assert_equal(x[1:2, 1:3], x[1:2, [1, 2]])
    assert x[1:2, 1:3].tolist() == [[4, 5]]
    unmodified = x.clone()
    x[1:2, [1, 2]].zero_()
    assert_equal(x, unmodified)
    x[1:2, [1, 2]] = 0
    assert not torch.equal(x, unmodified)


def test_int_assignment() -> None:
    x = torch.arange(0, 4).view(2, 2)
    x[1] = 5
    assert x.tolist() == [[0, 1], [5, 5]]
    x = torch.arange(0, 4).view(2, 2)
    x[1] = torch.arange(5, 7)
    assert x.tolist() == [[0, 1], [5, 6]]


def test_byte_tensor_assignment() -> None:
    x = torch.arange(0.0, 16).view(4, 4)
    b = torch.ByteTensor([True, False, True, False])
    value = torch.tensor([3.0, 4.0, 5.0, 6.0])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        x[b] = value
    assert len(w) == 1
    assert_equal(x[0], value)
    assert_equal(x[1], torch.arange(4.0, 8))
    assert_equal(x[2], value)
    assert_equal(x[3], torch.arange(12.0, 16))


def test_variable_slicing() -> None:
    x = torch.arange(0, 16).view(4, 4)
    i, j = torch.IntTensor([0, 1])
    assert_equal(x[i:j], x[0:1])


def test_ellipsis_tensor() -> None:
    x = torch.arange(0, 9).view(3, 3)
    idx = torch.tensor([0, 2])
    assert x[..., idx].tolist() == [[0, 2], [3, 5], [6, 8]]
    assert x[idx, ...].tolist() == [[0, 1, 2], [6, 7, 8]]


def test_setitem_value_dtype_checks_as_index_put() -> None:
    """(From test_type_promotion.py's test_indexing.) t[advanced] = a tensor of another dtype
    is PyTorch's index_put_ error; a one-element value with one bool mask is masked_fill_'s
    cast, basic indexing copy_'s, a number t's dtype."""
    a = torch.ones(5, 2, dtype=torch.double)
    mask = torch.tensor([True, False, True, False, False])
    for key, value in (((slice(None), [1]), torch.zeros(5, 1, dtype=torch.int)),
                       (([1],), torch.zeros(1, 2, dtype=torch.float)),
                       ((mask,), torch.zeros(2, 2, dtype=torch.float)),
                       (([1],), torch.tensor(3))):
        with pytest.raises(RuntimeError, match="^Index put requires the source and destination "
                                               "dtypes match, got Double for the destination and "
                                               "(Int|Float|Long) for the source.$"):
            a[key] = value
    a[mask] = torch.tensor(7, dtype=torch.int)
    a[:, 1] = torch.zeros(5, dtype=torch.int)
    a[[1]] = 3
    assert a.tolist() == [[7.0, 0.0], [3.0, 3.0], [7.0, 0.0], [1.0, 0.0], [1.0, 0.0]]
