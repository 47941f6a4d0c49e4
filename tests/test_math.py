"""test_math.py: Mica's elementary functions (runtime_c/mica_math.c).

Builds tests/c/math_harness.c with zig for x86_64 and aarch64 (musl, static),
feeds every build the same inputs as bits and checks that

  - aarch64 (run under qemu-aarch64-static) prints the same bits as x86_64;
  - -O0 prints the same bits as -O2, and so does a build that leaves
    contraction on (-ffp-contract=on: the file's pragma must hold);
  - the error against a reference stays under each function's documented
    bound (its row of micatool/compile/ops/element_functions.py, which
    docs/math.md §11 lists). float64 results are measured against mpmath at
    120 bits; float32 results against the function evaluated in float64 (numpy);
  - the special cases (zeros, infinities, nan, overflow, underflow,
    saturation) answer exactly the documented bits.

Inputs come from a fixed seed (see random_inputs: a new function leaves the
others' inputs as they were): 100k per float32 function and 25k per float64
function (100k for sin and cos in both widths), spread over the function's
domain in the table, plus powi.
`python tests/test_math.py` prints the measured table for docs/math.md.

The gradients (gelu_grad, silu_grad) are measured in ulps of the larger of
the derivative's two terms, which cancel where it crosses zero (gelu' at
-0.7518, silu' at -1.2785); elsewhere this is the ordinary ulp error.
"""

import math
import re
import subprocess
import sys
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import mpmath
import numpy as np
import pytest
from helpers import qemu

from micatool.compile.ops.element_functions import math_functions

ROOT = Path(__file__).resolve().parents[1]
RUNTIME = ROOT / "runtime_c"
HARNESS = ROOT / "tests" / "c" / "math_harness.c"

SEED = 20250611
N32 = 100_000
N64 = 25_000

TABLE = {m.c: m for m in math_functions()}
FUNCTIONS = list(TABLE)
COUNTS = {"sin": 100_000, "cos": 100_000}  # per width; the others take N64 / N32

# The documented bounds test_accuracy asserts, a little above what was measured.
MAX_ULP = {(name, bits): m.bound[0 if bits == 64 else 1] for name, m in TABLE.items() for bits in (64, 32)}
MAX_ULP |= {("powi/|n|", 64): 1.0, ("powi/|n|", 32): 1.0}  # binary powering: under |n| ulp

BUILDS = {
    "x86_64-O2": ("x86_64", ["-O2", "-ffp-contract=off"]),
    "x86_64-O0": ("x86_64", ["-O0", "-ffp-contract=off"]),
    "aarch64-O2": ("aarch64", ["-O2", "-ffp-contract=off"]),
    "aarch64-O0": ("aarch64", ["-O0", "-ffp-contract=off"]),
    "aarch64-O2-contract-on": ("aarch64", ["-O2", "-ffp-contract=on"]),
}

# ------------------------------------------------------------ inputs


def uniform(rng, n, lo, hi):
    return rng.uniform(lo, hi, n)


def logmag(rng, n, lo, hi):
    """Magnitudes spread evenly over the exponents in [lo, hi], either sign."""
    m = np.exp(rng.uniform(math.log(lo), math.log(hi), n))
    return m * rng.choice([-1.0, 1.0], n)


def near_one(rng, n, lo, hi):
    return 1.0 + logmag(rng, n, lo, hi)


def positive_bits(rng, n, bits):
    """Positive finite values with uniformly random bit patterns, subnormals included."""
    if bits == 64:
        return rng.integers(1, 0x7FF0000000000000, n, dtype=np.uint64).view(np.float64)
    return rng.integers(1, 0x7F800000, n, dtype=np.uint32).view(np.float32).astype(np.float64)


def subnormals(rng, n, bits):
    top = 1 << 52 if bits == 64 else 1 << 23
    u = rng.integers(1, top, n, dtype=np.uint64)
    return u.view(np.float64) if bits == 64 else u.astype(np.uint32).view(np.float32).astype(np.float64)


