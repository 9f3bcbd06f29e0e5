"""bfloat16 (ml_dtypes) and PyTorch's unsigned shell dtypes (uint16, uint32, uint64): promotion
on every pair, with scalars and 0-d tensors, finfo/iinfo, casts, printing, bfloat16
arithmetic rounded as PyTorch's CPU kernels round it (bit for bit), checkpoints."""

from __future__ import annotations

import itertools
import warnings
from typing import Any

import numpy as np
import pytest

import runtime as rt
from runtime import _dtype as D

NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
         "float64", "uint16", "uint32", "uint64"]


def _torch() -> Any:
    return pytest.importorskip("torch")


def _bits(x: Any) -> np.ndarray:
    """The bfloat16 values of a runtime or torch tensor as float32 (exact), for comparing."""
    return np.asarray(x.detach().float().numpy())


# --- dtype objects -------------------------------------------------------------------------

def test_bfloat16_and_unsigned_dtypes_exist_with_pytorchs_attributes() -> None:
    assert rt.bfloat16.is_floating_point and rt.bfloat16.is_signed
    assert rt.bfloat16.itemsize == 2
    for d, size in ((rt.uint16, 2), (rt.uint32, 4), (rt.uint64, 8)):
        assert not d.is_floating_point and not d.is_signed and d.itemsize == size
    assert rt.as_tensor(np.zeros(2, np.uint32)).dtype is rt.uint32  # no longer read as int64
    assert D.as_dtype("bfloat16") is rt.bfloat16
    assert repr(rt.bfloat16) == "runtime.bfloat16"


def test_dtype_pickles_to_the_same_object() -> None:
    import copy
    import pickle

    assert pickle.loads(pickle.dumps(rt.bfloat16)) is rt.bfloat16
    assert copy.deepcopy(rt.uint64) is rt.uint64


# --- promotion against torch ---------------------------------------------------------------

@pytest.mark.parametrize("a", NAMES)
def test_promote_types_every_pair_as_torch(a: str) -> None:
    torch = _torch()
    for b in NAMES:
        try:
            want = str(torch.promote_types(getattr(torch, a), getattr(torch, b)))
        except RuntimeError as e:
            with pytest.raises(RuntimeError) as got:
                rt.promote_types(getattr(rt, a), getattr(rt, b))
            assert str(got.value) == str(e)
            continue
        assert f"torch.{rt.promote_types(getattr(rt, a), getattr(rt, b)).name}" == want, (a, b)


def _operand(lib: Any, kind: str, name: str) -> Any:
    if kind == "tensor":
        return lib.ones(2, dtype=getattr(lib, name))
    return lib.ones((), dtype=getattr(lib, name))


@pytest.mark.parametrize("a", NAMES)
def test_result_type_with_zero_dim_tensors_and_scalars_as_torch(a: str) -> None:
    torch = _torch()
    others: list[tuple[str, Any]] = [(f"0-d {b}", b) for b in NAMES]
    others += [("scalar", s) for s in (True, 2, 2.5)]
    for label, b in others:
        def call(lib: Any) -> Any:
            lhs = _operand(lib, "tensor", a)
            rhs = _operand(lib, "0-d", b) if label.startswith("0-d") else b
            return lib.result_type(lhs, rhs)

        try:
            want = str(call(torch))
        except RuntimeError as e:
            with pytest.raises(RuntimeError) as got:
                call(rt)
            assert str(got.value) == str(e)
            continue
        assert f"torch.{call(rt).name}" == want, (a, label)


def test_zero_dim_tensors_alone_promote_among_themselves() -> None:
    torch = _torch()
    for a, b in itertools.product(["bfloat16", "float16", "uint16", "int8"], repeat=2):
        want = None
        try:
            want = str(torch.result_type(_operand(torch, "0-d", a), _operand(torch, "0-d", b)))
        except RuntimeError:
            with pytest.raises(RuntimeError):
                rt.result_type(_operand(rt, "0-d", a), _operand(rt, "0-d", b))
        if want is not None:
            got = rt.result_type(_operand(rt, "0-d", a), _operand(rt, "0-d", b))
            assert f"torch.{got.name}" == want


def test_unsigned_shell_dtypes_refuse_other_integers_in_ops() -> None:
    with pytest.raises(RuntimeError, match="attempted to promote UInt16 and Char"):
        rt.tensor([1], dtype=rt.uint16) * rt.tensor([1], dtype=rt.int8)
    assert (rt.tensor([3], dtype=rt.uint32) * 2).dtype is rt.uint32
    assert (rt.tensor([3], dtype=rt.uint64) + 1.5).dtype is rt.float32


# --- finfo / iinfo, names --------------------------------------------------------------------

