"""The plain vocabulary against independent references: numpy for the numbers,
a Python re-implementation of the documented generator for randomness, and
the formulas of LANGUAGE.md for the optimizers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from helpers import build_text, run, run_text
from micatool.reference import Generator

def floats(text: str) -> list[float]:
    return [float(x) for x in text.split()]


def test_uniform_and_random_int_match_the_documented_generator(tmp_path):
    text = ("program R;\nvar v : vector[5] of float64; f : vector[3] of float32; i : integer;\nbegin\n"
            "  Seed(42);\n  Uniform(address v, -2.0, 3.0);\n  WriteLn(v);\n"
            "  for i := 1 to 6 do Write(RandomInt(1000), ' ');\n  WriteLn;\n"
            "  Uniform(address f, 0.0, 1.0);\n  WriteLn(f);\nend.\n")
    lines = run_text(tmp_path, text).stdout.splitlines()
    g = Generator(42)
    assert floats(lines[0]) == [g.uniform(-2.0, 3.0) for _ in range(5)]
    assert [int(x) for x in lines[1].split()] == [g.random_int(1000) for _ in range(6)]
    expected32 = [np.float32(g.uniform(0.0, 1.0)) for _ in range(3)]
    assert [np.float32(x) for x in lines[2].split()] == expected32  # float32 prints its own shortest form


def test_unseeded_programs_run_as_after_seed_zero(tmp_path):
    text = "program R;\nbegin\n  Write(RandomInt(1000000), ' ');\n  Seed(0);\n  WriteLn(RandomInt(1000000));\nend.\n"
    first, second = run_text(tmp_path, text).stdout.split()
    assert first == second == str(Generator(0).random_int(1000000))


def test_normal_draws_have_the_asked_moments(tmp_path):
    text = ("program R;\nvar v : vector[20000] of float64;\nbegin\n  Seed(7);\n  Normal(address v, 1.5, 2.0);\n"
            "  WriteLn(Mean(v), ' ', Sqrt(Mean(Mul(v - Mean(v), v - Mean(v)))), ' ', Max(v));\nend.\n")
    mean, std, top = floats(run_text(tmp_path, text).stdout)
    assert abs(mean - 1.5) < 0.05 and abs(std - 2.0) < 0.05 and 7.0 < top < 11.0


def test_elementwise_functions_agree_with_numpy(tmp_path):
    xs = [-3.5, -1.0, -0.25, 0.0, 0.3, 1.0, 2.5, 7.0]
    text = ("program E;\nvar x, p : vector[8] of float64;\nbegin\n"
            f"  x := [{', '.join(map(str, xs))}];\n  p := Abs(x) + 0.5;\n"
            "  WriteLn(Tanh(x));\n  WriteLn(Exp(x));\n  WriteLn(Log(p));\n  WriteLn(Sqrt(p));\n"
            "  WriteLn(Relu(x));\n  WriteLn(Sigmoid(x));\n  WriteLn(Silu(x));\n  WriteLn(Gelu(x));\n"
            "  WriteLn(Softplus(x));\n"
            "  WriteLn(Tanh(0.5), ' ', Exp(1), ' ', Sqrt(2.0), ' ', Log(10.0));\nend.\n")
    rows = [np.array(floats(line)) for line in run_text(tmp_path, text).stdout.splitlines()]
    x = np.array(xs)
    p = np.abs(x) + 0.5
    sigmoid = 1 / (1 + np.exp(-x))
    gelu = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    for got, want in zip(rows, [np.tanh(x), np.exp(x), np.log(p), np.sqrt(p), np.maximum(x, 0), sigmoid,
                                x * sigmoid, gelu, np.logaddexp(0, x)]):
        np.testing.assert_allclose(got, want, rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(rows[-1], [math.tanh(0.5), math.e, math.sqrt(2), math.log(10)], rtol=1e-15)


def test_row_operations_agree_with_numpy(tmp_path):
    rng = np.random.default_rng(3)
    m = rng.normal(size=(3, 5)).round(3)
    g, b = rng.normal(size=5).round(3), rng.normal(size=5).round(3)
    targets = [4, 0, 2]

    def lit(a):
        return "[" + ", ".join(lit(r) for r in a) + "]" if a.ndim > 1 else "[" + ", ".join(repr(float(v)) for v in a) + "]"

    text = ("program R;\nvar m : matrix[3, 5] of float64; g, b : vector[5] of float64; t : vector[3] of integer;\n"
            f"begin\n  m := {lit(m)};\n  g := {lit(g)};\n  b := {lit(b)};\n  t := [{', '.join(map(str, targets))}];\n"
            "  WriteLn(Softmax(m));\n  WriteLn(LayerNorm(m, g, b));\n  WriteLn(RmsNorm(m, g));\n"
            "  WriteLn(CrossEntropy(m, t));\n  WriteLn(SumRows(m));\n  WriteLn(Softmax(CausalMask(m * Transpose(m))));\n"
            "  WriteLn(Sum(m), ' ', Mean(m), ' ', Max(m));\nend.\n")
    rows = [np.array(floats(line)) for line in run_text(tmp_path, text).stdout.splitlines()]
    e = np.exp(m - m.max(1, keepdims=True))
    softmax = e / e.sum(1, keepdims=True)
    mean, var = m.mean(1, keepdims=True), m.var(1, keepdims=True)
    layernorm = (m - mean) / np.sqrt(var + 1e-5) * g + b
    rmsnorm = m / np.sqrt((m * m).mean(1, keepdims=True) + 1e-5) * g
    ce = np.mean([-np.log(softmax[r, t]) for r, t in enumerate(targets)])
    scores = m @ m.T
    scores[np.triu_indices(3, 1)] = -np.inf
    es = np.exp(scores - scores.max(1, keepdims=True))
    for got, want in zip(rows, [softmax, layernorm, rmsnorm, [ce], m.sum(0), es / es.sum(1, keepdims=True),
                                [m.sum(), m.mean(), m.max()]]):
        np.testing.assert_allclose(got, np.ravel(want), rtol=1e-13, atol=1e-14)


LINALG = """program L;
var a, b, x, inverse, l, q, r : matrix of float64; v, y : vector of float64; ok : boolean; i, j : integer;
begin
  SetShape(address a, 3, 3);
  for i := 0 to 2 do for j := 0 to 2 do a[i, j] := 1.0 / (i + j + 1);
  for i := 0 to 2 do a[i, i] := a[i, i] + 2.0;
  v := [1.0, 2.0, 3.0];
  ok := Solve(a, v, address y); WriteLn(ok, ' ', y);
  ok := Invert(a, address inverse); WriteLn(ok, ' ', inverse);
  ok := Cholesky(a, address l); WriteLn(ok, ' ', l);
  SetShape(address b, 4, 3);
  for i := 0 to 3 do for j := 0 to 2 do b[i, j] := (i * 3 + j) mod 5 - 2.0 + i / 4;
  ok := Qr(b, address q, address r); WriteLn(ok, ' ', q); WriteLn(r);
  SetShape(address x, 2, 2);
  x[0, 0] := 1.0; x[0, 1] := 2.0; x[1, 0] := 2.0; x[1, 1] := 4.0;
  ok := Invert(x, address inverse); WriteLn(ok, ' ', Rows(inverse));
  x[1, 1] := -1.0;
  ok := Cholesky(x, address l); WriteLn(ok, ' ', Rows(l));
