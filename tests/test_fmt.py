"""micatool fmt: the canonical layout changes blanks only, keeps every comment on
its line, is idempotent, and never changes what a program means: every .mica
file of the repository, formatted, gives the same C as before (so the same
binary and the same output) and formats to itself again."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import ROOT, build, run
from micatool.cli import main
from micatool.compile import compile_program, load_source, parse
from micatool.compile.ast import Unit
from micatool.compile.descent import scan
from micatool.diagnostics import CompileError, SourceFile
from micatool.fmt import format_source

FILES = sorted(ROOT / p for p in subprocess.run(["git", "ls-files", "*.mica"], capture_output=True, text=True,
                                                 cwd=ROOT, check=True).stdout.split())
OWN = ["examples", "bench", "tests/programs", "tests/units"]  # held formatted; tests/diagnostics are odd on purpose


def formats(path: Path) -> tuple[SourceFile, str] | None:
    """The file and its formatted text, or None when it does not parse."""
    try:
        source = load_source(str(path))
        return source, format_source(source)
    except CompileError:
        return None


# Files that do not parse are left as they are (test_a_file_that_does_not_parse_is_left_untouched).
FORMATTED = {path: done for path in FILES if (done := formats(path)) is not None}


@pytest.mark.parametrize("path", FORMATTED, ids=lambda p: str(p.relative_to(ROOT)))
def test_formatting_changes_only_blanks_and_is_idempotent(path):
    source, formatted = FORMATTED[path]
    before, after = scan(source.text), scan(formatted)
    assert [(t.kind, t.text if t.kind != "comment" else " ".join(t.text.split())) for t in before] == \
        [(t.kind, t.text if t.kind != "comment" else " ".join(t.text.split())) for t in after]
    assert [t.line for t in before] == [t.line for t in after]  # every token, comments too, on its line
    assert format_source(SourceFile(source.name, formatted)) == formatted


def test_formatted_programs_compile_to_the_same_c(tmp_path):
    """Every program of the repository and its units, formatted in a copy of their folder."""
    compared = 0
    for folder in sorted({p.parent for p in FILES}):
        copy = tmp_path / folder.relative_to(ROOT)
        copy.mkdir(parents=True)
        for path in sorted(folder.glob("*.mica")):
            done = formats(path)
            shutil.copy(path, copy / path.name)
            if done is not None:
                (copy / path.name).write_text(done[1])
        for path in sorted(folder.glob("*.mica")):
            try:
                if isinstance(parse(load_source(str(path))), Unit):
                    continue
                before = compile_program(load_source(str(path))).c
            except CompileError:
                continue
            after = compile_program(load_source(str(copy / path.name))).c
            assert after.replace(str(copy), str(folder)) == before, path
            compared += 1
    assert compared >= 30


def test_a_formatted_example_prints_what_it_printed(tmp_path):
    example = ROOT / "examples" / "mlp"
    copy = tmp_path / "mlp"
    shutil.copytree(example, copy)
    head, body = (copy / "mlp.mica").read_text().split("program Mlp;")
    (copy / "mlp.mica").write_text(head + "program Mlp;" + body.replace("    ", "  ").replace(" := ", ":="))
    assert main(["fmt", str(copy / "mlp.mica")]) == 0
    formatted = (copy / "mlp.mica").read_text()
    assert "\n    x : matrix[Points, 2] of float64;\n" in formatted and "\n    result := Tanh(" in formatted
    assert run(build(copy / "mlp.mica")).stdout == (example / "expected.txt").read_text()


# Trailing comments keep their columns (moved as their line moves); a continuation line
# keeps its offset from the line it continues, at least a level in.
MESSY = """{ a program written carelessly }
program   Messy ;
uses  Stats;   // a unit
const N=3;
  Rate : float64=0.5;
type
 Pair=record a,b : integer;
        c:float64;   { a field }
 end;
var x,y:integer;   { two counters }
    v : vector[N] of float64;
function Twice(  n :integer ):integer;
begin result:=n*2; end;
begin
x:=-1;
  if x<0 then
 x:= - x
   else begin
 y :=x+ -2 ;
     end;
