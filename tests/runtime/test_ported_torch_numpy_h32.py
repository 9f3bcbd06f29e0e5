"""PyTorch's test/test_numpy_interop.py and test/test_type_info.py, ported by hand for device
'cpu' with ``import runtime as torch``.

Left out, as outside this project's scope: complex dtypes (from_numpy of complex arrays,
``to_numpy_force_argument``'s conj/sparse cases, ``dtype.to_complex``/``to_real``), float8's
finfo, the refcount leak checks (CPython internals), ``torch.Storage(np_val)`` (the legacy
typed-storage constructor), the storage a ``.numpy()`` array shares becoming unresizable, and
``.numpy()`` of a bfloat16 tensor (PyTorch refuses it; the runtime's bfloat16 is an ml_dtypes
array it hands out): those two are listed in h32's report.
"""

from __future__ import annotations

import warnings
from itertools import product

import numpy as np
import pytest

import runtime as torch
from runtime.ops.settings import is_warn_always_enabled, set_warn_always
from tests.runtime.test_ported_tensor_ops_h18 import assert_equal, make_tensor


@pytest.fixture
def warn_always():
    """``assertWarnsOnceRegex``: TORCH_WARN_ONCE warnings shown each time."""
    old = is_warn_always_enabled()
    set_warn_always(True)
    yield
    set_warn_always(old)


# ------------------------------------------------------------------ test_type_info.py


def test_invalid_input() -> None:
    for dtype in [torch.float16, torch.float32, torch.float64, torch.bfloat16, torch.bool]:
        with pytest.raises(TypeError):
            torch.iinfo(dtype)
    for dtype in [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool]:
        with pytest.raises(TypeError):
            torch.finfo(dtype)


def test_invalid_input_texts() -> None:
    with pytest.raises(TypeError, match="^torch.bool is not supported by torch.iinfo$"):
        torch.iinfo(torch.bool)
    with pytest.raises(TypeError, match=r"^torch.iinfo\(\) requires an integer input type"):
        torch.iinfo(torch.float32)
    with pytest.raises(TypeError, match=r"^finfo\(\): argument 'type' \(position 1\) must be "
                                        r"torch.dtype, not str$"):
        torch.finfo("float32")
    with pytest.raises(TypeError, match=r"^iinfo\(\): argument 'type' \(position 1\) must be "
                                        r"torch.dtype, not int$"):
        torch.iinfo(5)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16, torch.int8,
                                   torch.uint8])
def test_iinfo(dtype: torch.dtype) -> None:
    x = torch.zeros((2, 2), dtype=dtype)
    xinfo = torch.iinfo(x.dtype)
    xninfo = np.iinfo(x.cpu().numpy().dtype)
    assert xinfo.bits == xninfo.bits
    assert xinfo.max == xninfo.max
    assert xinfo.min == xninfo.min
    assert xinfo.dtype == xninfo.dtype


def test_iinfo_repr_and_equality() -> None:
    # PyTorch prints an iinfo's limits as floats (%g)
    assert repr(torch.iinfo(torch.int32)) == "iinfo(min=-2.14748e+09, max=2.14748e+09, " \
                                             "dtype=int32)"
    assert repr(torch.iinfo(torch.uint8)) == "iinfo(min=0, max=255, dtype=uint8)"
    assert torch.iinfo(torch.int32) == torch.iinfo(torch.int32)
    assert torch.iinfo(torch.int32) != torch.iinfo(torch.int64)
    with pytest.raises(TypeError):
        hash(torch.iinfo(torch.int8))


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.float64])
def test_finfo(dtype: torch.dtype) -> None:
    x = torch.zeros((2, 2), dtype=dtype)
    xinfo = torch.finfo(x.dtype)
    xninfo = np.finfo(x.cpu().numpy().dtype)
    for attr in ("bits", "max", "min", "eps", "tiny", "resolution", "dtype"):
        assert getattr(xinfo, attr) == getattr(xninfo, attr), attr
    old = torch.get_default_dtype()
    try:
        if dtype is not torch.float16:
            torch.set_default_dtype(dtype)
            assert torch.finfo(dtype) == torch.finfo()
    finally:
        torch.set_default_dtype(old)
    assert torch.finfo(torch.float32) != torch.finfo(torch.float64)


