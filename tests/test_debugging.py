"""Debugging a Mica program with gdb (docs/debugging.md; the `gdb` fixture is conftest.py's).

A build that keeps line tables (the debug tier, or --symbols) compiles C with
#line directives, so its line tables name each .mica file as the build was
given it and the Mica lines: gdb breaks at `prog.mica:LINE`, its backtrace
names the Mica routines at their Mica lines, `list` shows the Mica source, and
`print` reads a variable by its name. A unit's code is at its own file's lines.
The checked and fast tiers, which strip line tables, compile C without them.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from micatool import targets
from micatool.compile import compile_program, load_source
from micatool.link.build import c_text

SQUARES = """program Squares;
var total : integer;
    scale : float64;

function Square(n : integer) : integer;
var s : integer;
begin
    s := n * n;
    result := s;
end;

begin
    scale := 0.5;
    total := 1;
    total := total + Square(3);
    WriteLn(total * scale);
end.
"""

COUNTER = """unit Counter;

interface
var count : integer;
procedure Bump(by : integer);

implementation

procedure Bump(by : integer);
var sum : integer;
begin
    sum := count + by;
    count := sum;
end;

end.
"""

MAIN = """program Main;
uses Counter;
var i : integer;
begin
    for i := 1 to 3 do
        Bump(10 * i);
    WriteLn(count);
end.
"""


def debug_build(folder: Path, files: dict[str, str], program: str) -> Path:
    """`micatool build --tier debug` run in `folder`, so the line tables name the files
    relative to it, as the command line gave them."""
    for name, text in files.items():
        (folder / name).write_text(text)
    binary = folder / Path(program).stem
    done = subprocess.run([sys.executable, "-m", "micatool", "build", "--tier", "debug", program, "-o", str(binary)],
                          cwd=folder, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return binary


def debug(gdb: str, binary: Path, *commands: str) -> str:
    """gdb's output for the commands, run in batch from the binary's folder."""
    args = [gdb, "-nx", "-batch"]
    for command in commands:
        args += ["-ex", command]
    done = subprocess.run([*args, f"./{binary.name}"], cwd=binary.parent, capture_output=True, text=True,
                          timeout=120)
    return done.stdout + done.stderr


def test_gdb_breaks_lists_walks_and_prints_at_mica_lines(gdb, tmp_path):
    binary = debug_build(tmp_path, {"squares.mica": SQUARES}, "squares.mica")
    out = debug(gdb, binary, "break squares.mica:9", "run", "backtrace", "print n", "print s", "print total",
                "print scale", "list 8,9", "info source")
    assert "Breakpoint 1 at 0x" in out and "file squares.mica, line 9." in out
    assert "hit Breakpoint 1, Square (n=3) at squares.mica:9\n9\t    result := s;\n" in out
    assert re.search(r"^#0  Square \(n=3\) at squares\.mica:9$", out, re.M)
    assert re.search(r"^#1  0x[0-9a-f]+ in mica_program \(\) at squares\.mica:15$", out, re.M)
    assert "$1 = 3\n$2 = 9\n$3 = 1\n$4 = 0.5\n" in out
    assert "8\t    s := n * n;\n9\t    result := s;\n" in out
    assert f"Current source file is squares.mica\nCompilation directory is .\nLocated in {tmp_path}/squares.mica" in out


def test_a_unit_is_debugged_in_its_own_file(gdb, tmp_path):
    binary = debug_build(tmp_path, {"main.mica": MAIN, "counter.mica": COUNTER}, "main.mica")
    out = debug(gdb, binary, "break counter.mica:13", "run", "continue", "backtrace", "print by", "print sum",
                "print Counter__count", "print i", "list 12,13")
    assert "file counter.mica, line 13." in out
    assert "hit Breakpoint 1, Counter__Bump (by=20) at counter.mica:13\n13\t    count := sum;\n" in out
    assert re.search(r"^#0  Counter__Bump \(by=20\) at counter\.mica:13$", out, re.M)
    assert re.search(r"^#1  0x[0-9a-f]+ in mica_program \(\) at main\.mica:6$", out, re.M)
    assert "$1 = 20\n$2 = 30\n$3 = 10\n$4 = 2\n" in out
    assert "12\t    sum := count + by;\n13\t    count := sum;\n" in out


def test_only_a_build_that_keeps_line_tables_compiles_the_directives(tmp_path):
    """The checked and fast tiers strip line tables, so their C (and build cache key)
    names no file: the same source gives the same binary wherever it lies."""
    (tmp_path / "squares.mica").write_text(SQUARES)
    program = compile_program(load_source(str(tmp_path / "squares.mica")))
    assert f'#line 5 "{tmp_path}/squares.mica"\nstatic int64_t Square(int64_t n) {{' in program.debug_c
    # one C line a Mica line, so a directive only where they jump: Square's heading and first statement,
    # the program's heading and first statement
    assert re.findall(r"^#line (\d+) ", program.debug_c, re.M) == ["5", "8", "1", "13"]
    assert "#line" not in program.c
    for tier in targets.TIERS:
        assert c_text(program, tier) == (program.debug_c if tier == "debug" else program.c)
        assert c_text(program, tier, symbols=True) == program.debug_c
