"""GPU programs end to end without a GPU, under the fake CUDA driver
(tests/c/fake_cuda.c, built by tests/fake_driver.py).

A GPU program runs through its real device glue (runtime_c/mica_gpu.c: the
driver loaded with dlopen, allocations, copies, launches) and the compiler's
device lowering; the fake runs each launched kernel's C adapter, whose bits
tests/test_ptx.py checks against the PTX itself. So a device program must
print exactly what the same program prints on the host:

  - examples/gpu/gpu.mica prints the same digits for host and device;
  - generated programs, each written once for the device and turned into its
    host twin by dropping `on gpu`, `ToDevice` and `ToHost`, cover every
    device operation the compiler lowers (micatool/compile/lower_device.py),
    in float32 and float64, with launches of more than one block; each must
    launch exactly the kernels listed for it;
  - the device glue's failures (no driver, no device, out of memory, a
    kernel the driver lacks) stop at their Mica line with the driver's
    reason;
  - the fake itself refuses what a GPU would not do (a pointer outside every
    allocation, a grid that does not cover the kernel's threads), so it
    cannot hide a bad launch.

The device lowering bugs found this way stay as tests at the end, each
with its smallest program.
"""

from __future__ import annotations

import ctypes
import math
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from helpers import EXAMPLES, build, build_text, run
from micatool.compile import load_source, to_ptx
from micatool.link import ptx

GPU_EXAMPLE = EXAMPLES / "gpu" / "gpu.mica"


def run_on(fake, binary: Path, tmp_path: Path, **settings) -> tuple[subprocess.CompletedProcess, list[str]]:
    """Runs binary under the fake driver: its result and the kernels it launched, in order."""
    log = tmp_path / f"launches-{binary.name}.log"
    log.unlink(missing_ok=True)
    env = fake.env(log=str(log), **settings)
    result = subprocess.run([str(binary)], capture_output=True, text=True, env=env, timeout=60)
    launches = log.read_text().split("\n")[:-1] if log.exists() else []
    return result, [line.split()[0] for line in launches]


def host_twin(text: str) -> str:
    """The same program on the host: no `on gpu`, and the crossings become parentheses."""
    return re.sub(r"\bTo(Device|Host)\(", "(", re.sub(r"\s+on gpu\b", "", text))


def run_both(fake, tmp_path: Path, text: str, name: str) -> tuple[str, str, list[str]]:
    """(host output, device output, kernels launched) of a device program and its host twin."""
    host = subprocess.run([str(build_text(tmp_path, host_twin(text), name + "_host.mica"))], capture_output=True,
                          text=True, timeout=60)
    assert host.returncode == 0, host.stderr
    device, launched = run_on(fake, build_text(tmp_path, text, name + ".mica"), tmp_path)
    assert device.returncode == 0, device.stderr
    return host.stdout, device.stdout, launched


# ------------------------------------------------------------ the example


def test_the_gpu_example_prints_the_hosts_digits(fake_cuda, tmp_path):
    result, launched = run_on(fake_cuda, build(GPU_EXAMPLE), tmp_path)
    assert result.returncode == 0, result.stderr
    host, device, same = result.stdout.splitlines()
    assert host.startswith("host   y[0..3] = ") and device.startswith("device y[0..3] = ")
    assert host.split("=", 1)[1] == device.split("=", 1)[1]
    assert same == "64 of 64 elements identical to the bit"
    assert launched == ["mica_gemm_f32", "mica_add_f32", "mica_each_tanh_f32", "mica_softmax_rows_f32", "mica_sum_f32"]


