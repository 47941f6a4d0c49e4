"""The array forms of the elementary functions equal the scalar ones, bit for bit.

Builds tests/c/math_array_check.c with runtime_c/mica_math{,_array}.c and
mica_cpu.c for x86_64 and aarch64 (static musl) at -O2, at -O0, and at -O2
with -ffp-contract=on (the files' pragmas must keep clang from fusing: AVX-512
and aarch64 have fma). Each run checks every array form of the table of
elementwise functions (micatool/compile/ops/element_functions.py), f64 and
f32, and both outputs of each both form (held against the function and its
gradient), on one input set per precision:
every special value, the neighbours of every threshold, random bit patterns
over all exponents and dense sweeps (see the harness), whole, in place, and
in short pieces at every offset; any differing bit fails.

Runs: x86_64 -O2 under every instruction set the CPU offers (MICA_ISA caps
it) on the full set (about 1.09M inputs per function); -O0, contract-on and
aarch64 (under qemu-aarch64-static) on a share of the random and swept
inputs (specials and edges whole), to stay within ~20 s. The harness also
prints a hash of the scalar results: it must agree across all builds that
ran the same share, so the scalar functions agree across architectures and
optimisation levels on these inputs too.
"""

from __future__ import annotations

import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from helpers import qemu

from micatool.compile.ops.element_functions import FUNCTIONS as TABLE, array_functions

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ["tests/c/math_array_check.c", "runtime_c/mica_math.c", "runtime_c/mica_math_array.c", "runtime_c/mica_cpu.c"]
FLAGS = ["-static", "-fno-sanitize=undefined", "-Wall", "-Wextra", "-Werror", "-Iruntime_c"]
ISAS = ["sse2", "avx2", "avx512"]
# the harness's order: the array forms, then each both form's two outputs
FUNCTIONS = [f"{f}_{s}" for s in ("f64", "f32") for f in
             array_functions() + [f"{t.c}_both_{part}" for t in TABLE if t.saves_derivative for part in "yd"]]
FN_LINE = re.compile(r"^fn (\w+) n (\d+) mismatches (\d+) hash ([0-9a-f]{16})$", re.M)

# name -> (arch, compile flags)
BUILDS = {
    "x86_64-O2": ("x86_64", ["-O2", "-ffp-contract=off"]),
    "x86_64-O0": ("x86_64", ["-O0", "-ffp-contract=off"]),
    "x86_64-contract-on": ("x86_64", ["-O2", "-ffp-contract=on"]),
    "aarch64-O2": ("aarch64", ["-O2", "-ffp-contract=off"]),
    "aarch64-O0": ("aarch64", ["-O0", "-ffp-contract=off"]),
    "aarch64-contract-on": ("aarch64", ["-O2", "-ffp-contract=on"]),
}
# share of the random and swept inputs each slower build runs (x86_64-O2: all)
SHARE = {"x86_64-O0": 0.25, "x86_64-contract-on": 0.25, "aarch64-O2": 0.5, "aarch64-O0": 0.125,
         "aarch64-contract-on": 0.25}


def zig_cc(arch: str, flags: list[str], out: Path) -> Path:
    """Compiles SOURCES with flags; links at -O2 so -O0 reuses zig's cached libc."""
    zig = [sys.executable, "-m", "ziglang", "cc", "-target", f"{arch}-linux-musl"]
    objs = []
    for src in SOURCES:
        obj = out.with_name(f"{out.name}_{Path(src).stem}.o")
        done = subprocess.run([*zig, *flags, *FLAGS, "-c", src, "-o", str(obj)], cwd=ROOT, capture_output=True, text=True)
        assert done.returncode == 0, f"zig cc {arch} {flags} {src}:\n{done.stderr}"
        objs.append(str(obj))
    subprocess.run([*zig, "-O2", "-static", *objs, "-o", str(out)], cwd=ROOT, check=True, capture_output=True, text=True)
    return out


@pytest.fixture(scope="module")
def exes(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("math_array")
    with ThreadPoolExecutor(max_workers=2) as pool:
        jobs = {k: pool.submit(zig_cc, arch, flags, out / f"check_{k}") for k, (arch, flags) in BUILDS.items()}
        return {k: j.result() for k, j in jobs.items()}


def check(exe: Path, share: float = 1.0, isa: str | None = None) -> dict:
    """Runs the harness; asserts no mismatch; returns {"isa", "hash": {fn: hash}}."""
    env = {"PATH": "/usr/bin:/bin"}
    if isa:
        env["MICA_ISA"] = isa
    cmd = [str(exe), str(share)]
    if "aarch64" in exe.name:
        cmd.insert(0, qemu() or "qemu-aarch64-static")
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    rows = FN_LINE.findall(proc.stdout)
    assert [r[0] for r in rows] == FUNCTIONS, f"{exe.name}: {proc.stdout}{proc.stderr}"
    bad = [r[0] for r in rows if r[2] != "0"]
    assert proc.returncode == 0 and not bad, f"{exe.name} share {share} MICA_ISA={isa}: {bad}\n{proc.stdout}"
    assert all(int(r[1]) > (1_000_000 if share == 1 else 0) for r in rows)
    return {"isa": proc.stdout.split()[1], "hash": {r[0]: r[3] for r in rows}}


def run_all(jobs: list[tuple]) -> list[dict]:
    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(lambda job: check(*job), jobs))


@pytest.fixture(scope="module")
def x86_isas(exes) -> list[str]:
    native = check(exes["x86_64-O2"], 0.01)["isa"]
    return ISAS[: ISAS.index(native) + 1]


@pytest.fixture(scope="module")
def reference(exes) -> dict[float, dict]:
    """The x86_64 -O2 scalar hashes at every share used (SSE2: the baseline)."""
    shares = sorted(set(SHARE.values()) | {1.0})
    return dict(zip(shares, (r["hash"] for r in run_all([(exes["x86_64-O2"], s, "sse2") for s in shares]))))


def test_x86_64_every_isa_full_set(exes, x86_isas, reference):
    results = run_all([(exes["x86_64-O2"], 1.0, isa) for isa in x86_isas])
    assert [r["isa"] for r in results] == x86_isas  # the cap took effect
    assert all(r["hash"] == reference[1.0] for r in results)


@pytest.mark.parametrize("build", ["x86_64-O0", "x86_64-contract-on"])
def test_x86_64_O0_and_contract_on_every_isa(exes, x86_isas, reference, build):
    results = run_all([(exes[build], SHARE[build], isa) for isa in x86_isas])
    assert [r["isa"] for r in results] == x86_isas
    assert all(r["hash"] == reference[SHARE[build]] for r in results)


def test_unknown_isa_cap_is_ignored(exes, x86_isas):
    assert check(exes["x86_64-O2"], 0.01, "pentium")["isa"] == x86_isas[-1]


@pytest.mark.qemu
def test_aarch64_neon(exes, reference, aarch64):
    builds = ["aarch64-O2", "aarch64-O0", "aarch64-contract-on"]
    results = run_all([(exes[b], SHARE[b]) for b in builds])
    assert [r["isa"] for r in results] == ["neon"] * 3
    for b, r in zip(builds, results):
        assert r["hash"] == reference[SHARE[b]], f"{b}: the scalar results differ from x86_64's"
