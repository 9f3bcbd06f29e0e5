"""Recurrent layers as PyTorch has them: `RNN` (tanh or relu), `LSTM` and `GRU`, stacked and
bidirectional, and their one-step cells `RNNCell`, `LSTMCell`, `GRUCell`.

Each is a composition of differentiable ops (a matrix product, elementwise gates), so eager
autograd differentiates it and a compiled step captures and fuses it like any other code: the
input's projection for every time step is one product (``x @ W_ih.T`` over the whole sequence,
as PyTorch's CPU path does), then one ``h @ W_hh.T`` and the fused gates per step.

Parameters, their names (``weight_ih_l0``, ``bias_hh_l1_reverse``, ...), shapes, gate order
(LSTM: input, forget, cell, output; GRU: reset, update, new) and initialisation
(``U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))``) are PyTorch's, so a state dict moves
between the two.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

import runtime as rt
from runtime.nn import functional as F
from runtime.nn import init
from runtime.nn.module import Module
from runtime.nn.parameter import Parameter
from runtime.nn.utils.rnn import PackedSequence
from runtime.tensor import Tensor

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _cell(mode: str, x_proj: Tensor, h: Tensor, c: Tensor | None, w_hh: Tensor,
          b_hh: Tensor | None, w_hr: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
    """One step: ``x_proj`` is ``x @ W_ih.T + b_ih`` already; the new (h, c). An LSTM with
    projections (``w_hr``) projects its h to ``proj_size``."""
    h_proj = F.linear(h, w_hh, b_hh)
    if mode == "RNN_TANH":
        return (x_proj + h_proj).tanh(), None
    if mode == "RNN_RELU":
        return (x_proj + h_proj).relu(), None
    if mode == "LSTM":
        i, f, g, o = (x_proj + h_proj).chunk(4, -1)
        assert c is not None
        c = f.sigmoid() * c + i.sigmoid() * g.tanh()
        h = o.sigmoid() * c.tanh()
        return (h if w_hr is None else F.linear(h, w_hr)), c
    xr, xz, xn = x_proj.chunk(3, -1)
    hr, hz, hn = h_proj.chunk(3, -1)
    r = (xr + hr).sigmoid()
    z = (xz + hz).sigmoid()
    n = (xn + r * hn).tanh()
    return n + z * (h - n), None  # (1 - z) * n + z * h


class RNNBase(Module):
    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        if not isinstance(dropout, (int, float)) or isinstance(dropout, bool) or not (
                0 <= dropout <= 1):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          "non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=3)
        # PyTorch 2.13's checks, in its order (a bool passes isinstance(_, int) there too)
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: "
                            f"{type(batch_first).__name__}")
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: "
                            f"{type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: "
                            f"{type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size != 0 and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        gate_size = _GATES[mode] * hidden_size
        real_hidden_size = proj_size or hidden_size
        directions = 2 if bidirectional else 1
        self._flat_weights_names: list[str] = []
        for layer in range(num_layers):
            for direction in range(directions):
                layer_input = input_size if layer == 0 else real_hidden_size * directions
                suffix = "_reverse" if direction == 1 else ""
                shapes = {f"weight_ih_l{layer}{suffix}": (gate_size, layer_input),
                          f"weight_hh_l{layer}{suffix}": (gate_size, real_hidden_size)}
                if bias:
                    shapes[f"bias_ih_l{layer}{suffix}"] = (gate_size,)
                    shapes[f"bias_hh_l{layer}{suffix}"] = (gate_size,)
                if proj_size:
                    shapes[f"weight_hr_l{layer}{suffix}"] = (proj_size, hidden_size)
                for name, shape in shapes.items():
                    setattr(self, name, Parameter(rt.empty(tuple(shape), device=device, dtype=dtype)))
                    self._flat_weights_names.append(name)
        self.reset_parameters()

    def flatten_parameters(self) -> None:
        """PyTorch's: packs the weights into one cuDNN buffer. Here every layer's weights are
        separate parameters that each product reads as they are, so there is nothing to
        rearrange and this does nothing."""

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    @property
    def _per_direction(self) -> int:
        """How many parameters each layer and direction has."""
        return (4 if self.bias else 2) + (1 if self.proj_size else 0)

    @property
    def _flat_weights(self) -> list[Tensor | None]:
        """The weights as the forward reads them, in ``_flat_weights_names`` order: a pruned
        or parametrized one is the plain tensor that replaced its Parameter (PyTorch keeps
        this list in step on every assignment; reading it fresh gives the same)."""
        return [getattr(self, n, None) for n in self._flat_weights_names]

    @property
    def all_weights(self) -> list[list[Parameter]]:
        per = self._per_direction
        names = self._flat_weights_names
        return [[getattr(self, n) for n in names[i:i + per]] for i in range(0, len(names), per)]

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # --- forward --------------------------------------------------------------------------
    def _check_input(self, input: Tensor, check_dtype: bool = True) -> bool:
        """Whether ``input`` is batched; raises PyTorch's errors for a wrong rank, dtype or
        size."""
        name = type(self).__name__
        if input.dim() not in (2, 3):
            kind = " tensor" if self.mode.startswith("RNN") else ""  # PyTorch's RNN says so
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D{kind} "
                             f"instead")
        if check_dtype:
            self._check_dtype(input)
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.shape[-1]}")
        return input.dim() == 3

    def _check_dtype(self, input: Tensor) -> None:  # noqa: A002
        """PyTorch's check_input refuses an input whose dtype is not the weights' (outside
        autocast) before any matmul would say so in its own words."""
        from runtime.amp.autocast_mode import state

        weight = getattr(self, self._flat_weights_names[0])
        if input.dtype is not weight.dtype and not any(state.enabled.values()):
            want, got = f"torch.{weight.dtype.name}", f"torch.{input.dtype.name}"
            raise ValueError(f"RNN input dtype ({got}) does not match weight dtype ({want}). "
                             f"Convert input: input.to({want}), or convert model: "
                             f"model.to({got})")

    def _hidden(self, hx: Tensor | None, input: Tensor, batch: int, batched: bool,
                what: str = "hidden", size: int | None = None) -> Tensor:
        """h0 (or, with ``size``, an LSTM's c0) checked, or zeros for None."""
        layers = self.num_layers * (2 if self.bidirectional else 1)
        size = size or self.proj_size or self.hidden_size
        if hx is None:
            return rt.zeros(layers, batch, size, dtype=input.dtype, device=input.device)
        if not batched:
            hx = hx.unsqueeze(1)
        expected = (layers, batch, size)
        if tuple(hx.shape) != expected:
            raise RuntimeError(f"Expected {what} size {expected}, got {list(hx.shape)}")
        return hx

    def _run(self, input: Tensor, h0: Tensor, c0: Tensor | None,
             batch_sizes: list[int] | None = None) -> tuple[Tensor, Tensor, Tensor | None]:
        """``input`` (L, N, H_in) -> output (L, N, D * H), h_n, c_n (layers * D, N, H).

        With ``batch_sizes``, ``input`` is a PackedSequence's data (its steps one after
        another, step t the first ``batch_sizes[t]`` sequences) and so is the output: a step
        updates the hidden state of those rows only, so each row's h_n is its own last
        step's (its first, reversed), and a reversed row starts from h0 when it begins."""
        if batch_sizes is None and input.shape[0] == 0:  # PyTorch's kernel, after the checks
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        directions = 2 if self.bidirectional else 1
        per = self._per_direction
        names = self._flat_weights_names
        h_n: list[Tensor] = []
        c_n: list[Tensor] = []
        layer_input = input
        steps = input.shape[0] if batch_sizes is None else len(batch_sizes)
        offsets = [0] if batch_sizes is None else np.cumsum([0, *batch_sizes]).tolist()
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                k = layer * directions + direction
                w = [getattr(self, n) for n in names[k * per:(k + 1) * per]]
                w_ih, w_hh = w[0], w[1]
                b_ih, b_hh = (w[2], w[3]) if self.bias else (None, None)
                w_hr = w[-1] if self.proj_size else None
                proj = F.linear(layer_input, w_ih, b_ih)  # every time step in one product
                h, c = h0[k], None if c0 is None else c0[k]
                order = range(steps - 1, -1, -1) if direction == 1 else range(steps)
                hs: list[Tensor] = [h] * steps
                for t in order:
                    if batch_sizes is None:
                        h, c = _cell(self.mode, proj[t], h, c, w_hh, b_hh, w_hr)
                        hs[t] = h
                        continue
                    rows = batch_sizes[t]
                    x = proj[offsets[t]:offsets[t + 1]]
                    if rows == h.shape[0]:
                        h, c = _cell(self.mode, x, h, c, w_hh, b_hh, w_hr)
                        hs[t] = h
                        continue
                    h_t, c_t = _cell(self.mode, x, h[:rows], None if c is None else c[:rows],
                                     w_hh, b_hh, w_hr)
                    hs[t] = h_t
                    h = rt.cat([h_t, h[rows:]], 0)
                    c = None if c is None or c_t is None else rt.cat([c_t, c[rows:]], 0)
                outputs.append(rt.stack(hs, 0) if batch_sizes is None else rt.cat(hs, 0))
                h_n.append(h)
                if c is not None:
                    c_n.append(c)
            layer_input = outputs[0] if directions == 1 else rt.cat(outputs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, True)
        return layer_input, rt.stack(h_n, 0), rt.stack(c_n, 0) if c_n else None

    # --- PyTorch's public checks (for code that subclasses or calls them; the forward
    # above makes the same checks in its own order) ----------------------------------------
    def check_input(self, input: Tensor, batch_sizes: Tensor | None) -> None:  # noqa: A002
        self._check_dtype(input)
        expected_input_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_input_dim:
            raise RuntimeError(f"input must have {expected_input_dim} dimensions, got "
                               f"{input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.size(-1)}")

    def _mini_batch(self, input: Tensor, batch_sizes: Tensor | None) -> int:  # noqa: A002
        if batch_sizes is not None:
            return int(batch_sizes[0])
        return input.size(0) if self.batch_first else input.size(1)

    def get_expected_hidden_size(self, input: Tensor,  # noqa: A002
                                 batch_sizes: Tensor | None) -> tuple[int, int, int]:
        num_directions = 2 if self.bidirectional else 1
        return (self.num_layers * num_directions, self._mini_batch(input, batch_sizes),
                self.proj_size if self.proj_size > 0 else self.hidden_size)

    def check_hidden_size(self, hx: Tensor, expected_hidden_size: tuple[int, int, int],
                          msg: str = "Expected hidden size {}, got {}") -> None:
        if tuple(hx.size()) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.size())))

    def check_forward_args(self, input: Tensor, hidden: Tensor,  # noqa: A002
                           batch_sizes: Tensor | None) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx: Tensor, permutation: Tensor | None) -> Tensor:
        return hx if permutation is None else hx.index_select(1, permutation)

    @staticmethod
    def _check_batching(hx: Sequence[Tensor], batched: bool) -> None:
        """PyTorch's check that h0 (and an LSTM's c0) are batched as the input is, both
        before either's size."""
        dims = 3 if batched else 2
        if all(h.dim() == dims for h in hx):
            return
        given = f"For {'batched' if batched else 'unbatched'} {dims}-D input, hx"
        if len(hx) == 2:
            raise RuntimeError(f"{given} and cx should also be {dims}-D but got "
                               f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
        raise RuntimeError(f"{given} should also be {dims}-D but got {hx[0].dim()}-D tensor")

    def _initial_state(self, input: Tensor, hx: Any, batch: int, batched: bool
                       ) -> tuple[Tensor, Tensor | None]:
        """(h0, c0) from ``hx`` (None: zeros), checked as PyTorch checks them."""
        if self.mode == "LSTM":
            if hx is None:
                hx = (None, None)
            elif not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise RuntimeError("LSTM: hx must be a tuple (h_0, c_0)")
            else:
                self._check_batching(hx, batched)
            return (self._hidden(hx[0], input, batch, batched, "hidden[0]"),
                    self._hidden(hx[1], input, batch, batched, "hidden[1]", self.hidden_size))
        if isinstance(hx, (tuple, list)):
            raise RuntimeError(f"{type(self).__name__}: hx must be a Tensor, not a tuple")
        if hx is not None:
            self._check_batching([hx], batched)
        return self._hidden(hx, input, batch, batched), None

    def _forward_packed(self, packed: PackedSequence, hx: Any) -> tuple[PackedSequence, Any]:
        """A PackedSequence in and out; ``hx`` and h_n in the caller's batch order (PyTorch
        permutes them by ``sorted_indices`` and back)."""
        data, batch_sizes, sorted_indices, unsorted_indices = packed
        # PyTorch's LSTM checks a packed input's dtype only with an hx (else its matmul
        # refuses it), and before the rank
        check_dtype = hx is not None or self.mode != "LSTM"
        if check_dtype:
            self._check_dtype(data)
        if data.dim() != 2:
            raise RuntimeError(f"input must have 2 dimensions, got {data.dim()}")
        self._check_input(data, check_dtype=False)
        if hx is not None and sorted_indices is not None:
            hx = (tuple(h.index_select(1, sorted_indices) for h in hx)
                  if isinstance(hx, (tuple, list)) else hx.index_select(1, sorted_indices))
        sizes = [int(b) for b in batch_sizes.tolist()]
        h0, c0 = self._initial_state(data, hx, sizes[0], True)
        output, h_n, c_n = self._run(data, h0, c0, sizes)
        if unsorted_indices is not None:
            h_n = h_n.index_select(1, unsorted_indices)
            c_n = None if c_n is None else c_n.index_select(1, unsorted_indices)
        out = PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices)
        return out, (h_n, c_n) if self.mode == "LSTM" else h_n

    def _forward(self, input: Tensor | PackedSequence, hx: Any) -> tuple[Any, Any]:
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        batched = self._check_input(input)
        if not batched:
            input = input.unsqueeze(1)
        elif self.batch_first:
            input = input.transpose(0, 1)
        h0, c0 = self._initial_state(input, hx, input.shape[1], batched)
        output, h_n, c_n = self._run(input, h0, c0)
        if not batched:
            output, h_n = output.squeeze(1), h_n.squeeze(1)
            c_n = None if c_n is None else c_n.squeeze(1)
        elif self.batch_first:
            output = output.transpose(0, 1)
        return output, (h_n, c_n) if self.mode == "LSTM" else h_n


