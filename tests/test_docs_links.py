"""The project's documents are all a user has: none of them sends a reader to a
file outside the repository (the contract the project was built from is not
in a user's clone)."""

from __future__ import annotations

import re
import subprocess

import pytest

from helpers import ROOT

DOCS = [ROOT / p for p in subprocess.run(["git", "ls-files", "*.md"], capture_output=True, text=True, cwd=ROOT,
                                         check=True).stdout.split()]
OUTSIDE = re.compile(r"(\.\./shared|shared/spec|shared/seeds|shared/corpora|\bLANGUAGE\.md|\bTOOLCHAIN\.md|\bSTYLE\.md)")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_document_names_a_file_outside_the_repository(doc):
    found = [(n, line.strip()) for n, line in enumerate(doc.read_text().splitlines(), 1) if OUTSIDE.search(line)]
    assert found == []
