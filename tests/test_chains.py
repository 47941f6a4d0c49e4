"""A long chain of operators (`a + b + c ...`) is not nesting.

A chain nests to the left, +(+(a, b), c), one level a term; every stage walks
down it in a loop, so it may be as long as a program likes, while real nesting
(parentheses around a right operand, calls in calls, blocks in blocks) keeps
its limit and its diagnostic 2010 (tests/test_parser.py).
"""

from __future__ import annotations

from micatool.cli import main
from micatool.diagnostics import SourceFile
from micatool.fmt import format_source

from helpers import build_text, run


def chain(op: str, term: str, count: int) -> str:
    return f" {op} ".join([term] * count)


def test_a_chain_of_100000_terms_checks(tmp_path, capsys):
    (tmp_path / "sum.mica").write_text(f"program Sum;\nvar a, x : integer; b : boolean;\nbegin\n    a := 1;\n"
                                       f"    x := {chain('+', 'a', 100_000)};\n"
                                       f"    b := {chain('and', 'a > 0', 100_000)};\n    WriteLn(x, ' ', b);\nend.\n")
    assert main(["check", str(tmp_path / "sum.mica")]) == 0
    assert capsys.readouterr() == ("", "")


def test_a_chain_of_10000_terms_runs_left_to_right(tmp_path):
    """Each float sum rounds as (a + b) + c does: 10,000 times 0.1, added one at a time,
    is 1000.0000000001588 (halving the list again and again, as a pairwise sum does, gives 1000.0)."""
    result = run(build_text(tmp_path, f"program Sum;\nvar a, x : integer; f, y : float64;\nbegin\n"
                                      f"    a := 3; f := 0.1;\n"
                                      f"    x := {chain('-', 'a', 10_000)};\n"
                                      f"    y := {chain('+', 'f', 10_000)};\n"
                                      f"    WriteLn(x, ' ', y);\nend.\n"))
    assert (result.returncode, result.stdout, result.stderr) == (0, "-29994 1000.0000000001588\n", "")


def test_3000_parentheses_around_a_chain_still_compile(tmp_path):
    """Parentheses make no node: `(((a + a) + a) ...)` is the same chain, and `((a))` is a."""
    opened, closed = "(" * 3000, ")" * 3000
    result = run(build_text(tmp_path, f"program Brackets;\nvar a : integer;\nbegin\n    a := 2;\n"
                                      f"    WriteLn({opened}a{' + a)' * 3000}, ' ', {opened}a{closed});\nend.\n"))
    assert (result.returncode, result.stdout) == (0, "6002 2\n")


def test_fmt_lays_out_a_chain_of_100000_terms():
    text = f"program Sum;\nvar a, x : integer;\nbegin\n    x:={'+'.join(['a'] * 100_000)}\nend.\n"
    assert format_source(SourceFile("sum.mica", text)) == \
        f"program Sum;\nvar a, x : integer;\nbegin\n    x := {chain('+', 'a', 100_000)}\nend.\n"
