"""Test entry point: installs and starts the real components the tests use.

qemu-user-static and gdb come from Debian (apt-get, as root in CI); a test
that needs a component which cannot be had skips and says why.
"""

from __future__ import annotations

import os
import shutil
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from fake_driver import fake_cuda  # noqa: E402,F401 (the fixture, tests/fake_driver.py)
from helpers import qemu  # noqa: E402
from system import Unavailable, apt_install, sh, tail  # noqa: E402


@pytest.fixture(scope="session")
def aarch64():
    """qemu-aarch64-static for running arm64 binaries; installed when missing."""
    if qemu() is None:
        try:
            apt_install("qemu-user-static")
        except Unavailable as why:
            pytest.skip(f"qemu-aarch64-static: {why}")
    return qemu()


@pytest.fixture(scope="session")
def gdb() -> str:
    """Debian's gdb, installed when missing, that can run a program under ptrace here."""
    if shutil.which("gdb") is None:
        try:
            apt_install("gdb")
        except Unavailable as why:
            pytest.skip(f"gdb: {why}")
    status, out = sh(["gdb", "-nx", "-batch", "-ex", "run", "/bin/true"])
    if "exited normally" not in out:
        pytest.skip(f"gdb cannot run a program here (a container without ptrace?), status {status}: {tail(out)}")
    return "gdb"
