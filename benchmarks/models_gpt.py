"""The `gpt` workload: a character-level GPT trained on the text CPython ships in
``pydoc_data.topics`` (present wherever Python is, no download).

Pre-norm blocks (LayerNorm, causal self-attention through ``F.scaled_dot_product_attention``,
LayerNorm, GELU MLP), token and position embeddings, a final LayerNorm and a head tied to the
token embedding (or not). One builder takes the library (``runtime`` or ``torch``) as ``lib``;
both start from the same numpy weights and read the same batches, drawn from a seed.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import Any

import numpy as np

from benchmarks.workloads import Case, to_numpy


@dataclass(frozen=True)
class GPTConfig:
    layers: int = 2
    heads: int = 4
    width: int = 128
    context: int = 64
    batch: int = 16
    tied: bool = True  # the head's weight is the token embedding's
    lr: float = 1e-3
    # Adam's step is lr * m / (sqrt(v) + eps): with PyTorch's 1e-8, a weight whose gradient
    # is ~1e-9 (the key projection's, while attention is near uniform at init) moves by a
    # sizeable part of lr on the rounding of that gradient, so two libraries' first steps
    # differ by 1e-4; 1e-6 keeps such updates proportional to their (tiny) gradients
    eps: float = 1e-6


GPT = GPTConfig()


@cache
def corpus() -> tuple[np.ndarray, str]:
    """The topics' texts joined (in their stored order) as int64 codes into a character
    vocabulary (sorted), and that vocabulary."""
    from pydoc_data import topics

    text = "".join(topics.topics.values())
    vocab = "".join(sorted(set(text)))
    lookup = {c: i for i, c in enumerate(vocab)}
    return np.fromiter((lookup[c] for c in text), np.int64, len(text)), vocab


def gpt_batches(seed: int, steps: int, cfg: GPTConfig = GPT) -> list[tuple[np.ndarray, ...]]:
    """``steps`` (inputs, targets) pairs of shape (batch, context): windows of the corpus at
    offsets drawn from ``seed``; the targets are the inputs shifted by one character."""
    data, _ = corpus()
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, len(data) - cfg.context - 1, (steps, cfg.batch))
    window = starts[:, :, None] + np.arange(cfg.context)
    return [(data[w], data[w + 1]) for w in window]


def param_shapes(cfg: GPTConfig, vocab: int) -> dict[str, tuple[int, ...]]:
    """Every parameter's name (as ``named_parameters`` of the model gives it) and shape."""
    c = cfg.width
    shapes: dict[str, tuple[int, ...]] = {"tok.weight": (vocab, c), "pos.weight": (cfg.context, c)}
    for i in range(cfg.layers):
        p = f"blocks.{i}."
        for name, (n_in, n_out) in (("qkv", (c, 3 * c)), ("proj", (c, c)), ("fc", (c, 4 * c)),
                                    ("out", (4 * c, c))):
            shapes[f"{p}{name}.weight"], shapes[f"{p}{name}.bias"] = (n_out, n_in), (n_out,)
        for ln in ("ln1", "ln2"):
            shapes[f"{p}{ln}.weight"], shapes[f"{p}{ln}.bias"] = (c,), (c,)
    shapes["ln_f.weight"], shapes["ln_f.bias"] = (c,), (c,)
    if not cfg.tied:
        shapes["head.weight"] = (vocab, c)
    return shapes


def gpt_arrays(seed: int, cfg: GPTConfig = GPT) -> dict[str, np.ndarray]:
    """GPT-2's init (weights N(0, 0.02), the residual projections scaled by 1/sqrt(2 layers),
    biases 0, LayerNorms 1 and 0) and the first batch ("x", "y")."""
    rng = np.random.default_rng(seed)
    arrays: dict[str, np.ndarray] = {}
    for name, shape in param_shapes(cfg, len(corpus()[1])).items():
        if ".ln" in name or name.startswith("ln_f"):
            value = np.full(shape, 1.0 if name.endswith("weight") else 0.0)
        elif name.endswith("bias"):
            value = np.zeros(shape)
        else:
            residual = name.endswith(("proj.weight", "out.weight"))
            value = rng.normal(0.0, 0.02 / np.sqrt(2 * cfg.layers) if residual else 0.02, shape)
        arrays[name] = value.astype(np.float32)
    arrays["x"], arrays["y"] = gpt_batches(seed, 1, cfg)[0]
    return arrays