def test_finfo_bfloat16() -> None:
    xinfo = torch.finfo(torch.zeros((2, 2), dtype=torch.bfloat16).dtype)
    assert xinfo.bits == 16
    assert xinfo.max == pytest.approx(3.38953e+38, rel=1e-5)
    assert xinfo.min == pytest.approx(-3.38953e+38, rel=1e-5)
    assert xinfo.eps == 0.0078125
    assert xinfo.tiny == pytest.approx(1.17549e-38, rel=1e-5)
    assert xinfo.tiny == xinfo.smallest_normal
    assert xinfo.resolution == 0.01
    assert xinfo.dtype == "bfloat16"
    assert xinfo != torch.finfo(torch.float16)


# ------------------------------------------------------------------ test_numpy_interop.py


def test_numpy_non_writeable(warn_always: None) -> None:
    arr = np.zeros(5)
    arr.flags["WRITEABLE"] = False
    with pytest.warns(UserWarning, match="The given NumPy array is not writable"):
        torch.from_numpy(arr)


def test_numpy_unresizable() -> None:
    x = np.zeros((2, 2))
    y = torch.from_numpy(x)
    with pytest.raises(ValueError):
        x.resize((5, 5))
    with pytest.raises(RuntimeError, match="^Trying to resize storage that is not resizable$"):
        y.resize_(5, 5)
    y.resize_(3)  # a shrink keeps the storage: allowed
    assert y.shape == (3,)
    z = torch.randn(5, 5)
    w = z.numpy()
    with pytest.raises(ValueError):
        w.resize((10, 10))


def _castable(shape, dtype: torch.dtype) -> torch.Tensor:
    if dtype.is_floating_point:
        info = torch.finfo(dtype)
        t = torch.empty(shape, dtype=torch.float64).uniform_(max(info.min, -1e10),
                                                             min(info.max, 1e10))
    else:
        info = torch.iinfo(dtype)
        t = torch.empty(shape, dtype=torch.int64).random_(max(info.min, int(-1e10)),
                                                          min(info.max, int(1e10)))
    return t.to(dtype)


@pytest.mark.parametrize("dtp", [torch.uint8, torch.int8, torch.short, torch.int, torch.half,
                                 torch.float, torch.double, torch.long])
def test_to_numpy(dtp: torch.dtype) -> None:
    sz, sz1, sz2 = 10, 3, 5

    def check(x: torch.Tensor, y: np.ndarray) -> None:
        assert y.shape == tuple(x.shape)
        for idx in np.ndindex(*y.shape):
            assert x[idx].item() == y[idx]

    x = _castable(sz, dtp)
    check(x, x.numpy())
    x = _castable(sz * 2, dtp).narrow(0, sz - 1, sz)
    assert x.storage_offset() > 0
    check(x, x.numpy())
    assert torch.tensor([]).to(dtp).numpy().size == 0
    x = _castable((sz1, sz2), dtp)
    y = x.numpy()
    check(x, y)
    assert y.flags["C_CONTIGUOUS"]
    x = _castable((sz1 * 2, sz2), dtp).narrow(0, sz1 - 1, sz1)
    y = x.numpy()
    assert x.storage_offset() > 0
    check(x, y)
    assert y.flags["C_CONTIGUOUS"]
    x = _castable((sz2, sz1), dtp).t()
    y = x.numpy()
    check(x, y)
    assert not y.flags["C_CONTIGUOUS"]
    x = _castable((sz2 * 2, sz1), dtp).narrow(0, sz2 - 1, sz2).t()
    assert x.storage_offset() > 0
    check(x, x.numpy())
    x = _castable((sz2 * 2, sz1 * 2), dtp).narrow(0, sz2 - 1, sz2).narrow(1, sz1 - 1, sz1).t()
    assert x.storage_offset() > 0
    check(x, x.numpy())
    if dtp != torch.half:
        x = _castable((3, 4), dtp)
        y = x.numpy()
        assert y.flags.writeable
        y[0][1] = 3
        assert x[0][1] == 3
        y = x.t().numpy()
        assert y.flags.writeable
        y[0][1] = 3
        assert x[0][1] == 3


def test_to_numpy_bool() -> None:
    for data in ([True, False], [True]):
        x = torch.tensor(data, dtype=torch.bool)
        assert x.dtype == torch.bool
        y = x.numpy()
        assert y.dtype == np.bool_
        for i in range(len(x)):
            assert x[i] == y[i]


