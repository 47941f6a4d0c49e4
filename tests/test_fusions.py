"""The tape's fused nodes give the unfused ops' bits (micatool/compile/ops/fusions.py).

Each program computes every form twice: as one expression, which the tape
records as one fused node, and op by op through tracked places, which keeps
the compiler from fusing while recording the same nodes in the same order.
Values and gradients must agree exactly. Where a gradient gathers three or
more terms (one matrix as q, k and v of attention and used again after it; a
place added to its own product and used again), the terms' order shows in the
bits: these lines failed when the fused backwards ran in another order. The
printed losses are the same on x86_64 and aarch64.
"""

from __future__ import annotations

import pytest

from micatool.compile import compile_program, load_source

from helpers import BOTH_TARGETS, EXAMPLES, build_text, run

ATTENTION = """program AttentionFusion;
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
        loss64 := Sum(Mul(xf, wx)) + Sum(Mul(x, wx));
    end;
    Backward(loss64);
    xo := xf; gx := Gradient(x);
    tape
        xs := x * Transpose(x);
        xp := x;
        xu := Softmax(xs) * xp;
        loss64 := Sum(Mul(xu, wx)) + Sum(Mul(x, wx));
    end;
    Backward(loss64);
    WriteLn('self ', Max(Abs(xo - xu)), ' ', Max(Abs(gx - Gradient(x))), ' ', loss64:0:12);
end.
"""

ATTENTION_OUT = """causal 0.0 0.0 0.0 0.0 -1.2165940
scaled 0.0 0.0 0.0 0.0 0.9985118
self 0.0 0.0 5.678365444413
"""

PRODUCT_PLUS = """program ProductPlus;
const N = 2; T = 9; C = 6; K = 11;
var
    x : tracked tensor[N, T, C] of float32;
    w : tracked matrix[C, K] of float32;
    b : tracked vector[K] of float32;
    sq : tracked matrix[C, C] of float32;
    m : tracked matrix[T, C] of float64;
    u : tracked matrix[C, C] of float64;
    wy : tensor[N, T, K] of float32;
    wz : tensor[N, T, C] of float32;
    wm : matrix[T, C] of float64;
    y, yu, p : tracked tensor[N, T, K] of float32;
    z, zu, q : tracked tensor[N, T, C] of float32;
    h, hu, t, pm : tracked matrix[T, C] of float64;
    loss : tracked float32;
    loss64 : tracked float64;
    yo : tensor[N, T, K] of float32;
    zo : tensor[N, T, C] of float32;
    ho : matrix[T, C] of float64;
    gx : tensor[N, T, C] of float32;
    gw : matrix[C, K] of float32;
    gb : vector[K] of float32;
    gs : matrix[C, C] of float32;
    gm, gu : matrix[T, C] of float64;
    gu2 : matrix[C, C] of float64;
begin
    Seed(5);
    Normal(address gx, 0.0, 1.0); x := gx;
    Normal(address gw, 0.0, 1.0); w := gw;
    Normal(address gb, 0.0, 1.0); b := gb;
    Normal(address gs, 0.0, 1.0); sq := gs;
    Normal(address gm, 0.0, 1.0); m := gm;
    Normal(address gu2, 0.0, 1.0); u := gu2;
    Normal(address wy, 0.0, 1.0);
    Normal(address wz, 0.0, 1.0);
    Normal(address wm, 0.0, 1.0);

    { a bias row after a product of a rank-3 tensor }
    tape
        y := x * w + b;
        loss := Sum(Mul(y, wy));
    end;
    Backward(loss);
    yo := y; gx := Gradient(x); gw := Gradient(w); gb := Gradient(b);
    tape
        p := x * w;
        yu := p + b;
        loss := Sum(Mul(yu, wy));
    end;
    Backward(loss);
    WriteLn('bias ', Max(Abs(yo - yu)), ' ', Max(Abs(gx - Gradient(x))), ' ', Max(Abs(gw - Gradient(w))), ' ',
            Max(Abs(gb - Gradient(b))), ' ', loss:0:6);

    { a product plus the place it multiplies: x's gradient gathers both }
    tape
        z := x * sq + x;
        loss := Sum(Mul(z, wz));
    end;
    Backward(loss);
    zo := z; gx := Gradient(x); gs := Gradient(sq);
    tape
        q := x * sq;
        zu := q + x;
        loss := Sum(Mul(zu, wz));
    end;
    Backward(loss);
    WriteLn('residual ', Max(Abs(zo - zu)), ' ', Max(Abs(gx - Gradient(x))), ' ', Max(Abs(gs - Gradient(sq))), ' ',
            loss:0:6);

    { float64, an expression first that shares m with the product }
    tape
        h := Tanh(m) + m * u;
        loss64 := Sum(Mul(h, wm));
    end;
    Backward(loss64);
    ho := h; gm := Gradient(m); gu2 := Gradient(u);
    tape
        t := Tanh(m);
        pm := m * u;
        hu := t + pm;
        loss64 := Sum(Mul(hu, wm));
    end;
    Backward(loss64);
    WriteLn('sum ', Max(Abs(ho - hu)), ' ', Max(Abs(gm - Gradient(m))), ' ', Max(Abs(gu2 - Gradient(u))), ' ',
            loss64:0:12);

    { the place itself first, and used again later: m's gradient gathers three terms in the walk's order }
    tape
        h := m + m * u;
        loss64 := Sum(Mul(h, wm)) + Sum(Mul(Tanh(m), wm));
    end;
    Backward(loss64);
    ho := h; gm := Gradient(m); gu2 := Gradient(u);
    tape
        pm := m * u;
        hu := m + pm;
        loss64 := Sum(Mul(hu, wm)) + Sum(Mul(Tanh(m), wm));
    end;
    Backward(loss64);
    WriteLn('place ', Max(Abs(ho - hu)), ' ', Max(Abs(gm - Gradient(m))), ' ', Max(Abs(gu2 - Gradient(u))), ' ',
            loss64:0:12);
end.
"""

