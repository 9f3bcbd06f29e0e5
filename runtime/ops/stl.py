"""libstdc++'s std::sort, std::nth_element and std::partial_sort, step for step: PyTorch's
CPU kernels for topk and mode order (value, index) pairs with them, and where values tie (or
are NaN, which their comparators leave unordered) the index each returns is the position
these algorithms leave it in, not a stable sort's. The runtime computes those ops from a
stable argsort; eagerly, the rows whose result these algorithms decide are run through this
module (introsort with median-of-three pivots and a final insertion sort; introselect;
heap selection), so their indices are PyTorch's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Stl:
    """The positions of ``v`` (``a``), rearranged as libstdc++'s algorithms rearrange the
    elements they stand for, compared by ``comp`` on their values."""
    def __init__(self, v: list[Any], comp: Callable[[Any, Any], bool]) -> None:
        self.v, self.c = v, comp
        self.a = list(range(len(v)))

    def less(self, i: int, j: int) -> bool:
        return self.c(self.v[i], self.v[j])

    def _linear_insert(self, last: int) -> None:
        a, less = self.a, self.less
        val, prev = a[last], last - 1
        while less(val, a[prev]):
            a[last] = a[prev]
            last, prev = prev, prev - 1
        a[last] = val

    def _insertion_sort(self, first: int, last: int) -> None:
        a, less = self.a, self.less
        for i in range(first + 1, last):
            if less(a[i], a[first]):
                val = a[i]
                a[first + 1:i + 1] = a[first:i]
                a[first] = val
            else:
                self._linear_insert(i)

    def _adjust_heap(self, first: int, hole: int, length: int, value: int) -> None:
        a, less = self.a, self.less
        top = second = hole
        while second < (length - 1) // 2:
            second = 2 * (second + 1)
            if less(a[first + second], a[first + second - 1]):
                second -= 1
            a[first + hole] = a[first + second]
            hole = second
        if length % 2 == 0 and second == (length - 2) // 2:
            second = 2 * (second + 1)
            a[first + hole] = a[first + second - 1]
            hole = second - 1
        parent = (hole - 1) // 2
        while hole > top and less(a[first + parent], value):
            a[first + hole] = a[first + parent]
            hole, parent = parent, (parent - 1) // 2
        a[first + hole] = value

    def _make_heap(self, first: int, last: int) -> None:
        length = last - first
        if length < 2:
            return
        for parent in range((length - 2) // 2, -1, -1):
            self._adjust_heap(first, parent, length, self.a[first + parent])

    def _pop_heap(self, first: int, last: int, result: int) -> None:
        a = self.a
        value, a[result] = a[result], a[first]
        self._adjust_heap(first, 0, last - first, value)

    def _heap_select(self, first: int, middle: int, last: int) -> None:
        self._make_heap(first, middle)
        for i in range(middle, last):
            if self.less(self.a[i], self.a[first]):
                self._pop_heap(first, middle, i)

    def _sort_heap(self, first: int, last: int) -> None:
        while last - first > 1:
            last -= 1
            self._pop_heap(first, last, last)

    def _partition(self, first: int, last: int) -> int:
        a, less = self.a, self.less
        x, y, z = first + 1, first + (last - first) // 2, last - 1
        if less(a[x], a[y]):
            m = y if less(a[y], a[z]) else z if less(a[x], a[z]) else x
        else:
            m = x if less(a[x], a[z]) else z if less(a[y], a[z]) else y
        a[first], a[m] = a[m], a[first]
        lo, hi, pivot = first + 1, last, a[first]
        while True:
            while less(a[lo], pivot):
                lo += 1
            hi -= 1
            while less(pivot, a[hi]):
                hi -= 1
            if lo >= hi:
                return lo
            a[lo], a[hi] = a[hi], a[lo]
            lo += 1

    def _introsort(self, first: int, last: int, depth: int) -> None:
        while last - first > 16:
            if depth == 0:
                self.partial_sort(first, last, last)
                return
            depth -= 1
            cut = self._partition(first, last)
            self._introsort(cut, last, depth)
            last = cut

    def sort(self, first: int, last: int) -> None:
        n = last - first
        if n < 2:
            return
        self._introsort(first, last, 2 * (n.bit_length() - 1))
        self._insertion_sort(first, first + min(n, 16))
        for i in range(first + 16, last):
            self._linear_insert(i)

    def partial_sort(self, first: int, middle: int, last: int) -> None:
        self._heap_select(first, middle, last)
        self._sort_heap(first, middle)

    def nth_element(self, first: int, nth: int, last: int) -> None:
        if first == last or nth == last:
            return
        depth = 2 * ((last - first).bit_length() - 1)
        while last - first > 3:
            if depth == 0:
                self._heap_select(first, nth + 1, last)
                a = self.a
                a[first], a[nth] = a[nth], a[first]
                return
            depth -= 1
            cut = self._partition(first, last)
            if cut <= nth:
                first = cut
            else:
                last = cut
        self._insertion_sort(first, last)


def _largest_first(x: Any, y: Any) -> bool:
    return bool((x != x and y == y) or x > y)  # NaN first, as numpy's


def _smallest_first(x: Any, y: Any) -> bool:
    return bool((x == x and y != y) or x < y)


def topk_row(values: list[Any], k: int, largest: bool, sorted: bool) -> list[int]:  # noqa: A002
    """The indices PyTorch's CPU topk gives one row (its topk_impl_loop): a partial sort
    where k * 64 <= n, else an nth_element, then a sort of the first k - 1 if ``sorted``."""
    n = len(values)
    s = Stl(values, _largest_first if largest else _smallest_first)
    if k == 0:
        return []
    if k * 64 <= n:
        s.partial_sort(0, k, n)
    else:
        s.nth_element(0, k - 1, n)
        if sorted:
            s.sort(0, k - 1)
    return s.a[:k]


def _less(x: Any, y: Any) -> bool:
    return bool(x < y)


def mode_row(values: list[Any]) -> int:
    """The index PyTorch's CPU mode gives one row: it std::sorts (value, index) pairs by value
    and takes the last pair of the first longest run of equal values (a NaN equals none)."""
    s = Stl(values, _less)
    s.sort(0, len(values))
    order = s.a
    best = freq = pick = 0
    for i, at in enumerate(order):
        freq += 1
        if i == len(order) - 1 or values[at] != values[order[i + 1]]:
            if freq > best:
                best, pick = freq, at
            freq = 0
    return pick
