"""Device programs and their host twins, shared by tests/test_fake_driver.py
(the fake driver) and tests/test_gpu.py (a real GPU).

Each program is written once for the device; host_twin turns it into the same
program on the host. FLOAT is the element type and OTHER the other float
type; PROGRAMS also lists the kernels each one must launch.
"""

from __future__ import annotations

import re

from micatool.compile.ops.element_functions import FUNCTIONS as ELEMENT_FUNCTIONS


def host_twin(text: str) -> str:
    """The same program on the host: no `on gpu`, and the crossings become parentheses."""
    return re.sub(r"\bTo(Device|Host)\(", "(", re.sub(r"\s+on gpu\b", "", text))


# FLOAT is the element type, OTHER the other float type. 24 x 17 = 408
# elements: element-wise launches take two blocks.
ARITHMETIC = """program Arithmetic;
{ element-wise arithmetic, scalars, conversions, transfers, copies and routines }
const
    R = 24;
    C = 17;
var
    a, b : matrix[R, C] of FLOAT;
    v : vector[C] of FLOAT;
    t : tensor[3, R, C] of FLOAT;
    s : FLOAT;
    o : OTHER;
    i : integer;
    ad, bd, cd, zd : matrix[R, C] of FLOAT on gpu;
    vd : vector[C] of FLOAT on gpu;
    td : tensor[3, R, C] of FLOAT on gpu;
    sd, ud : FLOAT on gpu;
    od : matrix[R, C] of OTHER on gpu;
    wd : vector[3] of FLOAT on gpu;

function Blend(x, y : matrix[R, C] of FLOAT on gpu; k : FLOAT) : matrix[R, C] of FLOAT on gpu;
begin
    Blend := x * k - y;
end;

procedure Halve(address x : matrix[R, C] of FLOAT on gpu);
begin
    x := x * 0.5;
end;

begin
    Seed(11);
    Normal(address a, 0.0, 2.0);
    Normal(address b, 0.0, 1.0);
    Normal(address v, 0.0, 1.0);
    Normal(address t, 0.0, 1.0);
    a[0, 0] := 0.0;
    a[0, 1] := -0.0;
    a[0, 2] := 1e30;
    b[0, 2] := 1e30;
    s := 0.3;
    o := 0.7;
    i := 7;
    ad := ToDevice(a);
    bd := ToDevice(b);
    vd := ToDevice(v);
    td := ToDevice(t);
    sd := ToDevice(s);
    WriteLn('a ', ToHost(ad));
    WriteLn('a + b ', ToHost(ad + bd));
    WriteLn('a - b ', ToHost(ad - bd));
    WriteLn('a + v ', ToHost(ad + vd));
    WriteLn('a - v ', ToHost(ad - vd));
    WriteLn('t + a ', ToHost(td + ad));
    WriteLn('t - a ', ToHost(td - ad));
    WriteLn('t + v ', ToHost(td + vd));
    WriteLn('a * 2.5 ', ToHost(ad * 2.5));
    WriteLn('3 * a ', ToHost(3 * ad));
    WriteLn('a * s ', ToHost(ad * s));
    WriteLn('s * a ', ToHost(s * ad));
    WriteLn('a / 3 ', ToHost(ad / 3));
    WriteLn('a / s ', ToHost(ad / s));
    WriteLn('a + 1.5 ', ToHost(ad + 1.5));
    WriteLn('s + a ', ToHost(s + ad));
    WriteLn('a * o ', ToHost(ad * o), ' i * a ', ToHost(i * ad), ' a - i ', ToHost(ad - i));
    WriteLn('a - 0.1 ', ToHost(ad - 0.1));
    WriteLn('a - s ', ToHost(ad - s));
    WriteLn('10 - a ', ToHost(10 - ad));
    WriteLn('s - a ', ToHost(s - ad));
    WriteLn('-a ', ToHost(-ad));
    WriteLn('+a ', ToHost(+ad));
    WriteLn('Mul ', ToHost(Mul(ad, bd)));
    WriteLn('Mul t ', ToHost(Mul(td, td)));
    WriteLn('formula ', ToHost(-(ad * 0.5 + bd) / 4 - vd));
    od := OTHER(ad);
    WriteLn('OTHER ', ToHost(od));
    WriteLn('FLOAT(OTHER) ', ToHost(FLOAT(od)));
    WriteLn('FLOAT(OTHER * 3) ', ToHost(FLOAT(od * 3)));
    WriteLn('FLOAT(FLOAT) ', ToHost(FLOAT(ad)));
    WriteLn('device scalar ', ToHost(sd), ' ', ToHost(-sd), ' ', ToHost(sd * 2), ' ', ToHost(sd + 1), ' ',
            ToHost(1 - sd), ' ', ToHost(sd / 4), ' ', ToHost(Tanh(sd)), ' ', ToHost(OTHER(sd)));
    WriteLn('device scalar and tensor ', ToHost(sd * ad), ' ', ToHost(ad * sd), ' ', ToHost(ad / sd), ' ',
            ToHost(ad + sd), ' ', ToHost(sd + vd), ' ', ToHost(ad - sd), ' ', ToHost(sd - td));
    ud := ToDevice(-1.25);
    WriteLn('device scalars ', ToHost(sd * ud), ' ', ToHost(sd / ud), ' ', ToHost(sd + ud), ' ', ToHost(sd - ud), ' ',
            ToHost(-(sd * sd) / (ud - sd)));
    ud := sd;
    sd := -sd;
    WriteLn('copied scalar ', ToHost(ud), ' ', ToHost(sd));
    WriteLn('scalars across ', ToHost(ToDevice(s * 2)), ' ', ToHost(ToDevice(2.5)), ' ', ToHost(ToDevice(i)), ' ',
            ToHost(ToDevice(FLOAT(i))));
    wd := ToDevice(FLOAT([1.5, -2.0, 0.25]));
    WriteLn('vector across ', ToHost(wd * 2));
    WriteLn('never written ', ToHost(zd), ' ', ToHost(zd + ad));
    cd := ad;
    ad := ad * 2;
    WriteLn('copy stays ', ToHost(cd));
    WriteLn('moved ', ToHost(ad));
    ad := ad + bd;
    WriteLn('in place ', ToHost(ad));
    for i := 1 to 5 do
        cd := cd * 0.5 + bd;
    WriteLn('loop ', ToHost(cd));
    Halve(address cd);
    WriteLn('lent ', ToHost(cd));
    WriteLn('routine ', ToHost(Blend(ad, bd, s)), ' ', ToHost(Blend(Blend(bd, cd, 2), ad, -1)));
end.
"""

