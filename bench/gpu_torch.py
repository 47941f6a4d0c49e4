"""The PyTorch side of bench/gpu_device.sh: the GPT as a PyTorch user writes it, on CUDA.

    python3 bench/gpu_torch.py INIT BATCH STEPS

The model is examples/gpt/to_torch.py's nanoGPT shape (one q/k/v Linear,
heads as a batch dimension, F.scaled_dot_product_attention), loaded from
the Mica GPT's initial weights INIT, with AdamW as the GPT configures it,
float32, eager. It first prints its loss on step 1's windows (BATCH, from
bench/gpu_device.py) beside the Mica GPT's, which shows the two are one
model; then it trains STEPS + 1 steps on random windows of the corpus and
prints the tokens/s of the last STEPS (the first, which allocates and
warms the kernels up, is left out, as for the Mica side). It needs only
torch and safetensors, which the GPU machine has, and exits 3 where torch
sees no CUDA device.
"""

import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples" / "gpt"))

import to_torch  # noqa: E402

CORPUS = ROOT / "examples" / "gpt" / "corpus.txt"


def first_batch(path: str) -> tuple[float, torch.Tensor, torch.Tensor]:
    """The host GPT's step-1 loss and its windows, as bench/gpu_device.py wrote them."""
    lines = Path(path).read_text().splitlines()
    rows = [[int(t) for t in line.split()] for line in lines[1:]]
    return float(lines[0].split()[1]), torch.tensor(rows[0::2]), torch.tensor(rows[1::2])


def main(init: str, batch: str, steps: int) -> None:
    if not torch.cuda.is_available():
        print("torch sees no CUDA device")
        sys.exit(3)
    cuda = torch.device("cuda")
    model, _, c, alphabet = to_torch.load(init)
    model = model.to(cuda)
    params = dict(model.named_parameters())
    matrices = [p for p in params.values() if p.dim() == 2]
    optimizer = torch.optim.AdamW([{"params": matrices, "weight_decay": c["Decay"]},
                                   {"params": [p for p in params.values() if p.dim() < 2], "weight_decay": 0.0}],
                                  lr=c["MaxRate"], betas=(0.9, 0.95), eps=1e-8)
    mica_loss, xs, ys = first_batch(batch)
    with torch.no_grad():
        loss = F.cross_entropy(model(xs.to(cuda)).flatten(0, 1), ys.to(cuda).flatten()).item()
    print(f"step-1 loss: PyTorch {loss:.6f}, Mica {mica_loss:.6f}, relative difference "
          f"{abs(loss - mica_loss) / mica_loss:.1e}")
    id_of = {byte: i for i, byte in enumerate(alphabet)}
    ids = torch.tensor([id_of[byte] for byte in CORPUS.read_bytes()], device=cuda)
    B, T = c["B"], c["T"]
    generator = torch.Generator(device=cuda).manual_seed(c["BaseSeed"])
    for step in range(steps + 1):
        if step == 1:
            torch.cuda.synchronize()
            started = time.perf_counter()
        starts = torch.randint(0, len(ids) * 9 // 10 - T - 1, (B,), device=cuda, generator=generator)
        window = starts[:, None] + torch.arange(T + 1, device=cuda)
        x, y = ids[window[:, :-1]], ids[window[:, 1:]]
        optimizer.zero_grad(set_to_none=True)
        F.cross_entropy(model(x).flatten(0, 1), y.flatten()).backward()
        optimizer.step()
    torch.cuda.synchronize()
    print(f"tokens/s {steps * B * T / (time.perf_counter() - started):.0f}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
