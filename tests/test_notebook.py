"""Mica Notebooks: Markdown whose recorded outputs are verified facts (docs/notebooks.md)."""

from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from micatool import notebook, plot
from micatool.cli import main

DOCS = Path(__file__).resolve().parents[1] / "docs"
# The tour and the tutorials, verified here on both targets; the course is tests/test_course.py's
# (on this machine's target only: its GPT chapter trains for minutes under qemu).
SHIPPED = [book for book in notebook.notebooks(DOCS) if book.parent != DOCS / "course"]

NOTEBOOK = """# Two cells

Some prose, and a block that is not a cell:

```python
print("not Mica")
```

```mica
program One;
begin
    WriteLn('one ', 1 + 1);
end.
```

Between the cells.

```mica
program Two;
var i : integer;
begin
    i := 9223372036854775807;
    WriteLn('two');
    i := i + 1;
end.
```
"""

RECORDED = NOTEBOOK.replace("    WriteLn('one ', 1 + 1);\nend.\n```\n", "    WriteLn('one ', 1 + 1);\nend.\n```\n\n```output\none 2\n```\n") \
    .replace("    i := i + 1;\nend.\n```\n", "    i := i + 1;\nend.\n```\n\n```output\ntwo\nbook.md#2:6: integer overflow\n```\n")


def test_the_tour_and_the_seven_tutorials_are_notebooks():
    assert [p.relative_to(DOCS).as_posix() for p in SHIPPED] == [
        "notebooks/tour.md", "tutorials/batched-training.md", "tutorials/deterministic-reductions.md",
        "tutorials/dynamic-tensors.md", "tutorials/image-networks.md", "tutorials/linear-algebra.md",
        "tutorials/quantized-tensors.md", "tutorials/vectors-and-matrices.md"]


@pytest.mark.parametrize("book", SHIPPED, ids=lambda p: p.name)
def test_the_shipped_notebooks_prove_themselves(book, capsys):
    assert main(["notebook", "verify", str(book)]) == 0, capsys.readouterr().out


@pytest.mark.qemu
@pytest.mark.parametrize("book", SHIPPED, ids=lambda p: p.name)
def test_the_shipped_notebooks_print_the_same_on_aarch64(book, aarch64, capsys):
    assert main(["notebook", "verify", "--target", "aarch64-linux", str(book)]) == 0, capsys.readouterr().out


