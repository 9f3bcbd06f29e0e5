"""Well-known PyTorch training scripts (nanoGPT, pytorch/examples, makemore) ported by
changing ``import torch`` into ``import runtime as torch``: each runs from the weights PyTorch
initialised (copied through numpy) on the same data, and its losses, gradients and outputs
equal PyTorch's. The compiled runs are in tests/planner/test_scripts_ported_h12_compiled.py."""

from __future__ import annotations

import contextlib
from collections import deque
import inspect
import math
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import runtime as rt


@pytest.mark.parametrize(("device", "name", "dtype"), [
    ("cuda", "autocast", rt.float16), ("cpu", "autocast", rt.bfloat16),
    ("cuda", "GradScaler", None), ("cpu", "GradScaler", None)])
def test_deprecated_device_amp_names(device: str, name: str, dtype: rt.dtype | None) -> None:
    """nanoGPT's ``torch.cuda.amp.GradScaler(enabled=(dtype == 'float16'))``: the per-device
    spellings exist, warn PyTorch's FutureWarning and are ``torch.amp``'s with the device."""
    torch = pytest.importorskip("torch")
    made = {}
    for lib in (torch, rt):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            obj = getattr(getattr(lib, device).amp, name)(enabled=False)
        made[lib] = (obj, [(w.category, str(w.message)) for w in caught])
    (want, want_warned), (got, got_warned) = made[torch], made[rt]
    assert got_warned == want_warned
    assert isinstance(got, getattr(rt.amp, name))
    if dtype is None:
        assert got.is_enabled() is want.is_enabled() is False
    else:
        assert (got.device, got.fast_dtype, got._enabled) == (device, dtype, False)
        assert str(want.fast_dtype).split(".")[1] == str(dtype).split(".")[1]


def test_deprecated_cuda_amp_custom_fwd_runs_the_function() -> None:
    pytest.importorskip("torch")

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        class Double(rt.autograd.Function):
            @staticmethod
            @rt.cuda.amp.custom_fwd
            def forward(ctx: ModuleType, x: rt.Tensor) -> rt.Tensor:
                return x * 2

            @staticmethod
            @rt.cuda.amp.custom_bwd
            def backward(ctx: ModuleType, g: rt.Tensor) -> rt.Tensor:
                return g * 2

    assert [(w.category, str(w.message).split("(")[0]) for w in caught] == [
        (FutureWarning, "`torch.cuda.amp.custom_fwd"), (FutureWarning, "`torch.cuda.amp.custom_bwd")]
    x = rt.ones(3, requires_grad=True)
    Double.apply(x).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


ACCELERATOR_CALLS = ["is_available()", "current_accelerator()",
                     "current_accelerator(check_available=True)", "device_count()",
                     "current_device_index()", "synchronize()", "set_device_index(0)",
                     "empty_cache()", "device_index(None).__enter__()",
                     "device_index(0).__enter__()"]


@pytest.mark.parametrize("call", ACCELERATOR_CALLS)
def test_accelerator_answers_as_pytorch(call: str) -> None:
    """pytorch/examples open with ``torch.accelerator.is_available()`` and
    ``current_accelerator()``: the same answers, or the same error, as PyTorch's."""
    torch = pytest.importorskip("torch")
    if rt.cuda.is_available() != torch.cuda.is_available():
        pytest.skip("PyTorch and the runtime see different GPUs")
    results = []
    for lib in (torch, rt):
        try:
            results.append(("ok", str(eval(f"lib.accelerator.{call}"))))
        except Exception as e:  # noqa: BLE001 - the error is what is compared
            results.append((type(e).__name__, str(e)))
    assert results[1] == results[0]


def test_examples_device_line_picks_cpu_without_a_gpu() -> None:
    if rt.cuda.is_available():
        pytest.skip("a GPU is usable here")
    use_accel = rt.accelerator.is_available()
    dev = rt.accelerator.current_accelerator() if use_accel else rt.device("cpu")
    assert rt.ones(2, device=dev).device == rt.device("cpu")


# ---- the ported scripts: each written once against ``lib`` (torch or runtime) --------------

Weights = dict[str, np.ndarray]
Step = Callable[..., Any]


@dataclass
class Run:
    """What a script leaves: the weights it started from, a value list per step (losses and
    what the script logs) and its final weights."""

    weights: Weights
    values: list[list[float]]
    final: Weights
    extra: dict[str, Any] = field(default_factory=dict)


def numpy_state(*models: Any) -> Weights:
    return {f"{i}.{k}": v.detach().numpy().copy()
            for i, m in enumerate(models) for k, v in m.state_dict().items()}


def start(lib: ModuleType, weights: Weights | None, *models: Any) -> Weights:
    """The weights the models start from: their own (the reference run) or ``weights``."""
    if weights is not None:
        for i, m in enumerate(models):
            m.load_state_dict({k.split(".", 1)[1]: lib.from_numpy(v.copy())
                               for k, v in weights.items() if k.split(".", 1)[0] == str(i)})
    return numpy_state(*models)


def floats(*ts: Any) -> list[float]:
    return [float(t.detach()) if hasattr(t, "detach") else float(t) for t in ts]


def as_is(step: Step) -> Step:
    return step


# nanoGPT (karpathy/nanoGPT model.py and train.py's step), shrunk

