"""Diagnostics: every error the toolchain shows a user passes through here.

Takes a source file and a position, gives the one text form LANGUAGE.md §9 fixes:

    prog.mica:31:14: analyzer error 5119: message
        <the source line>
        <spaces>^

Code ranges: 1xxx lexical, 2xxx syntax, 3xxx names, 4xxx types,
5xxx places, borrows and tracked values, 6xxx shapes, 7xxx GPU residency.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class SourceFile:
    """A Mica source text and the name diagnostics call it by."""

    name: str
    text: str

    def line(self, number: int) -> str:
        lines = self.text.splitlines()
        if 1 <= number <= len(lines):
            return lines[number - 1]
        return ""


@dataclass(frozen=True)
class Pos:
    line: int
    col: int


@dataclass(frozen=True)
class Diagnostic:
    source: SourceFile
    pos: Pos
    code: int
    message: str

    def render(self) -> str:
        head = f"{self.source.name}:{self.pos.line}:{self.pos.col}: analyzer error {self.code}: {self.message}"
        # Control characters (a binary file given as source) show as one replacement mark each.
        text = "".join(c if c == "\t" or c.isprintable() else "\ufffd" for c in self.source.line(self.pos.line))
        # The caret keeps the source line's tabs so it lines up in any terminal.
        lead = "".join(c if c == "\t" else " " for c in text[: self.pos.col - 1])
        return f"{head}\n    {text}\n    {lead}^"


class CompileError(Exception):
    """Raised when a stage found errors; carries all of them in source order."""

    def __init__(self, diagnostics: list[Diagnostic]):
        self.diagnostics = sorted(diagnostics, key=lambda d: (d.pos.line, d.pos.col))
        super().__init__("\n".join(d.render() for d in self.diagnostics))


@dataclass
class Reporter:
    """Collects diagnostics for one source file, so a stage can report many."""

    source: SourceFile
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def error(self, pos: Pos, code: int, message: str) -> None:
        diagnostic = Diagnostic(self.source, pos, code, message)
        if diagnostic not in self.diagnostics:
            self.diagnostics.append(diagnostic)

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