def test_finfo_iinfo_as_torch() -> None:
    torch = _torch()
    assert repr(rt.finfo(rt.bfloat16)) == repr(torch.finfo(torch.bfloat16))
    fi = rt.finfo(rt.bfloat16)
    assert (fi.eps, fi.max, fi.tiny, fi.bits) == (0.0078125, 3.3895313892515355e+38,
                                                  1.1754943508222875e-38, 16)
    for name in ("uint16", "uint32", "uint64"):
        got, want = rt.iinfo(getattr(rt, name)), torch.iinfo(getattr(torch, name))
        assert (got.min, got.max, got.bits) == (want.min, want.max, want.bits)
        assert repr(got) == repr(want)  # its limits as floats, %g: max=1.84467e+19


def test_type_names_and_error_spellings() -> None:
    assert rt.ones(2, dtype=rt.bfloat16).type() == "runtime.BFloat16Tensor"
    assert rt.ones(2, dtype=rt.uint16).type() == "runtime.UInt16Tensor"
    with pytest.raises(RuntimeError, match=r"but got: c10::BFloat16 != float"):
        rt.mm(rt.ones(2, 2, dtype=rt.bfloat16), rt.ones(2, 2))


# --- creation, casts, printing -----------------------------------------------------------------

def test_tensor_from_python_values_rounds_to_nearest_even_as_torch() -> None:
    torch = _torch()
    values = [1.0, 1.00390625, 1.01171875, -3.14159, 1e-40, 3.3e38, 65504.0, float("inf"),
              float("nan")]
    got = rt.tensor(values, dtype=rt.bfloat16)
    want = torch.tensor(values, dtype=torch.bfloat16)
    assert got.dtype is rt.bfloat16
    np.testing.assert_array_equal(_bits(got), _bits(want))


def test_casts_bfloat16_methods_and_back_as_torch() -> None:
    torch = _torch()
    x = np.array([0.1, -2.5, 3.7, 300.0, -129.9, 1e30], np.float64)
    r, t = rt.tensor(x), torch.tensor(x)
    np.testing.assert_array_equal(_bits(r.bfloat16()), _bits(t.bfloat16()))
    np.testing.assert_array_equal(_bits(r.to(rt.bfloat16)), _bits(t.to(torch.bfloat16)))
    for name in ("int8", "int32", "int64", "uint8", "float16", "float64", "bool"):
        got = r.float().bfloat16().to(getattr(rt, name))
        want = t.float().bfloat16().to(getattr(torch, name))
        assert got.dtype.name == name
        np.testing.assert_array_equal(got.numpy().astype(np.float64),
                                      want.numpy().astype(np.float64))
    assert r.bfloat16().half().dtype is rt.float16
    for name in ("uint16", "uint32", "uint64"):
        y = rt.tensor([1, 2, 65535], dtype=getattr(rt, name))
        assert y.float().tolist() == [1.0, 2.0, 65535.0]
        assert y.to(rt.bfloat16).tolist() == [1.0, 2.0, 65536.0]


def test_scalar_overflow_errors_as_torch() -> None:
    with pytest.raises(RuntimeError, match="value cannot be converted to type c10::BFloat16 "
                                           "without overflow"):
        rt.ones(2, dtype=rt.bfloat16).fill_(1e39)
    with pytest.raises(RuntimeError, match="value cannot be converted to type uint16_t "
                                           "without overflow"):
        rt.ones(2, dtype=rt.uint16).fill_(70000)
    assert rt.ones(2, dtype=rt.uint64).fill_(-1).tolist() == [2**64 - 1] * 2


def test_repr_names_the_dtype() -> None:
    assert repr(rt.tensor([1.5, 2.25], dtype=rt.bfloat16)) == \
        "tensor([1.5000, 2.2500], dtype=runtime.bfloat16)"
    assert repr(rt.tensor([1, 65535], dtype=rt.uint16)) == \
        "tensor([    1, 65535], dtype=runtime.uint16)"


# --- bfloat16 arithmetic, bit for bit against torch --------------------------------------------

def _pair(shape: tuple[int, ...], seed: int) -> tuple[Any, Any]:
    torch = _torch()
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return rt.tensor(a).bfloat16(), torch.from_numpy(a).bfloat16()


