"""micatool fmt: one canonical layout for Mica source, changing only blanks.

Takes a file's text; gives the same tokens in the same order, on the same
lines, so the program means what it meant and every diagnostic and trap
keeps its line. What changes:

  - indentation: four spaces a level, the level from the block structure
    (sections and their declarations, routines, begin/end, record/end,
    tape/end, tasks/end, repeat/until, the one statement a `then`, `else`
    or `do` governs on a line of its own); a continuation line, one that
    goes on with a statement or declaration begun above, moves with the
    line it continues, so an alignment its writer chose stays;
  - the blanks between the tokens of a line: one space around binary
    operators, `:=` and a declaration's `:`, none inside brackets, before
    `,` `;` `)` or after a unary minus, none in a format (`x:0:4`);
  - a comment stays where it was: on its line, after the same token; a
    comment that ends a line keeps its column where the code leaves room,
    so columns of comments stay aligned; one alone on its line takes the
    indentation of the code it precedes;
  - trailing blanks go, a run of blank lines becomes one, and the file ends
    with one line break.

A file that does not parse is not formatted: its diagnostics say why.
"""

from __future__ import annotations

from dataclasses import dataclass

from .compile.descent import KEYWORDS, Token, scan
from .compile.source import parse
from .diagnostics import SourceFile

INDENT = 4
BLOCK_ENDS = ("end", "until", "else")
# words after which a '-' or '+' is a sign, not an operation
OPERATORS = {"+", "-", "*", "/", "=", "<>", "<", "<=", ">", ">=", ":=", "div", "mod", "and", "or", "not"}
OPENING = {"(", "["}


def format_source(source: SourceFile) -> str:
    """The file's text in the canonical layout (CompileError if it does not parse)."""
    parse(source)
    tokens = scan(source.text)
    code = [t for t in tokens if t.kind != "comment"]
    layout = Layout(code)
    layout.file()
    signs = {t.offset for i, t in enumerate(code) if t.kind in ("-", "+") and is_sign(code[i - 1] if i else None)}
    return Printer(source.text, tokens, layout.placed, layout.formats | signs).text()


# ---------------------------------------------------------------- where each line goes


@dataclass(frozen=True)
class Place:
    """A line's indentation: its level, or, for a continuation, the line it goes on from."""

    level: int
    continues: int | None = None  # the line number of the statement's or declaration's first line


