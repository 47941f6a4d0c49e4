"""bench/regex.py: Mica's regex engine against Python's re, side by side.

Builds tests/c/regex_check.c with runtime_c/mica_regex.c for x86_64 at -O2 (as
a Mica binary's checked tier compiles it) and times finding every match (what
FindAll does) on each case, against `list(re.finditer(...))` on bytes; the best
of interleaved rounds, Mica then Python in each. Prints the CPU model first.
Single-threaded on both sides. Not a test.

Python's re backtracks: on `(a*)*b` over a's its time doubles with about every
byte, so on the pathological cases Python runs at a small n, and once more at
Mica's n in a subprocess stopped after --python-limit seconds; the output says
which. The ratio column is Python's time over Mica's at the same n.

Usage: python bench/regex.py [--rounds 5] [--python-limit 10]
"""

from __future__ import annotations

import argparse
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from int8_gemm import cpu_model

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ["tests/c/regex_check.c", "runtime_c/mica_core.c", "runtime_c/mica_output.c", "runtime_c/mica_print.c",
           "runtime_c/mica_string.c", "runtime_c/mica_regex.c", "-lpthread"]
LONG = 100_000


def words(n_bytes: int) -> str:
    """Text of lowercase words, a few e-mail addresses among them (seeded)."""
    rng = random.Random(0)
    vocabulary = ["the", "regex", "matching", "linear", "time", "pike", "machine", "thread", "running",
                  "string", "bytes", "tensor", "gradient", "compiling", "alpha", "mica"]
    out, n = [], 0
    while n < n_bytes:
        w = rng.choice(vocabulary) if rng.random() > 0.01 else f"user{rng.randint(0, 99)}@host.com"
        out.append(w)
        n += len(w) + 1
    return " ".join(out)


TEXT = words(1_000_000)

# (name, pattern, text at Mica's n, text at Python's n when that must be smaller)
CASES = [
    ("(a*)*b over a's", r"(a*)*b", "a" * LONG, "a" * 22),
    ("(a|aa)+$ over a's then b", r"(a|aa)+$", "a" * LONG + "b", "a" * 30 + "b"),
    ("(a|aa)+$ over a's", r"(a|aa)+$", "a" * LONG, None),
    ("words \\w+, 1 MB", r"\w+", TEXT, None),
    ("-ing words, 1 MB", r"\b[a-z]+ing\b", TEXT, None),
    ("e-mail (\\w+)@(\\w+)\\.com, 1 MB", r"(\w+)@(\w+)\.com", TEXT, None),
    ("a missing literal, 1 MB", r"needle", TEXT, None),
]


def mica_seconds(exe: Path, pattern: str, text: str) -> tuple[float, int]:
    line = f"T\t{pattern.replace(chr(92), chr(92) * 2)}\t{text}\t1\n"
    out = subprocess.run([str(exe)], input=line, capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == "seconds", out
    return float(out[1]), int(out[3])


def python_seconds(pattern: str, text: str) -> tuple[float, int]:
    compiled = re.compile(pattern.encode())
    data = text.encode()
    start = time.perf_counter()
    count = len(list(compiled.finditer(data)))
    return time.perf_counter() - start, count


def python_within(pattern: str, text: str, limit: float) -> str:
    """Python's re at Mica's n, in a subprocess stopped after `limit` seconds."""
    program = (f"import re, sys, time\ndata = sys.stdin.buffer.read()\nt = time.perf_counter()\n"
               f"list(re.finditer({pattern.encode()!r}, data))\nprint(time.perf_counter() - t)\n")
    try:
        out = subprocess.run([sys.executable, "-c", program], input=text, capture_output=True, text=True,
                             timeout=limit)
        return f"{float(out.stdout):.6f}"
    except subprocess.TimeoutExpired:
        return f"stopped after {limit:g} s"


def best_of(rounds: int, exe: Path, pattern: str, text: str, python_too: bool) -> tuple[int, float, float]:
    """(matches, Mica's best, Python's best), the two alternating."""
    mica = python = float("inf")
    for _ in range(rounds):
        m, count = mica_seconds(exe, pattern, text)
        mica = min(mica, m)
        if python_too:
            py, py_count = python_seconds(pattern, text)
            python = min(python, py)
            assert py_count == count, (pattern, py_count, count)
    return count, mica, python


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--python-limit", type=float, default=10.0)
    args = p.parse_args()
    print(f"CPU: {cpu_model()}")
    print(f"best of {args.rounds} interleaved rounds; every match found, as FindAll finds them")
    with tempfile.TemporaryDirectory() as work:
        exe = Path(work) / "regex_check"
        subprocess.run([sys.executable, "-m", "ziglang", "cc", "-target", "x86_64-linux-musl", "-static", "-O2",
                        "-std=gnu11", "-fno-sanitize=undefined", *SOURCES, "-o", str(exe)], cwd=ROOT, check=True)
        print(f"{'case':<34} {'n':>9} {'matches':>8} {'Mica s':>10} {'Python s':>10} {'Py/Mica':>8}")
        for name, pattern, text, small in CASES:
            for n_text in ([small] if small else []) + [text]:
                both = n_text is not text or small is None
                count, mica, python = best_of(args.rounds, exe, pattern, n_text, both)
                shown = f"{python:>10.6f} {python / mica:>8.2f}" if both else \
                    f"{python_within(pattern, n_text, args.python_limit):>19}"
                print(f"{name:<34} {len(n_text):>9} {count:>8} {mica:>10.6f} {shown}")

if __name__ == "__main__":
    main()
