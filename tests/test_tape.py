"""The tape's semantics: windows, leaves, tying, re-adoption, Backward and Gradient.

Each case is a small Mica program whose printed gradients are exact (powers of
two and small integers), so the expected text is the mathematics itself.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from helpers import EXAMPLES, build, build_text, run, run_text
from system import Unavailable, apt_install

from micatool.cli import main


def program(body: str, decls: str = "") -> str:
    return f"program T;\n{decls}\nbegin\n{body}\nend.\n"


# What a window, Backward and Gradient print, exactly: (body, declarations, output).
GRADIENTS = {
    "a product of scalars": (
        "x := 3.0; y := 2.0;\n"
        "tape l := x * x * y + 4.0 * y - x / 2.0; end;\n"
        "Backward(l);\n"
        "WriteLn(l, ' ', Gradient(x), ' ', Gradient(y));",
        "var x, y, l : tracked float64;",
        "24.5 11.5 13.0\n"),
    "weight tying sums both uses": (
        "w := [[1.0, 2.0], [3.0, 4.0]]; a := [1.0, 0.0]; b := [0.0, 2.0];\n"
        "tape l := Sum(w * a) + Sum(w * b); end;\n"
        "Backward(l);\n"
        "WriteLn(Gradient(w));",
        "var w : tracked matrix[2, 2] of float64; a, b : vector[2] of float64; l : tracked float64;",
        "1.0 2.0 1.0 2.0\n"),
    "the gradient answers for the value first read": (
        "h := [1.0, 2.0];\n"
        "tape h := 3.0 * h; h := 2.0 * h; l := Sum(h); end;\n"
        "Backward(l);\n"
        "WriteLn(h, ' ', Gradient(h));",
        "var h : tracked vector[2] of float64; l : tracked float64;",
        "6.0 12.0 6.0 6.0\n"),
    "routines take and return tracked values": (
        "w := [[1.0, 0.0], [0.0, 1.0]]; x := [1.0, 2.0];\n"
        "tape l := Sum(Layer(w, x)); end;\n"
        "Backward(l);\n"
        "WriteLn(Gradient(w), ' ', Layer(w, x));",
        "var w : tracked matrix[2, 2] of float64; x : vector[2] of float64; l : tracked float64;\n"
        "function Layer(m : tracked matrix[2, 2] of float64; v : vector[2] of float64)"
        " : tracked vector[2] of float64;\n"
        "begin\n  result := Tanh(m * v) * 0.0 + m * v;\nend;\n",
        "1.0 2.0 1.0 2.0 1.0 2.0\n"),
    "a plain assignment readopts a fresh leaf": (
        "x := 1.0;\n"
        "tape l := 5.0 * x; end;\n"
        "Backward(l);\n"
        "Write(Gradient(x), ' ');\n"
        "x := 10.0;\n"
        "tape l := x * x; end;\n"
        "Backward(l);\n"
        "WriteLn(Gradient(x));",
        "var x, l : tracked float64;",
        "5.0 20.0\n"),
    "a place the window did not read has zero gradient": (
        "x := 1.0; y := 2.0;\n"
        "tape l := 3.0 * y; end;\n"
        "Backward(l);\n"
        "tape l := 3.0 * x; end;\n"
        "Backward(l);\n"
        "WriteLn(Gradient(x), ' ', Gradient(y));",
        "var x, y, l : tracked float64;",
        "3.0 0.0\n"),
    "loops and branches in a window record what ran": (
        "x := 2.0; p := x;\n"
        "tape\n  for k := 1 to 3 do\n    if k <> 2 then p := p * x;\n  l := p;\nend;\n"
        "Backward(l);\n"
        "WriteLn(l, ' ', Gradient(x), ' ', Gradient(p));",
        "var x, p, l : tracked float64; k : integer;",
        "8.0 8.0 4.0\n"),  # p is its own leaf: l = p0 * x * x
    "leaving a window early closes it": (
        "x := 1.0;\n"
        "for k := 1 to 3 do\nbegin\n  tape\n    l := x * k;\n    if k = 2 then break;\n  end;\nend;\n"
        "Backward(l);\n"
        "tape l := 7.0 * x; end;\n"
        "Backward(l);\n"
        "WriteLn(Gradient(x));",
        "var x, l : tracked float64; k : integer;",
        "7.0\n"),
    "broadcast over leading dimensions and batched transpose": (
        "t := [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [[7.0, 8.0, 9.0], [10.0, 11.0, 12.0]]];\n"
        "p := [[0.5, 0.5, 0.5], [1.0, 1.0, 1.0]];\n"
        "s := Transpose(t);\n"
        "tape l := Sum(Mul(Transpose(t + p), s)); end;\n"
        "Backward(l);\n"
        "WriteLn(Gradient(p));\nWriteLn(Gradient(t));",
        "var t : tracked tensor[2, 2, 3] of float64; p : tracked matrix[2, 3] of float64;\n"
        "    l : tracked float64; s : tensor[2, 3, 2] of float64;",
        "8.0 10.0 12.0 14.0 16.0 18.0\n1.0 2.0 3.0 4.0 5.0 6.0 7.0 8.0 9.0 10.0 11.0 12.0\n"),
}


@pytest.mark.parametrize("case", list(GRADIENTS))
def test_the_printed_values_and_gradients_are_exact(tmp_path, case):
    body, decls, output = GRADIENTS[case]
    assert run_text(tmp_path, program(body, decls)).stdout == output




RUNTIME_MISUSE = {
    "gradient before backward": ("x := 1.0;\ntape l := x * x; end;\nWriteLn(Gradient(x));", 6,
                                 "Gradient(x) before Backward of the last tape window"),
    "backward twice": ("x := 1.0;\ntape l := x * x; end;\nBackward(l);\nBackward(l);", 7,
                       "Backward(l): this window's gradients were already computed"),
    "stale loss": ("x := 1.0;\ntape l := x * x; end;\ntape m := x; end;\nBackward(l);", 7,
                   "Backward(l): the last tape window did not compute 'l'"),
}


@pytest.mark.parametrize("case", sorted(RUNTIME_MISUSE))
def test_misuse_at_run_time_traps_with_the_line(tmp_path, case):
    body, line, message = RUNTIME_MISUSE[case]
    result = run(build_text(tmp_path, program(body, "var x, l, m : tracked float64;"), name="t.mica"))
    assert (result.returncode, result.stderr) == (1, f"t.mica:{line}: {message}\n")


@pytest.fixture(scope="module")
def gnu_time():
    """GNU time measures a program's own peak memory; a child of this (large)
    Python process would report Python's, which Linux carries across exec."""
    if shutil.which("time") is None and not os.path.exists("/usr/bin/time"):
        try:
            apt_install("time")
        except Unavailable as why:
            pytest.skip(f"GNU time: {why}")
    return "/usr/bin/time"


