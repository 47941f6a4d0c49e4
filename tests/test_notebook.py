"""Mica Notebooks: Markdown whose recorded outputs are verified facts (docs/notebooks.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from micatool.cli import main

DOCS = Path(__file__).resolve().parents[1] / "docs" / "notebooks"

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


@pytest.mark.parametrize("notebook", sorted(DOCS.glob("*.md")), ids=lambda p: p.name)
def test_the_shipped_notebooks_prove_themselves(notebook, capsys):
    assert main(["notebook", "verify", str(notebook)]) == 0, capsys.readouterr().out


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


def test_a_cell_that_does_not_compile_is_reported_at_its_notebook_line(tmp_path, capsys):
    book = tmp_path / "book.md"
    book.write_text("Text.\n\n```mica\nprogram Bad;\nbegin\n    WriteLn(x);\nend.\n```\n")
    assert main(["notebook", "run", str(book)]) == 1
    assert capsys.readouterr().err.startswith(f"{book}:6:13: analyzer error 3001: unknown name 'x'")


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
