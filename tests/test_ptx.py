"""test_ptx.py: Mica's PTX kernels (ptx/*.ptx.j2, micatool.compile.ptx), no GPU needed.

  - ptxas: every kernel, f32 and f64, in one module, assembles for sm_75,
    sm_80 and sm_90 (one ptxas run per target). ptxas is /usr/local/bin/ptxas
    or the one on PATH, else the PyPI wheel nvidia-cuda-nvcc's; the test ids
    say which (and its version); without any the test skips saying so.
  - the renderer: one header, the device functions a kernel needs and no
    others, loud errors for unknown names and for kernels that break the
    rules of docs/gpu.md; the C runtime's launch signatures
    (runtime_c/mica_kernel_signatures.h) are what the templates give now.
  - bits: every kernel runs, on small random inputs (special values
    included), through tests/ptx_interpreter.py and through the C runtime
    (tests/c/ptx_harness.c, built with zig), and every buffer must come back
    with the same bits. A nan may differ in its payload (outside the
    contract, docs/determinism.md) except from the elementary functions,
    which answer the canonical nan on both sides.
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import ptx_interpreter as pi
import test_math
from helpers import find_ptxas
from micatool.compile import ptx
from micatool.compile.ops.element_functions import FUNCTIONS

BY_C = {f.c: f for f in FUNCTIONS}

ROOT = Path(__file__).resolve().parents[1]
RUNTIME = ROOT / "runtime_c"
HARNESS = ROOT / "tests" / "c" / "ptx_harness.c"
TARGETS = ("sm_75", "sm_80", "sm_90")
SEED = 20250907
DTYPES = {"f32": np.float32, "f64": np.float64}


# ------------------------------------------------------------ ptxas




@pytest.fixture(scope="module")
def module_text() -> str:
    return ptx.render(ptx.KERNELS)


@pytest.mark.parametrize("target", TARGETS)
def test_ptxas_assembles_every_kernel(target, module_text, tmp_path):
    ptxas, origin = find_ptxas()
    if ptxas is None:
        pytest.skip(origin)
    print(f"ptxas: {ptxas} ({origin}), {len(ptx.KERNELS)} kernels, {target}")
    source = tmp_path / "all.ptx"
    source.write_text(module_text)
    done = subprocess.run([ptxas, f"-arch={target}", "-v", str(source), "-o", str(tmp_path / "all.cubin")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    compiled = set(re.findall(r"Compiling entry function '(\w+)'", done.stderr))
    assert compiled == set(ptx.KERNELS)


# ------------------------------------------------------------ the renderer


def test_every_family_and_type_is_rendered():
    families = {(k.family, k.dtype) for k in ptx.KERNELS.values()}
    assert families == {(f, t) for f in ptx.FAMILIES for t in ptx.DTYPES} | set(ptx.INTEGER_FAMILIES.items())
    for name, k in ptx.KERNELS.items():
        assert name.startswith("mica_") and name.endswith("_" + k.dtype) or name.startswith("mica_convert_") \
            or name.startswith("mica_matmul_i32_") and k.family in ptx.INTEGER_FAMILIES


def test_render_writes_one_header_and_only_the_functions_needed():
    text = ptx.render(["mica_add_f32", "mica_each_gelu_f64", "mica_gelu_back_f64", "mica_add_f32"])
    assert text.count(".version 7.0") == 1 and text.startswith("//")
    assert text.count(".target sm_70") == 1 and text.count(".address_size 64") == 1
    assert re.findall(r"^\.func .*?(mica_\w+)\(", text, re.M) == ["mica_gelu_f64", "mica_gelu_grad_f64"]
    assert re.findall(r"^\.visible \.entry (\w+)", text, re.M) == ["mica_add_f32", "mica_each_gelu_f64",
                                                                   "mica_gelu_back_f64"]
    assert ".func" not in ptx.render(["mica_add_f64"])


def test_unknown_kernels_are_named():
    with pytest.raises(ptx.PtxError, match="mica_frobnicate_f32, mica_add_f16"):
        ptx.render(["mica_add_f32", "mica_frobnicate_f32", "mica_add_f16"])


def test_launch_extents_are_arithmetic_read_not_evaluated():
    conv = ptx.KERNELS["mica_conv2d_f32"].threads
    assert conv.of({"batch": 2, "cout": 3, "h": 5, "kh": 3, "w": 6, "kw": 2}) == 2 * 3 * 3 * 5
    assert ptx.KERNELS["mica_gemm_f64"].grid_y.of({"batch": 7}) == 7
    names = {"n", "rows"}
    assert ptx.parse_extent("(n + 255) // 256 - rows", names).of({"n": 300, "rows": 1}) == 1
    for text in ("__import__('os').system('true')", "n ** 2", "n / 2", "cols", "1.5", "n; n", "-n"):
        with pytest.raises(ptx.PtxError, match="not integer arithmetic"):
            ptx.parse_extent(text, names)
    with pytest.raises(ptx.PtxError, match="needs n as a number"):
        ptx.parse_extent("n", names).of({"n": "mica_t1.rows"})


def test_signatures_are_the_parameters():
    assert ptx.signature(ptx.KERNELS["mica_scale_back_f32"]) == "ppfi"
    assert ptx.signature(ptx.KERNELS["mica_scale_back_f64"]) == "ppdi"
    assert ptx.signature(ptx.KERNELS["mica_gemm_f32"]) == "uuiiipipipiuiii"
    assert '{"mica_convert_f32",' in ptx.signatures_header()  # mica_convert_f32_f64: f64 only


def test_the_runtime_header_of_signatures_is_generated():
    """The device tape launches by runtime_c/mica_kernel_signatures.h, so it must
    be what the templates give now, and hold every kernel the tape names."""
    header = RUNTIME / "mica_kernel_signatures.h"
    if header.read_text() != ptx.signatures_header():
        pytest.fail(f"{header.relative_to(ROOT)} is not what ptx/*.ptx.j2 give now: run `{ptx.SIGNATURES_COMMAND}`")
    tape = re.sub(r"/\*.*?\*/|//[^\n]*", "", (RUNTIME / "mica_gpu_tape.c").read_text(), flags=re.S)
    named = set(re.findall(r'"(mica_\w+)"', tape))
    assert len(named) > 40
    assert {base for base in named if not {f"{base}_f32", f"{base}_f64"} & ptx.KERNELS.keys()} == set()


@pytest.mark.parametrize("line, why", [
    ("add.f32 %a, %b, %c;", "without .rn"),
    ("mul.rn.ftz.f32 %a, %b, %c;", ".ftz"),
    ("fma.rn.f64 %a, %b, %c, %d;", "fused"),
    ("mad.rn.f32 %a, %b, %c, %d;", "mad"),
    ("div.approx.f32 %a, %b, %c;", ".approx"),
    ("atom.global.add.f32 %a, [%b], %c;", "atomic"),
    ("ex2.approx.f32 %a, %b;", ".approx"),
    ("cvt.f32.f64 %a, %b;", "without .rn"),
])
def test_rules_are_enforced(line, why):
    with pytest.raises(ptx.PtxError, match=re.escape(why)):
        ptx._check("mica_x_f32", "    " + line + "\n")


def test_a_dot_products_kernel_may_fuse_and_no_other():
    ptx._check("mica_gemm_f32", "    fma.rn.f32 %a, %b, %c, %a;\n", fused=True)
    with pytest.raises(ptx.PtxError, match="mad"):
        ptx._check("mica_gemm_f32", "    mad.rn.f32 %a, %b, %c, %a;\n", fused=True)
    fused = {name for name, k in ptx.KERNELS.items() if k.text.split("\n", 1)[0].endswith("; fused=yes")}
    assert {re.sub(r"_f(32|64)$", "", name) for name in fused} == {
        "mica_gemm", "mica_dot", "mica_softmax_back_rows", "mica_conv2d", "mica_conv2d_back_x", "mica_conv2d_back_k"}


def test_rendered_kernels_keep_the_rules(module_text):
    body = "\n".join(line for line in module_text.splitlines() if not line.lstrip().startswith("//"))
    assert not re.search(r"\.(ftz|approx)\b|\b(mad|atom|red)\.", body)
    assert not re.search(r"\b(add|sub|mul|div|sqrt)\.f(32|64)\b", body)
    assert set(re.findall(r"\bfma\.\w+\.\w+", body)) == {"fma.rn.f32", "fma.rn.f64"}
    for kernel in re.split(r"(?=^// mica-kernel )", module_text, flags=re.M)[1:]:
        if "fma." in kernel:
            assert "; fused=yes" in kernel.split("\n", 1)[0], kernel.split("\n", 1)[0]


def test_literals_are_the_c_literals():
    assert ptx.literal("f32", "0.55") == "0f3F0CCCCD"  # 0.55f
    assert ptx.literal("f64", "0.55") == "0d3FE199999999999A"
    assert ptx.literal("f32", "0x1.62e4p-1") == "0f3F317200"
    assert ptx.literal("f64", "-0x1.718432a1b0e26p-35") == "0dBDC718432A1B0E26"
    assert ptx.cast_literal("f32", "1e-5") == f"0f{int(np.float32(1e-5).view(np.uint32)):08X}"
    assert ptx.literal("f32", "-inf") == "0fFF800000" and ptx.literal("f64", "nan") == "0d7FF8000000000000"
    with pytest.raises(ptx.PtxError):
        ptx.parse_params("f32", "out n:q")


@pytest.mark.parametrize("body, why", [
    ("{{ fail('no instruction for frobnicate') }}", "no instruction for frobnicate"),
    ("    mov.{{ T }} %x, {{ no_such_constant }};", "no_such_constant"),
])
def test_a_kernel_that_cannot_render_is_named(body, why, tmp_path, monkeypatch):
    shutil.copy(ptx.template_dir() / "common.ptx.j2", tmp_path)
    (tmp_path / "broken.ptx.j2").write_text(
        "{% import 'common.ptx.j2' as m with context %}\n"
        "{% call m.kernel('fine', 'out n:i', 'n', 'renders') %}{% endcall %}\n"
        "{% call m.kernel('oops', 'out n:i', 'n', 'does not') %}\n" + body + "\n{% endcall %}\n")
    monkeypatch.setattr(ptx, "template_dir", lambda: tmp_path)
    ptx._environment.cache_clear()
    try:
        with pytest.raises(ptx.PtxError, match=r"broken\.ptx\.j2 \(f64\), in mica_oops_f64: .*" + why):
            ptx.render_template("broken", "f64")
    finally:
        ptx._environment.cache_clear()


def test_interpreter_refuses_what_it_does_not_know():
    head = ".version 7.0\n.target sm_70\n.address_size 64\n"
    for body, word in [
        ("fma.rz.f32 %a, %a, %a, %a;", "fma"),
        ("add.f32 %a, %a, %a;", "add"),
        ("sin.approx.f32 %a, %a;", "sin"),
        ("add.rn.ftz.f32 %a, %a, %a;", "ftz"),
    ]:
        text = head + ".visible .entry k()\n{\n    .reg .f32 %a;\n    " + body + "\n    ret;\n}\n"
        with pytest.raises(pi.InterpreterError, match=word):
            pi.Module(text)


def one_thread(text: str, size: int) -> bytes:
    """The `size` bytes kernel k of the module text writes to its one parameter, run by one thread."""
    memory = pi.Memory()
    out = memory.alloc(np.zeros(size, np.uint8))
    pi.launch(pi.Module(text), "k", [out], memory, block=1)
    return memory.array(out, np.uint8).tobytes()


def test_interpreter_semantics():
    """The oracle itself: scoping, subnormals, round-to-nearest-even, integer division, nan tests."""
    text = """.version 7.0
