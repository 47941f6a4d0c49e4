"""Regular expressions (LANGUAGE.md section 11): Compile, IsMatch, Find, FindAll
and ReplaceAll on `regex` values, each one call of the engine in
runtime_c/mica_regex.c (RE2 syntax, a Pike VM: linear in the text).

Compile answers false for a malformed pattern and leaves the reason for
LastError; the matching calls take the line, to trap on a regex never compiled.
"""

from __future__ import annotations

from .. import ast
from ..cvalue import CValue
from ..types import BOOLEAN, REGEX, STRING
from .registry import define
from .checking import Lent, check_signature
from .library import STRINGS, define_calls
from .lowering import borrowed_arg

define_calls({
    "Compile": ([STRING, Lent(REGEX)], BOOLEAN, "mica_regex_compile", False),
    "IsMatch": ([REGEX, STRING], BOOLEAN, "mica_regex_is_match", True),
    "Find": ([REGEX, STRING, Lent(STRINGS)], BOOLEAN, "mica_regex_find", True),
    "ReplaceAll": ([REGEX, STRING, STRING], STRING, "mica_regex_replace_all", True),
})


def lower_find_all(f, call: ast.Call) -> CValue:
    """FindAll(re, s): a fresh array of string, filled by the runtime through its fields."""
    re, s = (borrowed_arg(f, arg) for arg in call.args)
    matches = f.declare(STRINGS)
    f.line(f"mica_regex_find_all({re}, {s}, &{matches}.len, &{matches}.e, {call.pos.line});")
    return CValue(matches, STRINGS, owned=True, lvalue=True)


define("FindAll", check=check_signature([REGEX, STRING], STRINGS), lower=lower_find_all)
