"""The same digits everywhere (docs/determinism.md): a training program's loss
column and final weights (a checkpoint, byte for byte) are identical across
thread counts, tiers, and x86_64 against aarch64 under qemu.

The products are large enough that the threaded, blocked paths of the matrix
kernels run, and the model uses every kind of reduction.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from helpers import build_text

TRAINER = """program Trainer;
const Batch = 96; Inputs = 48; Hidden = 160; Classes = 12; Steps = 12;
var
    x : matrix[Batch, Inputs] of float32;
    labels : vector[Batch] of integer;
    w1 : tracked matrix[Inputs, Hidden] of float32;
    g1, b1 : tracked vector[Hidden] of float32;
    w2 : tracked matrix[Hidden, Classes] of float32;
    loss : tracked float32;
    w1p, w1m, w1v : matrix[Inputs, Hidden] of float32;
    g1p, g1m, g1v, b1p, b1m, b1v : vector[Hidden] of float32;
    w2p, w2m, w2v : matrix[Hidden, Classes] of float32;
    i, step : integer;
begin
    Seed(5);
    Normal(address x, 0.0, 1.0);
    for i := 0 to Batch - 1 do labels[i] := RandomInt(Classes);
    Normal(address w1p, 0.0, 0.2);
    Normal(address w2p, 0.0, 0.2);
    Uniform(address g1p, 0.5, 1.5);
    w1 := w1p; g1 := g1p; b1 := b1p; w2 := w2p;
    for step := 1 to Steps do
    begin
        tape
            loss := CrossEntropy(Gelu(LayerNorm(x * w1, g1, b1)) * w2, labels)
                    + 0.001 * Sum(Mul(w1, w1)) + 0.01 * Mean(Softmax(x * w1));
        end;
        Backward(loss);
        WriteLn(step, ' ', loss);
        AdamStep(address w1p, Gradient(w1), address w1m, address w1v, step, 0.01, 0.9, 0.999, 1e-8);
        AdamStep(address g1p, Gradient(g1), address g1m, address g1v, step, 0.01, 0.9, 0.999, 1e-8);
        AdamStep(address b1p, Gradient(b1), address b1m, address b1v, step, 0.01, 0.9, 0.999, 1e-8);
        AdamStep(address w2p, Gradient(w2), address w2m, address w2v, step, 0.01, 0.9, 0.999, 1e-8);
        w1 := w1p; g1 := g1p; b1 := b1p; w2 := w2p;
    end;
    Save(ParamStr(1), w1p, g1p, b1p, w2p, w1m, w1v);
end.
"""


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """Output and checkpoint of the x86_64 checked build on one thread."""
    work = tmp_path_factory.mktemp("determinism")
    return train(work, "x86_64-linux", "checked", 1)


def train(work, target: str, tier: str, threads: int, qemu: str | None = None) -> tuple[str, bytes]:
    binary = build_text(work, TRAINER, name="trainer.mica", target=target, tier=tier)
    checkpoint = work / f"{target}-{tier}-{threads}.safetensors"
    command = [str(binary), str(checkpoint)]
    if qemu:
        command.insert(0, qemu)
    done = subprocess.run(command, capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, MICA_THREADS=str(threads)))
    assert done.returncode == 0, done.stderr
    return done.stdout, checkpoint.read_bytes()


def test_the_loss_falls(reference):
    losses = [float(line.split()[1]) for line in reference[0].splitlines()]
    assert len(losses) == 12 and losses[-1] < losses[0]


@pytest.mark.parametrize("tier", ["debug", "checked", "fast"])
@pytest.mark.parametrize("threads", [1, 2, 4])
def test_threads_and_tiers_give_the_same_bits(tmp_path, reference, tier, threads):
    assert train(tmp_path, "x86_64-linux", tier, threads) == reference


@pytest.mark.qemu
@pytest.mark.parametrize("threads", [1, 2])
def test_aarch64_gives_the_same_bits(tmp_path, reference, aarch64, threads):
    assert train(tmp_path, "aarch64-linux", "fast", threads, qemu=aarch64) == reference
