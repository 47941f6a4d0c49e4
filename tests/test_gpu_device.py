"""bench/gpu_device.sh, the check a lent GPU machine runs, end to end under the
fake CUDA driver (tests/c/fake_cuda.c): bench/gpu_device.py builds every
binary and its host twin's output, and the script must find every digit the
same, and name each one that is not."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from helpers import ROOT

sys.path.insert(0, str(ROOT / "bench"))
from gpu_device import device_programs  # noqa: E402


def script(prepared, logs, fake, *steps) -> subprocess.CompletedProcess:
    env = fake.env() | {"REPEATS": "1", "PYTHON": sys.executable}
    return subprocess.run(["bash", "bench/gpu_device.sh", str(prepared), str(logs), *steps], capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=600)


@pytest.mark.slow
def test_the_gpu_device_script_checks_every_digit(fake_cuda, tmp_path):
    prepared, logs = tmp_path / "prepared", tmp_path / "logs"
    subprocess.run([sys.executable, "bench/gpu_device.py", "--into", str(prepared), "--sizes", "example"], cwd=ROOT,
                   check=True, capture_output=True, timeout=1200)
    done = script(prepared, logs, fake_cuda)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (logs / "gpu_device.log").read_text() == done.stdout
    for name in device_programs():
        assert f"\nsame digits: {name} (" in done.stdout
    assert "same digits: the GPU GPT's losses, validation and sample are the host GPT's" in done.stdout
    assert "\n  200  1.970808   1.9297 " in done.stdout
    assert re.search(r"\n\| example \| [1-9]\d* \| [1-9]\d* \| - \| \d+\.\d\d \| - \|\n", done.stdout)
    assert (logs / "speed.md").read_text().splitlines()[2].startswith("| example |")
    assert done.stdout.endswith("== done: 0 difference(s)\n")

    # one digit of a device program's expected output, one of the GPT's loss column
    expected = prepared / "programs" / "tape-float64.host"
    expected.write_text(re.sub(r"\d(?=\D*$)", lambda m: str((int(m.group()) + 1) % 10), expected.read_text()))
    host_gpt = prepared / "gpt" / "check.host"
    host_gpt.write_text(host_gpt.read_text().replace("  100  2.303576", "  100  2.303577"))
    done = script(prepared, logs, fake_cuda, "programs", "gpt")
    assert done.returncode == 1
    assert "\nDIFFERS: tape-float64\n" in done.stdout and "\nsame digits: tape-float32 (" in done.stdout
    assert "\nDIFFERS: the GPU GPT's output\n" in done.stdout and "> " in done.stdout
    assert done.stdout.endswith("== done: 2 difference(s)\n")