.target sm_70
.address_size 64
.visible .entry k(.param .u64 out)
{
    .reg .u64 %o;
    .reg .f32 %x;
    .reg .s64 %q, %r;
    .reg .u32 %b;
    .reg .pred %p;
    ld.param.u64 %o, [out];
    cvta.to.global.u64 %o, %o;
    mov.f32 %x, 0f00000001;
    mul.rn.f32 %x, %x, 0f3F000000;
    st.global.f32 [%o], %x;
    {
    .reg .f32 %x;
    mov.f32 %x, 0f00800000;
    div.rn.f32 %x, %x, 0f40000000;
    st.global.f32 [%o+4], %x;
    }
    st.global.f32 [%o+8], %x;
    mov.s64 %q, -7;
    div.s64 %r, %q, 2;
    st.global.s64 [%o+16], %r;
    rem.s64 %r, %q, 2;
    st.global.s64 [%o+24], %r;
    mov.s64 %q, 1152921573326323713;
    cvt.rn.f32.s64 %x, %q;
    st.global.f32 [%o+32], %x;
    setp.ne.f32 %p, 0f7FC00000, 0f3F800000;
    selp.u32 %b, 1, 0, %p;
    st.global.u32 [%o+36], %b;
    setp.neu.f32 %p, 0f7FC00000, 0f3F800000;
    selp.u32 %b, 1, 0, %p;
    st.global.u32 [%o+40], %b;
    mov.f32 %x, 0f3F800800;
    fma.rn.f32 %x, %x, %x, 0fBF801000;
    st.global.f32 [%o+44], %x;
    mov.f32 %x, 0f15F79688;
    fma.rn.f32 %x, %x, 0f95F79688, 0f00000000;
    st.global.f32 [%o+48], %x;
    ret;
}
"""
    raw = one_thread(text, 52)
    f32 = np.frombuffer(raw[:12], np.uint32)
    assert list(f32) == [0, 0x00400000, 0]  # half the least subnormal rounds to even (0); the inner %x is its own
    assert list(np.frombuffer(raw[16:32], np.int64)) == [-3, -1]  # truncating division
    assert np.frombuffer(raw[32:36], np.float32)[0] == np.float32(np.int64(2**60 + 2**36 + 1))  # rounded once
    assert float(np.frombuffer(raw[32:36], np.float32)[0]) == 2**60 + 2**37
    assert list(np.frombuffer(raw[36:44], np.uint32)) == [0, 1]  # ne is ordered, neu is not
    # fma rounds once: (1 + 2^-12)^2 - (1 + 2^-11) is 2^-24 exactly (mul.rn, then add.rn, would give 0);
    # -(1e-25)^2 underflows to -0, which keeps the exact result's sign
    assert np.frombuffer(raw[44:48], np.float32)[0] == np.float32(2.0**-24)
    assert np.frombuffer(raw[48:52], np.uint32)[0] == 0x80000000



def test_interpreter_integer_semantics():
    """The oracle's 64-bit integer work, as sin's and cos's Payne-Hanek reduction uses it: a .const table read
    at its address, mul.hi/lo.u64, not, clz (64 for zero), xor of predicates."""
    text = """.version 7.0