PRODUCT_PLUS_OUT = """bias 0.0 0.0 0.0 0.0 -5.366783
residual 0.0 0.0 0.0 -25.834215
sum 0.0 0.0 0.0 -1.228478163590
place 0.0 0.0 0.0 -1.843782861177
"""

PROGRAMS = {"attention": (ATTENTION, ATTENTION_OUT), "product_plus": (PRODUCT_PLUS, PRODUCT_PLUS_OUT)}


def emitted(tmp_path, text: str) -> str:
    path = tmp_path / "prog.mica"
    path.write_text(text)
    return compile_program(load_source(str(path))).c


def test_the_expressions_fuse_and_the_op_by_op_forms_do_not(tmp_path):
    c = emitted(tmp_path, ATTENTION)
    assert (c.count("mica_t_attention_f32("), c.count("mica_t_attention_f64(")) == (2, 1)
    assert (c.count("mica_t_softmax_f32("), c.count("mica_t_softmax_f64(")) == (2, 1)
    c = emitted(tmp_path, PRODUCT_PLUS)
    assert (c.count("mica_t_product_plus_f32("), c.count("mica_t_product_plus_f64(")) == (2, 2)
    assert (c.count("mica_t_add_rows_f32("), c.count("mica_t_add_f32("), c.count("mica_t_add_f64(")) == (1, 1, 4)


def test_the_gpt_records_its_heads_and_products_fused(tmp_path):
    c = compile_program(load_source(str(EXAMPLES / "gpt" / "gpt.mica"))).c
    assert "mica_t_softmax_f32(" not in c and c.count("mica_t_attention_f32(") == 1
    assert c.count("mica_t_product_plus_f32(") == 3  # a head added to the others, and the MLP's two biases


@pytest.mark.parametrize("target", BOTH_TARGETS)
@pytest.mark.parametrize("program", PROGRAMS)
def test_fused_nodes_have_the_unfused_bits(tmp_path, target, program, request):
    if target == "aarch64-linux":
        request.getfixturevalue("aarch64")
    text, expected = PROGRAMS[program]
    proc = run(build_text(tmp_path, text, target=target), target)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == expected
