"""Train a model on a bundled task: eager, compiled and PyTorch side by side.

    python -m benchmarks.train [--task digits] [--epochs 10] [--batch-size 32] [--lr 0.01]
        [--seed 0] [--variants eager,compiled,torch] [--plot FILE.png|svg]

Every variant starts from the same initial weights and trains on the same minibatches, in
turn, batch by batch (so machine noise hits them alike). A progress bar per epoch (on a terminal)
shows the first variant's loss and accuracy (or perplexity) over the epoch so far and each
variant's median step time; the compiled variant's first call (capture,
planning and compile) is timed apart from its steps. A task is one ``TASKS`` entry: a model
builder (over ``runtime`` or ``torch``), its data and its metric.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np

import runtime as rt
from benchmarks.digits import N_CLASSES, N_FEATURES, load_digits, minibatches, train_test_split
from planner.__main__ import at_least
from planner.cli_plan import CLIError

VARIANTS = ("eager", "compiled", "torch")


@dataclass(frozen=True)
class Split:
    """A task's data: inputs and integer targets (class labels, or next tokens)."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray


@dataclass(frozen=True)
class Task:
    """One training task: ``build(lib)`` makes the model over ``runtime`` or ``torch`` (the
    same parameter names in both), ``data(seed)`` the split; the loss is cross-entropy over
    the last axis of the logits; ``metric`` "accuracy" (argmax against the target) or
    "perplexity" (exp of the test loss)."""

    name: str
    what: str
    build: Callable[[ModuleType], Any]
    data: Callable[[int], Split]
    metric: str
    # AdamW's weight decay (0: Adam), gradient clipping by norm, and a warmup-then-cosine
    # learning rate stepped after every batch (outside the compiled step: a changed lr is a
    # replay-time input, never a recompile)
    weight_decay: float = 0.0
    clip: float | None = None
    cosine: bool = False


def digits_mlp(lib: ModuleType) -> Any:
    return lib.nn.Sequential(lib.nn.Linear(N_FEATURES, 128), lib.nn.ReLU(),
                             lib.nn.Linear(128, N_CLASSES))


def digits_data(seed: int) -> Split:
    x_train, x_test, y_train, y_test = train_test_split(*load_digits(), test_fraction=0.2,
                                                        seed=seed)
    return Split(x_train, y_train, x_test, y_test)


def digits_cnn(lib: ModuleType) -> Any:
    nn = lib.nn
    return nn.Sequential(
        nn.Unflatten(1, (1, 8, 8)),
        nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64, N_CLASSES))


GPT_TRAIN, GPT_TEST = 2048, 256  # windows of the text per split