def nanogpt(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
            bias: bool = True, flash: bool = True, compile_model: bool = False) -> Run:
    torch, nn, F = lib, lib.nn, lib.nn.functional

    @dataclass
    class GPTConfig:
        block_size: int = 8
        vocab_size: int = 13
        n_layer: int = 2
        n_head: int = 2
        n_embd: int = 8
        dropout: float = 0.0
        bias: bool = True

    class LayerNorm(nn.Module):
        def __init__(self, ndim: int, bias: bool) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.ones(ndim))
            self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

        def forward(self, input: Any) -> Any:
            return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)

    class CausalSelfAttention(nn.Module):
        def __init__(self, config: GPTConfig) -> None:
            super().__init__()
            self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
            self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
            self.attn_dropout = nn.Dropout(config.dropout)
            self.resid_dropout = nn.Dropout(config.dropout)
            self.n_head, self.n_embd, self.dropout = config.n_head, config.n_embd, config.dropout
            self.flash = flash and hasattr(torch.nn.functional, "scaled_dot_product_attention")
            if not self.flash:
                self.register_buffer("bias", torch.tril(torch.ones(
                    config.block_size, config.block_size)).view(
                        1, 1, config.block_size, config.block_size))

        def forward(self, x: Any) -> Any:
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
            k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            if self.flash:
                y = torch.nn.functional.scaled_dot_product_attention(
                    q, k, v, attn_mask=None, dropout_p=self.dropout if self.training else 0,
                    is_causal=True)
            else:
                att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
                att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
                att = self.attn_dropout(F.softmax(att, dim=-1))
                y = att @ v
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            return self.resid_dropout(self.c_proj(y))

    class MLP(nn.Module):
        def __init__(self, config: GPTConfig) -> None:
            super().__init__()
            self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
            self.dropout = nn.Dropout(config.dropout)

        def forward(self, x: Any) -> Any:
            return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))

    class Block(nn.Module):
        def __init__(self, config: GPTConfig) -> None:
            super().__init__()
            self.ln_1 = LayerNorm(config.n_embd, bias=config.bias)
            self.attn = CausalSelfAttention(config)
            self.ln_2 = LayerNorm(config.n_embd, bias=config.bias)
            self.mlp = MLP(config)

        def forward(self, x: Any) -> Any:
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self, config: GPTConfig) -> None:
            super().__init__()
            self.config = config
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(config.vocab_size, config.n_embd),
                wpe=nn.Embedding(config.block_size, config.n_embd),
                drop=nn.Dropout(config.dropout),
                h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
                ln_f=LayerNorm(config.n_embd, bias=config.bias)))
            self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
            self.transformer.wte.weight = self.lm_head.weight
            self.apply(self._init_weights)
            for pn, p in self.named_parameters():
                if pn.endswith("c_proj.weight"):
                    torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

        def get_num_params(self, non_embedding: bool = True) -> int:
            n_params = sum(p.numel() for p in self.parameters())
            if non_embedding:
                n_params -= self.transformer.wpe.weight.numel()
            return n_params

        def _init_weights(self, module: Any) -> None:
            if isinstance(module, nn.Linear):
                torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
                if module.bias is not None:
                    torch.nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

        def forward(self, idx: Any, targets: Any = None) -> tuple[Any, Any]:
            device = idx.device
            b, t = idx.size()
            assert t <= self.config.block_size
            pos = torch.arange(0, t, dtype=torch.long, device=device)
            x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
            for block in self.transformer.h:
                x = block(x)
            x = self.transformer.ln_f(x)
            if targets is not None:
                logits = self.lm_head(x)
                loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                       ignore_index=-1)
            else:
                logits = self.lm_head(x[:, [-1], :])
                loss = None
            return logits, loss

        def crop_block_size(self, block_size: int) -> None:
            self.config.block_size = block_size
            self.transformer.wpe.weight = nn.Parameter(
                self.transformer.wpe.weight[:block_size])
            for block in self.transformer.h:
                if hasattr(block.attn, "bias"):
                    block.attn.bias = block.attn.bias[:, :, :block_size, :block_size]

        def configure_optimizers(self, weight_decay: float, learning_rate: float,
                                 betas: tuple[float, float], device_type: str) -> Any:
            param_dict = {pn: p for pn, p in self.named_parameters() if p.requires_grad}
            decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
            nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
            optim_groups = [{"params": decay_params, "weight_decay": weight_decay},
                            {"params": nodecay_params, "weight_decay": 0.0}]
            fused_available = "fused" in inspect.signature(torch.optim.AdamW).parameters
            use_fused = fused_available and device_type == "cuda"
            extra_args = dict(fused=True) if use_fused else dict()
            return torch.optim.AdamW(optim_groups, lr=learning_rate, betas=betas, **extra_args)

        @torch.no_grad()
        def generate(self, idx: Any, max_new_tokens: int, temperature: float = 1.0,
                     top_k: int | None = None) -> Any:
            for _ in range(max_new_tokens):
                idx_cond = idx if idx.size(1) <= self.config.block_size \
                    else idx[:, -self.config.block_size:]
                logits, _ = self(idx_cond)
                logits = logits[:, -1, :] / temperature
                if top_k is not None:
                    v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                    logits[logits < v[:, [-1]]] = -float("Inf")
                probs = F.softmax(logits, dim=-1)
                idx_next = torch.multinomial(probs, num_samples=1)
                idx = torch.cat((idx, idx_next), dim=1)
            return idx

    model = GPT(GPTConfig(bias=bias))
    w0 = start(lib, weights, model)
    optimizer = model.configure_optimizers(0.1, 1e-3, (0.9, 0.95), "cpu")
    if compile_model:  # train.py's default: compile = True, after configure_optimizers
        model = torch.compile(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        scaler = torch.cuda.amp.GradScaler(enabled=False)  # train.py's, off for float32
    ctx = contextlib.nullcontext()
    accum = 2

    def train_step(X: Any, Y: Any) -> Any:
        for micro_step in range(accum):
            with ctx:
                _, loss = model(X[micro_step], Y[micro_step])
                loss = loss / accum
            scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        return loss

    step = wrap(train_step)
    rng = np.random.default_rng(0)
    values = []
    for it in range(4):
        for param_group in optimizer.param_groups:  # train.py's warmup
            param_group["lr"] = 1e-3 * (it + 1) / 5
        X, Y = (torch.from_numpy(rng.integers(0, 13, (accum, 2, 8))) for _ in range(2))
        values.append(floats(step(X, Y) * accum))
    model.eval()
    model.crop_block_size(4)
    torch.manual_seed(1)
    tokens = model.generate(torch.zeros((2, 1), dtype=torch.long), 6, top_k=3)
    return Run(w0, values, numpy_state(model),
               {"tokens": tokens.tolist(), "params": model.get_num_params(),
                "groups": [len(g["params"]) for g in optimizer.param_groups]})


# pytorch/examples dcgan/main.py: weights_init through apply, two Adams, BCELoss, label.fill_

def dcgan(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step]) -> Run:
    torch, nn, optim = lib, lib.nn, lib.optim
    nz, ngf, ndf, nc = 4, 2, 2, 3

    def weights_init(m: Any) -> None:
        classname = m.__class__.__name__
        if classname.find("Conv") != -1:
            torch.nn.init.normal_(m.weight, 0.0, 0.02)
        elif classname.find("BatchNorm") != -1:
            torch.nn.init.normal_(m.weight, 1.0, 0.02)
            torch.nn.init.zeros_(m.bias)

    class Generator(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.main = nn.Sequential(
                nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 4),
                nn.ReLU(True),
                nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
                nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
                nn.ConvTranspose2d(ngf * 2, nc, 4, 2, 1, bias=False), nn.Tanh())

        def forward(self, input: Any) -> Any:
            return self.main(input)

    class Discriminator(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.main = nn.Sequential(
                nn.Conv2d(nc, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 2),
                nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False), nn.Sigmoid())

        def forward(self, input: Any) -> Any:
            return self.main(input).view(-1, 1).squeeze(1)

    netG, netD = Generator(), Discriminator()
    netG.apply(weights_init)
    netD.apply(weights_init)
    w0 = start(lib, weights, netG, netD)
    criterion = nn.BCELoss()
    optimizerD = optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))
    real_label, fake_label = 1, 0

    def train_step(real_cpu: Any, noise: Any) -> tuple[Any, ...]:
        netD.zero_grad()
        batch_size = real_cpu.size(0)
        label = torch.full((batch_size,), real_label, dtype=real_cpu.dtype)
        output = netD(real_cpu)
        errD_real = criterion(output, label)
        errD_real.backward()
        D_x = output.mean()
        fake = netG(noise)
        label.fill_(fake_label)
        output = netD(fake.detach())
        errD_fake = criterion(output, label)
        errD_fake.backward()
        D_G_z1 = output.mean()
        errD = errD_real + errD_fake
        optimizerD.step()
        netG.zero_grad()
        label.fill_(real_label)
        output = netD(fake)
        errG = criterion(output, label)
        errG.backward()
        D_G_z2 = output.mean()
        optimizerG.step()
        return errD, errG, D_x, D_G_z1, D_G_z2

    step = wrap(train_step)
    rng = np.random.default_rng(1)
    values = []
    for _ in range(3):
        real = rng.uniform(-1, 1, (2, nc, 16, 16)).astype(np.float32)
        noise = rng.standard_normal((2, nz, 1, 1)).astype(np.float32)
        values.append(floats(*step(torch.from_numpy(real), torch.from_numpy(noise))))
    return Run(w0, values, numpy_state(netG, netD))


