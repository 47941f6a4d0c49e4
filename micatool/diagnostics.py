"""Diagnostics: every error the toolchain shows a user passes through here.

Takes a source file and a position, gives the one text form LANGUAGE.md §9 fixes:

    prog.mica:31:14: analyzer error 5119: message
        <the source line>
        <spaces>^
        = note: why, or where something came from
        = help: what to do instead
                (a help's further lines, a program's lines among them, indented under its first)

The first three lines are the contract's; a diagnostic may add any number of
notes and helps after the caret, the way rustc does.

Code ranges: 1xxx lexical, 2xxx syntax, 3xxx names, 4xxx types,
5xxx places, borrows and tracked values, 6xxx shapes, 7xxx GPU residency.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from functools import cached_property


@dataclass(frozen=True)
class SourceFile:
    """A Mica source text and the name diagnostics call it by.

    A line ends at '\n' and only there (so '\r\n' ends one too, its '\r' not shown);
    a lone '\r', a form feed and the Unicode separators are characters within a line.
    The lexer counts lines the same way, so a position's line is the line shown.
    """

    name: str
    text: str

    @cached_property
    def _line_starts(self) -> list[int]:
        return [0] + [m.end() for m in re.finditer("\n", self.text)]

    def line(self, number: int) -> str:
        """Line `number` (from 1), without the '\n' or '\r\n' that ends it."""
        if not 1 <= number <= len(self._line_starts):
            return ""
        start = self._line_starts[number - 1]
        end = self.text.find("\n", start)
        return self.text[start:] if end == -1 else self.text[start:end].removesuffix("\r")

    def pos_at(self, offset: int) -> Pos:
        """The line and column of the character at `offset` in the text."""
        line = bisect.bisect_right(self._line_starts, offset)
        return Pos(line, offset - self._line_starts[line - 1] + 1)


@dataclass(frozen=True, slots=True)
class Pos:
    line: int
    col: int


# A program of several files (units) gives each file its own range of lines:
# file i's line n is the line i << FILE_LINE_BITS | n wherever a position is
# kept, from the parser's tree to the run-time traps (runtime_c/mica_core.c).
FILE_LINE_BITS = 24
MAX_FILE_LINES = (1 << FILE_LINE_BITS) - 1
MAX_FILES = 127  # the line is a C int


@dataclass(frozen=True)
class Hint:
    """A line a diagnostic adds after its caret: a 'note' says why, or where something
    came from; a 'help' says what to write instead. Its text may run over several
    lines (a help that shows a few lines of program)."""

    kind: str  # "note" or "help"
    text: str

    @classmethod
    def note(cls, text: str) -> Hint:
        return cls("note", text)

    @classmethod
    def help(cls, text: str) -> Hint:
        return cls("help", text)

    def render(self) -> str:
        label = f"    = {self.kind}: "
        return label + self.text.replace("\n", "\n" + " " * len(label))


@dataclass(frozen=True)
class Diagnostic:
    source: SourceFile
    pos: Pos
    code: int
    message: str
    file_index: int = 0  # the file's place among a program's files: 0 the program, then its units
    hints: tuple[Hint, ...] = ()  # shown after the caret, in order

    def render(self) -> str:
        head = f"{self.source.name}:{self.pos.line}:{self.pos.col}: analyzer error {self.code}: {self.message}"
        shown, col = _window(self.source.line(self.pos.line), self.pos.col)
        # Control characters (a binary file given as source) show as one replacement mark each.
        text = "".join(c if c == "\t" or c.isprintable() else "\ufffd" for c in shown)
        # The caret keeps the source line's tabs so it lines up in any terminal.
        lead = "".join(c if c == "\t" else " " for c in text[: col - 1])
        return "\n".join([head, f"    {text}", f"    {lead}^"] + [hint.render() for hint in self.hints])

    def message_with_hints(self) -> str:
        """The message and its hints as one text, for an editor that shows no caret."""
        return "\n".join([self.message] + [f"{hint.kind}: {hint.text}" for hint in self.hints])


# A longer source line shows as this many of its characters around the caret,
# with an ellipsis for each cut end.
SHOWN_COLUMNS = 120
ELLIPSIS = "\u2026"


def _window(line: str, col: int) -> tuple[str, int]:
    """What to show of `line` for a caret at column `col`, and the caret's column in it."""
    if len(line) <= SHOWN_COLUMNS:
        return line, col
    start = max(0, min(col - 1 - SHOWN_COLUMNS // 2, len(line) - SHOWN_COLUMNS))
    end = start + SHOWN_COLUMNS
    before = ELLIPSIS if start > 0 else ""
    after = ELLIPSIS if end < len(line) else ""
    return before + line[start:end] + after, col - start + len(before)


# A stage stops at this many errors, as clang does at its -ferror-limit: one
# mistake repeated over a large file would otherwise take minutes and gigabytes
# to report, and nobody reads past the first screens.
MAX_ERRORS = 100


class CompileError(Exception):
    """Raised when a stage found errors; carries them in source order, and whether
    the stage stopped at MAX_ERRORS before looking further."""

    def __init__(self, diagnostics: list[Diagnostic], stopped: bool = False):
        # by file, the units' first in the order they are checked, then the program's
        # (or, before the files have their places, in the order the files were met)
        met = {name: i for i, name in reversed(list(enumerate(d.source.name for d in diagnostics)))}
        self.diagnostics = sorted(diagnostics, key=lambda d: (d.file_index == 0, d.file_index, met[d.source.name],
                                                              d.pos.line, d.pos.col))
        self.stopped = stopped
        text = "\n".join(d.render() for d in self.diagnostics)
        if stopped:
            text += f"\nmicatool: stopped after {MAX_ERRORS} errors; fix these and check again"
        super().__init__(text)


@dataclass
class Reporter:
    """Collects diagnostics for one source file, or for a program's files (the
    program's, then its units' by their line ranges), so a stage can report many."""

    source: SourceFile
    units: tuple[SourceFile, ...] = ()
    diagnostics: list[Diagnostic] = field(default_factory=list)
    _seen: set[tuple[Pos, int, str]] = field(default_factory=set)

    def error(self, pos: Pos, code: int, message: str, hints: tuple[Hint, ...] = ()) -> None:
        if (pos, code, message) not in self._seen:
            self._seen.add((pos, code, message))
            self.diagnostics.append(self.locate(pos, code, message, hints))
            if len(self.diagnostics) == MAX_ERRORS:
                raise CompileError(self.diagnostics, stopped=True)

    def locate(self, pos: Pos, code: int, message: str, hints: tuple[Hint, ...] = ()) -> Diagnostic:
        """The diagnostic at a position of the program's lines: its file and its line there."""
        index = pos.line >> FILE_LINE_BITS
        if not self.units or index > len(self.units):
            return Diagnostic(self.source, pos, code, message, hints=hints)
        source = self.units[index - 1] if index else self.source
        return Diagnostic(source, Pos(pos.line & MAX_FILE_LINES, pos.col), code, message, index, hints)

    def line_of(self, pos: Pos) -> str:
        """A position as a message names it: 'line 7', or 'line 7 of tokens.mica' in another file."""
        located = self.locate(pos, 0, "")
        return f"line {located.pos.line}" + (f" of {located.source.name}" if located.file_index else "")

    def check(self) -> None:
        """End of a stage: stop here if anything was reported."""
        if self.diagnostics:
            raise CompileError(self.diagnostics)


class InternalError(Exception):
    """A bug in micatool itself: shown with a request to report it, never raw."""


REPORT_HINT = (
    "this is a bug in micatool; please report it with the program that caused it "
    "(micatool emit-c shows the generated C)"
)
