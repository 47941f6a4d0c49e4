"""Strings: bytes with value semantics (UTF-8 passes through untouched), positions
from 1. Copy, Pos, Ord, Chr, the conversions to and from numbers, the case and trim
functions; Split, Join, Replace, StartsWith, EndsWith, and the Try conversions,
which answer false with the reason instead of trapping."""

from __future__ import annotations

from .. import ast
from ..cvalue import CValue
from ..types import BOOLEAN, FLOAT64, INTEGER, STRING
from .registry import define
from .checking import Lent, check_signature
from .library import STRINGS, define_calls
from .lowering import borrowed_arg

define_calls({
    "Copy": ([STRING, INTEGER, INTEGER], STRING, "mica_str_sub", False),
    "Pos": ([STRING, STRING], INTEGER, "mica_str_pos", False),
    "Ord": ([STRING], INTEGER, "mica_str_ord", True),
    "Chr": ([INTEGER], STRING, "mica_str_chr", True),
    "IntToStr": ([INTEGER], STRING, "mica_str_of_int", False),
    "StrToInt": ([STRING], INTEGER, "mica_str_to_int", True),
    "StrToFloat": ([STRING], FLOAT64, "mica_str_to_f64", True),
    "TryStrToInt": ([STRING, Lent(INTEGER)], BOOLEAN, "mica_str_try_int", False),
    "TryStrToFloat": ([STRING, Lent(FLOAT64)], BOOLEAN, "mica_str_try_f64", False),
    "UpperCase": ([STRING], STRING, "mica_str_upper", False),
    "LowerCase": ([STRING], STRING, "mica_str_lower", False),
    "Trim": ([STRING], STRING, "mica_str_trim", False),
    "Replace": ([STRING, STRING, STRING], STRING, "mica_str_replace", False),
    "StartsWith": ([STRING, STRING], BOOLEAN, "mica_str_starts_with", False),
    "EndsWith": ([STRING, STRING], BOOLEAN, "mica_str_ends_with", False),
})


def lower_split(f, call: ast.Call) -> CValue:
    """Split(s, sep): a fresh array of string, filled by the runtime through its fields."""
    s, sep = (borrowed_arg(f, arg) for arg in call.args)
    parts = f.declare(STRINGS)
    f.line(f"mica_str_split({s}, {sep}, &{parts}.len, &{parts}.e);")
    return CValue(parts, STRINGS, owned=True, lvalue=True)


def lower_join(f, call: ast.Call) -> CValue:
    parts, sep = (borrowed_arg(f, arg) for arg in call.args)
    return CValue(f"mica_str_join({parts}.e, {parts}.len, {sep})", STRING, owned=True)


define("Split", check=check_signature([STRING, STRING], STRINGS), lower=lower_split)
define("Join", check=check_signature([STRINGS, STRING], STRING), lower=lower_join)
