"""The GPT example against the same model in PyTorch, on the CPU, float32.

    python bench/gpt_vs_torch.py [--sizes example,baby,10m] [--steps N] [--repeats R] [--dropout P]

For each size (bench/gpt_sizes.py: the example's, nanoGPT's CPU "baby" and
about 10M parameters):
1. Mica saves its initial weights (--until 0 --save); PyTorch loads them into
   two models, and each one's step-1 loss must match Mica's to 1e-5 relative:
   "port", gpt.mica parameter for parameter (each head's matrices apart), and
   "nanoGPT", the model as a PyTorch user writes it (examples/gpt/to_torch.py:
   one q/k/v Linear, heads as a batch dimension, F.scaled_dot_product_attention
   with is_causal=True, nn.LayerNorm, the tanh Gelu, AdamW).
2. Training tokens/s at 1 and 2 threads, each measurement a child process of
   its own, best of R interleaved repetitions; the first step (allocation,
   thread start) is left out on both sides. Each side's peak resident memory
   is its child's (GNU time's %M), the largest over the repetitions.
3. One table of ratios per size: Mica's rate over each PyTorch model's.
With --dropout P every side trains dropping with chance P where gpt.mica's
--dropout does (after the embeddings and after each block's two branches);
the first-step check of 1. stays without it, since each side draws its own
masks.
Not a test: the throughput numbers vary with the machine and its load.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
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
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "examples" / "gpt"))

import to_torch  # noqa: E402
from gpt_sizes import CORPUS, SIZES, constants, corpus_ids, cpu_model, sized, windows  # noqa: E402

from micatool import targets  # noqa: E402
from micatool.compile import compile_program, load_source  # noqa: E402
from micatool.link.build import cached_build  # noqa: E402

STEPS = {"example": 100, "baby": 30, "10m": 4}  # measured steps, after the first
# the bench's copy evaluates one window and samples one character: training alone is measured
AFFORDABLE = {"EvalWindows": 1, "SampleLength": 1}
MODELS = ("port", "nanoGPT")
TIME = shutil.which("time", path="/usr/bin:/bin") or sys.exit("bench/gpt_vs_torch.py needs GNU time (/usr/bin/time)")


class TorchGpt(torch.nn.Module):
    """examples/gpt/gpt.mica's model, parameter for parameter."""

    def __init__(self, weights: dict[str, torch.Tensor], k: dict[str, int], dropout: float):
        super().__init__()
        self.k, self.dropout = k, dropout
        self.params = torch.nn.ParameterDict({name.replace(".", "_").replace("[", "_").replace("]", ""):
                                              torch.nn.Parameter(value.clone()) for name, value in weights.items()})

    def p(self, path: str) -> torch.Tensor:
        return self.params[path.replace(".", "_").replace("[", "_").replace("]", "")]

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        k, p = self.k, self.p
        drop = lambda y: F.dropout(y, self.dropout, self.training)  # noqa: E731
        x = drop(p("embed.wte")[ids] + p("embed.wpe"))
        mask = torch.triu(torch.ones(k["T"], k["T"], dtype=torch.bool), 1)
        scale = 1 / k["HS"] ** 0.5
        for block in range(k["L"]):
            b = f"twins[{block}]"
            xn = F.layer_norm(x, (k["C"],), p(f"{b}.ln1g"), p(f"{b}.ln1b"), eps=1e-5)
            out = 0
            for h in range(k["H"]):
                q, key, value = xn @ p(f"{b}.wq[{h}]"), xn @ p(f"{b}.wk[{h}]"), xn @ p(f"{b}.wv[{h}]")
                scores = (q @ key.transpose(-1, -2) * scale).masked_fill(mask, float("-inf"))
                out = out + (scores.softmax(-1) @ value) @ p(f"{b}.wo[{h}]")
            x = x + drop(out)
            xn = F.layer_norm(x, (k["C"],), p(f"{b}.ln2g"), p(f"{b}.ln2b"), eps=1e-5)
            x = x + drop(F.gelu(xn @ p(f"{b}.w1") + p(f"{b}.b1"), approximate="tanh") @ p(f"{b}.w2") + p(f"{b}.b2"))
        return F.layer_norm(x, (k["C"],), p("embed.lnfg"), p("embed.lnfb"), eps=1e-5) @ p("embed.wte").T


def torch_model(kind: str, init: Path, k: dict[str, int], dropout: float):
    """The model and its AdamW, from Mica's initial weights: lr, betas, eps and decay as gpt.mica's."""
    if kind == "nanoGPT":
        model, optimizer, _, _ = to_torch.load(str(init), dropout)
        return model, optimizer
    weights = {name: value for name, value in load_file(str(init)).items()
               if name.startswith(("embed.", "twins[")) and value.dtype == torch.float32}
    model = TorchGpt(weights, k, dropout)
    decayed = [p for p in model.params.values() if p.dim() == 2]
    plain = [p for p in model.params.values() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decayed, "weight_decay": 0.01}, {"params": plain, "weight_decay": 0.0}],
                                  lr=0.003, betas=(0.9, 0.95), eps=1e-8)
    return model, optimizer


def batch(ids: list[int], k: dict[str, int], step: int) -> tuple[torch.Tensor, torch.Tensor]:
    """TrainingBatch of step `step`, as tensors."""
    xs, ys = windows(ids, k, step)
    return torch.tensor(xs), torch.tensor(ys)


def loss_of(model, xs: torch.Tensor, ys: torch.Tensor, k: dict[str, int]) -> torch.Tensor:
    return F.cross_entropy(model(xs).reshape(-1, k["V"]), ys.reshape(-1))


