"""A parity sweep of rt.amp against PyTorch 2.13's CPU autocast: the promote policy's dtype
(PyTorch's ``prioritize``: float64 ignored, a second lower-precision dtype an error, order
dependent), the state functions' argument errors, the device types autocast keeps a state
for, and GradScaler's update over a run of clean and non-finite steps."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest

import runtime as rt
from runtime.amp._state import state

torch = pytest.importorskip("torch")


def _outcome(lib: Any, fn: Callable[[Any], Any], autocast_dtype: str) -> str:
    """The output dtype of ``fn`` under ``lib``'s CPU autocast, or the error's type and
    text."""
    try:
        with lib.autocast("cpu", dtype=getattr(lib, autocast_dtype)):
            out = fn(lib)
    except (RuntimeError, TypeError, ValueError) as e:
        return f"{type(e).__name__}: {e}"
    return str(out.dtype).split(".")[-1]


def _ones(lib: Any, dtype: str) -> Any:
    return lib.ones(2, dtype=getattr(lib, dtype))


PROMOTE_CASES: dict[str, Callable[[Any], Any]] = {
    "cat_f32_f64": lambda L: L.cat([_ones(L, "float32"), _ones(L, "float64")]),
    "cat_f64_bf16": lambda L: L.cat([_ones(L, "float64"), _ones(L, "bfloat16")]),
    "cat_f16_bf16": lambda L: L.cat([_ones(L, "float16"), _ones(L, "bfloat16")]),
    "cat_bf16_f16_f32": lambda L: L.cat([_ones(L, "bfloat16"), _ones(L, "float16"),
                                         _ones(L, "float32")]),
    "cat_f32_bf16_f16": lambda L: L.cat([_ones(L, "float32"), _ones(L, "bfloat16"),
                                         _ones(L, "float16")]),
    "cat_int_f16": lambda L: L.cat([L.ones(2, dtype=L.int64), _ones(L, "float16")]),
    "cat_int_bf16": lambda L: L.cat([L.ones(2, dtype=L.int64), _ones(L, "bfloat16")]),
    "stack_f16_f16": lambda L: L.stack([_ones(L, "float16"), _ones(L, "float16")]),
    "stack_bf16_f32": lambda L: L.stack([_ones(L, "bfloat16"), _ones(L, "float32")]),
    "index_copy_bf16_f32": lambda L: L.index_copy(_ones(L, "bfloat16"), 0, L.tensor([0]),
                                                  L.ones(1, dtype=L.float32)),
}


PRIORITIZE = "RuntimeError: Unexpected floating ScalarType in at::autocast::prioritize"
LET_THROUGH = {"bfloat16": {"cat_int_f16", "stack_f16_f16"},
               "float16": {"cat_f64_bf16", "cat_int_bf16", "stack_bf16_f32",
                           "index_copy_bf16_f32"}}


@pytest.mark.parametrize("autocast_dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("name", sorted(PROMOTE_CASES))
def test_promote_policy_matches_torch(name: str, autocast_dtype: str) -> None:
    fn = PROMOTE_CASES[name]
    ours, theirs = _outcome(rt, fn, autocast_dtype), _outcome(torch, fn, autocast_dtype)
    if name in LET_THROUGH[autocast_dtype]:
        # one lower-precision dtype, not the region's: PyTorch's error, here nothing is
        # cast and the op promotes as outside autocast (see policy._widest)
        assert theirs == PRIORITIZE
        try:  # as outside autocast, where index_copy refuses two dtypes (as PyTorch)
            theirs = str(fn(rt).dtype).split(".")[-1]
        except RuntimeError as e:
            theirs = f"RuntimeError: {e}"
    assert ours == theirs
    assert not state.on


def test_composites_calling_cat_keep_other_low_dtypes() -> None:
    # F.pad builds on cat and vmap on stack: a bfloat16 tensor inside a float16 region
    # goes through as in PyTorch, where neither passes through autocast's promote
    x = rt.ones(1, 1, 4, dtype=rt.bfloat16)
    with rt.autocast("cpu", dtype=rt.float16):
        assert rt.nn.functional.pad(x, (1, 1)).dtype is rt.bfloat16
        assert rt.func.vmap(lambda r: r * 2)(x).dtype is rt.bfloat16
        assert rt.stack([rt.ones(2), x.flatten()[:2]]).dtype is rt.float32


def test_promote_leaves_float64_uncast() -> None:
    # PyTorch's promote dtype ignores float64: index_copy then sees float32 and float64
    # (an error), where a widest-dtype rule made both float64 and returned float64 silently
    src = rt.ones(1, dtype=rt.float64)
    with rt.autocast("cpu"):
        out = rt.cat([rt.ones(2, dtype=rt.bfloat16), rt.ones(2), src])
    assert out.dtype is rt.float64  # cat's own promotion of float32 and float64
    assert src.dtype is rt.float64


def _error(fn: Callable[[], Any]) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn()
        except (RuntimeError, TypeError, ValueError) as e:
            return f"{type(e).__name__}: {e}"
    raise AssertionError("no error raised")


@pytest.mark.parametrize("call", [
    lambda L: L.autocast("cpu", enabled=0).__enter__(),
    lambda L: L.autocast("cpu", enabled="yes").__enter__(),
    lambda L: L.autocast("cpu", cache_enabled=1).__enter__(),
    lambda L: L.set_autocast_enabled("cpu", 1),
    lambda L: L.set_autocast_cache_enabled(1),
    lambda L: L.is_autocast_enabled(L.device("cpu")),
    lambda L: L.get_autocast_dtype(L.device("cpu")),
    lambda L: L.autocast(L.device("cpu")),
    lambda L: L.autocast(1),
    lambda L: L.autocast("bogus"),
    lambda L: L.amp.is_autocast_available("bogus"),
    lambda L: L.amp.custom_fwd(device_type=L.device("cpu")),
])
def test_state_argument_errors_match_torch(call: Callable[[Any], Any]) -> None:
    ours, theirs = _error(lambda: call(rt)), _error(lambda: call(torch))
    # torch's __enter__ sets the state before its cache_enabled check raises: undo it
    if torch.is_autocast_enabled("cpu"):
        torch.autocast_decrement_nesting()
    torch.set_autocast_enabled("cpu", False)
    torch.set_autocast_cache_enabled(True)
    assert _plain(ours) == _plain(theirs)
    assert not state.on and not rt.is_autocast_enabled("cpu")  # nothing left set here
    assert rt.is_autocast_cache_enabled()


def _plain(text: str) -> str:
    return (text.replace("runtime._device.", "").replace("runtime.", "")
            .replace("torch.", ""))


def test_dtype_as_string_is_refused_on_entry() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch warns first that the dtype is unsupported
        region = rt.autocast("cpu", dtype="bfloat16")
    with pytest.raises(TypeError, match=r"set_autocast_dtype\(\): argument 'dtype' "
                                        r"\(position 2\) must be runtime.dtype, not str"):
        region.__enter__()
    assert rt.get_autocast_dtype("cpu") is rt.bfloat16


@pytest.mark.parametrize("device_type", ["cpu", "cuda", "ipu", "xpu", "maia", "xla", "mps",
                                         "hpu", "mtia", "privateuseone", "mkldnn", "meta"])
def test_available_device_types_and_default_dtypes(device_type: str) -> None:
    available = torch.amp.is_autocast_available(device_type)
    assert rt.amp.is_autocast_available(device_type) is available
    if available:
        ours = rt.get_autocast_dtype(device_type)
        assert str(ours).split(".")[-1] == str(torch.get_autocast_dtype(device_type)).split(
            ".")[-1]
        assert rt.is_autocast_enabled(device_type) is False


def test_region_on_another_device_type_leaves_cpu_ops_alone() -> None:
    for lib in (rt, torch):
        with lib.autocast("xpu"):
            assert lib.is_autocast_enabled("xpu") and not lib.is_autocast_enabled("cpu")
            assert (lib.ones(2, 2) @ lib.ones(2, 2)).dtype is lib.float32
        assert not lib.is_autocast_enabled("xpu")
    assert not state.on


def _scaler_run(lib: Any, factors: list[float]) -> list[tuple[float, int, list[float]]]:
    p = lib.nn.Parameter(lib.tensor([1.0, 2.0]))
    opt = lib.optim.SGD([p], lr=0.1)
    scaler = lib.amp.GradScaler("cpu", init_scale=8.0, growth_factor=3.0, backoff_factor=0.25,
                                growth_interval=2)
    seen = []
    for f in factors:
        opt.zero_grad()
        scaler.scale((p * f).sum()).backward()
        scaler.step(opt)
        scaler.update()
        seen.append((scaler.get_scale(), scaler._get_growth_tracker(), p.tolist()))
    return seen


def test_grad_scaler_run_matches_torch() -> None:
    factors = [1.0, float("inf"), 2.0, float("nan"), 1.0, 1.0, 1.0, -float("inf"), 0.5]
    ours, theirs = _scaler_run(rt, factors), _scaler_run(torch, factors)
    assert [(s, g) for s, g, _ in ours] == [(s, g) for s, g, _ in theirs]
    for (_, _, a), (_, _, b) in zip(ours, theirs):
        assert a == pytest.approx(b, rel=1e-6)


def _x32(lib: Any, *shape: int, seed: int = 0) -> Any:
    import numpy as np

    return lib.tensor(np.random.default_rng(seed).standard_normal(shape).astype("float32"))


def _transforms_in_autocast(lib: Any) -> tuple[Any, ...]:
    x, w = _x32(lib, 3, 4), _x32(lib, 4, 2, seed=1)
    with lib.autocast("cpu"):
        g = lib.func.grad(lambda w: (x @ w).float().sum())(w)
        v = lib.func.vmap(lambda r: r @ w)(x)
        j = lib.func.jacrev(lambda w: (x @ w).float())(w)
    return g, v, j


def test_func_transforms_inside_autocast_match_torch() -> None:
    for ours, theirs in zip(_transforms_in_autocast(rt), _transforms_in_autocast(torch)):
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        assert ours.float().flatten().tolist() == pytest.approx(
            theirs.float().flatten().tolist(), abs=1e-6)


def _scaled_clipped_training(lib: Any) -> tuple[list[tuple[float, float]], list[Any]]:
    m = lib.nn.Linear(4, 2)
    with lib.no_grad():
        m.weight.copy_(_x32(lib, 2, 4))
        m.bias.copy_(_x32(lib, 2, seed=3))
    opt = lib.optim.SGD(m.parameters(), lr=0.1)
    scaler = lib.amp.GradScaler("cpu", init_scale=1024.0)
    seen = []
    for i in range(3):
        opt.zero_grad()
        with lib.autocast("cpu"):
            loss = lib.nn.functional.mse_loss(m(_x32(lib, 5, 4, seed=i)),
                                              _x32(lib, 5, 2, seed=9))
        assert loss.dtype is lib.float32
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        norm = lib.nn.utils.clip_grad_norm_(m.parameters(), 0.5)
        scaler.step(opt)
        scaler.update()
        seen.append((float(norm), scaler.get_scale()))
    return seen, m.weight.detach().tolist()


def test_unscale_clip_step_matches_torch() -> None:
    (ours, w_ours), (theirs, w_theirs) = (_scaled_clipped_training(rt),
                                          _scaled_clipped_training(torch))
    assert [s for _, s in ours] == [s for _, s in theirs]
    assert [n for n, _ in ours] == pytest.approx([n for n, _ in theirs], rel=1e-3)
    for a, b in zip(w_ours, w_theirs):
        assert a == pytest.approx(b, abs=1e-3)