# pytorch/examples word_language_model: RNNModel and TransformerModel (an nn.Transformer
# subclass with a PositionalEncoding), repackage_hidden, clip_grad_norm_, p.data.add_

def word_language_model(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
                        rnn_type: str = "LSTM", use_optimizer: bool = False) -> Run:
    torch, nn, F = lib, lib.nn, lib.nn.functional
    ntokens, bsz, bptt, lr, clip = 11, 3, 5, 2.0, 0.25

    class RNNModel(nn.Module):
        def __init__(self, rnn_type: str, ntoken: int, ninp: int, nhid: int, nlayers: int,
                     dropout: float = 0.5) -> None:
            super().__init__()
            self.ntoken = ntoken
            self.drop = nn.Dropout(dropout)
            self.encoder = nn.Embedding(ntoken, ninp)
            if rnn_type in ["LSTM", "GRU"]:
                self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
            else:
                nonlinearity = {"RNN_TANH": "tanh", "RNN_RELU": "relu"}[rnn_type]
                self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity,
                                  dropout=dropout)
            self.decoder = nn.Linear(nhid, ntoken)
            self.init_weights()
            self.rnn_type, self.nhid, self.nlayers = rnn_type, nhid, nlayers

        def init_weights(self) -> None:
            initrange = 0.1
            nn.init.uniform_(self.encoder.weight, -initrange, initrange)
            nn.init.zeros_(self.decoder.bias)
            nn.init.uniform_(self.decoder.weight, -initrange, initrange)

        def forward(self, input: Any, hidden: Any) -> tuple[Any, Any]:
            emb = self.drop(self.encoder(input))
            output, hidden = self.rnn(emb, hidden)
            output = self.drop(output)
            decoded = self.decoder(output).view(-1, self.ntoken)
            return F.log_softmax(decoded, dim=1), hidden

        def init_hidden(self, bsz: int) -> Any:
            weight = next(self.parameters())
            if self.rnn_type == "LSTM":
                return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                        weight.new_zeros(self.nlayers, bsz, self.nhid))
            return weight.new_zeros(self.nlayers, bsz, self.nhid)

    class PositionalEncoding(nn.Module):
        def __init__(self, d_model: int, dropout: float = 0.1, max_len: int = 5000) -> None:
            super().__init__()
            self.dropout = nn.Dropout(p=dropout)
            pe = torch.zeros(max_len, d_model)
            position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
            div_term = torch.exp(torch.arange(0, d_model, 2).float()
                                 * (-math.log(10000.0) / d_model))
            pe[:, 0::2] = torch.sin(position * div_term)
            pe[:, 1::2] = torch.cos(position * div_term)
            pe = pe.unsqueeze(0).transpose(0, 1)
            self.register_buffer("pe", pe)

        def forward(self, x: Any) -> Any:
            return self.dropout(x + self.pe[:x.size(0), :])

    class TransformerModel(nn.Transformer):
        def __init__(self, ntoken: int, ninp: int, nhead: int, nhid: int, nlayers: int,
                     dropout: float = 0.5) -> None:
            super().__init__(d_model=ninp, nhead=nhead, dim_feedforward=nhid,
                             num_encoder_layers=nlayers)
            self.model_type = "Transformer"
            self.src_mask = None
            self.pos_encoder = PositionalEncoding(ninp, dropout)
            self.input_emb = nn.Embedding(ntoken, ninp)
            self.ninp = ninp
            self.decoder = nn.Linear(ninp, ntoken)
            initrange = 0.1
            nn.init.uniform_(self.input_emb.weight, -initrange, initrange)
            nn.init.zeros_(self.decoder.bias)
            nn.init.uniform_(self.decoder.weight, -initrange, initrange)

        def _generate_square_subsequent_mask(self, sz: int) -> Any:
            return torch.log(torch.tril(torch.ones(sz, sz)))

        def forward(self, src: Any, has_mask: bool = True) -> Any:
            if has_mask:
                if self.src_mask is None or self.src_mask.size(0) != len(src):
                    self.src_mask = self._generate_square_subsequent_mask(len(src)).to(
                        src.device)
            else:
                self.src_mask = None
            src = self.pos_encoder(self.input_emb(src) * math.sqrt(self.ninp))
            output = self.decoder(self.encoder(src, mask=self.src_mask))
            return F.log_softmax(output, dim=-1)

    def repackage_hidden(h: Any) -> Any:
        if isinstance(h, torch.Tensor):
            return h.detach()
        return tuple(repackage_hidden(v) for v in h)

    if rnn_type == "Transformer":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # enable_nested_tensor, both libraries
            model = TransformerModel(ntokens, 8, 2, 16, 2, 0.0)
    else:
        model = RNNModel(rnn_type, ntokens, 8, 8, 2, 0.0)
    w0 = start(lib, weights, model)
    criterion = nn.NLLLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr) if use_optimizer else None

    def train_step(data: Any, targets: Any, hidden: Any) -> tuple[Any, Any]:
        if optimizer is not None:
            optimizer.zero_grad()
        else:
            model.zero_grad()
        if rnn_type == "Transformer":
            output = model(data).view(-1, ntokens)
        else:
            hidden = repackage_hidden(hidden)
            output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        if optimizer is not None:
            optimizer.step()
        else:
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)
        return loss, hidden

    step = wrap(train_step)
    corpus = torch.from_numpy(np.random.default_rng(2).integers(0, ntokens, 3 * bsz * bptt + 1))
    nbatch = corpus.size(0) // bsz
    train_data = corpus.narrow(0, 0, nbatch * bsz).view(bsz, -1).t().contiguous()
    model.train()
    hidden = None if rnn_type == "Transformer" else model.init_hidden(bsz)
    values = []
    for i in range(0, train_data.size(0) - 1, bptt):
        seq_len = min(bptt, len(train_data) - 1 - i)
        data, targets = train_data[i:i + seq_len], train_data[i + 1:i + 1 + seq_len].view(-1)
        loss, hidden = step(data, targets, hidden)
        values.append(floats(loss))
    return Run(w0, values, numpy_state(model))


