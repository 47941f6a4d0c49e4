"""Every recorded op against central finite differences (float64, and a few in float32).

For each case the test writes one Mica program that
  1. fills the inputs deterministically (Seed + Normal/Uniform, or literals) and
     a fixed random weighting `c` of the op's output shape, so that the scalar
     loss `Sum(Mul(Op(...), c))` depends on every output element (a scalar
     output is the loss itself);
  2. computes the loss inside `tape ... end` with the inputs tracked, calls
     `Backward(l)` and reads `Gradient(x)` for every tracked input;
  3. computes central differences of the same loss outside any window (where
     tracked values compute plainly through the same C kernels), perturbing
     each input element by +-h; the denominator is the difference of the two
     perturbed values as stored, so rounding of x +- h does not enter;
  4. prints `g NAME K GRADIENT DIFFERENCE` per element (shortest exact decimals).

A tensor-valued op is written once, in a routine with tracked parameters and a
tracked result (`function Op(x : tracked ...) : tracked ...`), which serves
both inside the window (its recording instance) and outside (its plain one).
The rest is written out twice, inside and outside: scalar losses and ops with
a tracked scalar input, and the weight-tying cases, which must read the same
place several times.

Kinks: Relu and Abs inputs are pushed at least 0.1 away from zero; Max and
MaxPool2d inputs are a fixed shuffled ladder of values 0.05 apart (no ties or
near ties), all far wider than h. CausalMask is followed by Softmax, so the
masked -infinity entries contribute exact zeros on both sides.

Agreement: |gradient - difference| <= atol + rtol * |difference| with the
per-case tolerances of TOLERANCES (measured maxima in its comments). Every
tracked input must also get a gradient element above 1e-3, so that no
comparison is vacuous. `python tests/test_gradcheck.py` prints the measured
errors of every case. One program per case; builds take about 0.15 s each.
"""

from __future__ import annotations

import math
import random
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from helpers import build_text, run  # noqa: E402

from micatool.compile.ops.element_functions import FUNCTIONS as ELEMENT_FUNCTIONS  # noqa: E402

H = {"float64": "7.62939453125e-06", "float32": "0.0078125"}  # 2^-17 and 2^-7: exact in either type


@dataclass
class Case:
    id: str
    inputs: dict            # name -> (shape, init); shape () is a scalar
    expr: str = ""          # the op's value in terms of the inputs
    out: tuple | None = None  # the op's output shape; None: the expression is the scalar loss
    dtype: str = "float64"  # of the output, the weighting and the loss
    input_dtype: str | None = None  # of the tracked inputs, when it differs
    aux: dict = field(default_factory=dict)  # plain name -> (type text, initializer expression)
    body: list | None = None  # statements computing the loss into {L}, instead of expr
    tracked_locals: dict = field(default_factory=dict)  # tracked intermediates of a body: name -> shape
    routine: bool = True    # a tensor-valued expr goes through function Op


def type_text(shape: tuple, dtype: str) -> str:
    if not shape:
        return dtype
    dims = ", ".join(str(d) for d in shape)
    kind = {1: "vector", 2: "matrix"}.get(len(shape), "tensor")
    return f"{kind}[{dims}] of {dtype}"


def count(shape: tuple) -> int:
    return math.prod(shape)


def flat_index(shape: tuple, k: str = "k_") -> str:
    """[i, j, ...] of the element at row-major position k."""
    parts = []
    stride = count(shape)
    for d in shape:
        stride //= d
        parts.append(f"({k} div {stride}) mod {d}" if stride > 1 else f"{k} mod {d}")
    return "[" + ", ".join(parts) + "]"


def spread_permutation(n: int, seed: int) -> list[int]:
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return order


