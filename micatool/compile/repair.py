"""Repairs: a copy of a file's text with its syntax errors mended one by one, so
that lark_parser.py can report each error of a file, not only its first.

Each repair makes the smallest change that lets the parse go past the error,
so that the next error reported is the file's own and not one the repair
made: the fix a diagnostic names where it names one (a ';' added at the end
of a line, ':=' for '=', a keyword's case), else the statement or
declaration around the error taken out (blanked, so every line keeps its
number). Text is only ever added at the end of a token; `original` gives,
for a position in the repaired text, the same place in the text as written.

Before any of that, the lexical errors' mends (lexical.py) are made, and a
syntax error on a line they changed is their doing: `take_out_follow_on`.
"""

from __future__ import annotations

import bisect

from ..diagnostics import Pos
from .descent import Token, scanning
from .lexical import LexicalError

# Where a statement or declaration begins: after one of these...
STARTS_AFTER = frozenset([";", "begin", "then", "do", "else", "repeat", "tape", "tasks", "var", "const", "type",
                          "initialization", "interface", "implementation", "uses"])
# ... and where it ends: before one of these.
ENDS_BEFORE = frozenset([";", "end", "else", "until", "begin", "var", "const", "type", "procedure", "function"])
SECTIONS = ("var", "const", "type")