# karpathy/makemore makemore.py: CharDataset, InfiniteDataLoader (a RandomSampler drawing with
# replacement), the RNN/GRU, MLP and BoW language models, AdamW, greedy generate

NAMES = ["emma", "olivia", "ava", "isabella", "sophia", "mia", "amelia", "harper", "evelyn",
         "abigail", "ella", "luna", "aria", "nora", "riley", "zoey"]


def makemore(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
             kind: str = "gru") -> Run:
    torch, nn, F = lib, lib.nn, lib.nn.functional

    @dataclass
    class ModelConfig:
        block_size: int
        vocab_size: int
        n_embd: int = 6
        n_embd2: int = 6

    class CharDataset(torch.utils.data.Dataset):
        def __init__(self, words: list[str], chars: list[str], max_word_length: int) -> None:
            self.words, self.chars, self.max_word_length = words, chars, max_word_length
            self.stoi = {ch: i + 1 for i, ch in enumerate(chars)}

        def __len__(self) -> int:
            return len(self.words)

        def get_vocab_size(self) -> int:
            return len(self.chars) + 1

        def get_output_length(self) -> int:
            return self.max_word_length + 1

        def __getitem__(self, idx: int) -> tuple[Any, Any]:
            ix = torch.tensor([self.stoi[w] for w in self.words[idx]], dtype=torch.long)
            x = torch.zeros(self.max_word_length + 1, dtype=torch.long)
            y = torch.zeros(self.max_word_length + 1, dtype=torch.long)
            x[1:1 + len(ix)] = ix
            y[:len(ix)] = ix
            y[len(ix) + 1:] = -1
            return x, y

    class InfiniteDataLoader:
        def __init__(self, dataset: Any, **kwargs: Any) -> None:
            train_sampler = torch.utils.data.RandomSampler(dataset, replacement=True,
                                                           num_samples=int(1e10))
            self.train_loader = torch.utils.data.DataLoader(dataset, sampler=train_sampler,
                                                            **kwargs)
            self.data_iter = iter(self.train_loader)

        def next(self) -> Any:
            return next(self.data_iter)

    class CausalBoW(nn.Module):
        def __init__(self, config: ModelConfig) -> None:
            super().__init__()
            self.register_buffer("bias", torch.tril(torch.ones(
                config.block_size, config.block_size)).view(
                    1, config.block_size, config.block_size))

        def forward(self, x: Any) -> Any:
            B, T, C = x.size()
            att = torch.zeros((B, T, T), device=x.device)
            att = att.masked_fill(self.bias[:, :T, :T] == 0, float("-inf"))
            return F.softmax(att, dim=-1) @ x

    class BoWBlock(nn.Module):
        def __init__(self, config: ModelConfig) -> None:
            super().__init__()
            self.cbow = CausalBoW(config)
            self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(config.n_embd, config.n_embd2),
                                          c_proj=nn.Linear(config.n_embd2, config.n_embd)))
            m = self.mlp
            self.mlpf = lambda x: m.c_proj(F.tanh(m.c_fc(x)))

        def forward(self, x: Any) -> Any:
            x = x + self.cbow(x)
            return x + self.mlpf(x)

    class BoW(nn.Module):
        def __init__(self, config: ModelConfig) -> None:
            super().__init__()
            self.block_size = config.block_size
            self.wte = nn.Embedding(config.vocab_size, config.n_embd)
            self.wpe = nn.Embedding(config.block_size, config.n_embd)
            self.context_block = BoWBlock(config)
            self.lm_head = nn.Linear(config.n_embd, config.vocab_size)

        def forward(self, idx: Any) -> Any:
            b, t = idx.size()
            pos = torch.arange(0, t, dtype=torch.long, device=idx.device).unsqueeze(0)
            return self.lm_head(self.context_block(self.wte(idx) + self.wpe(pos)))

    class GRUCell(nn.Module):
        def __init__(self, config: ModelConfig) -> None:
            super().__init__()
            n = config.n_embd + config.n_embd2
            self.xh_to_z = nn.Linear(n, config.n_embd2)
            self.xh_to_r = nn.Linear(n, config.n_embd2)
            self.xh_to_hbar = nn.Linear(n, config.n_embd2)

        def forward(self, xt: Any, hprev: Any) -> Any:
            xh = torch.cat([xt, hprev], dim=1)
            r = F.sigmoid(self.xh_to_r(xh))
            xhr = torch.cat([xt, r * hprev], dim=1)
            hbar = F.tanh(self.xh_to_hbar(xhr))
            z = F.sigmoid(self.xh_to_z(xh))
            return (1 - z) * hprev + z * hbar

    class RNN(nn.Module):
        def __init__(self, config: ModelConfig) -> None:
            super().__init__()
            self.block_size = config.block_size
            self.start = nn.Parameter(torch.zeros(1, config.n_embd2))
            self.wte = nn.Embedding(config.vocab_size, config.n_embd)
            self.cell = GRUCell(config)
            self.lm_head = nn.Linear(config.n_embd2, config.vocab_size)

        def forward(self, idx: Any) -> Any:
            b, t = idx.size()
            emb = self.wte(idx)
            hprev = self.start.expand((b, -1))
            hiddens = []
            for i in range(t):
                hprev = self.cell(emb[:, i, :], hprev)
                hiddens.append(hprev)
            return self.lm_head(torch.stack(hiddens, 1))

    class MLP(nn.Module):
        def __init__(self, config: ModelConfig) -> None:
            super().__init__()
            self.block_size, self.vocab_size = config.block_size, config.vocab_size
            self.wte = nn.Embedding(config.vocab_size + 1, config.n_embd)
            self.mlp = nn.Sequential(nn.Linear(self.block_size * config.n_embd, config.n_embd2),
                                     nn.Tanh(), nn.Linear(config.n_embd2, self.vocab_size))

        def forward(self, idx: Any) -> Any:
            embs = []
            for _ in range(self.block_size):
                embs.append(self.wte(idx))
                idx = torch.roll(idx, 1, 1)
                idx[:, 0] = self.vocab_size
            return self.mlp(torch.cat(embs, -1))

    chars = sorted(set("".join(NAMES)))
    dataset = CharDataset(NAMES, chars, max(len(w) for w in NAMES))
    config = ModelConfig(block_size=dataset.get_output_length(),
                         vocab_size=dataset.get_vocab_size())
    model = {"gru": RNN, "mlp": MLP, "bow": BoW}[kind](config)
    w0 = start(lib, weights, model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3, weight_decay=0.01,
                                  betas=(0.9, 0.99), eps=1e-8)
    torch.manual_seed(3407)  # the loader's draws: the same indices in both libraries
    batch_loader = InfiniteDataLoader(dataset, batch_size=4, num_workers=0)

    def train_step(X: Any, Y: Any) -> Any:
        logits = model(X)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), Y.view(-1), ignore_index=-1)
        model.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return loss

    step = wrap(train_step)
    values = []
    for _ in range(3):
        X, Y = batch_loader.next()
        values.append(floats(step(X, Y), X.sum()))
    with torch.no_grad():  # generate(do_sample=False): the most likely next characters
        idx = torch.zeros(2, 1, dtype=torch.long)
        for _ in range(3):
            logits = model(idx)[:, -1, :]
            _, idx_next = torch.topk(F.softmax(logits, dim=-1), k=1, dim=-1)
            idx = torch.cat((idx, idx_next), dim=1)
    return Run(w0, values, numpy_state(model), {"tokens": idx.tolist()})


