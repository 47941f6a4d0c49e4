"""Dropout(x, p) against its contract (docs/language.md): the mask is the
documented generator's (micatool.reference.Generator re-implements it), kept
elements are scaled by 1 / (1 - p), p = 0 is x itself, every thread count
draws the same mask, the tape's backward applies the forward's mask, a
Dropout outside a window draws all the same, and a p outside [0, 1) is a
diagnostic when it is known and a trap naming the line when it is not. The
GPU's kernels are held to these bits by test_ptx.py, and its programs by the
device programs (tests/device_programs.py)."""

from __future__ import annotations

import os
import subprocess

import numpy as np

from helpers import build_text, run, run_text
from micatool.reference import Generator
from test_vocabulary import floats


def test_the_mask_and_the_scale_are_the_documented_ones(tmp_path):
    text = ("program D;\nvar x : vector[40] of float64; h : vector[40] of float32; u : float64; i : integer;\n"
            "begin\n  for i := 0 to 39 do x[i] := i - 12.5;\n  h := float32(x);\n  Seed(9);\n"
            "  WriteLn(Dropout(x, 0.3));\n  WriteLn(Dropout(h, 0.75));\n  Uniform(address u, 0.0, 1.0);\n"
            "  WriteLn(u);\nend.\n")
    lines = run_text(tmp_path, text).stdout.splitlines()
    g = Generator(9)
    x = np.arange(40) - 12.5
    keep = g.dropout_mask(40, 0.3)
    assert floats(lines[0]) == [v * (1 / (1 - 0.3)) if k else 0.0 for v, k in zip(x, keep)]
    keep32 = g.dropout_mask(40, 0.75)
    scale32 = np.float32(1 / (1 - 0.75))
    assert [np.float32(v) for v in lines[1].split()] == [np.float32(v) * scale32 if k else np.float32(0)
                                                         for v, k in zip(x, keep32)]
    assert 0 < sum(keep) < 40 and 0 < sum(keep32) < 40
    assert floats(lines[2]) == [g.uniform(0.0, 1.0)]  # the generator goes on after the masks' 80 draws


def test_p_zero_is_x_itself(tmp_path):
    text = ("program D;\nvar x : vector[6] of float64; m : matrix[2, 3] of float32;\nbegin\n"
            "  x := [0.0, -0.0, 1e308, -2.5, 5e-324, 3.0];\n  m := [[1.5, -0.0, 7.25], [0.1, 2.0, -3.0]];\n"
            "  WriteLn(Dropout(x, 0.0));\n  WriteLn(x);\n  WriteLn(Dropout(m, 0.0));\n  WriteLn(m);\nend.\n")
    lines = run_text(tmp_path, text).stdout.splitlines()
    assert lines[0] == lines[1] and lines[2] == lines[3]


def test_the_share_kept_is_one_minus_p(tmp_path):
    text = ("program D;\nvar x : vector[200000] of float64; i, kept : integer; y : vector[200000] of float64;\n"
            "begin\n  for i := 0 to 199999 do x[i] := 1.0;\n  Seed(4);\n  y := Dropout(x, 0.3);\n  kept := 0;\n"
            "  for i := 0 to 199999 do if y[i] <> 0.0 then kept := kept + 1;\n  WriteLn(kept);\nend.\n")
    kept = int(run_text(tmp_path, text).stdout)
    assert abs(kept / 200000 - 0.7) < 0.005  # five standard deviations


def test_every_thread_count_draws_the_same_mask(tmp_path):
    text = ("program D;\nvar x, y : tensor[4, 300, 256] of float32;\nbegin\n  Seed(2);\n"
            "  Normal(address x, 0.0, 1.0);\n  y := Dropout(x, 0.5);\n"
            "  WriteLn(Sum(y), ' ', y[3, 299, 255], ' ', y[0, 0, 0], ' ', Sum(Dropout(y, 0.1)));\nend.\n")
    binary = build_text(tmp_path, text)
    outputs = {subprocess.run([str(binary)], capture_output=True, text=True, check=True,
                              env={**os.environ, "MICA_THREADS": str(n)}).stdout for n in (1, 2, 4)}
    assert len(outputs) == 1


def test_the_backward_applies_the_forwards_mask(tmp_path):
    text = ("program D;\nvar x : tracked vector[64] of float64; y : tracked vector[64] of float64;\n"
            "    c, yp, g : vector[64] of float64; l : tracked float64; i : integer;\n"
            "begin\n  for i := 0 to 63 do begin x[i] := 1.0 + i; c[i] := 0.5 * i - 7.0; end;\n  Seed(5);\n"
            "  tape\n    y := Dropout(x, 0.4);\n    l := Sum(Mul(y, c));\n  end;\n  Backward(l);\n"
            "  yp := y;\n  g := Gradient(x);\n  WriteLn(yp);\n  WriteLn(g);\nend.\n")
    y, g = (floats(line) for line in run_text(tmp_path, text).stdout.splitlines())
    keep = Generator(5).dropout_mask(64, 0.4)
    c = [0.5 * i - 7.0 for i in range(64)]
    scale = 1 / (1 - 0.4)
    assert y == [(1.0 + i) * scale if k else 0.0 for i, k in enumerate(keep)]
    assert g == [ci * scale if k else 0.0 for ci, k in zip(c, keep)]


def test_outside_a_window_it_draws_all_the_same(tmp_path):
    """No hidden training mode: each Dropout takes its draws, recorded or not."""
    text = ("program D;\nvar x : tracked vector[16] of float64; y : vector[16] of float64; i : integer;\n"
            "begin\n  for i := 0 to 15 do x[i] := 1.0;\n  Seed(3);\n  y := Dropout(x, 0.5);\n  WriteLn(y);\n"
            "  WriteLn(Dropout(y, 0.5));\nend.\n")
    first, second = (floats(line) for line in run_text(tmp_path, text).stdout.splitlines())
    g = Generator(3)
    keep1, keep2 = g.dropout_mask(16, 0.5), g.dropout_mask(16, 0.5)
    assert first == [2.0 if k else 0.0 for k in keep1]
    assert second == [4.0 if a and b else 0.0 for a, b in zip(keep1, keep2)]
    assert keep1 != keep2


def test_a_p_outside_the_unit_interval_traps_naming_the_line(tmp_path):
    text = ("program D;\nvar x : vector[4] of float64; p : float64;\nbegin\n  p := 1.0;\n"
            "  x := Dropout(x, p);\nend.\n")
    result = run(build_text(tmp_path, text, name="trap.mica"))
    assert result.returncode != 0
    assert result.stderr == "trap.mica:5: Dropout's p must be in [0, 1), not 1.0\n"
