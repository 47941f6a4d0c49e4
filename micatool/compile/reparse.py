"""Parsing a repaired text again from where its latest repair changed it.

The recovery (lark_parser.parse_recovering) parses a file once for each syntax
error, each pass with one more repair (repair.py), and a repair changes the
text only from some offset on. What the last pass made of the text before that
offset still stands:

  - its tokens, which KeptTokens hands the parser instead of lexing that text again;
  - the LALR parser's two stacks and the Builder's own state, saved before
    statements and declarations (after a ';'), so the pass resumes from the last
    state saved before the change instead of parsing from the top.

A save copies about as much as the Builder holds, which grows with the file (the
routines parsed so far, say), so a save waits for as many tokens after the last
one as that one copied: saving costs no more than parsing, in time and memory,
and a pass goes back at most that far before its change. A pass so costs the
text from shortly before its repair to its own error, and gives what a parse
from the top would: an LALR parse is a function of the tokens fed, and its
reductions change nothing but the Builder's state, saved with the stacks, and
lark's trees of a repetition's items, copied with them. (The Builder's
diagnostics about the literals before the change are not told again; the
reporter would drop them as told.)
"""

from __future__ import annotations

from typing import NamedTuple

import lark
from lark import Token


class KeptTokens(lark.lexer.Lexer):
    """lark's lexer, which hands the parser the tokens `kept` first (those it has not
    taken already: from number `taken` on) and lexes only the text after them.
    `seen` is every token of the pass, `kept` among them."""

    def __init__(self, lexer: lark.lexer.Lexer):
        self.lexer = lexer
        self.kept: list[Token] = []
        self.taken = 0
        self.seen: list[Token] = []

    def lex(self, state: lark.lexer.LexerState, parser_state):
        self.seen = list(self.kept)
        yield from self.kept[self.taken:]
        if self.kept:
            last = self.kept[-1]
            counter = state.line_ctr
            counter.char_pos, counter.line, counter.column = last.end_pos, last.end_line, last.end_column
            counter.line_start_pos = last.end_pos - (last.end_column - 1)
            state.last_token = last
        for token in self.lexer.lex(state, parser_state):
            self.seen.append(token)
            yield token


class Saved(NamedTuple):
    """The parser as it stood before token number `taken` of a pass."""
    taken: int
    states: list
    values: list
    builder: object  # what Builder._saved gave


class Reparser:
    """lark's LALR parser, calling `builder` as it reduces, for text that is the last
    call's up to the offset `changed_from` (None: not known to be)."""

    def __init__(self, parser: lark.Lark, builder):
        self.parser, self.builder = parser, builder
        self.tokens = KeptTokens(parser.parser.lexer)
        parser.parser.lexer = self.tokens
        self.saved: list[Saved] = []  # by `taken`, each before a token that follows a ';'

    def parse(self, text: str, changed_from: int | None):
        """The tree the builder makes of text, or the exception lark raises for it."""
        tokens = self.tokens
        if changed_from is None:
            tokens.kept, self.saved = [], []
        else:
            tokens.kept = [t for t in tokens.seen if t.end_pos <= changed_from]
            while self.saved and self.saved[-1].taken > len(tokens.kept):
                self.saved.pop()
        interactive = self.parser.parse_interactive(text)
        state = interactive.parser_state
        tokens.taken = 0
        if self.saved:
            resumed = self.saved[-1]
            tokens.taken = resumed.taken
            state.state_stack[:] = resumed.states
            state.value_stack[:] = unshared(resumed.values)
            self.builder._restore(resumed.builder)
        try:
            taken, previous, due = tokens.taken, None, tokens.taken
            for token in interactive.iter_parse():  # each token given before the parser takes it
                if previous == "SEMICOLON" and taken >= due:
                    self.saved.append(Saved(taken, state.state_stack[:], unshared(state.value_stack),
                                            self.builder._saved()))
                    due = taken + self.builder._size() + len(state.value_stack)
                previous = token.type
                taken += 1
            return interactive.feed_eof(tokens.seen[-1] if tokens.seen else None)
        finally:
            tokens.kept = []


def unshared(values: list) -> list:
    """A copy of the parser's value stack that parsing on leaves as it is. The values
    themselves are the Builder's nodes, which nothing changes once made, but for the
    trees lark makes of a repetition's items so far: reducing the rule that takes
    one, lark appends to that tree's list of children in place (ChildFilterLALR)."""
    return [lark.Tree(v.data, v.children[:]) if isinstance(v, lark.Tree) else v for v in values]