# pytorch/examples time_sequence_prediction: two LSTMCells in float64, LBFGS with a closure

def time_sequence(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step]
                  ) -> Run:
    torch, nn, optim = lib, lib.nn, lib.optim
    hidden = 6

    class Sequence(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm1 = nn.LSTMCell(1, hidden)
            self.lstm2 = nn.LSTMCell(hidden, hidden)
            self.linear = nn.Linear(hidden, 1)

        def forward(self, input: Any, future: int = 0) -> Any:
            outputs = []
            h_t = torch.zeros(input.size(0), hidden, dtype=torch.double)
            c_t = torch.zeros(input.size(0), hidden, dtype=torch.double)
            h_t2 = torch.zeros(input.size(0), hidden, dtype=torch.double)
            c_t2 = torch.zeros(input.size(0), hidden, dtype=torch.double)
            for input_t in input.split(1, dim=1):
                h_t, c_t = self.lstm1(input_t, (h_t, c_t))
                h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
                output = self.linear(h_t2)
                outputs += [output]
            for _ in range(future):
                h_t, c_t = self.lstm1(output, (h_t, c_t))
                h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
                output = self.linear(h_t2)
                outputs += [output]
            return torch.cat(outputs, dim=1)

    rng = np.random.default_rng(3)
    data = np.sin(np.arange(4 * 7).reshape(4, 7) / 3.0 + rng.uniform(0, 3, (4, 1)))
    input, target = torch.from_numpy(data[2:, :-1]), torch.from_numpy(data[2:, 1:])
    test_input, test_target = torch.from_numpy(data[:2, :-1]), torch.from_numpy(data[:2, 1:])
    seq = Sequence()
    seq.double()
    w0 = start(lib, weights, seq)
    criterion = nn.MSELoss()
    optimizer = optim.LBFGS(seq.parameters(), lr=0.8, max_iter=6)

    def train_step() -> Any:
        def closure() -> Any:
            optimizer.zero_grad()
            loss = criterion(seq(input), target)
            loss.backward()
            return loss
        return optimizer.step(closure)

    step = wrap(train_step)
    values = []
    for _ in range(2):
        loss = step()
        with torch.no_grad():
            future = 3
            pred = seq(test_input, future=future)
            values.append(floats(loss, criterion(pred[:, :-future], test_target)))
    return Run(w0, values, numpy_state(seq))


# pytorch/examples regression/main.py: polynomial features, smooth_l1_loss, a manual SGD
# step through p.data, and the learned polynomial printed with '{:+.2f}'.format(w)

def regression(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step]) -> Run:
    torch, F = lib, lib.nn.functional
    POLY_DEGREE = 4
    rng = np.random.default_rng(4)
    W_target = torch.from_numpy(rng.standard_normal((POLY_DEGREE, 1)).astype(np.float32)) * 5
    b_target = torch.from_numpy(rng.standard_normal(1).astype(np.float32)) * 5

    def make_features(x: Any) -> Any:
        x = x.unsqueeze(1)
        return torch.cat([x ** i for i in range(1, POLY_DEGREE + 1)], 1)

    def f(x: Any) -> Any:
        return x.mm(W_target) + b_target.item()

    def poly_desc(W: Any, b: Any) -> str:
        result = "y = "
        for i, w in enumerate(W):
            result += "{:+.2f} x^{} ".format(w, i + 1)
        result += "{:+.2f}".format(b[0])
        return result

    fc = torch.nn.Linear(W_target.size(0), 1)
    w0 = start(lib, weights, fc)

    def train_step(batch_x: Any, batch_y: Any) -> Any:
        fc.zero_grad()
        output = F.smooth_l1_loss(fc(batch_x), batch_y)
        output.backward()
        for param in fc.parameters():
            param.data.add_(-0.1 * param.grad)
        return output

    step = wrap(train_step)
    values = []
    for _ in range(4):
        batch_x = make_features(torch.from_numpy(rng.standard_normal(8).astype(np.float32)))
        values.append(floats(step(batch_x, f(batch_x))))
    return Run(w0, values, numpy_state(fc),
               {"learned": poly_desc(fc.weight.view(-1), fc.bias),
                "actual": poly_desc(W_target.view(-1), b_target)})


