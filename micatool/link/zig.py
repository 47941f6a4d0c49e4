"""zig: the one C compiler micatool uses, from the ziglang wheel.

Takes compiler arguments, runs `python -m ziglang cc` (or `ar`), and turns a
failure into an InternalError that points at a saved log: a C compiler error
means micatool generated bad C, and users never see raw clang output.

zig compiles musl and its compiler_rt itself, once per cache, and their debug
information records where zig's library and cache live and the directory zig
ran in. So that a debug binary has the same bytes on every machine, zig runs
inside micatool's cache and is told to find both through /proc/self/cwd (the
technique Bazel uses): every recorded path is then /proc/self/cwd/..., the
same string whatever the cache's real location or the wheel's install path.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from ..cache import cache_dir, write_atomically
from ..diagnostics import InternalError

STABLE_ROOT = "/proc/self/cwd"


def zig_version() -> str:
    import ziglang

    return getattr(ziglang, "__version__", None) or _run_zig(["version"]).strip()


def _workspace() -> tuple[Path, dict[str, str]]:
    """The folder zig runs in and the environment naming its library and cache
    through STABLE_ROOT; where /proc is missing, plain absolute paths."""
    import ziglang

    home = cache_dir() / "zig"
    home.mkdir(parents=True, exist_ok=True)
    library = Path(ziglang.__file__).parent / "lib"
    if not os.path.isdir(STABLE_ROOT):
        return home, {"ZIG_LIB_DIR": str(library), "ZIG_GLOBAL_CACHE_DIR": str(home / "cache")}
    link = home / f"lib-{zig_version()}"
    if not link.is_symlink() or os.readlink(link) != str(library):
        # two installs of one zig version may share a cache: their libraries are the same files
        temp = home / f".lib-{os.getpid()}"
        temp.unlink(missing_ok=True)
        temp.symlink_to(library)
        os.replace(temp, link)
    return home, {"PWD": STABLE_ROOT, "ZIG_LIB_DIR": f"{STABLE_ROOT}/{link.name}",
                  "ZIG_GLOBAL_CACHE_DIR": f"{STABLE_ROOT}/cache"}


def _run_zig(args: list[str]) -> str:
    command = [sys.executable, "-m", "ziglang", *args]
    home, names = _workspace() if args[0] != "version" else (None, {})
    result = subprocess.run(command, cwd=home, env={**os.environ, **names}, capture_output=True, text=True)
    if result.returncode != 0:
        log = cache_dir() / "logs" / f"zig-{int(time.time() * 1000)}.log"
        write_atomically(log, ("$ " + " ".join(command) + "\n\n" + result.stdout + result.stderr).encode())
        raise InternalError(f"the C compiler rejected micatool's output (log: {log})")
    return result.stdout


def cc(args: list[str]) -> None:
    _run_zig(["cc", *args])


def ar(archive: Path, objects: list[Path]) -> None:
    _run_zig(["ar", "rcs", "-D", str(archive), *map(str, objects)])