@pytest.mark.parametrize("force,requires_grad", list(product([False, True], [False, True])))
def test_to_numpy_force_argument(force: bool, requires_grad: bool) -> None:
    data = [[1.0, -2.0], [-1.0, 3.0]]
    x = torch.tensor(data, requires_grad=requires_grad)
    if not force and requires_grad:
        with pytest.raises((RuntimeError, TypeError), match=r"Use (t|T)ensor\..*(\.numpy\(\))?"):
            x.numpy()
        with pytest.raises((RuntimeError, TypeError), match=r"Use (t|T)ensor\..*(\.numpy\(\))?"):
            x.numpy(force=False)
    else:
        np.testing.assert_array_equal(x.numpy(force=force), np.array(data, np.float32))


@pytest.mark.parametrize("dtype", [np.double, np.float64, np.float16, np.int64, np.int32,
                                   np.int16, np.int8, np.uint8, np.longlong, np.bool_])
def test_from_numpy_dtypes(dtype: type) -> None:
    array = np.array([1, 2, 3, 4], dtype=dtype)
    t = torch.from_numpy(array)
    for i in range(len(array)):
        assert t[i].item() == array[i]
    array2 = array % 2
    t2 = torch.from_numpy(array2)
    for i in range(len(array2)):
        assert t2[i].item() == array2[i]


def test_from_numpy() -> None:
    with pytest.raises(TypeError):
        torch.from_numpy(np.array(["foo", "bar"], dtype=np.dtype(np.str_)))
    with pytest.raises(TypeError):
        torch.from_numpy(np.array("value".encode("ascii")))
    x = np.linspace(1, 125, 125)
    x.shape = (5, 5, 5)
    expected = torch.arange(1, 126, dtype=torch.float64).view(5, 5, 5)
    assert_equal(torch.from_numpy(x[1]), expected[1])
    assert_equal(torch.from_numpy(x[:, 1]), expected[:, 1])
    y = np.linspace(1, 25, 25)
    y.shape = (5, 5)
    assert_equal(torch.from_numpy(y.T), torch.arange(1, 26, dtype=torch.float64).view(5, 5).t())
    assert torch.from_numpy(np.zeros((0, 2))).shape == (0, 2)
    assert torch.from_numpy(np.zeros((2, 0))).shape == (2, 0)


def _ill_strided() -> np.ndarray:
    x = np.array([3.0, 5.0, 8.0])
    return np.lib.stride_tricks.as_strided(x, shape=(3,), strides=(3,))


@pytest.mark.parametrize("fn", [torch.from_numpy, torch.tensor, torch.as_tensor])
def test_from_numpy_ill_sized_strides(fn) -> None:
    with pytest.raises(ValueError, match="^given numpy array strides not a multiple of the "
                                         "element byte size. Copy the numpy array to "
                                         "reallocate the memory.$"):
        fn(_ill_strided())


@pytest.mark.parametrize("fn", [torch.from_numpy, torch.tensor, torch.as_tensor])
def test_from_numpy_negative_strides(fn) -> None:
    with pytest.raises(ValueError, match=r"^At least one stride in the given numpy array is "
                                         r"negative, and tensors with negative strides are not "
                                         r"currently supported. \(You can probably work around "
                                         r"this by making a copy of your array  with "
                                         r"array.copy\(\).\) $"):
        fn(np.arange(3.0)[::-1])
    assert_equal(fn(np.arange(3.0)[::-1].copy()), torch.tensor([2.0, 1.0, 0.0],
                                                                dtype=torch.float64))


