"""The shipped examples: every one builds for both targets at every tier, and
prints byte for byte its checked-in expected output (aarch64 under qemu).

examples/X/expected.txt is the output; a checked-tier trap example adds
expected-stderr.txt (and exits 1) and expected-fast.txt for the fast tier,
which has no checks.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from system import Unavailable, apt_install
from helpers import BOTH_TARGETS, EXAMPLES, build, run

# The GPT trains for a while; tests/test_gpt.py checks a small configuration of it instead.
EXAMPLE_DIRS = sorted(p for p in EXAMPLES.iterdir() if (p / "expected.txt").exists())
TIERS = ("debug", "checked", "fast")


def program_of(example: Path) -> Path:
    return example / f"{example.name}.mica"


def expected(example: Path, tier: str) -> tuple[str, str, int]:
    stdout = example / ("expected-fast.txt" if tier == "fast" and (example / "expected-fast.txt").exists() else "expected.txt")
    stderr = example / "expected-stderr.txt"
    err = stderr.read_text() if stderr.exists() and tier != "fast" else ""
    return stdout.read_text(), err, 1 if err else 0


@pytest.mark.parametrize("tier", TIERS)
@pytest.mark.parametrize("target", BOTH_TARGETS)
@pytest.mark.parametrize("example", EXAMPLE_DIRS, ids=lambda p: p.name)
def test_example_prints_expected_output(example, target, tier, request):
    if target == "aarch64-linux":
        request.getfixturevalue("aarch64")
    result = run(build(program_of(example), target=target, tier=tier), target=target, cwd=example)
    assert (result.stdout, result.stderr, result.returncode) == expected(example, tier)


@pytest.fixture(scope="module")
def file_command():
    if shutil.which("file") is None:
        try:
            apt_install("file")
        except Unavailable as why:
            pytest.skip(f"the `file` command: {why}")
    return shutil.which("file")


@pytest.mark.parametrize("target,machine", [("x86_64-linux", "x86-64"), ("aarch64-linux", "ARM aarch64")])
def test_binaries_are_static_elf_for_their_machine(target, machine, file_command):
    for tier in TIERS:
        binary = build(program_of(EXAMPLES / "words"), target=target, tier=tier)
        description = subprocess.run([file_command, "-b", str(binary)], capture_output=True, text=True).stdout
        assert description.startswith(f"ELF 64-bit LSB executable, {machine}"), description
        assert "statically linked" in description
        assert ("stripped" in description and "not stripped" not in description) == (tier != "debug")


def test_same_source_same_binary_bytes(tmp_path):
    from micatool import targets
    from micatool.compile import compile_program, load_source
    from micatool.link.build import build as build_binary

    program = compile_program(load_source(str(program_of(EXAMPLES / "springs"))))
    for target in BOTH_TARGETS:
        first, second = tmp_path / f"a-{target}", tmp_path / f"b-{target}"
        build_binary(program, targets.resolve(target), "fast", first)
        build_binary(program, targets.resolve(target), "fast", second)
        assert first.read_bytes() == second.read_bytes()


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_run_works(tmp_path):
    result = subprocess.run(["make", "-s", "-C", str(EXAMPLES / "words"), "run"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout == (EXAMPLES / "words" / "expected.txt").read_text()


@pytest.mark.parametrize("target", BOTH_TARGETS)
def test_wordfreq_reports_the_counts_pythons_re_finds(target, tmp_path, request):
    """Its report, written through OpenWrite, holds every word and count, in byte order,
    exactly as Python's re and a Counter find them in the same text."""
    if target == "aarch64-linux":
        request.getfixturevalue("aarch64")
    example = EXAMPLES / "wordfreq"
    text, report = example / "coriolanus.txt", tmp_path / "report.txt"
    result = run(build(program_of(example), target=target), target=target, args=[str(text), str(report)],
                 cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.endswith(f"\nevery word and its count: {report}\n")
    counts = Counter(word.lower() for line in text.read_bytes().split(b"\n")
                     for word in re.findall(rb"[A-Za-z]+(?:'[A-Za-z]+)?", line))
    assert report.read_bytes() == b"".join(b"%6d %s\n" % (counts[w], w) for w in sorted(counts))
    assert not list(tmp_path.glob("report.txt.tmp*"))  # the temporary became the report
