"""The two parsers agree: descent.py's tree is lark's, positions and nesting height included.

micatool parses a valid program with the hand-written parser in descent.py and
gives the program to lark (mica.lark) only when that one falls back. So on
every input the hand-written parser must either fall back or build exactly the
tree lark builds, and it must never accept what lark refuses. Checked on every
program in the repository, on hypothesis mutants of them, and on the cases
where the grammar decides something subtle.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import lark
import pytest
from hypothesis import given
from test_fuzz import FUZZ, mutated_program

from micatool.compile import RECURSION_LIMIT, ast, descent, lark_parser, parse
from micatool.diagnostics import CompileError, Pos, SourceFile

ROOT = Path(__file__).resolve().parents[1]
CORPUS = sorted(p for p in ROOT.rglob("*.mica") if ".git" not in p.parts)


def dump(node):
    """Everything the parser decided, positions included (the trees' == leaves those out)."""
    if isinstance(node, list):
        return [dump(item) for item in node]
    if isinstance(node, tuple):
        return tuple(dump(item) for item in node)
    if isinstance(node, Pos):
        return (node.line, node.col)
    if dataclasses.is_dataclass(node):
        return (type(node).__name__, *(dump(getattr(node, f.name)) for f in dataclasses.fields(node)))
    return node


@pytest.fixture(autouse=True)
def deep_recursion():
    """As front_end allows: the parsers recurse once or more per level of nesting."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, RECURSION_LIMIT))
    yield
    sys.setrecursionlimit(limit)


def tree_height(text: str) -> int:
    """The height of lark's own parse tree (tokens count 0; a chain's links, one level), however deep it is."""
    tallest, stack = 0, [(lark_parser._tree_parser().parse(text), 1)]
    while stack:
        node, depth = stack.pop()
        tallest = max(tallest, depth)
        stack.extend((child, depth + (not lark_parser.chained(node, child))) for child in node.children
                     if isinstance(child, lark.Tree))
    return tallest


def lark_parse(text: str):
    """lark's tree and height, or None where lark reports an error."""
    try:
        program = lark_parser.parse(SourceFile("p.mica", text))
    except CompileError:
        return None, None
    return program, lark_parser._parser()[1]._height(program)


def descent_parse(text: str):
    """descent's tree and height, or None where it falls back."""
    reader = descent.Parser(text)
    try:
        program = reader.start()
        if isinstance(program, ast.Program):
            program.body = list(program.body)  # read to the end, as descent.parse does
    except (descent.Fallback, RecursionError):
        return None, None
    return program, reader.height


def assert_agree(text: str, must_accept: bool = False) -> None:
    fast, fast_height = descent_parse(text)
    if fast is None:
        assert not must_accept, "descent.py fell back on a program it should parse"
        return
    slow, slow_height = lark_parse(text)
    assert slow is not None, "descent.py accepted a program lark refuses"
    assert dump(fast) == dump(slow)
    assert fast_height == slow_height


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_repository_program(path):
    text = path.read_bytes().decode(errors="replace")  # one of them is not UTF-8 on purpose
    valid = lark_parse(text)[0] is not None
    assert_agree(text, must_accept=valid)


@FUZZ
@given(mutated_program())
def test_mutants_agree(text):
    assert_agree(text)


def program(body: str, decls: str = "") -> str:
    return f"program P;\n{decls}begin\n{body}\nend.\n"


CASES = {
    "dangling else": program("if a then if b then x := 1 else x := 2"),
    "empty statements": program(";; begin ; end; if a then else ;"),
    "on gpu binds inside": program("", "var v : vector[3] of float32 on gpu; t : tracked matrix[2, 2] of float64 on gpu;\n"),
    "types": program("", "type R = record a, b : integer; c : array[-2..-1] of array of vector of int8 end;\n"
                         "E = record end;\n"),
    "routines": program("", "procedure P(); begin end;\nfunction F(address a, b : integer; c : string) : integer;\n"
                            "const K : integer = 2; var z : integer; begin result := a end;\n"),
    "most negative integer": program("x := -9223372036854775808; y := -(9223372036854775808); z := - -1"),
    "literals": program("x := [[1.5, 2e3], [0.25e-2, 007]]; s := 'it''s'; b := true and not false; "
                        "n := 0000000000000000000000000042; m := 9223372036854775807"),
    "postfix chains": program("a.b[1, 2].c(3)(address d.e[f], g : 4 : h); (x)[0] := 1; [1][0]"),
    "precedence": program("x := -a * b div c mod d + e - f <= g or h and i = j; y := not a = b and not not c or d"),
    "comparisons between others": program("x := a = b and c = d; y := -a < -b; z := not (a < b) = c"),
    "comments and line ends": program("x := 1 { a\n comment } + (* another\r\n *) 2 // to the end\r\n; y :=\r 3"),
    "loops": program("for i := 10 downto 1 do while i > 0 do repeat i := i - 1 until i = 0; "
                     "tape y := x * x end; break; continue; exit"),
    "tasks and spawns": program("tasks spawn P(1, address r[0]); for i := 0 to 3 do spawn Q; "
                                "begin spawn R(i) end; end; tasks end"),
}


@pytest.mark.parametrize("name", CASES)
def test_subtle_cases(name):
    assert_agree(CASES[name], must_accept=True)


