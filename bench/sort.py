"""Sort against the sorts a user would reach for instead: Python's sorted()
and numpy.sort, on the same million random integers (or --n of them).

    python bench/sort.py [--n 1000000] [--repeats 5]

A Mica program draws the integers with its seeded generator (RandomInt, below
2^62) and times Sort alone with Clock; Python draws the same ones through
micatool.reference.Generator. Each side's best time of R interleaved
repetitions is printed with the ratios, after checking that all three give
the same order. Not a test: the figures depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from gpt_sizes import cpu_model  # noqa: E402

from micatool import targets  # noqa: E402
from micatool.compile import compile_program, load_source  # noqa: E402
from micatool.link.build import cached_build  # noqa: E402
from micatool.reference import Generator  # noqa: E402

BELOW = 2**62
PROGRAM = """program SortBench;
var
    a : array of integer;
    n, i : integer;
    started, took : float64;
begin
    n := StrToInt(ParamStr(1));
    SetLength(address a, n);
    Seed(1);
    for i := 0 to n - 1 do a[i] := RandomInt(%d);
    started := Clock;
    Sort(address a);
    took := Clock - started;
    WriteLn(took:0:6, ' ', a[0], ' ', a[n div 2], ' ', a[n - 1]);
end.
""" % BELOW


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        source = Path(work) / "sortbench.mica"
        source.write_text(PROGRAM)
        binary = cached_build(compile_program(load_source(str(source))), targets.native(), "fast")
        g = Generator(1)
        values = [g.random_int(BELOW) for _ in range(args.n)]
        array = numpy.array(values, dtype=numpy.int64)
        expected = sorted(values)
        best = {"mica": float("inf"), "sorted()": float("inf"), "numpy.sort": float("inf"),
                "numpy.sort stable": float("inf")}
        for _ in range(args.repeats):
            took, first, middle, last = subprocess.run([str(binary), str(args.n)], capture_output=True, text=True,
                                                       check=True).stdout.split()
            assert [int(first), int(middle), int(last)] == [expected[0], expected[args.n // 2], expected[-1]]
            best["mica"] = min(best["mica"], float(took))
            started = time.perf_counter()
            sorted(values)
            best["sorted()"] = min(best["sorted()"], time.perf_counter() - started)
            for kind, name in ((None, "numpy.sort"), ("stable", "numpy.sort stable")):
                started = time.perf_counter()
                result = numpy.sort(array, kind=kind)
                best[name] = min(best[name], time.perf_counter() - started)
            assert result[args.n // 2] == expected[args.n // 2]
    print(f"CPU: {cpu_model()}; {args.n:,} random int64, best of {args.repeats}")
    print(f"{'sort':<20}{'seconds':>10}{'mica time / its':>20}")
    for name, seconds in best.items():
        print(f"{name:<20}{seconds:>10.4f}{best['mica'] / seconds:>20.2f}")


if __name__ == "__main__":
    main()