# pytorch/examples mnist/main.py: Conv2d, max_pool2d, Dropout (PyTorch's draws from the same
# seed), log_softmax and nll_loss, Adadelta with StepLR, the test loop's sum and accuracy

def mnist(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step]) -> Run:
    torch, nn, F, optim = lib, lib.nn, lib.nn.functional, lib.optim

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(1, 4, 3, 1)
            self.conv2 = nn.Conv2d(4, 8, 3, 1)
            self.dropout1 = nn.Dropout(0.25)
            self.dropout2 = nn.Dropout(0.5)
            self.fc1 = nn.Linear(8 * 4 * 4, 16)
            self.fc2 = nn.Linear(16, 10)

        def forward(self, x: Any) -> Any:
            x = F.relu(self.conv2(F.relu(self.conv1(x))))
            x = self.dropout1(F.max_pool2d(x, 2))
            x = torch.flatten(x, 1)
            x = self.dropout2(F.relu(self.fc1(x)))
            return F.log_softmax(self.fc2(x), dim=1)

    model = Net()
    w0 = start(lib, weights, model)
    optimizer = optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)

    def train_step(data: Any, target: Any) -> Any:
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()
        return loss

    step = wrap(train_step)
    torch.manual_seed(1)  # the dropout masks: PyTorch's, drawn from the same seed
    values = []
    for epoch in range(2):
        model.train()
        for i in range(2):
            r = np.random.default_rng(10 * epoch + i)
            data = torch.from_numpy(r.random((3, 1, 12, 12)).astype(np.float32))
            values.append(floats(step(data, torch.from_numpy(r.integers(0, 10, 3)))))
        model.eval()
        with torch.no_grad():
            r = np.random.default_rng(99)
            data = torch.from_numpy(r.random((5, 1, 12, 12)).astype(np.float32))
            target = torch.from_numpy(r.integers(0, 10, 5))
            output = model(data)
            test_loss = F.nll_loss(output, target, reduction="sum").item()
            pred = output.argmax(dim=1, keepdim=True)
            correct = pred.eq(target.view_as(pred)).sum().item()
        scheduler.step()
        values.append([test_loss, correct, optimizer.param_groups[0]["lr"]])
    return Run(w0, values, numpy_state(model))


