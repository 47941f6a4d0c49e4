"""The PyTorch side of bench/train_vs_torch.py: the same models, eager, on the CPU.

Run as a subprocess so its peak memory is its own:
    python bench/torch_side.py mlp HIDDEN STEPS THREADS
    python bench/torch_side.py records STEPS THREADS
Prints steps per second.
"""

import sys
import time

import torch


def mlp(hidden: int, steps: int) -> float:
    torch.manual_seed(1)
    x = torch.randn(64, 32)
    labels = torch.randint(0, 10, (64,))
    model = torch.nn.Sequential(torch.nn.Linear(32, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, 10))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001, eps=1e-8)
    started = time.perf_counter()
    for _ in range(steps):
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), labels)
        loss.backward()
        optimizer.step()
    return steps / (time.perf_counter() - started)


def records(steps: int) -> float:
    """TrackedRecords' loop: two 2x2 blocks applied in turn, Adam on each."""
    blocks = [torch.eye(2, dtype=torch.float64).requires_grad_(), (2 * torch.eye(2, dtype=torch.float64)).requires_grad_()]
    optimizer = torch.optim.Adam(blocks, lr=0.125, betas=(0.5, 0.5), eps=0.5)
    started = time.perf_counter()
    for _ in range(steps):
        optimizer.zero_grad(set_to_none=True)
        h = torch.tensor([1.0, 2.0], dtype=torch.float64)
        for w in blocks:
            h = w @ h
        h.sum().backward()
        optimizer.step()
    return steps / (time.perf_counter() - started)


if __name__ == "__main__":
    kind = sys.argv[1]
    torch.set_num_threads(int(sys.argv[-1]))
    rate = mlp(int(sys.argv[2]), int(sys.argv[3])) if kind == "mlp" else records(int(sys.argv[2]))
    print(rate)