PRODUCTS = """program Products;
{ every form of '*', Transpose and CausalMask; 20 x 17 = 340 outputs: two blocks }
const
    M = 20;
    K = 30;
    N = 17;
    B = 3;
var
    a : matrix[M, K] of FLOAT;
    b : matrix[K, N] of FLOAT;
    x : vector[K] of FLOAT;
    y : vector[M] of FLOAT;
    t : tensor[B, M, K] of FLOAT;
    u : tensor[B, K, N] of FLOAT;
    ad : matrix[M, K] of FLOAT on gpu;
    bd : matrix[K, N] of FLOAT on gpu;
    xd : vector[K] of FLOAT on gpu;
    yd : vector[M] of FLOAT on gpu;
    td : tensor[B, M, K] of FLOAT on gpu;
    ud : tensor[B, K, N] of FLOAT on gpu;
    sd : matrix[M, M] of FLOAT on gpu;
begin
    Seed(5);
    Normal(address a, 0.0, 1.0);
    Normal(address b, 0.0, 1.0);
    Normal(address x, 0.0, 1.0);
    Normal(address y, 0.0, 1.0);
    Normal(address t, 0.0, 1.0);
    Normal(address u, 0.0, 1.0);
    ad := ToDevice(a);
    bd := ToDevice(b);
    xd := ToDevice(x);
    yd := ToDevice(y);
    td := ToDevice(t);
    ud := ToDevice(u);
    WriteLn('m * m ', ToHost(ad * bd));
    WriteLn('m * v ', ToHost(ad * xd));
    WriteLn('v * m ', ToHost(yd * ad));
    WriteLn('t * m ', ToHost(td * bd));
    WriteLn('t * v ', ToHost(td * xd));
    WriteLn('t * t ', ToHost(td * ud));
    WriteLn('T(m) ', ToHost(Transpose(ad)));
    WriteLn('T(t) ', ToHost(Transpose(td)));
    WriteLn('t * T(t) ', ToHost(td * Transpose(td)));
    sd := ad * Transpose(ad);
    WriteLn('mask ', ToHost(CausalMask(sd)));
    WriteLn('mask t ', ToHost(CausalMask(td * Transpose(td))));
    WriteLn('attention ', ToHost(Softmax(CausalMask(sd * 0.125)) * ad));
end.
"""