def torch_child(kind: str, program: Path, init: Path, steps: int, dropout: float) -> None:
    """The PyTorch side of one measurement, in its own process: prints tokens/s of steps 2..steps+1."""
    k = constants(program)
    model, optimizer = torch_model(kind, init, k, dropout)
    ids = corpus_ids()
    batches = [batch(ids, k, s) for s in range(1, steps + 2)]
    elapsed = 0.0
    for i, (xs, ys) in enumerate(batches):
        started = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss_of(model, xs, ys, k).backward()
        optimizer.step()
        if i > 0:
            elapsed += time.perf_counter() - started
    print(steps * k["B"] * k["T"] / elapsed)


def run_child(command: list[str], threads: int) -> tuple[str, int]:
    """A child's output and its peak resident memory in KiB. GNU time measures it: a child that
    Python forked would count the parent's pages too (ru_maxrss keeps the high-water mark across exec)."""
    env = dict(os.environ, MICA_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    with tempfile.NamedTemporaryFile("r") as peak:
        done = subprocess.run([TIME, "-f", "%M", "-o", peak.name, *command], capture_output=True, text=True, cwd=ROOT,
                              env=env)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr}")
        return done.stdout, int(peak.read().split()[-1])


def loss_rows(output: str) -> list[tuple[int, float, float]]:
    rows = re.findall(r"^\s*(\d+)\s+([\d.]+)\s+[\d.]+\s+(\d+)$", output, re.M)
    return [(int(s), float(loss), float(rate)) for s, loss, rate in rows]


def mica_rate(output: str, tokens: int) -> float:
    """Tokens/s of steps 2..last, from the first row's rate and the last row's running mean."""
    rows = loss_rows(output)
    (first, _, rate1), (last, _, rate) = rows[0], rows[-1]
    return (last - first) * tokens / (last * tokens / rate - tokens / rate1)


def check_losses(binary: Path, program: Path, init: Path, k: dict[str, int]) -> None:
    mica = loss_rows(run_child([str(binary), "--corpus", str(CORPUS), "--until", "1"], 1)[0])[0][1]
    xs, ys = batch(corpus_ids(), k, 1)
    for kind in MODELS:
        model, _ = torch_model(kind, init, k, 0.0)
        with torch.no_grad():
            theirs = loss_of(model, xs, ys, k).item()
        relative = abs(theirs - mica) / abs(theirs)
        print(f"  first-step loss: mica {mica:.6f}, {kind} {theirs:.6f}, relative difference {relative:.2e}"
              f" ({'agree' if relative <= 1e-5 else 'DISAGREE'} to 1e-5)")


def bench_size(size: str, steps: int, repeats: int, dropout: float, work: Path) -> None:
    program = sized(size, **AFFORDABLE)
    k = constants(program)
    binary = cached_build(compile_program(load_source(str(program))), targets.native(), "fast")
    init = work / f"{size}.safetensors"
    run_child([str(binary), "--corpus", str(CORPUS), "--until", "0", "--save", str(init)], 1)
    params = sum(v.numel() for n, v in load_file(str(init)).items() if n.startswith(("embed.", "twins[")))
    print(f"\n{size}: L{k['L']} H{k['H']} C{k['C']} T{k['T']} B{k['B']}, {params / 1e6:.2f}M parameters;"
          f" {steps} steps measured after the first, best of {repeats}, dropout {dropout}")
    check_losses(binary, program, init, k)
    tokens = k["B"] * k["T"]
    rates: dict[tuple[str, int], float] = {}
    rss: dict[str, int] = {}
    for _ in range(repeats):
        for threads in (1, 2):
            for side in ("mica", *MODELS):
                if side == "mica":
                    out, peak = run_child([str(binary), "--corpus", str(CORPUS), "--steps", str(steps + 1),
                                           "--dropout", str(dropout)], threads)
                    rate = mica_rate(out, tokens)
                else:
                    out, peak = run_child([sys.executable, __file__, "--child", side, str(program), str(init),
                                           str(steps), str(dropout)], threads)
                    rate = float(out)
                rates[side, threads] = max(rates.get((side, threads), 0.0), rate)
                rss[side] = max(rss.get(side, 0), peak)
    print(f"  {'threads':>7}{'mica tok/s':>12}" + "".join(f"{m + ' tok/s':>15}{'ratio':>7}" for m in MODELS))
    for threads in (1, 2):
        mica = rates["mica", threads]
        print(f"  {threads:>7}{mica:>12.0f}"
              + "".join(f"{rates[m, threads]:>15.0f}{mica / rates[m, threads]:>7.2f}" for m in MODELS))
    print(f"  2 threads / 1: mica {rates['mica', 2] / rates['mica', 1]:.2f}"
          + "".join(f", {m} {rates[m, 2] / rates[m, 1]:.2f}" for m in MODELS))
    print(f"  peak RSS (MiB): mica {rss['mica'] / 1024:.1f}"
          + "".join(f", {m} {rss[m] / 1024:.1f} (mica/{m} {rss['mica'] / rss[m]:.2f})" for m in MODELS))


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        kind, program, init, steps, dropout = sys.argv[2:]
        torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
        torch_child(kind, Path(program), Path(init), int(steps), float(dropout))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="example,baby,10m", help=f"comma-separated, of {', '.join(SIZES)}")
    parser.add_argument("--steps", type=int, help="measured steps per run (default: per size, %s)" % STEPS)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dropout", type=float, default=0.0, help="the chance an activation is dropped in training")
    args = parser.parse_args()
    print(f"CPU: {cpu_model()}; {os.cpu_count()} cores; torch {torch.__version__}")
    with tempfile.TemporaryDirectory() as work:
        for size in args.sizes.split(","):
            bench_size(size, args.steps or STEPS.get(size, 10), args.repeats, args.dropout, Path(work))


if __name__ == "__main__":
    main()