def test_the_gpu_gpt_prints_the_host_gpts_digits(fake_cuda, tmp_path):
    """examples/gpu/gpt.mica records on the device tape and steps Adam with kernels; its losses and
    its sample are the host GPT's, digit for digit (all but the tokens/s column)."""
    corpus = EXAMPLES / "gpt" / "corpus.txt"
    args = ["--steps", "30", "--corpus", str(corpus)]
    host = run(build(EXAMPLES / "gpt" / "gpt.mica"), args=args)
    assert host.returncode == 0, host.stderr
    log = tmp_path / "gpt-launches.log"
    device = subprocess.run([str(build(EXAMPLES / "gpu" / "gpt.mica")), *args], capture_output=True, text=True,
                            env=fake_cuda.env(log=str(log)), timeout=300)
    assert device.returncode == 0, device.stderr
    without_speed = lambda text: [re.sub(r"\s+\d+$", "", line) for line in text.splitlines()]  # noqa: E731
    assert without_speed(device.stdout) == without_speed(host.stdout)
    assert "    1  4.565619   4.5514" in device.stdout.splitlines()[4]
    launched = {line.split()[0] for line in log.read_text().splitlines()}
    embedded = set(re.findall(r"\.visible \.entry (\w+)\(", to_ptx(load_source(str(EXAMPLES / "gpu" / "gpt.mica")))))
    assert launched == embedded  # every kernel the binary carries runs: forward, backward and Adam
    assert {"mica_gemm_f32", "mica_softmax_back_rows_f32", "mica_layernorm_back_rows_f32", "mica_gather_back_f32",
            "mica_cross_entropy_back_rows_f32", "mica_adam_step_f32"} <= launched


# ------------------------------------------------------------ every device operation, host and device alike

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
# under Log and Sqrt, Exp's overflow and underflow, tiny and huge values.
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
    WriteLn('Tanh ', ToHost(Tanh(xd)));
    WriteLn('Exp ', ToHost(Exp(xd)));
    WriteLn('Log ', ToHost(Log(xd)));
    WriteLn('Sqrt ', ToHost(Sqrt(xd)));
    WriteLn('Relu ', ToHost(Relu(xd)));
    WriteLn('Gelu ', ToHost(Gelu(xd)));
    WriteLn('Silu ', ToHost(Silu(xd)));
    WriteLn('Sigmoid ', ToHost(Sigmoid(xd)));
    WriteLn('Abs ', ToHost(Abs(xd)));
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
"""

# Every operation the device tape records, its backward walk, Gradient, and the
# optimizer steps on device storage. Host and device must agree on every gradient.
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
        y := Tanh(y) - Mul(y, Sigmoid(y)) * 0.5 + Gelu(y) / 3 + Silu(y) - Relu(y) + Abs(y);
        y := Softmax(CausalMask(y * Transpose(y))) * y + Exp(y * 0.1) + Log(Abs(y) + 1) + Sqrt(Abs(y) + 1);
        y := RmsNorm(y, g) - (-y) + 1.5;
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
"""


@pytest.mark.parametrize("element", ["float32", "float64"])
def test_the_device_tape_gives_the_hosts_gradients(element, fake_cuda, tmp_path):
    text = TAPE.replace("FLOAT", element)
    host, device, launched = run_both(fake_cuda, tmp_path, text, "tape")
    assert device.splitlines() == host.splitlines()
    assert [line.split()[0] for line in host.splitlines()] == ["l", "gx", "gw", "gg", "gb", "gt", "adam", "sgd"]
    embedded = re.findall(r"\.visible \.entry (\w+)\(", to_ptx(load_source(str(tmp_path / "tape.mica"))))
    assert set(launched) == set(embedded)  # forward and backward: every kernel the binary carries runs
    assert sum(name.endswith(("_back_" + SHORT[element], "_back_rows_" + SHORT[element])) for name in set(launched)) >= 15


ELEMENTWISE_KERNELS = {"add", "sub", "add_rows", "sub_rows", "scale", "divide", "shift", "rsub", "neg", "mul", "div",
                       "scale_at", "divide_at", "shift_at", "rsub_at", "each_tanh"}