OPS = {
    "add": lambda lib, x, y: x + y,
    "add_scalar": lambda lib, x, y: x + 0.3,
    "sub": lambda lib, x, y: x - y,
    "rsub_scalar": lambda lib, x, y: 2.7 - x,
    "pow_scalar": lambda lib, x, y: x.abs() ** 0.3,
    "mul": lambda lib, x, y: x * y,
    "mul_scalar": lambda lib, x, y: x * 0.1,
    "mul_int": lambda lib, x, y: x * 3,
    "div": lambda lib, x, y: x / (y.abs() + 0.5),
    "exp": lambda lib, x, y: x.exp(),
    "log": lambda lib, x, y: x.abs().log(),
    "tanh": lambda lib, x, y: x.tanh(),
    "sigmoid": lambda lib, x, y: x.sigmoid(),
    "sqrt": lambda lib, x, y: x.abs().sqrt(),
    "matmul": lambda lib, x, y: x @ y.T,
    "linear": lambda lib, x, y: lib.nn.functional.linear(x, y, y[:, 0]),
    "sum": lambda lib, x, y: x.sum(),
    "sum_dim": lambda lib, x, y: x.sum(0),
    "mean": lambda lib, x, y: x.mean(),
    "mean_dim": lambda lib, x, y: x.mean(1),
    "softmax": lambda lib, x, y: lib.softmax(x, -1),
    "zero_dim_f32": lambda lib, x, y: x + lib.tensor(0.1),
    "mul_zero_dim_f32": lambda lib, x, y: x * lib.tensor(0.1),
    "mul_zero_dim_f64_left": lambda lib, x, y: lib.tensor(0.1, dtype=lib.float64) * x,
    "div_zero_dim_f64": lambda lib, x, y: x / lib.tensor(0.3, dtype=lib.float64),
    "rmul_scalar": lambda lib, x, y: 0.1 * x,
    "maximum": lambda lib, x, y: lib.maximum(x, y),
    "where": lambda lib, x, y: lib.where(x > 0, x, y),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_bfloat16_ops_bit_exact_against_torch(name: str) -> None:
    torch = _torch()
    rx, tx = _pair((96, 80), 0)
    ry, ty = _pair((96, 80), 1)
    got, want = OPS[name](rt, rx, ry), OPS[name](torch, tx, ty)
    assert got.dtype is rt.bfloat16 and want.dtype is torch.bfloat16
    np.testing.assert_array_equal(_bits(got), _bits(want))


def test_bfloat16_sum_accumulates_in_float32() -> None:
    # 4096 ones: a bfloat16 accumulator stops at 256 (256 + 1 rounds back to 256)
    x = rt.ones(4096, dtype=rt.bfloat16)
    assert x.sum().item() == 4096.0
    assert x.mean().item() == 1.0
    assert (x.reshape(64, 64) @ x.reshape(64, 64)).max().item() == 64.0


def test_bfloat16_with_float32_promotes_to_float32() -> None:
    r = rt.ones(2, dtype=rt.bfloat16) + rt.ones(2)
    assert r.dtype is rt.float32
    assert (rt.ones(2, dtype=rt.bfloat16) + rt.ones(2, dtype=rt.float16)).dtype is rt.float32


def test_bfloat16_gradients_against_torch() -> None:
    torch = _torch()
    rx, tx = _pair((16, 12), 2)
    rw, tw = _pair((12, 8), 3)
    for x in (rx, rw, tx, tw):
        x.requires_grad_(True)
    ((rx @ rw).exp() * rt.arange(8)).sum().backward()
    ((tx @ tw).exp() * torch.arange(8)).sum().backward()
    assert rx.grad.dtype is rt.bfloat16 and rw.grad.dtype is rt.bfloat16
    # each backward primitive rounds once, as torch's kernels: within an ulp or two
    for got, want in ((rx.grad, tx.grad), (rw.grad, tw.grad)):
        np.testing.assert_allclose(_bits(got), _bits(want), rtol=2 ** -6, atol=2 ** -9)


def test_bfloat16_matmul_backward_equals_float32_rounded() -> None:
    rx, _ = _pair((8, 6), 4)
    rw, _ = _pair((6, 5), 5)
    rx.requires_grad_(True)
    (rx @ rw).sum().backward()
    want = (rt.ones(8, 5) @ rw.float().T).bfloat16()
    np.testing.assert_array_equal(_bits(rx.grad), _bits(want))


def test_a_compiled_step_on_bfloat16_compiles_with_eagers_bits() -> None:
    """Planned without a fallback warning; its steps compute bfloat16 as eager does."""
    planner = pytest.importorskip("planner")
    rt.manual_seed(0)
    w0, x = rt.randn(4, 3).bfloat16(), rt.randn(2, 4).bfloat16()
    grads = []
    for compiled in (False, True):
        w = w0.clone().requires_grad_(True)

        def step(x: rt.Tensor) -> rt.Tensor:
            w.grad = None
            loss = (x @ w * 0.3 + 0.1).sum()
            loss.backward()
            return loss

        run = planner.compile(step, backend="interpreter") if compiled else step
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # a fallback to eager warns
            out = [run(x) for _ in range(2)]  # captured, then replayed
        assert w.grad.dtype is rt.bfloat16 and out[1].dtype is rt.bfloat16
        grads.append((out[1], w.grad))
    for a, b in zip(*grads):
        np.testing.assert_array_equal(_bits(b), _bits(a))


# --- checkpoints ------------------------------------------------------------------------------

def _checkpoint() -> dict[str, rt.Tensor]:
    return {"bf": rt.tensor([[1.5, -2.25], [3e38, 0.1]], dtype=rt.bfloat16),
            "bf0": rt.tensor(2.5, dtype=rt.bfloat16),
            "u16": rt.tensor([1, 65535], dtype=rt.uint16),
            "u32": rt.tensor([1, 2**32 - 1], dtype=rt.uint32),
            "u64": rt.tensor([2**64 - 1], dtype=rt.uint64)}


def _same(got: dict[str, rt.Tensor], want: dict[str, rt.Tensor]) -> None:
    assert got.keys() == want.keys()
    for k, v in want.items():
        assert got[k].dtype is v.dtype and got[k].shape == v.shape
        np.testing.assert_array_equal(got[k].numpy().astype(np.float64),
                                      v.numpy().astype(np.float64))


def test_save_load_round_trip(tmp_path: Any) -> None:
    path = tmp_path / "ck.pt"
    rt.save(_checkpoint(), path)
    _same(rt.load(path), _checkpoint())


def test_safetensors_round_trip_and_against_the_reference(tmp_path: Any) -> None:
    path = tmp_path / "ck.safetensors"
    rt.safetensors.save_file(_checkpoint(), path)
    _same(rt.safetensors.load_file(path), _checkpoint())
    torch = _torch()
    st = pytest.importorskip("safetensors.torch")
    theirs = st.load_file(str(path))
    assert theirs["bf"].dtype is torch.bfloat16 and theirs["u64"].dtype is torch.uint64
    np.testing.assert_array_equal(_bits(theirs["bf"]), _bits(_checkpoint()["bf"]))
    st.save_file({"b": torch.tensor([1.5, 3.0], dtype=torch.bfloat16),
                  "u": torch.tensor([7, 65535], dtype=torch.uint16)}, str(path))
    back = rt.safetensors.load_file(path)
    assert back["b"].dtype is rt.bfloat16 and back["b"].tolist() == [1.5, 3.0]
    assert back["u"].dtype is rt.uint16 and back["u"].tolist() == [7, 65535]


def test_uint64_from_python_ints_past_int64_as_torch() -> None:
    torch = _torch()
    data = [2**64 - 1, 1, 2**63]
    assert rt.tensor(data, dtype=rt.uint64).tolist() == \
        torch.tensor(data, dtype=torch.uint64).tolist() == data
    for bad in ([-1, 2], [2**64]):
        with pytest.raises(OverflowError) as want:
            torch.tensor(bad, dtype=torch.uint64)
        with pytest.raises(OverflowError) as got:
            rt.tensor(bad, dtype=rt.uint64)
        assert str(got.value) == str(want.value)


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float64", "int32", "uint8", "uint64"])
def test_tensor_of_a_tensor_keeps_its_dtype_as_torch(name: str) -> None:
    torch = _torch()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's "copy construct" advice
        want = torch.tensor(torch.ones(2, dtype=getattr(torch, name))).dtype
    assert f"torch.{rt.tensor(rt.ones(2, dtype=getattr(rt, name))).dtype.name}" == str(want)


def test_bfloat16_from_numpy_arrays_and_scalars() -> None:
    import ml_dtypes

    arr = np.array([1.5, -2.0], ml_dtypes.bfloat16)
    assert rt.tensor(arr).dtype is rt.bfloat16 and rt.tensor(arr).tolist() == [1.5, -2.0]
    assert rt.tensor(arr[0]).dtype is rt.bfloat16
    assert rt.from_numpy(arr).dtype is rt.bfloat16
    assert rt.tensor(arr, dtype=rt.float32).dtype is rt.float32


@pytest.mark.parametrize("name", ["bfloat16", "float16"])
def test_low_precision_random_draws(name: str) -> None:
    dt = getattr(rt, name)
    rt.manual_seed(0)
    u = rt.rand(100_000, dtype=dt).float().numpy()
    # PyTorch's: the float32 draw rounded to the dtype, a value rounded up to 1.0 made 0.0
    rt.manual_seed(0)
    wide = rt.rand(100_000).numpy()
    rounded = rt.tensor(wide).to(dt).float().numpy()
    assert u.max() < 1.0 and u.min() >= 0.0
    np.testing.assert_array_equal(u, np.where(rounded == 1.0, 0.0, rounded))
    n = rt.randn(1000, dtype=dt)
    assert n.dtype is dt and 0.8 < float(n.float().std()) < 1.2
    assert rt.randn_like(n).dtype is dt
