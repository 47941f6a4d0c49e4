"""Build: C program (micatool.compile.CProgram) -> a static binary for one target and tier.

The runtime (runtime_c/*.c) is compiled once per target, tier and runtime
version into libmica.a in the cache; a program is then one zig invocation
that compiles its C and links it with that archive. zig builds a target's C
library (musl, or glibc's stubs) and compiler_rt when it first links for it,
which takes a minute: the runtime's step links an empty program to have that
done too, so the one long step of a first build is the one progress names.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from pathlib import Path

from .. import progress, targets
from ..cache import cache_dir, digest, held_alone, write_atomically
from ..compile.cprogram import CProgram
from . import zig


def runtime_dir() -> Path:
    return Path(str(resources.files("micatool.runtime_c")))


def runtime_sources() -> list[Path]:
    return sorted(p for p in runtime_dir().iterdir() if p.suffix in (".c", ".h", ".inc"))


def reproducible(work: str) -> list[str]:
    """Paths the debug information would record, made the same on every machine:
    the temporary build directory and the runtime's checkout location."""
    return [f"-ffile-prefix-map={work}=.", f"-ffile-prefix-map={runtime_dir()}=runtime_c", "-fdebug-compilation-dir=."]


def runtime_library(target: targets.Target, tier: str, symbols: bool = False) -> Path:
    """libmica.a for target and tier (with symbols and frame pointers, or not), built on first use and cached."""
    flags = targets.tier_flags(tier, symbols)
    key = digest(zig.zig_version(), target.triple, *flags, *reproducible("<work>"),
                 *(p.name + p.read_text() for p in runtime_sources()))
    kind = f"{tier}-symbols" if symbols else tier
    archive = cache_dir() / "runtime" / f"{target.name}-{kind}-{key[:16]}" / "libmica.a"
    if archive.exists():
        return archive
    with held_alone(archive.with_name("building.lock")):
        if not archive.exists():  # another process may have built it while this one waited
            build_runtime(target, tier, symbols, archive)
    return archive


def build_runtime(target: targets.Target, tier: str, symbols: bool, archive: Path) -> None:
    """Compile the runtime's files into `archive`, and have zig build the target's C library."""
    flags = targets.tier_flags(tier, symbols)
    what = f"the runtime for {target.name} ({tier}{' with symbols' if symbols else ''})"
    with progress.step(f"building {what}", "a target's first build takes about a minute", f"built {what}"), \
            tempfile.TemporaryDirectory(prefix="mica-runtime-") as work:
        sources = [source for source in runtime_sources() if source.suffix == ".c"]
        objects = [Path(work) / (source.stem + ".o") for source in sources]

        def compile_one(pair: tuple[Path, Path]) -> None:
            source, obj = pair
            zig.cc(["-target", target.triple, *flags, *reproducible(work), "-I", str(runtime_dir()), "-c", str(source),
                    "-o", str(obj)])

        # Each file is its own zig process, as many at once as there are cores, the largest
        # first so that no long one starts last; the archive keeps the sources' order.
        largest_first = sorted(zip(sources, objects), key=lambda pair: -pair[0].stat().st_size)
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            list(pool.map(compile_one, largest_first))
        temp_archive = Path(work) / "libmica.a"
        zig.ar(temp_archive, objects)
        empty = Path(work) / "empty.c"
        empty.write_text("int main(void) { return 0; }\n")
        link(target, tier, symbols, work, [empty], Path(work) / "empty")
        write_atomically(archive, temp_archive.read_bytes())


def link(target: targets.Target, tier: str, symbols: bool, work: str, inputs: list[Path], output: Path) -> None:
    """Compile and link `inputs` (C files and archives) into the binary `output` for target and tier."""
    flags = targets.tier_flags(tier, symbols) + targets.link_flags(tier, symbols) + list(target.link_flags)
    zig.cc(["-target", target.triple, *flags, *reproducible(work), "-Wl,--gc-sections", "-I", str(runtime_dir()),
            *map(str, inputs), "-lpthread", "-o", str(output)])


def flavour(program: CProgram, target: targets.Target) -> targets.Target:
    """A GPU program is built against glibc, which can dlopen the driver (docs/gpu.md)."""
    return targets.gpu_flavour(target) if program.uses_gpu else target


def c_text(program: CProgram, tier: str, symbols: bool = False) -> str:
    """The C a build compiles: where the binary keeps its line tables, the text whose
    #line directives make them name the Mica files and lines a debugger shows."""
    return program.debug_c if targets.keeps_line_tables(tier, symbols) else program.c


def build(program: CProgram, target: targets.Target, tier: str, output: Path, symbols: bool = False) -> None:
    """Compile the program's C for target at tier into the binary `output`: static, or
    the glibc flavour for a GPU program; with symbols kept for a profiler, or stripped."""
    target = flavour(program, target)
    library = runtime_library(target, tier, symbols)
    sweep_stale_work()
    with progress.step(f"compiling for {target.name} ({tier})"), tempfile.TemporaryDirectory(prefix="mica-build-") as work:
        c_file = Path(work) / "program.c"
        c_file.write_text(c_text(program, tier, symbols))
        binary = Path(work) / "program"
        link(target, tier, symbols, work, [c_file, library], binary)
        write_atomically(Path(output), binary.read_bytes(), mode=0o755)


WORK_PREFIXES = ("mica-build-", "mica-runtime-")
STALE_AFTER_S = 24 * 3600


def sweep_stale_work() -> None:
    """Remove build folders a killed micatool left in the temporary directory a
    day or more ago (a live build's folder is seconds to minutes old)."""
    root = Path(tempfile.gettempdir())
    cutoff = time.time() - STALE_AFTER_S
    for entry in root.iterdir():
        try:
            if entry.name.startswith(WORK_PREFIXES) and entry.is_dir() and entry.stat().st_mtime < cutoff:
                shutil.rmtree(entry, ignore_errors=True)
        except OSError:  # another user's folder, or one gone meanwhile
            continue


def cached_build(program: CProgram, target: targets.Target, tier: str) -> Path:
    """The binary for this program, target and tier, reusing an earlier identical build
    (the C holds everything else the program is: its PTX too)."""
    key = digest(zig.zig_version(), target.triple, tier, *reproducible("<work>"), c_text(program, tier),
                 *(p.read_text() for p in runtime_sources()))
    path = cache_dir() / "programs" / f"{key[:24]}-{flavour(program, target).name}-{tier}"
    if not path.exists():
        build(program, target, tier, path)
    return path
