"""The GPT example against the same model in PyTorch, on the CPU, float32.

    python bench/gpt_vs_torch.py [--steps N] [--corpus FILE] [--program FILE]

1. Mica saves its initial weights (--until 0 --save); PyTorch loads them into
   the same architecture, rebuilds step 1's batch with micatool.reference's
   generator, and its loss must match Mica's step-1 loss to 1e-5 relative.
2. Training throughput side by side: Mica's own tokens/s column against a
   PyTorch loop over the same model, batch and optimizer, at 1 and 2 threads.
3. The static binary's size on both targets next to seed 001's figures.
Not a test: the throughput numbers vary with the machine and its load.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from micatool import targets  # noqa: E402
from micatool.compile import compile_program, load_source  # noqa: E402
from micatool.link.build import cached_build  # noqa: E402
from micatool.reference import Generator  # noqa: E402

GPT = ROOT / "examples" / "gpt" / "gpt.mica"
SEED_SIZES_KIB = {"aarch64-linux": 953.7, "x86_64-linux": 1232.6}


def constants(program: Path) -> dict[str, int]:
    text = program.read_text()
    return {name: int(value) for name, value in re.findall(r"\n    (\w+) = (\d+);", text)}


class TorchGpt(torch.nn.Module):
    """examples/gpt/gpt.mica's model, parameter for parameter."""

    def __init__(self, weights: dict[str, torch.Tensor], k: dict[str, int]):
        super().__init__()
        self.k = k
        self.params = torch.nn.ParameterDict({name.replace(".", "_").replace("[", "_").replace("]", ""):
                                              torch.nn.Parameter(value.clone()) for name, value in weights.items()})

    def p(self, path: str) -> torch.Tensor:
        return self.params[path.replace(".", "_").replace("[", "_").replace("]", "")]

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        k, p = self.k, self.p
        x = p("embed.wte")[ids] + p("embed.wpe")
        mask = torch.triu(torch.ones(k["T"], k["T"], dtype=torch.bool), 1)
        for block in range(k["L"]):
            b = f"twins[{block}]"
            xn = F.layer_norm(x, (k["C"],), p(f"{b}.ln1g"), p(f"{b}.ln1b"), eps=1e-5)
            out = 0
            for h in range(k["H"]):
                q, key, value = xn @ p(f"{b}.wq[{h}]"), xn @ p(f"{b}.wk[{h}]"), xn @ p(f"{b}.wv[{h}]")
                scores = (q @ key.transpose(-1, -2) * 0.25).masked_fill(mask, float("-inf"))
                out = out + (scores.softmax(-1) @ value) @ p(f"{b}.wo[{h}]")
            x = x + out
            xn = F.layer_norm(x, (k["C"],), p(f"{b}.ln2g"), p(f"{b}.ln2b"), eps=1e-5)
            x = x + F.gelu(xn @ p(f"{b}.w1") + p(f"{b}.b1"), approximate="tanh") @ p(f"{b}.w2") + p(f"{b}.b2")
        return F.layer_norm(x, (k["C"],), p("embed.lnfg"), p("embed.lnfb"), eps=1e-5) @ p("embed.wte").T


def corpus_ids(path: Path) -> list[int]:
    data = path.read_bytes()
    alphabet = sorted(set(data))
    index = {c: i for i, c in enumerate(alphabet)}
    return [index[c] for c in data]


def batch(ids: list[int], k: dict[str, int], step: int) -> tuple[torch.Tensor, torch.Tensor]:
    """TrainingBatch: B windows, each drawn after Seed(BaseSeed + step)."""
    train_end = len(ids) * 9 // 10
    g = Generator(k["BaseSeed"] + step)
    starts = [g.random_int(train_end - k["T"] - 1) for _ in range(k["B"])]
    xs = torch.tensor([ids[s:s + k["T"]] for s in starts])
    ys = torch.tensor([ids[s + 1:s + k["T"] + 1] for s in starts])
    return xs, ys


