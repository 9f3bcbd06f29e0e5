"""The ported scripts of tests/runtime/test_scripts_ported_h12.py with their training step
compiled (``planner.compile(train_step)``): every step captured (a fallback to eager warns,
and warnings are errors here) and the same losses, logged values, final weights and
generated tokens as the eager run."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import planner
import runtime as rt
from tests.runtime.test_scripts_ported_h12 import (SCRIPTS, Run, as_is, assert_runs_equal,
                                                   nanogpt, time_sequence)


# one of each script (1 to 3 s each with a warm kernel cache on a shared 2-core machine); the
# other variants (nanoGPT without biases or flash attention, GRU/RNN_RELU/Transformer word
# models, makemore's MLP) equal eager too, each 2 to 7 s
CAPTURED = ["nanogpt", "dcgan", "wlm_lstm", "makemore_gru", "makemore_bow", "regression",
            "mnist", "forward_forward"]


def eager_run(name: str) -> Run:
    rt.manual_seed(0)
    return SCRIPTS[name](rt, None, as_is)


@pytest.mark.parametrize("name", CAPTURED)
def test_compiled_ported_script_equals_eager(name: str) -> None:
    want = eager_run(name)
    rt.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = SCRIPTS[name](rt, want.weights, planner.compile)
    assert_runs_equal(got, want, rtol=1e-5, atol=1e-6)


def test_compiled_lbfgs_step_runs_eagerly_saying_why() -> None:
    """LBFGS decides its line search on tensor values (``.item()``): the compiled step runs
    eagerly, warning once with the line, and equals the eager run."""
    want = eager_run("time_sequence")
    rt.manual_seed(0)
    with pytest.warns(RuntimeWarning, match=r"runs eagerly: Tensor.item\(\)") as record:
        got = time_sequence(rt, want.weights, planner.compile)
    assert len([w for w in record if "runs eagerly" in str(w.message)]) == 1
    assert_runs_equal(got, want, rtol=0, atol=0)
    assert np.isfinite(got.values).all()


def test_nanogpt_with_its_model_compiled_equals_eager() -> None:
    """train.py's ``model = torch.compile(model)``: the OptimizedModule trains, and its
    crop_block_size, generate and get_num_params reach the GPT, as eager."""
    want = eager_run("nanogpt")
    rt.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = nanogpt(rt, want.weights, as_is, compile_model=True)
    assert all(k.startswith("0._orig_mod.") for k in got.final)  # PyTorch's names
    got.final = {k.replace("_orig_mod.", ""): v for k, v in got.final.items()}
    assert_runs_equal(got, want, rtol=1e-5, atol=1e-6)