class Layout:
    """A walk over the code tokens, after the grammar's blocks, that places each
    line by the token it begins with. The file parses, so the walk may trust it."""

    def __init__(self, tokens: list[Token]):
        self.tokens = tokens
        self.i = 0
        self.placed: dict[int, Place] = {}
        self.first_on_line = {t.offset for i, t in enumerate(tokens) if i == 0 or tokens[i - 1].line != t.line}
        self.anchor = 0  # the first line of the statement or declaration being read
        self.formats: set[int] = set()  # the offsets of the ':' of formats (x:0:4), which take no blanks

    @property
    def kind(self) -> str:
        return self.tokens[self.i].kind if self.i < len(self.tokens) else "EOF"

    def advance(self) -> Token:
        token = self.tokens[self.i]
        self.i += 1
        return token

    def at(self, level: int) -> None:
        """The current token begins a construct at level: its line goes there."""
        if self.i < len(self.tokens):
            token = self.tokens[self.i]
            if token.offset in self.first_on_line and token.line not in self.placed:
                self.placed[token.line] = Place(level)
            self.anchor = token.line

    def skip(self, level: int, stops: tuple[str, ...], statement: bool = False) -> None:
        """Through an expression (or a declaration's rest) to one of stops outside
        brackets; each line begun on the way continues the anchor's. In a
        statement, a ':' inside brackets is a format's."""
        depth = 0
        while self.kind != "EOF":
            token = self.tokens[self.i]
            if depth == 0 and token.kind in stops:
                return
            if statement and depth > 0 and token.kind == ":":
                self.formats.add(token.offset)
            if token.offset in self.first_on_line and token.line not in self.placed:
                self.placed[token.line] = Place(level, self.anchor)
            if token.kind == "record":
                self.record(level)
                continue
            depth += token.kind in OPENING
            depth -= token.kind in (")", "]")
            self.i += 1

    def record(self, level: int) -> None:
        """record, its fields a level in from the line it stands on, end at that line's level."""
        line = self.placed.get(self.advance().line)
        if line is not None and line.continues is None:
            level = line.level
        while self.kind not in ("end", "EOF"):
            self.at(level + 1)
            self.skip(level + 1, (";", "end"))
            if self.kind == ";":
                self.advance()
        self.at(level)
        self.advance()

    # -- files and declarations

    def file(self) -> None:
        self.at(0)
        if self.kind == "unit":
            self.skip(0, (";",))
            self.advance()
            self.at(0)
            self.advance()  # interface
            self.declarations(0, headings=True)
            self.at(0)
            self.advance()  # implementation
            self.declarations(0, headings=False)
            if self.kind == "initialization":
                self.at(0)
                self.advance()
                self.statements(1)
        else:
            self.skip(0, (";",))
            self.advance()
            self.declarations(0, headings=False)
            self.at(0)
            self.advance()  # begin
            self.statements(1)
        self.at(0)  # end.

    def declarations(self, level: int, headings: bool) -> None:
        while True:
            kind = self.kind
            if kind == "uses":
                self.at(level)
                self.skip(level, (";",))
                self.advance()
            elif kind in ("const", "type", "var"):
                self.at(level)
                self.advance()
                while self.kind == "NAME":
                    self.at(level + 1)
                    self.skip(level + 1, (";",))
                    self.advance()
            elif kind in ("procedure", "function"):
                self.routine(level, headings)
            else:
                return

    def routine(self, level: int, heading_only: bool) -> None:
        self.at(level)
        self.skip(level, (";",))
        self.advance()
        if heading_only:
            return
        self.declarations(level, headings=False)
        self.at(level)
        self.advance()  # begin
        self.statements(level + 1)
        self.at(level)
        self.advance()  # end
        self.advance()  # ;

    # -- statements

    def statements(self, level: int) -> None:
        """A statement list, up to the word that closes it (end, until)."""
        while True:
            self.statement(level)
            if self.kind != ";":
                return
            self.advance()

    def statement(self, level: int) -> None:
        kind = self.kind
        if kind in ("end", "until", "else", ";", "EOF"):
            return  # an empty statement
        self.at(level)
        if kind in ("begin", "tape", "tasks"):
            self.advance()
            self.statements(level + 1)
            self.at(level)
            self.advance()
        elif kind == "repeat":
            self.advance()
            self.statements(level + 1)
            self.at(level)
            self.advance()
            self.skip(level, (";", "end", "until", "else"), statement=True)
        elif kind == "if":
            self.skip(level, ("then",), statement=True)
            self.advance()
            self.governed(level)
            if self.kind == "else":
                self.at(level)
                self.advance()
                self.governed(level)
        elif kind in ("for", "while"):
            self.skip(level, ("do",), statement=True)
            self.advance()
            self.governed(level)
        else:
            self.skip(level, (";", "end", "until", "else"), statement=True)

    def governed(self, level: int) -> None:
        """The statement a then, else or do governs: a level in on a line of its own,
        unless it is a begin block, whose begin and end stay with the if, for or while."""
        if self.kind in ("end", "until", "else", ";", "EOF"):
            return
        token = self.tokens[self.i]
        alone = token.offset in self.first_on_line
        self.statement(level + 1 if alone and token.kind != "begin" else level)


# ---------------------------------------------------------------- writing the lines


