"""Tutorial training scripts ported from PyTorch by changing the import: each script is written
once against a library (``torch`` or ``runtime``), starts from the same weights (copied through
numpy) and data, and its losses after a few steps equal PyTorch's. Scripts draw no random
numbers (dropout 0, noise passed in), so the two libraries' generators need not agree; the
compiled path runs the same scripts in tests/planner/test_scripts_compiled.py."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import runtime as rt

STEPS = 5
Weights = dict[str, np.ndarray]
Step = Callable[..., Any]


@dataclass
class Run:
    """What a script leaves: the weights it started from, a loss per step and values its
    evaluation computed (compared too)."""

    weights: Weights
    losses: list[float]
    extra: dict[str, Any] = field(default_factory=dict)


def numpy_state(model: Any) -> Weights:
    return {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}


def start(lib: ModuleType, model: Any, weights: Weights | None) -> Weights:
    """The weights ``model`` starts from: its own (the reference run) or ``weights``."""
    if weights is not None:
        model.load_state_dict({k: lib.from_numpy(v.copy()) for k, v in weights.items()})
    return numpy_state(model)


def save_and_load(lib: ModuleType, model: Any, tmp: Path) -> None:
    """The checkpoint round trip a script ends with: save, load, load_state_dict."""
    path = tmp / f"{type(model).__name__}.pt"
    lib.save(model.state_dict(), path)
    before = numpy_state(model)
    model.load_state_dict(lib.load(path))
    after = numpy_state(model)
    assert before.keys() == after.keys()
    for k in before:
        np.testing.assert_array_equal(before[k], after[k], err_msg=k)


def batches(seed: int, steps: int, make: Callable[[np.random.Generator], tuple[Any, ...]]
            ) -> list[tuple[Any, ...]]:
    rng = np.random.default_rng(seed)
    return [make(rng) for _ in range(steps)]


def tensors(lib: ModuleType, arrays: tuple[Any, ...]) -> list[Any]:
    return [lib.from_numpy(a) if isinstance(a, np.ndarray) else a for a in arrays]


# ---- nanoGPT: hand-written causal attention or F.scaled_dot_product_attention --------------

GPT_V, GPT_T, GPT_C, GPT_H = 16, 6, 8, 2


def gpt(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step], tmp: Path,
        sdpa: bool = False) -> Run:
    nn, F = lib.nn, lib.nn.functional

    class CausalSelfAttention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.c_attn = nn.Linear(GPT_C, 3 * GPT_C)
            self.c_proj = nn.Linear(GPT_C, GPT_C)
            self.attn_dropout = nn.Dropout(0.0)
            self.register_buffer("bias", lib.tril(lib.ones(GPT_T, GPT_T))
                                 .view(1, 1, GPT_T, GPT_T))

        def forward(self, x: Any) -> Any:
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(GPT_C, dim=2)
            q, k, v = (z.view(B, T, GPT_H, C // GPT_H).transpose(1, 2) for z in (q, k, v))
            if sdpa:
                y = F.scaled_dot_product_attention(q, k, v, dropout_p=0.0, is_causal=True)
            else:
                att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
                att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
                y = self.attn_dropout(F.softmax(att, dim=-1)) @ v
            return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(GPT_C), nn.LayerNorm(GPT_C)
            self.attn = CausalSelfAttention()
            self.mlp = nn.Sequential(nn.Linear(GPT_C, 4 * GPT_C), nn.GELU(approximate="tanh"),
                                     nn.Linear(4 * GPT_C, GPT_C))

        def forward(self, x: Any) -> Any:
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(GPT_V, GPT_C), wpe=nn.Embedding(GPT_T, GPT_C),
                h=nn.ModuleList([Block() for _ in range(2)]), ln_f=nn.LayerNorm(GPT_C)))
            self.lm_head = nn.Linear(GPT_C, GPT_V, bias=False)
            self.transformer.wte.weight = self.lm_head.weight  # weight tying
            self.apply(self._init_weights)

        def _init_weights(self, module: Any) -> None:
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)

        def forward(self, idx: Any, targets: Any) -> Any:
            pos = lib.arange(0, idx.size(1), dtype=lib.long)
            x = self.transformer.wte(idx) + self.transformer.wpe(pos)
            for block in self.transformer.h:
                x = block(x)
            logits = self.lm_head(self.transformer.ln_f(x))
            return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                   ignore_index=-1)

    model = GPT()
    w0 = start(lib, model, weights)
    params = dict(model.named_parameters())
    assert len(params) == len(list(model.parameters()))  # the tied weight once
    groups = [{"params": [p for p in params.values() if p.dim() >= 2], "weight_decay": 0.1},
              {"params": [p for p in params.values() if p.dim() < 2], "weight_decay": 0.0}]
    opt = lib.optim.AdamW(groups, lr=1e-2, betas=(0.9, 0.95))

    def lr_lambda(it: int) -> float:  # linear warmup, then cosine decay to a tenth
        if it < 2:
            return (it + 1) / 2
        return 0.1 + 0.45 * (1 + math.cos(math.pi * (it - 2) / (STEPS - 2)))
    sched = lib.optim.lr_scheduler.LambdaLR(opt, lr_lambda)

    def step(x0: Any, y0: Any, x1: Any, y1: Any) -> tuple[Any, Any]:
        model.train()
        total = 0.0
        for x, y in ((x0, y0), (x1, y1)):  # gradient accumulation over two micro-batches
            loss = model(x, y) / 2
            loss.backward()
            total = total + loss.detach()
        norm = lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return total, norm

    step = wrap(step)
    losses = []
    for data in batches(0, STEPS, lambda r: tuple(r.integers(0, GPT_V, (4, 2, GPT_T)))):
        total, norm = step(*tensors(lib, data))
        sched.step()
        losses.append(float(total))
    model.eval()
    with lib.no_grad():
        evaluation = model(*tensors(lib, data[:2])).item()
    save_and_load(lib, model, tmp)
    return Run(w0, losses, {"eval": evaluation, "norm": float(norm),
                            "lr": opt.param_groups[0]["lr"]})


# ---- nn.TransformerEncoder text classifier with a TransformerDecoderLayer ------------------

TF_V, TF_T, TF_D = 12, 6, 8


def transformer(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
                tmp: Path, norm_first: bool = False) -> Run:
    nn = lib.nn

    class Classifier(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(TF_V, TF_D, padding_idx=0)
            layer = nn.TransformerEncoderLayer(TF_D, nhead=2, dim_feedforward=16, dropout=0.0,
                                               batch_first=True, norm_first=norm_first)
            self.encoder = nn.TransformerEncoder(layer, num_layers=2,
                                                 enable_nested_tensor=False)
            self.decoder = nn.TransformerDecoderLayer(TF_D, nhead=2, dim_feedforward=16,
                                                      dropout=0.0, batch_first=True,
                                                      norm_first=norm_first)
            self.head = nn.Linear(TF_D, 3)

        def forward(self, src: Any, pad: Any, tgt: Any) -> Any:
            h = self.encoder(self.emb(src), src_key_padding_mask=pad)
            mask = nn.Transformer.generate_square_subsequent_mask(tgt.size(1))
            out = self.decoder(self.emb(tgt), h, tgt_mask=mask, tgt_is_causal=True,
                               memory_key_padding_mask=pad)
            keep = (~pad).unsqueeze(-1).float()
            return self.head((h * keep).sum(1) / keep.sum(1) + out.mean(1))

    model = Classifier()
    w0 = start(lib, model, weights)
    opt = lib.optim.Adam(model.parameters(), lr=1e-2)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)

    def step(src: Any, pad: Any, tgt: Any, y: Any) -> Any:
        opt.zero_grad()
        loss = criterion(model(src, pad, tgt), y)
        loss.backward()
        opt.step()
        return loss

    def data(r: np.random.Generator) -> tuple[np.ndarray, ...]:
        src = r.integers(1, TF_V, (3, TF_T))
        pad = np.arange(TF_T) >= r.integers(2, TF_T + 1, (3, 1))
        src[pad] = 0
        return src, pad, r.integers(1, TF_V, (3, 4)), r.integers(0, 3, 3)

    step = wrap(step)
    model.train()
    losses = [step(*tensors(lib, d)).item() for d in batches(1, STEPS, data)]
    model.eval()
    with lib.no_grad():
        logits = model(*tensors(lib, batches(2, 1, data)[0][:3]))
    save_and_load(lib, model, tmp)
    return Run(w0, losses, {"eval": logits.numpy()})


# ---- a small ResNet: SGD nesterov, MultiStepLR, an accuracy pass under no_grad -------------

def resnet(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
           tmp: Path) -> Run:
    nn, F = lib.nn, lib.nn.functional

    class BasicBlock(nn.Module):
        def __init__(self, inp: int, out: int, stride: int = 1) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(inp, out, 3, stride=stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(out)
            self.conv2 = nn.Conv2d(out, out, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(out)
            self.shortcut = nn.Sequential()
            if stride != 1 or inp != out:
                self.shortcut = nn.Sequential(nn.Conv2d(inp, out, 1, stride=stride, bias=False),
                                              nn.BatchNorm2d(out))

        def forward(self, x: Any) -> Any:
            out = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
            out += self.shortcut(x)
            return F.relu(out)

    class ResNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1, bias=False),
                                      nn.BatchNorm2d(4), nn.ReLU(inplace=True))
            self.layers = nn.Sequential(BasicBlock(4, 4), BasicBlock(4, 8, 2))
            self.pool = nn.AdaptiveAvgPool2d((1, 1))
            self.dropout = nn.Dropout(0.0)
            self.fc = nn.Linear(8, 3)
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

        def forward(self, x: Any) -> Any:
            x = self.pool(self.layers(self.stem(x)))
            return self.fc(self.dropout(lib.flatten(x, 1)))

    model = ResNet()
    w0 = start(lib, model, weights)
    opt = lib.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True,
                        weight_decay=5e-4)
    sched = lib.optim.lr_scheduler.MultiStepLR(opt, milestones=[2, 4], gamma=0.1)
    criterion = nn.CrossEntropyLoss()

    def step(x: Any, y: Any) -> Any:
        opt.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        opt.step()
        return loss

    def data(r: np.random.Generator) -> tuple[np.ndarray, ...]:
        return r.standard_normal((4, 3, 6, 6)).astype(np.float32), r.integers(0, 3, 4)

    step = wrap(step)
    model.train()
    losses = []
    for d in batches(2, STEPS, data):
        losses.append(step(*tensors(lib, d)).item())
        sched.step()
    model.eval()
    correct = 0
    with lib.no_grad():
        for x, y in (tensors(lib, d) for d in batches(3, 2, data)):
            _, predicted = model(x).max(1)
            correct += predicted.eq(y).sum().item()
    save_and_load(lib, model, tmp)
    state = model.state_dict()
    return Run(w0, losses, {"correct": correct, "lr": opt.param_groups[0]["lr"],
                            "running_var": state["stem.1.running_var"].numpy(),
                            "batches": state["stem.1.num_batches_tracked"].item()})


# ---- LSTM and GRU language models: truncated BPTT, the update written by hand --------------

RNN_V, RNN_T, RNN_B = 12, 5, 3


def rnn_lm(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step], tmp: Path,
           kind: str = "LSTM") -> Run:
    nn, F = lib.nn, lib.nn.functional

    class RNNModel(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.drop = nn.Dropout(0.0)
            self.encoder = nn.Embedding(RNN_V, 6)
            self.rnn = getattr(nn, kind)(6, 8, num_layers=2, dropout=0.0, batch_first=True)
            self.decoder = nn.Linear(8, RNN_V)

        def forward(self, x: Any, hidden: Any) -> tuple[Any, Any]:
            output, hidden = self.rnn(self.drop(self.encoder(x)), hidden)
            decoded = self.decoder(self.drop(output))
            return F.log_softmax(decoded.view(-1, RNN_V), dim=1), hidden

        def init_hidden(self, bsz: int) -> Any:
            weight = next(self.parameters())
            h = weight.new_zeros(2, bsz, 8)
            return (h, weight.new_zeros(2, bsz, 8)) if kind == "LSTM" else h

    def repackage_hidden(h: Any) -> Any:
        return h.detach() if isinstance(h, lib.Tensor) else tuple(map(repackage_hidden, h))

    model = RNNModel()
    w0 = start(lib, model, weights)
    criterion = nn.NLLLoss()

    def step(x: Any, y: Any, hidden: Any) -> tuple[Any, Any]:
        model.zero_grad()
        output, hidden = model(x, hidden)
        loss = criterion(output, y)
        loss.backward()
        lib.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-2.0)
        return loss, hidden

    step = wrap(step)
    model.train()
    losses = []
    hidden = model.init_hidden(RNN_B)
    for (d,) in batches(3, STEPS, lambda r: (r.integers(0, RNN_V, (RNN_B, RNN_T + 1)),)):
        hidden = repackage_hidden(hidden)
        loss, hidden = step(lib.from_numpy(d[:, :-1]), lib.from_numpy(d[:, 1:].reshape(-1)),
                            hidden)
        losses.append(loss.item())
    save_and_load(lib, model, tmp)
    h = hidden[0] if kind == "LSTM" else hidden
    return Run(w0, losses, {"hidden": h.detach().numpy()})


# ---- a VAE: reparameterisation, KL term, BCE with logits ----------------------------------

VAE_D, VAE_Z = 12, 3


def vae(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step], tmp: Path,
        noise: bool = True) -> Run:
    """``noise``: eps comes with the batch (equal in both libraries); else randn_like draws
    it (seeded: equal between eager and compiled runs of one library)."""
    nn, F = lib.nn, lib.nn.functional

    class VAE(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = nn.Linear(VAE_D, 8)
            self.fc21, self.fc22 = nn.Linear(8, VAE_Z), nn.Linear(8, VAE_Z)
            self.fc3, self.fc4 = nn.Linear(VAE_Z, 8), nn.Linear(8, VAE_D)

        def forward(self, x: Any, eps: Any) -> tuple[Any, Any, Any]:
            h1 = F.relu(self.fc1(x.view(-1, VAE_D)))
            mu, logvar = self.fc21(h1), self.fc22(h1)
            std = lib.exp(0.5 * logvar)
            z = mu + (lib.randn_like(std) if eps is None else eps) * std
            return self.fc4(F.relu(self.fc3(z))), mu, logvar

    model = VAE()
    w0 = start(lib, model, weights)
    opt = lib.optim.Adam(model.parameters(), lr=1e-2)

    def step(x: Any, eps: Any) -> Any:
        opt.zero_grad()
        recon, mu, logvar = model(x, eps)
        bce = F.binary_cross_entropy_with_logits(recon, x.view(-1, VAE_D), reduction="sum")
        kld = -0.5 * lib.sum(1 + logvar - mu.pow(2) - logvar.exp())
        loss = bce + kld
        loss.backward()
        opt.step()
        return loss

    def data(r: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        return ((r.random((4, VAE_D)) > 0.5).astype(np.float32),
                r.standard_normal((4, VAE_Z)).astype(np.float32))

    step = wrap(step)
    lib.manual_seed(0)
    model.train()
    losses = [step(lib.from_numpy(x), lib.from_numpy(e) if noise else None).item()
              for x, e in batches(4, STEPS, data)]
    save_and_load(lib, model, tmp)
    return Run(w0, losses)


# ---- a GAN: two optimizers, D and G steps in one function, the fake batch detached --------

GAN_Z, GAN_D = 3, 4


def gan(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
        tmp: Path) -> Run:
    nn = lib.nn
    netG = nn.Sequential(nn.Linear(GAN_Z, 8), nn.BatchNorm1d(8), nn.ReLU(True),
                         nn.Linear(8, GAN_D), nn.Tanh())
    netD = nn.Sequential(nn.Linear(GAN_D, 8), nn.LeakyReLU(0.2, inplace=True), nn.Linear(8, 1),
                         nn.Sigmoid())
    both = nn.ModuleDict({"G": netG, "D": netD})
    w0 = start(lib, both, weights)
    criterion = nn.BCELoss()
    optD = lib.optim.Adam(netD.parameters(), lr=2e-3, betas=(0.5, 0.999))
    optG = lib.optim.Adam(netG.parameters(), lr=2e-3, betas=(0.5, 0.999))

    def step(real: Any, noise: Any) -> tuple[Any, Any]:
        netD.zero_grad()
        label = lib.full((real.size(0),), 1.0, dtype=real.dtype)
        errD_real = criterion(netD(real).view(-1), label)
        errD_real.backward()
        fake = netG(noise)
        label.fill_(0.0)
        errD_fake = criterion(netD(fake.detach()).view(-1), label)
        errD_fake.backward()
        optD.step()
        netG.zero_grad()
        label.fill_(1.0)
        errG = criterion(netD(fake).view(-1), label)
        errG.backward()
        optG.step()
        return errD_real + errD_fake, errG

    def data(r: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        return ((r.standard_normal((6, GAN_D)) * 0.5 + 1).astype(np.float32),
                r.standard_normal((6, GAN_Z)).astype(np.float32))

    step = wrap(step)
    both.train()
    losses = []
    for d in batches(5, STEPS, data):
        errD, errG = step(*tensors(lib, d))
        losses += [errD.item(), errG.item()]
    save_and_load(lib, both, tmp)
    return Run(w0, losses)


# ---- seq2seq: GRU encoder and decoder, teacher forcing, CrossEntropyLoss(ignore_index=0) --

S2S_V, S2S_T = 10, 4


def seq2seq(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
            tmp: Path) -> Run:
    nn = lib.nn

    class Seq2Seq(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.src_emb = nn.Embedding(S2S_V, 6, padding_idx=0)
            self.encoder = nn.GRU(6, 8, batch_first=True)
            self.tgt_emb = nn.Embedding(S2S_V, 6, padding_idx=0)
            self.decoder = nn.GRU(6 + 8, 8, batch_first=True)
            self.out = nn.Linear(8, S2S_V)

        def forward(self, src: Any, tgt: Any, teacher_forcing: bool) -> Any:
            enc_out, hidden = self.encoder(self.src_emb(src))
            context = enc_out.mean(dim=1, keepdim=True)
            dec_in = lib.ones(src.size(0), 1, dtype=lib.long)  # SOS
            logits = []
            for i in range(tgt.size(1)):
                emb = lib.relu(self.tgt_emb(dec_in))
                out, hidden = self.decoder(lib.cat([emb, context], dim=2), hidden)
                logits.append(self.out(out))
                if teacher_forcing:
                    dec_in = tgt[:, i].unsqueeze(1)
                else:
                    dec_in = logits[-1].topk(1)[1].squeeze(-1).detach()
            return lib.cat(logits, dim=1)

    model = Seq2Seq()
    w0 = start(lib, model, weights)
    opt = lib.optim.Adam(model.parameters(), lr=1e-2)
    criterion = nn.CrossEntropyLoss(ignore_index=0)

    def step(src: Any, tgt: Any, teacher_forcing: bool) -> Any:
        opt.zero_grad()
        logits = model(src, tgt, teacher_forcing)
        loss = criterion(logits.view(-1, S2S_V), tgt.view(-1))
        loss.backward()
        nn.utils.clip_grad_value_(model.parameters(), 1.0)
        opt.step()
        return loss

    def data(r: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        tgt = r.integers(2, S2S_V, (3, S2S_T))
        tgt[np.arange(S2S_T) >= r.integers(1, S2S_T + 1, (3, 1))] = 0
        return r.integers(2, S2S_V, (3, 5)), tgt

    step = wrap(step)
    model.train()
    losses = [step(*tensors(lib, d), i % 2 == 0).item()
              for i, d in enumerate(batches(6, STEPS, data))]
    save_and_load(lib, model, tmp)
    return Run(w0, losses)


# ---- a tabular MLP: DataLoader, Huber loss, ReduceLROnPlateau on a validation loss --------

def tabular(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step], tmp: Path,
            shuffle: bool = False) -> Run:
    """``shuffle``: a seeded generator shuffles (its order is the library's own)."""
    nn, F = lib.nn, lib.nn.functional
    data = import_module(f"{lib.__name__}.utils.data")
    model = nn.Sequential(nn.Linear(5, 8), nn.BatchNorm1d(8), nn.LeakyReLU(0.1), nn.Dropout(0.0),
                          nn.Linear(8, 1))
    w0 = start(lib, model, weights)
    r = np.random.default_rng(7)
    x = r.standard_normal((20, 5)).astype(np.float32)
    y = (x @ r.standard_normal((5, 1)) + 0.1).astype(np.float32)
    dataset = data.TensorDataset(lib.from_numpy(x), lib.from_numpy(y))
    loader = data.DataLoader(dataset, batch_size=8, shuffle=shuffle,
                             generator=lib.Generator().manual_seed(0))
    opt = lib.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=1e-2)
    sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=0)
    criterion = nn.HuberLoss(delta=1.0)

    def step(xb: Any, yb: Any) -> Any:
        opt.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        opt.step()
        return loss

    step = wrap(step)
    losses = []
    for _ in range(STEPS - 2):
        model.train()
        total = 0.0
        for xb, yb in loader:
            total += step(xb, yb).item() * xb.size(0)
        model.eval()
        with lib.no_grad():
            sched.step(F.huber_loss(model(dataset.tensors[0]), dataset.tensors[1]).item())
        losses.append(total / len(dataset))
    save_and_load(lib, model, tmp)
    return Run(w0, losses, {"lr": opt.param_groups[0]["lr"], "batches": len(loader)})


