"""Quantize, Dequantize and QuantizeRows against numpy, on random and edge inputs.

numpy is the reference for LANGUAGE.md section 10's rule: q = clip(rint(x / scale)
+ zero) with the division in x's float type and rint's halves to even, and
(float(q - zero)) * scale back. Each case is one generated program whose inputs
are seeded; its output must be numpy's, element for element, at the checked and
fast tiers and on aarch64 under qemu. The integer products' kernels
(runtime_c/mica_integer_gemm.c) are held to their reference loops by
tests/c/integer_gemm_check.c, once per kernel this CPU (or qemu) has.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from helpers import build_harness, build_text, run

from micatool.compile import compile_program, load_source

RANGES = {"int8": (-128, 127), "uint8": (0, 255)}
NUMPY = {"float32": np.float32, "float64": np.float64, "int8": np.int8, "uint8": np.uint8}


def inputs(dtype, n: int, scale: float, seed: int) -> np.ndarray:
    """Random values at every scale of the range, then exact halves (ties) and values far past it."""
    rng = np.random.default_rng(seed)
    t = NUMPY[dtype]
    x = (rng.standard_normal(n) * 40 * scale).astype(t)
    ties = (np.arange(-6, 6) + 0.5) * scale
    x[:12] = ties.astype(t)
    x[12:16] = np.array([1e6, -1e6, 0.0, -0.0]) * scale
    return x


def literal(values) -> str:
    """A Mica vector literal that gives these exact values (each float's exact float64 decimal)."""
    return "[" + ", ".join(repr(float(v)) for v in values) + "]"


def program(dtype: str, qtype: str, x: np.ndarray, scale: float, zero: int, w: np.ndarray) -> str:
    rows, cols = w.shape
    wrows = ", ".join(literal(row) for row in w)
    return f"""program Quantized;
var
    x : vector[{len(x)}] of {dtype};
    q : vector[{len(x)}] of {qtype};
    scale : {dtype};
    w : matrix[{rows}, {cols}] of {dtype};
    wq : matrix[{rows}, {cols}] of int8;
    s : vector[{rows}] of {dtype};
begin
    x := {literal(x)};
    scale := {float(scale)!r};
    Quantize(x, scale, {zero}, address q);
    WriteLn(q);
    WriteLn(Dequantize(q, scale, {zero}));
    w := [{wrows}];
    QuantizeRows(w, address wq, address s);
    WriteLn(wq);
    WriteLn(s);
end.
"""


def expected(dtype: str, qtype: str, x: np.ndarray, scale: float, zero: int, w: np.ndarray) -> list[list[float]]:
    t = NUMPY[dtype]
    low, high = RANGES[qtype]
    q = np.clip(np.rint(x / t(scale)) + zero, low, high).astype(np.int64)
    back = (q - zero).astype(t) * t(scale)
    scales = (np.abs(w).max(axis=1) / t(127)).astype(t)
    safe = np.where(scales == 0, t(1), scales)
    wq = np.where(scales[:, None] == 0, 0, np.clip(np.rint(w / safe[:, None]), -127, 127)).astype(np.int64)
    return [list(q), list(back), list(wq.ravel()), list(scales)]


def at_each_level(binary: Path) -> list[str]:
    """The binary's output with QuantizeRows' and the rescaling's kernels capped at
    each x86_64 instruction set (MICA_ISA): the same bits are required of all."""
    return [subprocess.run([str(binary)], capture_output=True, text=True, timeout=120,
                           env={"MICA_ISA": isa, "PATH": "/usr/bin:/bin"}).stdout for isa in ("sse2", "avx2", "avx512")]


def printed(line: str, dtype: str) -> list:
    return [NUMPY[dtype](float(word)) for word in line.split()]


CASES = [("float32", "int8", 0.05, 0), ("float32", "uint8", 0.02, 128), ("float64", "int8", 0.125, -3),
         ("float64", "uint8", 1.0 / 3.0, 7)]


@pytest.mark.parametrize("dtype, qtype, scale, zero", CASES)
def test_quantize_agrees_with_numpy(dtype, qtype, scale, zero, tmp_path, aarch64):
    t = NUMPY[dtype]
    x = inputs(dtype, 64, scale, seed=len(dtype) + zero)
    w = (np.random.default_rng(5).standard_normal((4, 37)) * 3).astype(t)  # past every vector width
    w[1] = 0  # a row of zeros: scale 0, zeros
    w[2, 3] = -w[2].__abs__().max() * 2  # the row's largest magnitude is negative
    want = expected(dtype, qtype, x, scale, zero, w)
    text = program(dtype, qtype, x, scale, zero, w)
    outputs = [run(build_text(tmp_path, text, tier=tier)).stdout for tier in ("checked", "fast")]
    outputs.append(run(build_text(tmp_path, text, target="aarch64-linux"), target="aarch64-linux").stdout)
    outputs += at_each_level(build_text(tmp_path, text, tier="fast"))
    assert len(set(outputs)) == 1
    lines = outputs[0].splitlines()
    assert [int(v) for v in lines[0].split()] == want[0]
    assert printed(lines[1], dtype) == [t(v) for v in want[1]]
    assert [int(v) for v in lines[2].split()] == want[2]
    assert printed(lines[3], dtype) == [t(v) for v in want[3]]
    low, high = RANGES[qtype]
    assert low in want[0] and high in want[0]  # the inputs reached both ends of the range


def test_a_zero_scale_traps_at_its_line(tmp_path):
    text = ("program ZeroScale;\nvar x : vector[2] of float32; q : vector[2] of int8;\nbegin\n"
            "    WriteLn('before');\n    Quantize(x, 0.0, 0, address q);\nend.\n")
    result = run(build_text(tmp_path, text))
    assert result.returncode == 1
    assert result.stdout == "before\n"
    assert result.stderr == "prog.mica:5: Quantize with scale 0: the scale must be a nonzero number\n"


def test_an_integer_product_bound_too_deep_traps_at_its_line(tmp_path):
    """A routine's depth is a shape variable, so the bound is checked per call: 3 runs, 65537 traps."""
    text = ("program Deep;\n"
            "function Product(a : matrix[1, K] of int8; b : matrix[K, 1] of int8) : matrix[1, 1] of int32;\n"
            "begin\n    result := a * b;\nend;\n"
            "var a : matrix[1, 3] of int8; b : matrix[3, 1] of int8;\n"
            "    wide : matrix[1, 65537] of int8; deep : matrix[65537, 1] of int8;\n"
            "begin\n    a[0, 2] := 5; b[2, 0] := -7;\n    WriteLn(Product(a, b));\n"
            "    WriteLn(Product(wide, deep));\nend.\n")
    result = run(build_text(tmp_path, text))
    assert (result.returncode, result.stdout) == (1, "-35\n")
    assert result.stderr == ("prog.mica:4: an integer product sums at most 65536 products exactly in int32; "
                             "this one sums 65537\n")


PRODUCTS = [("int8", (5, 7), (7, 3)), ("uint8", (1, 17), (17, 1)), ("int8", (9, 13), (13,)), ("uint8", (4, 33), (33,)),
            ("uint8", (3, 65), (65, 6))]


def integer_literal(a: np.ndarray) -> str:
    if a.ndim == 1:
        return "[" + ", ".join(str(int(v)) for v in a) + "]"
    return "[" + ", ".join(integer_literal(row) for row in a) + "]"


@pytest.mark.parametrize("left, a_shape, b_shape", PRODUCTS, ids=lambda v: str(v))
def test_integer_products_are_exact_in_int32(left, a_shape, b_shape, tmp_path, aarch64):
    """int8 or uint8 times int8 against numpy's int32 product, the extremes of both ranges included."""
    rng = np.random.default_rng(sum(a_shape) + sum(b_shape))
    low, high = RANGES[left]
    a = rng.integers(low, high + 1, a_shape)
    b = rng.integers(-128, 128, b_shape)
    a.flat[0], b.flat[0] = (high, -128)  # the largest magnitude product
    b_type = "vector" if len(b_shape) == 1 else "matrix"
    text = f"""program IntegerProduct;
var
    a : matrix[{a_shape[0]}, {a_shape[1]}] of {left};
    b : {b_type}[{", ".join(map(str, b_shape))}] of int8;
begin
    a := {integer_literal(a)};
    b := {integer_literal(b)};
    WriteLn(a * b);
end.
"""
    want = " ".join(str(int(v)) for v in (a.astype(np.int64) @ b.astype(np.int64)).ravel()) + "\n"
    assert run(build_text(tmp_path, text)).stdout == want
    assert run(build_text(tmp_path, text, target="aarch64-linux"), target="aarch64-linux").stdout == want


# ------------------------------------------------------------ the integer GEMM's kernels

HARNESS = ["tests/c/integer_gemm_check.c", "runtime_c/mica_integer_gemm.c", "runtime_c/mica_integer_pack.c",
           "runtime_c/mica_cpu.c", "runtime_c/mica_threads.c"]
HARNESS_LINE = re.compile(r"isa (\w+) cases (\d+) mismatches (\d+) hash ([0-9a-f]{16})")
X86_KERNELS = ["sse2", "avx2", "avxvnni", "avx512vnni"]
ARM_KERNELS = ["neon", "dotprod"]


@pytest.fixture(scope="module")
def integer_harness(tmp_path_factory) -> dict[str, Path]:
    """tests/c/integer_gemm_check.c with the integer GEMM, for x86_64 and aarch64 at -O2."""
    out = tmp_path_factory.mktemp("integer_gemm")
    built = {arch: build_harness(out, "integer_gemm_check", HARNESS, arch, "-ffp-contract=off")
             for arch in ("x86_64", "aarch64")}
    # a cache of 4 KB: most operands pass the cap and go through the spare pack
    built["capped"] = build_harness(out, "integer_gemm_capped", HARNESS, "x86_64", "-DCACHE_BYTES=4096")
    return built


def harness_run(exe: Path, kernel: str, qemu: str | None = None) -> tuple[str, str]:
    env = {"MICA_INTEGER_GEMM_ISA": kernel, "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([qemu, str(exe)] if qemu else [str(exe)], env=env, capture_output=True, text=True,
                          timeout=300)
    m = HARNESS_LINE.search(proc.stdout)
    assert m, f"no result line from {exe.name}: {proc.stdout}{proc.stderr}"
    assert int(m[3]) == 0 and proc.returncode == 0, f"{exe.name} kernel {m[1]}:\n{proc.stderr}"
    return m[1], m[4]


def test_every_x86_64_integer_kernel_equals_the_reference(integer_harness):
    """Each kernel this CPU has (capped one by one), against the reference loops; all hash alike."""
    results = {kernel: harness_run(integer_harness["x86_64"], kernel) for kernel in X86_KERNELS}
    ran = {isa for isa, _ in results.values()}
    assert "sse2" in ran and len({h for _, h in results.values()}) == 1, results


def test_operands_past_the_pack_cache_cap_give_the_same_products(integer_harness):
    """Over a 4 KB cap every larger b is packed afresh into the spare: the same bits as when kept."""
    for kernel in ("sse2", "avx512vnni"):
        assert harness_run(integer_harness["capped"], kernel) == harness_run(integer_harness["x86_64"], kernel)


@pytest.mark.qemu
def test_every_aarch64_integer_kernel_equals_the_reference(integer_harness, aarch64):
    results = {kernel: harness_run(integer_harness["aarch64"], kernel, aarch64) for kernel in ARM_KERNELS}
    x86 = harness_run(integer_harness["x86_64"], "sse2")[1]
    assert {isa for isa, _ in results.values()} <= set(ARM_KERNELS)
    assert {h for _, h in results.values()} == {x86}, results


# ------------------------------------------------------------ the rescaling of an integer product

def test_the_fused_rescaling_is_bit_for_bit_the_three_ops(tmp_path, aarch64):
    """Mul(float32(p), Outer(r, c)) lowers to one pass (either order); written through
    variables it is the three ops. Every digit agrees with numpy's float32, whose
    conversion rounds past 2^24 and whose r * c rounds before the product."""
    rng = np.random.default_rng(15)
    p = rng.integers(-2**31, 2**31, (5, 19))
    p[0, :4] = [2**24 + 1, -(2**24 + 3), 2**31 - 1, -2**31]
    r = (rng.standard_normal(5) * 1e-3).astype(np.float32)
    c = (rng.standard_normal(19) * 1e-4).astype(np.float32)
    text = f"""program Rescale;
var
    p : matrix[5, 19] of int32;
    r : vector[5] of float32;
    c : vector[19] of float32;
    o, f : matrix[5, 19] of float32;
begin
    p := {integer_literal(p)};
    r := {literal(r)};
    c := {literal(c)};
    WriteLn(Mul(float32(p), Outer(r, c)));
    WriteLn(Mul(Outer(r, c), float32(p)));
    o := Outer(r, c);
    f := float32(p);
    WriteLn(Mul(f, o));
end.
"""
    source = tmp_path / "rescale.mica"
    source.write_text(text)
    c_text = compile_program(load_source(str(source))).c
    assert c_text.count("mica_rescale_i32_f32(") == 2 and c_text.count("mica_outer_f32(") == 1
    outputs = [run(build_text(tmp_path, text, tier=tier)).stdout for tier in ("checked", "fast")]
    outputs.append(run(build_text(tmp_path, text, target="aarch64-linux"), target="aarch64-linux").stdout)
    outputs += at_each_level(build_text(tmp_path, text, tier="fast"))
    assert len(set(outputs)) == 1
    lines = outputs[0].splitlines()
    assert lines[0] == lines[1] == lines[2]
    want = p.astype(np.float32) * (r[:, None] * c[None, :])
    assert printed(lines[0], "float32") == list(want.ravel())
