"""Test entry point: installs and starts the real components the tests use.

qemu-user-static and gdb come from Debian (apt-get, as root in CI), the editor
package's Node tooling from npm (pinned by lock files, kept in micatool's
cache); a test that needs a component which cannot be had skips and says why.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from fake_driver import fake_cuda  # noqa: E402,F401 (the fixture, tests/fake_driver.py)
from helpers import qemu  # noqa: E402
from system import Unavailable, apt_install, npm_ci, require_node, sh, tail  # noqa: E402

from micatool.cache import cache_dir  # noqa: E402

EDITOR = Path(__file__).resolve().parents[1] / "editors" / "vscode"

# The files that take a minute or more on an empty cache (fresh caches, every gemm ISA,
# every tier and target, the images' bases), in the order they start: first, so that
# with -n the workers do not wait at the end for one long file begun last.
LONGEST_FIRST = ["test_clean_machine", "test_cli", "test_gemm", "test_gpu_image", "test_examples", "test_chains",
                 "test_fake_driver", "test_notebook", "test_deploy"]


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.stem, len(rank)))  # stable: a file's own order is kept


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


class NodeTools(NamedTuple):
    tools: Path  # holds node_modules of editors/vscode/test/tools: vscode-textmate, vscode-oniguruma, @vscode/vsce
    extension: Path  # holds node_modules of editors/vscode: what the packaged extension ships


@pytest.fixture(scope="session")
def node_tools():
    """Node.js and npm (from Debian when missing) and the editor package's Node packages,
    installed once into micatool's cache, outside the repository."""
    try:
        require_node()
        into = cache_dir() / "node"
        return NodeTools(npm_ci(EDITOR / "test" / "tools", into), npm_ci(EDITOR, into))
    except Unavailable as why:
        pytest.skip(f"Node tooling for editors/vscode: {why}")