def init_statements(name: str, shape: tuple, init, seed: int) -> list[str]:
    """Statements filling the plain twin `name_p`."""
    p = f"{name}_p"
    n = count(shape)
    if init == "normal":
        return [f"Normal(address {p}, 0.0, 1.0);"]
    if init == "positive":
        return [f"Uniform(address {p}, 0.5, 2.0);"]
    if init == "away":  # |x| >= 0.1: no kink of Relu or Abs within reach of h
        idx = flat_index(shape)
        return [
            f"Uniform(address {p}, -1.0, 1.0);",
            f"for k_ := 0 to {n - 1} do",
            f"    if {p}{idx} >= 0.0 then {p}{idx} := {p}{idx} + 0.1 else {p}{idx} := {p}{idx} - 0.1;",
        ]
    if init == "spread":  # distinct values 0.05 apart in a fixed shuffled order: no near ties for Max
        perm = spread_permutation(n, seed)
        idx = flat_index(shape)
        return [
            f"{name}_perm := [{', '.join(str(v) for v in perm)}];",
            f"for k_ := 0 to {n - 1} do {p}{idx} := 0.05 * ({name}_perm[k_] - {n // 2});",
        ]
    return [f"{p} := {init};"]  # a literal


def program(case: Case, seed: int) -> str:
    dt = case.dtype
    it = case.input_dtype or dt
    names = list(case.inputs)
    lines = [f"program Grad_{case.id.replace('-', '_')};", "var"]
    for name, (shape, init) in case.inputs.items():
        lines.append(f"    {name} : tracked {type_text(shape, it)};")
        lines.append(f"    {name}_p, {name}_g : {type_text(shape, it)};")
        if init == "spread":
            lines.append(f"    {name}_perm : vector[{count(shape)}] of integer;")
    for name, shape in case.tracked_locals.items():
        lines.append(f"    {name} : tracked {type_text(shape, dt)};")
    for name, (ty, _) in case.aux.items():
        lines.append(f"    {name} : {ty};")
    if case.out is not None:
        lines.append(f"    c : {type_text(case.out, dt)};")
    lines += [
        f"    l : tracked {dt};",
        "    lp_, lm_ : float64;",
        f"    h_, up_, down_ : {it};",
        "    k_ : integer;",
        "",
    ]

    # A tracked scalar parameter, like a tracked scalar result, breaks the
    # routine's plain instance (the same `= 0` initializer), so those inline too.
    scalar_input = any(not shape for shape, _ in case.inputs.values())
    use_routine = case.body is None and case.out is not None and case.routine and not scalar_input
    if use_routine:
        params = "; ".join(f"{n} : tracked {type_text(case.inputs[n][0], it)}" for n in names)
        lines += [
            f"function Op({params}) : tracked {type_text(case.out, dt)};",
            "begin",
            f"    result := {case.expr};",
            "end;",
            "",
        ]
        value = f"Op({', '.join(names)})"
    else:
        value = case.expr

    def loss(target: str) -> list[str]:
        if case.body is not None:
            return [s.replace("{L}", target) for s in case.body]
        if case.out is None:
            return [f"{target} := {value};"]
        return [f"{target} := Sum(Mul({value}, c));"]

    lines += ["begin", f"    Seed({seed});"]
    for name, (shape, init) in case.inputs.items():
        lines += ["    " + s for s in init_statements(name, shape, init, seed + len(name))]
    for name, (_, initializer) in case.aux.items():
        lines.append(f"    {name} := {initializer};")
    if case.out is not None:
        lines.append("    Normal(address c, 0.0, 1.0);")
    for name in names:
        lines.append(f"    {name} := {name}_p;")
    lines += ["    tape"] + ["        " + s for s in loss("l")] + ["    end;", "    Backward(l);"]
    for name in names:
        lines.append(f"    {name}_g := Gradient({name});")
    lines.append(f"    h_ := {H[it]};")
    for name, (shape, _) in case.inputs.items():
        idx = flat_index(shape) if shape else ""
        lines += [
            f"    for k_ := 0 to {count(shape) - 1} do",
            "    begin",
            f"        up_ := {name}_p{idx} + h_;",
            f"        down_ := {name}_p{idx} - h_;",
            f"        {name}{idx} := up_;",
            *("        " + s for s in loss("lp_")),
            f"        {name}{idx} := down_;",
            *("        " + s for s in loss("lm_")),
            f"        {name} := {name}_p;",
            f"        WriteLn('g {name} ', k_, ' ', {name}_g{idx}, ' ',",
            "                (lp_ - lm_) / (float64(up_) - float64(down_)));",
            "    end;",
        ]
    lines.append("end.")
    return "\n".join(lines) + "\n"


