"""bench/gemm.py: Mica's GEMM against numpy (OpenBLAS), in GFLOP/s.

Builds bench/gemm_bench.c with zig for x86_64 (static musl, the runtime's
flags), runs it at 1 and 2 threads, times numpy's `a @ b` the same way in a
child process, and prints one table:

    size  dtype  threads  mica GFLOP/s  numpy GFLOP/s  ratio

Not a test. Usage: python bench/gemm.py [--sizes 128 256 512 1024] [--threads 1 2]
           [--isa sse2|avx2|avx512]   (caps Mica's instruction set, see mica_gemm.h)
           [--rounds 2]               (best of this many rounds, both sides, against noise)

numpy runs with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE removed from its
environment (this machine may set them for old OpenBLAS builds; they slow a
current one), and with threadpoolctl limiting its threads when installed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FLAGS = ["-static", "-O2", "-ffp-contract=off", "-fno-sanitize=undefined"]
SOURCES = ["bench/gemm_bench.c", "runtime_c/mica_gemm.c", "runtime_c/mica_cpu.c", "runtime_c/mica_threads.c"]

NUMPY_CHILD = textwrap.dedent(
    """
    import sys, time, json
    import numpy as np
    sizes = [int(s) for s in sys.argv[1].split(",")]
    threads = [int(t) for t in sys.argv[2].split(",")]
    try:
        from threadpoolctl import threadpool_info, threadpool_limits
    except ImportError:
        threadpool_info = threadpool_limits = None
    info = threadpool_info() if threadpool_info else []
    print(json.dumps({"info": [{k: i.get(k) for k in ("internal_api", "version", "architecture", "num_threads")} for i in info]}))

    def best(a, b):
        a @ b
        out = 1e30
        for _ in range(5):
            iters, t0 = 0, time.perf_counter()
            while True:
                a @ b
                iters += 1
                t = time.perf_counter() - t0
                if t >= 0.04:
                    break
            out = min(out, t / iters)
        return out

    rng = np.random.default_rng(0)
    for t in threads:
        limit = threadpool_limits(limits=t) if threadpool_limits else None
        for n in sizes:
            for dtype in ("float32", "float64"):
                a = rng.standard_normal((n, n)).astype(dtype)
                b = rng.standard_normal((n, n)).astype(dtype)
                g = 2.0 * n**3 / best(a, b) * 1e-9
                print(json.dumps({"threads": t, "size": n, "dtype": dtype, "gflops": g}), flush=True)
        if limit:
            limit.restore_original_limits()
    """
)


def build(out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    exe = out / "gemm_bench"
    cmd = [sys.executable, "-m", "ziglang", "cc", "-target", "x86_64-linux-musl", *FLAGS, *SOURCES, "-o", str(exe)]
    subprocess.run(cmd, cwd=ROOT, check=True)
    return exe


def run_mica(exe: Path, sizes: list[int], threads: int, isa: str | None) -> tuple[str, dict]:
    env = dict(os.environ, MICA_THREADS=str(threads))
    if isa:
        env["MICA_GEMM_ISA"] = isa
    out = subprocess.run([str(exe), *map(str, sizes)], env=env, check=True, capture_output=True, text=True).stdout
    header, rows = "", {}
    for line in out.splitlines():
        if line.startswith("#"):
            header = line[1:].strip()
            continue
        dtype, n, g = line.split()
        rows[("float32" if dtype == "f32" else "float64", int(n))] = float(g)
    return header, rows


def run_numpy(sizes: list[int], threads: list[int]) -> tuple[list, dict]:
    import json

    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    out = subprocess.run(
        [sys.executable, "-c", NUMPY_CHILD, ",".join(map(str, sizes)), ",".join(map(str, threads))],
        env=env, check=True, capture_output=True, text=True,
    ).stdout
    info, rows = [], {}
    for line in out.splitlines():
        d = json.loads(line)
        if "info" in d:
            info = d["info"]
        else:
            rows[(d["dtype"], d["size"], d["threads"])] = d["gflops"]
    return info, rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[128, 256, 512, 1024])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--isa", choices=["sse2", "avx2", "avx512"], default=None)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()

    exe = build(ROOT / "build" / "bench")
    mica, numpy_rows, headers = {}, {}, []
    for _ in range(args.rounds):  # alternate the two sides, keep each cell's best
        for t in args.threads:
            header, rows = run_mica(exe, args.sizes, t, args.isa)
            if header not in headers:
                headers.append(header)
            for (dtype, n), g in rows.items():
                mica[(dtype, n, t)] = max(g, mica.get((dtype, n, t), 0.0))
        info, rows = run_numpy(args.sizes, args.threads)
        for key, g in rows.items():
            numpy_rows[key] = max(g, numpy_rows.get(key, 0.0))

    print("mica:", "; ".join(headers))
    print("numpy:", ", ".join(f"{i['internal_api']} {i['version']} ({i['architecture']})" for i in info) or "no threadpoolctl")
    print(f"{'size':>6} {'dtype':>8} {'threads':>7} {'mica GFLOP/s':>13} {'numpy GFLOP/s':>14} {'ratio':>6}")
    for n in args.sizes:
        for dtype in ("float32", "float64"):
            for t in args.threads:
                m, p = mica[(dtype, n, t)], numpy_rows[(dtype, n, t)]
                print(f"{n:>6} {dtype:>8} {t:>7} {m:>13.1f} {p:>14.1f} {m / p:>6.2f}")


if __name__ == "__main__":
    main()
