"""A text's lines counted two ways, and positions turned from one count to the other.

Mica ends a line at '\n' only (docs/language.md, "Lines"): a lone '\r' is blank
space within its line, so a diagnostic's line and column, the tree's positions
and the answers of answers.py count that way. The protocol ends a line at
'\r\n', '\n' and a lone '\r' alike (LSP 3.17, "Text Documents"), and so does the
editor. A Mica line that holds k lone '\r' is k + 1 of the editor's lines; a
position on it past its j-th lone '\r' is on the j-th of those after the first.
Columns are characters (code points) both ways, from 1 in Mica's count and from 0
in the protocol's; the server turns those into the client's UTF-16 units.
"""

from __future__ import annotations

import bisect
import re

BREAK = re.compile("\r\n|\r|\n")


class Lines:
    def __init__(self, text: str):
        self.mica = text.split("\n")  # Mica's lines, each with the '\r' of a '\r\n' that ends it
        self.editor = BREAK.split(text)  # the protocol's lines
        self.first: list[int] = []  # the editor's line each of Mica's lines starts on
        line = 0
        for n, mica in enumerate(self.mica):
            self.first.append(line)
            line += 1 + (mica if n == len(self.mica) - 1 else mica.removesuffix("\r")).count("\r")

    def to_editor(self, line: int, col: int) -> tuple[int, int]:
        """Mica's line and column as the protocol's line and character."""
        if line > len(self.mica):  # past the text: as far past the editor's last line
            return line - 1 + len(self.editor) - len(self.mica), max(col - 1, 0)
        line = max(line, 1)
        at, offset = self.first[line - 1], max(col - 1, 0)
        last = self.first[line] - 1 if line < len(self.mica) else len(self.editor) - 1
        while at < last and offset > len(self.editor[at]):  # past this piece and the '\r' after it
            offset -= len(self.editor[at]) + 1
            at += 1
        return at, offset

    def to_mica(self, line: int, character: int) -> tuple[int, int]:
        """The protocol's line and character, on one of the editor's lines, as Mica's line and column."""
        mica = self.mica_line(line)
        before = sum(len(self.editor[at]) + 1 for at in range(self.first[mica - 1], line))
        return mica, before + character + 1

    def mica_line(self, line: int) -> int:
        """The Mica line that the editor's line is part of (the last for one past the text)."""
        return bisect.bisect_right(self.first, line)