# Each program's kernels: `_FLOAT` is added to a name that has neither placeholder.
PROGRAMS = {
    "arithmetic": (ARITHMETIC, ELEMENTWISE_KERNELS | {"convert_OTHER_FLOAT", "convert_FLOAT_OTHER", "scale_OTHER"}),
    "products": (PRODUCTS, {"gemm", "transpose", "causal_mask", "softmax_rows", "scale"}),
    "functions": (FUNCTIONS, {f"each_{f}" for f in ("tanh", "exp", "log", "sqrt", "relu", "gelu", "silu", "sigmoid",
                                                    "abs")}
                  | {"sum", "mean", "max", "softmax_rows", "layernorm_rows", "rmsnorm_rows", "scale", "add_rows",
                     "sub_rows", "neg"}),
}
SHORT = {"float32": "f32", "float64": "f64"}


@pytest.mark.parametrize("element", ["float32", "float64"])
@pytest.mark.parametrize("program", PROGRAMS)
def test_the_device_prints_what_the_host_prints(program, element, fake_cuda, tmp_path):
    other = "float64" if element == "float32" else "float32"
    template, kernels = PROGRAMS[program]
    text = template.replace("FLOAT", element).replace("OTHER", other)
    host, device, launched = run_both(fake_cuda, tmp_path, text, program)
    assert device.splitlines() == host.splitlines()  # a difference shows by line
    assert len(host.splitlines()) >= 10
    names = (k if "FLOAT" in k or "OTHER" in k else k + "_FLOAT" for k in kernels)
    expected = {"mica_" + k.replace("FLOAT", SHORT[element]).replace("OTHER", SHORT[other]) for k in names}
    assert set(launched) == expected


# ------------------------------------------------------------ the device glue's failures


@pytest.fixture(scope="module")
def example_binary() -> Path:
    return build(GPU_EXAMPLE)


@pytest.mark.parametrize("settings, message", [
    ({"devices": 0}, "gpu.mica:25: no CUDA device (the driver sees none)\n"),
    ({"init": 100}, "gpu.mica:25: no CUDA device (no CUDA-capable device is detected (fake CUDA driver: "
                    "FAKE_CUDA_INIT=100))\n"),
    ({"memory": 4096}, "gpu.mica:25: GPU allocation failed: out of memory (fake CUDA driver: 16384 bytes asked, "
                       "0 of 4096 in use) (CUDA error 2)\n"),
], ids=["no device", "cuInit fails", "out of memory"])
def test_driver_failures_stop_at_the_first_device_line(settings, message, fake_cuda, example_binary, tmp_path):
    result, launched = run_on(fake_cuda, example_binary, tmp_path, **settings)
    assert (result.returncode, result.stdout, result.stderr) == (1, "", message)
    assert launched == []


