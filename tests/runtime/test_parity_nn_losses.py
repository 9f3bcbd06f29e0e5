"""Losses against PyTorch 2.13: the elementwise ``weight`` of mse_loss, l1_loss and
huber_loss, class-index targets of the wrong shape or dtype (nll_loss, cross_entropy,
multi_margin_loss), and reductions (legacy size_average/reduce flags, 'elementwise_mean',
invalid names): values, gradients, warnings and error texts."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")


def outcome(lib: Any, name: str, arrays: list[Any], kw: dict[str, Any],
            grad: bool = False) -> tuple[str, list[np.ndarray], list[str], str]:
    """(error text, [value, grads...], warnings, grad_fn name) of lib's F.<name>."""
    def conv(a: Any) -> Any:
        if not isinstance(a, np.ndarray):
            return a
        return lib.tensor(a, requires_grad=grad and a.dtype == np.float64)
    args = [conv(a) for a in arrays]
    kwargs = {k: conv(v) for k, v in kw.items()}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = getattr(lib.nn.functional, name)(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - the type is compared too
            return f"{type(e).__name__}: {e}", [], [], ""
    texts = [str(w.message) for w in caught]
    values = [out.detach().numpy()]
    fn = ""
    if grad:
        fn = type(out.grad_fn).__name__
        up = np.random.default_rng(9).standard_normal(tuple(out.shape))
        (out * lib.tensor(up)).sum().backward()
        leaves = [t for t in [*args, *kwargs.values()] if getattr(t, "requires_grad", False)]
        values += [np.full(1, np.nan) if t.grad is None else t.grad.numpy() for t in leaves]
    return "", values, texts, fn


def assert_same(name: str, arrays: list[Any], kw: dict[str, Any], grad: bool = False) -> None:
    want = outcome(torch, name, arrays, kw, grad)
    got = outcome(rt, name, arrays, kw, grad)
    assert got[0] == want[0]
    assert got[2] == want[2]
    assert got[3] == want[3]
    assert len(got[1]) == len(want[1])
    for g, w in zip(got[1], want[1], strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


RNG = np.random.default_rng(0)
X, Y, W = (RNG.standard_normal((3, 5)) for _ in range(3))
W = np.abs(W)


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "huber_loss"])
@pytest.mark.parametrize("kw", [
    {}, {"reduction": "sum"}, {"reduction": "none"}, {"reduction": "mean"}],
    ids=["default", "sum", "none", "mean"])
def test_weighted_loss_values_and_grads(name: str, kw: dict[str, Any]) -> None:
    # grads reach input, target and weight; the grad_fn is PyTorch's (Div/Sum/Mul/Mean)
    assert_same(name, [X, Y], {**kw, "weight": W}, grad=True)
    assert_same(name, [X, Y], kw, grad=True)


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss"])
@pytest.mark.parametrize("flags", [{"size_average": False}, {"reduce": False},
                                   {"size_average": True, "reduce": True}])
def test_weighted_loss_legacy_flags(name: str, flags: dict[str, Any]) -> None:
    assert_same(name, [X, Y], {**flags, "weight": W}, grad=True)


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "huber_loss"])
@pytest.mark.parametrize("kw", [
    {"weight": W[:1]}, {"weight": W[0]}, {"weight": W, "reduction": "bad"},
    {"weight": W, "reduction": "elementwise_mean"}],
    ids=["weight_rows", "weight_row", "bad", "elementwise_mean"])
def test_weighted_loss_errors(name: str, kw: dict[str, Any]) -> None:
    assert_same(name, [X, Y], kw)


def test_weighted_loss_broadcast_target() -> None:
    # weight is checked against input, the target broadcast (with PyTorch's warning)
    assert_same("mse_loss", [X, Y[:1]], {"weight": W}, grad=True)
    assert_same("l1_loss", [X[:1], Y], {"weight": W[:1]})


