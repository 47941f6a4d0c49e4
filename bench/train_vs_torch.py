"""Training steps per second and peak memory, Mica against PyTorch CPU eager.

    python bench/train_vs_torch.py

Side by side in one run, each side in its own process (so each peak resident
set is its own), at 1 and 2 threads: the MLP step (hidden 64, 128, 256) and
TrackedRecords' tape-heavy loop. Prints each side's rate, the ratio, and the
peak memory of each. Not a test: numbers vary with the machine.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from micatool import targets  # noqa: E402
from micatool.compile import compile_program, load_source  # noqa: E402
from micatool.link.build import cached_build  # noqa: E402


def run_measured(command: list[str], env: dict) -> tuple[float, int]:
    """(what the process printed first, as a number; its peak RSS in KiB).

    GNU time measures the peak: a direct child of this Python process would
    report Python's own resident set, which Linux carries across exec."""
    done = subprocess.run(["/usr/bin/time", "-f", "%M", *command], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr}")
    return float(done.stdout.split()[0]), int(done.stderr.split()[-1])


def mica_binary(template: str, **constants) -> Path:
    text = (HERE / template).read_text()
    for name, value in constants.items():
        text = re.sub(rf"(\n    {name} = )\d+;", rf"\g<1>{value};", text)
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / template
        path.write_text(text)
        return cached_build(compile_program(load_source(str(path))), targets.native(), "fast")


def best_of(rounds: int, command: list[str], env: dict) -> tuple[float, int]:
    results = [run_measured(command, env) for _ in range(rounds)]
    return max(r for r, _ in results), max(m for _, m in results)


def main() -> None:
    print(f"{os.cpu_count()} cores; mica fast tier vs torch {__import__('torch').__version__} eager, float32 MLP")
    print(f"{'case':<22}{'threads':>8}{'mica steps/s':>14}{'torch steps/s':>15}{'ratio':>8}{'mica MiB':>10}{'torch MiB':>11}")
    cases = [(f"mlp hidden {h}", "mlp_step.mica", {"Hidden": h, "Steps": 300}, ["mlp", str(h), "300"]) for h in (64, 128, 256)]
    cases.append(("trackedrecords loop", "records_step.mica", {"Steps": 20000}, ["records", "2000"]))
    for threads in (1, 2):
        env = dict(os.environ, MICA_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
        for name, template, constants, torch_args in cases:
            binary = mica_binary(template, **constants)
            mica_rate, mica_kib = best_of(3, [str(binary)], env)
            torch_rate, torch_kib = best_of(3, [sys.executable, str(HERE / "torch_side.py"), *torch_args, str(threads)], env)
            print(f"{name:<22}{threads:>8}{mica_rate:>14.0f}{torch_rate:>15.0f}{mica_rate / torch_rate:>8.2f}"
                  f"{mica_kib / 1024:>10.1f}{torch_kib / 1024:>11.1f}")


if __name__ == "__main__":
    main()