class RNN(RNNBase):
    """Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (or relu)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False, device: Any = None,
                 dtype: Any = None, proj_size: int = 0) -> None:
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             f"'relu'.")
        super().__init__(mode, input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor | PackedSequence, hx: Tensor | None = None  # noqa: A002
                ) -> tuple[Any, Tensor]:
        return self._forward(input, hx)


class LSTM(RNNBase):
    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, device, dtype)

    def forward(self, input: Tensor | PackedSequence,  # noqa: A002
                hx: tuple[Tensor, Tensor] | None = None) -> tuple[Any, tuple[Tensor, Tensor]]:
        return self._forward(input, hx)

    def get_expected_cell_size(self, input: Tensor,  # noqa: A002
                               batch_sizes: Tensor | None) -> tuple[int, int, int]:
        num_directions = 2 if self.bidirectional else 1
        return (self.num_layers * num_directions, self._mini_batch(input, batch_sizes),
                self.hidden_size)

    def check_forward_args(  # type: ignore[override]
            self, input: Tensor, hidden: tuple[Tensor, Tensor],  # noqa: A002
            batch_sizes: Tensor | None) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx: tuple[Tensor, Tensor],  # type: ignore[override]
                       permutation: Tensor | None) -> tuple[Tensor, Tensor]:
        if permutation is None:
            return hx
        return hx[0].index_select(1, permutation), hx[1].index_select(1, permutation)


class GRU(RNNBase):
    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, device: Any = None, dtype: Any = None,
                 proj_size: int = 0) -> None:  # (taken to refuse it, as torch's RNNBase)
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, device=device, dtype=dtype)

    def forward(self, input: Tensor | PackedSequence, hx: Tensor | None = None  # noqa: A002
                ) -> tuple[Any, Tensor]:
        return self._forward(input, hx)


class RNNCellBase(Module):
    def __init__(self, mode: str, input_size: int, hidden_size: int, bias: bool,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        gate_size = _GATES[mode] * hidden_size
        self.weight_ih = Parameter(rt.empty((gate_size, input_size), device=device, dtype=dtype))
        self.weight_hh = Parameter(rt.empty(gate_size, hidden_size, device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(rt.empty(gate_size, device=device, dtype=dtype))
            self.bias_hh = Parameter(rt.empty(gate_size, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.__dict__.get("nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"  # PyTorch's text, unquoted
        return s

    def _states(self, input: Tensor, hx: Sequence[Tensor] | None,  # noqa: A002
                labels: tuple[str, ...]) -> tuple[list[Tensor], bool]:
        """The cell's hidden states (zeros where ``hx`` is None) as a batch, and whether the
        input is batched; PyTorch's checks in its order (its Python ranks, then its kernel's
        input size, batch sizes and hidden sizes)."""
        name = type(self).__name__
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D "
                             f"instead")
        for label, h in zip(labels, hx or ()):
            if h.dim() not in (1, 2):
                raise ValueError(f"{name}: Expected {label} to be 1D or 2D, got {h.dim()}D "
                                 f"instead")
        batched = input.dim() == 2
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[-1]} "
                               f"expected {self.input_size}")
        batch = input.shape[0] if batched else 1
        if hx is None:
            zeros = rt.zeros(batch, self.hidden_size, dtype=input.dtype, device=input.device)
            return [zeros] * len(labels), batched
        states = [h if batched else h.unsqueeze(0) for h in hx]
        for i, h in enumerate(states):
            if h.shape[0] != batch:
                raise RuntimeError(f"Input batch size {batch} doesn't match hidden{i} batch "
                                   f"size {h.shape[0]}")
            if h.shape[1] != self.hidden_size:
                raise RuntimeError(f"hidden{i} has inconsistent hidden_size: got {h.shape[1]}, "
                                   f"expected {self.hidden_size}")
        return states, batched

    def _cell_mode(self) -> str:
        return self.mode

    def _step(self, input: Tensor, h: Tensor, c: Tensor | None
              ) -> tuple[Tensor, Tensor | None]:
        x = input if input.dim() == 2 else input.unsqueeze(0)
        return _cell(self._cell_mode(), F.linear(x, self.weight_ih, self.bias_ih), h, c,
                     self.weight_hh, self.bias_hh)


class RNNCell(RNNCellBase):
    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device: Any = None, dtype: Any = None) -> None:
        super().__init__("RNN_RELU" if nonlinearity == "relu" else "RNN_TANH", input_size,
                         hidden_size, bias, device, dtype)
        self.nonlinearity = nonlinearity

    def _cell_mode(self) -> str:
        """PyTorch's RNNCell reads its nonlinearity in forward, where it refuses another."""
        modes = {"tanh": "RNN_TANH", "relu": "RNN_RELU"}
        if self.nonlinearity not in modes:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        return modes[self.nonlinearity]

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        (h,), batched = self._states(input, None if hx is None else (hx,), ("hidden",))
        h, _ = self._step(input, h, None)
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__("LSTM", input_size, hidden_size, bias, device, dtype)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None
                ) -> tuple[Tensor, Tensor]:
        if isinstance(hx, Tensor):
            raise TypeError("lstm_cell(): argument 'hx' (position 2) must be tuple of Tensors, "
                            "not Tensor")
        if hx is not None and len(hx) != 2:
            raise RuntimeError("lstm_cell expects two hidden states")
        (h, c), batched = self._states(input, hx, ("hx[0]", "hx[1]"))
        h, c2 = self._step(input, h, c)
        assert c2 is not None
        return (h, c2) if batched else (h.squeeze(0), c2.squeeze(0))


class GRUCell(RNNCellBase):
    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__("GRU", input_size, hidden_size, bias, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        (h,), batched = self._states(input, None if hx is None else (hx,), ("hidden",))
        h, _ = self._step(input, h, None)
        return h if batched else h.squeeze(0)
