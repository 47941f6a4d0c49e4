"""The runtime library's plain functions of numbers, strings, files, the command
line and the clock, each one runtime call: Copy, Pos, IntToStr, ReadFile, Clock..."""

from __future__ import annotations

from .. import ast
from ..cvalue import CValue
from ..types import BOOLEAN, FLOAT64, INTEGER, STRING, VOID, Type
from . import define
from .checking import check_signature
from .lowering import NOTHING, borrowed_args


def runtime_call(function: str, result: Type, with_line: bool = False):
    """A builtin that is one runtime call on its (borrowed) arguments."""

    def lower(f, call: ast.Call) -> CValue:
        args = borrowed_args(f, call)
        if with_line:
            args.append(str(call.pos.line))
        text = f"{function}({', '.join(args)})"
        if result is None:
            f.emit.line(text + ";")
            return NOTHING
        return CValue(text, result, owned=result == STRING)

    return lower


# name: (parameter types, result type, the runtime function, whether it takes the line)
LIBRARY = {
    "Copy": ([STRING, INTEGER, INTEGER], STRING, "mica_str_sub", False),
    "Pos": ([STRING, STRING], INTEGER, "mica_str_pos", False),
    "Ord": ([STRING], INTEGER, "mica_str_ord", True),
    "Chr": ([INTEGER], STRING, "mica_str_chr", True),
    "IntToStr": ([INTEGER], STRING, "mica_str_of_int", False),
    "StrToInt": ([STRING], INTEGER, "mica_str_to_int", True),
    "StrToFloat": ([STRING], FLOAT64, "mica_str_to_f64", True),
    "UpperCase": ([STRING], STRING, "mica_str_upper", False),
    "LowerCase": ([STRING], STRING, "mica_str_lower", False),
    "Trim": ([STRING], STRING, "mica_str_trim", False),
    "ParamCount": ([], INTEGER, "mica_param_count", False),
    "ParamStr": ([INTEGER], STRING, "mica_param_str", False),
    "Halt": ([INTEGER], VOID, "mica_halt", True),
    "Clock": ([], FLOAT64, "mica_clock", False),
    "ReadFile": ([STRING], STRING, "mica_read_file", True),
    "WriteFile": ([STRING, STRING], VOID, "mica_write_file", True),
    "FileExists": ([STRING], BOOLEAN, "mica_file_exists", False),
    "LastError": ([], STRING, "mica_last_error", False),
}
for _name, (_params, _result, _function, _with_line) in LIBRARY.items():
    define(_name, check=check_signature(_params, _result),
           lower=runtime_call(_function, None if _result is VOID else _result, _with_line))
