"""A tensor's values as ``repr`` shows them: PyTorch's layout and number formats (its
``torch._tensor_str``): 4 decimals, or whole numbers with a trailing dot when every finite
value is one, scientific notation where the finite values span more than a factor 1000, pass
1e8 or fall below 1e-4, every element padded to one width, rows wrapped at 80 columns, and
more than 1000 elements summarized by their first and last 3 along each dimension."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

PRECISION = 4
THRESHOLD = 1000
EDGE_ITEMS = 3
LINE_WIDTH = 80
SCI_MODE: bool | None = None  # set_printoptions(sci_mode=...): forced on or off (None: chosen)


class _Formatter:
    """How every element of one tensor is written (PyTorch's ``_Formatter``)."""

    def __init__(self, values: np.ndarray) -> None:
        self.floating = values.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = values.reshape(-1)
        if not self.floating:
            for v in flat:
                self.max_width = max(self.max_width, len(_plain(v)))
            return
        wide = flat.astype(np.float64)
        finite = wide[np.isfinite(wide) & (wide != 0)]
        if finite.size == 0:
            return
        magnitude = np.abs(finite)
        low, high = float(magnitude.min()), float(magnitude.max())
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        self.sci_mode = (high / low > 1000.0 or high > 1.0e8 or low < 1.0e-4) \
            if SCI_MODE is None else SCI_MODE  # set_printoptions(sci_mode=...) decides first
        if self.sci_mode:
            self.max_width = max(len(f"{v:.{PRECISION}e}") for v in finite)
        elif self.int_mode:
            self.max_width = max(len(f"{v:.0f}") + 1 for v in finite)
        else:
            self.max_width = max(len(f"{v:.{PRECISION}f}") for v in finite)

    def format(self, value: Any) -> str:
        if self.floating:
            v = float(value)
            if self.sci_mode:
                text = f"{v:{self.max_width}.{PRECISION}e}"
            elif self.int_mode:
                text = f"{v:.0f}"
                if not (math.isinf(v) or math.isnan(v)):
                    text += "."
            else:
                text = f"{v:.{PRECISION}f}"
        else:
            text = _plain(value)
        return (self.max_width - len(text)) * " " + text


def _plain(value: Any) -> str:
    """An integer or bool element as PyTorch writes it (``True``, ``-3``)."""
    return str(value.item() if hasattr(value, "item") else value)


def _summarized(values: np.ndarray) -> np.ndarray:
    """The elements the summary shows: the first and last EDGE_ITEMS along each dimension."""
    if values.ndim == 0:
        return values
    if values.shape[0] > 2 * EDGE_ITEMS:
        values = np.concatenate([values[:EDGE_ITEMS], values[-EDGE_ITEMS:]])
    return np.stack([_summarized(v) for v in values]) if values.ndim > 1 else values


def _vector(values: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    """A 1-d tensor's elements, wrapped to LINE_WIDTH."""
    element_length = fmt.max_width + 2
    per_line = max(1, int(math.floor((LINE_WIDTH - indent) / element_length)))
    if summarize and values.shape[0] > 2 * EDGE_ITEMS:
        data = [fmt.format(v) for v in values[:EDGE_ITEMS]] + [" ..."] + \
            [fmt.format(v) for v in values[-EDGE_ITEMS:]]
    else:
        data = [fmt.format(v) for v in values]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(values: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    if values.ndim == 0:
        return fmt.format(values[()])
    if values.ndim == 1:
        return _vector(values, indent, summarize, fmt)
    if summarize and values.shape[0] > 2 * EDGE_ITEMS:
        slices = [_nested(values[i], indent + 1, summarize, fmt) for i in range(EDGE_ITEMS)]
        slices += ["..."]
        slices += [_nested(values[i], indent + 1, summarize, fmt)
                   for i in range(values.shape[0] - EDGE_ITEMS, values.shape[0])]
    else:
        slices = [_nested(v, indent + 1, summarize, fmt) for v in values]
    joiner = "," + "\n" * (values.ndim - 1) + " " * (indent + 1)
    return "[" + joiner.join(slices) + "]"


def values_str(values: np.ndarray, indent: int) -> str:
    """The body of ``repr``: ``values`` (a host array) laid out as PyTorch's, continuation
    lines indented by ``indent`` (the width of ``tensor(``)."""
    if values.size == 0:
        return "[]"
    if values.dtype.kind not in "fiub":  # bfloat16 and other extension dtypes: as float32
        values = values.astype(np.float32)
    summarize = values.size > THRESHOLD
    shown = _summarized(values) if summarize else values
    return _nested(values, indent, summarize, _Formatter(shown))


def with_suffixes(text: str, suffixes: list[str], indent: int) -> str:
    """``text`` (``tensor(`` and the values) with each suffix (``dtype=...``,
    ``requires_grad=True``) after a comma, on a line of its own where it would pass
    LINE_WIDTH, and the closing parenthesis (PyTorch's ``_add_suffixes``)."""
    parts = [text]
    last_line = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line + len(suffix) + 2 > LINE_WIDTH:
            parts.append(",\n" + " " * indent + suffix)
            last_line = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line += len(suffix) + 2
    parts.append(")")
    return "".join(parts)