def near_pio2(rng, n, bits, kmax, half):
    """Within 20 ulps of k*pi/2 (half = 0: sin or cos nearly 0) or of
    (k + 1/2)*pi/2 (half = 0.5: the seams between quadrants), k log-uniform
    in [1, kmax], either sign."""
    k = np.floor(np.exp(rng.uniform(0, math.log(kmax), n)))
    x = (k + half) * (math.pi / 2)
    step = rng.integers(-20, 21, n)
    if bits == 64:
        u = x.view(np.int64) + step
        x = u.view(np.float64)
    else:
        u = x.astype(np.float32).view(np.int32) + step.astype(np.int32)
        x = u.view(np.float32).astype(np.float64)
    return x * rng.choice([-1.0, 1.0], n)


BITS_GENERATORS = (positive_bits, subnormals, near_pio2)
GENERATORS = {g.__name__: g for g in (uniform, logmag, near_one, positive_bits, subnormals, near_pio2)}

NPOWI = 4000


def sample(rng, name, bits, n):
    """n inputs of the function `name` at a width, spread over its domain in the table."""
    parts = []
    for share, kind, *args in TABLE[name].domain[bits]:
        gen = GENERATORS[kind]
        if gen is near_pio2:
            parts.append(gen(rng, int(n * share), bits, *args))
        elif gen in BITS_GENERATORS:
            parts.append(gen(rng, int(n * share), bits))
        else:
            parts.append(gen(rng, int(n * share), *args))
    x = np.concatenate(parts)
    return x if bits == 64 else x.astype(np.float32)


# The functions measured before the table of elementwise functions, drawn from
# one generator in this order, as their documented measurements were (sin and
# cos after powi); each later function draws from a generator of its own, so
# that adding one leaves every other's inputs as they were.
FIRST = ["exp", "log", "tanh", "sigmoid", "gelu", "gelu_grad", "silu", "silu_grad"]
FIRST_AFTER_POWI = ["sin", "cos"]


def random_inputs():
    """name_bits -> array of inputs (float64 or float32); powi -> (x, n)."""
    rng = np.random.default_rng(SEED)
    out = {}
    for bits, n in ((64, N64), (32, N32)):
        for name in FIRST:
            out[f"{name}_f{bits}"] = sample(rng, name, bits, n)
    for bits in (64, 32):
        x = rng.uniform(0.5, 2.0, NPOWI) * rng.choice([-1.0, 1.0], NPOWI)
        k = rng.integers(-32, 33, NPOWI)
        out[f"powi_f{bits}"] = (x if bits == 64 else x.astype(np.float32), k)
    for bits in (64, 32):
        for name in FIRST_AFTER_POWI:
            out[f"{name}_f{bits}"] = sample(rng, name, bits, COUNTS[name])
    for bits, n in ((64, N64), (32, N32)):
        for name in FUNCTIONS:
            if name not in FIRST + FIRST_AFTER_POWI:
                own = np.random.default_rng([SEED, zlib.crc32(f"{name}_f{bits}".encode())])
                out[f"{name}_f{bits}"] = sample(own, name, bits, COUNTS.get(name, n))
    return out


# ------------------------------------------------------------ special cases

INF, NAN = math.inf, math.nan
NEG_NAN64 = np.uint64(0xFFF8000000000123).view(np.float64)  # any nan answers the canonical one
NEG_NAN32 = np.uint32(0xFFC00123).view(np.float32)
CANON_NAN = {64: 0x7FF8000000000000, 32: 0x7FC00000}