# 300 rows: row kernels take two blocks. Special values: zeros, a negative
# under Log and Sqrt, Exp's overflow and underflow, tiny and huge values. Every
# elementwise function of the table, of a matrix and of a tensor, in place of ELEMENTWISE.
FUNCTIONS = """program Functions;
{ the elementwise functions, reductions and row operations }
const
    R = 300;
    C = 5;
var
    x : matrix[R, C] of FLOAT;
    g, h : vector[C] of FLOAT;
    xd : matrix[R, C] of FLOAT on gpu;
    gd, hd : vector[C] of FLOAT on gpu;
    v : vector[7] of FLOAT;
    vd : vector[7] of FLOAT on gpu;
    t : tensor[2, 3, 4] of FLOAT;
    td : tensor[2, 3, 4] of FLOAT on gpu;
begin
    Seed(3);
    Normal(address x, 0.0, 3.0);
    Normal(address g, 1.0, 0.5);
    Normal(address h, 0.0, 0.5);
    Normal(address t, 0.0, 1.0);
    x[0, 0] := 0.0;
    x[0, 1] := -1.0;
    x[0, 2] := 100.0;
    x[0, 3] := -100.0;
    x[0, 4] := 1e-30;
    x[1, 0] := 800.0;
    x[1, 1] := -800.0;
    x[1, 2] := -0.0;
    x[1, 3] := 20.0;
    x[1, 4] := -20.0;
    v := FLOAT([-3.0, 2.0, 7.0, 7.0, -1.0, 0.5, 6.5]);
    xd := ToDevice(x);
    gd := ToDevice(g);
    hd := ToDevice(h);
    vd := ToDevice(v);
    td := ToDevice(t);
ELEMENTWISE
    WriteLn('Dropout ', ToHost(Dropout(xd, 0.25)), ' ', ToHost(Dropout(td, 0.5)), ' ', ToHost(Dropout(xd, 0.0)));
    WriteLn('Sum ', ToHost(Sum(xd)), ' ', ToHost(Sum(vd)), ' ', ToHost(Sum(td)), ' ', ToHost(Sum(Tanh(xd))));
    WriteLn('Mean ', ToHost(Mean(xd)), ' ', ToHost(Mean(vd)), ' ', ToHost(Mean(td)));
    WriteLn('Max ', ToHost(Max(xd)), ' ', ToHost(Max(vd)), ' ', ToHost(Max(td)), ' ', ToHost(Max(-vd)));
    WriteLn('Softmax ', ToHost(Softmax(xd)));
    WriteLn('Softmax v ', ToHost(Softmax(vd)), ' t ', ToHost(Softmax(td)));
    WriteLn('LayerNorm ', ToHost(LayerNorm(xd, gd, hd)));
    WriteLn('RmsNorm ', ToHost(RmsNorm(xd, gd)));
    WriteLn('mixed ', ToHost(Sum(Softmax(Gelu(LayerNorm(xd, gd, hd)) * 2 + hd))), ' ',
            ToHost(Mean(Abs(RmsNorm(Silu(xd), gd) - hd))));
end.
""".replace("ELEMENTWISE\n", "".join(f"    WriteLn('{f.name} ', ToHost({f.name}(xd)), ' ', ToHost({f.name}(td)));\n"
                                      for f in ELEMENT_FUNCTIONS))

