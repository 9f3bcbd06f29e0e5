"""nn functionals on integer and bool inputs against torch: int64 average pools use torch's
truncating integer division (they returned float means), the other integer pools, grid
sampling, batch/instance norm and bool convolutions and max pools raise torch's kernel
errors; the exact integer ops torch's CPU kernels refuse (max pools, unfold, fold, unpool of
integers) are taken here with the values of the float computation."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")

CALLS = ["F.max_pool2d(X, 2)", "F.avg_pool2d(X, 2)", "F.avg_pool2d(X, 3, 2, 1)",
         "F.avg_pool2d(X, 3, 2, 1, count_include_pad=False)", "F.avg_pool2d(X, 2, divisor_override=3)",
         "F.avg_pool1d(X[0], 2)", "F.adaptive_avg_pool2d(X, 3)", "F.adaptive_avg_pool1d(X[0], 2)",
         "F.adaptive_avg_pool3d(X[None], 2)", "F.adaptive_max_pool2d(X, 3)",
         "F.adaptive_max_pool3d(X[None], 2)", "F.max_pool1d(X[0], 2)", "F.max_pool3d(X[None], 2)",
         "F.avg_pool3d(X[None], 2)", "F.avg_pool3d(X[None], 3, 2, 1)", "F.conv2d(X, W)",
         "F.conv2d(X, W, dilation=2)", "F.conv3d(X[None], W[..., None])",
         "F.conv_transpose2d(X, W.transpose(0, 1))", "F.pad(X, (1, 1), value=3)",
         "F.unfold(X, 2)", "F.fold(X.reshape(1, 8, 9), (4, 4), 2)",
         "F.grid_sample(X, G, align_corners=False)", "F.grid_sample(X[None], G3, align_corners=False)",
         "F.batch_norm(X, None, None, training=True)", "F.instance_norm(X)",
         "F.local_response_norm(X, 2)", "F.lp_pool2d(X, 2, 2)"]
DTYPES = ["int64", "int32", "uint8", "bool"]
# exact ops torch's CPU kernels refuse for these dtypes, taken here
ACCEPTED = {("F.adaptive_max_pool2d(X, 3)", d) for d in ("int64", "int32", "uint8")} | {
    ("F.adaptive_max_pool3d(X[None], 2)", d) for d in ("int64", "int32", "uint8")} | {
    ("F.max_pool1d(X[0], 2)", d) for d in ("int64", "int32", "uint8")} | {
    (c, d) for c in ("F.unfold(X, 2)", "F.fold(X.reshape(1, 8, 9), (4, 4), 2)")
    for d in ("int64", "int32", "uint8")}


def _run(lib: Any, call: str, dtype: str) -> Any:
    rng = np.random.default_rng(0)
    t = getattr(lib, dtype)
    env = {"F": lib.nn.functional,
           "X": lib.tensor(rng.integers(-5 if dtype != "uint8" else 0, 9, (1, 2, 6, 6))).to(t),
           "W": lib.tensor(rng.integers(-2, 3, (3, 2, 2, 2))).to(t),
           "G": lib.zeros(1, 2, 2, 2, dtype=t), "G3": lib.zeros(1, 1, 2, 2, 3, dtype=t)}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = eval(call, env)  # noqa: S307
    except Exception as e:  # noqa: BLE001 - the texts are compared
        return f"{type(e).__name__}: {e}"
    return str(out.dtype).split(".")[-1], np.asarray(out.numpy(), dtype=np.float64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("call", CALLS)
def test_integer_and_bool_inputs_match_torch(call: str, dtype: str) -> None:
    got = _run(rt, call, dtype)
    if (call, dtype) in ACCEPTED:
        want = _run(torch, call.replace("X", "X.double()"), dtype)  # the exact values
        assert isinstance(got, tuple) and got[0] == dtype
        np.testing.assert_array_equal(got[1], want[1])
        return
    want = _run(torch, call, dtype)
    if isinstance(want, str) or isinstance(got, str):
        assert got == want
        return
    assert got[0] == want[0]
    np.testing.assert_allclose(got[1], want[1], rtol=2e-7, atol=1e-6)


LOSS_CALLS = ["F.mse_loss(A, B)", "F.l1_loss(A, B)", "F.smooth_l1_loss(A, B)",
              "F.huber_loss(A, B)", "F.kl_div(A, B)", "F.poisson_nll_loss(A, B)",
              "F.binary_cross_entropy(A, B)", "F.binary_cross_entropy_with_logits(A, B)",
              "F.cross_entropy(A, L)", "F.nll_loss(A, L)", "F.multi_margin_loss(A, L)",
              "F.multilabel_soft_margin_loss(A, B)", "F.cosine_embedding_loss(A, B, L * 0 + 1)",
              "F.triplet_margin_loss(A, B, A)", "F.embedding(L, A)", "F.softmax(A, 1)",
              "F.log_softmax(A, 1)", "F.glu(A)", "F.normalize(A)", "F.soft_margin_loss(A, B)",
              "F.gaussian_nll_loss(A, B, B + 1)", "F.margin_ranking_loss(A[0], B[0], B[0])",
              "F.hinge_embedding_loss(A, B - 1, margin=1.7)",
              "F.hinge_embedding_loss(A, B - 1, margin=1.7, reduction='sum')",
              "F.hinge_embedding_loss(A, B - 1, margin=1.7, reduction='none')"]
# integer or bool inputs torch refuses that are still taken here, or refused with another
# text (reported to the areas that own them or left for later): each must still differ
KNOWN = {("F.multilabel_soft_margin_loss(A, B)", "bool")}


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool"])
@pytest.mark.parametrize("call", LOSS_CALLS)
def test_losses_of_integer_inputs_match_torch(call: str, dtype: str) -> None:
    def run(lib: Any) -> Any:
        rng = np.random.default_rng(0)
        t = getattr(lib, dtype)
        env = {"F": lib.nn.functional, "A": lib.tensor(rng.integers(0, 3, (2, 4))).to(t),
               "B": lib.tensor(rng.integers(0, 3, (2, 4))).to(t),
               "L": lib.tensor(rng.integers(0, 4, (2,)))}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out = eval(call, env)  # noqa: S307
        except Exception as e:  # noqa: BLE001 - the texts are compared
            name = "RuntimeError" if type(e).__name__ == "ShapeError" else type(e).__name__
            return f"{name}: {e}"
        return str(out.dtype).split(".")[-1], np.asarray(out.numpy(), dtype=np.float64)

    want, got = run(torch), run(rt)
    same = (got == want) if isinstance(want, str) or isinstance(got, str) else (
        got[0] == want[0] and np.allclose(got[1], want[1], rtol=2e-7, atol=1e-6))
    assert same != ((call, dtype) in KNOWN), (want, got)