# (function, input, expected result); the expectation is exact, sign of zero included.
SPECIALS = [
    ("exp", 0.0, 1.0), ("exp", -0.0, 1.0), ("exp", INF, INF), ("exp", -INF, 0.0), ("exp", NAN, NAN),
    ("exp", 1000.0, INF), ("exp", -1000.0, 0.0),
    ("log", 1.0, 0.0), ("log", 0.0, -INF), ("log", -0.0, -INF), ("log", -1.0, NAN), ("log", -INF, NAN),
    ("log", INF, INF), ("log", NAN, NAN), ("log", 2.0, math.log(2.0)),
    ("tanh", 0.0, 0.0), ("tanh", -0.0, -0.0), ("tanh", INF, 1.0), ("tanh", -INF, -1.0), ("tanh", NAN, NAN),
    ("tanh", 30.0, 1.0), ("tanh", -30.0, -1.0), ("tanh", 1e300, 1.0),
    ("sigmoid", 0.0, 0.5), ("sigmoid", -0.0, 0.5), ("sigmoid", INF, 1.0), ("sigmoid", -INF, 0.0),
    ("sigmoid", NAN, NAN), ("sigmoid", 800.0, 1.0), ("sigmoid", -800.0, 0.0),
    ("gelu", 0.0, 0.0), ("gelu", -0.0, -0.0), ("gelu", INF, INF), ("gelu", -INF, -0.0), ("gelu", NAN, NAN),
    ("gelu", 1e30, 1e30), ("gelu", -1e30, -0.0),
    ("gelu_grad", 0.0, 0.5), ("gelu_grad", INF, 1.0), ("gelu_grad", -INF, 0.0), ("gelu_grad", NAN, NAN),
    ("silu", 0.0, 0.0), ("silu", -0.0, -0.0), ("silu", INF, INF), ("silu", -INF, -0.0), ("silu", NAN, NAN),
    ("silu_grad", 0.0, 0.5), ("silu_grad", INF, 1.0), ("silu_grad", -INF, -0.0), ("silu_grad", NAN, NAN),
    ("sin", 0.0, 0.0), ("sin", -0.0, -0.0), ("sin", INF, NAN), ("sin", -INF, NAN), ("sin", NAN, NAN),
    ("sin", 1e-300, 1e-300), ("sin", -1e-300, -1e-300), ("sin", 5e-324, 5e-324),
    ("cos", 0.0, 1.0), ("cos", -0.0, 1.0), ("cos", INF, NAN), ("cos", -INF, NAN), ("cos", NAN, NAN),
    ("cos", 1e-300, 1.0),
    ("softplus", 0.0, math.log(2.0)), ("softplus", -0.0, math.log(2.0)), ("softplus", INF, INF),
    ("softplus", -INF, 0.0), ("softplus", NAN, NAN), ("softplus", 1000.0, 1000.0), ("softplus", -1000.0, 0.0),
    ("softplus", 1e30, 1e30),
]