for y:=0 to N-1 do
 v[y]:=y*Rate;
  WriteLn( x:3, ' ' ,v:0:2 , Twice(-x),
      Stats.Mean(v));


  repeat x:=x-1 until x<=0;
{ done }
end.
"""
TIDY = """{ a program written carelessly }
program Messy;
uses Stats;    // a unit
const N = 3;
    Rate : float64 = 0.5;
type
    Pair = record a, b : integer;
        c : float64; { a field }
    end;
var x, y : integer; { two counters }
    v : vector[N] of float64;
function Twice(n : integer) : integer;
begin result := n * 2; end;
begin
    x := -1;
    if x < 0 then
        x := -x
    else begin
        y := x + -2;
    end;
    for y := 0 to N - 1 do
        v[y] := y * Rate;
    WriteLn(x:3, ' ', v:0:2, Twice(-x),
        Stats.Mean(v));

    repeat x := x - 1 until x <= 0;
    { done }
end.
"""


def test_the_canonical_layout_of_a_messy_program():
    assert format_source(SourceFile("messy.mica", MESSY)) == TIDY


# Code after a comment over several lines, on the line where the comment closes, stays
# there: the comment and that code move as one piece.
CARRIED = """program Carried;
{ a comment over
  two lines } var x : integer;
begin
  x := 1 + { a
  b } 2;   // after
      (* c
   d *) x := x * 3;
  WriteLn(x); { e
     f } WriteLn(x + 1); (* g
  h *) { i
  j } WriteLn(x + 2)
end.
"""

CARRIED_TIDY = """program Carried;
{ a comment over
  two lines } var x : integer;
begin
    x := 1 + { a
    b } 2;   // after
    (* c
 d *) x := x * 3;
    WriteLn(x); { e
       f } WriteLn(x + 1); (* g
    h *) { i
    j } WriteLn(x + 2)
end.
"""


def test_code_after_a_comment_over_lines_stays_where_the_comment_closes():
    formatted = format_source(SourceFile("carried.mica", CARRIED))
    assert formatted == CARRIED_TIDY
    assert [(t.kind, t.line) for t in scan(formatted)] == [(t.kind, t.line) for t in scan(CARRIED)]
    assert compile_program(SourceFile("carried.mica", formatted)).c == compile_program(
        SourceFile("carried.mica", CARRIED)).c


def test_check_names_the_files_that_would_change_and_changes_none(tmp_path, capsys):
    (tmp_path / "a.mica").write_text(MESSY)
    (tmp_path / "b.mica").write_text(TIDY)
    assert main(["fmt", "--check", str(tmp_path)]) == 1
    assert capsys.readouterr().out == f"would reformat {tmp_path / 'a.mica'}\n"
    assert (tmp_path / "a.mica").read_text() == MESSY
    assert main(["fmt", str(tmp_path)]) == 0
    assert capsys.readouterr().out == f"reformatted {tmp_path / 'a.mica'}\n"
    assert main(["fmt", "--check", str(tmp_path)]) == 0


def test_a_file_that_does_not_parse_is_left_untouched(tmp_path, capsys):
    broken = "program Broken;\nbegin\n    x := 1\n    y := 2;\nend.\n"
    (tmp_path / "broken.mica").write_text(broken)
    assert main(["fmt", str(tmp_path / "broken.mica")]) == 1
    assert (tmp_path / "broken.mica").read_text() == broken
    assert "analyzer error 2001: expected ';' before 'y'" in capsys.readouterr().err


def test_a_file_that_does_not_lex_is_left_untouched_and_shows_every_slip(tmp_path, capsys):
    broken = "program Broken;\nbegin\n  WriteLn(1) #;\n  WriteLn(\"two\");\nend.\n"
    (tmp_path / "broken.mica").write_text(broken)
    assert main(["fmt", str(tmp_path / "broken.mica")]) == 1
    assert (tmp_path / "broken.mica").read_text() == broken
    err = capsys.readouterr().err
    assert [line.split(": ", 1)[1] for line in err.splitlines() if " analyzer error " in line] == [
        "analyzer error 1001: unexpected character '#'", "analyzer error 1001: unexpected character '\"'"]
    assert "    = help: Mica strings are in single quotes: 'two'" in err.splitlines()


def test_the_projects_own_files_are_formatted(capsys):
    assert main(["fmt", "--check", *(str(ROOT / folder) for folder in OWN)]) == 0, capsys.readouterr().out
