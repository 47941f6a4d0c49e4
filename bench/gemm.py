"""bench/gemm.py: Mica's GEMM against numpy (OpenBLAS), in GFLOP/s.

Builds bench/gemm_bench.c with zig for x86_64 (static musl, the runtime's
flags), runs it at each thread count, times numpy's `a @ b` on the same shapes
in a child process per thread count, and prints one table:

    shape  dtype  threads  mica GFLOP/s  numpy GFLOP/s  ratio

A shape is N (square) or MxNxK, optionally with :tn, :nt or :tt (A or B
transposed, as the backward passes multiply). `--shapes gpt` takes the
products of examples/gpt/gpt.mica's training step at three sizes: the example
(B16 T32 C64 H4), nanoGPT's baby size (B12 T64 C128 H4) and about 10M
parameters (B8 T256 C384 H6): the per-head projection [B*T, C] x [C, HS], the
attention scores [T, HS] x [HS, T], the MLP, and their gradient forms.

`--unfused` adds a column for the rule docs/determinism.md replaced: the same
kernels built with -DGEMM_UNFUSED, each step a separate multiply and add
(two roundings). Its bits differ from Mica's; it is here to measure what
the fused rule gains.

Not a test. Usage: python bench/gemm.py [--shapes square|gpt|SHAPE...] [--threads 1 2]
           [--isa sse2|avx2|avx512]   (caps Mica's instruction set, see mica_gemm.h)
           [--rounds 3]               (best of this many rounds, the sides alternating)
           [--unfused]                (also time the separate-roundings build)
           [--cpu-clock]              (one thread on a shared machine: time both
                                       sides by CPU time, not the wall clock)

numpy's thread count is set the way its users set it, OPENBLAS_NUM_THREADS in
the child's environment; OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are removed
from it (this machine may set them for old OpenBLAS builds; they slow a
current one).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from gpt_sizes import cpu_model

ROOT = Path(__file__).resolve().parent.parent
FLAGS = ["-static", "-O2", "-ffp-contract=off", "-fno-sanitize=undefined"]
SOURCES = ["bench/gemm_bench.c", "runtime_c/mica_gemm.c", "runtime_c/mica_fma.c", "runtime_c/mica_cpu.c", "runtime_c/mica_threads.c"]

SQUARE = ["64", "128", "256", "512", "1024", "2048"]


def gpt_shapes(b: int, t: int, c: int, h: int) -> list[str]:
    """The distinct products of one training step, forward then backward (MxNxK)."""
    rows, hs, mlp = b * t, c // h, 4 * c
    return [
        f"{rows}x{hs}x{c}",         # q, k, v of one head: [B*T, C] x [C, HS]
        f"{c}x{hs}x{rows}:tn",      # their weights' gradient: x^T dq
        f"{rows}x{c}x{hs}:nt",      # their input's gradient: dq W^T
        f"{t}x{t}x{hs}:nt",         # the scores: q k^T
        f"{t}x{hs}x{t}",            # the scores times v
        f"{rows}x{mlp}x{c}",        # the MLP's first product
        f"{rows}x{c}x{mlp}",        # its second
        f"{mlp}x{c}x{rows}:tn",     # the second's weight gradient
    ]


GPT = {
    "example": gpt_shapes(16, 32, 64, 4),
    "baby": gpt_shapes(12, 64, 128, 4),
    "10M": gpt_shapes(8, 256, 384, 6),
}

NUMPY_CHILD = textwrap.dedent(
    """
    import sys, time, json
    import numpy as np
    shapes = sys.argv[1].split(",")

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
    cfg = np.__config__.CONFIG["Build Dependencies"]["blas"]
    print(json.dumps({"blas": f"{cfg['name']} {cfg['version']}"}))
    for shape in shapes:
        dims, _, trans = shape.partition(":")
        m, n, k = (int(x) for x in dims.split("x")) if "x" in dims else [int(dims)] * 3
        for dtype in ("float32", "float64"):
            a = rng.standard_normal((k, m) if trans[:1] == "t" else (m, k)).astype(dtype)
            b = rng.standard_normal((n, k) if trans[1:] == "t" else (k, n)).astype(dtype)
            a = a.T if trans[:1] == "t" else a   # a view: numpy hands BLAS the transpose flag
            b = b.T if trans[1:] == "t" else b
            g = 2.0 * m * n * k / best(a, b) * 1e-9
            print(json.dumps({"shape": shape, "dtype": dtype, "gflops": g}), flush=True)
    """
)


def build(out: Path, unfused: bool = False, cpu_clock: bool = False) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    exe = out / ("gemm_bench_unfused" if unfused else "gemm_bench")
    flags = FLAGS + (["-DGEMM_UNFUSED"] if unfused else []) + (["-DBENCH_CPU_CLOCK"] if cpu_clock else [])
    cmd = [sys.executable, "-m", "ziglang", "cc", "-target", "x86_64-linux-musl", *flags, *SOURCES, "-o", str(exe)]
    subprocess.run(cmd, cwd=ROOT, check=True)
    return exe


def run_mica(exe: Path, shapes: list[str], threads: int, isa: str | None) -> tuple[str, dict]:
    env = dict(os.environ, MICA_THREADS=str(threads))
    if isa:
        env["MICA_GEMM_ISA"] = isa
    out = subprocess.run([str(exe), *shapes], env=env, check=True, capture_output=True, text=True).stdout
    header, rows = "", {}
    for line in out.splitlines():
        if line.startswith("#"):
            header = line[1:].strip()
            continue
        dtype, shape, g = line.split()
        rows[("float32" if dtype == "f32" else "float64", shape)] = float(g)
    return header, rows


def run_numpy(shapes: list[str], threads: int, cpu_clock: bool) -> tuple[str, dict]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    env.update(OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    child = NUMPY_CHILD.replace("time.perf_counter", "time.process_time") if cpu_clock else NUMPY_CHILD
    out = subprocess.run([sys.executable, "-c", child, ",".join(shapes)],
                         env=env, check=True, capture_output=True, text=True).stdout
    blas, rows = "", {}
    for line in out.splitlines():
        d = json.loads(line)
        if "blas" in d:
            blas = d["blas"]
        else:
            rows[(d["dtype"], d["shape"])] = d["gflops"]
    return blas, rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", nargs="+", default=["square"])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--isa", choices=["sse2", "avx2", "avx512"], default=None)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--unfused", action="store_true")
    ap.add_argument("--cpu-clock", action="store_true")
    args = ap.parse_args()
    if args.cpu_clock and args.threads != [1]:
        ap.error("--cpu-clock measures one thread: threads' CPU times add up")
    groups: dict[str, list[str]] = {}
    for s in args.shapes:
        if s == "square":
            groups["square"] = SQUARE
        elif s == "gpt":
            groups.update(GPT)
        else:
            groups.setdefault("given", []).append(s)
    shapes = [s for g in groups.values() for s in g]

    exes = {"mica": build(ROOT / "build" / "bench", cpu_clock=args.cpu_clock)}
    if args.unfused:
        exes["unfused"] = build(ROOT / "build" / "bench", unfused=True, cpu_clock=args.cpu_clock)
    best, headers, blas = {side: {} for side in (*exes, "numpy")}, [], ""
    for _ in range(args.rounds):  # alternate the sides, keep each cell's best
        for t in args.threads:
            for side, exe in exes.items():
                header, rows = run_mica(exe, shapes, t, args.isa)
                if header not in headers:
                    headers.append(header)
                for key, g in rows.items():
                    best[side][(*key, t)] = max(g, best[side].get((*key, t), 0.0))
            blas, rows = run_numpy(shapes, t, args.cpu_clock)
            for key, g in rows.items():
                best["numpy"][(*key, t)] = max(g, best["numpy"].get((*key, t), 0.0))

    print(f"cpu: {cpu_model()}, {os.cpu_count()} cores")
    print("mica:", "; ".join(headers))
    print("numpy:", blas)
    for name, group in groups.items():
        print(f"\n{name}")
        unfused = f" {'unfused GFLOP/s':>16} {'mica/unfused':>12}" if args.unfused else ""
        print(f"{'shape':>18} {'dtype':>8} {'threads':>7} {'mica GFLOP/s':>13} {'numpy GFLOP/s':>14} {'ratio':>6}{unfused}")
        for shape in group:
            for dtype in ("float32", "float64"):
                for t in args.threads:
                    key = (dtype, shape, t)
                    m, p = best["mica"][key], best["numpy"][key]
                    row = f"{shape:>18} {dtype:>8} {t:>7} {m:>13.1f} {p:>14.1f} {m / p:>6.2f}"
                    if args.unfused:
                        row += f" {best['unfused'][key]:>16.1f} {m / best['unfused'][key]:>12.2f}"
                    print(row)


if __name__ == "__main__":
    main()
