"""backplan plan --kernels headers, --show llvm|asm|cuda, and slot names in the listing."""

from __future__ import annotations

import re

from planner.__main__ import main

from tests.planner.test_cli import run_cli



def test_kernel_headers_and_renderings(capsys):
    assert main(["plan", "mlp_small", "--kernels"]) == 0
    out = capsys.readouterr().out
    head = re.search(r"; kernel k0: (\d+) steps fused, on cpu\n;   ops: (.+)\n;   domain: "
                     r"\[32, 64\] \(0 reduced axes\)\n;   bytes moved: (\d+)\n", out)
    assert head is not None, out
    assert int(head[1]) >= 2 and "add" in head[2] and int(head[3]) >= 32 * 64 * 4
    assert "define" in out[head.end():]
    assert main(["plan", "mlp_small", "--kernels", "--show", "asm"]) == 0
    out = capsys.readouterr().out
    assert "# kernel k0:" in out and "\tret" in out and ".Lfunc_end" in out
    assert "define " not in out  # assembly, not IR
    assert main(["plan", "mlp_small", "--kernels", "--show", "cuda"]) == 0
    out = capsys.readouterr().out
    assert "// kernel k0:" in out and "__global__" in out


def test_listing_names_parameters_and_optimizer_state(capsys):
    assert main(["plan", "mlp_small", "--listing"]) == 0
    out = capsys.readouterr().out
    assert "state()  [64, 64] float32 [forward]  # 0.weight" in out
    assert "input()  [32, 64] float32 [forward]  # x" in out
    assert "  4.bias <- %" in out and "  0.weight.grad <- %" in out
    [done] = run_cli(["plan", "examples/adam_classifier.py:step", "--listing"])
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "# inputs" in out and "# labels" in out and "# fc1.weight" in out
    # Adam's step count, made during the captured call, is read as a plain tensor
    assert "state()  [] float32 [update]  # step[fc1.weight]" in out and "tensor[" not in out
    for name in ("fc1.weight", "fc2.bias", "fc1.weight.grad", "exp_avg[fc1.weight]",
                 "exp_avg_sq[fc2.bias]", "step[fc1.bias]"):
        assert f"\n  {name} <- %" in out, name


def test_show_needs_kernels_and_a_known_language():
    bad_show, no_kernels = run_cli(["plan", "chain", "--kernels", "--show", "ptx"],
                                   ["plan", "chain", "--show", "asm"])
    assert bad_show.returncode == 2 and "invalid choice: 'ptx'" in bad_show.stderr
    assert no_kernels.returncode == 2 and "--show goes with --kernels" in no_kernels.stderr
