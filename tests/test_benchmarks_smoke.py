"""The benchmark workloads and the digits job compute the right thing (not how fast).

Each workload's step runs once, at its benchmark size, in the runtime and in PyTorch (or in
the hand-written numpy step) from the same initial arrays; losses, gradients and updated
parameters must agree.
"""

from __future__ import annotations

import numpy as np
import pytest

import runtime as rt
from benchmarks import run as bench_run
from benchmarks import train_digits
from benchmarks.digits import load_digits, minibatches, train_test_split
from benchmarks.workloads import WORKLOADS


def assert_outputs_close(actual: dict[str, np.ndarray], expected: dict[str, np.ndarray]) -> None:
    # Same keys: a gradient present on one side only (say a parameter's .grad after the
    # input-only `partial` step) is a difference in semantics, not in rounding.
    assert sorted(actual) == sorted(expected)
    for key, ref in expected.items():
        got = np.asarray(actual[key])
        assert got.shape == np.shape(ref), key
        assert got.dtype == np.float32, (key, got.dtype)
        # float32 reductions over up to a million terms differ in summation order between
        # libraries: compare against the scale of the reference, not element by element.
        scale = float(np.abs(ref).max()) if np.size(ref) else 0.0
        rtol = 1e-3 if np.ndim(ref) == 0 else 1e-4
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=1e-5 * scale + 1e-6, err_msg=key)


def run_once(case) -> dict[str, np.ndarray]:
    return case.outputs(case.run())


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_workload_matches_torch(name: str) -> None:
    torch = pytest.importorskip("torch")
    workload = WORKLOADS[name]
    arrays = workload.make_arrays(0)
    ours = run_once(workload.build(rt, arrays))
    theirs = run_once(workload.build(torch, arrays))
    assert_outputs_close(ours, theirs)


@pytest.mark.parametrize("name", [n for n, w in WORKLOADS.items() if w.build_numpy is not None])
def test_numpy_step_matches_runtime(name: str) -> None:
    workload = WORKLOADS[name]
    assert workload.build_numpy is not None
    arrays = workload.make_arrays(0)
    ours = run_once(workload.build(rt, arrays))
    by_hand = run_once(workload.build_numpy(arrays))
    assert_outputs_close(ours, by_hand)


def test_workload_inputs_are_not_mutated() -> None:
    workload = WORKLOADS["mlp_small"]
    arrays = workload.make_arrays(0)
    before = {k: v.copy() for k, v in arrays.items()}
    run_once(workload.build(rt, arrays))
    run_once(workload.build_numpy(arrays))
    for key, value in before.items():
        np.testing.assert_array_equal(arrays[key], value, err_msg=key)


def test_load_digits() -> None:
    X, y = load_digits()
    assert X.shape == (1797, 64)
    assert X.dtype == np.float32
    assert y.shape == (1797,)
    assert y.dtype == np.int64
    assert X.min() == 0.0
    assert X.max() == 1.0
    assert sorted(np.unique(y).tolist()) == list(range(10))


def test_split_and_batches_are_deterministic() -> None:
    X, y = load_digits()
    a = train_test_split(X, y, test_fraction=0.2, seed=3)
    b = train_test_split(X, y, test_fraction=0.2, seed=3)
    for u, v in zip(a, b, strict=True):
        np.testing.assert_array_equal(u, v)
    X_train, X_test, _, _ = a
    assert len(X_train) + len(X_test) == len(X)
    assert len(X_test) == 359
    batches = minibatches(100, 32, np.random.default_rng(0))
    assert [len(b) for b in batches] == [32, 32, 32, 4]
    assert sorted(np.concatenate(batches).tolist()) == list(range(100))


def test_train_digits_learns(capsys: pytest.CaptureFixture[str]) -> None:
    accuracy = train_digits.main(["--epochs", "2", "--batch-size", "32", "--seed", "0"])
    out = capsys.readouterr().out
    assert "epoch   2" in out
    assert accuracy > 0.85


def test_benchmark_runner_prints_table(capsys: pytest.CaptureFixture[str]) -> None:
    bench_run.main(["--workloads", "chain", "--repeat", "1", "--min-time", "0.001",
                    "--no-torch-compile"])
    out = capsys.readouterr().out
    assert "chain" in out
    assert "ours ms" in out
    assert "tcompile" in out  # the column, empty


