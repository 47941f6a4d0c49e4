"""Size report and budgets, measured on real static binaries from zig."""

from __future__ import annotations

import pathlib

import pytest

from micatool.link.size import (BudgetError, check_budgets, format_table, machine,
                                read_budgets, section_sizes)
from static_hello import PTX_TEXT, hello_binaries, ptx_binary  # noqa: F401 (fixtures)

REPO = pathlib.Path(__file__).resolve().parents[1]


def write_budgets(tmp_path, x86_64: int, aarch64: int) -> pathlib.Path:
    path = tmp_path / "budgets.toml"
    path.write_text(f"[examples.hello]\nx86_64 = {x86_64}\naarch64 = {aarch64}\n")
    return path


def measured(hello_binaries) -> dict:
    return {"hello": {machine(p): section_sizes(p) for p in hello_binaries.values()}}


def test_sections_of_hello_add_up_to_the_file(hello_binaries):
    for path in hello_binaries.values():
        sizes = section_sizes(path)
        assert sizes["file"] == path.stat().st_size
        assert min(sizes["text"], sizes["rodata"], sizes["data"], sizes["bss"]) > 0
        assert sizes["mica_ptx"] == 0
        in_file = sizes["text"] + sizes["rodata"] + sizes["data"] + sizes["other"]
        assert in_file == sizes["file"]


def test_machine_names_the_target(hello_binaries):
    assert machine(hello_binaries["linux/amd64"]) == "x86_64"
    assert machine(hello_binaries["linux/arm64"]) == "aarch64"


def test_ptx_section_has_its_own_column(ptx_binary):
    sizes = section_sizes(ptx_binary)
    assert sizes["mica_ptx"] == len(PTX_TEXT) + 1  # the C string's NUL


def test_table_aligns_numbers_right():
    table = format_table([{"target": "x86_64", "file": 19560},
                          {"target": "aarch64", "file": 5}])
    lines = table.splitlines()
    assert lines[0] == "target     file"
    assert lines[2] == "x86_64   19,560"
    assert lines[3] == "aarch64       5"


def test_budget_below_real_size_fails(hello_binaries, tmp_path):
    sizes = measured(hello_binaries)["hello"]
    budgets = write_budgets(tmp_path, sizes["x86_64"]["file"] - 1, sizes["aarch64"]["file"])
    ok, table = check_budgets(measured(hello_binaries), budgets)
    assert not ok
    over = [l for l in table.splitlines() if "OVER" in l]
    assert len(over) == 1 and "x86_64" in over[0] and "+1" in over[0]


def test_budget_at_real_size_passes(hello_binaries, tmp_path):
    sizes = measured(hello_binaries)["hello"]
    budgets = write_budgets(tmp_path, sizes["x86_64"]["file"], sizes["aarch64"]["file"] + 100)
    ok, table = check_budgets(measured(hello_binaries), budgets)
    assert ok, table
    assert table.splitlines()[0].split() == ["example", "target", "base", "now", "delta",
                                             "verdict"]
    assert "-100" in table


def test_size_without_budget_is_listed_and_passes(tmp_path):
    ok, table = check_budgets({"gpt": {"amd64": 1000}}, write_budgets(tmp_path, 1, 1))
    assert ok
    assert "no budget" in table and "x86_64" in table


def test_bad_budget_is_refused_with_its_key(tmp_path):
    path = tmp_path / "budgets.toml"
    path.write_text('[examples.hello]\nx86_64 = "big"\n')
    with pytest.raises(BudgetError, match="examples.hello.x86_64"):
        read_budgets(path)


def test_a_missing_budget_file_is_named_with_the_systems_reason(tmp_path):
    with pytest.raises(BudgetError) as refused:
        read_budgets(tmp_path / "none.toml")
    assert str(refused.value) == f"{tmp_path / 'none.toml'}: No such file or directory"


def test_repository_budgets_file_reads():
    read_budgets(REPO / "images" / "budgets.toml")

