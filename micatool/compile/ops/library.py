"""The runtime library's plain functions, each one runtime call: the command line,
Halt, the clock and LastError; and the table that strings.py and streams.py define
their one-call functions by."""

from __future__ import annotations

from .. import ast
from ..cvalue import CValue
from ..types import FLOAT64, INTEGER, STRING, VOID, Array, Type, plain
from .registry import define
from .checking import check_signature
from .lowering import NOTHING, borrowed_arg

STRINGS = Array(STRING, None, None)  # `array of string`: the runtime fills one through its two fields


def runtime_call(function: str, result: Type | None, with_line: bool = False, with_must: bool = False):
    """A builtin that is one runtime call: its values borrowed, its lent places by pointer
    (an `array of string` by its two fields), then a fresh `array of string` result's two
    fields, for the runtime to fill, then whether a refusal traps because nobody reads the
    answer (as Load's does), then the line."""

    def lower(f, call: ast.Call) -> CValue:
        args = []
        for arg in call.args:
            if not isinstance(arg, ast.AddressArg):
                args.append(borrowed_arg(f, arg))
                continue
            place = f.place(arg.place).text
            args.extend([f"&{place}.len", f"&{place}.e"] if plain(arg.place.ty) == STRINGS else [f"&{place}"])
        if result == STRINGS:
            strings = f.declare(STRINGS)
            args.extend([f"&{strings}.len", f"&{strings}.e"])
        if with_must:
            args.append("true" if f.result_unused(call) else "false")
        if with_line:
            args.append(str(call.pos.line))
        text = f"{function}({', '.join(args)})"
        if result is None or result == STRINGS:
            f.line(text + ";")
            return NOTHING if result is None else CValue(strings, STRINGS, owned=True, lvalue=True)
        return CValue(text, result, owned=result == STRING)

    return lower


def define_calls(table: dict) -> None:
    """name: (parameters, result, the runtime function, whether it takes the line, the
    signature an editor shows, its line of documentation); a parameter is a type, or
    checking.Lent(type) for an `address` one."""
    for name, (params, result, function, with_line, signature, doc) in table.items():
        define(name, check=check_signature(params, result),
               lower=runtime_call(function, None if result is VOID else result, with_line),
               signature=signature, doc=doc)


define_calls({
    "ParamCount": ([], INTEGER, "mica_param_count", False, "ParamCount : integer",
                   "The number of arguments on the program's command line."),
    "ParamStr": ([INTEGER], STRING, "mica_param_str", False, "ParamStr(i : integer) : string",
                 "Argument i of the command line: 0 is the program, and past the last argument ''."),
    "Halt": ([INTEGER], VOID, "mica_halt", True, "Halt(code : integer)",
             "Ends the program with exit status code, after writing out everything it printed."),
    "Clock": ([], FLOAT64, "mica_clock", False, "Clock : float64", "Seconds on a monotonic clock."),
    "LastError": ([], STRING, "mica_last_error", False, "LastError : string",
                  "The reason this thread's last failed operation left, naming the path or the text."),
})
