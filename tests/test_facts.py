"""docs/facts.md is what tools/facts.py writes from this checkout."""

from __future__ import annotations

import difflib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import facts  # noqa: E402


def test_the_facts_page_is_current():
    fresh = facts.page(facts.test_count())
    committed = facts.PAGE.read_text()
    diff = "\n".join(difflib.unified_diff(committed.splitlines(), fresh.splitlines(), "docs/facts.md",
                                          "python tools/facts.py", lineterm=""))
    assert committed == fresh, f"docs/facts.md is out of date; run `python tools/facts.py` and commit it\n{diff}"


def test_every_op_and_every_golden_diagnostic_is_on_the_page():
    page = facts.PAGE.read_text()
    for name in facts.OPS:
        assert (f"| `{name}` |" in page) == (":" not in name), name
    for golden in (ROOT / "tests" / "diagnostics").glob("[0-9]*.err"):
        assert f"\n| {golden.name[:4]} | " in page, golden.name