# pytorch/examples mnist_forward_forward/main.py: labels overlaid with x_[range(n), y] = ...,
# negative labels drawn with randint, nn.Linear subclasses that override train() and own an
# Adam each, trained layer by layer

def forward_forward(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step]
                    ) -> Run:
    torch, nn = lib, lib.nn
    lr, threshold, epochs = 0.03, 2.0, 4

    def get_y_neg(y: Any) -> Any:
        y_neg = y.clone()
        for idx, y_samp in enumerate(y):
            allowed_indices = list(range(10))
            allowed_indices.remove(y_samp.item())
            y_neg[idx] = torch.tensor(allowed_indices)[
                torch.randint(len(allowed_indices), size=(1,))].item()
        return y_neg

    def overlay_y_on_x(x: Any, y: Any, classes: int = 10) -> Any:
        x_ = x.clone()
        x_[:, :classes] *= 0.0
        x_[range(x.shape[0]), y] = x.max()
        return x_

    class Layer(nn.Linear):
        def __init__(self, in_features: int, out_features: int) -> None:
            super().__init__(in_features, out_features)
            self.relu = torch.nn.ReLU()
            self.opt = torch.optim.Adam(self.parameters(), lr=lr)
            self.step = wrap(self.train_step)

        def forward(self, x: Any) -> Any:
            x_direction = x / (x.norm(2, 1, keepdim=True) + 1e-4)
            return self.relu(torch.mm(x_direction, self.weight.T) + self.bias.unsqueeze(0))

        def train_step(self, x_pos: Any, x_neg: Any) -> Any:
            g_pos = self.forward(x_pos).pow(2).mean(1)
            g_neg = self.forward(x_neg).pow(2).mean(1)
            loss = torch.log1p(torch.exp(torch.cat([-g_pos + threshold,
                                                    g_neg - threshold]))).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            return loss

        def train(self, x_pos: Any, x_neg: Any) -> tuple[Any, Any]:  # type: ignore[override]
            for _ in range(epochs):
                values.append(floats(self.step(x_pos, x_neg)))
            return self.forward(x_pos).detach(), self.forward(x_neg).detach()

    class Net(torch.nn.Module):
        def __init__(self, dims: list[int]) -> None:
            super().__init__()
            self.layers = [Layer(dims[d], dims[d + 1]) for d in range(len(dims) - 1)]

        def predict(self, x: Any) -> Any:
            goodness_per_label = []
            for label in range(10):
                h = overlay_y_on_x(x, label)
                goodness = []
                for layer in self.layers:
                    h = layer(h)
                    goodness = goodness + [h.pow(2).mean(1)]
                goodness_per_label += [sum(goodness).unsqueeze(1)]
            return torch.cat(goodness_per_label, 1).argmax(1)

        def train(self, x_pos: Any, x_neg: Any) -> None:  # type: ignore[override]
            h_pos, h_neg = x_pos, x_neg
            for layer in self.layers:
                h_pos, h_neg = layer.train(h_pos, h_neg)

    values: list[list[float]] = []
    net = Net([20, 8, 8])
    w0 = start(lib, weights, *net.layers)
    r = np.random.default_rng(5)
    x = torch.from_numpy(r.random((6, 20)).astype(np.float32))
    y = torch.from_numpy(r.integers(0, 10, 6))
    torch.manual_seed(5)
    y_neg = get_y_neg(y)
    net.train(overlay_y_on_x(x, y), overlay_y_on_x(x, y_neg))
    return Run(w0, values, numpy_state(*net.layers),
               {"y_neg": y_neg.tolist(), "predicted": net.predict(x).tolist()})


SCRIPTS: dict[str, Callable[..., Run]] = {
    "nanogpt": nanogpt,
    "nanogpt_no_bias_no_flash": lambda *a: nanogpt(*a, bias=False, flash=False),
    "dcgan": dcgan,
    "wlm_lstm": word_language_model,
    "wlm_gru_optimizer": lambda *a: word_language_model(*a, rnn_type="GRU", use_optimizer=True),
    "wlm_rnn_relu": lambda *a: word_language_model(*a, rnn_type="RNN_RELU"),
    "wlm_transformer": lambda *a: word_language_model(*a, rnn_type="Transformer"),
    "makemore_gru": makemore,
    "makemore_mlp": lambda *a: makemore(*a, kind="mlp"),
    "makemore_bow": lambda *a: makemore(*a, kind="bow"),
    "time_sequence": time_sequence,
    "regression": regression,
    "mnist": mnist,
    "forward_forward": forward_forward,
}