class Printer:
    def __init__(self, text: str, tokens: list[Token], placed: dict[int, Place], tight: set[int]):
        self.lines = text.split("\n")
        self.placed = placed
        self.tight = tight  # the offsets of a format's ':' and of signs, which take no blanks after them
        self.by_line: dict[int, list[Token]] = {}
        for token in tokens:
            self.by_line.setdefault(token.line, []).append(token)
        self.indents: dict[int, int] = {}  # the new indentation of each line placed so far

    def text(self) -> str:
        out: list[str] = []
        line = 1
        next_code = self.next_code_lines()
        while line <= len(self.lines):
            tokens = self.by_line.get(line)
            if not tokens:  # a blank line: one between paragraphs, none first
                if out and out[-1] != "":
                    out.append("")
                line += 1
                continue
            indent = self.indent_of(line, tokens, next_code.get(line))
            written = self.write_line(line, self.carried(tokens), indent)
            out.extend(written)
            line += len(written)
        while out and out[-1] == "":
            out.pop()
        return "\n".join(out) + "\n"

    def carried(self, tokens: list[Token]) -> list[Token]:
        """A line's tokens, and, where it ends in a comment over several lines, the tokens
        after that comment on the line where it closes, and so on: they are one piece."""
        tokens = list(tokens)
        while "\n" in tokens[-1].text:
            after = self.by_line.get(tokens[-1].line + tokens[-1].text.count("\n"))
            if not after:
                break
            tokens += after
        return tokens

    def next_code_lines(self) -> dict[int, int]:
        """For a line of comments alone, the next line that holds code."""
        following, upcoming = {}, None
        for line in range(len(self.lines), 0, -1):
            tokens = self.by_line.get(line, [])
            if any(t.kind != "comment" for t in tokens):
                upcoming = line
            elif tokens:
                following[line] = upcoming
        return following

    def original_indent(self, line: int) -> int:
        text = self.lines[line - 1]
        return len(text) - len(text.lstrip(" \t"))

    def indent_of(self, line: int, tokens: list[Token], code_after: int | None) -> int:
        place = self.placed.get(line)
        if place is None and code_after is not None:  # comments alone: the code they precede
            ahead = self.placed.get(code_after)
            if ahead is not None and ahead.continues is None:
                first = next(t for t in self.by_line[code_after] if t.kind != "comment")
                level = ahead.level + (first.kind in BLOCK_ENDS)
                return INDENT * level
            place = ahead
        if place is None:
            return self.original_indent(line)
        if place.continues is None:
            indent = INDENT * place.level
        else:
            anchor = place.continues
            shift = self.indents.get(anchor, self.original_indent(anchor)) - self.original_indent(anchor)
            indent = max(self.original_indent(line) + shift, INDENT * (place.level + 1))
        self.indents[line] = indent
        return indent

    def write_line(self, line: int, tokens: list[Token], indent: int) -> list[str]:
        """The line rewritten, and the lines a comment that spans them carries along, with
        the code after it where it closes (`carried`)."""
        shift = indent - self.original_indent(line)
        text = " " * indent
        previous = None
        for k, token in enumerate(tokens):
            if previous is not None:
                if token.kind == "comment" and k == len(tokens) - 1:
                    # its column as written; a line a comment carried moves by `shift` below
                    wanted = token.col - 1 + (shift if token.line == line else 0)
                    text += " " * max(wanted - len(text.rsplit("\n", 1)[-1]), 1)
                else:
                    text += self.gap(previous, token)
            text += token.text
            previous = token
        written = text.split("\n")
        if len(written) > 1:  # a comment over several lines: its other lines move as its first did
            written = [written[0]] + [shifted(rest, shift) for rest in written[1:]]
        return [w.rstrip() for w in written]

    def gap(self, left: Token, right: Token) -> str:
        """The blanks between two tokens of a line."""
        a, b = left.kind, right.kind
        if a == "comment" or b == "comment":
            return " "
        if b in (",", ";", ")", "]", ".", "..") or a in ("(", "[", ".", ".."):
            return ""
        if a == ":" or b == ":":
            colon = left if a == ":" else right
            return "" if colon.offset in self.tight else " "
        if left.offset in self.tight:  # a sign
            return ""
        if b in ("(", "["):
            return "" if a in ("NAME", ")", "]", "array") else " "
        return " "


def is_sign(before: Token | None) -> bool:
    """Is a '-' or '+' after this token a sign (not an operation)?"""
    return before is None or before.kind in OPERATORS or before.kind in OPENING or before.kind in (
        ",", ":", ";", "..") or (before.kind in KEYWORDS and before.kind not in ("true", "false", "end"))


def shifted(line: str, shift: int) -> str:
    if shift >= 0:
        return " " * shift + line
    blanks = len(line) - len(line.lstrip(" "))
    return line[min(-shift, blanks):]