M34 = (3, 4)
LITERAL34 = "[[0.5, -1.0, 2.0, 0.25], [1.5, 0.75, -0.75, 1.0], [-2.0, 0.5, 1.0, -1.5]]"


def unary(name: str, init="normal") -> Case:
    return Case(name, {"x": (M34, init)}, f"{name}(x)", M34)


CASES = [
    # ------------------------------------------------ tensor arithmetic
    Case("add", {"a": (M34, "normal"), "b": (M34, "normal")}, "a + b", M34),
    Case("sub", {"a": (M34, "normal"), "b": (M34, "normal")}, "a - b", M34),
    Case("matmul-mm", {"a": ((3, 4), "normal"), "b": ((4, 5), "normal")}, "a * b", (3, 5)),
    Case("matmul-mv", {"a": ((3, 4), "normal"), "v": ((4,), "normal")}, "a * v", (3,)),
    Case("matmul-vm", {"v": ((3,), "normal"), "a": ((3, 4), "normal")}, "v * a", (4,)),
    Case("matmul-tm", {"t": ((2, 3, 4), "normal"), "b": ((4, 5), "normal")}, "t * b", (2, 3, 5)),
    Case("matmul-plain-left", {"b": ((4, 5), "normal")}, "a0 * b", (3, 5),
         aux={"a0": ("matrix[3, 4] of float64", LITERAL34)}),
    Case("matmul-batched", {"a": ((2, 3, 4), "normal"), "b": ((2, 4, 5), "normal")}, "a * b", (2, 3, 5)),
    Case("scalar-times-tensor", {"x": (M34, "normal")}, "2.5 * x", M34),
    Case("tensor-times-scalar", {"x": (M34, "normal")}, "x * 0.75", M34),
    Case("tensor-over-scalar", {"x": (M34, "normal")}, "x / 3.0", M34),
    Case("tensor-plus-scalar", {"x": (M34, "normal")}, "x + 1.5", M34),
    Case("tensor-minus-scalar", {"x": (M34, "normal")}, "x - 1.5", M34),
    Case("scalar-minus-tensor", {"x": (M34, "normal")}, "2.0 - x", M34),
    Case("tracked-scalar-times-tensor", {"s": ((), "1.25"), "x": (M34, "normal")}, "s * x", M34),
    Case("tensor-over-tracked-scalar", {"x": (M34, "normal"), "s": ((), "1.25")}, "x / s", M34),
    Case("tensor-plus-tracked-scalar", {"x": (M34, "normal"), "s": ((), "0.5")}, "x + s", M34),
    Case("tensor-minus-tracked-scalar", {"x": (M34, "normal"), "s": ((), "0.5")}, "x - s", M34),
    Case("tracked-scalar-minus-tensor", {"s": ((), "0.5"), "x": (M34, "normal")}, "s - x", M34),
    Case("scalar-arithmetic", {"s": ((), "0.7"), "t": ((), "-1.3")},
         "Tanh(s * t) / (1.0 + s) - 2.0 / t + (s - t) * 3.0 - Exp(s) / 2.0"),
    Case("row-broadcast-add", {"m": (M34, "normal"), "v": ((4,), "normal")}, "m + v", M34),
    Case("row-broadcast-sub", {"m": (M34, "normal"), "v": ((4,), "normal")}, "m - v", M34),
    Case("row-broadcast-add-3d", {"t": ((2, 3, 4), "normal"), "v": ((4,), "normal")}, "t + v", (2, 3, 4)),
    Case("unary-minus", {"x": (M34, "normal")}, "-x", M34),
    Case("Mul", {"a": (M34, "normal"), "b": (M34, "normal")}, "Mul(a, b)", M34),
    Case("Transpose", {"x": (M34, "normal")}, "Transpose(x)", (4, 3)),
    Case("row", {"x": (M34, "normal")}, "x[1]", (4,)),
    Case("row-3d", {"t": ((2, 3, 4), "normal")}, "t[1]", (3, 4)),
    Case("row-of-row-3d", {"t": ((2, 3, 4), "normal")}, "t[1, 2]", (4,)),
    Case("element", {"x": (M34, "normal")}, "x[1, 2] * x[0, 3] + x[2, 0]"),
    # ------------------------------------------------ elementwise functions: every row of the table
    *(unary(f.name, f.checked_at) for f in ELEMENT_FUNCTIONS),
    # the mask is drawn again for every evaluation of the loss: each starts from the same Seed
    Case("Dropout", {"x": (M34, "normal")}, body=["Seed(5);", "{L} := Sum(Mul(Dropout(x, 0.3), c));"], out=M34),
    # ------------------------------------------------ reductions
    Case("Sum", {"x": (M34, "normal")}, "Sum(x)"),
    Case("Mean", {"x": (M34, "normal")}, "Mean(x)"),
    Case("Max", {"x": (M34, "spread")}, "Max(x)"),
    Case("SumRows", {"x": (M34, "normal")}, "SumRows(x)", (4,)),
    Case("SumRows-3d", {"x": ((2, 3, 4), "normal")}, "SumRows(x)", (4,)),
    # ------------------------------------------------ rows
    Case("Softmax", {"x": (M34, "normal")}, "Softmax(x)", M34),
    Case("Softmax-3d", {"x": ((2, 3, 4), "normal")}, "Softmax(x)", (2, 3, 4)),
    Case("CausalMask", {"x": ((4, 4), "normal")}, "Softmax(CausalMask(x))", (4, 4)),
    Case("CausalMask-3d", {"x": ((2, 3, 3), "normal")}, "Softmax(CausalMask(x))", (2, 3, 3)),
    Case("LayerNorm", {"x": (M34, "normal"), "gain": ((4,), "normal"), "bias": ((4,), "normal")},
         "LayerNorm(x, gain, bias)", M34),
    Case("LayerNorm-3d", {"x": ((2, 3, 4), "normal"), "gain": ((4,), "normal"), "bias": ((4,), "normal")},
         "LayerNorm(x, gain, bias)", (2, 3, 4)),
    Case("LayerNorm-x-only", {"x": (M34, "normal")}, "LayerNorm(x, g0, b0)", M34,
         aux={"g0": ("vector[4] of float64", "[1.5, -0.5, 0.75, 2.0]"),
              "b0": ("vector[4] of float64", "[0.1, 0.2, -0.3, 0.0]")}),
    Case("RmsNorm", {"x": (M34, "normal"), "gain": ((4,), "normal")}, "RmsNorm(x, gain)", M34),
    Case("CrossEntropy", {"logits": ((4, 5), "normal")}, "CrossEntropy(logits, targets)",
         aux={"targets": ("vector[4] of integer", "[1, 0, 4, 2]")}),
    Case("CrossEntropy-3d", {"logits": ((2, 3, 5), "normal")}, "CrossEntropy(logits, targets)",
         aux={"targets": ("matrix[2, 3] of integer", "[[4, 0, 2], [1, 1, 3]]")}),
    Case("CrossEntropy-vector", {"logits": ((5,), "normal")}, "CrossEntropy(logits, 3)"),
    # ------------------------------------------------ embedding and products
    Case("Gather", {"table": ((5, 3), "normal")}, "Gather(table, ids)", (4, 3),
         aux={"ids": ("vector[4] of integer", "[3, 1, 4, 1]")}),
    Case("Gather-one-id", {"table": ((5, 3), "normal")}, "Gather(table, 2)", (3,)),
    Case("Dot", {"a": ((5,), "normal"), "b": ((5,), "normal")}, "Dot(a, b)"),
    Case("Outer", {"a": ((3,), "normal"), "b": ((4,), "normal")}, "Outer(a, b)", (3, 4)),
    # ------------------------------------------------ images
    Case("Conv2d-chw", {"x": ((2, 5, 5), "normal"), "k": ((3, 2, 3, 3), "normal")}, "Conv2d(x, k)", (3, 3, 3)),
    Case("Conv2d-bchw", {"x": ((2, 2, 5, 4), "normal"), "k": ((3, 2, 2, 3), "normal")}, "Conv2d(x, k)",
         (2, 3, 4, 2)),
    Case("MaxPool2d", {"x": ((2, 4, 6), "spread")}, "MaxPool2d(x, 2)", (2, 2, 3)),
    Case("MaxPool2d-4d", {"x": ((2, 1, 6, 3), "spread")}, "MaxPool2d(x, 3)", (2, 1, 2, 1)),
    Case("AvgPool2d", {"x": ((2, 4, 6), "normal")}, "AvgPool2d(x, 2)", (2, 2, 3)),
    # ------------------------------------------------ weight tying: one place, several uses
    Case("tied-in-expression", {"w": ((3, 3), "normal")}, "w * Transpose(w) + w", (3, 3), routine=False),
    Case("tied-through-statements", {"w": ((3, 3), "normal"), "b": ((3,), "normal")},
         body=["h := w * x0;", "h := Tanh(w * h + b);", "h := w * h;", "{L} := Dot(h, c);"],
         out=(3,), tracked_locals={"h": (3,)}, aux={"x0": ("vector[3] of float64", "[0.5, -1.0, 2.0]")}),
    Case("tied-embedding", {"e": ((5, 3), "normal")}, "Gather(e, ids) * Transpose(e)", (4, 5),
         aux={"ids": ("vector[4] of integer", "[3, 1, 4, 1]")}),
    Case("computed-scalars", {"x": (M34, "spread")}, "(x - Mean(x)) / Sqrt(Mean(Mul(x, x)) + 1.0) + Max(x) * x",
         M34),
    # ------------------------------------------------ float32: the same machinery, looser
    Case("f32-matmul-Tanh", {"a": ((3, 4), "normal"), "b": ((4, 5), "normal")}, "Tanh(a * b)", (3, 5),
         dtype="float32"),
    Case("f32-Softmax", {"x": (M34, "normal")}, "Softmax(x)", M34, dtype="float32"),
    Case("f32-LayerNorm", {"x": (M34, "normal"), "gain": ((4,), "normal"), "bias": ((4,), "normal")},
         "LayerNorm(x, gain, bias)", M34, dtype="float32"),
    # a float32 loss stored into a tracked float64: the tape converts (mica_t_convert) and converts back
    Case("f32-into-f64", {"x": (M34, "normal")}, body=["{L} := Sum(Mul(Tanh(x), c32));"], input_dtype="float32",
         aux={"c32": ("matrix[3, 4] of float32", LITERAL34)}),
]