def gpt_model(lib: ModuleType) -> Any:
    from benchmarks.models_gpt import GPT, build_gpt_model, gpt_forward

    class CharGPT(lib.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = build_gpt_model(lib, _gpt_init())

        def forward(self, idx: Any) -> Any:
            return gpt_forward(lib, self.net, idx, GPT.heads)

    return CharGPT()


def _gpt_init() -> dict[str, np.ndarray]:
    from benchmarks.models_gpt import gpt_arrays

    return gpt_arrays(0)


def gpt_data(seed: int) -> Split:
    """Disjoint train and test windows of CPython's pydoc_data.topics text."""
    from benchmarks.models_gpt import GPT, corpus

    ids, _ = corpus()
    n = len(ids) - GPT.context - 1
    starts = np.random.default_rng(seed).choice(n, GPT_TRAIN + GPT_TEST, replace=False)
    x = np.stack([ids[s:s + GPT.context] for s in starts]).astype(np.int64)
    y = np.stack([ids[s + 1:s + 1 + GPT.context] for s in starts]).astype(np.int64)
    return Split(x[:GPT_TRAIN], y[:GPT_TRAIN], x[GPT_TRAIN:], y[GPT_TRAIN:])


TASKS: dict[str, Task] = {t.name: t for t in [
    Task("digits", "UCI handwritten digits (8x8), MLP 64-128-10, ReLU", digits_mlp, digits_data,
         "accuracy"),
    Task("cnn", "UCI handwritten digits (8x8), (conv3x3-batchnorm-relu-maxpool) x 2, linear",
         digits_cnn, digits_data, "accuracy"),
    Task("gpt", "character-level GPT (2 layers, 4 heads, width 128, context 64) on CPython's "
         "pydoc_data.topics; AdamW, clipping, warmup-cosine lr", gpt_model, gpt_data,
         "perplexity", weight_decay=0.1, clip=1.0, cosine=True),
]}


def cross_entropy(lib: ModuleType, logits: Any, y: Any) -> Any:
    return lib.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


@dataclass
class Run:
    """One variant's model, its training step and what it recorded."""

    name: str
    lib: ModuleType
    model: Any
    step: Callable[[Any, Any], Any]
    losses: list[float] = field(default_factory=list)  # every step's
    hits: list[float] = field(default_factory=list)  # every step's batch accuracy
    step_times: list[float] = field(default_factory=list)  # every step's but the first call
    first_call: float | None = None  # seconds of the first call
    metrics: list[float] = field(default_factory=list)  # after each epoch
    schedule: Any = None  # an lr scheduler stepped after every batch

    def train_batch(self, xb: np.ndarray, yb: np.ndarray) -> None:
        x, y = self.lib.from_numpy(xb), self.lib.from_numpy(yb)
        start = time.perf_counter()
        loss_t, logits = self.step(x, y)
        loss = loss_t.item()
        elapsed = time.perf_counter() - start
        if self.first_call is None:
            self.first_call = elapsed
        else:
            self.step_times.append(elapsed)
        if self.schedule is not None:
            self.schedule.step()
        self.losses.append(loss)
        self.hits.append(float((logits.numpy().argmax(axis=-1) == yb).mean()))

    def running(self, task: Task, since: int) -> str:
        """The epoch so far: mean loss, and accuracy or perplexity on its batches."""
        loss = float(np.mean(self.losses[since:]))
        if task.metric == "perplexity":
            return f"loss {loss:.4f} ppl {math.exp(loss):.2f}"
        return f"loss {loss:.4f} acc {np.mean(self.hits[since:]):.1%}"

    def evaluate(self, task: Task, x: np.ndarray, y: np.ndarray) -> float:
        lib = self.lib
        self.model.eval()  # batch norm's running statistics, no dropout
        try:
            with lib.no_grad():
                logits = self.model(lib.from_numpy(x))
                if task.metric == "perplexity":
                    return math.exp(cross_entropy(lib, logits, lib.from_numpy(y)).item())
        finally:
            self.model.train()
        return float((logits.numpy().argmax(axis=-1) == y).mean())

    @property
    def median_step(self) -> float:
        return statistics.median(self.step_times) if self.step_times else math.nan


def make_run(name: str, task: Task, eager_model: Any, lr: float, total_steps: int) -> Run:
    """A variant training a model with ``eager_model``'s current weights (Adam or AdamW, lr,
    the task's clipping and schedule over ``total_steps``)."""
    if name == "torch":
        import torch

        lib: ModuleType = torch
        model = task.build(torch)
        mine = dict(eager_model.named_parameters())
        with torch.no_grad():
            for path, p in model.named_parameters():
                p.copy_(torch.from_numpy(mine[path].detach().numpy().copy()))
    else:
        lib = rt
        model = eager_model if name == "eager" else task.build(rt)
        if model is not eager_model:
            model.load_state_dict(eager_model.state_dict())
    if task.weight_decay:
        opt = lib.optim.AdamW(model.parameters(), lr=lr, weight_decay=task.weight_decay)
    else:
        opt = lib.optim.Adam(model.parameters(), lr=lr)
    schedule = None
    if task.cosine:
        warmup = max(1, total_steps // 10)

        def factor(i: int) -> float:
            if i < warmup:
                return (i + 1) / warmup
            return 0.5 * (1 + math.cos(math.pi * (i - warmup) / max(1, total_steps - warmup)))

        schedule = lib.optim.lr_scheduler.LambdaLR(opt, factor)

    def step(x: Any, y: Any) -> tuple[Any, Any]:
        opt.zero_grad()
        logits = model(x)
        loss = cross_entropy(lib, logits, y)
        loss.backward()
        if task.clip is not None:
            lib.nn.utils.clip_grad_norm_(model.parameters(), task.clip)
        opt.step()
        return loss, logits.detach()

    if name == "compiled":
        import planner

        # kernels compiled in the first call, not in the background (planner.background):
        # every later step runs them, so the median step is the compiled one's
        return Run(name, lib, model, planner.compile(step, background=False),
                   schedule=schedule)
    return Run(name, lib, model, step, schedule=schedule)


def parse_variants(text: str) -> list[str]:
    names = [v.strip() for v in text.split(",") if v.strip()]
    unknown = [v for v in names if v not in VARIANTS]
    if unknown or not names or len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(f"must be distinct names from {', '.join(VARIANTS)}, "
                                         f"comma-separated, got {text!r}")
    return names


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``backplan train`` (and ``python -m benchmarks.train``)."""
    parser.add_argument("--task", default="digits", choices=list(TASKS),
                        help="; ".join(f"{t.name}: {t.what}" for t in TASKS.values()))
    parser.add_argument("--epochs", type=at_least(1), default=10)
    parser.add_argument("--batch-size", type=at_least(1), default=32)
    parser.add_argument("--lr", type=positive_float, default=1e-2, help="Adam's learning rate")
    parser.add_argument("--seed", type=at_least(0), default=0,
                        help="initial weights, data split and minibatch order")
    parser.add_argument("--variants", type=parse_variants, default=None,
                        help="comma-separated, from eager,compiled,torch (default: all three, "
                             "torch when importable)")
    parser.add_argument("--plot", metavar="FILE",
                        help="also draw the loss curves to FILE (.png or .svg; needs matplotlib)")


def check_plot(path: str | None) -> None:
    """Refuse a --plot the run could not write, before any training."""
    if path is None:
        return
    if not path.endswith((".png", ".svg")):
        raise CLIError(f"--plot {path}: the file must end in .png or .svg")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise CLIError("--plot needs matplotlib: pip install 'backplan[plot]' (or pip install "
                       "matplotlib)") from None


def chosen_variants(asked: list[str] | None) -> list[str]:
    import importlib.util

    has_torch = importlib.util.find_spec("torch") is not None
    if asked is None:
        return [v for v in VARIANTS if v != "torch" or has_torch]
    if "torch" in asked and not has_torch:
        raise CLIError("--variants torch: PyTorch is not installed (pip install torch)")
    return asked


def train(args: argparse.Namespace) -> dict[str, Run]:
    """Train every variant asked for; print a progress bar and a line per epoch, then the
    final table. Returns the runs."""
    from tqdm import tqdm

    check_plot(args.plot)
    variants = chosen_variants(args.variants)
    task = TASKS[args.task]
    data = task.data(args.seed)
    rt.manual_seed(args.seed)
    first = task.build(rt)
    total = args.epochs * -(-len(data.x_train) // args.batch_size)
    runs = {name: make_run(name, task, first, args.lr, total) for name in variants}
    print(f"{task.name}: {task.what}; {len(data.x_train)} train / {len(data.x_test)} test "
          f"samples; {'AdamW' if task.weight_decay else 'Adam'} lr={args.lr}, batch {args.batch_size}, {args.epochs} epochs; "
          f"variants {', '.join(variants)}")
    batch_rng = np.random.default_rng(args.seed)
    for epoch in range(1, args.epochs + 1):
        batches = minibatches(len(data.x_train), args.batch_size, batch_rng)
        seen = {name: len(run.losses) for name, run in runs.items()}
        bar = tqdm(batches, desc=f"epoch {epoch}/{args.epochs}", unit="batch", leave=False,
                   dynamic_ncols=True, disable=None)  # None: shown on a terminal only
        for idx in bar:
            for run in runs.values():
                run.train_batch(data.x_train[idx], data.y_train[idx])
            lead = next(iter(runs.values()))
            bar.set_postfix_str(f"{lead.name} {lead.running(task, seen[lead.name])}; step " +
                                " ".join(f"{r.name} {r.median_step * 1e3:.2f} ms"
                                         for r in runs.values()))
        bar.close()
        parts = []
        for run in runs.values():
            run.metrics.append(run.evaluate(task, data.x_test, data.y_test))
            loss = float(np.mean(run.losses[seen[run.name]:]))
            parts.append(f"{run.name}: loss {loss:.4f} {_metric(task, run.metrics[-1])} "
                         f"step {run.median_step * 1e3:.3f} ms")
        print(f"epoch {epoch:3d}  " + "  | ".join(parts), flush=True)
        if epoch == 1 and "compiled" in runs:
            print(f"  compiled: first call (capture, planning, compile) "
                  f"{runs['compiled'].first_call * 1e3:.1f} ms, apart from the step times")
    print()
    print(final_table(task, runs))
    if args.plot:
        plot_losses(runs, args.plot)
    return runs


def _metric(task: Task, value: float) -> str:
    return f"acc {value:.2%}" if task.metric == "accuracy" else f"ppl {value:.3f}"


def final_table(task: Task, runs: dict[str, Run]) -> str:
    header = (f"{'variant':<10}{'final loss':>12}{'test ' + task.metric:>18}{'step ms':>10}"
              f"{'first call ms':>15}{'vs eager':>10}")
    lines = [header, "-" * len(header)]
    base = runs["eager"].median_step if "eager" in runs else None
    for run in runs.values():
        metric = f"{run.metrics[-1]:.2%}" if task.metric == "accuracy" else \
            f"{run.metrics[-1]:.3f}"
        speed = f"{base / run.median_step:.2f}x" if base else "-"
        lines.append(f"{run.name:<10}{run.losses[-1]:>12.4f}{metric:>18}"
                     f"{run.median_step * 1e3:>10.3f}{(run.first_call or 0) * 1e3:>15.1f}"
                     f"{speed:>10}")
    return "\n".join(lines)


def plot_losses(runs: dict[str, Run], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for run in runs.values():
        ax.plot(run.losses, label=run.name, linewidth=1)
    ax.set_xlabel("step")
    ax.set_ylabel("training loss")
    ax.set_yscale("log")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> dict[str, Run]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    return train(parser.parse_args(argv))


if __name__ == "__main__":
    import sys

    try:
        main()
    except CLIError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