@pytest.mark.parametrize("name", ["mlp_small", "partial", "eltwise", "chain", "two_tower",
                                  "one_op"])
def test_jax_step_matches_runtime(name: str) -> None:
    """The JAX column computes the same step: same loss, gradients and updated parameters."""
    pytest.importorskip("jax")
    builders = bench_run.jax_builders()
    workload = WORKLOADS[name]
    arrays = workload.make_arrays(0)
    ours = run_once(workload.build(rt, arrays))
    theirs = run_once(builders[name](arrays))
    assert_outputs_close(ours, theirs)


def test_torch_compile_column_is_timed_or_explained() -> None:
    """torch.compile's variant is either timed or dropped with a note saying why."""
    pytest.importorskip("torch")
    notes: list[str] = []
    timings = bench_run.bench_workload(WORKLOADS["one_op"], 1, 0.001, 0, 0, True, notes)
    assert "tcompile" in timings or any("torch.compile failed" in n for n in notes), notes
    assert {"ours", "llvm", "torch"} <= set(timings)


def test_ratio_against_the_faster_of_two_peers() -> None:
    """A denominator "a|b" is the faster peer; the verdict compares against the target."""
    def t(ms: float) -> bench_run.Timing:
        return bench_run.Timing([ms / 1e3] * 3, 0.0, {})

    results = {"mlp_large": {"llvm": t(5.0), "torch": t(6.0), "jax": t(4.0), "numpy": t(7.0)}}
    rows = {r["ratio"]: r for r in bench_run.ratio_rows(results)}
    row = rows["llvm/jax (torch|jax)"]
    assert row["measured"] == pytest.approx(1.25) and row["verdict"] == "missed"
    results["mlp_large"]["jax"] = t(8.0)
    row = {r["ratio"]: r for r in bench_run.ratio_rows(results)}["llvm/torch (torch|jax)"]
    assert row["measured"] == pytest.approx(5 / 6) and row["verdict"] == "met"
    del results["mlp_large"]["jax"]  # a peer missing: no row, rather than a wrong one
    assert not [r for r in bench_run.ratio_rows(results) if "|" in r["ratio"]]


def test_planning_figures(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import planning

    planning.main(["--workloads", "one_op"])
    out = capsys.readouterr().out
    assert "capture + planning (fusion included" in out and "mlp_large" in out
    ratio = float(out.split("input and weights): ")[1].split("ratio ")[1].split()[0])
    assert 0.0 < ratio < 1.0  # pruning removes the weight-gradient matmuls
    table = out.split("first calls of the llvm step")[1].splitlines()
    # the columns by their header (two-word names: "cold 1st", "warm cpu", "eager 1st", ...)
    words = table[1].split()
    header = [words[0]] + [f"{a} {b}" if b in ("1st", "2nd", "ready", "cpu") else a
                           for a, b in zip(words[1:], words[2:] + [""])
                           if a not in ("1st", "2nd", "ready", "cpu")]
    row = dict(zip(header, table[2].split()))
    assert row["workload"] == "one_op" and row["captures"] == "1"
    assert all(float(row[c]) > 0 for c in ("cold 1st", "cold 2nd", "cold ready", "sync 1st",
                                           "warm 1st", "warm 2nd"))
    assert float(row["cold ready"]) >= float(row["cold 1st"])  # in use after the first call


def test_memory_benchmark_prints_table(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import memory

    memory.main(["--workloads", "chain"])
    out = capsys.readouterr().out
    assert "step B" in out and "above start B" in out
    assert "chain interpreter/eager, step peak" in out


def test_module_benchmark_trains_as_eager(capsys: pytest.CaptureFixture[str]) -> None:
    """benchmarks.modules: the compiled-module step (rt.compile(model), the rest eager) and the
    whole step compiled train as the eager step does, and its table prints."""
    from benchmarks import modules

    arrays = modules.cnn_arrays(0)
    losses = {}
    for variant, compile_model in (("eager", None), ("module", rt.compile)):
        run, _ = modules.cnn_steps(rt, arrays, compile_model)
        losses[variant] = [float(run()) for _ in range(3)]
    np.testing.assert_allclose(losses["module"], losses["eager"], rtol=1e-5)
    modules.main(["--workloads", "cnn", "--repeat", "1", "--min-time", "0.001",
                  "--no-torch-compile"])
    out = capsys.readouterr().out
    assert "module/eager" in out and "cnn" in out
