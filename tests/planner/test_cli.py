"""python -m planner: in-process, and as a subprocess where exit status, stderr or a pipe
matter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.workloads import WORKLOADS
from codegen import cache
from planner.__main__ import BROKEN_PIPE_STATUS, main

ROOT = Path(__file__).parents[2]


def test_plan_summary(capsys):
    assert main(["plan", "mlp_small"]) == 0
    out = capsys.readouterr().out
    assert "nodes captured" in out and "peak memory" in out


def test_plan_listing_schedule_then_pipeable_dot_json(capsys):
    assert main(["plan", "mlp_small", "--listing", "--schedule"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Plan on cpu") and "matmul(" in out
    assert "critical path" in out and "= matmul" in out
    assert main(["plan", "mlp_small", "--dot"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("digraph plan {") and out.rstrip().endswith("}")
    assert main(["plan", "mlp_small", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["flops"] > 0 and doc["kernels"] and doc["executor"]["kind"] == "program"


def test_unknown_workload():
    with pytest.raises(SystemExit):
        main(["plan", "nope"])


def test_bench(capsys):
    assert main(["bench", "mlp_small", "--repeat", "1", "--min-time", "0.001",
                 "--no-torch-compile"]) == 0
    out = capsys.readouterr().out
    assert "compiled ms" in out and "mlp_small" in out and "compiled/ours" in out


def run_cli(*commands: list[str], stdout: int = subprocess.PIPE
            ) -> list[subprocess.CompletedProcess[str]]:
    """``python -m planner`` once per command, all started at once (each pays for its own
    interpreter start)."""
    procs = [subprocess.Popen([sys.executable, "-m", "planner", *argv], cwd=ROOT, stdout=stdout,
                              stderr=subprocess.PIPE, text=True) for argv in commands]
    done = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        done.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    return done


def test_cli_llvm_plan_and_cache(tmp_path: Path, monkeypatch: Any, capsys: Any) -> None:
    monkeypatch.setenv("BACKPLAN_CACHE_DIR", str(tmp_path))
    cache.clear_cache(disk=False)  # an earlier test may hold the chain's module in memory
    assert main(["plan", "chain", "--backend", "llvm", "--kernels"]) == 0
    out = capsys.readouterr().out
    assert "define" in out and "kernels" in out
    assert main(["cache"]) == 0  # planning compiled the chain's kernel, and kept its plan
    out = capsys.readouterr().out
    assert "1 compiled modules" in out and "1 plans kept" in out
    # the user's own files: object files are not the cache's for their extension
    (tmp_path / "notes.o").write_bytes(b"mine")
    (tmp_path / "notes.ll").write_text("mine")
    (tmp_path / "secret").write_text("mine")
    assert main(["cache"]) == 0
    assert "1 compiled modules" in capsys.readouterr().out
    [cleared] = run_cli(["cache", "--clear", "--dir", str(tmp_path)])
    assert cleared.returncode == 0, cleared.stderr
    assert "cleared" in cleared.stdout and "2 files" in cleared.stdout  # the module, the plan
    assert not cache.entries(tmp_path) and not cache.plan_entries(tmp_path)
    assert {p.name for p in tmp_path.iterdir() if p.is_file()} == {"notes.o", "notes.ll",
                                                                     "secret"}
    assert (tmp_path / "notes.o").read_bytes() == b"mine"


def test_cache_refuses_a_directory_others_can_write(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    planted = shared / cache.ENTRY_DIR / ("0" * 64 + cache.ENTRY_SUFFIX)
    planted.parent.mkdir(parents=True)
    planted.write_bytes(b"not ours")
    shared.chmod(0o777)
    show, clear = run_cli(["cache", "--dir", str(shared)], ["cache", "--clear", "--dir", str(shared)])
    assert show.returncode == 0 and "not used: it is writable by group or others" in show.stdout
    assert clear.returncode == 1 and "writable by group or others (mode 777)" in clear.stderr
    assert planted.exists()


BAD_ARGUMENTS = [
    (["bench", "--repeat", "-1"], "argument --repeat: must be an integer >= 1, got '-1'"),
    (["bench", "--repeat", "0"], "argument --repeat: must be an integer >= 1, got '0'"),
    (["bench", "--min-time", "-0.5"], "argument --min-time: must be a positive number"),
    (["bench", "--min-time", "nan"], "argument --min-time: must be a positive number"),
    (["bench", "mlp_small", "nosuch"], "argument WORKLOAD: unknown workload 'nosuch' (choose from "
     + ", ".join(WORKLOADS) + ")"),
    (["plan", "nosuch"], "argument WORKLOAD: unknown workload 'nosuch'"),
]


def test_bad_arguments_get_their_command_usage_and_name_the_argument() -> None:
    for (argv, message), done in zip(BAD_ARGUMENTS, run_cli(*(a for a, _ in BAD_ARGUMENTS))):
        assert done.returncode == 2, (argv, done.stderr)
        assert done.stderr.startswith(f"usage: python -m planner {argv[0]} "), done.stderr
        assert message in done.stderr and "[]" not in done.stderr, done.stderr


@pytest.mark.parametrize("argv,message", [
    (["--warmup", "-1"], "argument --warmup: must be an integer >= 0, got '-1'"),
    (["--seed", "-3"], "argument --seed: must be an integer >= 0, got '-3'"),
    (["--threads", "0"], "argument --threads: must be an integer >= 1, got '0'"),
    (["--repeat", "-1"], "argument --repeat: must be an integer >= 1"),
    (["--min-time", "inf"], "argument --min-time: must be a positive number"),
    (["--workloads", "chain", "nosuch"], "unknown workload 'nosuch'"),
])
def test_benchmark_runner_rejects_bad_counts_and_names(argv: list[str], message: str,
                                                       capsys: Any) -> None:
    from benchmarks import run

    with pytest.raises(SystemExit) as exit_:
        run.main(argv)
    assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_output_into_a_closed_pipe_ends_quietly() -> None:
    """``backplan plan ... | head``: no traceback when the reader goes away."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # gone before the first write, so the CLI surely meets a broken pipe
    try:
        [done] = run_cli(["plan", "mlp_small", "--listing"], stdout=write_end)
    finally:
        os.close(write_end)
    assert done.returncode == BROKEN_PIPE_STATUS and done.stderr == ""


def test_backplan_console_script_is_the_planner_cli() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    assert project["project"]["scripts"]["backplan"] == "planner.__main__:main"


def test_fusion_report_explains_the_unfused_steps(capsys: Any) -> None:
    assert main(["plan", "chain", "--fusion"]) == 0
    out = capsys.readouterr().out
    assert "fused into k0" in out and "kernel has no kernel-IR lowering" not in out


def test_cli_plans_a_workload_for_cuda_without_a_gpu(capsys: Any) -> None:
    assert main(["plan", "eltwise", "--device", "cuda", "--kernels"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Plan on cuda:0")
    assert out.count('extern "C" __global__') >= 1 and "define void" not in out  # no LLVM
    with pytest.raises(SystemExit):  # backend cuda on a cpu plan: a usage error, not a trace
        main(["plan", "chain", "--backend", "cuda"])
    assert "--backend cuda builds cuda kernels, but the plan runs on cpu" in capsys.readouterr().err