# The tolerance of each case, (rtol, atol): |gradient - difference| <= atol + rtol * |difference|.
# Chosen from the measured maxima in the comments (max |g - d| over all elements, then max
# |g - d| / |d| over elements with |d| >= 1e-3): float64 atol is about 30x the measured
# absolute error rounded up to 1, 2 or 5 x 10^k (never below 1e-10), rtol 1e-8; float32 atol is
# about 10x, rtol 1e-3. In float64 the difference itself is the inexact side: its error is the
# h^2/6 f''' truncation plus eps |loss| / h rounding, about 1e-11 to 1e-10 here. A wrong
# backward formula misses by far more: a 1e-4 relative slip in the tracked-divisor gradient
# (tensor-over-tracked-scalar) fails, as does 1e-3 in Sigmoid's derivative.
TOLERANCES = {  # id: (rtol, atol),  # measured max abs, max rel
    "add": (1e-08, 1e-09),  # 2.3e-11 2.3e-10
    "sub": (1e-08, 1e-09),  # 2.8e-11 5.6e-10
    "matmul-mm": (1e-08, 2e-09),  # 4.2e-11 4.6e-10
    "matmul-mv": (1e-08, 2e-10),  # 4.4e-12 5.5e-10
    "matmul-vm": (1e-08, 5e-10),  # 8.3e-12 2.0e-10
    "matmul-tm": (1e-08, 1e-08),  # 1.7e-10 6.6e-10
    "matmul-plain-left": (1e-08, 5e-09),  # 1.3e-10 1.2e-09
    "matmul-batched": (1e-08, 5e-09),  # 1.6e-10 7.7e-09
    "scalar-times-tensor": (1e-08, 5e-09),  # 9.0e-11 2.4e-10
    "tensor-times-scalar": (1e-08, 1e-09),  # 1.8e-11 6.1e-10
    "tensor-over-scalar": (1e-08, 5e-10),  # 8.2e-12 8.6e-10
    "tensor-plus-scalar": (1e-08, 2e-09),  # 5.6e-11 3.9e-10
    "tensor-minus-scalar": (1e-08, 2e-09),  # 5.5e-11 2.2e-10
    "scalar-minus-tensor": (1e-08, 5e-09),  # 8.7e-11 1.7e-09
    "tracked-scalar-times-tensor": (1e-08, 2e-09),  # 4.6e-11 7.6e-10
    "tensor-over-tracked-scalar": (1e-08, 2e-09),  # 6.3e-11 3.4e-10
    "tensor-plus-tracked-scalar": (1e-08, 2e-09),  # 4.9e-11 6.8e-10
    "tensor-minus-tracked-scalar": (1e-08, 2e-09),  # 3.9e-11 3.2e-10
    "tracked-scalar-minus-tensor": (1e-08, 5e-09),  # 6.7e-11 1.4e-09
    "scalar-arithmetic": (1e-08, 2e-09),  # 5.9e-11 3.1e-11
    "row-broadcast-add": (1e-08, 2e-09),  # 3.6e-11 7.5e-10
    "row-broadcast-sub": (1e-08, 2e-09),  # 4.1e-11 1.8e-10
    "row-broadcast-add-3d": (1e-08, 5e-09),  # 1.2e-10 1.8e-09
    "unary-minus": (1e-08, 1e-09),  # 2.0e-11 7.1e-11
    "Mul": (1e-08, 2e-09),  # 6.1e-11 7.5e-10
    "Transpose": (1e-08, 2e-09),  # 3.9e-11 1.2e-10
    "row": (1e-08, 5e-10),  # 1.6e-11 5.9e-11
    "row-3d": (1e-08, 5e-09),  # 1.0e-10 1.1e-09
    "row-of-row-3d": (1e-08, 1e-10),  # 1.3e-12 2.4e-12
    "element": (1e-08, 2e-09),  # 3.7e-11 2.4e-11
    "Tanh": (1e-08, 1e-09),  # 2.7e-11 1.4e-10
    "Exp": (1e-08, 5e-09),  # 1.4e-10 6.4e-10
    "Log": (1e-08, 1e-08),  # 1.9e-10 7.4e-11
    "Sqrt": (1e-08, 1e-09),  # 2.8e-11 2.5e-10
    "Relu": (1e-08, 1e-09),  # 1.8e-11 2.8e-11
    "Gelu": (1e-08, 2e-09),  # 3.8e-11 3.8e-10
    "Silu": (1e-08, 1e-09),  # 2.3e-11 2.8e-10
    "Sigmoid": (1e-08, 2e-09),  # 3.9e-11 3.5e-10
    "Softplus": (1e-08, 5e-10),  # 1.6e-11 2.6e-09
    "Abs": (1e-08, 5e-10),  # 9.9e-12 9.7e-11
    "Sin": (1e-08, 5e-10),  # 1.4e-11 4.8e-11
    "Cos": (1e-08, 1e-09),  # 3.9e-11 3.6e-10
    "Dropout": (1e-08, 5e-09),  # 6.9e-11 6.2e-11
    "Sum": (1e-08, 1e-10),  # 0.0e+00 0.0e+00
    "Mean": (1e-08, 1e-10),  # 2.4e-12 2.9e-11
    "Max": (1e-08, 1e-10),  # 0.0e+00 0.0e+00
    "SumRows": (1e-08, 5e-10),  # 1.3e-11 5.9e-11
    "SumRows-3d": (1e-08, 1e-09),  # 3.1e-11 5.3e-10
    "Softmax": (1e-08, 5e-10),  # 1.5e-11 3.3e-09
    "Softmax-3d": (1e-08, 5e-10),  # 1.5e-11 1.5e-09
    "CausalMask": (1e-08, 5e-10),  # 9.9e-12 9.9e-11
    "CausalMask-3d": (1e-08, 5e-10),  # 1.2e-11 2.9e-10
    "LayerNorm": (1e-08, 5e-09),  # 7.2e-11 9.1e-10
    "LayerNorm-3d": (1e-08, 5e-09),  # 8.1e-11 5.9e-10
    "LayerNorm-x-only": (1e-08, 1e-08),  # 2.2e-10 5.7e-10
    "RmsNorm": (1e-08, 1e-08),  # 2.0e-10 5.3e-10
    "CrossEntropy": (1e-08, 1e-09),  # 2.5e-11 3.9e-09
    "CrossEntropy-3d": (1e-08, 2e-09),  # 4.2e-11 5.5e-09
    "CrossEntropy-vector": (1e-08, 5e-10),  # 1.3e-11 2.4e-10
    "Gather": (1e-08, 2e-09),  # 6.6e-11 1.4e-10
    "Gather-one-id": (1e-08, 2e-10),  # 5.5e-12 9.0e-12
    "Dot": (1e-08, 2e-09),  # 5.7e-11 1.7e-10
    "Outer": (1e-08, 1e-09),  # 3.3e-11 3.7e-11
    "Conv2d-chw": (1e-08, 2e-08),  # 5.1e-10 8.8e-09
    "Conv2d-bchw": (1e-08, 2e-08),  # 4.5e-10 6.4e-09
    "MaxPool2d": (1e-08, 5e-10),  # 1.6e-11 4.9e-11
    "MaxPool2d-4d": (1e-08, 5e-10),  # 1.0e-11 1.4e-10
    "AvgPool2d": (1e-08, 1e-09),  # 1.9e-11 1.7e-10
    "tied-in-expression": (1e-08, 2e-09),  # 6.6e-11 6.4e-10
    "tied-through-statements": (1e-08, 1e-08),  # 2.6e-10 7.5e-11
    "tied-embedding": (1e-08, 1e-08),  # 1.8e-10 9.9e-10
    "computed-scalars": (1e-08, 1e-09),  # 1.8e-11 3.6e-11
    "f32-matmul-Tanh": (1e-03, 2e-03),  # 1.7e-04 5.6e-04
    "f32-Softmax": (1e-03, 2e-04),  # 1.9e-05 3.4e-03
    "f32-LayerNorm": (1e-03, 1e-03),  # 6.9e-05 1.7e-04
    "f32-into-f64": (1e-03, 5e-04),  # 4.8e-05 4.6e-04
}