def test_a_kernel_the_driver_lacks_is_named_at_its_line(fake_cuda, tmp_path):
    """The fake's adapters cover every kernel; one renamed away stands for a driver without it."""
    directory = tmp_path / "lacking"
    directory.mkdir()
    data = fake_cuda.library.read_bytes().replace(b"mica_each_tanh_f32\0", b"mica_each_tanX_f32\0")
    assert data != fake_cuda.library.read_bytes()
    (directory / "libcuda.so.1").write_bytes(data)
    env = fake_cuda.env()
    env["LD_LIBRARY_PATH"] = str(directory)
    result = subprocess.run([str(build(GPU_EXAMPLE))], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == ("gpu.mica:28: GPU mica_each_tanh_f32 failed: operation not supported (fake CUDA driver: "
                             "no C adapter for kernel mica_each_tanh_f32 in tests/c/ptx_harness.inc) (CUDA error 801)\n")


def test_a_training_loop_runs_in_constant_device_memory(fake_cuda, tmp_path):
    """Temporaries go back to mica_gpu.c's cache: 2000 steps fit in 16 KiB of device memory."""
    text = """program Steps;
var
    w, g : matrix[8, 8] of float32 on gpu;
    x : matrix[8, 8] of float32;
    i : integer;
begin
    Seed(1);
    Normal(address x, 0.0, 0.1);
    w := ToDevice(x);
    g := ToDevice(x);
    for i := 1 to 2000 do
        w := w - Tanh(w * g + w) * 0.01;
    WriteLn(ToHost(Sum(w)));
end.
"""
    result, launched = run_on(fake_cuda, build_text(tmp_path, text, "steps.mica"), tmp_path, memory=16384)
    assert result.returncode == 0, result.stderr
    assert len(launched) == 5 * 2000 + 1
    host = subprocess.run([str(build_text(tmp_path, host_twin(text), "steps_host.mica"))], capture_output=True,
                          text=True)
    assert result.stdout == host.stdout


# ------------------------------------------------------------ the fake driver itself


class Driver:
    """One fresh instance of the fake (its own copy of the library, so its own state), through ctypes."""

    def __init__(self, library: Path, tmp_path: Path):
        copy = tmp_path / "libcuda-copy.so"
        shutil.copy(library, copy)
        self.lib = ctypes.CDLL(str(copy))
        self.lib.cuGetErrorString.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        self.lib.cuModuleGetFunction.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_char_p]
        self.lib.cuModuleLoadData.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p]
        self.lib.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
        self.lib.cuMemFree_v2.argtypes = [ctypes.c_uint64]
        self.lib.cuMemcpyHtoD_v2.argtypes = [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t]
        self.lib.cuMemcpyDtoH_v2.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t]
        self.lib.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3

    def text(self, code: int) -> str | None:
        out = ctypes.c_char_p()
        status = self.lib.cuGetErrorString(code, ctypes.byref(out))
        return out.value.decode() if status == 0 else None

    def start(self) -> None:
        context = ctypes.c_void_p()
        device = ctypes.c_int()
        assert self.lib.cuInit(0) == 0
        assert self.lib.cuDeviceGet(ctypes.byref(device), 0) == 0
        assert self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(context), device) == 0
        assert self.lib.cuCtxSetCurrent(context) == 0

    def load(self, names: list[str]):
        module = ctypes.c_void_p()
        assert self.lib.cuModuleLoadData(ctypes.byref(module), ptx.render(names).encode()) == 0
        return module

    def function(self, module, name: str) -> tuple[int, ctypes.c_void_p]:
        f = ctypes.c_void_p()
        return self.lib.cuModuleGetFunction(ctypes.byref(f), module, name.encode()), f

    def alloc(self, data: bytes) -> int:
        p = ctypes.c_uint64()
        assert self.lib.cuMemAlloc_v2(ctypes.byref(p), len(data)) == 0
        assert self.lib.cuMemcpyHtoD_v2(p.value, data, len(data)) == 0
        return p.value

    def read(self, p: int, n: int) -> bytes:
        out = ctypes.create_string_buffer(n)
        assert self.lib.cuMemcpyDtoH_v2(out, p, n) == 0
        return out.raw

    def launch(self, f, grid: tuple[int, int], args: list) -> int:
        values = (ctypes.c_void_p * len(args))(*[ctypes.addressof(a) for a in args])
        return self.lib.cuLaunchKernel(f, grid[0], grid[1], 1, 256, 1, 1, 0, None, values, None)


@pytest.fixture
def driver(fake_cuda, tmp_path) -> Driver:
    return Driver(fake_cuda.library, tmp_path)