# Width-specific edges: (function, bits, input bits, expected bits).
EDGES = [
    ("exp", 64, 0x40862E42FEFA39EF, 0x7FEFFFFFFFFFFF2A),  # exp(709.78271289338397) just below DBL_MAX
    ("exp", 64, 0x40862E42FEFA39F0, 0x7FF0000000000000),  # next double up overflows
    ("exp", 64, 0xC0874910D52D3051, 0x0000000000000001),  # exp(-745.13321910194111) = least subnormal
    ("exp", 64, 0xC0874910D52D3052, 0x0000000000000000),  # next double down: 0
    ("exp", 32, 0x42B17217, 0x7F7FFF84),  # exp(88.7228317) just below FLT_MAX
    ("exp", 32, 0x42B17218, 0x7F800000),  # next float up overflows
    ("exp", 32, 0xC2CFF1B4, 0x00000001),  # exp(-103.972076) = least subnormal
    ("exp", 32, 0xC2CFF1B5, 0x00000000),  # next float down: 0
    ("log", 64, 0x0000000000000001, 0xC0874385446D71C3),  # log(least subnormal) = -744.44...
    ("log", 32, 0x00000001, 0xC2CE8ED0),  # log(least subnormal) = -103.28
    # sin and cos: correctly rounded results at the textbook hard cases.
    ("sin", 64, 0x400921FB54442D18, 0x3CA1A62633145C07),  # sin(pi rounded) = 1.2246467991473532e-16
    ("cos", 64, 0x3FF921FB54442D18, 0x3C91A62633145C07),  # cos(pi/2 rounded) = 6.123233995736766e-17
    ("sin", 64, 0x4480F0CF064DD592, 0xBFEB453AB76BF397),  # sin(1e22) = -0.8522008497671888
    ("cos", 64, 0x4480F0CF064DD592, 0x3FE0BE2CEF01C8F4),  # cos(1e22) = 0.523214785395139
    ("cos", 64, 0x4046C6CBC45DC8DE, 0xBC26D61B58C99C43),  # closest double to k*pi/2 below 2^20: r = 2^-60.5
    ("sin", 64, 0x40A6C6CBC45DC8DE, 0x3C86D61B58C99C43),  # the same times 64 (k = 1856)
    ("cos", 64, 0x7506AC5B262CA1FF, 0xBC214AE72E6BA22F),  # 6381956970095103*2^797, closest of all: r = 2^-60.9
    ("sin", 64, 0x7506AC5B262CA1FF, 0x3FF0000000000000),
    ("sin", 64, 0x7FEFFFFFFFFFFFFF, 0x3F7452FC98B34E97),  # sin(DBL_MAX) = 0.004961954789184062
    ("cos", 64, 0x7FEFFFFFFFFFFFFF, 0xBFEFFFE62ECFAB75),  # cos(DBL_MAX) = -0.9999876894265599
    ("sin", 64, 0x3E50000000000000, 0x3E50000000000000),  # sin(2^-26): the polynomial still rounds to x
    ("sin", 64, 0x3E4FFFFFFFFFFFFF, 0x3E4FFFFFFFFFFFFF),  # just below 2^-26: x itself
    ("sin", 64, 0x4130000000000000, 0x3FD526CCB2FC8656),  # sin(2^20): Payne-Hanek's first argument
    ("cos", 64, 0x4130000000000000, 0x3FEE33ADA92FE2AE),  # cos(2^20)
    ("sin", 64, 0x412FFFFFFFFFFFFF, 0x3FD526CCB2DE52A8),  # the last Cody-Waite argument
    ("sin", 32, 0x40490FDB, 0xB3BBBD2E),  # sin(pi rounded) = -8.742278e-08
    ("cos", 32, 0x3FC90FDB, 0xB33BBD2E),  # cos(pi/2 rounded) = -4.371139e-08
    ("cos", 32, 0x437CE5F1, 0xB18FD1DE),  # 252.898208: closest float to k*pi/2 below 2^15, r = 2^-27.8
    ("sin", 32, 0x437CE5F1, 0x3F800000),
    ("cos", 32, 0x4096CBE4, 0x324CDE2E),  # cos(4.712389) = 1.1924881e-08
    ("sin", 32, 0x4096CBE4, 0xBF800000),
    ("sin", 32, 0x7F7FFFFF, 0xBF0599B3),  # sin(FLT_MAX) = -0.5218765
    ("cos", 32, 0x7F7FFFFF, 0x3F5A5F96),  # cos(FLT_MAX) = 0.8530210
    ("sin", 32, 0x47000000, 0x3F6D87FE),  # sin(2^15): Payne-Hanek's first argument
    ("cos", 32, 0x47000000, 0x3EBEF1B5),  # cos(2^15)
    ("sin", 32, 0x39800000, 0x39800000),  # sin(2^-12) = 2^-12
    ("cos", 32, 0x39800000, 0x3F800000),  # cos(2^-12) = 1
]

POWI_SPECIALS = [  # (x, n, expected)
    (2.0, 10, 1024.0), (2.0, -2, 0.25), (-2.0, 3, -8.0), (-2.0, -3, -0.125), (3.0, 0, 1.0), (NAN, 0, 1.0),
    (INF, 0, 1.0), (NAN, 1, NAN), (0.0, -1, INF), (-0.0, -1, -INF), (-0.0, 3, -0.0), (-0.0, 2, 0.0),
    (INF, -1, 0.0), (-INF, 3, -INF), (2.0, -(2**63), 0.0), (1.0, -(2**63), 1.0), (-1.0, 2**63 - 1, -1.0),
    (0.5, 2**63 - 1, 0.0), (10.0, 400, INF), (1.5, 1, 1.5),
]


def bits_of(v, bits):
    if bits == 64:
        return int(np.float64(v).view(np.uint64))
    with np.errstate(over="ignore"):  # 1e30**3 and the like become inf on purpose
        return int(np.float32(v).view(np.uint32))


def expected_bits(v, bits):
    if isinstance(v, float) and math.isnan(v):
        return CANON_NAN[bits]
    return bits_of(v, bits)


