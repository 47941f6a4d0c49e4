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


for _name, _c_text, _doc in (("Input", "mica_input()", "The standard input stream."),
                             ("ErrOutput", "mica_error_output()", "The standard error stream, unbuffered.")):
    _check, _lower = standard_stream(_c_text)
    define(_name, check=_check, lower=_lower, signature=f"{_name} : stream", doc=_doc)
define("Close", check=check_close, lower=lower_close,
       signature="Close(f : stream) : boolean",
       doc="Closes f, which holds no stream afterwards; a file OpenWrite opened appears now.")
define("Flush", check=check_signature([STREAM], BOOLEAN),
       lower=runtime_call("mica_stream_flush", BOOLEAN, with_line=True, with_must=True),
       signature="Flush(f : stream) : boolean", doc="Sends what the stream holds to its file or connection.")
define_calls({
    "OpenRead": ([STRING, Lent(STREAM)], BOOLEAN, "mica_open_read", False,
                 "OpenRead(path : string; address f : stream) : boolean",
                 "Opens the file at path into f to read it; false with the reason for LastError."),
    "OpenWrite": ([STRING, Lent(STREAM)], BOOLEAN, "mica_open_write", False,
                  "OpenWrite(path : string; address f : stream) : boolean",
                  "Opens the file at path into f to write it atomically: it appears whole at Close, or not at all."),
    "OpenAppend": ([STRING, Lent(STREAM)], BOOLEAN, "mica_open_append", False,
                   "OpenAppend(path : string; address f : stream) : boolean",
                   "Opens the file at path into f to write at its end, making it when it is missing."),
    "ReadLine": ([STREAM, Lent(STRING)], BOOLEAN, "mica_read_line", True,
                 "ReadLine(f : stream; address line : string) : boolean",
                 "Reads the next line of f into line, without its line break; false at the end."),
    "ReadBytes": ([STREAM, INTEGER, Lent(STRING)], BOOLEAN, "mica_read_bytes", True,
                  "ReadBytes(f : stream; n : integer; address s : string) : boolean",
                  "Reads the next n bytes of f into s, fewer only at the end; false at the end."),
    "ReadFile": ([STRING], STRING, "mica_read_file", True, "ReadFile(path : string) : string",
                 "The whole file at path; traps when it cannot be read."),
    "WriteFile": ([STRING, STRING], VOID, "mica_write_file", True, "WriteFile(path, text : string)",
                  "Writes text as the whole file at path, atomically; traps when it cannot."),
    "FileExists": ([STRING], BOOLEAN, "mica_file_exists", False, "FileExists(path : string) : boolean",
                   "Whether path names a file or folder that exists."),
    "ListDir": ([STRING, Lent(STRINGS)], BOOLEAN, "mica_list_dir", False,
                "ListDir(path : string; address names : array of string) : boolean",
                "The folder's entries into names, bare names sorted in byte order, without '.' and '..'."),
    "MakeDir": ([STRING], BOOLEAN, "mica_make_dir", False, "MakeDir(path : string) : boolean",
                "Makes one folder, whose parent must exist; one that exists is refused."),
    "RemoveFile": ([STRING], BOOLEAN, "mica_remove_file", False, "RemoveFile(path : string) : boolean",
                   "Removes a file; a folder is refused."),
    "RenameFile": ([STRING, STRING], BOOLEAN, "mica_rename_file", False, "RenameFile(from, to : string) : boolean",
                   "Renames from to to, replacing a file at to."),
    "FileSize": ([STRING, Lent(INTEGER)], BOOLEAN, "mica_file_size", False,
                 "FileSize(path : string; address n : integer) : boolean",
                 "The size in bytes of the file at path into n; a folder is refused."),
})