SCRIPTS: dict[str, Callable[..., Run]] = {
    "gpt": gpt,
    "gpt_sdpa": lambda *a: gpt(*a, sdpa=True),
    "transformer_post_norm": transformer,
    "transformer_pre_norm": lambda *a: transformer(*a, norm_first=True),
    "resnet": resnet,
    "lstm": rnn_lm,
    "gru": lambda *a: rnn_lm(*a, kind="GRU"),
    "vae": vae,
    "gan": gan,
    "seq2seq": seq2seq,
    "tabular": tabular,
}


def as_is(step: Step) -> Step:
    return step


def assert_runs_equal(got: Run, want: Run, rtol: float, atol: float) -> None:
    np.testing.assert_allclose(got.losses, want.losses, rtol=rtol, atol=atol)
    assert got.extra.keys() == want.extra.keys()
    for k, v in want.extra.items():
        np.testing.assert_allclose(got.extra[k], v, rtol=10 * rtol, atol=10 * atol, err_msg=k)


@pytest.fixture(scope="module")
def torch_one_thread() -> Iterator[ModuleType]:
    """PyTorch on one thread: these models are tiny, and its threads contend with the
    runtime's (a script took seconds, not tenths)."""
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield torch
    torch.set_num_threads(threads)


def reference(torch: ModuleType, name: str, tmp: Path) -> Run:
    """The script run by PyTorch, from weights torch initialised under seed 0."""
    torch.manual_seed(0)
    return SCRIPTS[name](torch, None, as_is, tmp)


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_script_equals_pytorch(name: str, tmp_path: Path, torch_one_thread: ModuleType
                               ) -> None:
    want = reference(torch_one_thread, name, tmp_path)
    got = SCRIPTS[name](rt, want.weights, as_is, tmp_path)
    assert_runs_equal(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(("name", "vocab"), [("gpt", GPT_V), ("lstm", RNN_V), ("gru", RNN_V)])
def test_language_model_starts_uniform(name: str, vocab: int, tmp_path: Path) -> None:
    """Without PyTorch: an untrained language model predicts about uniformly (its first loss
    is near log(vocab): from seed 0, PyTorch's initial weights, lstm's is 2.63 for log(12) =
    2.48), and its losses stay finite."""
    rt.manual_seed(0)
    losses = SCRIPTS[name](rt, None, as_is, tmp_path).losses
    assert abs(losses[0] - math.log(vocab)) < 0.25
    assert np.isfinite(losses).all()


def test_tabular_trains(tmp_path: Path) -> None:
    rt.manual_seed(0)
    losses = tabular(rt, None, as_is, tmp_path).losses
    assert losses[0] > losses[1] > losses[2]


def test_shuffled_loader_is_seeded(tmp_path: Path) -> None:
    """A DataLoader shuffled by a seeded generator gives the same run twice."""
    rt.manual_seed(0)
    first = tabular(rt, None, as_is, tmp_path, shuffle=True)
    again = tabular(rt, first.weights, as_is, tmp_path, shuffle=True)
    assert first.losses == again.losses
    assert first.extra == {"lr": again.extra["lr"], "batches": 3}  # 20 rows by 8
