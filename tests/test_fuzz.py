"""Fuzzing the front end and lowering: no input, however malformed, gives a traceback.

Hypothesis mutates the feature programs token by token (delete, duplicate,
replace, swap) and also feeds random text. Every input must end in C source
or in numbered diagnostics; anything else is a bug. Seeded and bounded.
Hostile checkpoints and kills during Save are fuzzed in tests/test_checkpoint.py.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from micatool.compile import compile_program, front_end, load_source
from micatool.compile.lark_parser import KEYWORDS, _lark
from micatool.diagnostics import CompileError, Pos, SourceFile

SEEDS = sorted((Path(__file__).parent / "programs").glob("*.mica")) + sorted(
    (Path(__file__).parents[1] / "examples").glob("*/*.mica"))
SEED_TEXTS = [p.read_text() for p in SEEDS]
REPLACEMENTS = sorted(KEYWORDS) + [
    ";", ":", ":=", ",", ".", "..", "(", ")", "[", "]", "+", "-", "*", "/", "=", "<>", "<", ">=",
    "0", "1", "-1", "2.5", "1e400", "'s'", "''", "x", "i", "result", "N", "M", "WriteLn", "Sum", "Length",
    "vector", "matrix", "tensor", "float32", "integer", "string", "address", "tracked", "Transpose", "Mul",
    "SetLength", "SetShape", "Gradient", "Backward", "99999999999999999999", "{", "(*", "'",
]
FUZZ = settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))


def tokens(text: str) -> list[tuple[str, str]]:
    """(kind, text) pieces that join back into text; whitespace and comments are kind ''."""
    pieces, last = [], 0
    for token in _lark().lex(text):
        pieces.append(("", text[last:token.start_pos]))
        pieces.append((token.type, token.value))
        last = token.end_pos
    pieces.append(("", text[last:]))
    return pieces


SEED_TOKENS = [tokens(t) for t in SEED_TEXTS]
NAMES = sorted({v for seed in SEED_TOKENS for kind, v in seed if kind == "NAME"})
LITERALS = ["0", "1", "3", "-2", "0.5", "1e-3", "'a'", "'text'", "true", "false", "[1.0, 2.0]", "[[1.0], [2.0]]"]
OPERATORS = ["+", "-", "*", "/", "div", "mod", "=", "<>", "<", "<=", "and", "or"]
SIMILAR = {"NAME": NAMES, "INT": LITERALS, "FLOAT": LITERALS, "STRING": LITERALS, "TRUE": LITERALS, "FALSE": LITERALS,
           "PLUS": OPERATORS, "MINUS": OPERATORS, "STAR": OPERATORS, "SLASH": OPERATORS, "DIV": OPERATORS,
           "MOD": OPERATORS, "COMPARE": OPERATORS, "EQUAL": OPERATORS, "AND": OPERATORS, "OR": OPERATORS}


def compiles_or_diagnoses(text: str) -> None:
    source = SourceFile("fuzz.mica", text)
    try:
        compile_program(source)
    except CompileError as e:
        for d in e.diagnostics:
            assert 1000 <= d.code <= 7999
            assert d.render().startswith(f"fuzz.mica:{d.pos.line}:{d.pos.col}: analyzer error {d.code}: ")


@st.composite
def mutated_program(draw):
    """Mostly like-for-like swaps (a name for a name), so many mutants pass the parser."""
    return draw(mutated(draw(st.sampled_from(SEED_TOKENS))))


@st.composite
def mutated(draw, seed: list[tuple[str, str]]):
    """seed's text, one to three of its tokens changed."""
    pieces = list(seed)
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.sampled_from(range(1, len(pieces), 2)))
        kind, text = pieces[i]
        action = draw(st.sampled_from(["similar", "similar", "similar", "delete", "duplicate", "replace", "swap"]))
        if action == "similar" and kind in SIMILAR:
            pieces[i] = (kind, draw(st.sampled_from(SIMILAR[kind])))
        elif action == "delete":
            pieces[i] = (kind, "")
        elif action == "duplicate":
            pieces[i] = (kind, text + " " + text)
        elif action == "replace":
            pieces[i] = (kind, draw(st.sampled_from(REPLACEMENTS)))
        elif action == "swap" and i + 2 < len(pieces):
            pieces[i], pieces[i + 2] = pieces[i + 2], pieces[i]
    return "".join(text for _, text in pieces)


@FUZZ
@given(mutated_program())
def test_mutated_programs_compile_or_diagnose(text):
    compiles_or_diagnoses(text)