.target sm_70
.address_size 64
.const .align 8 .u64 table[3] = { 0x0, 0xfedcba9876543210, 7 };
.visible .entry k(.param .u64 out)
{
    .reg .u64 %o, %t, %a, %b;
    .reg .u32 %z;
    .reg .pred %p, %q;
    ld.param.u64 %o, [out];
    cvta.to.global.u64 %o, %o;
    mov.u64 %t, table;
    ld.const.u64 %a, [%t+8];
    ld.const.u64 %b, [table+16];
    mul.hi.u64 %t, %a, %a;
    st.global.u64 [%o], %t;
    mul.lo.u64 %t, %a, %a;
    st.global.u64 [%o+8], %t;
    not.b64 %t, %b;
    st.global.u64 [%o+16], %t;
    clz.b64 %z, %b;
    st.global.u32 [%o+24], %z;
    mov.u64 %t, 0;
    clz.b64 %z, %t;
    st.global.u32 [%o+28], %z;
    setp.eq.u64 %p, %b, 7;
    setp.eq.u64 %q, %b, 7;
    xor.pred %p, %p, %q;
    selp.u64 %t, 1, 2, %p;
    st.global.u64 [%o+32], %t;
    ret;
}
"""
    raw = one_thread(text, 40)
    a = 0xFEDCBA9876543210
    assert list(np.frombuffer(raw[:24], np.uint64)) == [(a * a) >> 64, (a * a) % 2**64, 2**64 - 8]
    assert list(np.frombuffer(raw[24:32], np.uint32)) == [61, 64]
    assert np.frombuffer(raw[32:40], np.uint64)[0] == 2  # true xor true is false
    with pytest.raises(pi.InterpreterError, match="outside every .const"):
        one_thread(text.replace("[table+16]", "[table+24]"), 40)


# ------------------------------------------------------------ cases


@dataclass
class Buf:
    data: np.ndarray


@dataclass
class Int:
    value: int


@dataclass
class Scalar:
    value: float


class Null:
    pass


@dataclass
class Case:
    kernel: str
    args: list
    grid_y: int = 1
    extra: list = field(default_factory=list)  # the harness's own trailing arguments
    strict_nan: bool = False  # nan answers must be the same bits (the elementary functions)
    note: str = ""


def wide(rng, n, dtype, spread=8):
    """Random values of both signs over about 2*spread binades, so sums depend on their order."""
    x = rng.standard_normal(n) * np.exp2(rng.uniform(-spread, spread, n))
    return x.astype(dtype)


def specials(dtype):
    t = np.dtype(dtype)
    tiny = np.finfo(t).smallest_subnormal
    return np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, tiny, -tiny, np.finfo(t).tiny,
                     np.finfo(t).max, -np.finfo(t).max, 3 * tiny], dtype=t)


def negative_nan(dtype):
    return np.array([0xFFF8000000000123 if dtype == np.float64 else 0xFFC00123],
                    dtype=np.uint64 if dtype == np.float64 else np.uint32).view(dtype)


EDGES = {  # exp's and log's documented edges (tests/test_math.py), as bits
    "f64": [0x40862E42FEFA39EF, 0x40862E42FEFA39F0, 0xC0874910D52D3051, 0xC0874910D52D3052, 0x0000000000000001],
    "f32": [0x42B17217, 0x42B17218, 0xC2CFF1B4, 0xC2CFF1B5, 0x00000001],
}


# pi to 578 bits (its first 144 hex digits after the point, Blowfish's P-array), so that k*pi/2 rounds once
PI_HEX = ("243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89"
          "452821E638D01377BE5466CF34E90C6CC0AC29B7C97C50DD3F84D5B5B54709179216D5D98979FB1B")
PI_OVER_2 = Fraction(3 * 16 ** len(PI_HEX) + int(PI_HEX, 16), 2 * 16 ** len(PI_HEX))
TRIG_EDGES = {  # the thresholds between sin's and cos's paths, and the cases docs/math.md pins
    "f64": ["0x1p-26", "0x1p-27", "0x1.921fb54442d18p-1", "0x1p20", "0x1.6c6cbc45dc8dep+5", "0x1.6ac5b262ca1ffp+849",
            "0x1.0f0cf064dd592p+73",
            # Payne-Hanek's r1 = l1 + h2 carries into r0 (about one double in 2^12), and the carry shows in
            # sin (the first three) or cos (the last three): found by search
            "0x1.b204e67257734p+321", "0x1.5a352d04fd30ep+890", "0x1.c03a2580cc05ep+889", "0x1.ed25720331f8ep+552",
            "0x1.f3bc0bf4031dbp+866", "0x1.a754b6006f352p+675"],
    "f32": ["0x1p-12", "0x1.921fb6p-1", "0x1p15", "0x1.f9cbe2p+7"],
}


def trig_points(rng, t: str) -> np.ndarray:
    """sin's and cos's own inputs, both signs: magnitudes spread over every binade up to the largest finite
    value (each Payne-Hanek window); the values nearest k*pi/2 and their neighbours, where the answer is
    tiny and shows the reduction's last bits (past 2^15 in float32, Payne-Hanek's); the thresholds between
    the paths and their neighbours; the closest double to a multiple of pi/2 below 2^20, Muller's worst
    case 6381956970095103 * 2^797 and 1e22 (float32: 252.898208, the closest float below 2^15)."""
    dtype = DTYPES[t]
    spread = np.exp2(rng.uniform(-30, 1023.99 if t == "f64" else 127.99, 60)).astype(dtype)
    k = np.concatenate([np.arange(1, 9), [29, 161, 2**20, 2**40], rng.integers(9, 2**21, 16)])
    near = [float(int(v) * PI_OVER_2) for v in k]
    x = np.array(near + [float.fromhex(e) for e in TRIG_EDGES[t]]).astype(dtype)
    up, down = np.nextafter(x, dtype(np.inf)), np.nextafter(x, dtype(0))
    x = np.concatenate([spread, x, up, down, np.nextafter(up, dtype(np.inf))])
    return np.concatenate([x, -x])


MATH_POINTS = {"sin": trig_points, "cos": trig_points}


def math_inputs(rng, fn, t, n=300):
    """Inputs of the elementwise function with C name fn: values of both signs
    over 2^-12..2^12 (past every threshold where a function changes path), and
    for a function of mica_math.h n more from its domain in the table (as
    tests/test_math.py draws them) and, for sin and cos, their own points. Then
    the special values, a negative nan and exp's and log's edges."""
    dtype = DTYPES[t]
    bits = 64 if t == "f64" else 32
    parts = [wide(rng, n, dtype, 12)]
    if fn in test_math.TABLE:
        parts.append(test_math.sample(rng, fn, bits, n))
    if fn in MATH_POINTS:
        parts.append(MATH_POINTS[fn](rng, t))
    x = np.concatenate(parts).astype(dtype)
    edges = np.array(EDGES[t], dtype=np.uint64 if t == "f64" else np.uint32).view(dtype)
    return np.concatenate([x, specials(dtype), negative_nan(dtype), edges])


class Gen:
    """Random arguments for one kernel: R(n, spread) values of the kernel's type."""

    def __init__(self, rng, t: str):
        self.rng, self.t, self.dt = rng, t, DTYPES[t]

    def R(self, n: int, spread: float = 4) -> np.ndarray:
        return wide(self.rng, n, self.dt, spread)

    def B(self, n: int, spread: float = 4) -> Buf:
        return Buf(self.R(n, spread))

    def positive(self, n: int, spread: float = 2) -> Buf:
        return Buf(np.abs(self.R(n, spread)))

    def with_specials(self, n: int) -> Buf:
        """n values, the first ones the special values (zeros, infinities, nans, subnormals)."""
        x = self.R(n)
        s = specials(self.dt)
        x[: len(s)] = s[:n]
        return Buf(x)

    def ids(self, n: int, below: int) -> Buf:
        return Buf(self.rng.integers(0, below, n).astype(np.int64))


