"""Variable-length sequences, as ``torch.nn.utils.rnn``: padding a list of sequences into one
tensor, and packing a padded batch into a ``PackedSequence`` that the recurrent layers
(``RNN``, ``LSTM``, ``GRU``) run step by step on the sequences still going, so padding
never enters a hidden state.

A PackedSequence holds the time steps one after another, each with the sequences that last
that long (longest first): ``batch_sizes[t]`` rows for step ``t``. Lengths and batch sizes
are CPU int64 tensors, as PyTorch's; the data keeps its device and its gradient (every op
here is a differentiable tensor op)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

import runtime as rt
from runtime.ops.shapes import broadcast_error
from runtime.tensor import Tensor


class _PackedFields(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(_PackedFields):
    """``(data, batch_sizes, sorted_indices, unsorted_indices)``: made by
    ``pack_padded_sequence`` or ``pack_sequence``, read by the recurrent layers and
    ``pad_packed_sequence``. ``sorted_indices`` orders the batch by decreasing length (None:
    it was sorted already); ``unsorted_indices`` undoes that."""

    def __new__(cls, data: Tensor, batch_sizes: Tensor | None = None,
                sorted_indices: Tensor | None = None,
                unsorted_indices: Tensor | None = None) -> PackedSequence:
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:  # PyTorch's older form: PackedSequence((data, batch_sizes))
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        elif str(batch_sizes.device).split(":")[0] != "cpu":
            raise ValueError(
                "batch_sizes should always be on CPU. Instances of PackedSequence should never "
                "be created manually. They should be instantiated by functions like "
                "pack_sequence and pack_padded_sequences in nn.utils.rnn. "
                "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def pin_memory(self) -> PackedSequence:
        """The data and the indices in page-locked memory (the batch sizes stay as they are)."""
        return type(self)(self.data.pin_memory(), self.batch_sizes,
                          _pinned(self.sorted_indices), _pinned(self.unsorted_indices))

    def is_pinned(self) -> bool:
        return self.data.is_pinned()

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """The data moved or cast as ``Tensor.to``; the indices follow its device."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        device = data.device
        return type(self)(data, self.batch_sizes,
                          _to(self.sorted_indices, device), _to(self.unsorted_indices, device))

    def cpu(self) -> PackedSequence:
        return self.to("cpu")

    def cuda(self, device: int | None = None) -> PackedSequence:
        return self.to("cuda" if device is None else f"cuda:{device}")

    def double(self) -> PackedSequence:
        return self.to(dtype=rt.float64)

    def float(self) -> PackedSequence:  # noqa: A003 - PyTorch's name
        return self.to(dtype=rt.float32)

    def half(self) -> PackedSequence:
        return self.to(dtype=rt.float16)

    def long(self) -> PackedSequence:
        return self.to(dtype=rt.int64)

    def int(self) -> PackedSequence:  # noqa: A003 - PyTorch's name
        return self.to(dtype=rt.int32)

    def short(self) -> PackedSequence:
        return self.to(dtype=rt.int16)

    def char(self) -> PackedSequence:
        return self.to(dtype=rt.int8)

    def byte(self) -> PackedSequence:
        return self.to(dtype=rt.uint8)

    @property
    def is_cuda(self) -> bool:
        return self.data.device.startswith("cuda")


def _pinned(t: Tensor | None) -> Tensor | None:
    return None if t is None else t.pin_memory()


def _to(t: Tensor | None, device: str) -> Tensor | None:
    return None if t is None else t.to(device)


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The permutation that undoes ``permutation`` (a 1-D int64 tensor)."""
    if permutation is None:
        return None
    order = np.asarray(permutation.tolist(), dtype=np.int64)
    inverse = np.empty_like(order)
    inverse[order] = np.arange(len(order))
    return rt.tensor(inverse, device=permutation.device)


def _lengths(lengths: Tensor | Sequence[int]) -> np.ndarray:
    values = lengths.tolist() if isinstance(lengths, Tensor) else lengths
    return np.asarray(values, dtype=np.float64).astype(np.int64)  # as_tensor(.., int64)


def _check_lengths(lens: np.ndarray, lengths: Tensor | Sequence[int]) -> None:
    """PyTorch's kernel takes the lengths as a 1-D CPU int64 tensor only."""
    device = str(lengths.device) if isinstance(lengths, Tensor) else "cpu"
    if lens.ndim != 1 or device != "cpu":
        raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got "
                           f"{lens.ndim}D {device} Long tensor")


