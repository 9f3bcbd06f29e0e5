"""runtime.distributed and DDP under ``mpiexec -n 2`` (tests/distributed/mpi_worker.py), each
job bounded by a timeout: a hang fails the test instead of the suite."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("mpi4py")

WORKER = Path(__file__).with_name("mpi_worker.py")
ROOT = WORKER.parents[2]
TIMEOUT_S = 120



def _pythonpath() -> str:
    """ROOT, then the PYTHONPATH inherited (the suite's shared bytecode: tests/conftest.py)."""
    return os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))

def _mpiexec() -> str:
    found = shutil.which("mpiexec", path=f"{Path(sys.executable).parent}{os.pathsep}"
                                         f"{os.environ.get('PATH', '')}")
    if found is None:
        pytest.fail("mpi4py is installed but mpiexec is not on PATH: pip install mpich")
    return found


def run(mode: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {**os.environ, "PYTHONPATH": _pythonpath()}
    began = time.monotonic()
    done = subprocess.run([_mpiexec(), "-n", "2", sys.executable, str(WORKER), mode,
                           str(tmp_path)], capture_output=True, text=True, env=env,
                          timeout=TIMEOUT_S, cwd=ROOT)
    return done, time.monotonic() - began


def test_ddp_compiled_and_eager_equal_one_process_and_overlap(tmp_path: Path) -> None:
    done, _ = run("equal", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    for line in ("OK equal compiled=None", "OK equal compiled=program",
                 "OK equal compiled=auto", "OK overlap",
                 "OK checkpoint"):
        assert done.stdout.count(line) == 2, (line, done.stdout, done.stderr)


def test_ddp_broadcasts_buffers_every_forward_compiled_as_eager(tmp_path: Path) -> None:
    done, _ = run("buffers", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    for line in ("OK buffers compiled equals eager", "OK buffers broadcast"):
        assert done.stdout.count(line) == 2, (line, done.stdout, done.stderr)


def test_ranks_with_different_plans_fail_naming_the_difference(tmp_path: Path) -> None:
    done, _ = run("mismatch", tmp_path)
    assert done.returncode != 0
    out = done.stdout  # both ranks' lines: one pipe, so they may interleave
    assert out.count("MISMATCH DistributedDataParallel: the ranks captured different plans") \
        == 2, out + done.stderr
    # the first differing step, the input, named with each rank's shape
    assert out.count("%0 = input()  [8, 512]") == 2 and out.count("%0 = input()  [5, 512]") == 2


def test_a_crashing_rank_ends_every_rank(tmp_path: Path) -> None:
    done, took = run("crash", tmp_path)
    assert done.returncode != 0
    assert "rank 1 fails on purpose" in done.stderr
    assert "[rank 1] uncaught ValueError; aborting all ranks" in done.stderr
    assert took < 60


def test_a_hanging_rank_times_out_the_job(tmp_path: Path) -> None:
    done, took = run("hang", tmp_path)  # the group's timeout is 5 s in this mode
    assert done.returncode != 0
    assert "[rank 0] barrier did not complete within 5 s" in done.stderr
    assert took < 40


def test_the_gpt_example_trains_data_parallel(tmp_path: Path) -> None:
    """examples/ddp_train.py: the gpt task (AdamW, clipping, warmup-cosine lr) compiled over
    two ranks, each printing its throughput; rank 0 the test perplexity and the checkpoint."""
    env = {**os.environ, "PYTHONPATH": _pythonpath()}
    ckpt = tmp_path / "gpt.bp"
    done = subprocess.run([_mpiexec(), "-n", "2", sys.executable, "examples/ddp_train.py",
                           "--task", "gpt", "--epochs", "1", "--max-steps", "3", "--lr", "3e-3",
                           "--batch-size", "16", "--checkpoint", str(ckpt)],
                          capture_output=True, text=True, env=env, timeout=TIMEOUT_S, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    for rank in (0, 1):
        assert f"rank {rank} epoch 1:" in done.stdout and "samples/s" in done.stdout
    assert "test perplexity" in done.stdout
    import runtime as rt

    state = rt.load(ckpt)
    assert "net.tok.weight" in state and state["net.tok.weight"].shape[1] == 128