def elementwise_cases(name: str, op: str, g: Gen) -> list[Case]:
    n, R, B, dt = 37, g.R, g.B, g.dt
    if op in ("add", "sub", "mul", "div"):
        a, b = R(n), R(n)
        a[:13], b[13:26] = specials(dt), specials(dt)
        return [Case(name, [B(n), Buf(a), Buf(b), Int(n)])]
    if op in ("scale", "divide", "shift"):
        return [Case(name, [B(n), g.with_specials(n), Scalar(dt(s)), Int(n)]) for s in (R(1)[0], 0.0, -np.inf)]
    if op == "rsub":
        return [Case(name, [B(n), Scalar(dt(s)), g.with_specials(n), Int(n)]) for s in (R(1)[0], np.inf)]
    if op in ("scale_at", "divide_at", "shift_at"):
        return [Case(name, [B(n), g.with_specials(n), Buf(np.array([s], dt)), Int(n)]) for s in (R(1)[0], 0.0, -np.inf)]
    if op == "rsub_at":
        return [Case(name, [B(n), Buf(np.array([s], dt)), g.with_specials(n), Int(n)]) for s in (R(1)[0], np.inf)]
    if op in ("neg", "accumulate", "deduct"):
        return [Case(name, [B(n), g.with_specials(n), Int(n)])]
    if op in ("add_rows", "sub_rows"):
        return [Case(name, [B(24), B(24), B(6), Int(4), Int(6)])]
    if op.startswith("each_"):
        fn = op[len("each_"):]
        x = math_inputs(g.rng, fn, g.t)
        # Mica's own functions answer the canonical nan; an instruction keeps a nan's payload
        return [Case(name, [B(len(x)), Buf(x), Int(len(x))], strict_nan=BY_C[fn].math is not None)]
    if op.endswith("_back") and op[: -len("_back")] in BY_C:
        x = math_inputs(g.rng, op[: -len("_back")], g.t)
        m = len(x)
        return [Case(name, [B(m), B(m), Buf(x), B(m, 1), Int(m)])]
    if op in ("dropout", "dropout_back"):  # masks that keep all, most and few elements
        cases = []
        for p in (0.0, 0.3, 0.96):
            key, first = (Int(int(v)) for v in g.rng.integers(-2**63, 2**63 - 1, 2, dtype=np.int64))
            mask = [key, first, Int(math.ceil(p * 2**53)), Scalar(dt(1 / (1 - p)))]
            cases.append(Case(name, [B(n), g.with_specials(n) if op == "dropout" else B(n), *mask, Int(n)]))
        return cases
    if op == "convert":
        other = np.float64 if g.t == "f32" else np.float32
        x = np.concatenate([wide(g.rng, 40, other, 60 if other == np.float64 else 20), specials(other)])
        if other == np.float64:  # past float32's range, into its subnormals, and halfway cases
            x = np.concatenate([x, [3.5e38, 3.4028235677973366e38, 1e-40, 1e-46, 1.0000000596046448, -1.0000000596046448]])
        return [Case(name, [B(len(x)), Buf(x.astype(other)), Int(len(x))])]
    if op in ("transpose", "causal_mask", "transpose_back", "causal_mask_back"):
        return [Case(name, [B(b * r * c), B(b * r * c), Int(b), Int(r), Int(c)]) for b, r, c in ((2, 3, 5), (1, 4, 4))]
    if op in ("mul_back", "div_back_a"):
        return [Case(name, [B(n), B(n), g.with_specials(n), Int(n)])]
    if op == "div_back_b":
        return [Case(name, [B(n), B(n), B(n), g.with_specials(n), Int(n)])]
    if op in ("scale_back", "divide_back"):
        return [Case(name, [B(n), B(n), Scalar(dt(s)), Int(n)]) for s in (R(1)[0], 0.0)]
    if op == "part_back":
        return [Case(name, [B(20), B(6), Int(7), Int(6)])]
    raise AssertionError(f"no test cases for {name}")