# Numbers on the device: device scalars join as host numbers do (float32 with
# float64 gives float64, a constant takes the other side's type), host integers
# index device tables, and a named tensor type moves with `on gpu`.
NUMBERS = """program DeviceNumbers;
{ numbers on the GPU join as host numbers do; host integers index device tables; a named tensor type moves }
type
    Row = vector[4] of FLOAT;
var
    f : float32;
    d : float64;
    i, k : integer;
    sd, td : float32 on gpu;
    ud : float64 on gpu;
    tab : matrix[3, 2] of FLOAT;
    tabd : matrix[3, 2] of FLOAT on gpu;
    w : tracked matrix[3, 2] of FLOAT on gpu;
    l : tracked FLOAT on gpu;
    r : Row on gpu;
begin
    f := 0.1;
    d := 0.1;
    i := 3;
    sd := ToDevice(f);
    td := ToDevice(d);
    ud := ToDevice(i);
    WriteLn('f32 * f64 ', ToHost(sd * d), ' constant ', ToHost(sd * 0.1));
    WriteLn('over ', ToHost(d / sd), ' ', ToHost(1.0 / sd), ' ', ToHost(i / sd));
    WriteLn('device f32 * f64 ', ToHost(sd * ud), ' ', ToHost(ud - sd));
    WriteLn('f32 + f32 ', ToHost(td + sd), ' integers ', ToHost(2 * sd), ' ', ToHost(sd - i));
    WriteLn('converted on the way ', ToHost(td), ' ', ToHost(ud));
    tab := [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]];
    tabd := ToDevice(tab);
    k := 1;
    r := ToDevice(FLOAT([0.5, 1.0, -1.0, 2.0]));
    WriteLn('gather ', ToHost(Gather(tabd, k)), ' ', ToHost(Gather(tabd, 2)));
    WriteLn('cross entropy ', ToHost(CrossEntropy(r, 3)), ' ', ToHost(CrossEntropy(r, k)));
    WriteLn('named type ', ToHost(r * 2));
    w := ToDevice(tab);
    tape
        l := Sum(Gather(w, k)) * 2.0 + Sum(Gather(w, 0));
    end;
    Backward(l);
    WriteLn('loss ', ToHost(l));
    WriteLn('gradient ', ToHost(Gradient(w)));
end.
"""

# Every operation the device tape records (every elementwise function of the
# table in place of ELEMENTWISE), its backward walk, Gradient, and the optimizer
# steps on device storage. Host and device must agree on every gradient.
TAPE = """program DeviceTape;
{ every operation the device tape records, then Backward, Gradient and the optimizer steps }
const
    R = 5;
    C = 7;
var
    hx : matrix[R, C] of FLOAT;
    hw : matrix[C, C] of FLOAT;
    hg, hb : vector[C] of FLOAT;
    ht : tensor[2, R, C] of FLOAT;
    ids : vector[R] of integer;
    x : tracked matrix[R, C] of FLOAT on gpu;
    w : tracked matrix[C, C] of FLOAT on gpu;
    g, b : tracked vector[C] of FLOAT on gpu;
    t : tracked tensor[2, R, C] of FLOAT on gpu;
    l : tracked FLOAT on gpu;
    y : tracked matrix[R, C] of FLOAT on gpu;
    u : tracked tensor[2, R, C] of FLOAT on gpu;
    idsd : vector[R] of integer on gpu;
    pw, gw, m, v : matrix[C, C] of FLOAT on gpu;
    i : integer;
begin
    Seed(7);
    Normal(address hx, 0.0, 1.0);
    Normal(address hw, 0.0, 0.5);
    Normal(address hg, 1.0, 0.1);
    Normal(address hb, 0.0, 0.1);
    Normal(address ht, 0.0, 1.0);
    for i := 0 to R - 1 do ids[i] := (i * 3) mod C;
    x := ToDevice(hx);
    w := ToDevice(hw);
    g := ToDevice(hg);
    b := ToDevice(hb);
    t := ToDevice(ht);
    idsd := ToDevice(ids);
    tape
        y := LayerNorm(x * w, g, b) + b;
        y := y + (ELEMENTWISE) * 0.1;
        y := Dropout(y, 0.2);
        y := Tanh(y) - Mul(y, Sigmoid(y)) * 0.5 + Gelu(y) / 3 + Silu(y) - Relu(y) + Abs(y);
        y := Softmax(CausalMask(y * Transpose(y))) * y + Exp(y * 0.1) + Log(Abs(y) + 1) + Sqrt(Abs(y) + 1);
        y := RmsNorm(y, g) - (-y) + 1.5;
        y := y + Mul(Sin(y), Cos(y * 0.5));
        u := t * w + y;
        u := Softmax(u) - t;
        l := Sum(u) + Mean(y) + Max(y) + Sum(SumRows(y)) + CrossEntropy(y, idsd) + Mean(Gather(w, idsd));
    end;
    Backward(l);
    WriteLn('l ', ToHost(l));
    WriteLn('gx ', ToHost(Gradient(x)));
    WriteLn('gw ', ToHost(Gradient(w)));
    WriteLn('gg ', ToHost(Gradient(g)));
    WriteLn('gb ', ToHost(Gradient(b)));
    WriteLn('gt ', ToHost(Gradient(t)));
    pw := ToDevice(hw);
    gw := Gradient(w);
    for i := 1 to 3 do
        AdamStep(address pw, gw, address m, address v, i, 0.01, 0.9, 0.999, 1e-8);
    WriteLn('adam ', ToHost(pw));
    SgdStep(address pw, gw, address m, 0.1, 0.9);
    WriteLn('sgd ', ToHost(pw));
end.
""".replace("ELEMENTWISE", " + ".join(f"{f.name}(Abs(y) + 1)" if f.checked_at == "positive" else f"{f.name}(y)"
                                    for f in ELEMENT_FUNCTIONS))