end.
"""


def test_linear_algebra_agrees_with_numpy_and_answers_false_when_singular(tmp_path):
    lines = run_text(tmp_path, LINALG).stdout.splitlines()
    a = np.array([[1 / (i + j + 1) for j in range(3)] for i in range(3)]) + 2 * np.eye(3)
    v = np.array([1.0, 2.0, 3.0])
    ok, *y = lines[0].split()
    assert ok == "true"
    np.testing.assert_allclose(np.array(y, float), np.linalg.solve(a, v), rtol=1e-14)
    np.testing.assert_allclose(np.array(lines[1].split()[1:], float), np.linalg.inv(a).ravel(), rtol=1e-13)
    np.testing.assert_allclose(np.array(lines[2].split()[1:], float), np.linalg.cholesky(a).ravel(), rtol=1e-14)
    b = np.array([[(i * 3 + j) % 5 - 2.0 + i / 4 for j in range(3)] for i in range(4)])
    q = np.array(lines[3].split()[1:], float).reshape(4, 4)
    r = np.array(lines[4].split(), float).reshape(4, 3)
    np.testing.assert_allclose(q @ r, b, atol=1e-13)
    np.testing.assert_allclose(q.T @ q, np.eye(4), atol=1e-14)
    assert np.allclose(np.tril(r, -1), 0)
    assert lines[5] == "false 3" and lines[6] == "false 3"  # a failed answer leaves the output as it was


def adam(w, g, m, v, t, lr, b1, b2, eps):
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    return w - lr * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps), m, v


def test_adam_and_sgd_follow_the_formulas(tmp_path):
    text = ("program O;\nvar w, g, m, v, s, vel : vector[3] of float64; t : integer;\nbegin\n"
            "  w := [1.0, -2.0, 0.5]; s := w;\n"
            "  for t := 1 to 4 do\n  begin\n    g := [0.3 * t, -0.1, 2.0 - t];\n"
            "    AdamStep(address w, g, address m, address v, t, 0.01, 0.9, 0.999, 1e-8);\n"
            "    SgdStep(address s, g, address vel, 0.1, 0.9);\n  end;\n  WriteLn(w);\n  WriteLn(s);\nend.\n")
    adam_line, sgd_line = run_text(tmp_path, text).stdout.splitlines()
    w = s = np.array([1.0, -2.0, 0.5])
    m = v = vel = np.zeros(3)
    for t in range(1, 5):
        g = np.array([0.3 * t, -0.1, 2.0 - t])
        w, m, v = adam(w, g, m, v, t, 0.01, 0.9, 0.999, 1e-8)
        vel = 0.9 * vel + g
        s = s - 0.1 * vel
    np.testing.assert_allclose(floats(adam_line), w, rtol=1e-15)
    assert floats(sgd_line) == list(s)


@pytest.mark.parametrize("element, far", [("float64", "-1.0e300"), ("float32", "-1.0e30")])
def test_softmax_of_a_masked_tail_is_the_full_rows_bits(tmp_path, element, far):
    """A row's closing run of -infinity (a causal mask's) gets the answer a row
    ending in huge negatives gets (their exp underflows to the same +0), digit
    for digit, and nan stays nan. Rows of 40: tails of 37, 39, 19 and 0 elements,
    longer than a vector of either type."""
    cols = 40
    live = {0: range(3), 1: range(1), 2: range(1, 21), 3: range(cols)}
    rows = [[f"{0.25 * ((7 * r + 3 * c) % 11) - 1.0}" if c in live.get(r, ()) else "X" for c in range(cols)]
            for r in range(6)]
    rows[4] = ["X"] * cols  # all -inf
    rows[5] = ["INF"] + ["X"] * (cols - 1)

    def program(tail: str) -> str:
        body = "".join(f"  m[{r}, {c}] := {v.replace('X', tail).replace('INF', 'inf')};\n"
                       for r, row in enumerate(rows) for c, v in enumerate(row))
        return (f"program S;\nvar m : matrix[6, {cols}] of {element}; inf : {element};\nbegin\n"
                f"  inf := 1.0 / 0.0;\n{body}  WriteLn(Softmax(m));\nend.\n")

    (tmp_path / "masked").mkdir()
    (tmp_path / "spread").mkdir()
    masked = run_text(tmp_path / "masked", program("-inf")).stdout.split()
    spread = run_text(tmp_path / "spread", program(far)).stdout.split()
    assert len(masked) == 6 * cols and masked[:4 * cols] == spread[:4 * cols]
    assert masked[4 * cols:] == ["nan"] * 2 * cols  # exp(-inf - -inf) is nan; inf - inf is nan, and so their sums