def assert_runs_equal(got: Run, want: Run, rtol: float, atol: float) -> None:
    assert len(got.values) == len(want.values)
    for i, (g, w) in enumerate(zip(got.values, want.values)):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"step {i}")
    assert got.final.keys() == want.final.keys()
    for k, v in want.final.items():
        np.testing.assert_allclose(got.final[k], v, rtol=10 * rtol, atol=10 * atol, err_msg=k)
    assert got.extra == want.extra


@pytest.fixture(scope="module")
def torch_one_thread() -> Iterator[ModuleType]:
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield torch
    torch.set_num_threads(threads)


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_ported_script_equals_pytorch(name: str, torch_one_thread: ModuleType) -> None:
    """From PyTorch's initial weights (seed 0), the same losses, logged values, final
    weights and generated tokens."""
    torch_one_thread.manual_seed(0)
    want = SCRIPTS[name](torch_one_thread, None, as_is)
    rt.manual_seed(0)
    got = SCRIPTS[name](rt, want.weights, as_is)
    assert_runs_equal(got, want, rtol=1e-4, atol=1e-6)


def test_random_sampler_with_replacement_starts_at_once() -> None:
    """makemore's InfiniteDataLoader: ``RandomSampler(replacement=True,
    num_samples=int(1e10))``; its first index comes at once (it took 5 s and 2.5 GB), and
    its draws are PyTorch's."""
    torch = pytest.importorskip("torch")
    firsts = []
    for lib in (torch, rt):
        lib.manual_seed(5)
        sampler = lib.utils.data.RandomSampler(range(10), replacement=True,
                                               num_samples=int(1e10))
        began = time.perf_counter()
        it = iter(sampler)
        firsts.append([next(it) for _ in range(40)])
        assert time.perf_counter() - began < 0.5
    assert firsts[1] == firsts[0]


@pytest.mark.parametrize("spec", ["", ".3f", ">9.2e", "+.1f"])
def test_a_0d_tensor_formats_as_its_number(spec: str) -> None:
    """``f"{loss:.4f}"`` and regression's ``'{:+.2f}'.format(w)`` (w a 0-d tensor requiring
    grad): the number formatted, as PyTorch's Tensor.__format__; others as objects."""
    torch = pytest.importorskip("torch")
    for value in (1.25, -3):
        want = format(torch.tensor(value, requires_grad=isinstance(value, float)) * 2, spec)
        assert format(rt.tensor(value, requires_grad=isinstance(value, float)) * 2, spec) \
            == want
    with pytest.raises(TypeError, match="unsupported format string passed to Tensor"):
        format(rt.tensor([1.5]), ".2f")
    with pytest.raises(TypeError, match="unsupported format string passed to Parameter"):
        format(rt.nn.Parameter(rt.tensor(1.5)), ".2f")
    assert format(rt.tensor([1.5]), "") == str(rt.tensor([1.5]))


@pytest.mark.parametrize("data", ["[t1]", "[[t1], [t0]]", "[t0, 2.5]", "[t64, 1]", "[t2]",
                                  "[t2, t2]", "(t0, t0)"])
def test_tensors_in_a_list_are_numbers(data: str) -> None:
    """actor_critic's ``torch.tensor([R])`` with R a tensor: a tensor inside a list is read
    as a number (one of shape (1,) too: ``tensor([t1])`` is of shape (1,), it was (1, 1)), and
    one of more elements is refused (it was stacked)."""
    torch = pytest.importorskip("torch")
    results = []
    for lib in (torch, rt):
        env = {"t0": lib.tensor(1), "t1": lib.tensor([1.5]), "t2": lib.ones(2),
               "t64": lib.tensor(1.5, dtype=lib.float64)}
        try:
            t = lib.tensor(eval(data, env))
            results.append((tuple(t.shape), str(t.dtype).split(".")[1], t.tolist()))
        except ValueError as e:
            results.append(("ValueError", str(e)))
    assert results[1] == results[0]


@pytest.mark.parametrize("key", ["range(3)", "(range(3), [0, 2, 1])", "(slice(None), range(0, 4, 2))",
                                 "range(1, 1)", "(range(2), np.array([3, 0]))",
                                 "((0, 2), slice(None))", "(Ellipsis, (1, 3))",
                                 "((True, False, True),)", "(deque([2, 0]),)"])
def test_a_sequence_in_the_key_indexes_as_a_list(key: str) -> None:
    """forward_forward's ``x_[range(x.shape[0]), y] = x.max()``: a range, a tuple inside the
    key or another sequence is a sequence of indices, read and written (each raised
    IndexTypeError)."""
    torch = pytest.importorskip("torch")
    results = []
    for lib in (torch, rt):
        x = lib.arange(12.0).view(3, 4)
        k = eval(key, {"np": np, "deque": deque})
        got = x[k].numpy().copy()
        x[k] = -1.0
        results.append((got, x.numpy()))
    for want, got in zip(results[0], results[1]):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("args", ["2, 3", "0", "5", "", "rt_or_torch.Size([2, 3])", "[1.5, 2.0]",
                                  "2, 3, device='cpu'"])
def test_legacy_tensor_constructor(args: str) -> None:
    """``nn.Parameter(torch.Tensor(out, in))`` in older scripts (gcn's, many a custom layer):
    sizes make a float tensor of that shape; rt.Tensor(2, 3) raised "unsupported dtype 3" and
    rt.Tensor(5) was tensor(5), 0-d and int64."""
    torch = pytest.importorskip("torch")
    made = []
    for lib in (torch, rt):
        t = eval(f"lib.Tensor({args})", {"lib": lib, "rt_or_torch": lib})
        made.append((tuple(t.shape), str(t.dtype).split(".")[1], type(t).__name__))
    assert made[1] == made[0]
    with pytest.raises(RuntimeError, match=r"negative dimension -1: \[-1\]"):
        rt.Tensor(-1)
