"""Test entry point: installs and starts the real components the tests use.

qemu-user-static comes from Debian (apt-get, as root in CI); a test that
needs a component which cannot be had skips and says why.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from helpers import qemu  # noqa: E402


def _apt_install(*packages: str) -> bool:
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return False
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "env": env}
    if subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", *packages], **quiet).returncode == 0:
        return True
    subprocess.run(["apt-get", "update"], **quiet)
    return subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", *packages], **quiet).returncode == 0


@pytest.fixture(scope="session")
def aarch64():
    """qemu-aarch64-static for running arm64 binaries; installed when missing."""
    if qemu() is None:
        _apt_install("qemu-user-static")
    if qemu() is None:
        pytest.skip("qemu-aarch64-static is missing and could not be installed (needs root and apt-get)")
    return qemu()
