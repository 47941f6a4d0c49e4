"""Streams, files and folders (LANGUAGE.md section 11). A `stream` is a file opened
for reading, writing (atomically: it appears whole at Close) or appending, or one of
the standard three; Write and WriteLn take one first (output.py, with Output). Each
operation that can fail for a reason outside the program answers false and leaves
the reason, naming the path, for LastError. Using a stream that is not open, or
reading one opened for writing, is a program error and traps."""

from __future__ import annotations

from .. import ast
from ..cvalue import CValue
from ..types import BOOLEAN, ERROR, STREAM, STRING, VOID, ErrorType, INTEGER
from .registry import define
from .checking import Lent, arity, check_signature, wrong
from .library import STRINGS, define_calls, runtime_call


def standard_stream(c_text: str):
    """Input and ErrOutput: values, not variables, so they are never closed."""

    def lower(f, call: ast.Call) -> CValue:
        return CValue(c_text, STREAM)

    return check_signature([], STREAM), lower


def check_close(a, call: ast.Call, expected):
    """Close(f): the variable holds no stream afterwards, so it must be one."""
    if not arity(a, call, 1):
        return ERROR
    t = a.place(call.args[0], "close")
    if isinstance(t, ErrorType):
        return ERROR
    return BOOLEAN if t == STREAM else wrong(a, call, call.args[0], t, "a stream variable")


def lower_close(f, call: ast.Call) -> CValue:
    place = f.place(call.args[0]).text
    must = "true" if f.result_unused(call) else "false"  # a Close whose answer nobody reads traps when refused
    return CValue(f"mica_stream_close(&{place}, {must}, {call.pos.line})", BOOLEAN)


for _name, _c_text in (("Input", "mica_input()"), ("ErrOutput", "mica_error_output()")):
    _check, _lower = standard_stream(_c_text)
    define(_name, check=_check, lower=_lower)
define("Close", check=check_close, lower=lower_close)
define("Flush", check=check_signature([STREAM], BOOLEAN),
       lower=runtime_call("mica_stream_flush", BOOLEAN, with_line=True, with_must=True))
define_calls({
    "OpenRead": ([STRING, Lent(STREAM)], BOOLEAN, "mica_open_read", False),
    "OpenWrite": ([STRING, Lent(STREAM)], BOOLEAN, "mica_open_write", False),
    "OpenAppend": ([STRING, Lent(STREAM)], BOOLEAN, "mica_open_append", False),
    "ReadLine": ([STREAM, Lent(STRING)], BOOLEAN, "mica_read_line", True),
    "ReadBytes": ([STREAM, INTEGER, Lent(STRING)], BOOLEAN, "mica_read_bytes", True),
    "ReadFile": ([STRING], STRING, "mica_read_file", True),
    "WriteFile": ([STRING, STRING], VOID, "mica_write_file", True),
    "FileExists": ([STRING], BOOLEAN, "mica_file_exists", False),
    "ListDir": ([STRING, Lent(STRINGS)], BOOLEAN, "mica_list_dir", False),
    "MakeDir": ([STRING], BOOLEAN, "mica_make_dir", False),
    "RemoveFile": ([STRING], BOOLEAN, "mica_remove_file", False),
    "RenameFile": ([STRING, STRING], BOOLEAN, "mica_rename_file", False),
    "FileSize": ([STRING, Lent(INTEGER)], BOOLEAN, "mica_file_size", False),
})
