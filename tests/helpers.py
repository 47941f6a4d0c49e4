"""Shared test helpers: build Mica programs through micatool's own API and run them.

Binaries for aarch64 run under qemu-aarch64-static (Debian's qemu-user-static),
which the conftest installs when it is missing.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from micatool import targets
from micatool.compile import compile_program, load_source, parse
from micatool.compile.ast import Program
from micatool.link.build import cached_build

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
SHARED = ROOT.parent / "shared"
BOTH_TARGETS = ("x86_64-linux", "aarch64-linux")


def example_programs() -> list[Path]:
    """Every program under examples/; the units among the files are built into the programs that use them."""
    return [path for path in sorted(EXAMPLES.glob("*/*.mica")) if isinstance(parse(load_source(str(path))), Program)]


def qemu() -> str | None:
    return shutil.which("qemu-aarch64-static")


def build(path: Path, target: str = "x86_64-linux", tier: str = "checked") -> Path:
    return cached_build(compile_program(load_source(str(path))), targets.resolve(target), tier)


def build_text(tmp_path: Path, text: str, name: str = "prog.mica", **kw) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return build(path, **kw)


def run(binary: Path, target: str = "x86_64-linux", args=(), cwd=None, timeout=120) -> subprocess.CompletedProcess:
    command = [str(binary), *args]
    if target == "aarch64-linux":
        command = [qemu() or "qemu-aarch64-static", *command]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=timeout)


def run_text(tmp_path: Path, text: str, **kw) -> subprocess.CompletedProcess:
    return run(build_text(tmp_path, text, **kw))


def build_harness(out: Path, name: str, sources: list[str], arch: str, *flags: str) -> Path:
    """A C test harness from `sources` (paths from the repository root): static for
    arch-linux-musl at -O2, every warning an error."""
    exe = out / f"{name}_{arch}"
    subprocess.run([sys.executable, "-m", "ziglang", "cc", "-target", f"{arch}-linux-musl", "-O2", "-static",
                    "-fno-sanitize=undefined", "-Wall", "-Wextra", "-Werror", *flags, *sources, "-o", str(exe)],
                   cwd=ROOT, check=True, capture_output=True, text=True)
    return exe


def find_ptxas() -> tuple[str | None, str]:
    """(path, 'where it came from and its version'), or (None, why not)."""
    candidates = [("/usr/local/bin/ptxas", "/usr/local/bin")]
    if shutil.which("ptxas"):
        candidates.append((shutil.which("ptxas"), "PATH"))
    for entry in sys.path:
        wheel = Path(entry) / "nvidia" / "cuda_nvcc" / "bin" / "ptxas"
        candidates.append((str(wheel), "PyPI nvidia-cuda-nvcc"))
    for path, origin in candidates:
        if os.access(path, os.X_OK):
            out = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
            version = re.search(r"V(\d+\.\d+\.\d+)", out)
            return path, f"{origin} {version.group(1) if version else '?'}"
    return None, "no ptxas: neither /usr/local/bin/ptxas, one on PATH, nor the PyPI wheel nvidia-cuda-nvcc"
