"""The lines of a C function, each with the Mica line it lowers, written as C text
plainly or with #line directives.

The plain text is what `micatool emit-c` shows and what the checked and fast
tiers compile. A build that keeps line tables (the debug tier, or --symbols)
compiles the text with directives instead, so that a debugger and a profiler
name the .mica file and line. The C compiler counts lines on from a directive,
so each Mica line's C is written as one physical line: the next Mica line is
then the one it counts to, and only a jump (a blank line, a loop's test, a
routine's start, another file) needs a directive. Positions are the program's
(diagnostics.FILE_LINE_BITS): the file's place among the program's files, then
its line.
"""

from __future__ import annotations

from typing import NamedTuple

from ...diagnostics import FILE_LINE_BITS, MAX_FILE_LINES
from ..c_types import c_string_literal


class Line(NamedTuple):
    depth: int  # its indentation, in levels of four spaces
    text: str
    at: int | None  # the Mica line it lowers; None for the line before's (a routine's epilogue)


def plain(lines: list[Line]) -> str:
    return "\n".join("    " * line.depth + line.text for line in lines)


class Directives:
    """#line directives naming the program's files (its own, then its units', in the
    order of their places) as the user gave them, so a debugger run in the folder
    micatool ran in finds each."""

    def __init__(self, names: list[str]):
        self.names = [c_string_literal(name) for name in names]

    def render(self, lines: list[Line]) -> str:
        out: list[str] = []
        at = None  # the Mica line of the physical line being written
        for line in lines:
            if out and line.at in (None, at):
                out[-1] += " " + line.text
                continue
            if at is None or line.at != at + 1:
                out.append(self.directive(line.at))
            out.append("    " * line.depth + line.text)
            at = line.at
        return "\n".join(out)

    def directive(self, at: int) -> str:
        return f"#line {at & MAX_FILE_LINES} {self.names[at >> FILE_LINE_BITS]}"


def function(prototype: str, at: int, prologue: list[str], body: list[Line], epilogue: list[str]) -> list[Line]:
    """A whole C function: its opening and prologue at the line that declares it, its
    body, then its epilogue and closing brace, which end the body's last line (a
    debugger stepping past the last statement leaves the routine)."""
    return [Line(0, f"{prototype} {{", at), *(Line(1, text, at) for text in prologue), *body,
            *(Line(1, text, None) for text in epilogue), Line(0, "}", None)]
