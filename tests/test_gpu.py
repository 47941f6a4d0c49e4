"""The GPU road without a GPU: what a GPU program embeds and how it is built,
and its clear stop where no driver is. The `gpu` tests run only where an
NVIDIA driver and device exist, and skip elsewhere saying why."""

from __future__ import annotations

import ctypes
import subprocess

import pytest
from elftools.elf.elffile import ELFFile

from helpers import EXAMPLES, build, build_text, find_ptxas, run
from device_programs import PROGRAMS, TAPE, host_twin
from micatool.cli import main

PROGRAM = EXAMPLES / "gpu" / "gpu.mica"
KERNELS = ["mica_add_f32", "mica_each_tanh_f32", "mica_gemm_f32", "mica_softmax_rows_f32", "mica_sum_f32"]


def driver_present() -> bool:
    """Would a GPU binary's dlopen("libcuda.so.1") find a driver?"""
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


def test_the_binary_embeds_only_the_kernels_it_launches(capsys):
    assert main(["emit-ptx", str(PROGRAM)]) == 0
    ptx = capsys.readouterr().out
    entries = sorted(line.split()[2].rstrip("(") for line in ptx.splitlines() if line.startswith(".visible .entry"))
    assert entries == KERNELS
    assert ptx.startswith("//") and ".target sm_70" in ptx


@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_90"])
def test_the_programs_ptx_assembles(tmp_path, capsys, arch):
    ptxas, origin = find_ptxas()
    if ptxas is None:
        pytest.skip(origin)
    main(["emit-ptx", str(PROGRAM)])
    (tmp_path / "gpu.ptx").write_text(capsys.readouterr().out)
    done = subprocess.run([ptxas, f"-arch={arch}", str(tmp_path / "gpu.ptx"), "-o", str(tmp_path / "gpu.cubin")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def sections(path) -> dict[str, int]:
    with open(path, "rb") as f:
        return {s.name: s["sh_size"] for s in ELFFile(f).iter_sections()}


def test_a_gpu_program_is_the_glibc_flavour_carrying_its_ptx():
    binary = build(PROGRAM)
    with open(binary, "rb") as f:
        elf = ELFFile(f)
        assert elf.get_section_by_name(".interp") is not None  # dynamically linked against glibc
    assert sections(binary)[".mica_ptx"] > 1000


def test_cpu_programs_never_touch_the_driver():
    binary = build(EXAMPLES / "words" / "words.mica")
    assert ".interp" not in sections(binary) and ".mica_ptx" not in sections(binary)
    assert b"libcuda" not in binary.read_bytes()


def test_without_a_driver_the_first_device_operation_stops_at_its_line():
    if driver_present():
        pytest.skip("an NVIDIA driver is present here: test_runs_on_the_gpu covers this machine")
    result = run(build(PROGRAM))
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("gpu.mica:25: no CUDA device (libcuda.so.1: cannot open shared object file")


@pytest.mark.gpu
def test_runs_on_the_gpu():
    if not driver_present():
        pytest.skip("no NVIDIA driver (libcuda.so.1) on this machine")
    result = run(build(PROGRAM))
    assert result.returncode == 0, result.stderr
    host, device, same = result.stdout.splitlines()
    assert host.split("=")[1] == device.split("=")[1]
    assert same == "64 of 64 elements identical to the bit"


@pytest.mark.gpu
def test_the_gpt_trains_on_the_gpu_with_the_hosts_digits():
    if not driver_present():
        pytest.skip("no NVIDIA driver (libcuda.so.1) on this machine")
    args = ["--steps", "30", "--corpus", str(EXAMPLES / "gpt" / "corpus.txt")]
    host, device = run(build(EXAMPLES / "gpt" / "gpt.mica"), args=args), run(build(EXAMPLES / "gpu" / "gpt.mica"), args=args)
    assert device.returncode == 0, device.stderr
    without_speed = lambda text: [line.rsplit(None, 1)[0] if line[:5].strip().isdigit() else line  # noqa: E731
                                  for line in text.splitlines()]
    assert without_speed(device.stdout) == without_speed(host.stdout)


DEVICE_PROGRAMS = {**{name: text for name, (text, _) in PROGRAMS.items()}, "tape": TAPE}


@pytest.mark.gpu
@pytest.mark.parametrize("element", ["float32", "float64"])
@pytest.mark.parametrize("program", DEVICE_PROGRAMS)
def test_device_programs_print_the_hosts_digits_on_the_gpu(program, element, tmp_path):
    """The fake driver's programs (tests/test_fake_driver.py), on the real driver and the real kernels."""
    if not driver_present():
        pytest.skip("no NVIDIA driver (libcuda.so.1) on this machine")
    other = "float64" if element == "float32" else "float32"
    text = DEVICE_PROGRAMS[program].replace("FLOAT", element).replace("OTHER", other)
    host = run(build_text(tmp_path, host_twin(text), program + "_host.mica"))
    device = run(build_text(tmp_path, text, program + ".mica"))
    assert host.returncode == 0 and device.returncode == 0, device.stderr
    assert device.stdout.splitlines() == host.stdout.splitlines()
