"""Units (LANGUAGE.md §12): programs in several files.

tests/units/ holds the programs:
  - order/: three units that use each other, run in dependency order, keep
    private names of the same spelling, are named plainly and qualified, and
    trap naming the unit's own file and line;
  - single.mica and split/: one program whole, and the same program with its
    types and routines moved into three units; both print the same digits,
    write the same checkpoint bytes and list the same `explain` paths, at
    every tier and on aarch64;
  - errors/CODE_what/: main.mica and its units, and the exact diagnostics
    `micatool check main.mica` prints (expected.err), one mistake each.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from helpers import build, run
from micatool.cli import main

UNITS = Path(__file__).parent / "units"
ERRORS = sorted((UNITS / "errors").iterdir())
TIERS = ("debug", "checked", "fast")


def check(capsys, monkeypatch, folder: Path, *args: str) -> tuple[int, str]:
    monkeypatch.chdir(folder)
    status = main(["check", *args])
    return status, capsys.readouterr().err


@pytest.mark.parametrize("case", ERRORS, ids=lambda p: p.name)
def test_each_mistake_is_one_numbered_diagnostic_in_its_file(case, capsys, monkeypatch):
    status, err = check(capsys, monkeypatch, case, "main.mica")
    assert status == 1
    assert err == (case / "expected.err").read_text()
    assert f"analyzer error {case.name.split('_')[0]}:" in err


def test_the_units_run_in_order_and_trap_at_their_own_lines():
    order = UNITS / "order"
    result = run(build(order / "main.mica"), cwd=order)
    assert result.stdout == (order / "expected.txt").read_text()
    assert result.stderr == (order / "expected-stderr.txt").read_text() == "counter.mica:27: division by zero\n"
    assert result.returncode == 1


@pytest.mark.slow
@pytest.mark.parametrize("target, tier", [("x86_64-linux", tier) for tier in TIERS] + [("aarch64-linux", "fast")])
def test_splitting_a_program_into_units_changes_no_digit(target, tier, tmp_path, request):
    if target == "aarch64-linux":
        request.getfixturevalue("aarch64")
    outputs = {}
    for name, program in (("single", UNITS / "single.mica"), ("split", UNITS / "split" / "split.mica")):
        checkpoint = tmp_path / f"{name}.safetensors"
        result = run(build(program, target=target, tier=tier), target=target, args=[str(checkpoint)])
        assert result.returncode == 0, result.stderr
        outputs[name] = (result.stdout, checkpoint.read_bytes())
    assert outputs["single"] == outputs["split"]
    assert outputs["single"][0].startswith("1 0.015253534406692304 0.11280268123696922 0.04155744218132467 ")


def test_splitting_keeps_the_explain_paths(capsys):
    tables = []
    for program in (UNITS / "single.mica", UNITS / "split" / "split.mica"):
        assert main(["explain", str(program)]) == 0
        tables.append(capsys.readouterr().out)
    assert tables[0] == tables[1]
    assert tables[0].splitlines()[1].split() == ["blocks[0].w", "tracked", "matrix[3,", "3]", "of", "float64", "9"]


def test_a_unit_is_checked_alone_and_refused_as_a_program(capsys, monkeypatch):
    assert check(capsys, monkeypatch, UNITS / "split", "optim.mica") == (0, "")
    assert main(["build", "optim.mica", "-o", "optim"]) == 1
    assert capsys.readouterr().err == (
        "optim.mica:2:6: analyzer error 2011: 'Optim' is a unit, not a program: build and run a program that uses "
        "it; `micatool check` checks a unit alone\n    unit Optim;\n         ^\n")


def write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)


SEVEN = "unit Seven;\ninterface\nfunction Value : integer;\nimplementation\nfunction Value : integer;\n" \
        "begin\n    result := 7;\nend;\nend.\n"
EIGHT = "unit Eight;\ninterface\nfunction Value : integer;\nimplementation\nuses Seven;\n" \
        "function Value : integer;\nbegin\n    result := Seven.Value + 1;\nend;\nend.\n"
USES_BOTH = "program P;\nuses Seven, Eight;\nbegin\n    WriteLn(Seven.Value, ' ', Eight.Value);\nend.\n"


def test_units_are_found_beside_then_through_dash_i_then_mica_path(tmp_path, capsys, monkeypatch):
    write(tmp_path, {"app/p.mica": USES_BOTH, "include/seven.mica": SEVEN, "path/Eight.mica": EIGHT})
    monkeypatch.setenv("MICA_PATH", f"{tmp_path / 'nowhere'}:{tmp_path / 'path'}")
    monkeypatch.chdir(tmp_path)
    assert main(["check", "app/p.mica"]) == 1
    looked = f"{tmp_path / 'nowhere'} (MICA_PATH), {tmp_path / 'path'} (MICA_PATH)"
    assert capsys.readouterr().err == (
        f"app/p.mica:2:6: analyzer error 3010: unit 'Seven' not found: looked for seven.mica and Seven.mica in app "
        f"(beside p.mica), {looked}\n    uses Seven, Eight;\n         ^\n"
        f"path/Eight.mica:5:6: analyzer error 3010: unit 'Seven' not found: looked for seven.mica and Seven.mica in "
        f"path (beside Eight.mica), {looked}\n    uses Seven;\n         ^\n")
    binary = tmp_path / "p"
    assert main(["build", "-I", "include", "app/p.mica", "-o", str(binary)]) == 0
    assert subprocess.run([binary], capture_output=True, text=True).stdout == "7 8\n"
    # beside the using file comes first: a Seven there wins over -I's
    write(tmp_path, {"app/q.mica": "program Q;\nuses Seven;\nbegin\n    WriteLn(Value);\nend.\n",
                     "app/seven.mica": SEVEN.replace(":= 7", ":= 70")})
    assert main(["build", "-I", "include", "app/q.mica", "-o", str(binary)]) == 0
    assert subprocess.run([binary], capture_output=True, text=True).stdout == "70\n"


def test_two_files_of_one_unit_are_refused(tmp_path, capsys, monkeypatch):
    """Eight (found through -I) uses the Seven beside it; the program uses the Seven beside itself."""
    write(tmp_path, {"p.mica": USES_BOTH, "seven.mica": SEVEN, "lib/eight.mica": EIGHT, "lib/seven.mica": SEVEN})
    status, err = check(capsys, monkeypatch, tmp_path, "-I", "lib", "p.mica")
    assert status == 1
    assert err == ("lib/eight.mica:5:6: analyzer error 3021: two files hold unit 'Seven': 'seven.mica' and "
                   "'lib/seven.mica'; the units of a program have different names\n    uses Seven;\n         ^\n")


def test_an_edited_unit_is_rebuilt_and_never_served_stale(tmp_path):
    """The build cache keys on the program's C, which holds every unit: an edit between two
    builds gives a new binary, and putting the unit back gives the first one again."""
    write(tmp_path, {"p.mica": USES_BOTH, "seven.mica": SEVEN, "eight.mica": EIGHT})
    first = build(tmp_path / "p.mica")
    assert run(first).stdout == "7 8\n"
    write(tmp_path, {"seven.mica": SEVEN.replace(":= 7", ":= 9")})
    second = build(tmp_path / "p.mica")
    assert second != first and run(second).stdout == "9 10\n"
    write(tmp_path, {"seven.mica": SEVEN})
    assert build(tmp_path / "p.mica") == first


def test_a_unit_syntax_error_names_the_unit_file(tmp_path, capsys, monkeypatch):
    write(tmp_path, {"p.mica": USES_BOTH, "seven.mica": SEVEN.replace("result := 7;", "result = 7;"),
                     "eight.mica": EIGHT})
    status, err = check(capsys, monkeypatch, tmp_path, "p.mica")
    assert (status, err) == (1, "seven.mica:7:12: analyzer error 2007: '=' compares; assignment is ':='\n"
                                "        result = 7;\n               ^\n")


def test_a_unit_is_used_from_a_notebook_cell_beside_it(tmp_path, capsys):
    write(tmp_path, {"seven.mica": SEVEN, "eight.mica": EIGHT,
                     "note.md": "# Units\n\n```mica\n" + USES_BOTH + "```\n"})
    assert main(["notebook", "run", str(tmp_path / "note.md")]) == 0
    assert "```output\n7 8\n```" in (tmp_path / "note.md").read_text()


def test_checkpoints_record_the_units_constants_before_the_programs(tmp_path):
    """to_torch.py and other readers find the model's shapes in a checkpoint's consts,
    wherever the program declares them."""
    from safetensors import safe_open

    checkpoint = tmp_path / "split.safetensors"
    assert run(build(UNITS / "split" / "split.mica"), args=[str(checkpoint)]).returncode == 0
    with safe_open(str(checkpoint), "np") as f:
        assert f.metadata()["consts"] == '{"D":3,"Rate":0.1,"Steps":4}'


def test_the_front_end_reads_a_program_of_units_through_the_console_script(tmp_path):
    write(tmp_path, {"p.mica": USES_BOTH, "seven.mica": SEVEN, "eight.mica": EIGHT})
    done = subprocess.run([sys.executable, "-m", "micatool", "run", "p.mica"], capture_output=True, text=True,
                          cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, "7 8\n")