def test_from_list_of_ndarray_warning(warn_always: None) -> None:
    with pytest.warns(UserWarning, match="Creating a tensor from a list of numpy.ndarrays is "
                                         "extremely slow"):
        torch.tensor([np.array([0]), np.array([1])])
    with pytest.warns(UserWarning, match="Creating a tensor from a list of numpy.ndarrays"):
        torch.tensor([[np.array([0])]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch.tensor(np.array([[0], [1]]))
        torch.tensor([[0], [1]])


def test_ctor_with_invalid_numpy_array_sequence(warn_always: None) -> None:
    rnd = np.random.random
    with pytest.warns(UserWarning):
        with pytest.raises(ValueError, match=r"^expected sequence of length 3 at dim 2 \(got 0\)"):
            torch.tensor([rnd(size=(3, 3)), rnd(size=(3, 0))])
        with pytest.raises(ValueError, match=r"^expected sequence of length 3 at dim 3 \(got 2\)"):
            torch.tensor([[rnd(size=(3, 3)), rnd(size=(3, 2))]])
        with pytest.raises(ValueError, match="expected sequence of length"):
            torch.tensor([[rnd(size=(3, 3)), rnd(size=(3, 3))],
                          [rnd(size=(3, 3)), rnd(size=(3, 2))]])
        with pytest.raises(TypeError, match="not a sequence"):
            torch.tensor([[rnd(size=(3)), rnd()]])
        with pytest.raises(ValueError, match=r"^expected sequence of length 3 at dim 1 \(got 2\)"):
            torch.tensor([[1, 2, 3], rnd(size=(2,))])


@pytest.mark.parametrize("dtype", [np.double, np.float64, np.float16, np.int64, np.int32,
                                   np.int16, np.uint8, np.bool_])
def test_ctor_with_numpy_scalar_ctor(dtype: type) -> None:
    assert dtype(42) == torch.tensor(dtype(42)).item()


def test_numpy_index() -> None:
    x = torch.randn(5, 5)
    for idx in np.array([0, 1, 2], dtype=np.int32):
        assert not isinstance(idx, int)
        assert_equal(x[idx], x[int(idx)])


def test_numpy_index_multi() -> None:
    for dim_sz in [2, 8]:
        i = np.zeros((dim_sz, dim_sz, dim_sz), dtype=np.int32)
        i[: dim_sz // 2, :, :] = 1
        x = torch.randn(dim_sz, dim_sz, dim_sz)
        assert x[i == 1].numel() == np.sum(i)


_TYPES = [torch.DoubleTensor, torch.FloatTensor, torch.HalfTensor, torch.LongTensor,
          torch.IntTensor, torch.ShortTensor, torch.ByteTensor]
_NP_DTYPES = [np.float64, np.float32, np.float16, np.int64, np.int32, np.int16, np.uint8]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_numpy_array_interface() -> None:
    for tp, dtype in zip(_TYPES, _NP_DTYPES):
        vals = [1, 2, 3, 4] if np.dtype(dtype).kind == "u" else [1, -2, 3, -4]
        x = torch.tensor(vals).type(tp)
        array = np.array(vals, dtype=dtype)
        asarray = np.asarray(x)
        assert isinstance(asarray, np.ndarray)
        assert asarray.dtype == dtype
        for i in range(len(x)):
            assert asarray[i] == x[i]
        abs_x = np.abs(x)
        assert isinstance(abs_x, tp)
        for i in range(len(x)):
            assert abs_x[i] == np.abs(array)[i]
    for dtype in _NP_DTYPES:
        x = torch.IntTensor([1, -2, 3, -4])
        asarray = np.asarray(x, dtype=dtype)
        assert asarray.dtype == dtype
        want = np.array([1, -2, 3, -4]).astype(dtype)
        np.testing.assert_array_equal(asarray, want)
    for tp, dtype in zip([torch.DoubleTensor, torch.FloatTensor], [np.float64, np.float32]):
        x = torch.tensor([1, 2, 3, 4]).type(tp)
        array = np.array([1, 2, 3, 4], dtype=dtype)
        for func in ["sin", "sqrt", "ceil"]:
            res_x = getattr(np, func)(x)
            assert isinstance(res_x, tp)
            np.testing.assert_allclose(res_x.numpy(), getattr(np, func)(array), rtol=1e-6)
    for tp, dtype in zip(_TYPES, _NP_DTYPES):
        x = torch.tensor([1, 2, 3, 4]).type(tp)
        geq2_x = np.greater_equal(x, 2)
        assert isinstance(geq2_x, torch.ByteTensor)
        np.testing.assert_array_equal(geq2_x.numpy(), [0, 1, 1, 1])


@pytest.mark.parametrize("np_dtype", [np.float32, np.float64, np.int32, np.int64, np.int16,
                                      np.uint8])
def test_multiplication_numpy_scalar(np_dtype: type) -> None:
    for t_dtype in [torch.float, torch.double]:
        np_sc = np_dtype(2.0)
        t = torch.ones(2, requires_grad=True, dtype=t_dtype)
        for r in (t * np_sc, np_sc * t):
            assert isinstance(r, torch.Tensor)
            assert r.dtype == t_dtype
            assert r.requires_grad


def test_parse_numpy_int_overflow() -> None:
    # numpy 2 refuses np.uint64(-1) itself: its value, 2**64 - 1, as PyTorch's test means it
    for dim in (np.uint64(2**64 - 1), 2**63):
        with pytest.raises(ValueError, match="^Overflow when unpacking long long$"):
            torch.mean(torch.randn(1, 1), dim)


@pytest.mark.parametrize("nptype", [np.int16, np.int8, np.uint8, np.int32, np.int64])
def test_parse_numpy_int(nptype: type) -> None:
    scalar = 3
    np_arr = np.array([scalar], dtype=nptype)
    np_val = np_arr[0]
    assert_equal(torch.ones(5).diag(scalar), torch.ones(5).diag(np_val))
    assert_equal(torch.ones([2, 2, 2, 2]).mean(scalar), torch.ones([2, 2, 2, 2]).mean(np_val))
    tensor = torch.tensor([2], dtype=torch.int)
    tensor[0] = np_val
    assert tensor[0].item() == np_val
    t = torch.from_numpy(np_arr)
    assert (t + np_val).dtype == t.dtype
    assert (np_val + t).dtype == t.dtype


@pytest.mark.filterwarnings("ignore:TypedStorage is deprecated")
def test_has_storage_numpy() -> None:
    for dtype in [np.float32, np.float64, np.int64, np.int32, np.int16, np.uint8]:
        arr = np.array([1], dtype=dtype)
        for t_dtype in [torch.float32, torch.double, torch.int, torch.long, torch.uint8]:
            assert torch.tensor(arr, dtype=t_dtype).storage() is not None


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16, torch.int32,
                                   torch.int64, torch.float32, torch.float64, torch.float16,
                                   torch.bool])
def test_numpy_scalar_cmp(dtype: torch.dtype) -> None:
    tensors = (torch.tensor(3, dtype=dtype), torch.tensor([1, 0, -3], dtype=dtype)
               if dtype is not torch.uint8 else torch.tensor([1, 0, 3], dtype=dtype),
               torch.tensor([[3, 0, 1], [3, 5, 4]], dtype=dtype))
    for tensor in tensors:
        np_array = tensor.cpu().numpy()
        for t, a in product((tensor.flatten()[0], tensor.flatten()[0].item()),
                            (np_array.flatten()[0], np_array.flatten()[0].item())):
            assert t == a


@pytest.mark.parametrize("dtype", [torch.int64, torch.float32, torch.float16, torch.bool,
                                   torch.uint8])
def test___eq__(dtype: torch.dtype) -> None:
    a = make_tensor((5, 7), dtype=dtype, low=0 if dtype is torch.uint8 else -9)
    b = a.clone().detach()
    b_np = b.numpy()
    res_check = torch.ones_like(a, dtype=torch.bool)
    assert_equal(a == b_np, res_check)
    assert_equal(b_np == a, res_check)
    if dtype == torch.bool:
        b[1][3] = not b[1][3]
    else:
        b[1][3] += 1
    res_check[1][3] = False
    assert_equal(a == b_np, res_check)
    assert_equal(b_np == a, res_check)
    rand = torch.randint(0, 2, a.shape, dtype=torch.bool)
    res_check = rand.logical_not()
    b.copy_(a)
    if dtype == torch.bool:
        b[rand] = b[rand].logical_not()
    else:
        b[rand] += 1
    assert_equal(a == b_np, res_check)
    assert_equal(b_np == a, res_check)
    b.copy_(a.logical_not() if dtype == torch.bool else a + 1)
    res_check.fill_(False)
    assert_equal(a == b_np, res_check)
    assert_equal(b_np == a, res_check)


def test_empty_tensors_interop() -> None:
    x = torch.rand((), dtype=torch.float16)
    y = torch.tensor(np.random.rand(0), dtype=torch.float16)
    assert torch.true_divide(x, y).shape == y.shape
    assert torch.mul(x, y).shape == y.shape
    assert torch.div(x, y, rounding_mode="floor").shape == y.shape