def run_case(case: Case, tmp_path: Path) -> list[tuple[str, int, float, float]]:
    seed = zlib.crc32(case.id.encode()) % 100000
    text = program(case, seed)
    result = run(build_text(tmp_path, text, name=f"grad_{case.id.replace('-', '_')}.mica"))
    assert result.returncode == 0, f"{case.id} failed:\n{result.stderr}\n--- program ---\n{text}"
    rows = []
    for line in result.stdout.splitlines():
        tag, name, k, g, d = line.split()
        assert tag == "g"
        rows.append((name, int(k), float(g), float(d)))
    expected = sum(count(shape) for shape, _ in case.inputs.values())
    assert len(rows) == expected, f"{case.id}: {len(rows)} lines for {expected} elements"
    return rows


def errors(rows) -> tuple[float, float]:
    worst_abs = max(abs(g - d) for _, _, g, d in rows)
    rel = [abs(g - d) / abs(d) for _, _, g, d in rows if abs(d) >= 1e-3]
    return worst_abs, max(rel, default=0.0)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_gradient_matches_central_differences(case: Case, tmp_path: Path) -> None:
    rtol, atol = TOLERANCES[case.id]
    rows = run_case(case, tmp_path)
    bad = [(n, k, g, d) for n, k, g, d in rows if not abs(g - d) <= atol + rtol * abs(d)]
    assert not bad, f"{case.id}: gradient and central difference disagree (rtol {rtol}, atol {atol}):\n" + "\n".join(
        f"  {n}[{k}]: gradient {g!r}, difference {d!r}" for n, k, g, d in bad)
    for name in case.inputs:  # not vacuous: the weighting reaches every input
        assert any(abs(g) > 1e-3 for n, _, g, _ in rows if n == name), f"{case.id}: {name}'s gradient is all zero"


