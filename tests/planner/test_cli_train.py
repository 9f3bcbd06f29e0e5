"""backplan train: eager, compiled and PyTorch from the same weights, the table, --plot, and
every usage error with status 2."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from benchmarks import train, train_digits
from tests.planner.test_cli import ROOT, run_cli


def test_compiled_trains_like_eager_without_falling_back(capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a compiled step that falls back to eager warns
        runs = train.main(["--epochs", "2", "--batch-size", "64", "--variants",
                           "eager,compiled"])
    eager, compiled = runs["eager"], runs["compiled"]
    np.testing.assert_allclose(compiled.losses, eager.losses, rtol=1e-4, atol=1e-5)
    assert eager.metrics[-1] > 0.85 and compiled.metrics == pytest.approx(eager.metrics)
    # the first call (capture and compile) is kept apart from the step times
    assert compiled.first_call is not None and len(compiled.step_times) == len(eager.losses) - 1
    out = capsys.readouterr().out
    assert "epoch   2  eager: loss" in out and "compiled: first call (capture" in out
    assert out.rstrip().splitlines()[-4].split()[:3] == ["variant", "final", "loss"]


def test_train_subprocess_with_torch_and_alias(tmp_path: Path):
    pytest.importorskip("torch")
    done, = run_cli(["train", "--epochs", "1", "--batch-size", "128", "--seed", "3"])
    assert done.returncode == 0, done.stderr
    table = {line.split()[0]: line.split() for line in done.stdout.splitlines()[-3:]}
    assert set(table) == {"eager", "compiled", "torch"}
    # same initial weights and batches: the same final loss and accuracy in all three
    losses = [float(table[v][1]) for v in table]
    assert max(losses) - min(losses) < 1e-3 and len({table[v][2] for v in table}) == 1


def test_train_digits_alias_returns_eager_accuracy(capsys):
    accuracy = train_digits.main(["--epochs", "1", "--variants", "eager"])
    assert 0.5 < accuracy <= 1 and "eager: loss" in capsys.readouterr().out


def test_train_plot(tmp_path: Path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "loss.png"
    train.main(["--epochs", "1", "--batch-size", "256", "--variants", "eager",
                "--plot", str(out)])
    assert out.read_bytes().startswith(b"\x89PNG")


USAGE_ERRORS = [
    (["--variants", "eager,jax"], "argument --variants: must be distinct names from eager"),
    (["--variants", "eager,eager"], "argument --variants: must be distinct names"),
    (["--epochs", "0"], "argument --epochs: must be an integer >= 1"),
    (["--lr", "-1"], "argument --lr: must be a positive number, got '-1'"),
    (["--task", "imagenet"], "argument --task: invalid choice: 'imagenet'"),
    (["--plot", "loss.txt"], "--plot loss.txt: the file must end in .png or .svg"),
]


def test_train_usage_errors():
    results = run_cli(*(["train", *argv] for argv, _ in USAGE_ERRORS))
    for (argv, message), done in zip(USAGE_ERRORS, results, strict=True):
        assert done.returncode == 2 and message in done.stderr and done.stdout == "", argv


def test_train_plot_without_matplotlib(tmp_path: Path):
    code = ("import sys; sys.modules['matplotlib'] = None; from planner.__main__ import main; "
            f"sys.exit(main(['train', '--plot', {str(tmp_path / 'x.png')!r}]))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "backplan: error: --plot needs matplotlib: pip install 'backplan[plot]' (or pip "
        "install matplotlib)"]