def reduction_cases(name: str, op: str, g: Gen) -> list[Case]:
    R, B = g.R, g.B
    if op == "pairwise":
        return [Case(name, [B(1), B(max(m * s, 1), 12), Int(m), Int(s)])
                for m, s in ((0, 1), (1, 1), (8, 1), (9, 2), (17, 3), (100, 1), (1000, 1))]
    if op in ("sum", "mean"):
        return [Case(name, [B(1), B(max(m, 1), 12), Int(m)]) for m in (0, 1, 5, 8, 9, 23, 130, 777)]
    if op == "max":
        x, y = R(37), R(9)
        x[[3, 11, 20]] = x.max() + 1  # ties: the first is the one
        y[[0, 4]] = np.nan
        where = lambda: Buf(np.array([-5], np.int64))  # noqa: E731
        return [Case(name, [B(1), where(), Buf(v), Int(len(v))]) for v in (x, y, R(1))] + \
               [Case(name, [B(1), Null(), Buf(x), Int(37)])]
    if op == "dot":
        return [Case(name, [B(1), B(max(m, 1), 10), B(max(m, 1), 10), Int(m)]) for m in (0, 5, 100)]
    if op == "sum_rows":
        return [Case(name, [B(5), B(r * 5, 12), Int(r), Int(5)]) for r in (0, 1, 8, 9, 37)]
    if op in ("sum_back", "mean_back"):
        return [Case(name, [B(9), B(1), Int(9)])]
    if op == "max_back":
        return [Case(name, [B(9), B(1), Buf(np.array([4], np.int64))])]
    if op == "sum_rows_back":
        return [Case(name, [B(24), B(6), Int(4), Int(6)])]
    raise AssertionError(f"no test cases for {name}")


ROW_SHAPES = ((3, 1), (4, 9), (2, 33))


def row_cases(name: str, op: str, g: Gen) -> list[Case]:
    R, B, P = g.R, g.B, g.positive
    if op == "softmax_rows":
        out = []
        for r, c in ROW_SHAPES:
            x = R(r * c, 2)
            if c > 1:
                x[1] = -np.inf  # a masked entry
            out.append(Case(name, [B(r * c), Buf(x), Int(r), Int(c)]))
        return out
    if op == "softmax_back_rows":
        return [Case(name, [B(r * c), B(r * c), P(r * c), Int(r), Int(c)]) for r, c in ROW_SHAPES]
    if op == "layernorm_rows":
        return [Case(name, [B(r * c), B(r), B(r), B(r * c, 3), B(c, 1), B(c, 1), Int(r), Int(c)]) for r, c in ROW_SHAPES] + \
               [Case(name, [B(12), Null(), Null(), B(12), B(4), B(4), Int(3), Int(4)])]
    if op == "layernorm_back_rows":
        return [Case(name, [B(r * c), B(r * c), B(r * c, 3), B(c, 1), B(r, 2), P(r), Int(r), Int(c)]) for r, c in ROW_SHAPES]
    if op == "layernorm_params_back":
        r, c = 7, 5
        rest = lambda: [B(r * c), B(r * c, 3), B(r, 2), P(r), Int(r), Int(c)]  # noqa: E731
        return [Case(name, [B(c), B(c)] + rest()), Case(name, [Null(), B(c)] + rest()), Case(name, [B(c), Null()] + rest())]
    if op == "rmsnorm_rows":
        return [Case(name, [B(r * c), B(r), B(r * c, 3), B(c, 1), Int(r), Int(c)]) for r, c in ROW_SHAPES] + \
               [Case(name, [B(12), Null(), B(12), B(4), Int(3), Int(4)])]
    if op == "rmsnorm_back_rows":
        return [Case(name, [B(r * c), B(r * c), B(r * c, 3), B(c, 1), P(r), Int(r), Int(c)]) for r, c in ROW_SHAPES]
    if op == "rmsnorm_gain_back":
        r, c = 7, 5
        return [Case(name, [B(c), B(r * c), B(r * c, 3), P(r), Int(r), Int(c)])]
    if op == "cross_entropy_rows":
        out = []
        for (r, c), bad in (((3, 1), False), ((4, 9), False), ((2, 33), False), ((5, 6), True)):
            targets = g.ids(r, c)
            if bad:
                targets.data[[1, 3]] = [-1, c]
            err = Buf(np.zeros(1, np.int32))
            out.append(Case(name, [B(r), B(r * c), err, B(r * c, 3), targets, Int(r), Int(c)],
                            note="bad targets" if bad else ""))
        return out
    if op == "cross_entropy_back_rows":
        return [Case(name, [B(r * c), B(1), P(r * c, 1), g.ids(r, c), Int(r), Int(c)]) for r, c in ROW_SHAPES]
    raise AssertionError(f"no test cases for {name}")


