"""Prepares what bench/gpu_device.sh runs on a machine with an NVIDIA GPU.

    python bench/gpu_device.py [--into out/gpu-device]

The GPU machine has no package registry and its own Python, so everything is
built here and carried there: the GPU flavour of every device program for
x86_64, each beside its host twin's output as this machine printed it.
Nothing in the folder needs micatool to run.

    programs/NAME            a device program (GPU flavour, checked tier)
    programs/NAME.host       what its host twin prints (the digits NAME must print)
    gpt/check                examples/gpu/gpt.mica (checked tier), trained for CHECK_STEPS
    gpt/check.host           what examples/gpt/gpt.mica prints for the same steps
    gpt/gpu-SIZE             the GPU GPT at SIZE, fast tier, for the speed table
    gpt/host-SIZE            the host GPT at SIZE, fast tier (static musl)
    gpt/init-SIZE.safetensors  the host GPT's initial weights, which PyTorch loads
    gpt/batch-SIZE.txt       step 1's windows and targets, and the host's loss on them
    gpt/SIZE.env             the size's shapes, for the script's tokens/s

The device programs are tests/device_programs.py's (float32 and float64) and
examples/gpu/gpu.mica; SIZE is bench/gpt_sizes.py's "example" and "wide"
(four times the example's width: C 256, 8 heads), or those --sizes names.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

from device_programs import PROGRAMS, TAPE, host_twin  # noqa: E402
from gpt_sizes import CORPUS, GPT, GPU_GPT, constants, corpus_ids, sized, windows  # noqa: E402

from micatool import targets  # noqa: E402
from micatool.compile import compile_program, load_source  # noqa: E402
from micatool.link.build import cached_build  # noqa: E402

CHECK_STEPS = 200
SPEED_STEPS = {"example": 200, "wide": 100}  # measured steps, after the first
# the speed copies evaluate one window and sample one character: training alone is measured
AFFORDABLE = {"EvalWindows": 1, "SampleLength": 1}
X86 = targets.resolve("x86_64-linux")


def binary(source: Path, tier: str) -> Path:
    return cached_build(compile_program(load_source(str(source))), X86, tier)


def run(command: list, **kw) -> str:
    done = subprocess.run([str(c) for c in command], capture_output=True, text=True, timeout=600, cwd=ROOT, **kw)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, command))} failed here:\n{done.stderr}")
    return done.stdout


def device_programs() -> dict[str, str]:
    """Every device program's text by its name: the example and each of tests/device_programs.py in both floats."""
    texts = {"gpu-example": (ROOT / "examples" / "gpu" / "gpu.mica").read_text()}
    for name, text in {**{n: t for n, (t, _) in PROGRAMS.items()}, "tape": TAPE}.items():
        for element, other in (("float32", "float64"), ("float64", "float32")):
            texts[f"{name}-{element}"] = text.replace("FLOAT", element).replace("OTHER", other)
    return texts


def prepare_programs(into: Path, scratch: Path) -> None:
    (into / "programs").mkdir(parents=True)
    for name, text in device_programs().items():
        device, host = scratch / f"{name}.mica", scratch / f"{name}_host.mica"
        device.write_text(text)
        host.write_text(host_twin(text))
        shutil.copy(binary(device, "checked"), into / "programs" / name)
        (into / "programs" / f"{name}.host").write_text(run([binary(host, "checked")]))


def prepare_gpt(into: Path, sizes: list[str]) -> None:
    gpt = into / "gpt"
    gpt.mkdir()
    args = ["--steps", CHECK_STEPS, "--corpus", CORPUS.relative_to(ROOT)]
    shutil.copy(binary(GPU_GPT, "checked"), gpt / "check")
    (gpt / "check.host").write_text(run([binary(GPT, "checked"), *args]))
    ids = corpus_ids()
    for size in sizes:
        program = sized(size, GPT, **AFFORDABLE)
        host = binary(program, "fast")
        shutil.copy(host, gpt / f"host-{size}")
        shutil.copy(binary(sized(size, GPU_GPT, **AFFORDABLE), "fast"), gpt / f"gpu-{size}")
        init = gpt / f"init-{size}.safetensors"
        run([host, "--corpus", CORPUS, "--until", "0", "--save", init])
        first = run([host, "--corpus", CORPUS, "--until", "1"])
        loss = next(line.split()[1] for line in first.splitlines() if line.split()[:1] == ["1"])
        k = constants(program)
        xs, ys = windows(ids, k, 1)
        (gpt / f"batch-{size}.txt").write_text(
            f"loss {loss}\n" + "".join(f"{' '.join(map(str, x))}\n{' '.join(map(str, y))}\n" for x, y in zip(xs, ys)))
        (gpt / f"{size}.env").write_text(f"B={k['B']} T={k['T']} C={k['C']} H={k['H']} L={k['L']} STEPS={SPEED_STEPS[size]}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--into", type=Path, default=ROOT / "out" / "gpu-device",
                        help="the folder to fill (made anew; default out/gpu-device, which git ignores)")
    parser.add_argument("--sizes", default=",".join(SPEED_STEPS), help="the GPT sizes to measure, of %(default)s")
    args = parser.parse_args()
    into = args.into.resolve()
    shutil.rmtree(into, ignore_errors=True)
    scratch = into / "sources"
    scratch.mkdir(parents=True)
    prepare_programs(into, scratch)
    prepare_gpt(into, args.sizes.split(","))
    shutil.rmtree(scratch)
    print(f"prepared {into}: run `bash bench/gpu_device.sh {into.relative_to(ROOT) if into.is_relative_to(ROOT) else into}"
          " LOGDIR` on the GPU machine, from the repository's root")


if __name__ == "__main__":
    main()