def run_gpt(binary: Path, *args: str, threads: int = 2) -> str:
    done = subprocess.run([str(binary), *args], capture_output=True, text=True, cwd=ROOT,
                          env=dict(os.environ, MICA_THREADS=str(threads)))
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    return done.stdout


def loss_rows(output: str) -> list[tuple[int, float, float]]:
    rows = re.findall(r"^\s*(\d+)\s+([\d.]+)\s+[\d.]+\s+(\d+)$", output, re.M)
    return [(int(s), float(loss), float(rate)) for s, loss, rate in rows]


def torch_tokens_per_second(model: TorchGpt, ids: list[int], k: dict[str, int], steps: int) -> float:
    decayed = [p for name, p in model.params.items() if p.dim() == 2]
    plain = [p for name, p in model.params.items() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decayed, "weight_decay": 0.01}, {"params": plain, "weight_decay": 0.0}],
                                  lr=0.003, betas=(0.9, 0.95), eps=1e-8)
    batches = [batch(ids, k, s) for s in range(1, steps + 1)]
    started = time.perf_counter()
    for xs, ys in batches:
        optimizer.zero_grad(set_to_none=True)
        F.cross_entropy(model(xs).reshape(-1, k["V"]), ys.reshape(-1)).backward()
        optimizer.step()
    return steps * k["B"] * k["T"] / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--corpus", default=str(ROOT / "examples" / "gpt" / "corpus.txt"))
    parser.add_argument("--program", default=str(GPT), help="a variant of the GPT to measure")
    args = parser.parse_args()
    k = constants(Path(args.program))
    program = compile_program(load_source(args.program))
    binary = cached_build(program, targets.native(), "fast")
    ids = corpus_ids(Path(args.corpus))

    with tempfile.TemporaryDirectory() as work:
        init = Path(work) / "init.safetensors"
        run_gpt(binary, "--corpus", args.corpus, "--until", "0", "--save", str(init))
        weights = {name: value for name, value in load_file(str(init)).items()
                   if name.startswith(("embed.", "twins[")) and value.dtype == torch.float32}
    model = TorchGpt(weights, k)
    xs, ys = batch(ids, k, 1)
    with torch.no_grad():
        torch_loss = F.cross_entropy(model(xs).reshape(-1, k["V"]), ys.reshape(-1)).item()
    mica_loss = loss_rows(run_gpt(binary, "--corpus", args.corpus, "--until", "1"))[0][1]
    relative = abs(torch_loss - mica_loss) / abs(torch_loss)
    print(f"first-step loss: mica {mica_loss:.6f}, torch {torch_loss:.6f}, relative difference {relative:.2e}"
          f" ({'agree' if relative <= 1e-5 else 'DISAGREE'} to 1e-5)")

    print(f"\ntraining, {args.steps} steps of {k['B']}x{k['T']} tokens; {os.cpu_count()} cores")
    print(f"{'threads':>8}{'mica tok/s':>12}{'torch tok/s':>13}{'ratio':>8}")
    for threads in (1, 2):
        torch.set_num_threads(threads)
        rows = loss_rows(run_gpt(binary, "--corpus", args.corpus, "--steps", str(args.steps), threads=threads))
        mica_rate = rows[-1][2]
        torch_rate = torch_tokens_per_second(TorchGpt(weights, k), ids, k, args.steps)
        print(f"{threads:>8}{mica_rate:>12.0f}{torch_rate:>13.0f}{mica_rate / torch_rate:>8.2f}")

    print("\nstatic binary, fast tier (stripped)")
    for target in ("aarch64-linux", "x86_64-linux"):
        size = cached_build(program, targets.resolve(target), "fast").stat().st_size / 1024
        print(f"  {target:<14} {size:8.1f} KiB   (seed 001: {SEED_SIZES_KIB[target]} KiB)")


if __name__ == "__main__":
    main()
