"""Feature programs (tests/programs/NAME.mica): each prints exactly NAME.out.

Tiny files named after the feature they exercise, as chibicc's tests are.
Every program also runs at all three tiers, and on aarch64 under qemu.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import build, run

PROGRAMS = sorted((Path(__file__).parent / "programs").glob("*.mica"))


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.stem)
def test_prints_expected_output(program: Path):
    result = run(build(program))
    assert result.stderr == ""
    assert result.returncode == 0
    assert result.stdout == program.with_suffix(".out").read_text()


@pytest.mark.parametrize("tier", ["debug", "fast"])
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.stem)
def test_every_tier_prints_the_same(program: Path, tier: str):
    result = run(build(program, tier=tier))
    assert result.stdout == program.with_suffix(".out").read_text()


@pytest.mark.qemu
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.stem)
def test_aarch64_prints_the_same(program: Path, aarch64):
    result = run(build(program, target="aarch64-linux"), target="aarch64-linux")
    assert result.stdout == program.with_suffix(".out").read_text()
