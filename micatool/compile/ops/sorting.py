"""Sort: an array of numbers or strings into ascending order, stable, in
O(n log n) (runtime_c/mica_sort.c); with a second array, its elements move
with the first's."""

from __future__ import annotations

from .. import ast
from ..c_types import SUFFIX
from ..cvalue import CValue
from ..types import ERROR, STRING, VOID, Array, ErrorType, Scalar, Type, plain
from .checking import arity, wrong
from .lowering import NOTHING
from .registry import define


def sortable(t: Type) -> bool:
    """An array of integers, floats or strings: what Sort orders."""
    element = t.element if isinstance(t, Array) else None
    return element == STRING or (isinstance(element, Scalar) and element.is_numeric)


def check_sort(a, call, expected) -> Type:
    if not arity(a, call, 1, 2):
        return ERROR
    keys = a.address_arg(call.args[0], "Sort's first argument")
    if not isinstance(keys, ErrorType) and not sortable(plain(keys)):
        wrong(a, call, call.args[0].place, keys, "an array of integers, floats or strings")
    if len(call.args) == 2:
        other = a.address_arg(call.args[1], "Sort's second argument")
        if isinstance(other, ErrorType):
            return VOID
        if not isinstance(plain(other), Array):
            wrong(a, call, call.args[1].place, other, "an array as its second argument")
        elif not isinstance(keys, ErrorType) and isinstance(plain(keys), Array) \
                and not plain(keys).is_dynamic and not plain(other).is_dynamic \
                and plain(keys).length != plain(other).length:
            a.error(call, 6013, f"Sort moves the second array's elements with the first's, so both hold as many: "
                                f"found {plain(keys).length} and {plain(other).length}")
    return VOID


def extent(place: CValue) -> str:
    t = plain(place.type)
    return f"{place.text}.len" if t.is_dynamic else str(t.length)


def lower_sort(f, call: ast.Call) -> CValue:
    keys = f.place(call.args[0].place)
    element = plain(keys.type).element
    suffix = "str" if element == STRING else SUFFIX[element]
    other = "NULL, 0, 0"
    if len(call.args) == 2:
        moved = f.place(call.args[1].place)
        other = f"{moved.text}.e, {extent(moved)}, sizeof({f.types.name(plain(moved.type).element)})"
    f.line(f"mica_sort_{suffix}({keys.text}.e, {extent(keys)}, {other}, {call.pos.line});")
    return NOTHING


define("Sort", check=check_sort, lower=lower_sort,
       signature="Sort(address a : array; address b : optional array)",
       doc="Sorts a into ascending order, stably; the elements of b, when given, move with a's.")
