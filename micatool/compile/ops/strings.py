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
    "Copy": ([STRING, INTEGER, INTEGER], STRING, "mica_str_sub", False,
             "Copy(s : string; start, count : integer) : string",
             "The count bytes of s from position start (from 1), clamped to the string."),
    "Pos": ([STRING, STRING], INTEGER, "mica_str_pos", False, "Pos(sub, s : string) : integer",
            "The position of the first sub in s, from 1; 0 when it is absent."),
    "Ord": ([STRING], INTEGER, "mica_str_ord", True, "Ord(c : string) : integer",
            "The byte value of a one-byte string; traps on any other."),
    "Chr": ([INTEGER], STRING, "mica_str_chr", True, "Chr(code : integer) : string",
            "The one-byte string of the byte code, 0 to 255; traps on any other."),
    "IntToStr": ([INTEGER], STRING, "mica_str_of_int", False, "IntToStr(n : integer) : string",
                 "n written in decimal."),
    "StrToInt": ([STRING], INTEGER, "mica_str_to_int", True, "StrToInt(s : string) : integer",
                 "The integer s spells (an optional sign and decimal digits); traps on text that is not one."),
    "StrToFloat": ([STRING], FLOAT64, "mica_str_to_f64", True, "StrToFloat(s : string) : float64",
                   "The number s spells; traps on text that is not a number."),
    "TryStrToInt": ([STRING, Lent(INTEGER)], BOOLEAN, "mica_str_try_int", False,
                    "TryStrToInt(s : string; address n : integer) : boolean",
                    "StrToInt of s into n, or false with the reason for LastError, leaving n as it was."),
    "TryStrToFloat": ([STRING, Lent(FLOAT64)], BOOLEAN, "mica_str_try_f64", False,
                      "TryStrToFloat(s : string; address x : float64) : boolean",
                      "StrToFloat of s into x, or false with the reason for LastError, leaving x as it was."),
    "UpperCase": ([STRING], STRING, "mica_str_upper", False, "UpperCase(s : string) : string",
                  "s with its ASCII letters in upper case."),
    "LowerCase": ([STRING], STRING, "mica_str_lower", False, "LowerCase(s : string) : string",
                  "s with its ASCII letters in lower case."),
    "Trim": ([STRING], STRING, "mica_str_trim", False, "Trim(s : string) : string",
             "s without the blank space at its start and end."),
    "Replace": ([STRING, STRING, STRING], STRING, "mica_str_replace", False, "Replace(s, old, new : string) : string",
                "s with every occurrence of old, left to right and not overlapping, replaced by new."),
    "StartsWith": ([STRING, STRING], BOOLEAN, "mica_str_starts_with", False, "StartsWith(s, p : string) : boolean",
                   "Whether s begins with p."),
    "EndsWith": ([STRING, STRING], BOOLEAN, "mica_str_ends_with", False, "EndsWith(s, p : string) : boolean",
                 "Whether s ends with p."),
    "Split": ([STRING, STRING], STRINGS, "mica_str_split", False, "Split(s, sep : string) : array of string",
              "The fields of s between the separators sep, empty ones kept."),
})


def lower_join(f, call: ast.Call) -> CValue:
    parts, sep = (borrowed_arg(f, arg) for arg in call.args)
    return CValue(f"mica_str_join({parts}.e, {parts}.len, {sep})", STRING, owned=True)


define("Join", check=check_signature([STRINGS, STRING], STRING), lower=lower_join,
       signature="Join(parts : array of string; sep : string) : string",
       doc="The parts with sep between them; no parts give ''.")