# Compiler bugs met while writing this file, each as its smallest program, kept as
# regression tests now that they are fixed.
COMPILER_BUGS = {
    # The plain instance of a routine declared its tracked float64 result as `= 0`, which C rejects.
    "tracked-scalar-result-outside-a-window": ("""
program TrackedScalarResult;
var
    x : tracked vector[2] of float64;
    y : float64;

function Loss(x : tracked vector[2] of float64) : tracked float64;
begin
    result := Sum(x);
end;

begin
    x := [1.0, 2.0];
    y := Loss(x);
    WriteLn(y);
end.
""", "3.0\n"),
    # float64(x) of a tracked value was computed plainly inside a window: x's gradient came out 0.
    "explicit-conversion-is-not-recorded": ("""
program ConvertWindow;
var
    x : tracked vector[2] of float32;
    y : tracked vector[2] of float64;
    l : tracked float64;
begin
    x := [1.0, 2.0];
    tape
        y := float64(x);
        l := Dot(y, y);
    end;
    Backward(l);
    WriteLn(Gradient(x));
end.
""", "2.0 4.0\n"),
    # A plain value assigned to a routine's tracked result in its recording instance was an
    # internal error, because there `result` is a mica_node *.
    "plain-value-into-a-tracked-result": ("""
program PlainIntoTrackedResult;
var
    x : tracked vector[2] of float64;
    l : tracked float64;

function F(x : tracked vector[2] of float64) : tracked vector[2] of float64;
begin
    result := [1.0, 2.0];
end;

begin
    x := [1.0, 2.0];
    tape
        l := Sum(F(x));
    end;
    WriteLn(l);
end.
""", "3.0\n"),
}


@pytest.mark.parametrize("bug", list(COMPILER_BUGS))
def test_compiler_bug_reproducer(bug: str, tmp_path: Path) -> None:
    text, expected = COMPILER_BUGS[bug]
    assert run(build_text(tmp_path, text)).stdout == expected


if __name__ == "__main__":  # the measured table
    import tempfile

    print(f"{'case':34} {'max |g-d|':>11} {'max rel':>11}   tolerance (rtol, atol)")
    with tempfile.TemporaryDirectory() as work:
        for case in CASES:
            try:
                worst_abs, worst_rel = errors(run_case(case, Path(work)))
                print(f"{case.id:34} {worst_abs:11.2e} {worst_rel:11.2e}   {TOLERANCES.get(case.id)}")
            except Exception as failure:  # noqa: BLE001 - report and go on
                print(f"{case.id:34} FAILED: {str(failure).splitlines()[0]}")