def build_gpt_model(lib: ModuleType, arrays: dict[str, np.ndarray], cfg: GPTConfig = GPT) -> Any:
    """The model as nested ModuleDicts, holding copies of ``arrays``' weights."""
    nn = lib.nn
    vocab, c = arrays["tok.weight"].shape

    def block() -> Any:
        return nn.ModuleDict({
            "ln1": nn.LayerNorm(c), "qkv": nn.Linear(c, 3 * c), "proj": nn.Linear(c, c),
            "ln2": nn.LayerNorm(c), "fc": nn.Linear(c, 4 * c), "out": nn.Linear(4 * c, c)})

    model = nn.ModuleDict({
        "tok": nn.Embedding(vocab, c), "pos": nn.Embedding(cfg.context, c),
        "blocks": nn.ModuleList([block() for _ in range(cfg.layers)]),
        "ln_f": nn.LayerNorm(c), "head": nn.Linear(c, vocab, bias=False)})
    # wherever the library puts data (the CUDA tests' runtime puts it on cuda)
    model.to(lib.from_numpy(arrays["x"][:1].copy()).device)
    if cfg.tied:
        model["head"].weight = model["tok"].weight
    params = dict(model.named_parameters())
    want = param_shapes(cfg, vocab)
    if sorted(params) != sorted(want):
        raise AssertionError(f"parameters {sorted(params)} are not {sorted(want)}")
    with lib.no_grad():
        for name, p in params.items():
            p.copy_(lib.from_numpy(arrays[name].copy()))
    return model


def gpt_forward(lib: ModuleType, model: Any, idx: Any, heads: int) -> Any:
    """Logits (batch, context, vocab) of the next character at each position."""
    F = lib.nn.functional
    b, t = idx.shape
    x = model["tok"](idx) + model["pos"](lib.arange(t, device=idx.device))
    c = x.shape[-1]
    for blk in model["blocks"]:
        qkv = blk["qkv"](blk["ln1"](x))
        q, k, v = (qkv[..., i * c:(i + 1) * c].reshape(b, t, heads, c // heads).transpose(1, 2)
                   for i in range(3))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + blk["proj"](y.transpose(1, 2).reshape(b, t, c))
        x = x + blk["out"](F.gelu(blk["fc"](blk["ln2"](x))))
    return model["head"](model["ln_f"](x))


def gpt_train_step(lib: ModuleType, model: Any, forward: Any, cfg: GPTConfig = GPT
                   ) -> Any:
    """``step(x, y)``: zero grads, ``forward(x)`` (logits), cross-entropy over every position,
    backward, gradient clipping (norm 1), AdamW on ``model``'s parameters."""
    opt = lib.optim.AdamW(model.parameters(), lr=cfg.lr, eps=cfg.eps, weight_decay=0.1)

    def step(x: Any, y: Any) -> Any:
        opt.zero_grad()
        logits = forward(x)
        loss = lib.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                               y.reshape(-1))
        loss.backward()
        lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    return step


def build_gpt(lib: ModuleType, arrays: dict[str, np.ndarray], cfg: GPTConfig = GPT) -> Case:
    """One training step (``gpt_train_step``). ``case.fn(x, y)`` takes any batch of the same
    shape; a learning-rate schedule is stepped outside it, as a training loop does."""
    model = build_gpt_model(lib, arrays, cfg)
    step = gpt_train_step(lib, model, lambda x: gpt_forward(lib, model, x, cfg.heads), cfg)

    def outputs(loss: Any) -> dict[str, np.ndarray]:
        out = {"loss": to_numpy(loss)}
        for name, p in model.named_parameters():
            out[name] = to_numpy(p)
            if p.grad is not None:
                out[f"grad_{name}"] = to_numpy(p.grad)
        return out

    x, y = (lib.from_numpy(arrays[k].copy()) for k in ("x", "y"))
    return Case(step, (x, y), outputs)