def test_a_long_training_loop_runs_in_constant_memory(tmp_path, gnu_time):
    def peak_kib(steps: int) -> int:
        text = program(
            f"w := [[0.5, 0.1], [0.2, 0.3]];\nfor k := 1 to {steps} do\nbegin\n"
            "  tape l := Sum(Tanh(w * w) * [1.0, 2.0]); end;\n  Backward(l);\n"
            "  w := w - 0.01 * Gradient(w);\nend;\nWriteLn(l:0:6);",
            "var w : tracked matrix[2, 2] of float64; l : tracked float64; k : integer;")
        binary = build_text(tmp_path, text, name=f"loop{steps}.mica")
        done = subprocess.run([gnu_time, "-f", "%M", str(binary)], capture_output=True, text=True, check=True)
        return int(done.stderr.split()[-1])

    small, large = peak_kib(100), peak_kib(200_000)
    assert small < 4096  # a tiny program stays tiny
    assert large < small + 512  # 2000 times the steps, not half a MiB more


def test_explain_lists_every_tracked_place(capsys):
    assert main(["explain", str(EXAMPLES / "TrackedRecords" / "TrackedRecords.mica")]) == 0
    assert capsys.readouterr().out == (
        "path         type                             elements\n"
        "blocks[0].w  tracked matrix[2, 2] of float64         4\n"
        "blocks[1].w  tracked matrix[2, 2] of float64         4\n"
        "h            tracked vector[2] of float64            2\n"
        "l            tracked float64                         1\n"
        "p            tracked vector[2] of float64            2\n"
        "5 tracked places holding 13 elements in all\n")


def test_trackedrecords_matches_seed_000():
    out = run(build(EXAMPLES / "TrackedRecords" / "TrackedRecords.mica")).stdout
    assert "loss = 6.000000\n" in out
    assert "w0 after the step = 0.900000 -0.111111 -0.100000 0.888889\n" in out
    assert "w1 after the step = 1.916667 -0.100000 -0.083333 1.900000\n" in out
    assert "loss after the step = 4.262593\n" in out
    assert "sgd over the elements = 0.875000 1.750000 2.875000 3.750000\n" in out