# A program of units (tests/units/split): one of its files mutated. Every diagnostic names
# one of the files, at a line and column inside it.
UNIT_FILES = {p.name: p.read_text() for p in sorted((Path(__file__).parent / "units" / "split").glob("*.mica"))}


@st.composite
def mutated_unit_program(draw):
    name = draw(st.sampled_from(sorted(UNIT_FILES)))
    return {**UNIT_FILES, name: draw(mutated(tokens(UNIT_FILES[name])))}


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(files=mutated_unit_program())
def test_mutated_units_compile_or_diagnose(files, tmp_path):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    try:
        compile_program(load_source(str(tmp_path / "split.mica")))
    except CompileError as e:
        for d in e.diagnostics:
            assert 1000 <= d.code <= 7999 and d.source.name.startswith(str(tmp_path))
            text = files[Path(d.source.name).name]
            assert 1 <= d.pos.line <= text.count("\n") + 1 and d.pos.col >= 1
            assert d.render().startswith(f"{d.source.name}:{d.pos.line}:{d.pos.col}: analyzer error {d.code}: ")


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.text(max_size=200))
def test_random_text_is_diagnosed(text):
    compiles_or_diagnoses(text)


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(SEED_TEXTS), st.data())
def test_truncated_programs_are_diagnosed(text, data):
    cut = data.draw(st.integers(0, len(text)))
    compiles_or_diagnoses(text[:cut])


# ---------------------------------------------------------------- line endings and huge literals
# (docs/language.md, Lexical: a line ends at '\n', so '\r\n' ends one too; a lone '\r',
# a form feed and the Unicode separators end none.) Each case knows where its one error
# is and holds the diagnostic's line:column, and the caret under the shown line, to it.

LINE_BREAKS = ["\n", "\r\n"]
BLANKS = [" ", "\t", "\r", "\f", "{\u2028}", "{ \u2029\u0085 }", "(*\x1c\x1d\x1e\v*)", "// \r not the end\n"]
STATEMENTS = ["x := 1", "x := x + 2", "WriteLn(x)", "if x > 0 then x := 0"]
FEW = settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))


@st.composite
def program_with_one_error(draw):
    """(text, line, column): a program whose only error is the unknown name 'zz' at line:column."""
    statements = draw(st.lists(st.sampled_from(STATEMENTS), min_size=1, max_size=6))
    bad = draw(st.integers(0, len(statements)))
    statements.insert(bad, "x := x +" + draw(st.sampled_from(BLANKS)) + "zz")
    lines = ["program Lines;", "var x : integer;", "begin", *(s + ";" for s in statements), "end."]
    lines = ["".join(draw(st.lists(st.sampled_from(BLANKS), max_size=3))) + line for line in lines]
    text = "".join(line + draw(st.sampled_from(LINE_BREAKS)) for line in lines)
    before = text[:text.index("zz")]
    line, column = before.count("\n") + 1, len(before) - before.rfind("\n")
    return text, line, column


@FEW
@given(program_with_one_error())
def test_diagnostics_point_at_their_text_whatever_the_line_endings(case):
    text, line, column = case
    try:
        front_end(SourceFile("lines.mica", text))
    except CompileError as e:
        assert [(d.code, d.pos) for d in e.diagnostics] == [(3001, Pos(line, column))]
        _, shown, caret = e.diagnostics[0].render().split("\n")
        assert shown[caret.index("^"):].startswith("zz")
    else:
        raise AssertionError("the unknown name was not reported")


@st.composite
def huge_literal(draw):
    """(literal, the diagnostic code it gives or None): thousands of digits, around Python's 4300."""
    digits = draw(st.integers(4290, 4310))
    first = draw(st.sampled_from("123456789"))
    kind = draw(st.sampled_from(["integer", "leading zeros", "float", "exponent", "tiny exponent"]))
    return {"integer": (first * digits, 1004),
            "leading zeros": ("0" * digits + first, None),
            "float": (first * digits + ".5", 1006),
            "exponent": (f"{first}.5e+{first * digits}", 1006),
            "tiny exponent": (f"{first}.5e-{first * digits}", None)}[kind]


@FEW
@given(huge_literal(), st.sampled_from(["", "-"]))
def test_huge_literals_are_numbered_diagnostics(case, sign):
    literal, code = case
    source = SourceFile("huge.mica", f"program Huge;\nbegin\n    WriteLn({sign}{literal});\nend.\n")
    try:
        front_end(source)
    except CompileError as e:
        assert [(d.code, d.pos) for d in e.diagnostics] == [(code, Pos(3, 13 + len(sign)))]
        assert len(e.diagnostics[0].render()) < 400
    else:
        assert code is None
