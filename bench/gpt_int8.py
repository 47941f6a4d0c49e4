"""The GPT's int8 model against its float32 one, and the same against PyTorch's
dynamic quantization of the same weights, on the CPU, one thread.

    python bench/gpt_int8.py [--steps N] [--repeats R] [--size example|large]

1. Mica trains examples/gpt/gpt.mica (the example's size, or a larger one whose
   products dominate) and saves a checkpoint; examples/gpt/int8.mica writes its
   int8 model (--save-int8).
2. int8.mica is run again R times on the checkpoint: each run prints both
   validation losses and both sampling rates; the best rates of the R runs are
   kept.
3. PyTorch loads the same checkpoint into the nanoGPT-shaped model of
   examples/gpt/to_torch.py and quantizes it with
   torch.ao.quantization.quantize_dynamic (every nn.Linear to int8); its float
   and int8 validation losses and sampling rates (the same sampler: T positions
   recomputed for each new character) are measured in interleaved repetitions.
   int8 / float32 is given twice: the ratio of the best rates, and the median
   of each repetition's own ratio (its two rates measured a moment apart, so
   the machine's load changes it less on a shared machine).
4. Checkpoint sizes: Mica's float32 weights alone (the training checkpoint less
   Adam's moments, written by safetensors as Mica writes it), Mica's int8 model
   file, and torch.save of each PyTorch model's state_dict.
Not a test: the rates vary with the machine and its load.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import save_file

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from micatool import targets  # noqa: E402
from micatool.compile import compile_program, load_source  # noqa: E402
from micatool.link.build import cached_build  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "examples" / "gpt"))
from gpt_sizes import cpu_model, sized  # noqa: E402
import to_torch  # noqa: E402

CORPUS = ROOT / "examples" / "gpt" / "corpus.txt"
INT8 = ROOT / "examples" / "gpt" / "int8.mica"


def run(binary: Path, *args: str) -> str:
    done = subprocess.run([str(binary), "--corpus", str(CORPUS), *args], capture_output=True, text=True, check=True,
                          env=dict(os.environ, MICA_THREADS="1"))
    return done.stdout


def mica_figures(output: str) -> dict[str, float]:
    float_loss = float(re.search(r"^validation loss ([\d.]+) against", output, re.M).group(1))
    int8_loss = float(re.search(r"^int8 model: validation loss ([\d.]+)", output, re.M).group(1))
    rates = re.search(r"^sampling tokens/s: float32 (\d+), int8 (\d+)$", output, re.M)
    return {"float loss": float_loss, "int8 loss": int8_loss,
            "float rate": float(rates.group(1)), "int8 rate": float(rates.group(2))}


def weights_only(checkpoint: Path, out: Path) -> int:
    """The float32 weights of a training checkpoint (embed and twins), as one safetensors file."""
    with safe_open(str(checkpoint), "pt") as f:
        tensors = {name: f.get_tensor(name) for name in f.keys() if name.startswith(("embed.", "twins["))}
    save_file(tensors, str(out))
    return out.stat().st_size


def state_size(model) -> int:
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    return buffer.tell()


def torch_rate(model, c, alphabet, ids, n: int) -> float:
    train_end = len(ids) * 9 // 10
    started = time.perf_counter()
    to_torch.sample(model, c, alphabet, ids[train_end:train_end + c["T"]], n)
    return n / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--size", choices=("example", "large"), default="example")
    args = parser.parse_args()
    print(f"CPU: {cpu_model()}; one thread; {args.size} size, {args.steps} training steps")

    trainer, int8 = (cached_build(compile_program(load_source(str(program))), targets.native(), "fast")
                     for program in (sized(args.size), sized(args.size, INT8)))
    work = Path(tempfile.mkdtemp(prefix="gpt-int8-"))
    checkpoint, quantized = work / "gpt.safetensors", work / "gpt-int8.safetensors"
    run(trainer, "--steps", str(args.steps), "--save", str(checkpoint))
    run(int8, "--load", str(checkpoint), "--save-int8", str(quantized))

    torch.set_num_threads(1)
    model, _, c, alphabet = to_torch.load(str(checkpoint))
    model.eval()
    qmodel = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
    id_of = {byte: i for i, byte in enumerate(alphabet)}
    ids = [id_of[byte] for byte in CORPUS.read_bytes()]
    n = c["SampleLength"]

    mica, torch_float, torch_int8 = [], [], []
    with torch.no_grad():
        losses = (to_torch.validation_loss(model, c, ids), to_torch.validation_loss(qmodel, c, ids))
        for _ in range(args.repeats):  # interleaved, best of each
            mica.append(mica_figures(run(int8, "--load", str(checkpoint))))
            torch_float.append(torch_rate(model, c, alphabet, ids, n))
            torch_int8.append(torch_rate(qmodel, c, alphabet, ids, n))
    m = mica[0]
    mica_float, mica_int8 = max(r["float rate"] for r in mica), max(r["int8 rate"] for r in mica)
    float_size = weights_only(checkpoint, work / "weights.safetensors")

    def change(a: float, b: float) -> str:
        return f"{100 * (b - a) / a:+.2f}%"

    print(f"\n{'':22}{'Mica':>14}{'PyTorch':>14}")
    print(f"{'val loss, float32':22}{m['float loss']:>14.4f}{losses[0]:>14.4f}")
    print(f"{'val loss, int8':22}{m['int8 loss']:>14.4f}{losses[1]:>14.4f}")
    print(f"{'  relative change':22}{change(m['float loss'], m['int8 loss']):>14}{change(*losses):>14}")
    print(f"{'sampling tok/s, fp32':22}{mica_float:>14.0f}{max(torch_float):>14.0f}")
    print(f"{'sampling tok/s, int8':22}{mica_int8:>14.0f}{max(torch_int8):>14.0f}")
    print(f"{'  int8 / float32':22}{mica_int8 / mica_float:>14.2f}{max(torch_int8) / max(torch_float):>14.2f}")
    mica_median = statistics.median(r["int8 rate"] / r["float rate"] for r in mica)
    torch_median = statistics.median(i / f for i, f in zip(torch_int8, torch_float))
    print(f"{'  median of runs':22}{mica_median:>14.2f}{torch_median:>14.2f}")
    print(f"{'weights, float32 (B)':22}{float_size:>14}{state_size(model):>14}")
    print(f"{'weights, int8 (B)':22}{quantized.stat().st_size:>14}{state_size(qmodel):>14}")
    print(f"{'  float32 / int8':22}{float_size / quantized.stat().st_size:>14.2f}"
          f"{state_size(model) / state_size(qmodel):>14.2f}")
    print(f"\nMica int8 against PyTorch int8 sampling: {mica_int8 / max(torch_int8):.2f}x")


if __name__ == "__main__":
    main()
