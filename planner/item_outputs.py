"""``Tensor.item()`` returned by a step: ``return loss.item()`` (or the item inside a tuple,
list or dict the step returns) is captured, where any other read of a tensor's value stops
the capture (the step then runs eagerly).

During a capture a tensor has no value. Where the step's own frame does nothing with the
item but return it, which its bytecode shows (``returned_as_is``: from the ``.item()`` call
to the return, no jump, no instruction that could take the item off the stack other than
building the returned tuple, list or dict), the capture hands the step an ``ItemOut`` and
the plan returns that tensor's value as a Python number at every replay (the template's
``("item", ("node", n))`` leaf). Any operation on an ``ItemOut`` (arithmetic, comparison,
``float()``, formatting, an attribute) stops the capture all the same."""

from __future__ import annotations

import dis
import types
from typing import Any, NoReturn

from runtime.tracing import GraphBreak

# what may run between the .item() call and the return: loads, attribute and method lookups,
# calls, subscripts, arithmetic and the containers the returned value is built of
_ALLOWED = frozenset({
    "LOAD_FAST", "LOAD_CONST", "LOAD_GLOBAL", "LOAD_DEREF", "LOAD_CLOSURE", "LOAD_NAME",
    "LOAD_ATTR", "LOAD_METHOD", "PRECALL", "CALL", "CALL_FUNCTION", "CALL_METHOD",
    "CALL_FUNCTION_KW", "KW_NAMES", "PUSH_NULL", "BINARY_SUBSCR", "BINARY_OP", "COMPARE_OP",
    "IS_OP", "CONTAINS_OP", "UNARY_NEGATIVE", "UNARY_POSITIVE", "UNARY_NOT", "UNARY_INVERT",
    "BUILD_SLICE", "CACHE", "NOP",
    # a comprehension's function made and called on an iterator (Python 3.11; 3.12 inlines
    # it, with jumps): the item stays on the caller's stack, out of its reach
    "MAKE_FUNCTION", "GET_ITER",
    "BUILD_TUPLE", "BUILD_LIST", "BUILD_MAP", "BUILD_CONST_KEY_MAP", "RETURN_VALUE",
    "RETURN_CONST"})
_CONTAINERS = {"BUILD_TUPLE": 0, "BUILD_LIST": 0, "BUILD_MAP": 0, "BUILD_CONST_KEY_MAP": 1}


def _refuse(what: str) -> NoReturn:
    raise GraphBreak(f"the value of Tensor.item() is {what} (only returning it is captured)")


class ItemOut:
    """A step's ``Tensor.item()`` during its capture: only returned (see the module)."""

    __slots__ = ("node",)

    def __init__(self, node: int) -> None:
        object.__setattr__(self, "node", node)

    def __repr__(self) -> str:
        return f"<Tensor.item() of node {self.node}, read at each replay>"

    def __getattr__(self, name: str) -> NoReturn:
        _refuse(f"asked for .{name}")

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        _refuse("changed")

    def __bool__(self) -> NoReturn:
        _refuse("tested")

    def __hash__(self) -> int:
        _refuse("hashed")

    def __eq__(self, other: object) -> bool:
        _refuse("compared")


def _refusing(what: str) -> Any:
    def method(self: ItemOut, *args: Any) -> NoReturn:
        _refuse(what)

    return method


for _name in ("lt", "le", "gt", "ge", "ne"):
    setattr(ItemOut, f"__{_name}__", _refusing("compared"))
for _name in ("float", "int", "index", "complex", "round", "trunc", "floor", "ceil", "neg",
              "pos", "abs", "invert", "str", "format", "iter", "len", "call", "getitem",
              "contains", "bytes"):
    setattr(ItemOut, f"__{_name}__", _refusing(f"used ({_name})"))
for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and",
              "or", "xor", "lshift", "rshift", "divmod"):
    for _form in ("", "r", "i"):
        setattr(ItemOut, f"__{_form}{_name}__", _refusing("computed with"))


def returned_as_is(frame: types.FrameType) -> bool:
    """Whether ``frame``, stopped in the call that gives a value, returns that value as it
    is or inside the tuple, list or dict it returns, and does nothing else with it: every
    instruction up to the return is a plain load, lookup, call, subscript, arithmetic or
    container build (no jump, store or stack shuffle), and none of them can take the value
    off the stack (counting pops conservatively from each one's stack effect) but a
    container build that the return then returns."""
    try:
        instructions = list(dis.get_instructions(frame.f_code))
    except Exception:  # noqa: BLE001 - a code object dis cannot read: not captured
        return False
    # the call under way: the last instruction starting at or before f_lasti (which points
    # at the call's last inline cache entry on Python 3.11)
    at = None
    for i, ins in enumerate(instructions):
        if ins.offset > frame.f_lasti:
            break
        at = i
    if at is None or not instructions[at].opname.startswith("CALL"):
        return False
    above = 0  # values pushed above the tracked one (the item, or a container holding it)
    for ins in instructions[at + 1:]:
        name = ins.opname
        if name not in _ALLOWED or ins.opcode in dis.hasjrel or ins.opcode in dis.hasjabs:
            return False
        if name == "RETURN_VALUE":
            return above == 0
        if name == "RETURN_CONST":
            return False  # returns something else: the item would be lost on the stack
        if name in _CONTAINERS:
            popped = (2 * ins.arg if name == "BUILD_MAP" else ins.arg) + _CONTAINERS[name]
            if popped > above:
                if name == "BUILD_CONST_KEY_MAP" and above == 0:
                    return False  # the keys tuple would be the tracked value
                above = 0  # the container, on top, now holds the item
            else:
                above = above - popped + 1
            continue
        try:
            net = dis.stack_effect(ins.opcode, ins.arg, jump=False)
        except (ValueError, TypeError):
            return False
        popped = max(0, 1 - net)  # at most one value pushed: pops never underestimated
        if name in ("LOAD_METHOD", "LOAD_ATTR") and above == 0:
            popped = 1  # a lookup on the item itself (refused when it runs, too)
        if popped > above:
            return False
        above += net
    return False
