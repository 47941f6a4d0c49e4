"""Tiny static binaries for the image and size tests, built with zig.

Gives the session fixture `hello_binaries`: {"linux/amd64": path,
"linux/arm64": path} of a stripped static C program that prints HELLO_LINE
with its uid, and `ptx_binary`: an x86_64 one carrying a `.mica_ptx` section.
They stand in for Mica programs while the compiler is written elsewhere.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

HELLO_LINE = "hello from a static binary, uid="
ZIG_TARGETS = {"linux/amd64": "x86_64-linux-musl", "linux/arm64": "aarch64-linux-musl"}

HELLO_C = r"""
#include <stdio.h>
#include <unistd.h>
int main(void) { printf("%s%d\n", "HELLO_LINE", (int)getuid()); return 0; }
""".replace("HELLO_LINE", HELLO_LINE)

PTX_TEXT = "//\n.version 7.0\n.target sm_70\n.address_size 64\n" * 8
PTX_C = r"""
#include <stdio.h>
__attribute__((used, section(".mica_ptx")))
static const char ptx[] = "PTX_TEXT";
int main(void) {
    const char *volatile text = ptx;  /* read at run time, so the linker keeps it */
    printf("%d\n", text[0]);
    return 0;
}
""".replace("PTX_TEXT", PTX_TEXT.replace("\n", "\\n"))


def zig_cc(source: pathlib.Path, target: str, out: pathlib.Path) -> pathlib.Path:
    """A stripped static binary; the first build of a target takes ~30 s (musl)."""
    if not out.exists():
        args = [sys.executable, "-m", "ziglang", "cc", "-target", target, "-static",
                "-O2", "-s", str(source), "-o", str(out)]
        subprocess.run(args, check=True, capture_output=True, timeout=600)
    return out


def build_dir(factory) -> pathlib.Path:
    """One folder for the whole session, so each test module reuses the binaries."""
    path = factory.getbasetemp() / "static-hello"
    path.mkdir(exist_ok=True)
    return path


@pytest.fixture(scope="session")
def hello_binaries(tmp_path_factory) -> dict[str, pathlib.Path]:
    root = build_dir(tmp_path_factory)
    source = root / "hello.c"
    source.write_text(HELLO_C)
    return {p: zig_cc(source, t, root / f"hello-{t.split('-')[0]}")
            for p, t in ZIG_TARGETS.items()}


@pytest.fixture(scope="session")
def ptx_binary(tmp_path_factory) -> pathlib.Path:
    root = build_dir(tmp_path_factory)
    source = root / "ptx.c"
    source.write_text(PTX_C)
    return zig_cc(source, ZIG_TARGETS["linux/amd64"], root / "ptx-x86_64")
