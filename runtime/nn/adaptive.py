"""AdaptiveLogSoftmaxWithLoss (Grave et al.'s efficient softmax approximation), as PyTorch's:
a head over the frequent classes and one entry per cluster of rarer ones, each cluster a
low-rank tail; its forward gives each target's log-probability and the mean loss."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from runtime.nn.container import ModuleList, Sequential
from runtime.nn.linear import Linear
from runtime.nn.module import Module
from runtime.ops import composite as C
from runtime.ops import functional as F
from runtime.tensor import Tensor


class _ASMoutput(NamedTuple):
    output: Tensor
    loss: Tensor


class AdaptiveLogSoftmaxWithLoss(Module):
    def __init__(self, in_features: int, n_classes: int, cutoffs: Sequence[int],
                 div_value: float = 4.0, head_bias: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted "
                             "in an increasing order, where each value is between 1 and "
                             "n_classes-1")
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = [*cutoffs, n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, device=device,
                           dtype=dtype)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(
                Linear(in_features, hsz, bias=False, device=device, dtype=dtype),
                Linear(hsz, osz, bias=False, device=device, dtype=dtype)))

    def reset_parameters(self) -> None:
        self.head.reset_parameters()
        for i2h, h2o in self.tail:  # type: ignore[misc]
            i2h.reset_parameters()
            h2o.reset_parameters()

    def _check(self, input_: Tensor, target_: Tensor) -> None:
        if target_.ndim == 1:
            if input_.shape[0] != target_.shape[0]:
                raise RuntimeError("Input and target should have the same size in the batch "
                                   "dimension.")
            if input_.ndim != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found "
                                   f"inputs with size torch.Size({list(input_.shape)})")
        elif target_.ndim == 0:
            if input_.ndim != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found "
                                   f"inputs with size torch.Size({list(input_.shape)})")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")

    def forward(self, input_: Tensor, target_: Tensor) -> _ASMoutput:
        """Each target's log-probability (the head's, plus its cluster's within it) and
        their negated mean; the tails run on their clusters' rows only, as PyTorch's."""
        from runtime.creation import tensor
        from runtime.ops.extra_ops import index_add
        from runtime.ops.tensor_ops import gather, index_select

        self._check(input_, target_)
        batched = target_.ndim > 0
        input = input_ if batched else F.unsqueeze(input_, 0)  # noqa: A001
        target = target_ if batched else F.unsqueeze(target_, 0)
        labels = np.asarray(target.detach().numpy())
        if labels.size and (labels.min() < 0 or labels.max() > self.n_classes - 1):
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but "
                               f"values in range [{labels.min()}, {labels.max()}] were found. ")
        head_logprob = C.log_softmax(self.head(input), 1)
        cluster = np.searchsorted(np.asarray(self.cutoffs), labels, side="right")
        column = np.where(cluster == 0, labels, self.shortlist_size + cluster - 1)
        output = F.squeeze(gather(head_logprob, 1, tensor(column[:, None],
                                                           device=input.device)), 1)
        for i, tail in enumerate(self.tail):
            rows = np.flatnonzero(cluster == i + 1)
            if not rows.size:
                continue
            picked = index_select(input, 0, tensor(rows, device=input.device))
            local = C.log_softmax(tail(picked), 1)
            relative = tensor((labels[rows] - self.cutoffs[i])[:, None], device=input.device)
            local = F.squeeze(gather(local, 1, relative), 1)
            output = index_add(output, 0, tensor(rows, device=input.device), local)
        loss = F.mean(F.neg(output))
        return _ASMoutput(output if batched else F.squeeze(output, 0), loss)

    def _get_full_log_prob(self, input: Tensor, head_output: Tensor) -> Tensor:  # noqa: A002
        head_logprob = C.log_softmax(head_output, 1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i, tail in enumerate(self.tail):
            cluster = C.log_softmax(tail(input), 1)
            parts.append(F.add(cluster, F.unsqueeze(head_logprob[:, self.shortlist_size + i],
                                                    1)))
        return F.cat(parts, 1)

    def log_prob(self, input: Tensor) -> Tensor:  # noqa: A002
        """The log-probability of every class, (N, n_classes)."""
        return self._get_full_log_prob(input, self.head(input))

    def predict(self, input: Tensor) -> Tensor:  # noqa: A002
        """The most likely class of each row: the head's, unless that is a cluster."""
        head_output = self.head(input)
        output = head_output.argmax(1)
        beyond = F.ge(output, self.shortlist_size)
        if not bool(beyond.any()):
            return output
        full = self._get_full_log_prob(input, head_output).argmax(1)
        return F.where(beyond, full, output)
