"""Golden diagnostics: tests/diagnostics/NNNN_what.mica gives exactly NNNN_what.err.

Each file shows one diagnostic (named by its code), in the LANGUAGE.md §9 form:
file:line:col, the code, the message, the source line and a caret. `micatool
check` prints them to stderr and exits 1.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from micatool.cli import main
from micatool.diagnostics import MAX_ERRORS, Diagnostic, Pos, SourceFile

CASES = sorted((Path(__file__).parent / "diagnostics").glob("*.mica"))


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_diagnostic_text(case: Path, capsys, monkeypatch):
    monkeypatch.chdir(case.parent)
    assert main(["check", case.name]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == case.with_suffix(".err").read_text()


def test_each_file_shows_the_code_it_is_named_after():
    for case in CASES:
        code = case.stem.split("_")[0]
        if code.isdigit():
            assert f"analyzer error {code}:" in case.with_suffix(".err").read_text(), case.name


def test_at_least_thirty_distinct_codes():
    codes = set()
    for case in CASES:
        codes |= set(re.findall(r"analyzer error (\d{4})", case.with_suffix(".err").read_text()))
    assert len(codes) >= 30, sorted(codes)


def test_check_command_exits_1_through_the_console_script(tmp_path):
    program = tmp_path / "bad.mica"
    program.write_text("program P;\nbegin\n    WriteLn(undefined);\nend.\n")
    result = subprocess.run([sys.executable, "-m", "micatool", "check", str(program)], capture_output=True, text=True,
                            env=dict(os.environ, MICATOOL_TRACEBACK=""))
    assert result.returncode == 1
    assert result.stderr.startswith(f"{program}:3:13: analyzer error 3001: unknown name 'undefined'")
    assert "Traceback" not in result.stderr


def test_a_long_line_shows_the_window_at_its_end_and_past_it():
    line = "x" * 200 + ";"
    source = SourceFile("long.mica", "program P;\n" + line + "\nend.\n")
    at_end = Diagnostic(source, Pos(2, 202), 2002, "m").render().splitlines()
    assert at_end[1:] == ["    \u2026" + line[-120:], "    " + " " * 121 + "^"]
    at_start = Diagnostic(source, Pos(2, 3), 2002, "m").render().splitlines()
    assert at_start[1:] == ["    " + line[:120] + "\u2026", "      ^"]


def test_a_one_line_file_of_megabytes_renders_in_a_few_hundred_characters():
    source = SourceFile("one.mica", "program P; begin " + "WriteLn(1); " * 500_000 + "y := 1 end.")
    assert len(Diagnostic(source, Pos(1, 6_000_018), 3001, "unknown name 'y'").render()) < 400


def test_a_stage_stops_at_the_error_limit(tmp_path, capsys):
    """150 unknown names: the first MAX_ERRORS are shown, in source order, then why it stopped."""
    program = tmp_path / "many.mica"
    program.write_text("program P;\nbegin\n" + "".join(f"    u{i} := 1;\n" for i in range(150)) + "end.\n")
    assert main(["check", str(program)]) == 1
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if " analyzer error " in line]
    assert len(lines) == MAX_ERRORS == 100
    assert lines[0] == f"{program}:3:5: analyzer error 3001: unknown name 'u0'"
    assert lines[-1] == f"{program}:102:5: analyzer error 3001: unknown name 'u99'"
    assert err.endswith("\nmicatool: stopped after 100 errors; fix these and check again\n")


def test_check_reads_a_large_body_a_statement_at_a_time_and_still_says_what_a_build_would(tmp_path, capsys):
    """`check` analyzes the main body as it parses it; a syntax error after 100 errors in the
    statements before it is still the one reported, as when the whole tree is built first."""
    program = tmp_path / "late.mica"
    program.write_text("program P;\nbegin\n" + "".join(f"    u{i} := 1;\n" for i in range(150)) + "    x := ;\nend.\n")
    assert main(["check", str(program)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{program}:153:10: analyzer error 2003: unexpected ';'")
    assert "3001" not in err
    fine = tmp_path / "fine.mica"
    fine.write_text("program P;\nvar a : integer;\nbegin\n" + "    a := a + 1;\n" * 1000 + "    WriteLn(a);\nend.\n")
    assert main(["check", str(fine)]) == 0