def pack_padded_sequence(input: Tensor, lengths: Tensor | Sequence[int],  # noqa: A002
                         batch_first: bool = False, enforce_sorted: bool = True
                         ) -> PackedSequence:
    """A padded batch (T, B, *) (``batch_first``: (B, T, *)) whose sequence ``b`` is
    ``lengths[b]`` steps long, packed. ``enforce_sorted``: the lengths must decrease (else
    the batch is sorted here, and ``sorted_indices`` says how)."""
    lens = _lengths(lengths)
    if enforce_sorted or lens.ndim == 0:  # checked below, after the input's checks (PyTorch's
        sorted_indices = None             # kernel's order); its sort keeps a 0-d one 0-d
    else:
        if lens.ndim > 1:  # torch.sort sorts the last dim; index_select refuses the index
            raise IndexError("index_select(): Index is supposed to be a vector")
        order = np.argsort(-lens, kind="stable")
        lens = lens[order]
        sorted_indices = rt.tensor(order, device=input.device)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    if batch_first:
        input = input.transpose(0, 1)
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    _check_lengths(lens, lengths)
    steps, batch = input.shape[0], input.shape[1]
    if len(lens) != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{len(lens)} (batch_size={batch})")
    if lens[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if np.any(np.diff(lens) > 0):  # (sorted here already unless enforce_sorted)
        raise RuntimeError(
            "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
            "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
            "pack_sequence to sidestep this requirement if you do not need ONNX "
            "exportability.")
    if lens[0] > steps:  # PyTorch reads past the input's end here
        raise RuntimeError(f"Expected every length to be at most the padded length {steps}, "
                           f"but got a length of {lens[0]}")
    sizes = [int((lens > t).sum()) for t in range(int(lens[0]))]
    data = rt.cat([input[t, :size] for t, size in enumerate(sizes)], 0)
    return PackedSequence(data, rt.tensor(sizes, dtype=rt.int64), sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length: int | None = None
                        ) -> tuple[Tensor, Tensor]:
    """The padded batch (T, B, *) (``batch_first``: (B, T, *)) of a PackedSequence, in the
    order it was packed from, and each sequence's length (a CPU int64 tensor); T is the
    longest length, or ``total_length``."""
    data, batch_sizes, _, unsorted_indices = sequence
    sizes = [int(b) for b in batch_sizes.tolist()]
    steps = len(sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError("Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {steps}")
        steps = total_length
    batch, tail = sizes[0], tuple(data.shape[1:])
    rows, offset = [], 0
    for size in sizes:
        step = data[offset:offset + size]
        if size < batch:
            fill = rt.full((batch - size, *tail), padding_value, dtype=data.dtype,
                           device=data.device)
            step = rt.cat([step, fill], 0)
        rows.append(step)
        offset += size
    padded = rt.stack(rows, 0)
    if steps > len(sizes):
        fill = rt.full((steps - len(sizes), batch, *tail), padding_value, dtype=data.dtype,
                       device=data.device)
        padded = rt.cat([padded, fill], 0)
    lengths = np.asarray([sum(1 for s in sizes if s > b) for b in range(batch)], np.int64)
    if unsorted_indices is not None:
        padded = padded.index_select(1, unsorted_indices)
        lengths = lengths[np.asarray(unsorted_indices.tolist(), dtype=np.int64)]
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, rt.tensor(lengths, dtype=rt.int64)


def pad_sequence(sequences: Tensor | Iterable[Tensor], batch_first: bool = False,
                 padding_value: float = 0.0, padding_side: str = "right") -> Tensor:
    """Sequences (L_i, *) stacked into (T, B, *) (``batch_first``: (B, T, *)), T the
    longest, each padded with ``padding_value`` on its ``padding_side``."""
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got "
                           f"{padding_side}.")
    if not isinstance(sequences, (Tensor, Iterable)):
        raise RuntimeError("pad_sequence: Expected iterable for input sequences, but got arg "
                           f"of type: {type(sequences)}")
    seqs = list(sequences)
    if not seqs:
        raise RuntimeError("received an empty list of sequences")
    first = seqs[0]
    longest = max(s.shape[0] for s in seqs)
    tail = tuple(first.shape[1:])
    padded = []
    for s in seqs:
        length = s.shape[0]
        s = s.to(first.dtype)
        if tuple(s.shape[1:]) != tail:  # PyTorch copies it into the padded row: broadcasts
            mismatch = broadcast_error((length, *tail), tuple(s.shape))
            if mismatch is not None:  # copy_'s words: the row is tensor a
                raise RuntimeError(mismatch)
            s = s.expand(length, *tail)
        if length < longest:
            fill = rt.full((longest - length, *tail), padding_value, dtype=first.dtype,
                           device=first.device)
            s = rt.cat([s, fill] if padding_side == "right" else [fill, s], 0)
        padded.append(s)
    return rt.stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor,
                   batch_first: bool = False) -> list[Tensor]:
    """The sequences of a padded batch, each cut to its length (``pad_sequence``'s inverse
    for right padding)."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [padded_sequences[b, :int(n)] for b, n in enumerate(lengths.tolist())]


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Sequences (L_i, *) packed: ``pad_sequence`` then ``pack_padded_sequence``."""
    lengths = rt.tensor([s.shape[0] for s in sequences], dtype=rt.int64)
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The sequences a PackedSequence was packed from, in their order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