def special_inputs():
    """name -> list of (input, expected bits); nan inputs include a negative nan with a payload."""
    out = {}
    for bits in (64, 32):
        neg_nan = NEG_NAN64 if bits == 64 else NEG_NAN32
        for name, x, want in SPECIALS:
            if isinstance(want, float) and bits == 32 and math.isfinite(want) and abs(want) > 3.4e38:
                want = math.copysign(INF, want)
            out.setdefault(f"{name}_f{bits}", []).append((bits_of(x, bits), expected_bits(want, bits)))
            if isinstance(x, float) and math.isnan(x):
                out[f"{name}_f{bits}"].append((bits_of(neg_nan, bits), CANON_NAN[bits]))
        for name, b, xb, want in EDGES:
            if b == bits:
                out.setdefault(f"{name}_f{bits}", []).append((xb, want))
    return out


# ------------------------------------------------------------ running the harness


def hex_lines(u, width):
    """Array of unsigned ints -> bytes of fixed-width hex lines, fast."""
    raw = u.astype(f">u{width // 2}").tobytes().hex().encode()
    chars = np.frombuffer(raw, dtype="S1").reshape(-1, width)
    nl = np.full((chars.shape[0], 1), b"\n", dtype="S1")
    return np.hstack([chars, nl]).tobytes()


def parse_lines(out, width):
    return np.frombuffer(bytes.fromhex(out.replace(b"\n", b"").decode()), dtype=f">u{width // 2}").astype(
        np.uint64 if width == 16 else np.uint32)


def encode_job(blocks):
    """blocks: list of (name, bits array[, n array]) -> harness stdin."""
    parts = []
    for name, u, *n in blocks:
        width = 16 if name.endswith("64") else 8
        parts.append(f"{name} {len(u)}\n".encode())
        if n:
            lines = [f"{int(a):0{width}x} {int(k)}\n" for a, k in zip(u, n[0])]
            parts.append("".join(lines).encode())
        else:
            parts.append(hex_lines(u, width))
    return b"".join(parts)


def build(arch, flags, exe):
    cmd = [sys.executable, "-m", "ziglang", "cc", "-target", f"{arch}-linux-musl", "-static",
           *flags, "-fno-sanitize=undefined", "-Wall", "-Wextra", "-Werror",
           "-I", str(RUNTIME), str(HARNESS), str(RUNTIME / "mica_math.c"), "-o", str(exe)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"zig cc failed for {arch} {flags}:\n{done.stderr}")
    return exe


def run_build(arch, exe, stdin):
    cmd = [str(exe)] if arch == "x86_64" else [qemu(), str(exe)]
    return subprocess.run(cmd, input=stdin, capture_output=True, check=True, timeout=300).stdout


def make_blocks():
    blocks = []
    for name, x in random_inputs().items():
        if name.startswith("powi"):
            xs, ks = x
            bits = 64 if name.endswith("64") else 32
            u = xs.view(np.uint64 if bits == 64 else np.uint32)
            xs_sp = [bits_of(v, bits) for v, _, _ in POWI_SPECIALS]
            ks_sp = [k for _, k, _ in POWI_SPECIALS]
            blocks.append((name, np.concatenate([u, np.array(xs_sp, dtype=u.dtype)]),
                           np.concatenate([ks, np.array(ks_sp, dtype=np.int64)])))
        else:
            blocks.append((name, x.view(np.uint64 if x.dtype == np.float64 else np.uint32)))
    specials = special_inputs()
    for name, cases in specials.items():
        dtype = np.uint64 if name.endswith("64") else np.uint32
        blocks.append(("special:" + name, np.array([c[0] for c in cases], dtype=dtype)))
    for name, u, *_ in list(blocks):  # sin(-x) = -sin(x) and cos(-x) = cos(x), bit for bit
        if name.split("_")[0] in ("sin", "cos"):
            sign = np.uint64(1 << 63) if name.endswith("64") else np.uint32(1 << 31)
            blocks.append(("negated:" + name, u[:NNEG] ^ sign))
    return blocks


NNEG = 20_000


def harness_stdin(blocks):
    """Block names before a colon only label the block; the harness sees the function."""
    return encode_job([(b[0].split(":")[-1], *b[1:]) for b in blocks])