def gather_cases(name: str, op: str, g: Gen) -> list[Case]:
    B = g.B
    if op == "gather":
        ids = g.ids(6, 5)
        bad = Buf(ids.data.copy())
        bad.data[[2, 4]] = [5, -1]
        return [Case(name, [B(42), Buf(np.zeros(1, np.int32)), B(35), v, Int(6), Int(5), Int(7)], note=note)
                for v, note in ((ids, ""), (bad, "bad ids"))]
    if op == "gather_back":
        ids = Buf(np.array([3, 1, 3, 0, 3, 4], np.int64))  # repeats: added in order
        return [Case(name, [B(35), B(42), ids, Int(6), Int(5), Int(7)])]
    raise AssertionError(f"no test cases for {name}")


# gemm: (trans_a, trans_b, m, n, k, accumulate, batch); rows padded (lda, ldb, ldc past the need)
GEMMS = [(0, 0, 3, 5, 7, 0, 1), (1, 0, 4, 3, 6, 1, 1), (0, 1, 2, 6, 5, 1, 2), (1, 1, 5, 2, 4, 0, 2),
         (0, 0, 2, 3, 0, 1, 1), (0, 1, 1, 4, 9, 0, 1)]


def product_cases(name: str, op: str, g: Gen) -> list[Case]:
    B = g.B
    if op == "gemm":
        out = []
        for ta, tb, m, n, k, acc, batch in GEMMS:
            a_rows, b_rows = (k if ta else m), (n if tb else k)
            lda, ldb, ldc = (m if ta else k) + 2, (k if tb else n) + 1, n + 3
            sa, sb, sc = (a_rows * lda + 1, b_rows * ldb + 2, m * ldc) if batch > 1 else (0, 0, 0)
            a = B(max(sa * batch, a_rows * lda, 1), 10)
            b = B(max(sb * batch, b_rows * ldb, 1), 10)
            c = B(max(sc * batch, m * ldc))
            out.append(Case(name, [Int(ta), Int(tb), Int(m), Int(n), Int(k), a, Int(lda), b, Int(ldb), c, Int(ldc),
                                   Int(acc), Int(sa), Int(sb), Int(sc)], grid_y=batch, extra=[Int(batch)]))
        return out
    if op == "outer":
        return [Case(name, [B(24), B(4), B(6), Int(4), Int(6)])]
    raise AssertionError(f"no test cases for {name}")


# conv2d: (batch, cin, h, w, cout, kh, kw); pools: planes, h, w, size (h, w not multiples of size)
CONVS = ((2, 2, 5, 6, 3, 2, 3), (1, 3, 4, 4, 2, 4, 1))
PLANES, H, W, SIZE = 3, 5, 7, 2


def image_cases(name: str, op: str, g: Gen) -> list[Case]:
    R, B = g.R, g.B
    if op.startswith("conv2d"):
        out = []
        for shape in CONVS:
            b, ci, h, w, co, kh, kw = shape
            xs, ks, gs = b * ci * h * w, co * ci * kh * kw, b * co * (h - kh + 1) * (w - kw + 1)
            first = {"conv2d": [B(gs), B(xs, 3), B(ks, 3)], "conv2d_back_x": [B(xs), B(gs, 3), B(ks, 3)],
                     "conv2d_back_k": [B(ks), B(gs, 3), B(xs, 3)]}[op]
            out.append(Case(name, first + [Int(v) for v in shape]))
        return out
    oh, ow = H // SIZE, W // SIZE
    shape = [Int(v) for v in (PLANES, H, W, SIZE)]
    if op == "maxpool2d":
        x = R(PLANES * H * W)
        x[[0, 1, 7]] = 50.0  # a tie inside the first window
        x[16] = np.nan
        where = Buf(np.full(PLANES * oh * ow, -7, np.int64))
        return [Case(name, [B(PLANES * oh * ow), where, Buf(x)] + shape),
                Case(name, [B(PLANES * oh * ow), Null(), Buf(x)] + shape)]
    if op == "maxpool2d_back":
        rng = g.rng
        where = [(p * H + i * SIZE + rng.integers(SIZE)) * W + j * SIZE + rng.integers(SIZE)
                 for p in range(PLANES) for i in range(oh) for j in range(ow)]
        return [Case(name, [B(PLANES * H * W), B(PLANES * oh * ow), Buf(np.array(where, np.int64))] + shape)]
    if op == "avgpool2d":
        return [Case(name, [B(PLANES * oh * ow), B(PLANES * H * W)] + shape),
                Case(name, [B(2 * 2 * 3), B(2 * 6 * 9)] + [Int(v) for v in (2, 6, 9, 3)])]
    if op == "avgpool2d_back":
        return [Case(name, [B(PLANES * H * W), B(PLANES * oh * ow)] + shape)]
    raise AssertionError(f"no test cases for {name}")


def optimizer_cases(name: str, op: str, g: Gen) -> list[Case]:
    n, B, dt = 37, g.B, g.dt
    if op == "adam_step":  # bias1, bias2 (None here) come from the C runtime: see bias_scalars
        hyper = [Scalar(dt(v)) for v in (1e-3, 0.9, 0.999, 1e-8)]
        return [Case(name, [B(n), B(n), B(n, 2), g.positive(n), Int(n), *hyper, None, None], extra=[Int(step)])
                for step in (1, 7)]
    if op == "sgd_step":
        return [Case(name, [B(n), B(n), B(n), Int(n), Scalar(dt(0.01)), Scalar(dt(0.9))])]
    raise AssertionError(f"no test cases for {name}")


QUANTIZED = {"i8": (np.int8, -128, 127), "u8": (np.uint8, 0, 255)}


def quantize_inputs(g: Gen, scale: float) -> np.ndarray:
    """Random values across the range and past it, exact ties (k + 0.5) * scale, the
    ends +-2^61 * scale where the C stops rounding and saturates, infinities and zeros."""
    ties = (np.arange(-8, 8) + 0.5) * scale
    ends = np.array([2.0**61, -(2.0**61), 2.0**62, -(2.0**62)]) * scale
    edges = np.array([np.inf, -np.inf, 0.0, -0.0, 1e6 * scale, -1e6 * scale, 127.5 * scale, -128.5 * scale,
                      255.5 * scale])
    x = np.concatenate([g.rng.standard_normal(40) * 100 * scale, ties, ends, edges]).astype(g.dt)
    return np.concatenate([x, np.nextafter(x[-13:-9], g.dt(np.inf))])


