"""bench/math_array.py: the elementary functions, scalar calls against array forms.

Builds bench/math_array_bench.c with zig for x86_64 (static musl, the
runtime's flags), runs it once per instruction set the CPU offers (MICA_ISA
caps the array forms' choice), and prints ns per element:

    function   scalar   sse2 (x)   avx2 (x)   avx512 (x)

"scalar" is a loop of mica_F calls (what the ELEMENTWISE kernels ran before
the array forms), the best over all runs; each ISA column is
mica_F_array, with its speed-up over scalar. Inputs: see the bench's INPUTS.

Not a test. Usage: python bench/math_array.py [--n 4096] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FLAGS = ["-static", "-O2", "-ffp-contract=off", "-fno-sanitize=undefined", "-Iruntime_c"]
SOURCES = ["bench/math_array_bench.c", "runtime_c/mica_math.c", "runtime_c/mica_math_array.c", "runtime_c/mica_cpu.c"]
ISAS = ["sse2", "avx2", "avx512"]


def build(out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    exe = out / "math_array_bench"
    cmd = [sys.executable, "-m", "ziglang", "cc", "-target", "x86_64-linux-musl", *FLAGS, *SOURCES, "-o", str(exe)]
    subprocess.run(cmd, cwd=ROOT, check=True)
    return exe


def run(exe: Path, n: int, isa: str | None) -> tuple[str, dict]:
    env = dict(os.environ)
    env.pop("MICA_ISA", None)
    if isa:
        env["MICA_ISA"] = isa
    out = subprocess.run([str(exe), str(n)], env=env, check=True, capture_output=True, text=True).stdout
    chosen, rows = "", {}
    for line in out.splitlines():
        if line.startswith("#"):
            chosen = line.split()[2]
            continue
        name, scalar, array = line.split()
        rows[name] = (float(scalar), float(array))
    return chosen, rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()

    exe = build(ROOT / "build" / "bench")
    native, _ = run(exe, 16, None)
    isas = ISAS[: ISAS.index(native) + 1]
    scalar, array = {}, {}
    for _ in range(args.rounds):  # keep each cell's best
        for isa in isas:
            _, rows = run(exe, args.n, isa)
            for name, (s, a) in rows.items():
                scalar[name] = min(s, scalar.get(name, 1e30))
                array[(name, isa)] = min(a, array.get((name, isa), 1e30))

    print(f"ns per element, n = {args.n}; the array forms pick {native} here")
    print(f"{'function':16} {'scalar':>7}" + "".join(f" {isa + ' (x)':>15}" for isa in isas))
    for name in scalar:
        cells = "".join(f" {array[(name, i)]:7.2f} ({scalar[name] / array[(name, i)]:4.1f}x)" for i in isas)
        print(f"{name:16} {scalar[name]:7.2f}{cells}")


if __name__ == "__main__":
    main()