@pytest.fixture(scope="module")
def runs(tmp_path_factory, request):
    """Build every variant, run each on the same input, keep raw stdout."""
    out_dir = tmp_path_factory.mktemp("math")
    try:
        have_qemu = bool(request.getfixturevalue("aarch64"))  # installs qemu where it can
    except pytest.skip.Exception:
        have_qemu = False
    wanted = {k: v for k, v in BUILDS.items() if v[0] == "x86_64" or have_qemu}
    blocks = make_blocks()
    stdin = harness_stdin(blocks)

    def one(item):
        key, (arch, flags) = item
        exe = build(arch, flags, out_dir / f"math_{key}")
        return key, run_build(arch, exe, stdin)

    with ThreadPoolExecutor(max_workers=len(wanted)) as pool:
        raw = dict(pool.map(one, wanted.items()))
    return blocks, raw


def results_of(blocks, out):
    """{block name: result bits} for one build's stdout."""
    res, pos = {}, 0
    lines = out.split(b"\n")
    for name, u, *_ in blocks:
        width = 16 if name.endswith("64") else 8
        res[name] = parse_lines(b"\n".join(lines[pos:pos + len(u)]), width)
        pos += len(u)
    return res


# ------------------------------------------------------------ references


MP_BITS = 120  # float64 references: mpmath at this precision
with mpmath.workprec(MP_BITS):
    K_EXACT = 2 * mpmath.sqrt(2 / mpmath.pi)
    C_EXACT = mpmath.mpf("0.044715")


def mp_sigmoid(v):
    return 1 / (1 + mpmath.exp(-v))


def mp_gelu_v(x):
    return K_EXACT * (x + C_EXACT * x**3)


REF_MP = {
    "exp": mpmath.exp,
    "log": mpmath.log,
    "tanh": mpmath.tanh,
    "sigmoid": mp_sigmoid,
    # 0.5*x*(1 + tanh(u)) == x*sigmoid(2u); the second does not cancel.
    "gelu": lambda x: x * mp_sigmoid(mp_gelu_v(x)),
    "silu": lambda x: x * mp_sigmoid(x),
    "sin": mpmath.sin,  # mpmath widens its reduction with the size of x: exact at any x
    "cos": mpmath.cos,
    "softplus": lambda x: mpmath.log1p(mpmath.exp(x)),  # log1p: 1 + e^x would round away a tiny e^x
}


def mp_gelu_grad_terms(x):
    v = mp_gelu_v(x)
    s = mp_sigmoid(v)
    return s, x * s * mp_sigmoid(-v) * K_EXACT * (1 + 3 * C_EXACT * x * x)


def mp_silu_grad_terms(x):
    s = mp_sigmoid(x)
    return s, x * s * mp_sigmoid(-x)


TERMS_MP = {"gelu_grad": mp_gelu_grad_terms, "silu_grad": mp_silu_grad_terms}


def np_sigmoid(v):
    e = np.exp(-np.abs(v))
    return np.where(v >= 0, 1 / (1 + e), e / (1 + e))


def np_sigmoid_neg(v):
    e = np.exp(-np.abs(v))
    return np.where(v >= 0, e / (1 + e), 1 / (1 + e))


K64 = float(K_EXACT)
C64 = 0.044715


def np_gelu_grad_terms(x):
    v = K64 * (x + C64 * x**3)
    s = np_sigmoid(v)
    return s, x * s * np_sigmoid_neg(v) * K64 * (1 + 3 * C64 * x * x)


def np_silu_grad_terms(x):
    s = np_sigmoid(x)
    return s, x * s * np_sigmoid_neg(x)


TERMS_NP = {"gelu_grad": np_gelu_grad_terms, "silu_grad": np_silu_grad_terms}

REF_NP = {
    "exp": np.exp,
    "log": np.log,
    "tanh": np.tanh,
    "sigmoid": np_sigmoid,
    "gelu": lambda x: x * np_sigmoid(K64 * (x + C64 * x**3)),
    "silu": lambda x: x * np_sigmoid(x),
    "sin": np.sin,  # glibc's double sin: under 1 ulp of float64 at every x
    "cos": np.cos,
    "softplus": lambda x: np.logaddexp(0, x),  # log(e^0 + e^x), without overflow or 1 + tiny rounding
}