def test_verify_takes_a_folder_and_checks_every_notebook_in_it(tmp_path, capsys):
    for folder in ("good", "inner/bad"):  # each named book.md, as the recorded trap says
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "good" / "book.md").write_text(RECORDED)
    (tmp_path / "inner" / "bad" / "book.md").write_text(RECORDED.replace("one 2", "one 5"))
    (tmp_path / "prose.md").write_text("No cells here.\n")
    assert main(["notebook", "verify", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert f"{tmp_path}/inner/bad/book.md:9: the cell's output differs from its recording at line 16" in out
    assert f"{tmp_path}/inner/bad/book.md: 2 cells, 1 differs from its recording" in out
    assert f"{tmp_path}/good/book.md: 2 cells, every output matches its recording" in out
    assert "prose.md" not in out
    (tmp_path / "inner" / "bad" / "book.md").write_text(RECORDED)
    assert main(["notebook", "verify", str(tmp_path)]) == 0


def test_run_records_every_cell_and_a_second_run_writes_nothing(tmp_path, capsys):
    book = tmp_path / "book.md"
    book.write_text(NOTEBOOK)
    assert main(["notebook", "run", str(book)]) == 0
    assert book.read_text() == RECORDED
    assert main(["notebook", "run", str(book)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"{book}: 2 cells run, 0 recordings written"
    assert main(["notebook", "verify", str(book)]) == 0


def test_verify_shows_how_an_output_differs_and_which_cells_lack_one(tmp_path, capsys):
    book = tmp_path / "book.md"
    book.write_text(RECORDED.replace("one 2", "one 3"))
    assert main(["notebook", "verify", str(book)]) == 1
    out = capsys.readouterr().out
    assert f"{book}:9: the cell's output differs from its recording at line 16" in out
    assert "-one 3\n+one 2" in out
    assert out.splitlines()[-1] == f"{book}: 2 cells, 1 differs from its recording"
    book.write_text(NOTEBOOK)
    assert main(["notebook", "verify", str(book)]) == 1
    assert f"{book}:9: this cell has no recorded output" in capsys.readouterr().out
    assert book.read_text() == NOTEBOOK  # verify never writes


def test_a_verify_that_checks_nothing_fails(tmp_path, capsys):
    book = tmp_path / "prose.md"
    book.write_text("# Only prose\n\n```pascal\nbegin end.\n```\n")
    assert main(["notebook", "verify", str(book)]) == 1
    assert capsys.readouterr().out == f"{book}: no ```mica cells, so nothing to verify\n"
    assert main(["notebook", "verify", str(tmp_path)]) == 1
    said = capsys.readouterr().out
    assert said == f"{tmp_path}: no Markdown file under it holds a ```mica cell, so nothing to verify\n"


@pytest.mark.parametrize("body,where", [
    ("    WriteLn(x);\nend.\n", "6:13: analyzer error 3001: unknown name 'x'"),
    ("    WriteLn(1);\n", "6:16: analyzer error 2002: unexpected end of file"),  # cut short: at its last line
])
def test_a_cell_that_does_not_compile_is_reported_at_its_notebook_line(tmp_path, capsys, body, where):
    book = tmp_path / "book.md"
    book.write_text(f"Text.\n\n```mica\nprogram Bad;\nbegin\n{body}```\n")
    assert main(["notebook", "run", str(book)]) == 1
    assert capsys.readouterr().err.startswith(f"{book}:{where}")


def test_a_refused_cell_records_its_diagnostics(tmp_path, capsys):
    book = tmp_path / "book.md"
    refused = "```mica refused\nprogram Bad;\nbegin\n    WriteLn(x);\nend.\n```\n"
    book.write_text(refused)
    assert main(["notebook", "run", str(book)]) == 0
    assert "```output\nbook.md#1:3:13: analyzer error 3001: unknown name 'x'\n" in book.read_text()
    book.write_text(refused.replace("WriteLn(x)", "WriteLn(1)"))
    assert main(["notebook", "verify", str(book)]) == 1
    assert "this cell says `refused`, but it compiles" in capsys.readouterr().err


def test_a_recording_of_backticks_gets_a_longer_fence(tmp_path):
    book = tmp_path / "book.md"
    book.write_text("```mica\nprogram Ticks;\nbegin\n    WriteLn('```');\nend.\n```\n")
    assert main(["notebook", "run", str(book)]) == 0
    assert book.read_text().endswith("\n````output\n```\n````\n")
    assert main(["notebook", "verify", str(book)]) == 0


def test_cells_run_beside_the_notebook(tmp_path):
    (tmp_path / "data.txt").write_text("beside")
    book = tmp_path / "book.md"
    book.write_text("```mica\nprogram Read;\nbegin\n    WriteLn(ReadFile('data.txt'));\nend.\n```\n")
    assert main(["notebook", "run", str(book)]) == 0
    assert book.read_text().endswith("```output\nbeside\n```\n")


CONTINUED = """```mica
program Base;
const
    K = 3;
var
    total : integer;

function Triple(n : integer) : integer;
begin
    result := K * n;
end;

begin
    WriteLn('base ', Triple(2));
end.
```

A cell that continues it:

```mica continue
var
    extra : integer;
begin
    extra := Triple(5);
    total := extra + K;
    WriteLn('continued ', extra, ' ', total);
end.
```

```mica continue
function Twice(n : integer) : integer;
begin
    result := 2 * Triple(n);
end;

begin
    extra := Twice(1);
    WriteLn('again ', extra);
    total := 9223372036854775807;
    total := total + extra;
end.
```
"""


def test_a_continue_cell_joins_the_declarations_before_it_and_has_its_own_body(tmp_path):
    book = tmp_path / "book.md"
    book.write_text(CONTINUED)
    assert main(["notebook", "run", str(book)]) == 0
    recordings = [block.text for block in notebook.fenced_blocks(book.read_text().splitlines())
                  if block.info == "output"]
    # The third cell sees `extra` from the second and `Triple` from the first; the
    # trap's line counts through its whole program: Base's 11 lines before `begin`,
    # the second cell's 2 declaration lines, then its own 10th line.
    assert recordings == ["base 6\n", "continued 15 18\n", "again 6\nbook.md#3:23: integer overflow\n"]


def test_a_diagnostic_in_a_continue_cell_is_at_its_notebook_line(tmp_path, capsys):
    book = tmp_path / "book.md"
    book.write_text(CONTINUED.replace("extra := Twice(1);", "extra := Twice(missing);"))
    assert main(["notebook", "run", str(book)]) == 1
    assert capsys.readouterr().err.startswith(f"{book}:37:20: analyzer error 3001: unknown name 'missing'")


def test_a_continue_cell_needs_a_cell_before_it(tmp_path, capsys):
    book = tmp_path / "book.md"
    book.write_text("```mica continue\nbegin\n    WriteLn(1);\nend.\n```\n")
    assert main(["notebook", "run", str(book)]) == 1
    assert "book.md:1: a `continue` cell continues the program of the cell before it" in capsys.readouterr().err


def test_an_unknown_word_in_the_info_string_is_refused(tmp_path, capsys):
    book = tmp_path / "book.md"
    book.write_text("Text.\n\n```mica plot=a.png\nprogram P;\nbegin\nend.\n```\n")
    assert main(["notebook", "verify", str(book)]) == 1
    assert f"{book}:3: the cell's info string has 'plot=a.png', which is not refused" in capsys.readouterr().err


THREADED = "```mica threads=1,3\nprogram T;\nbegin\n    WriteLn('same');\nend.\n```\n"


def test_a_threads_cell_runs_at_each_count_and_must_print_the_same(tmp_path, monkeypatch, capsys):
    book = tmp_path / "book.md"
    book.write_text(THREADED)
    seen, real = [], subprocess.run

    def recording_run(command, **kw):
        if kw.get("cwd") == tmp_path:  # the cell's program, not the build
            seen.append(kw["env"]["MICA_THREADS"])
        return real(command, **kw)

    monkeypatch.setattr(notebook.subprocess, "run", recording_run)
    assert main(["notebook", "run", str(book)]) == 0
    assert seen == ["1", "3"]
    assert book.read_text().endswith("```output\nsame\n```\n")

    def drifting_run(command, **kw):  # a program whose digits depend on the thread count
        done = real(command, **kw)
        if kw.get("cwd") != tmp_path:
            return done
        return subprocess.CompletedProcess(done.args, 0, done.stdout + kw["env"]["MICA_THREADS"].encode(), b"")

    monkeypatch.setattr(notebook.subprocess, "run", drifting_run)
    assert main(["notebook", "verify", str(book)]) == 1
    err = capsys.readouterr().err
    assert "book.md:1: the cell prints differently at MICA_THREADS=3 than at 1:" in err
    assert "--- 1\n+++ 3\n@@ -1,2 +1,2 @@\n same\n-1\n+3" in err


PLOTTED = """# Losses

```mica plot=loss.svg x=step y=loss
program Curve;
var
    i : integer;
begin
    WriteLn('a line before the table');
    WriteLn('step loss');
    for i := 1 to 5 do
        WriteLn(i, ' ', 1.0 / i:0:4);
    WriteLn('done');
end.
```

After.
"""


def test_a_plot_is_drawn_beside_the_notebook_linked_and_verified(tmp_path, capsys):
    book = tmp_path / "book.md"
    book.write_text(PLOTTED)
    assert main(["notebook", "run", str(book)]) == 0
    text = book.read_text()
    assert text.endswith("```output\na line before the table\nstep loss\n1 1.0000\n2 0.5000\n3 0.3333\n"
                         "4 0.2500\n5 0.2000\ndone\n```\n\n![loss by step](loss.svg)\n\nAfter.\n")
    picture = (tmp_path / "loss.svg").read_text()
    steps = [1.0, 2.0, 3.0, 4.0, 5.0]
    assert picture == plot.svg("step", "loss", [("loss", steps, [1.0, 0.5, 0.3333, 0.25, 0.2])], "line")
    root = ElementTree.fromstring(picture)  # well-formed, and it names its axes
    labels = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "step" in labels and "loss" in labels and "0.2" in labels and "1.0" in labels
    assert root.find("{http://www.w3.org/2000/svg}title").text == "loss by step"
    assert main(["notebook", "run", str(book)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"{book}: 1 cell run, 0 recordings written"
    assert main(["notebook", "verify", str(book)]) == 0

    (tmp_path / "loss.svg").write_text(picture.replace("stroke-width=\"2\"", "stroke-width=\"3\""))
    assert main(["notebook", "verify", str(book)]) == 1
    out = capsys.readouterr().out
    assert f"{book}:3: the cell's plot {tmp_path / 'loss.svg'} differs from what its output draws" in out
    assert '+<polyline points="80.0,24.0' in out
    (tmp_path / "loss.svg").unlink()
    assert main(["notebook", "verify", str(book)]) == 1
    assert "loss.svg is missing; `micatool notebook run` draws it" in capsys.readouterr().out
    assert main(["notebook", "run", str(book)]) == 0
    book.write_text(book.read_text().replace("![loss by step](loss.svg)\n", ""))
    assert main(["notebook", "verify", str(book)]) == 1
    assert "the cell's plot is not linked under its recording as ![loss by step](loss.svg)" in capsys.readouterr().out


def test_a_plot_needs_a_table_with_its_columns(tmp_path, capsys):
    book = tmp_path / "book.md"
    book.write_text(PLOTTED.replace("y=loss", "y=accuracy"))
    assert main(["notebook", "run", str(book)]) == 1
    assert "book.md:3: cannot draw loss.svg: the output has no header line naming step, accuracy" in \
        capsys.readouterr().err


def test_a_table_is_its_header_and_the_rows_of_numbers_under_it():
    text = "x y z\nwarm up\nepoch loss acc\n1 0.5 0.25\n2 0.25 0.5\n3 nan 0.75\n"
    assert plot.table(text, ["epoch", "acc"]) == {"epoch": [1.0, 2.0], "acc": [0.25, 0.5]}
    with pytest.raises(plot.PlotError, match="the header line 'x y z' has no rows of numbers under it"):
        plot.table(text, ["x"])


def test_ticks_are_exact_decimals_covering_the_values():
    assert plot.ticks(0.0312, 0.93) == ([0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0], 1)
    assert plot.ticks(1.0, 30.0) == ([0.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0], 0)
    assert plot.ticks(7.0, 7.0) == ([6.0, 6.5, 7.0, 7.5, 8.0], 1)


def test_bars_start_at_zero_and_name_each_series(tmp_path):
    picture = plot.draw("digit count other\n0 3 1\n1 5 2\n2 4 0\n", "bars", "digit", ["count", "other"])
    root = ElementTree.fromstring(picture)
    labels = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert labels[:2] == ["0", "1"] and "count, other" in labels and "count" in labels and "other" in labels
    assert len(root.findall("{http://www.w3.org/2000/svg}rect")) == 1 + 6 + 2  # background, bars, legend keys


SVG = "{http://www.w3.org/2000/svg}"


def test_points_split_by_a_group_column_draw_a_series_per_value():
    printed = "x1 x2 label\n0.5 1.0 1\n1.5 0.5 0\n2.0 2.5 1\n0.0 0.0 0\n"
    root = ElementTree.fromstring(plot.draw(printed, "points", "x1", ["x2"], group="label"))
    fills = [dot.get("fill") for dot in root.iter(SVG + "circle")]
    assert fills == [plot.COLOURS[0], plot.COLOURS[0], plot.COLOURS[1], plot.COLOURS[1]]  # label 1 came first
    labels = [t.text for t in root.iter(SVG + "text")]
    assert "label 1" in labels and "label 0" in labels and "x2" in labels and "x1" in labels
    assert root.find(SVG + "title").text == "x2 by x1"


def test_a_heat_map_colours_each_cell_with_the_first_row_on_top():
    printed = "col row w\n0 0 0\n1 0 2\n0 1 4\n1 1 8\n"
    root = ElementTree.fromstring(plot.draw(printed, "heat", "col", ["row"], z="w"))
    cells = root.findall(SVG + "rect")[1:5]  # after the background: one per row of the table, in its order
    assert [c.get("fill") for c in cells] == ["#ffffff", "#c7d7e9", "#8fafd4", "#1f5fa8"]
    assert float(cells[0].get("y")) < float(cells[2].get("y"))  # row 0 is drawn above row 1
    assert float(cells[0].get("x")) < float(cells[1].get("x"))
    assert root.find(SVG + "title").text == "w by col and row"
    assert len(root.findall(SVG + "rect")) == 1 + 4 + 1 + 20  # background, cells, frame, the colour scale's bands


def test_a_heat_maps_rows_go_down_in_the_order_printed():
    rising = ElementTree.fromstring(plot.draw("x y v\n0 0 1\n0 1 2\n0 2 3\n", "heat", "x", ["y"], z="v"))
    falling = ElementTree.fromstring(plot.draw("x y v\n0 2 3\n0 1 2\n0 0 1\n", "heat", "x", ["y"], z="v"))
    tops = [[float(c.get("y")) for c in root.findall(SVG + "rect")[1:4]] for root in (rising, falling)]
    assert tops[0] == tops[1] and tops[0] == sorted(tops[0])  # the first row printed is drawn on top
    for root, top_label in ((rising, "0"), (falling, "2")):
        y_labels = {t.text: float(t.get("y")) for t in root.iter(SVG + "text") if t.get("text-anchor") == "end"}
        assert sorted(y_labels) == ["0", "1", "2"] and min(y_labels, key=y_labels.get) == top_label
    x_labels = [t.text for t in rising.iter(SVG + "text") if t.get("text-anchor") == "middle"]
    assert x_labels[0] == "0" and "-0.5" not in x_labels  # one column: a tick at its centre, none between
    with pytest.raises(plot.PlotError, match="a heat map's y values come in order, rising or falling"):
        plot.draw("x y v\n0 0 1\n0 2 2\n0 1 3\n", "heat", "x", ["y"], z="v")


def test_a_heat_map_of_both_signs_is_white_at_zero():
    assert plot.colour_of(0.0, -1.0, 4.0) == "#ffffff"
    assert plot.colour_of(4.0, -1.0, 4.0) == "#1f5fa8"
    assert plot.colour_of(-4.0, -4.0, 1.0) == "#c8501e"
    assert plot.colour_of(-1.0, -1.0, 4.0) == "#f1d3c7"  # a quarter of the way to the red a -4 would have


def test_a_chart_asks_only_for_what_its_kind_draws():
    with pytest.raises(plot.PlotError, match="a heat map needs one y column and its values"):
        plot.draw("a b\n1 2\n", "heat", "a", ["b"])
    with pytest.raises(plot.PlotError, match=r"group=COLUMN is for points plots \(kind=points\)"):
        plot.draw("a b c\n1 2 3\n", "line", "a", ["b"], group="c")
    with pytest.raises(plot.PlotError, match=r"z=COLUMN is for heat maps \(kind=heat\)"):
        plot.draw("a b c\n1 2 3\n", "points", "a", ["b"], z="c")


def test_a_heat_cell_is_linked_by_its_values_and_both_axes(tmp_path, capsys):
    book = tmp_path / "book.md"
    book.write_text("```mica plot=grid.svg kind=heat x=j y=i z=v\nprogram Grid;\nvar i, j : integer;\nbegin\n"
                    "    WriteLn('i j v');\n    for i := 0 to 2 do\n        for j := 0 to 2 do\n"
                    "            WriteLn(i, ' ', j, ' ', i * j);\nend.\n```\n")
    assert main(["notebook", "run", str(book)]) == 0
    assert book.read_text().endswith("```\n\n![v by j and i](grid.svg)\n")
    assert main(["notebook", "verify", str(book)]) == 0
    assert len(ElementTree.parse(tmp_path / "grid.svg").getroot().findall(SVG + "rect")) == 1 + 9 + 1 + 20


def test_a_continue_cell_needs_the_begin_on_a_line_of_its_own(tmp_path, capsys):
    book = tmp_path / "book.md"
    book.write_text("```mica\nprogram P;\nvar x : integer; begin\n    WriteLn(x);\nend.\n```\n\n"
                    "```mica continue\nbegin\n    WriteLn(x + 1);\nend.\n```\n")
    assert main(["notebook", "run", str(book)]) == 1
    assert "book.md:8: a `continue` cell continues the program of the cell before it, and there is none that " \
           "parses with its `program` line and its main `begin` on lines of their own" in capsys.readouterr().err
