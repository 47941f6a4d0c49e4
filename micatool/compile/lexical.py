"""Lexical errors (1001-1003): every one of a file, found before it is parsed.

A character no token begins with stops lark's lexer, so the lexical errors are
found here instead, each at its own place, and mended in the copy of the text
the parse reads (repair.RepairedText), so that the parse goes on past them:

- a character no token begins with is skipped (blanked); one that other
  languages write where Mica writes something else is replaced by Mica's
  form, and the diagnostic's help says which: "text" for 'text', != for <>,
  && for and, || for or, !x for not x;
- an unterminated string ends at the end of its line (a quote is added there);
- an unterminated comment runs to the end of the file, so it is the last.

A syntax error the parse then meets on a mended line, or at the first token
after one, is the mend's doing: lark_parser.py takes that statement out
without a word (repair.RepairedText.take_out_follow_on).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..diagnostics import MAX_ERRORS, Hint, Pos
from .descent import scanning


@dataclass(frozen=True)
class LexicalError:
    offset: int
    pos: Pos
    code: int
    message: str
    hints: tuple[Hint, ...] = ()
    # the mend: the text from offset to `end` becomes `text`; None for an unclosed
    # comment, after which nothing is lexed
    end: int | None = None
    text: str = ""


def lexical_errors(text: str) -> list[LexicalError]:
    """The text's lexical errors, in order, up to MAX_ERRORS."""
    found: list[LexicalError] = []
    at = (0, 1, 0)
    while len(found) < MAX_ERRORS:
        error = first_error(text, at)
        if error is None:
            break
        found.append(error)
        if error.end is None:  # the rest of the file is the comment
            break
        at = (error.end, error.pos.line, error.offset - error.pos.col + 1)  # on past the mend, on its line
    return found


def first_error(text: str, at: tuple[int, int, int]) -> LexicalError | None:
    """The first lexical error from `at` (an offset, its line and the offset that line starts at)."""
    before = None
    for token in scanning(text, at):
        if token.kind == "*" and before is not None and before.kind == "(" and before.offset + 1 == token.offset:
            # '(*' lexes as '(' and '*' only where no '*)' closes it
            return unclosed_comment(before.offset, Pos(before.line, before.col), "*)")
        if token.kind == "other":
            return at_character(text, token.offset, Pos(token.line, token.col))
        before = token
    return None


def at_character(text: str, offset: int, pos: Pos) -> LexicalError:
    """The error of a character no token begins with, at `offset` of the text."""
    char = text[offset]
    if char == "'":
        end = len(text[:line_end_at(text, offset)].rstrip("\r"))  # the line's last character, a '\r' not counted
        return LexicalError(offset, pos, 1002, "unterminated string literal: a string ends with ' on the same line",
                            end=end, text=text[offset:end] + "'")
    if char == "{":
        return unclosed_comment(offset, pos, "}")
    shown = repr(char) if char.isprintable() else f"U+{ord(char):04X}"
    message = f"unexpected character {shown}"
    slip = other_language(text, offset)
    if slip is not None:
        end, mica, help_text = slip
        return LexicalError(offset, pos, 1001, message, (Hint.help(help_text),), end, mica)
    return LexicalError(offset, pos, 1001, message, end=offset + 1, text=" ")


def unclosed_comment(offset: int, pos: Pos, closer: str) -> LexicalError:
    return LexicalError(offset, pos, 1003, f"unterminated comment: no closing '{closer}' before the end of the file")


def other_language(text: str, offset: int) -> tuple[int, str, str] | None:
    """A character other languages write where Mica writes something else: where
    the slip ends, Mica's form, and the help that says so. None for any other."""
    two = text[offset:offset + 2]
    if two == "!=":
        return offset + 2, "<>", "Mica writes 'not equal' as '<>': 'x <> y'"
    if two == "&&":
        return offset + 2, " and ", "Mica writes 'and' as a word: 'a and b'"
    if two == "||":
        return offset + 2, " or ", "Mica writes 'or' as a word: 'a or b'"
    if two[:1] == "!":
        return offset + 1, "not ", "Mica negates with the word 'not': 'not done'"
    if two[:1] == '"':
        close = text.find('"', offset + 1, line_end_at(text, offset))
        if close == -1:
            return offset + 1, " ", "Mica strings are in single quotes: 'text'"
        mica = "'" + text[offset + 1:close].replace("'", "''") + "'"  # a quote inside is doubled
        return close + 1, mica, f"Mica strings are in single quotes: {mica}"
    return None


def line_end_at(text: str, offset: int) -> int:
    """The offset of the '\n' that ends offset's line, or the text's length."""
    end = text.find("\n", offset)
    return len(text) if end == -1 else end