def quantized_cases(name: str, op: str, g: Gen) -> list[Case]:
    if op.startswith("quantize_") and op != "quantize_rows_i8":
        out = []
        for scale, zero in ((0.25, 0), (0.1, 3), (-0.37, -7), (1e-30, 100), (3.0, -300)):
            x = quantize_inputs(g, scale)
            out.append(Case(name, [Buf(np.full(len(x), 0x5A, np.uint8)), Buf(np.zeros(1, np.int32)), Buf(x),
                                   Int(len(x)), Scalar(g.dt(scale)), Int(zero)]))
        x = quantize_inputs(g, 0.5)
        x[[3, 17]] = np.nan
        out.append(Case(name, [Buf(np.full(len(x), 0x5A, np.uint8)), Buf(np.zeros(1, np.int32)), Buf(x),
                               Int(len(x)), Scalar(g.dt(0.5)), Int(1)], note="nans"))
        return out
    if op.startswith("dequantize_"):
        qt, low, high = QUANTIZED[op[-2:]]
        q = np.concatenate([np.arange(low, high + 1), g.rng.integers(low, high + 1, 20)]).astype(qt)
        return [Case(name, [g.B(len(q)), Buf(q), Int(len(q)), Scalar(g.dt(s)), Int(z)])
                for s, z in ((0.1, 0), (-3.7, 5), (1e-3, -200), (np.inf, 0))]
    if op == "quantize_rows_i8":
        out = []
        for rows, cols in ((1, 1), (4, 9), (3, 33)):
            x = g.R(rows * cols, 6)
            x[0] = 0.0
            out.append(Case(name, [Buf(np.full(rows * cols, 0x5A, np.uint8)), g.B(rows), Buf(np.zeros(1, np.int32)),
                                   Buf(x), Int(rows), Int(cols)]))
        x = g.R(5 * 6)
        x[0:6] = 0.0  # a row of zeros: scale 0, q 0
        x[6:12] = [-2.0, 2.0, 1.0, -1.0, 0.5, 0.0]  # a tie for the largest, of both signs
        x[12:18] = (np.arange(6) + 0.5) * (2.0 / 127)  # ties at the scale 2/127
        x[14], x[15] = 2.0, -0.0
        x[19], x[26] = np.nan, np.inf  # rows 3 and 4: the C traps, the kernel flags
        out.append(Case(name, [Buf(np.full(30, 0x5A, np.uint8)), g.B(5), Buf(np.zeros(1, np.int32)), Buf(x),
                               Int(5), Int(6)], note="zeros, ties, a nan, an inf"))
        return out
    raise AssertionError(f"no test cases for {name}")


def integer_product_cases(name: str, rng) -> list[Case]:
    """Every depth 1..9 (whole and partial groups of four), 0 and 37, shapes no multiple of
    anything, vectors (n = 1), and the range's ends, which show each byte's signedness."""
    low = -128 if "_i8_i8" in name else 0
    a_type = np.int8 if low else np.uint8
    out = []
    for m, k, n in [(3, d, 5) for d in range(1, 10)] + [(1, 1, 1), (7, 37, 2), (5, 13, 1), (2, 0, 3), (1, 4, 1)]:
        a = rng.integers(low, low + 256, m * k).astype(a_type)
        b = rng.integers(-128, 128, k * n).astype(np.int8)
        out.append(Case(name, [Buf(np.full(m * n, 0x5A5A5A5A, np.int32)), Buf(a), Buf(b), Int(m), Int(k), Int(n)]))
    a = np.full(4 * 6, low).astype(a_type)  # -128 or 0, and 127 or 255
    a[::5] = low + 255
    b = np.full(6 * 3, -128, np.int8)
    b[1::4] = 127
    out.append(Case(name, [Buf(np.zeros(12, np.int32)), Buf(a), Buf(b), Int(4), Int(6), Int(3)], note="ends"))
    return out


FAMILY_CASES = {
    "elementwise": elementwise_cases, "reductions": reduction_cases, "rows": row_cases, "gather": gather_cases,
    "products": product_cases, "images": image_cases, "optimizers": optimizer_cases, "quantized": quantized_cases,
}


def cases_for(name: str, k: ptx.Kernel, rng) -> list[Case]:
    """The cases that run kernel `name`: argument lists in its parameter order."""
    if k.family in ptx.INTEGER_FAMILIES:
        return integer_product_cases(name, rng)
    op = "convert" if name.startswith("mica_convert_") else name[len("mica_"): -len("_" + k.dtype)]
    return FAMILY_CASES[k.family](name, op, Gen(rng, k.dtype))


def all_cases() -> dict[str, list[Case]]:
    rng = np.random.default_rng(SEED)
    return {name: cases_for(name, k, rng) for name, k in sorted(ptx.KERNELS.items())}


CASES = all_cases()


# ------------------------------------------------------------ the C side


def encode(case_kernel: str, args: list) -> str:
    words = [case_kernel, str(len(args))]
    for a in args:
        if isinstance(a, Buf):
            raw = a.data.tobytes()
            words += ["p", str(len(raw)), raw.hex() or "-"]
        elif isinstance(a, Null):
            words.append("n")
        elif isinstance(a, Int):
            words += ["i", str(int(a.value))]
        elif isinstance(a, Scalar):
            bits = a.value.view(np.uint32 if a.value.dtype == np.float32 else np.uint64)
            words += ["f", f"{int(bits):x}"]
        else:
            raise AssertionError(f"argument {a!r}")
    return " ".join(words) + "\n"