def test_the_fake_runs_a_kernel_from_its_ptx_signature(driver):
    import numpy as np

    driver.start()
    module = driver.load(["mica_add_f64", "mica_scale_f32"])
    status, add = driver.function(module, "mica_add_f64")
    assert status == 0
    a, b = np.arange(300, dtype=np.float64), np.full(300, 0.5)
    pa, pb, out = driver.alloc(a.tobytes()), driver.alloc(b.tobytes()), driver.alloc(bytes(2400))
    args = [ctypes.c_uint64(out), ctypes.c_uint64(pa), ctypes.c_uint64(pb), ctypes.c_int64(300)]
    assert driver.launch(add, (2, 1), args) == 0 and driver.lib.cuCtxSynchronize() == 0
    assert np.frombuffer(driver.read(out, 2400)) .tolist() == (a + b).tolist()
    status, scale = driver.function(module, "mica_scale_f32")
    x = np.linspace(-1, 1, 10, dtype=np.float32)
    px, py = driver.alloc(x.tobytes()), driver.alloc(bytes(40))
    args = [ctypes.c_uint64(py), ctypes.c_uint64(px), ctypes.c_float(0.1), ctypes.c_int64(10)]
    assert driver.launch(scale, (1, 1), args) == 0 and driver.lib.cuCtxSynchronize() == 0
    assert np.frombuffer(driver.read(py, 40), np.float32).tolist() == (x * np.float32(0.1)).tolist()
    # a grid that does not cover the kernel's threads would leave outputs unwritten on a GPU
    args = [ctypes.c_uint64(out), ctypes.c_uint64(pa), ctypes.c_uint64(pb), ctypes.c_int64(300)]
    assert driver.launch(add, (1, 1), args) == 1
    assert driver.text(1) == ("invalid argument (fake CUDA driver: mica_add_f64: the launch covers 256 threads, "
                              "the kernel needs n = 300)")
    assert driver.launch(add, (2, 2), args) == 1
    assert "mica_add_f64 takes no grid height" in driver.text(1)


def test_unknown_kernels_and_bad_pointers_are_errors_naming_them(driver):
    assert driver.lib.cuMemAlloc_v2(ctypes.byref(ctypes.c_uint64()), 8) == 3  # before cuInit
    assert driver.text(3).startswith("initialization error")
    driver.start()
    module = driver.load(["mica_neg_f32"])
    status, _ = driver.function(module, "mica_frobnicate_f32")
    assert status == 500
    assert driver.text(500) == "named symbol not found (fake CUDA driver: the module has no .entry mica_frobnicate_f32)"
    status, neg = driver.function(module, "mica_neg_f32")
    out = driver.alloc(bytes(16))
    host = ctypes.create_string_buffer(16)
    args = [ctypes.c_uint64(out), ctypes.c_uint64(ctypes.addressof(host)), ctypes.c_int64(4)]
    assert driver.launch(neg, (1, 1), args) == 0  # a fault shows at synchronize, and stays
    assert driver.lib.cuCtxSynchronize() == 700
    assert re.fullmatch(r"an illegal memory access was encountered \(fake CUDA driver: kernel mica_neg_f32, "
                        r"parameter a = 0x[0-9a-f]+: no device allocation holds it\)", driver.text(700))
    assert driver.lib.cuMemFree_v2(out) == 700


def powi(x: float, n: int) -> float:
    """mica_powi_f64: binary exponentiation, low bit first."""
    r, b = 1.0, x
    while True:
        if n & 1:
            r = r * b
        n >>= 1
        if n == 0:
            return r
        b = b * b


def test_adam_steps_recover_t_from_the_kernels_biases(driver):
    """adam_step takes bias1, bias2; its adapter takes t (ptx_adapters.h): the fake finds t."""
    driver.start()
    module = driver.load(["mica_adam_step_f64"])
    status, adam = driver.function(module, "mica_adam_step_f64")
    assert status == 0
    w, g, m, v = [1.0, -2.0, 0.5], [0.25, 0.5, -1.0], [0.0, 0.1, 0.2], [0.0, 0.01, 0.3]
    ptrs = [driver.alloc(struct.pack("3d", *x)) for x in (w, g, m, v)]
    lr, beta1, beta2, eps = 0.01, 0.9, 0.999, 1e-8
    for t in (7, 8, 3):
        bias1, bias2 = 1 - powi(beta1, t), 1 - powi(beta2, t)
        args = [*map(ctypes.c_uint64, ptrs), ctypes.c_int64(3), *map(ctypes.c_double, (lr, beta1, beta2, eps, bias1, bias2))]
        assert driver.launch(adam, (1, 1), args) == 0 and driver.lib.cuCtxSynchronize() == 0
        for i in range(3):
            m[i] = beta1 * m[i] + (1 - beta1) * g[i]
            v[i] = beta2 * v[i] + (1 - beta2) * g[i] * g[i]
            w[i] = w[i] - lr * (m[i] / bias1) / (math.sqrt(v[i] / bias2) + eps)
        assert [struct.unpack("3d", driver.read(p, 24)) for p in (ptrs[0], ptrs[2], ptrs[3])] == [tuple(w), tuple(m), tuple(v)]
    args[-1] = ctypes.c_double(0.5)  # no t gives these biases
    assert driver.launch(adam, (1, 1), args) == 1
    assert "mica_adam_step_f64: no step t gives bias1 and bias2" in driver.text(1)


