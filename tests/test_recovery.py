"""The parser recovers: a file with several syntax errors reports each, at its own
line with its own code, and no error that a repair made; then the analyzer
checks what did parse, so a type error shows while another line is broken.

The slips are made in working programs, each on a statement line of its own,
a few lines apart (an error on the line right after code a repair took out is
taken for that repair's cascade, and ends the recovery): a missing ';' at the end of a line, '=' for ':=', a stray
character, a doubled operator, an unterminated string, and two slips from other languages. Whatever the file, each
slip gives one diagnostic and nothing else does."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from micatool.cli import main
from micatool.compile import front_end
from micatool.diagnostics import CompileError, SourceFile

PROGRAMS = Path(__file__).parent / "programs"
ASSIGNMENT = re.compile(r"^(\s+)([A-Za-z_][\w.\[\], ]*) := (.*);$")
SLIPS = {  # the line with its slip, and the code it must give
    "missing ';'": (lambda indent, target, value: f"{indent}{target} := {value}", 2001),
    "'=' for ':='": (lambda indent, target, value: f"{indent}{target} = {value};", 2007),
    "a stray character": (lambda indent, target, value: f"{indent}{target} := {value} # 1;", 1001),
    "a doubled operator": (lambda indent, target, value: f"{indent}{target} := * {value};", 2003),
    "an unterminated string": (lambda indent, target, value: f"{indent}{target} := {value} + 'oops;", 1002),
    "'&&' for 'and'": (lambda indent, target, value: f"{indent}{target} := {value} && 1;", 1001),
    "'x += 1'": (lambda indent, target, value: f"{indent}{target} += {value};", 2003),
}


def slip_sites(lines: list[str]) -> list[int]:
    """Assignment lines followed by another statement line (so a missing ';' is an error there)."""
    sites = []
    for i, line in enumerate(lines[:-1]):
        following = lines[i + 1].strip()
        if ASSIGNMENT.match(line) and following and not following.startswith(("end", "else", "until", "{", "//")):
            sites.append(i)
    return sites


def with_slips(text: str, count: int, seed: int) -> tuple[str, set[tuple[int, int]]]:
    """text with `count` slips on lines at least three apart: the text, and the (line, code) each must give."""
    lines = text.split("\n")
    rng = random.Random(seed)
    chosen: list[int] = []
    for site in rng.sample(slip_sites(lines), len(slip_sites(lines))):
        if all(abs(site - other) >= 3 for other in chosen):
            chosen.append(site)
        if len(chosen) == count:
            break
    expected = set()
    for site in chosen:
        make, code = SLIPS[rng.choice(sorted(SLIPS))]
        lines[site] = make(*ASSIGNMENT.match(lines[site]).groups())
        expected.add((site + 1, code))
    return "\n".join(lines), expected


def reported(text: str, beside: Path = Path("."), name: str = "slips.mica") -> set[tuple[int, int]]:
    """(line, code) of each diagnostic of text, as file `name` in folder `beside` (where its units are)."""
    try:
        front_end(SourceFile(str(beside / name), text))
    except CompileError as e:
        return {(d.pos.line, d.code) for d in e.diagnostics}
    return set()


EXAMPLES = Path(__file__).parents[1] / "examples"
CASES = [(EXAMPLES / "gpt" / name, count, seed) for name in ("gpt.mica", "serve.mica", "model.mica")
         for count in (3, 10) for seed in (1, 2)] + [(PROGRAMS / f"{name}.mica", 3, 1)
                                                   for name in ("records", "tensors", "dynamic", "strings")]


@pytest.mark.parametrize("program, count, seed", CASES,
                         ids=lambda c: c.relative_to(c.parents[1]).as_posix() if isinstance(c, Path) else str(c))
def test_each_slip_gives_one_diagnostic_and_nothing_else_does(program, count, seed):
    text, expected = with_slips(program.read_text(), count, seed)
    assert len(expected) == count
    assert reported(text, program.parent, program.name) == expected


TEN = Path(__file__).parent / "recovery"


def test_eleven_different_slips_in_one_file():
    text = (TEN / "eleven.mica").read_text()
    got = [(line, code) for line, code in sorted(reported(text))]
    assert got == [(16, 2001), (21, 2007), (22, 2001), (23, 2004), (26, 2006), (27, 2003), (29, 1001), (31, 1002),
                   (33, 2001), (35, 2003), (37, 2001)]


def test_every_lexical_slip_is_reported_at_its_place_and_the_rest_is_checked(capsys, monkeypatch):
    """A bad character is skipped, an unterminated string ends at its line's end, a
    slip from another language gets its help; the type error on line 12 is still found,
    and nothing the mends made is reported."""
    monkeypatch.chdir(TEN)
    assert main(["check", "lexical.mica"]) == 1
    assert capsys.readouterr().err == (TEN / "lexical.err").read_text()


def test_an_unterminated_comment_is_the_last_lexical_error():
    text = "program P;\nvar x : integer;\nbegin\n    x := 1 # 2;\n    { never closed\n    x := 2 @ 3;\nend.\n"
    assert sorted(reported(text)) == [(4, 1001), (5, 1003)]
    text = text.replace("{", "(*")
    assert sorted(reported(text)) == [(4, 1001), (5, 1003)]


def test_the_hundredth_lexical_slip_ends_the_recovery_with_its_diagnostics():
    """What an editor gets for a file of 150 slips: the first hundred, no exception."""
    from micatool.compile.lark_parser import parse_recovering

    text = "program P;\nbegin\n" + "    WriteLn(1) #;\n" * 150 + "end.\n"
    tree, diagnostics, _ = parse_recovering(SourceFile("many.mica", text))
    assert tree is None and [(d.pos.line, d.code) for d in diagnostics] == [(n, 1001) for n in range(3, 103)]


def test_the_analyzer_checks_what_parsed():
    text = ("program Three;\nvar\n    x : integer;\nbegin\n    x := 1\n    x := 'text';\n    WriteLn(x + );\n"
            "    y := 2;\nend.\n")
    try:
        front_end(SourceFile("three.mica", text))
    except CompileError as e:
        assert [(d.pos.line, d.code, d.message) for d in e.diagnostics] == [
            (5, 2001, "expected ';' before 'x'"), (6, 4031, "cannot assign 'string' to 'integer'"),
            (7, 2003, "unexpected ')'")]  # no word on y: once code is taken out, names may be its
    else:
        raise AssertionError("no diagnostics")


def test_a_name_whose_declaration_was_taken_out_is_not_called_unknown():
    text = "program P;\nvar\n    x integer;\nbegin\n    x := 1;\n    WriteLn(x);\nend.\n"
    try:
        front_end(SourceFile("p.mica", text))
    except CompileError as e:
        assert [(d.pos.line, d.code, d.message) for d in e.diagnostics] == [
            (3, 2003, "expected ':' before 'integer': a declaration gives a name its type after ':'")]
    else:
        raise AssertionError("no diagnostics")


def test_a_missing_begin_is_one_error_not_a_cascade():
    text = ("program Cascade;\nvar\n    x : integer;\n\nprocedure Bump;\n    x := x + 1;\n    x := x * 2;\nend;\n\n"
            "begin\n    Bump;\n    WriteLn(x);\nend.\n")
    assert reported(text) == {(6, 2003)}


def test_an_operator_where_a_statement_begins_is_unexpected_not_a_missing_semicolon():
    """Once a ';' could not help, none is added: the repairs went round adding ';' before it forever."""
    text = "program P;\nvar\n    x : float64;\nbegin\n    x := 1.0;\n    >= := 2.5e-3;\n    WriteLn(x);\nend.\n"
    try:
        front_end(SourceFile("p.mica", text))
    except CompileError as e:
        assert [(d.pos.line, d.pos.col, d.code, d.message) for d in e.diagnostics] == [(6, 5, 2003, "unexpected '>='")]
    else:
        raise AssertionError("no diagnostics")


def test_what_the_repairs_reuse_is_what_a_fresh_look_at_the_text_finds():
    """The recovery keeps the tokens before each repair instead of finding them again:
    after every pass, they must be exactly what scanning and lexing the repaired text
    from the top gives, over files whose slips are repaired in every way."""
    from micatool.compile.descent import scan
    from micatool.compile.lark_parser import _lark, parse_recovering

    texts = [(Path(__file__).parent / "recovery" / "eleven.mica").read_text()]
    rng = random.Random(3)
    base = (Path(__file__).parents[1] / "examples" / "mlp" / "mlp.mica").read_text().split("\n")
    for _ in range(20):
        lines = list(base)
        for n in rng.sample(range(len(lines)), 4):
            lines[n] = lines[n].replace(";", "", 1) if rng.random() < 0.5 else lines[n].replace(":=", "=", 1)
        texts.append("\n".join(lines))
    checked = 0
    for text in texts:
        tree, diagnostics, repaired = parse_recovering(SourceFile("slips.mica", text))
        repaired.tokens_at(0)  # brings the kept scan up to the last repair
        assert repaired.scanned == scan(repaired.text)
        if tree is not None and diagnostics:  # the last pass read the whole repaired text
            seen = [(t.type, t.value, t.start_pos, t.line, t.column) for t in _lark().parser.lexer.seen]
            assert seen == [(t.type, t.value, t.start_pos, t.line, t.column) for t in _lark().lex(repaired.text)]
            checked += 1
    assert checked >= 10
