"""backplan bench: --threads reaches every peer, --json, --plot, and its usage errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.run import NOISY_SPREAD, Timing, ratio_rows
from tests.planner.test_cli import ROOT, run_cli

FAST = ["--repeat", "3", "--min-time", "0.002", "--no-torch-compile"]


def test_bench_threads_reach_every_peer_and_json(tmp_path: Path):
    out = tmp_path / "bench.json"
    # one thread: not the default (every core), so each count seen was set by the bench
    [done] = run_cli(["bench", "chain", *FAST, "--threads", "1", "--json", str(out)])
    assert done.returncode == 0, done.stderr
    doc = json.loads(out.read_text())
    timings = doc["workloads"]["chain"]
    assert {"ours", "compiled", "llvm", "torch"} <= set(timings)
    for variant, t in timings.items():
        assert t["threads_seen"] == {"runtime": 1, "numpy_blas": 1, "torch": 1}, variant
        assert len(t["samples_s"]) == 3 and t["median_s"] > 0 and t["iqr_pct"] >= 0
        assert t["first_call_s"] > 0
    # compiling the LLVM kernels is in the first call, not in the step time
    assert timings["llvm"]["first_call_s"] > timings["llvm"]["median_s"]
    assert "first call (ms" in done.stdout and "±%" in done.stdout


def test_verdict_only_when_quiet():
    quiet = Timing([1.0, 1.0, 1.01], 1.0, {})
    noisy = Timing([1.0, 2.0, 3.0], 1.0, {})
    assert noisy.spread > NOISY_SPREAD > quiet.spread
    [row] = [r for r in ratio_rows({"chain": {"ours": quiet, "torch": quiet}})
             if r["ratio"] == "ours/torch"]
    assert row["verdict"] == "met"
    [row] = [r for r in ratio_rows({"chain": {"ours": noisy, "torch": quiet}})
             if r["ratio"] == "ours/torch"]
    assert row["verdict"] == "too noisy"


def test_bench_plot(tmp_path: Path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "bench.svg"
    [done] = run_cli(["bench", "chain", *FAST, "--plot", str(out)])
    assert done.returncode == 0, done.stderr
    assert out.read_text().lstrip().startswith("<?xml") and "<svg" in out.read_text()


def test_bench_errors(tmp_path: Path):
    bad_suffix, bad_threads, bad_workload = run_cli(
        ["bench", "chain", "--plot", str(tmp_path / "x.txt")],
        ["bench", "chain", "--threads", "0"], ["bench", "nope"])
    assert bad_suffix.returncode == 2 and "must end in .png or .svg" in bad_suffix.stderr
    assert bad_threads.returncode == 2 and "must be an integer >= 1" in bad_threads.stderr
    assert bad_workload.returncode == 2 and "unknown workload 'nope'" in bad_workload.stderr
    # without matplotlib: one line saying how to get it, status 2, before any timing
    code = ("import sys; sys.modules['matplotlib'] = None; from planner.__main__ import main; "
            f"sys.exit(main(['bench', 'chain', '--plot', {str(tmp_path / 'x.png')!r}]))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "backplan: error: --plot needs matplotlib: pip install 'backplan[plot]' (or pip "
        "install matplotlib)"]
