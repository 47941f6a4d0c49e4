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
    device operation the compiler lowers (micatool/compile/lower/device.py),
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

from device_programs import PROGRAMS, SHORT, TAPE, host_twin
from helpers import EXAMPLES, build, build_text, run
from micatool.compile import compile_program, load_source
from micatool.compile import ptx

GPU_EXAMPLE = EXAMPLES / "gpu" / "gpu.mica"


def run_on(fake, binary: Path, tmp_path: Path, **settings) -> tuple[subprocess.CompletedProcess, list[str]]:
    """Runs binary under the fake driver: its result and the kernels it launched, in order."""
    log = tmp_path / f"launches-{binary.name}.log"
    log.unlink(missing_ok=True)
    env = fake.env(log=str(log), **settings)
    result = subprocess.run([str(binary)], capture_output=True, text=True, env=env, timeout=60)
    launches = log.read_text().split("\n")[:-1] if log.exists() else []
    return result, [line.split()[0] for line in launches]


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
    embedded = set(compile_program(load_source(str(EXAMPLES / "gpu" / "gpt.mica"))).kernels)
    assert launched == embedded  # every kernel the binary carries runs: forward, backward and Adam
    assert {"mica_gemm_f32", "mica_softmax_back_rows_f32", "mica_layernorm_back_rows_f32", "mica_gather_back_f32",
            "mica_cross_entropy_back_rows_f32", "mica_adam_step_f32"} <= launched


# ------------------------------------------------------------ every device operation, host and device alike
# (the programs are in tests/device_programs.py)


@pytest.mark.parametrize("element", ["float32", "float64"])
def test_the_device_tape_gives_the_hosts_gradients(element, fake_cuda, tmp_path):
    text = TAPE.replace("FLOAT", element)
    host, device, launched = run_both(fake_cuda, tmp_path, text, "tape")
    assert device.splitlines() == host.splitlines()
    assert [line.split()[0] for line in host.splitlines()] == ["l", "gx", "gw", "gg", "gb", "gt", "adam", "sgd"]
    embedded = compile_program(load_source(str(tmp_path / "tape.mica"))).kernels
    assert set(launched) == set(embedded)  # forward and backward: every kernel the binary carries runs
    assert sum(name.endswith(("_back_" + SHORT[element], "_back_rows_" + SHORT[element])) for name in set(launched)) >= 15


@pytest.mark.parametrize("element", ["float32", "float64"])
@pytest.mark.parametrize("program", PROGRAMS)
def test_the_device_prints_what_the_host_prints(program, element, fake_cuda, tmp_path):
    other = "float64" if element == "float32" else "float32"
    template, kernels = PROGRAMS[program]
    text = template.replace("FLOAT", element).replace("OTHER", other)
    host, device, launched = run_both(fake_cuda, tmp_path, text, program)
    assert device.splitlines() == host.splitlines()  # a difference shows by line
    assert len(host.splitlines()) >= 10
    names = (k if "FLOAT" in k or "OTHER" in k or k.endswith(("_f32", "_f64", "_i8")) else k + "_FLOAT" for k in kernels)
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


QUANTIZE_TRAPS = [
    ("Quantize(xd, 0.5, 0, address qd)", "Quantize of a NaN"),
    ("Quantize(xd, 0.0, 0, address qd)", "Quantize with scale 0: the scale must be a nonzero number"),
    ("QuantizeRows(xd, address qd, address sd)", "QuantizeRows of a NaN"),
    ("QuantizeRows(yd, address qd, address sd)", "QuantizeRows of an infinity"),
]


@pytest.mark.parametrize("call, message", QUANTIZE_TRAPS, ids=["nan", "zero scale", "rows nan", "rows inf"])
def test_quantizing_on_the_device_traps_as_the_host_does(call, message, fake_cuda, tmp_path):
    """The kernels flag what the C traps on; the host then traps at the line with the C's message."""
    text = f"""program Traps;
var
    x, y : matrix[2, 3] of float32;
    xd, yd : matrix[2, 3] of float32 on gpu;
    qd : matrix[2, 3] of int8 on gpu;
    sd : vector[2] of float32 on gpu;
begin
    x := [[1.0, 2.0, 3.0], [4.0, Sqrt(-1.0), 6.0]];
    y := [[1.0, 2.0, 3.0], [4.0, 1.0 / 0.0, 6.0]];
    xd := ToDevice(x);
    yd := ToDevice(y);
    WriteLn('before');
    {call};
    WriteLn('after');
end.
"""
    host = run(build_text(tmp_path, host_twin(text), "traps_host.mica"))
    device, _ = run_on(fake_cuda, build_text(tmp_path, text, "traps.mica"), tmp_path)
    assert (host.returncode, host.stdout, host.stderr) == (1, "before\n", f"traps_host.mica:13: {message}\n")
    assert (device.returncode, device.stdout, device.stderr) == (1, "before\n", f"traps.mica:13: {message}\n")
