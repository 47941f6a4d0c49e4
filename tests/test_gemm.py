"""GEMM determinism: the fast path equals the reference bit for bit.

Builds tests/c/gemm_check.c with the runtime's GEMM and thread pool for
x86_64 and aarch64 at -O2 and -O0, runs it under MICA_THREADS=1..4 (aarch64
through qemu-aarch64-static) and, on x86_64, under every instruction set the
CPU offers (MICA_GEMM_ISA).
Each run compares every output with the reference triple loop (whose steps
are the software fma) and prints a hash of all outputs; all hashes must
agree. tests/c/fma_check.c holds the software fma to the instruction itself.
"""

from __future__ import annotations

import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from helpers import build_harness

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ["tests/c/gemm_check.c", "runtime_c/mica_gemm.c", "runtime_c/mica_fma.c", "runtime_c/mica_cpu.c", "runtime_c/mica_threads.c"]
FLAGS = ["-static", "-ffp-contract=off", "-fno-sanitize=undefined", "-Wall", "-Wextra", "-Werror"]
LINE = re.compile(r"isa (\w+) threads (\d+) cases (\d+) mismatches (\d+) hash ([0-9a-f]{16})")


def zig_cc(target: str, opt: str, out: Path) -> None:
    """Compiles SOURCES at `opt`; links at -O2 always, so -O0 reuses zig's
    cached -O2 libc for the target instead of building a debug one (~30 s)."""
    zig = [sys.executable, "-m", "ziglang", "cc", "-target", target]
    objs = []
    for src in SOURCES:
        obj = out.with_name(f"{out.name}_{Path(src).stem}.o")
        subprocess.run([*zig, opt, *FLAGS, "-c", src, "-o", str(obj)], cwd=ROOT, check=True, capture_output=True, text=True)
        objs.append(str(obj))
    subprocess.run([*zig, "-O2", "-static", *objs, "-lm", "-o", str(out)], cwd=ROOT, check=True, capture_output=True, text=True)


@pytest.fixture(scope="module")
def harness(tmp_path_factory) -> dict[tuple[str, str], Path]:
    out = tmp_path_factory.mktemp("gemm")
    builds = {(arch, opt): out / f"gemm_check_{arch}{opt}" for arch in ("x86_64", "aarch64") for opt in ("-O2", "-O0")}
    with ThreadPoolExecutor(max_workers=2) as pool:
        for f in [pool.submit(zig_cc, f"{arch}-linux-musl", opt, exe) for (arch, opt), exe in builds.items()]:
            f.result()
    return builds


def run(exe: Path, threads: int, isa: str | None = None, qemu: str | None = None) -> dict:
    env = {"MICA_THREADS": str(threads), "PATH": "/usr/bin:/bin"}
    if isa:
        env["MICA_GEMM_ISA"] = isa
    cmd = [qemu, str(exe)] if qemu else [str(exe)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    m = LINE.search(proc.stdout)
    assert m, f"no result line from {exe.name}: {proc.stdout}{proc.stderr}"
    res = {"isa": m[1], "threads": int(m[2]), "mismatches": int(m[4]), "hash": m[5], "stderr": proc.stderr}
    assert res["threads"] == threads
    assert res["mismatches"] == 0 and proc.returncode == 0, f"{exe.name} threads={threads} isa={m[1]}:\n{proc.stderr}"
    return res


def run_all(jobs: list[tuple]) -> list[dict]:
    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(lambda j: run(*j), jobs))


def x86_isas(exe: Path) -> list[str]:
    """Every set MICA_GEMM_ISA can name on this CPU."""
    native = run(exe, 1)["isa"]
    order = ["sse2", "avx2", "avx512"]
    return order[: order.index(native) + 1]


@pytest.fixture(scope="module")
def x86_hash(harness) -> str:
    exe = harness[("x86_64", "-O2")]
    isas = x86_isas(exe)
    results = run_all([(exe, t, isa) for isa in isas for t in (1, 2, 3, 4)])
    hashes = {(r["isa"], r["threads"]): r["hash"] for r in results}
    assert len(hashes) == 4 * len(isas), hashes
    assert len(set(hashes.values())) == 1, hashes
    return results[0]["hash"]


def test_x86_64_fast_equals_reference_every_isa_and_thread_count(x86_hash):
    assert re.fullmatch(r"[0-9a-f]{16}", x86_hash)


def test_x86_64_O0_equals_O2(harness, x86_hash):
    results = run_all([(harness[("x86_64", "-O0")], t) for t in (1, 3)])
    assert [r["hash"] for r in results] == [x86_hash] * 2


@pytest.mark.qemu
def test_aarch64_equals_x86_64(harness, x86_hash, aarch64):
    jobs = [(harness[("aarch64", "-O2")], t, None, aarch64) for t in (1, 2, 3, 4)]
    jobs.append((harness[("aarch64", "-O0")], 2, None, aarch64))
    results = run_all(jobs)
    assert {r["isa"] for r in results} == {"neon"}
    assert [r["hash"] for r in results] == [x86_hash] * len(jobs)


# ------------------------------------------------------------ the software fma

FMA_SOURCES = ["tests/c/fma_check.c", "runtime_c/mica_fma.c", "runtime_c/mica_cpu.c"]
FMA_LINE = re.compile(r"(f32|f64) cases (\d+) mismatches (\d+)")


def fma_check(tmp_path: Path, arch: str, runner: list[str]) -> dict[str, int]:
    exe = build_harness(tmp_path, "fma_check", FMA_SOURCES, arch, "-ffp-contract=off")
    proc = subprocess.run([*runner, str(exe), "2000000"], capture_output=True, text=True, timeout=300)
    found = {m[1]: int(m[3]) for m in FMA_LINE.finditer(proc.stdout)}
    assert set(found) == {"f32", "f64"} and proc.returncode == 0, proc.stdout + proc.stderr
    return found


def test_x86_64_software_fma_is_the_instruction(tmp_path):
    """The SSE2 kernels' fma (and the reference's) against vfmadd, 2M operand triples per type."""
    if not re.search(r"^flags\s*:.*\bfma\b", Path("/proc/cpuinfo").read_text(), re.M):
        pytest.skip("this CPU has no FMA3 instruction to compare the software with")
    assert fma_check(tmp_path, "x86_64", []) == {"f32": 0, "f64": 0}


@pytest.mark.qemu
def test_aarch64_software_fma_is_the_instruction(tmp_path, aarch64):
    assert fma_check(tmp_path, "aarch64", [aarch64]) == {"f32": 0, "f64": 0}
