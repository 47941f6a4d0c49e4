"""zig: the one C compiler micatool uses, from the ziglang wheel.

Takes compiler arguments, runs `python -m ziglang cc` (or `ar`), and turns a
failure into an InternalError that points at a saved log: a C compiler error
means micatool generated bad C, and users never see raw clang output.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from ..cache import cache_dir, write_atomically
from ..diagnostics import InternalError


def zig_version() -> str:
    import ziglang

    return getattr(ziglang, "__version__", None) or _run_zig(["version"]).strip()


def _run_zig(args: list[str], cwd: Path | None = None) -> str:
    command = [sys.executable, "-m", "ziglang", *args]
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        log = cache_dir() / "logs" / f"zig-{int(time.time() * 1000)}.log"
        write_atomically(log, ("$ " + " ".join(command) + "\n\n" + result.stdout + result.stderr).encode())
        raise InternalError(f"the C compiler rejected micatool's output (log: {log})")
    return result.stdout


def cc(args: list[str], cwd: Path | None = None) -> None:
    _run_zig(["cc", *args], cwd)


def ar(archive: Path, objects: list[Path]) -> None:
    _run_zig(["ar", "rcs", "-D", str(archive), *map(str, objects)])
