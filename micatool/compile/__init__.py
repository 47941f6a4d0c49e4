"""Compilation: Mica source -> AST -> analyzed program -> desugared program -> CProgram.

The driver calls front_end (parse and analyze, raising CompileError with every
diagnostic) and compile_program (that, then desugar and lower) in that order;
nothing flows back upstream. A CProgram's fields say what the link stage needs
to know: its C, its PTX, whether it uses the GPU, the kernels it launches.
"""

from __future__ import annotations

import gc
import sys

from ..diagnostics import MAX_ERRORS, CompileError, Diagnostic, SourceFile
from . import ast, descent, units
from .analyzer import Analysis, analyze
from .cprogram import CProgram
from .desugar import desugar
from .lower import lower
from .source import SourceError, load_source, parse, parse_recovering


# The stages walk the tree recursively, a few Python frames per level; the
# parser lets a program nest up to descent.MAX_NESTING levels.
RECURSION_LIMIT = 20_000


def front_end(source: SourceFile, keep_tree: bool = True, include: tuple[str, ...] = ()) -> Analysis:
    """The analyzed program, or unit, with the units it uses (found beside it, then in
    the `include` folders, then in MICA_PATH's). Without keep_tree (`micatool check`),
    the statements of the main body and of each routine of the given file are parsed
    as they are checked and not kept (the Analysis has none of them), so memory holds
    declarations, not statements."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
    # The tree only grows while it is built and analyzed: the cycle collector would
    # rescan all of it again and again (half the front end's time on large programs).
    collecting = gc.isenabled()
    gc.disable()
    try:
        if not keep_tree:
            try:
                return check_streaming(source, include)
            except (descent.Fallback, RecursionError):
                pass  # a syntax error somewhere: the whole-tree path below explains it
        tree, syntax, repairs = parse_recovering(source)
        if syntax:
            raise CompileError(syntax + what_parsed_says(source, tree, repairs, include),
                               stopped=len(syntax) >= MAX_ERRORS)
        return analyze(source, tree, units.load(source, tree, include))
    finally:
        if collecting:
            gc.enable()


def what_parsed_says(source: SourceFile, tree, repairs, include: tuple[str, ...]) -> list[Diagnostic]:
    """The analyzer's diagnostics of a file whose syntax errors were repaired (so an
    editor shows a type error while another line is unfinished), but those the
    repairs made (repair.RepairedText.made_up)."""
    if tree is None:
        return []
    try:
        analyze(source, tree, units.load(source, tree, include))
    except CompileError as e:
        return [d for d in e.diagnostics if d.source is not source or not repairs.made_up(d.pos.line, d.code)]
    return []


def check_streaming(source: SourceFile, include: tuple[str, ...]) -> Analysis:
    """analyze, on a tree whose statements are parsed as they are checked and then
    dropped. Its diagnostics are the whole tree's: a check that stopped at 100
    errors reads the rest, for a syntax error there would come first."""
    tree = descent.parse_streaming(source.text)
    used = units.load(source, tree, include)
    try:
        return analyze(source, tree, used)
    except CompileError as e:
        if e.stopped:
            descent.read_rest(tree)
        raise


def compile_program(source: SourceFile, include: tuple[str, ...] = ()) -> CProgram:
    return lower(desugar(require_program(front_end(source, include=include))))


def require_program(analysis: Analysis) -> Analysis:
    """`analysis`, if it is a program's: a unit is checked alone but never built (2011)."""
    if isinstance(analysis.program, ast.Unit):
        raise CompileError([Diagnostic(analysis.source, analysis.program.pos, 2011,
                                       f"'{analysis.program.name}' is a unit, not a program: build and run a "
                                       f"program that uses it; `micatool check` checks a unit alone")])
    return analysis
