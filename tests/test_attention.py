"""Attention fused on the tape gives the unfused ops' bits.

The tape records Softmax([CausalMask(]q * Transpose(k)[ * s][)]) * v as one
node (micatool/compile/ops/attention.py, runtime_c/mica_ops.inc) that keeps no
scores and computes them again in its backward. The program below computes
each form twice: fused, and op by op through tracked places (a place read
between the ops keeps the compiler from fusing). Values and gradients must
agree exactly: a causal, scaled form whose matrices are not square; a scale
on the left and no mask; one float64 matrix as q, k and v, whose gradient
gathers all three contributions. The printed losses are the same on x86_64
and aarch64.
"""

from __future__ import annotations

import pytest

from micatool.compile import compile_program, load_source

from helpers import BOTH_TARGETS, build_text, run

PROGRAM = """program AttentionFusion;
const N = 3; M = 5; T = 7; D = 4; E = 6;
var
    q : tracked tensor[N, M, D] of float32;
    k : tracked tensor[N, T, D] of float32;
    v : tracked tensor[N, T, E] of float32;
    x : tracked matrix[T, D] of float64;
    w : tensor[N, M, E] of float32;
    wx : matrix[T, D] of float64;
    fused, unfused : tracked tensor[N, M, E] of float32;
    s, p : tracked tensor[N, M, T] of float32;
    xf, xu, xp : tracked matrix[T, D] of float64;
    xs : tracked matrix[T, T] of float64;
    loss : tracked float32;
    loss64 : tracked float64;
    out : tensor[N, M, E] of float32;
    gq : tensor[N, M, D] of float32;
    gk : tensor[N, T, D] of float32;
    gv : tensor[N, T, E] of float32;
    xo, gx : matrix[T, D] of float64;
begin
    Seed(3);
    Normal(address gq, 0.0, 1.0); q := gq;
    Normal(address gk, 0.0, 1.0); k := gk;
    Normal(address gv, 0.0, 1.0); v := gv;
    Normal(address w, 0.0, 1.0);
    Normal(address gx, 0.0, 1.0); x := gx;
    Normal(address wx, 0.0, 1.0);

    { causal, scaled on the right, m <> n }
    tape
        fused := Softmax(CausalMask(q * Transpose(k) * 0.5)) * v;
        loss := Sum(Mul(fused, w));
    end;
    Backward(loss);
    out := fused; gq := Gradient(q); gk := Gradient(k); gv := Gradient(v);
    tape
        s := q * Transpose(k) * 0.5;
        p := Softmax(CausalMask(s));
        unfused := p * v;
        loss := Sum(Mul(unfused, w));
    end;
    Backward(loss);
    WriteLn('causal ', Max(Abs(out - unfused)), ' ', Max(Abs(gq - Gradient(q))), ' ', Max(Abs(gk - Gradient(k))),
            ' ', Max(Abs(gv - Gradient(v))), ' ', loss:0:7);

    { scaled on the left, no mask }
    tape
        fused := Softmax(0.3 * (q * Transpose(k))) * v;
        loss := Sum(Mul(fused, w));
    end;
    Backward(loss);
    out := fused; gq := Gradient(q); gk := Gradient(k); gv := Gradient(v);
    tape
        s := 0.3 * (q * Transpose(k));
        p := Softmax(s);
        unfused := p * v;
        loss := Sum(Mul(unfused, w));
    end;
    Backward(loss);
    WriteLn('scaled ', Max(Abs(out - unfused)), ' ', Max(Abs(gq - Gradient(q))), ' ', Max(Abs(gk - Gradient(k))),
            ' ', Max(Abs(gv - Gradient(v))), ' ', loss:0:7);

    { one matrix as q, k and v, float64, neither mask nor scale }
    tape
        xf := Softmax(x * Transpose(x)) * x;
        loss64 := Sum(Mul(xf, wx));
    end;
    Backward(loss64);
    xo := xf; gx := Gradient(x);
    tape
        xs := x * Transpose(x);
        xp := x;
        xu := Softmax(xs) * xp;
        loss64 := Sum(Mul(xu, wx));
    end;
    Backward(loss64);
    WriteLn('self ', Max(Abs(xo - xu)), ' ', Max(Abs(gx - Gradient(x))), ' ', loss64:0:12);
end.
"""

EXPECTED = """causal 0.0 0.0 0.0 0.0 -1.2165935
scaled 0.0 0.0 0.0 0.0 0.9985114
self 0.0 0.0 2.734717799507
"""


def test_the_three_forms_are_fused_and_the_places_are_not(tmp_path):
    path = tmp_path / "attention.mica"
    path.write_text(PROGRAM)
    c = compile_program(load_source(str(path))).c
    assert c.count("mica_t_attention_f32(") == 2
    assert c.count("mica_t_attention_f64(") == 1
    assert c.count("mica_t_softmax_f32(") == 2 and c.count("mica_t_softmax_f64(") == 1


@pytest.mark.parametrize("target", BOTH_TARGETS)
def test_fused_attention_has_the_unfused_bits(tmp_path, target, request):
    if target == "aarch64-linux":
        request.getfixturevalue("aarch64")
    proc = run(build_text(tmp_path, PROGRAM, target=target), target)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == EXPECTED