def ulp_error64(y, v, scale=None):
    """|y - v| in ulps of v, or of `scale` when given (the subnormal ulp below 2^-1022)."""
    if not math.isfinite(y):
        return math.inf
    m = abs(v) if scale is None else scale
    e = mpmath.frexp(m)[1] - 1 if m != 0 else -1074
    ulp = mpmath.ldexp(1, max(e - 52, -1074))
    return float(abs(mpmath.mpf(y) - v) / ulp)


def ulp_error32(y, ref, scale=None):
    """|y - ref| in float32 ulps of ref, or of `scale` when given (float64 arrays)."""
    _, e = np.frexp(ref if scale is None else scale)
    ulp = np.ldexp(1.0, np.maximum(e - 1 - 23, -149))
    err = np.abs(y - ref) / ulp
    return np.where(np.isfinite(y), err, np.inf)


def errors(name, bits, x, y):
    """Per-input ulp errors of results y (floats) at inputs x."""
    if bits == 64:
        out = []
        with mpmath.workprec(MP_BITS):
            for a, b in zip(x, y):
                a = mpmath.mpf(float(a))
                if name in TERMS_MP:
                    s, t = TERMS_MP[name](a)
                    out.append(ulp_error64(float(b), s + t, max(abs(s), abs(t))))
                else:
                    out.append(ulp_error64(float(b), REF_MP[name](a)))
        return np.array(out)
    x = x.astype(np.float64)
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        if name in TERMS_NP:
            s, t = TERMS_NP[name](x)
            return ulp_error32(y.astype(np.float64), s + t, np.maximum(np.abs(s), np.abs(t)))
        return ulp_error32(y.astype(np.float64), REF_NP[name](x))


def powi_errors(bits, x, k, y):
    out = []
    with mpmath.workprec(MP_BITS):
        for a, n, b in zip(x, k, y):
            v = mpmath.mpf(float(a)) ** int(n)
            if bits == 64:
                out.append(ulp_error64(float(b), v))
            else:
                out.append(float(ulp_error32(np.array([float(b)]), np.array([float(v)]))[0]))
    return np.array(out)


def as_float(u, bits):
    return u.view(np.float64) if bits == 64 else u.view(np.float32)


def measure(blocks, res):
    """{(name, bits): max ulp error}; powi's error divided by max(|n|, 1) as well."""
    table = {}
    for name, u, *rest in blocks:
        if ":" in name:
            continue
        fn, bits = name.rsplit("_f", 1)
        bits = int(bits)
        x = as_float(u, bits)
        y = as_float(res[name], bits)
        if fn == "powi":
            n = len(x) - len(POWI_SPECIALS)
            k = rest[0][:n]
            err = powi_errors(bits, x[:n], k, y[:n])
            table[(fn, bits)] = float(err.max())
            table[("powi/|n|", bits)] = float((err / np.maximum(np.abs(k), 1)).max())
        else:
            table[(fn, bits)] = float(errors(fn, bits, x, y).max())
    return table


# ------------------------------------------------------------ tests


@pytest.fixture(scope="module")
def x86(runs):
    blocks, raw = runs
    return results_of(blocks, raw["x86_64-O2"])


@pytest.fixture(scope="module")
def table(runs, x86):
    return measure(runs[0], x86)


@pytest.mark.qemu
def test_aarch64_bits_match_x86_64(runs):
    blocks, raw = runs
    if "aarch64-O2" not in raw:
        pytest.skip("qemu-aarch64-static not installed")
    assert raw["aarch64-O2"] == raw["x86_64-O2"], diff_names(blocks, raw["x86_64-O2"], raw["aarch64-O2"])


def test_O0_bits_match_O2(runs):
    blocks, raw = runs
    assert raw["x86_64-O0"] == raw["x86_64-O2"], diff_names(blocks, raw["x86_64-O2"], raw["x86_64-O0"])
    if "aarch64-O0" in raw:
        assert raw["aarch64-O0"] == raw["aarch64-O2"], diff_names(blocks, raw["aarch64-O2"], raw["aarch64-O0"])


@pytest.mark.qemu
def test_contraction_left_on_changes_nothing(runs):
    """aarch64 has fmadd; the pragma in mica_math.c must keep clang from forming it."""
    blocks, raw = runs
    if "aarch64-O2-contract-on" not in raw:
        pytest.skip("qemu-aarch64-static not installed")
    assert raw["aarch64-O2-contract-on"] == raw["aarch64-O2"], diff_names(
        blocks, raw["aarch64-O2"], raw["aarch64-O2-contract-on"])