def test_huber_delta_checked_before_weighted_reduction() -> None:
    assert_same("huber_loss", [X, Y], {"weight": W, "reduction": "bad", "delta": -1.0})
    assert_same("huber_loss", [X, Y], {"weight": W, "delta": 0.5}, grad=True)


def _long(*shape: int) -> np.ndarray:
    return np.zeros(shape, np.int64)


TARGETS: dict[str, tuple[tuple[int, ...], np.ndarray, dict[str, Any]]] = {
    "scalar_input": ((), _long(), {}),
    "1d_target_of_one": ((5,), _long(1), {}),
    "1d_scalar_target": ((5,), _long(), {}),
    "1d_long_target": ((5,), _long(2), {}),
    "1d_2d_target": ((5,), _long(3, 4), {}),
    "0d_target": ((3, 5), _long(), {}),
    "0d_target_batch_1": ((1, 5), _long(), {}),
    "2d_target": ((3, 5), _long(3, 1), {}),
    "batch_mismatch": ((3, 5), _long(1), {}),
    "float_target": ((3, 5), _long(3).astype(np.float32), {}),
    "int32_target": ((3, 5), _long(3).astype(np.int32), {}),
    "uint8_target": ((3, 5), _long(3).astype(np.uint8), {}),
    "float_2d_target": ((3, 5), _long(3, 4).astype(np.float32), {}),
    "same_shape_long": ((3, 5), _long(3, 5), {}),
    "same_shape_int32": ((3, 5), _long(3, 5).astype(np.int32), {}),
    "3d_wrong": ((3, 5, 4), _long(3, 5), {}),
    "3d_flat": ((3, 5, 4), _long(3), {}),
    "3d_extra": ((3, 5, 4), _long(3, 4, 1), {}),
    "3d_float": ((3, 5, 4), _long(3, 4).astype(np.float32), {}),
    "3d_uint8": ((3, 5, 4), _long(3, 4).astype(np.uint8), {}),
    "4d_rank": ((3, 5, 2, 2), _long(3, 2), {}),
    "4d_rank_float": ((3, 5, 2, 2), _long(3, 2).astype(np.float32), {}),
    "4d_size": ((3, 5, 2, 2), _long(3, 2, 3), {}),
    "4d_size_float": ((3, 5, 2, 2), _long(3, 2, 3).astype(np.float32), {}),
    "4d_extra": ((3, 5, 2, 2), _long(3, 2, 2, 1), {}),
    "4d_uint8": ((3, 5, 2, 2), _long(3, 2, 2).astype(np.uint8), {}),
    "5d_wrong": ((3, 5, 2, 2, 2), _long(3, 2, 2, 3), {}),
    "weight_2d": ((3, 5), _long(3), {"weight": np.ones(4)}),
    "weight_2d_float_target": ((3, 5), _long(3).astype(np.float32), {"weight": np.ones(4)}),
    "weight_3d": ((3, 5, 4), _long(3, 4), {"weight": np.ones(4)}),
    "weight_4d": ((3, 5, 2, 2), _long(3, 2, 2), {"weight": np.ones(4)}),
    "empty_classes": ((3, 0), _long(3), {}),
    "smoothing_2d_target": ((3, 5), _long(3, 4), {"label_smoothing": 0.1}),
}


@pytest.mark.parametrize("name", ["nll_loss", "cross_entropy"])
@pytest.mark.parametrize("case", TARGETS)
def test_class_target_shapes_and_dtypes(name: str, case: str) -> None:
    shape, target, kw = TARGETS[case]
    if "label_smoothing" in kw and name == "nll_loss":
        kw = {}
    x = np.random.default_rng(1).standard_normal(shape)
    assert_same(name, [x, target], kw)


