"""Front-end throughput: time and peak memory of `micatool check` on large programs.

Generates three shapes of valid program at each size (1, 3 and 10 MB by
default) and runs `python -m micatool check` on each in a fresh process,
reading the process's own wall time and peak RSS (wait4's ru_maxrss):

    statements  one main block of many assignments and calls
    routines    many small functions and procedures, each called once
    nesting     blocks of `for` loops nested 1,500 deep, each with its own counter
    reuse       the same, every loop counting with one variable: a 5003 error for
                each inner loop, so this measures the diagnostics' path (exit 1)

    python bench/frontend.py [--sizes 1,3,10] [--keep DIR]

Prints a table; it asserts nothing (timings belong to the machine).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MB = 1_000_000


def statements(size: int) -> str:
    head = "program Statements;\nvar\n    a, b, c : integer;\n    x : float64;\nbegin\n"
    body, n = [], len(head)
    i = 0
    while n < size:
        line = (f"    a := a + {i} * (b - c) div 3;\n" if i % 3 == 0 else
                f"    x := x * 0.5 + {i}.25;\n" if i % 3 == 1 else
                f"    if a > {i} then b := b + 1 else c := Max(c, {i});\n")
        body.append(line)
        n += len(line)
        i += 1
    return head + "".join(body) + "    WriteLn(a, b, c, x);\nend.\n"


def routines(size: int) -> str:
    parts, calls, n, i = ["program Routines;\nvar\n    total : integer;\n"], [], 0, 0
    while n < size:
        routine = (f"function F{i}(p : integer; q : float64) : integer;\nvar k : integer;\nbegin\n"
                   f"    result := 0;\n    for k := 1 to p do\n        result := result + k * {i};\n"
                   f"    if q > 1.5 then result := result + 1;\nend;\n\n"
                   f"procedure P{i}(address s : integer);\nbegin\n    s := s + F{i}(s mod 7, 2.0);\nend;\n\n")
        call = f"    P{i}(address total);\n"
        parts.append(routine)
        calls.append(call)
        n += len(routine) + len(call)
        i += 1
    return "".join(parts) + "begin\n" + "".join(calls) + "    WriteLn(total);\nend.\n"


DEPTH = 1_500  # under parser.MAX_NESTING: a `for` with its body is one level


def _nested_loops(name: str, size: int, counter) -> str:
    counters = sorted({counter(d) for d in range(DEPTH)})
    head = f"program {name};\nvar\n    {', '.join(counters)}, t : integer;\nbegin\n"
    blocks, n = [], len(head)
    while n < size:
        opening = "".join(f"for {counter(d)} := 1 to 2 do\n" for d in range(DEPTH))
        block = f"begin\n{opening}t := t + 1\nend;\n"
        blocks.append(block)
        n += len(block)
    return head + "".join(blocks) + "WriteLn(t);\nend.\n"


def nesting(size: int) -> str:
    return _nested_loops("Nesting", size, lambda depth: f"i{depth}")


def reuse(size: int) -> str:
    return _nested_loops("Reuse", size, lambda depth: "i")


SHAPES = {"statements": statements, "routines": routines, "nesting": nesting, "reuse": reuse}


def measure(path: Path) -> tuple[float, int, int]:
    """Wall seconds, peak RSS in bytes and exit status of `micatool check path`."""
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "micatool", "check", str(path)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stderr = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if b"internal error" in stderr or b"Traceback" in stderr:
        sys.stderr.write(stderr.decode(errors="replace")[-2000:])
    return time.perf_counter() - start, usage.ru_maxrss * 1024, process.returncode


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--sizes", default="1,3,10", help="source sizes in MB, comma-separated")
    options.add_argument("--shapes", default=",".join(SHAPES), help="which program shapes")
    options.add_argument("--keep", type=Path, help="leave the generated programs in this folder")
    args = options.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="mica-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    print(f"{'shape':<11} {'size':>8} {'time s':>8} {'MB/s':>6} {'peak RSS':>9} {'RSS/size':>8} exit")
    for shape in args.shapes.split(","):
        for size in (float(s) for s in args.sizes.split(",")):
            path = folder / f"{shape}_{size:g}mb.mica"
            path.write_text(SHAPES[shape](int(size * MB)))
            nbytes = path.stat().st_size
            seconds, rss, code = measure(path)
            print(f"{shape:<11} {nbytes / MB:>6.2f}MB {seconds:>8.2f} {nbytes / MB / seconds:>6.2f} "
                  f"{rss / MB:>7.0f}MB {rss / nbytes:>7.1f}x {code}", flush=True)
            if args.keep is None:
                path.unlink()


if __name__ == "__main__":
    main()