def run_harness(binary: Path, calls: list[tuple[str, list]]) -> list[list[bytes]]:
    """Each (name, args) through the C runtime: the buffers afterwards, in argument order."""
    text = "".join(encode(name, args) for name, args in calls)
    done = subprocess.run([str(binary)], input=text, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    results, current = [], []
    for line in done.stdout.splitlines():
        if line == "end":
            results.append(current)
            current = []
        else:
            current.append(bytes.fromhex(line))
    assert len(results) == len(calls)
    return results


@pytest.fixture(scope="session")
def harness(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("ptx_harness") / "ptx_harness"
    sources = [str(p) for p in sorted(RUNTIME.glob("*.c"))] + [str(HARNESS)]
    subprocess.run([sys.executable, "-m", "ziglang", "cc", "-target", "x86_64-linux-musl", "-O2", "-ffp-contract=off",
                    "-I", str(RUNTIME), *sources, "-o", str(out), "-lm"], check=True, capture_output=True, text=True)
    return out


def bias_scalars(harness: Path) -> None:
    """adam_step's bias1, bias2 as the C runtime computes them (1 - beta^t, mica_powi)."""
    pending = [c for cs in CASES.values() for c in cs if c.kernel.startswith("mica_adam_step") and c.args[9] is None]
    calls = []
    for c in pending:
        dt = DTYPES[c.kernel[-3:]]
        calls.append((c.kernel.replace("adam_step", "adam_bias"), [Buf(np.zeros(2, dt)), c.args[6], c.args[7], c.extra[0]]))
    for c, (bias,) in zip(pending, run_harness(harness, calls)):
        values = np.frombuffer(bias, DTYPES[c.kernel[-3:]])
        c.args[9], c.args[10] = Scalar(values[0]), Scalar(values[1])


@pytest.fixture(scope="session")
def c_results(harness) -> dict[int, list[bytes]]:
    bias_scalars(harness)
    cases = [c for cs in CASES.values() for c in cs]
    results = run_harness(harness, [(c.kernel, c.args + c.extra) for c in cases])
    return {id(c): r for c, r in zip(cases, results)}


# ------------------------------------------------------------ the PTX side


@pytest.fixture(scope="session")
def interpreted() -> pi.Module:
    return pi.Module(ptx.render(ptx.KERNELS))


def run_interpreter(module: pi.Module, case: Case, block: int = 16) -> list[bytes]:
    kernel = ptx.KERNELS[case.kernel]
    memory = pi.Memory()
    values, buffers = [], []
    for param, a in zip(kernel.params, case.args):
        if isinstance(a, Buf):
            address = memory.alloc(a.data) if a.data.nbytes else memory.alloc(np.zeros(0, np.uint8))
            values.append(address)
            buffers.append((address, a.data.dtype))
        elif isinstance(a, Null):
            values.append(0)
        elif isinstance(a, Int):
            values.append(a.value)
        else:
            assert param.ptx == kernel.dtype, f"{case.kernel}: {param.name} is no scalar of {kernel.dtype}"
            values.append(a.value)
    extents = {p.name: v for p, v in zip(kernel.params, values) if p.kind == "int"}
    threads = kernel.threads.of(extents)
    grid_x = max(1, -(-threads // block))
    pi.launch(module, case.kernel, values, memory, grid=(grid_x, case.grid_y), block=block)
    return [memory.array(address, dtype).tobytes() for address, dtype in buffers]


def same_bits(got: bytes, want: bytes, dtype, strict_nan: bool) -> bool:
    if got == want:
        return True
    if dtype.kind != "f" or strict_nan:
        return False
    g, w = np.frombuffer(got, dtype), np.frombuffer(want, dtype)
    both_nan = np.isnan(g) & np.isnan(w)
    return bool(np.all((g.view(f"u{dtype.itemsize}") == w.view(f"u{dtype.itemsize}")) | both_nan))


def describe(got: bytes, want: bytes, dtype) -> str:
    g, w = np.frombuffer(got, dtype), np.frombuffer(want, dtype)
    bad = np.nonzero(g.view(f"u{dtype.itemsize}") != w.view(f"u{dtype.itemsize}"))[0]
    return ", ".join(f"[{i}] ptx {g[i]!r} c {w[i]!r}" for i in bad[:4]) + f" ({len(bad)} of {len(g)} differ)"


@pytest.mark.parametrize("name", sorted(CASES))
def test_kernel_matches_the_c_runtime(name, interpreted, c_results):
    for number, case in enumerate(CASES[name]):
        got = run_interpreter(interpreted, case)
        want = c_results[id(case)]
        dtypes = [a.data.dtype for a in case.args if isinstance(a, Buf)]
        assert len(got) == len(want)
        for k, (g, w, dt) in enumerate(zip(got, want, dtypes)):
            assert same_bits(g, w, dt, case.strict_nan), f"{name} case {number} {case.note}: buffer {k}: {describe(g, w, dt)}"


def test_cross_entropy_rows_then_mean_is_cross_entropy(interpreted, harness):
    """The device's CrossEntropy: per-row losses, then the mean kernel, as the C's one call."""
    rng = np.random.default_rng(SEED + 1)
    for t, dt in DTYPES.items():
        for r, c in ((1, 5), (13, 7), (20, 3)):
            logits = wide(rng, r * c, dt, 3)
            targets = rng.integers(0, c, r).astype(np.int64)
            want = run_harness(harness, [(f"mica_cross_entropy_total_{t}", [Buf(np.zeros(1, dt)), Buf(np.zeros(r * c, dt)),
                                                                         Buf(logits), Buf(targets), Int(r), Int(c)])])[0]
            rows = Case(f"mica_cross_entropy_rows_{t}", [Buf(np.zeros(r, dt)), Buf(np.zeros(r * c, dt)),
                                                         Buf(np.zeros(1, np.int32)), Buf(logits), Buf(targets), Int(r), Int(c)])
            loss, probs, err = run_interpreter(interpreted, rows)[:3]
            mean = Case(f"mica_mean_{t}", [Buf(np.zeros(1, dt)), Buf(np.frombuffer(loss, dt).copy()), Int(r)])
            total = run_interpreter(interpreted, mean)[0]
            assert (total, probs) == (want[0], want[1]) and err == bytes(4)


def test_every_instruction_was_interpreted(module_text):
    """Reports what the interpreter ran; every opcode in the rendered kernels ran at least once."""
    if not pi.executed:
        pytest.skip("run with the kernel tests (this reports on them)")
    body = _COMMENTS.sub("", module_text)
    written = set()
    for stmt in re.findall(r"^\s*(?:@!?%\w+\s+)?([a-z][\w.]*)\s", body, re.M):
        written.add(stmt)
    print("\ninterpreted:", ", ".join(f"{op} {n}" for op, n in sorted(pi.executed.items())))
    missing = sorted(op for op in written if op not in pi.executed)
    assert not missing, f"never run by the tests: {missing}"


_COMMENTS = re.compile(r"//[^\n]*")
