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
