"""bench/gemm_shapes.py: tries micro-kernel shapes for each instruction set.

For every (isa, MR, NV) below, rebuilds bench/gemm_bench.c with the shape set
through -D (see "Micro-tile shapes" in runtime_c/mica_gemm.c), runs it on one
thread with MICA_GEMM_ISA capped to that isa, and prints GFLOP/s for float32
and float64 at the given sizes. Shapes are MR x (NV vectors); NR = NV * lanes.
Not a test. Usage: python bench/gemm_shapes.py [--sizes 256 512] [--isa avx512 ...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FLAGS = ["-static", "-O2", "-ffp-contract=off", "-fno-sanitize=undefined"]
SOURCES = ["bench/gemm_bench.c", "runtime_c/mica_gemm.c", "runtime_c/mica_fma.c", "runtime_c/mica_cpu.c", "runtime_c/mica_threads.c"]
MACRO = {"sse2": "BASE", "avx2": "AVX2", "avx512": "AVX512"}
LANES = {"sse2": 16, "avx2": 32, "avx512": 64}  # bytes per vector
SHAPES = {
    "sse2": [(4, 2), (6, 2), (4, 3), (3, 4), (8, 1), (2, 4)],
    "avx2": [(4, 2), (6, 2), (4, 3), (3, 4), (8, 1)],
    "avx512": [(8, 2), (12, 2), (14, 2), (6, 3), (8, 3), (4, 4), (6, 4), (16, 1), (24, 1)],
}


def build(isa: str, mr: int, nv: int, out: Path, extra: list[str]) -> Path:
    exe = out / f"bench_{isa}_{mr}x{nv}"
    m = MACRO[isa]
    defs = [f"-DGEMM_{m}_{t}_{x}={v}" for t in ("F32", "F64") for x, v in (("MR", mr), ("NV", nv))]
    cmd = [sys.executable, "-m", "ziglang", "cc", "-target", "x86_64-linux-musl", *FLAGS, *defs, *extra, *SOURCES, "-o", str(exe)]
    subprocess.run(cmd, cwd=ROOT, check=True)
    return exe


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[256, 512])
    ap.add_argument("--isa", nargs="+", default=list(SHAPES))
    ap.add_argument("-D", dest="defines", action="append", default=[], help="extra -D for every build")
    args = ap.parse_args()
    out = ROOT / "build" / "shapes"
    out.mkdir(parents=True, exist_ok=True)
    print(f"{'isa':>7} {'shape f32':>10} {'shape f64':>10} " + " ".join(f"{t}{n:>5}" for n in args.sizes for t in ("f32@", "f64@")))
    for isa in args.isa:
        for mr, nv in SHAPES[isa]:
            exe = build(isa, mr, nv, out, [f"-D{d}" for d in args.defines])
            env = dict(os.environ, MICA_THREADS="1", MICA_GEMM_ISA=isa)
            res = subprocess.run([str(exe), *map(str, args.sizes)], env=env, capture_output=True, text=True, check=True).stdout
            got = {tuple(line.split()[:2]): float(line.split()[2]) for line in res.splitlines() if not line.startswith("#")}
            nr32, nr64 = nv * LANES[isa] // 4, nv * LANES[isa] // 8
            cells = " ".join(f"{got[(t, str(n))]:>9.1f}" for n in args.sizes for t in ("f32", "f64"))
            print(f"{isa:>7} {f'{mr}x{nr32}':>10} {f'{mr}x{nr64}':>10} {cells}", flush=True)


if __name__ == "__main__":
    main()