class RepairedText:
    def __init__(self, text: str):
        self.text = text
        self.inserted: dict[int, list[tuple[int, int]]] = {}  # line -> (column, characters added there)
        self.lines: set[int] = set()  # the lines a repair changed
        self.taken_out = False  # whether a repair took code out, not only mended it
        self.taken_out_to: int | None = None  # the last line of the code the latest repair took out
        self.changed_from: int | None = None  # the first offset the repairs since the last parse changed
        self.scanned: list[Token] = []  # the text's tokens, comments too, but where it changed since
        self.rescan_from: int | None = 0  # the first offset changed since they were scanned (None: nothing was)
        self.rescan_to = 0  # where the changes since end: the text after is as it was, moved by `moved` characters
        self.moved = 0
        self.mended: set[int] = set()  # the lines a lexical error's mend changed
        self.unclosed_comment: Pos | None = None  # where a comment opens that runs to the end of the file

    def made_up(self, line: int, code: int) -> bool:
        """Might the analyzer's diagnostic be one the repairs made? One on a changed line
        may; and once code was taken out, one about names (3xxx) or about places and
        the tape (5xxx) may, since those follow declarations and statements across the
        program. A type, shape or residency error (4xxx, 6xxx, 7xxx) is its expression's."""
        return line in self.lines or (self.taken_out and code // 1000 in (3, 5))

    def original(self, pos: Pos) -> Pos:
        """Where a position of the repaired text stands in the text as written."""
        shift = sum(count for col, count in self.inserted.get(pos.line, []) if col < pos.col)
        return Pos(pos.line, pos.col - shift)

    def past_unclosed_comment(self, pos: Pos) -> bool:
        """Is a position of the repaired text inside the comment that runs to the end of the file?"""
        at = self.original(pos)
        return self.unclosed_comment is not None and (at.line, at.col) >= (self.unclosed_comment.line,
                                                                          self.unclosed_comment.col)

    # -- the repairs

    def mend_lexical(self, errors: list[LexicalError]) -> None:
        """The lexical errors' mends, made before any other repair and before the first
        parse: the last first, so that each is made where the text as written has it."""
        for error in reversed(errors):
            if error.end is None:
                self.unclosed_comment = error.pos
            else:
                self.splice(error.offset, error.end, error.pos.line, error.pos.col, error.text)
                self.mended.add(error.pos.line)
        self.changed_from, self.rescan_from, self.rescan_to, self.moved = None, 0, 0, 0  # nothing parsed or scanned yet

    def take_out_follow_on(self, offset: int) -> bool:
        """A syntax error at the token at `offset` that a lexical mend made: one on a
        mended line, or at the first token after one. The statement it is in is taken
        out, from where it begins to where the error's own statement ends (or, after the
        mended line, to the error's token, which may well begin the next statement).
        False where the error is none of the mends' doing."""
        if not self.mended:
            return False
        tokens, k = self.tokens_at(offset)
        if k is None:
            return False
        if tokens[k].line in self.mended:
            end = self.statement_end(tokens, k, 0)
            stop = tokens[end].offset if end < len(tokens) else len(self.text)
        elif k > 0 and tokens[k - 1].line in self.mended:
            stop = len(self.text[:tokens[k].offset].rstrip())  # the mended line's end: the error's own line stays
        else:
            return False
        start = tokens[self.statement_start(tokens, k)[0]].offset
        if stop <= start:
            return False
        self.taken_out = True
        self.taken_out_to = self.text.count("\n", 0, len(self.text[:stop].rstrip())) + 1
        self.blank(start, stop)
        return True

    def ends_in_a_mend(self) -> bool:
        """Is the text's last token on a line a lexical mend changed? The end of the file
        met right after it is the mend's doing (a string left open took the `end.` in)."""
        tokens = self.code_tokens()
        return bool(tokens) and tokens[-1].line in self.mended

    def repair_token(self, token, code: int) -> bool:
        """The token lark could not take, mended as its diagnostic's code says."""
        self.taken_out_to = None
        tokens, k = self.tokens_at(token.start_pos)
        if k is None:
            return False
        at = tokens[k]
        if code == 2001 and k > 0 and tokens[k - 1].line < at.line and tokens[k - 1].kind != ";":  # the line's ';'
            self.insert(tokens[k - 1], ";")
        elif code == 2004:
            self.replace(at, at.text.lower())
        elif code == 2005:
            self.replace(at, "_" * len(at.text))  # a name as long as the keyword
        elif code == 2006:
            while k > 0 and tokens[k - 1].kind == ";":  # every ';' before the else
                k -= 1
                self.blank(tokens[k].offset, tokens[k].offset + 1)
        elif code == 2007:
            self.replace(at, ":=")
        elif code == 2009 and at.kind == ";":
            self.replace(at, ".")
        else:
            self.take_out(tokens, k)
        return True

    def mend(self, start: int, end: int, text: str) -> None:
        """The fix a syntax error's diagnostic names: the text from start to end, on one
        line, becomes `text`."""
        self.taken_out_to = None
        line_start = self.text.rfind("\n", 0, start) + 1
        self.splice(start, end, self.text.count("\n", 0, line_start) + 1, start - line_start + 1, text)

    def tokens_at(self, offset: int) -> tuple[list[Token], int | None]:
        """The text's tokens but comments, and the number of the one at offset."""
        tokens = self.code_tokens()
        return tokens, next((i for i, t in enumerate(tokens) if t.offset == offset), None)

    def code_tokens(self) -> list[Token]:
        """The text's tokens but comments, as the text is now."""
        if self.rescan_from is not None:
            self.scanned = self.rescanned()
            self.rescan_from, self.rescan_to, self.moved = None, 0, 0
        return [t for t in self.scanned if t.kind != "comment"]

    def rescanned(self) -> list[Token]:
        """The tokens of the text as changed. Only the text the changes touched is scanned
        again: the tokens before it stay as they were, and once the scan meets a token
        that starts where one did before, past the changes, the rest of the text is as it
        was, and so are its tokens, moved as that one moved."""
        first = bisect.bisect_right(self.scanned, self.rescan_from, key=lambda t: t.offset + len(t.text))
        kept, old, fresh = self.scanned[:first], self.scanned[first:], []
        i = 0
        for token in scanning(self.text, after(kept[-1]) if kept else (0, 1, 0)):
            if token.offset >= self.rescan_to:
                while i < len(old) and old[i].offset < token.offset - self.moved:
                    i += 1
                if i < len(old) and old[i].offset == token.offset - self.moved:
                    return kept + fresh + moved(old[i:], old[i], token)
            fresh.append(token)
        return kept + fresh

    def take_out(self, tokens: list[Token], k: int) -> None:
        """Blank the statement or declaration around tokens[k], or only the parameters
        of a routine's heading when the error is among them."""
        start, stop = self.around(tokens, k)
        self.taken_out = True
        self.taken_out_to = self.text.count("\n", 0, len(self.text[:stop].rstrip())) + 1
        self.blank(start, stop)

    def around(self, tokens: list[Token], k: int) -> tuple[int, int]:
        """The offsets of what take_out blanks."""
        opening = self.unclosed_bracket(tokens, k)
        if opening is not None and opening >= 2 and tokens[opening - 2].kind in ("procedure", "function"):
            close = self.matching(tokens, opening)
            return tokens[opening + 1].offset, tokens[close].offset
        start, depth = self.statement_start(tokens, k)
        end = self.statement_end(tokens, k, -depth)  # its brackets closed
        if end == start:
            end += 1  # nothing around it: the token alone
        elif end < len(tokens) and tokens[end].kind == ";":
            end += 1  # and its ';', so no empty declaration is left
        stop = tokens[end].offset if end < len(tokens) else len(self.text)
        if start > 0 and tokens[start - 1].kind in SECTIONS and (end >= len(tokens) or tokens[end].kind != "NAME"):
            start -= 1  # the section held nothing else
        return tokens[start].offset, stop

    @staticmethod
    def statement_start(tokens: list[Token], k: int) -> tuple[int, int]:
        """Back from tokens[k] to where its statement or declaration begins: that token's
        number, and how many brackets more close than open between the two."""
        start, depth = k, 0
        while start > 0:
            before = tokens[start - 1]
            depth += (before.kind in (")", "]")) - (before.kind in ("(", "["))
            if depth <= 0 and before.kind in STARTS_AFTER:
                break
            start -= 1
        return start, depth

    @staticmethod
    def statement_end(tokens: list[Token], k: int, depth: int) -> int:
        """On from tokens[k], `depth` brackets open, to the token its statement or declaration ends before."""
        end = k
        while end < len(tokens):
            kind = tokens[end].kind
            if depth <= 0 and kind in ENDS_BEFORE:
                break
            depth += (kind in ("(", "[")) - (kind in (")", "]"))
            end += 1
        return end

    @staticmethod
    def unclosed_bracket(tokens: list[Token], k: int) -> int | None:
        """The '(' or '[' before tokens[k] that is not closed before it, on the way back to a statement's start."""
        depth = 0
        for i in range(k - 1, -1, -1):
            kind = tokens[i].kind
            if kind in (")", "]"):
                depth += 1
            elif kind in ("(", "["):
                if depth == 0:
                    return i
                depth -= 1
            elif kind in STARTS_AFTER and depth == 0:
                return None
        return None

    @staticmethod
    def matching(tokens: list[Token], opening: int) -> int:
        depth = 0
        for i in range(opening, len(tokens)):
            depth += (tokens[i].kind in ("(", "[")) - (tokens[i].kind in (")", "]"))
            if depth == 0:
                return i
        return len(tokens) - 1

    # -- edits

    def blank(self, start: int, end: int) -> None:
        """Spaces for the text between start and end, its line breaks kept."""
        self.changed(start, end - start, end - start)
        gone = self.text[start:end]
        first = self.text.count("\n", 0, start) + 1
        self.lines.update(range(first, first + gone.count("\n") + 1))
        self.text = self.text[:start] + "".join(c if c == "\n" else " " for c in gone) + self.text[end:]

    def replace(self, token: Token, text: str) -> None:
        self.splice(token.offset, token.offset + len(token.text), token.line, token.col, text)

    def splice(self, start: int, end: int, line: int, col: int, text: str) -> None:
        """The text from start to end, on one line from column col, becomes `text`: what it
        adds is inserted at the end, and a shorter text is padded with spaces, so the
        columns after it stay where they were."""
        grown = len(text) - (end - start)
        self.changed(start, end - start, max(len(text), end - start))
        self.lines.add(line)
        if grown > 0:
            self.note_insert(line, col + end - start, grown)
        self.text = self.text[:start] + text + " " * -grown + self.text[end:]

    def insert(self, after: Token, text: str) -> None:
        self.lines.add(after.line)
        end = after.offset + len(after.text)
        self.changed(end, 0, len(text))
        self.note_insert(after.line, after.col + len(after.text), len(text))
        self.text = self.text[:end] + text + self.text[end:]

    def changed(self, offset: int, removed: int, added: int) -> None:
        """Note that `added` characters took the place of the `removed` at offset."""
        self.changed_from = offset if self.changed_from is None else min(self.changed_from, offset)
        self.rescan_from = offset if self.rescan_from is None else min(self.rescan_from, offset)
        if self.rescan_to >= offset + removed:
            self.rescan_to += added - removed
        self.rescan_to = max(self.rescan_to, offset + added)
        self.moved += added - removed

    def note_insert(self, line: int, col: int, count: int) -> None:
        """`count` characters were put in at column col of the line: those noted after it move on."""
        noted = self.inserted.setdefault(line, [])
        noted[:] = [(c + count if c >= col else c, n) for c, n in noted] + [(col, count)]


def moved(tokens: list[Token], was: Token, now: Token) -> list[Token]:
    """tokens, the first of which `was` and is `now` in the changed text, each moved as
    that one moved: its line, its offset, and on its line its column."""
    lines, cols, offsets = now.line - was.line, now.col - was.col, now.offset - was.offset
    if not (lines or cols or offsets):
        return tokens
    return [Token(t.kind, t.text, t.line + lines, t.col + cols if t.line == was.line else t.col, t.offset + offsets)
            for t in tokens]


def after(token: Token) -> tuple[int, int, int]:
    """Where the text after a token starts, as scan takes it: its offset, line, and the
    offset that line starts at."""
    end = token.offset + len(token.text)
    breaks = token.text.count("\n")
    if breaks:
        return end, token.line + breaks, token.offset + token.text.rindex("\n") + 1
    return end, token.line, token.offset - (token.col - 1)
