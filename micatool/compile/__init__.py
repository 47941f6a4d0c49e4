"""Compilation: Mica source -> AST -> analyzed program -> desugared program -> CProgram.

The driver calls front_end (parse and analyze, raising CompileError with every
diagnostic) and compile_program (that, then desugar and lower) in that order;
nothing flows back upstream. A CProgram's fields say what the link stage needs
to know: its C, its PTX, whether it uses the GPU, the kernels it launches.
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path

from ..diagnostics import CompileError, Diagnostic, SourceFile
from . import descent
from .analyzer import Analysis, analyze
from .cprogram import CProgram
from .desugar import desugar
from .lower import lower


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


def parse(source: SourceFile):
    """The program's tree (ast.Program), or the CompileError that says what is wrong."""
    try:
        return descent.parse(source.text)
    except (descent.Fallback, RecursionError):
        from . import lark_parser  # only a program with an error (or absurd nesting) waits for lark

        return lark_parser.parse(source)


# The stages walk the tree recursively, a few Python frames per level; the
# parser lets a program nest up to descent.MAX_NESTING levels.
RECURSION_LIMIT = 20_000


def front_end(source: SourceFile, keep_tree: bool = True) -> Analysis:
    """The analyzed program. Without keep_tree (`micatool check`), the statements of
    the main body and of each routine are parsed as they are checked and not kept
    (the Analysis has none of them), so memory holds declarations, not statements."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
    # The tree only grows while it is built and analyzed: the cycle collector would
    # rescan all of it again and again (half the front end's time on large programs).
    collecting = gc.isenabled()
    gc.disable()
    try:
        if not keep_tree:
            try:
                return check_streaming(source)
            except (descent.Fallback, RecursionError):
                pass  # a syntax error somewhere: the whole-tree path below explains it
        return analyze(source, parse(source))
    finally:
        if collecting:
            gc.enable()


def check_streaming(source: SourceFile) -> Analysis:
    """analyze, on a tree whose statements are parsed as they are checked and then
    dropped. Its diagnostics are the whole tree's: a check that stopped at 100
    errors reads the rest, for a syntax error there would come first."""
    program = descent.parse_streaming(source.text)
    try:
        return analyze(source, program)
    except CompileError as e:
        if e.stopped:
            descent.read_rest(program)
        raise


def compile_program(source: SourceFile) -> CProgram:
    return lower(desugar(front_end(source)))