REFUSED = {
    "chained comparison": program("x := a < b < c"),
    "chained after not": program("x := not a < b < c"),
    "chained after and": program("x := a = b and c = d = e"),
    "not inside a sum": program("x := a + not b"),
    "not after a comparison": program("x := a < not b"),
    "too large": program("x := 9223372036854775808"),
    "spawn without a call": program("tasks spawn end"),
    "tasks without its end": program("tasks spawn P(1)"),
    "tasks as a name": program("tasks := 1"),
    "far too large": program("x := " + "9" * 5000),
    "infinite float": program("x := 1e400"),
    "malformed float": program("x := 1.e5"),
    "unclosed comment": program("x := (* 1"),
    "unclosed string": program("x := 'abc"),
    "keyword as name": program("", "var begin : integer;\n"),
    "text after the end": program("") + "x",
    "a stray character": program("x := 1 # 2"),
    "a vertical tab": program("x :=\v1"),
}


@pytest.mark.parametrize("name", REFUSED)
def test_what_lark_refuses_falls_back(name):
    assert descent_parse(REFUSED[name])[0] is None
    assert lark_parse(REFUSED[name])[0] is None


def nested(kind: str, depth: int) -> str:
    if kind == "for":
        return program("for i := 1 to 2 do " * depth + "x := 1")
    if kind == "sum":  # nested to the right: a chain nests to the left, at one level
        return program("x := " + "1 + (" * depth + "1" + ")" * depth)
    if kind == "not":
        return program("x := " + "not " * depth + "a")
    if kind == "array":
        return program("", "var a : " + "array of " * depth + "integer;\n")
    return program("x := " + "F(" * depth + "1" + ")" * depth)


@pytest.mark.parametrize("kind", ["for", "sum", "not", "array", "call"])
def test_nesting_heights_agree_at_the_limit(kind):
    """Around MAX_NESTING the two parsers must agree to the level on what nests too deep."""
    for depth in range(1, 30):
        assert_agree(nested(kind, depth), must_accept=True)
    # The deepest program whose lark tree is within the limit; one level more is over it.
    low, high = 1, descent.MAX_NESTING
    while low < high:
        middle = (low + high + 1) // 2
        if tree_height(nested(kind, middle)) <= descent.MAX_NESTING:
            low = middle
        else:
            high = middle - 1
    assert_agree(nested(kind, low), must_accept=True)
    assert descent_parse(nested(kind, low + 1))[0] is None
    with pytest.raises(CompileError) as error:
        parse(SourceFile("p.mica", nested(kind, low + 1)))
    assert [d.code for d in error.value.diagnostics] == [2010]


@pytest.mark.parametrize("op", ["+", "*", "and", "or", "-"])
def test_a_chain_is_not_nesting(op):
    """A chain of 3,000 terms, past MAX_NESTING if each link were a level, stands at
    the height of one link in both parsers; parentheses around its left part too."""
    terms = f" {op} ".join(["a"] * 3000)
    bracketed = "(" * 2999 + "a" + f" {op} a)" * 2999
    for text in (program("x := " + terms), program("x := " + bracketed)):
        assert_agree(text, must_accept=True)
        assert descent_parse(text)[1] == tree_height(text) < 10


def streamed(text: str):
    """parse_streaming's tree with every body read to a list, or None where it falls back."""
    try:
        program = descent.parse_streaming(text)
        for decl in program.decls:
            if isinstance(decl, ast.Routine):
                decl.body = list(decl.body)
        program.body = list(program.body)
    except (descent.Fallback, RecursionError):
        return None
    return program


ROUTINES = program("R(1); x := F(2)",
                   "var x, a : integer;\nprocedure R(n : integer);\nvar r : record v : integer end;\n"
                   "begin\n    tape x := 1 end;\n    begin begin r.v := n end end;\n    if n > 0 then R(n - 1);\n"
                   "    tasks spawn R(0); spawn R(1) end\nend;\n"
                   "function F(n : integer) : integer;\nbegin\n    repeat n := n - 1 until n < 0;\n    result := n\nend;\n")


def test_streaming_reads_the_same_tree_as_parse():
    """`check` skims routine bodies (counting the words that open an `end`) and reads them later."""
    assert descent_parse(ROUTINES)[0] is not None
    for text in [ROUTINES, *CASES.values()]:
        eager = descent_parse(text)[0]
        lazy = streamed(text)
        assert (lazy is None) == (eager is None), text
        if eager is not None:
            assert dump(lazy) == dump(eager)


@pytest.mark.parametrize("kind", ["for", "sum"])
def test_streaming_agrees_on_nesting_inside_a_routine(kind):
    """A body read late still counts toward the program's height: the limit falls where parse puts it."""
    def inside(depth: int) -> str:
        body = ("for i := 1 to 2 do " * depth + "x := 1") if kind == "for" else \
            "x := " + "1 + (" * depth + "1" + ")" * depth
        return program("R", f"var x, i : integer;\nprocedure R;\nbegin\n{body}\nend;\n")

    low, high = 1, descent.MAX_NESTING
    while low < high:
        middle = (low + high + 1) // 2
        if descent_parse(inside(middle))[0] is not None:
            low = middle
        else:
            high = middle - 1
    assert low > 100 and streamed(inside(low)) is not None
    assert descent_parse(inside(low + 1))[0] is None and streamed(inside(low + 1)) is None