@pytest.mark.parametrize("name", ["nll_loss", "cross_entropy"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_one_row_input_with_a_target_of_one(name: str, reduction: str) -> None:
    # (C,) input, (1,) target: PyTorch takes it as one sample, its unreduced loss 0-d (its
    # backward then fails, a size mismatch: only the forward is compared)
    x = np.random.default_rng(2).standard_normal(5)
    assert_same(name, [x, np.array([3])], {"reduction": reduction})


@pytest.mark.parametrize("target", [np.array([1.0, 0.0, 2.0]), np.array([1, 0, 2], np.int32),
                                    np.array([1, 0, 2])])
def test_multi_margin_target_dtype(target: np.ndarray) -> None:
    assert_same("multi_margin_loss", [X, target], {})


def test_multi_margin_no_classes() -> None:
    assert_same("multi_margin_loss", [np.zeros((3, 0)), np.array([0, 0, 0])], {})


X01 = 1 / (1 + np.exp(-X))
Y01 = np.random.default_rng(3).random((3, 5))
CLASSES = np.array([1, 0, 4])
REDUCED: dict[str, list[Any]] = {
    "mse_loss": [X, Y], "l1_loss": [X, Y], "smooth_l1_loss": [X, Y], "huber_loss": [X, Y],
    "soft_margin_loss": [X, Y], "kl_div": [X, Y01], "poisson_nll_loss": [X, Y01],
    "multilabel_soft_margin_loss": [X, Y01], "hinge_embedding_loss": [X, np.sign(Y)],
    "binary_cross_entropy": [X01, Y01], "binary_cross_entropy_with_logits": [X, Y01],
    "nll_loss": [X, CLASSES], "cross_entropy": [X, CLASSES], "multi_margin_loss": [X, CLASSES],
    "gaussian_nll_loss": [X, Y, W], "cosine_embedding_loss": [X, Y, np.array([1.0, -1.0, 1.0])],
    "margin_ranking_loss": [X[0], Y[0], np.sign(W[0] - 0.5)],
    "triplet_margin_loss": [X, Y, W], "triplet_margin_with_distance_loss": [X, Y, W],
}
NO_LEGACY = {"huber_loss", "gaussian_nll_loss", "triplet_margin_with_distance_loss"}


REDUCTIONS = {"bad": {"reduction": "bad"}, "elementwise_mean": {"reduction": "elementwise_mean"},
              "batchmean": {"reduction": "batchmean"}, "none": {"reduction": "none"},
              "sum": {"reduction": "sum"}}
LEGACY = {"legacy_over_bad": {"size_average": False, "reduction": "bad"},
          "reduce_false": {"reduce": False}, "size_average_false": {"size_average": False},
          "both_true": {"size_average": True, "reduce": True},
          "legacy_over_batchmean": {"size_average": False, "reduction": "batchmean"}}


@pytest.mark.parametrize(("name", "kw"), [
    pytest.param(name, kw, id=f"{name}-{key}") for name in REDUCED
    for key, kw in {**REDUCTIONS, **({} if name in NO_LEGACY else LEGACY)}.items()])
def test_reductions(name: str, kw: dict[str, Any]) -> None:
    assert_same(name, REDUCED[name], kw, grad=True)


@pytest.mark.parametrize("name", ["margin_ranking_loss", "hinge_embedding_loss",
                                  "cosine_embedding_loss", "multi_margin_loss"])
def test_margin_losses_at_the_kink(name: str) -> None:
    # a hinge exactly at 0: PyTorch's clamp_min passes the whole gradient (a maximum
    # halved it), multi_margin_loss's kernel none
    x = np.array([[1.0, 0.0, 0.0], [2.0, 1.0, 1.0]])
    args = {"margin_ranking_loss": [x[0], x[0], np.array([1.0, -1.0, 1.0])],
            "hinge_embedding_loss": [np.ones((2, 3)), -np.ones((2, 3))],
            "cosine_embedding_loss": [x[:1], np.array([[0.0, 1.0, 0.0]]), np.array([-1.0])],
            "multi_margin_loss": [x, np.array([0, 0])]}[name]
    assert_same(name, args, {}, grad=True)
