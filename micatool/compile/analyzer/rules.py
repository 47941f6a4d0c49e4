"""What the analyzer's parts share: limits, and questions about places and types that
need no analyzer state."""

from __future__ import annotations

import math
import struct

from ...diagnostics import Hint
from .. import ast
from ..types import STRING, Array, Tensor, Type, is_tracked, plain

TENSOR_CONSTRUCTORS = {"vector": 1, "matrix": 2, "tensor": None}
STATIC_LIMIT_BYTES = 1 << 40
# Globals are C statics: with the default (small) code model the code reaches them
# and the C library's own statics 32-bit relative (x86_64; aarch64's reach is 4 GiB),
# so all of them and the code must fit in 2 GiB. This leaves the code 1 GiB of it.
GLOBALS_LIMIT_BYTES = 1 << 30
FLOAT32_OVERFLOW = 3.4028235677973366e38  # the least magnitude that rounds to float32's infinity
# A stream owns an open file, so it is never copied (5020), nor held where a copy would be made (5021).
STREAM_COPIED = "a stream cannot be copied: it owns an open file; {}"
STREAM_ALONE = "a stream cannot be {}: it owns an open file, so it lives in a variable and is lent by 'address'"


# ---------------------------------------------------------------- free helpers


def not_addressable(t: Type) -> str:
    return f"data type '{t}' cannot be used in memory operation 'address of' (requires addressable)"


NOT_LENT = "a tracked place is never lent by 'address': the tape would not see what is written through it"
OPTIMIZERS = ("AdamStep", "SgdStep")


def plain_twin(place: ast.Expr, t: Type, call: ast.Call) -> tuple[Hint, ...]:
    """5119's hints where a call is lent a tracked place: the pattern training programs use,
    a plain twin the call writes, copied into the tracked place after it (which re-adopts it)."""
    if not is_tracked(t):
        return ()
    name = ast.place_text(place)
    twin = f"{place.ident}p" if isinstance(place, ast.Name) else "twin"
    callee = call.callee.ident
    if callee in OPTIMIZERS and isinstance(call.args[0], ast.AddressArg) and call.args[0].place is place:
        how = f"let {callee} step a plain twin of '{name}', and copy the twin into '{name}' after each step:"
        lent = f"{callee}(address {twin}, Gradient({name}), ...);"
    else:
        how = f"let {callee} write a plain twin of '{name}', and copy the twin into '{name}' after the call:"
        lent = f"{callee}(address {twin}, ...);"
    program = "\n".join([how, f"    var {twin} : {plain(t)};", "    ...", f"    {lent}", f"    {name} := {twin};"])
    return Hint.note(NOT_LENT), Hint.help(program)


def tracked_parameter(name: str, t: Type) -> tuple[Hint, ...]:
    """5119's hints where a parameter is declared 'address' of a tracked type: the two it may mean."""
    if not is_tracked(t):
        return ()
    return (Hint.note(NOT_LENT),
            Hint.help(f"to write the place, take it plain ('address {name} : {plain(t)}') and lend it a plain twin"),
            Hint.help(f"to compute with it on the tape, take it by value ('{name} : {t}')"))


def count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def is_dynamic_row(target: ast.Expr) -> bool:
    """m[i] with m a dynamic matrix: a row that is storage inside m, not a value of its own."""
    if not isinstance(target, ast.Index):
        return False
    t, left = plain(target.base.ty), len(target.indices)
    while left and isinstance(t, Array):
        t, left = plain(t.element), left - 1
    return isinstance(t, Tensor) and t.is_dynamic and 0 < left < t.rank


def to_float32(x: float) -> float:
    """x rounded to the nearest float32 (infinity past its range), as a Python float."""
    try:
        return struct.unpack("f", struct.pack("f", x))[0]
    except OverflowError:  # struct rounds as a C cast does, and refuses what rounds to infinity
        return math.copysign(math.inf, x)


LOGICAL = frozenset(["and", "or"])
COMPARISONS = frozenset(["=", "<>", "<", "<=", ">", ">="])


def device_scalar(t: Type) -> bool:
    return isinstance(t, Tensor) and t.rank == 0


def dynamic_storage_roots(place: ast.Expr) -> set:
    """The variable whose dynamic storage holds the place, when an index reaches into some."""
    e = place
    while isinstance(e, ast.Field | ast.Index):
        if isinstance(e, ast.Index) and indexes_dynamic_storage(e):
            root = ast.root_name(place)
            return {root.symbol} if root is not None else set()
        e = e.base
    return set()


def indexes_dynamic_storage(e: ast.Index) -> bool:
    t = plain(e.base.ty)
    for _ in e.indices:
        if isinstance(t, Array | Tensor) and t.is_dynamic:
            return True
        if not isinstance(t, Array):
            return False
        t = plain(t.element)
    return False


def indexes_string(e: ast.Expr) -> bool:
    return isinstance(e, ast.Index) and plain(e.base.ty) == STRING


def writes_part_of_tracked(e: ast.Expr) -> bool:
    return isinstance(e, ast.Index) and is_tracked(e.base.ty)


def shapes_free(t: Type) -> Type | None:
    """The expected type to hand a literal argument: only a fully known shape helps."""
    inner = plain(t)
    if isinstance(inner, Tensor) and inner.shape is not None and not inner.is_concrete:
        return Tensor(inner.element, None, inner.rank)
    return inner
