"""Reading a Mica file: its text (UTF-8, checked) and its tree.

A valid file is parsed by descent.py, fast; a file with an error is parsed
again by lark (lark_parser.py), which says what is wrong.
"""

from __future__ import annotations

from pathlib import Path

from ..diagnostics import CompileError, Diagnostic, SourceFile
from . import ast, descent


class SourceError(Exception):
    """The file could not be read at all."""


def load_source(path: str) -> SourceFile:
    if not path.endswith(".mica"):  # and so its binary, named after it, never overwrites it
        raise SourceError(f"'{path}' is not a Mica source file: its name must end in .mica")
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise SourceError(f"cannot read '{path}': {e.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        source = SourceFile(path, data[: e.start].decode("utf-8"))
        raise CompileError([Diagnostic(source, source.pos_at(len(source.text)), 1007,
                                       f"the file is not valid UTF-8 (byte 0x{data[e.start]:02x})")]) from None
    return SourceFile(path, text.removeprefix("\ufeff"))  # a byte-order mark is no part of the program


def parse(source: SourceFile) -> ast.Program | ast.Unit:
    """The file's tree, or the CompileError that says what is wrong: every syntax error."""
    try:
        return descent.parse(source.text)
    except (descent.Fallback, RecursionError):
        from . import lark_parser  # only a program with an error (or absurd nesting) waits for lark

        return lark_parser.parse(source)


def parse_recovering(source: SourceFile):
    """The file's tree (of the text with its syntax errors repaired, None if they cannot
    be), the syntax errors' diagnostics, and the repairs (repair.RepairedText, None
    when there were none)."""
    try:
        return descent.parse(source.text), [], None
    except (descent.Fallback, RecursionError):
        from . import lark_parser

        return lark_parser.parse_recovering(source)