# Images and vector products: Conv2d over one image and over a batch, both
# poolings, Dot and Outer.
IMAGES = """program Images;
{ Conv2d, MaxPool2d, AvgPool2d, Dot and Outer }
var
    x : tensor[3, 8, 8] of FLOAT;
    xb : tensor[2, 3, 8, 8] of FLOAT;
    k : tensor[4, 3, 3, 3] of FLOAT;
    a, b : vector[12] of FLOAT;
    xd : tensor[3, 8, 8] of FLOAT on gpu;
    xbd : tensor[2, 3, 8, 8] of FLOAT on gpu;
    kd : tensor[4, 3, 3, 3] of FLOAT on gpu;
    ad, bd : vector[12] of FLOAT on gpu;
begin
    Seed(5);
    Normal(address x, 0.0, 1.0);
    Normal(address xb, 0.0, 2.0);
    Normal(address k, 0.0, 0.5);
    Normal(address a, 1.0, 1.0);
    Normal(address b, -1.0, 3.0);
    xd := ToDevice(x);
    xbd := ToDevice(xb);
    kd := ToDevice(k);
    ad := ToDevice(a);
    bd := ToDevice(b);
    WriteLn('conv ', ToHost(Conv2d(xd, kd)));
    WriteLn('conv batch ', ToHost(Conv2d(xbd, kd)));
    WriteLn('max pool ', ToHost(MaxPool2d(xd, 2)), ' ', ToHost(MaxPool2d(xbd, 4)));
    WriteLn('avg pool ', ToHost(AvgPool2d(xd, 2)), ' ', ToHost(AvgPool2d(xbd, 4)));
    WriteLn('pooled conv ', ToHost(MaxPool2d(Relu(Conv2d(xbd, kd)), 2)));
    WriteLn('dot ', ToHost(Dot(ad, bd)), ' ', ToHost(Dot(ad, ad)));
    WriteLn('outer ', ToHost(Outer(ad, bd)));
    WriteLn('outer of sums ', ToHost(Outer(ad + bd, ad - bd)));
    WriteLn('conv of pooled ', ToHost(Conv2d(AvgPool2d(xbd, 2), kd)));
    WriteLn('dot of a row ', ToHost(Dot(ad - bd, bd)));
end.
"""