def diff_names(blocks, a, b):
    ra, rb = results_of(blocks, a), results_of(blocks, b)
    return "differs in: " + ", ".join(k for k in ra if not np.array_equal(ra[k], rb[k]))


@pytest.mark.parametrize("name", FUNCTIONS + ["powi/|n|"])
@pytest.mark.parametrize("bits", [64, 32])
def test_accuracy(table, name, bits):
    worst = table[(name, bits)]
    assert worst <= MAX_ULP[(name, bits)], f"{name}_f{bits}: {worst:.3f} ulp"


def test_the_documented_bounds_are_the_tables():
    """docs/math.md §11 documents each function's bound, which its row of the table holds."""
    text = (ROOT / "docs" / "math.md").read_text()
    for name, m in TABLE.items():
        row = re.search(rf"^\| {name} +\|.*\| ([\d.]+) / ([\d.]+) \|$", text, re.M)
        assert row and (float(row[1]), float(row[2])) == m.bound, f"docs/math.md's bound of {name}"


def test_special_cases(runs, x86):
    blocks, _ = runs
    specials = special_inputs()
    for name, cases in specials.items():
        got = x86["special:" + name]
        for (xb, want), g in zip(cases, got):
            assert int(g) == want, f"{name}({xb:x}) = {int(g):x}, want {want:x}"


def test_powi_specials(x86):
    for bits in (64, 32):
        got = x86[f"powi_f{bits}"][-len(POWI_SPECIALS):]
        for (x, n, want), g in zip(POWI_SPECIALS, got):
            assert int(g) == expected_bits(want, bits), f"powi_f{bits}({x}, {n}) = {int(g):x}"


def test_sigmoid_in_unit_interval(runs, x86):
    for bits in (64, 32):
        y = as_float(x86[f"sigmoid_f{bits}"], bits)
        assert np.all((y >= 0) & (y <= 1))


def test_tanh_bounded(x86):
    for bits in (64, 32):
        y = as_float(x86[f"tanh_f{bits}"], bits)
        assert np.all(np.abs(y) <= 1)


def test_sin_cos_bounded(x86):
    for bits in (64, 32):
        for fn in ("sin", "cos"):
            y = as_float(x86[f"{fn}_f{bits}"], bits)
            assert np.all(np.abs(y) <= 1)


def test_sin_odd_cos_even(x86):
    """The reductions are symmetric: -x reduces to -r in quadrant -k."""
    for bits in (64, 32):
        sign = np.uint64(1 << 63) if bits == 64 else np.uint32(1 << 31)
        for fn, flip in (("sin", sign), ("cos", 0)):
            plain = x86[f"{fn}_f{bits}"][:NNEG]
            negated = x86[f"negated:{fn}_f{bits}"]
            assert np.array_equal(negated, plain ^ type(plain[0])(flip)), f"{fn}_f{bits}"


def test_exp_monotonic(runs, x86):
    """Sorted inputs give non-decreasing results (a cheap check on the seams of the reduction)."""
    blocks, _ = runs
    for bits in (64, 32):
        x = as_float(dict((b[0], b[1]) for b in blocks)[f"exp_f{bits}"], bits)
        y = as_float(x86[f"exp_f{bits}"], bits)
        order = np.argsort(x, kind="stable")
        assert np.all(np.diff(y[order].astype(np.float64)) >= 0)


def print_table():
    import tempfile

    blocks = make_blocks()
    exe = build("x86_64", ["-O2", "-ffp-contract=off"], Path(tempfile.mkdtemp(prefix="math")) / "math_harness")
    t = measure(blocks, results_of(blocks, run_build("x86_64", exe, harness_stdin(blocks))))
    print(f"{'function':16}{'float64':>10}{'float32':>10}")
    for name in FUNCTIONS + ["powi", "powi/|n|"]:
        print(f"{name:16}{t[(name, 64)]:10.2f}{t[(name, 32)]:10.2f}")


if __name__ == "__main__":
    print_table()