def test_every_error_code_has_its_text(driver):
    codes = [int(c) for c in re.findall(r"CUDA_ERROR_\w+ = (\d+)", (Path(__file__).parent / "c" / "fake_cuda.c")
                                        .read_text())]
    assert len(codes) >= 13
    for code in [0, *codes]:
        assert driver.text(code), code
    assert driver.text(12345) is None


# ------------------------------------------------------------ bugs found, each with its smallest program


def test_a_program_without_kernels_moves_values(fake_cuda, tmp_path):
    text = """program Moves;
var
    s : float32;
    k, j : float32 on gpu;
begin
    s := 2.5;
    k := ToDevice(s);
    j := k;
    WriteLn(ToHost(j));
end.
"""
    host, device, launched = run_both(fake_cuda, tmp_path, text, "moves")
    assert device == host == "2.5\n" and launched == []


DEVICE_COPIES = {
    "record field": """program Fields;
type
    Layer = record
        w : vector[2] of float32 on gpu;
    end;
var
    l : Layer;
begin
    l.w := ToDevice(float32([1.0, 2.0]));
    WriteLn(ToHost(l.w * 2));
end.
""",
    "array element": """program Elements;
var
    ws : array[0..1] of vector[2] of float32 on gpu;
begin
    ws[1] := ToDevice(float32([1.0, 2.0]));
    WriteLn(ToHost(ws[1] * 2));
end.
""",
    "value parameter": """program Parameters;
var
    v : vector[2] of float32 on gpu;

function Twice(x : vector[2] of float32 on gpu) : vector[2] of float32 on gpu;
begin
    x := x * 2;
    Twice := x;
end;

begin
    v := ToDevice(float32([1.0, 2.0]));
    WriteLn(ToHost(Twice(v)));
end.
""",
}


@pytest.mark.parametrize("where", DEVICE_COPIES)
def test_device_values_inside_records_arrays_and_value_parameters(where, fake_cuda, tmp_path):
    host, device, _ = run_both(fake_cuda, tmp_path, DEVICE_COPIES[where], "copies")
    assert device == host == "2.0 4.0\n"


def test_optimizer_steps_on_device_tensors(fake_cuda, tmp_path):
    text = """program Steps;
var
    w, g, m : vector[2] of float32 on gpu;
begin
    w := ToDevice(float32([1.0, 2.0]));
    g := ToDevice(float32([0.5, -0.5]));
    SgdStep(address w, g, address m, 0.1, 0.9);
    WriteLn(ToHost(w));
end.
"""
    host, device, launched = run_both(fake_cuda, tmp_path, text, "steps")
    assert device == host and launched == ["mica_sgd_step_f32"]


def test_a_copy_of_a_never_written_place_reads_as_zeros(fake_cuda, tmp_path):
    """b := a with a never written once reserved b zero bytes, which ToHost(b) read past."""
    text = """program Unwritten;
var
    a, b : vector[4] of float32 on gpu;
begin
    b := a;
    WriteLn(ToHost(b), ' ', ToHost(b + a));
end.
"""
    host, device, launched = run_both(fake_cuda, tmp_path, text, "unwritten")
    assert device == host == "0.0 0.0 0.0 0.0 0.0 0.0 0.0 0.0\n" and launched == ["mica_add_f32"]