# Quantizes on the device (ties, both ends of the range, a zero point), multiplies int8 there by
# matrices and a vector (depth 7: a whole group of four and a part), and dequantizes.
QUANTIZED = """program Quantized;
{ Quantize, QuantizeRows, the integer products and Dequantize on the device }
const
    R = 5;
    K = 7;
    C = 3;
var
    x : matrix[R, K] of FLOAT;
    w : matrix[K, C] of FLOAT;
    v : vector[K] of FLOAT;
    s : FLOAT;
    xd : matrix[R, K] of FLOAT on gpu;
    wd : matrix[K, C] of FLOAT on gpu;
    vd : vector[K] of FLOAT on gpu;
    qd, rq : matrix[R, K] of int8 on gpu;
    ud : matrix[R, K] of uint8 on gpu;
    wq : matrix[K, C] of int8 on gpu;
    vq : vector[K] of int8 on gpu;
    rs : vector[R] of FLOAT on gpu;
    pd : matrix[R, C] of int32 on gpu;
begin
    Seed(3);
    Normal(address x, 0.0, 2.0);
    Normal(address w, 0.0, 1.0);
    Normal(address v, 0.0, 1.0);
    s := 0.0625;
    x[0, 0] := 0.09375;
    x[0, 1] := 0.15625;
    x[0, 2] := -0.09375;
    x[0, 3] := 1000.0;
    x[0, 4] := -1000.0;
    xd := ToDevice(x);
    wd := ToDevice(w);
    vd := ToDevice(v);
    Quantize(xd, s, 0, address qd);
    Quantize(xd, s, 128, address ud);
    Quantize(wd, 0.02, -3, address wq);
    Quantize(vd, 0.02, 0, address vq);
    QuantizeRows(xd, address rq, address rs);
    WriteLn('q ', ToHost(qd));
    WriteLn('u ', ToHost(ud));
    WriteLn('wq ', ToHost(wq));
    WriteLn('vq ', ToHost(vq));
    WriteLn('rows ', ToHost(rq));
    WriteLn('scales ', ToHost(rs));
    pd := qd * wq;
    WriteLn('product ', ToHost(pd));
    WriteLn('unsigned product ', ToHost(ud * wq));
    WriteLn('vector ', ToHost(qd * vq), ' ', ToHost(rq * vq));
    WriteLn('dequantized ', ToHost(Dequantize(qd, s, 0)));
    WriteLn('dequantized u ', ToHost(Dequantize(ud, s, 128)));
    WriteLn('rows back ', ToHost(Dequantize(rq, 0.01, 0)));
end.
"""

ELEMENTWISE_KERNELS = {"add", "sub", "add_rows", "sub_rows", "scale", "divide", "shift", "rsub", "neg", "mul", "div",
                       "scale_at", "divide_at", "shift_at", "rsub_at", "each_tanh"}
# Each program's kernels: `_FLOAT` is added to a name that has neither placeholder nor a type of its own
# (the integer products' names end in their operands' types).
PROGRAMS = {
    "arithmetic": (ARITHMETIC, ELEMENTWISE_KERNELS | {"convert_OTHER_FLOAT", "convert_FLOAT_OTHER", "scale_OTHER"}),
    "products": (PRODUCTS, {"gemm", "transpose", "causal_mask", "softmax_rows", "scale"}),
    "numbers": (NUMBERS, {"accumulate", "add", "cross_entropy_rows", "gather", "gather_back", "mean", "scale", "scale_back",
                          "sum", "sum_back", "add_f32", "convert_f64_f32", "div_f32", "div_f64", "mul_f64", "scale_f32",
                          "scale_f64", "shift_f32", "sub_f64"}),
    "images": (IMAGES, {"conv2d", "maxpool2d", "avgpool2d", "dot", "outer", "each_relu", "add", "sub"}),
    "functions": (FUNCTIONS, {f"each_{f.c}" for f in ELEMENT_FUNCTIONS}
                  | {"dropout", "sum", "mean", "max", "softmax_rows", "layernorm_rows", "rmsnorm_rows", "scale", "add_rows",
                     "sub_rows", "neg"}),
    "quantized": (QUANTIZED, {"quantize_i8_FLOAT", "quantize_u8", "quantize_rows_i8_FLOAT", "dequantize_i8_FLOAT",
                              "dequantize_u8", "dequantize_i8_f64", "matmul_i32_i8_i8", "matmul_i32_u8_i8"}),
}
SHORT = {"float32": "f32", "float64": "f64"}
