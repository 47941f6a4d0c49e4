"""bench/int8_gemm.py: Mica's exact int8 products against numpy's int32 matmul, in Gop/s.

Builds bench/int8_gemm_bench.c for x86_64, runs it under each integer kernel
(MICA_INTEGER_GEMM_ISA) and times `a.astype(np.int32) @ b.astype(np.int32)`
(conversion included, as a user would write it); best of interleaved rounds.
Prints the CPU model first. Single-threaded on Mica's side. Not a test.
Usage: python bench/int8_gemm.py [--sizes 64 256 512] [--rounds 5]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from gpt_sizes import cpu_model

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ["bench/int8_gemm_bench.c", "runtime_c/mica_integer_gemm.c", "runtime_c/mica_integer_pack.c",
           "runtime_c/mica_cpu.c", "runtime_c/mica_threads.c"]
KERNELS = ["sse2", "avx2", "avxvnni", "avx512vnni"]


def numpy_seconds(m: int, k: int, n: int, rounds: int) -> float:
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    b = rng.integers(-128, 128, (k, n), dtype=np.int8)
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        a.astype(np.int32) @ b.astype(np.int32)
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", type=int, nargs="+", default=[64, 256, 512])
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    print(f"CPU: {cpu_model()}")
    with tempfile.TemporaryDirectory() as work:
        exe = Path(work) / "int8_gemm_bench"
        subprocess.run([sys.executable, "-m", "ziglang", "cc", "-target", "x86_64-linux-musl", "-static", "-O2",
                        "-ffp-contract=off", *SOURCES, "-o", str(exe)], cwd=ROOT, check=True)
        print(f"{'size':>6} {'kind':>6} {'kernel':>11} {'Gop/s':>8} {'reference':>10} {'numpy':>8}")
        for s in args.sizes:
            ops = 2.0 * s * s * s
            npy = numpy_seconds(s, s, s, args.rounds)
            seen = set()
            for kernel in KERNELS:
                out = subprocess.run([str(exe), str(s), str(s), str(s), str(args.rounds)], capture_output=True,
                                     text=True, env={"MICA_INTEGER_GEMM_ISA": kernel}, check=True).stdout
                for line in out.splitlines():
                    isa, kind, best, ref = line.split()
                    if (isa, kind) in seen:
                        continue  # the CPU lacks this kernel: the cap fell back to one already shown
                    seen.add((isa, kind))
                    ref_rate = f"{ops / float(ref) / 1e9:10.2f}" if float(ref) > 0 else f"{'-':>10}"
                    print(f"{s:>6} {kind:>6} {isa:>11} {ops / float(best) / 1e9:8.2f} {ref_rate} {ops / npy / 1e9:8.2f}")


if __name__ == "__main__":
    main()
