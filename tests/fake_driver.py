"""The fake CUDA driver (tests/c/fake_cuda.c): GPU programs run end to end
on the CPU, through their real device glue, with no GPU.

`build_fake_driver(directory)` compiles it with zig into
`directory/libcuda.so.1`: x86_64-linux-gnu.2.28 (or aarch64, for the arm64
image test), as the GPU flavour is, with
the whole runtime but its device side (mica_gpu*.c, the program's side of the
driver API) and the runtime's own flags. The `fake_cuda` fixture builds it once per session
and gives the environment a GPU program runs under to load it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from micatool import targets

ROOT = Path(__file__).resolve().parents[1]
RUNTIME = ROOT / "runtime_c"
SOURCE = ROOT / "tests" / "c" / "fake_cuda.c"


def build_fake_driver(directory: Path, triple: str = "x86_64-linux-gnu.2.28") -> Path:
    """libcuda.so.1 in directory, built from tests/c/fake_cuda.c for `triple`."""
    library = Path(directory) / "libcuda.so.1"
    runtime = [str(p) for p in sorted(RUNTIME.glob("*.c")) if not p.name.startswith("mica_gpu")]
    flags = targets.COMMON_FLAGS + targets.TIER_FLAGS["checked"]
    command = [sys.executable, "-m", "ziglang", "cc", "-target", triple, "-shared", "-fPIC",
               "-fvisibility=hidden", *flags, "-I", str(RUNTIME), str(SOURCE), *runtime, "-o", str(library),
               "-Wl,-z,defs", "-lm", "-lpthread"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"building the fake CUDA driver failed:\n{done.stderr[-4000:]}")
    return library


class FakeCuda:
    """The built library and the environment that makes a GPU program load it."""

    def __init__(self, library: Path):
        self.library = library
        self.directory = library.parent

    def env(self, **extra: str) -> dict[str, str]:
        """os.environ with the fake first on LD_LIBRARY_PATH, plus FAKE_CUDA_* settings."""
        env = dict(os.environ)
        env["LD_LIBRARY_PATH"] = os.pathsep.join(
            p for p in (str(self.directory), env.get("LD_LIBRARY_PATH", "")) if p)
        for key in [k for k in env if k.startswith("FAKE_CUDA_")]:
            del env[key]
        env.update({f"FAKE_CUDA_{k.upper()}": str(v) for k, v in extra.items()})
        return env


@pytest.fixture(scope="session")
def fake_cuda(tmp_path_factory) -> FakeCuda:
    if sys.platform != "linux":
        pytest.skip("the fake CUDA driver is a Linux shared library")
    return FakeCuda(build_fake_driver(tmp_path_factory.mktemp("fake_cuda")))
