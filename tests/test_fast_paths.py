"""The runtime's fast paths give the digits its plain loops gave.

A small attention-and-MLP trainer whose shapes reach every fast path of the
tape's row and element-wise ops (runtime_c/mica_ops.inc): LayerNorm over 200
channels and Softmax over 37 on row blocks of sixteen with a short last block
(185 rows), the element-wise passes on the thread pool (tensors of 37,000 and
74,000 elements), gradients written fresh or accumulated (h feeds four ops;
wq * wq is a product of one node with itself), CausalMask and Transpose
backward. The expected loss column and checkpoint digest were recorded with
the runtime before those paths existed (commit ca3995a: every row summed on
its own pairwise tree, every gradient zeroed and then accumulated, one thread
for element-wise work), so a fast path that changes a single bit fails here.
When the products' rule became one fused multiply-add a step (issue 14), the
record was taken again from the fast paths, since the plain loops no longer
exist; they had matched it bit for bit under the old rule.
"""

from __future__ import annotations

import hashlib

import pytest

from helpers import build_text, run

TRAINER = """program FastPaths;
const N = 5; T = 37; C = 200; Hidden = 400; V = 75; Steps = 4;
var
    x : tensor[N, T, C] of float32;
    ys : matrix[N, T] of integer;
    wq, wk : tracked matrix[C, C] of float32;
    g, b : tracked vector[C] of float32;
    w1 : tracked matrix[C, Hidden] of float32;
    b1 : tracked vector[Hidden] of float32;
    w2 : tracked matrix[Hidden, V] of float32;
    h, y : tracked tensor[N, T, C] of float32;
    loss : tracked float32;
    wqp, wqm, wqv, wkp, wkm, wkv : matrix[C, C] of float32;
    gp, gm, gv, bp, bm, bv : vector[C] of float32;
    w1p, w1m, w1v : matrix[C, Hidden] of float32;
    b1p, b1m, b1v : vector[Hidden] of float32;
    w2p, w2m, w2v : matrix[Hidden, V] of float32;
    i, j, step : integer;

procedure Matrix(address w : matrix[R, K] of float32; d : matrix[R, K] of float32; address m, v : matrix[R, K] of float32);
begin
    AdamStep(address w, d, address m, address v, step, 0.01, 0.9, 0.999, 1e-8);
end;

procedure Vector(address w : vector[K] of float32; d : vector[K] of float32; address m, v : vector[K] of float32);
begin
    AdamStep(address w, d, address m, address v, step, 0.01, 0.9, 0.999, 1e-8);
end;

begin
    Seed(7);
    Normal(address x, 0.0, 1.0);
    for i := 0 to N - 1 do
        for j := 0 to T - 1 do ys[i, j] := RandomInt(V);
    Normal(address wqp, 0.0, 0.1);
    Normal(address wkp, 0.0, 0.1);
    Uniform(address gp, 0.5, 1.5);
    Normal(address w1p, 0.0, 0.1);
    Normal(address w2p, 0.0, 0.1);
    wq := wqp; wk := wkp; g := gp; b := bp; w1 := w1p; b1 := b1p; w2 := w2p;
    for step := 1 to Steps do
    begin
        tape
            h := LayerNorm(x * wq, g, b);
            y := h + Softmax(CausalMask(h * Transpose(h * wk) * 0.1)) * h;
            loss := CrossEntropy(Gelu(y * w1 + b1) * w2, ys) + 0.001 * Sum(wq * wq);
        end;
        Backward(loss);
        WriteLn(step, ' ', loss);
        Matrix(address wqp, Gradient(wq), address wqm, address wqv);
        Matrix(address wkp, Gradient(wk), address wkm, address wkv);
        Matrix(address w1p, Gradient(w1), address w1m, address w1v);
        Matrix(address w2p, Gradient(w2), address w2m, address w2v);
        Vector(address gp, Gradient(g), address gm, address gv);
        Vector(address bp, Gradient(b), address bm, address bv);
        Vector(address b1p, Gradient(b1), address b1m, address b1v);
        wq := wqp; wk := wkp; g := gp; b := bp; w1 := w1p; b1 := b1p; w2 := w2p;
    end;
    Save(ParamStr(1), wqp, wkp, gp, bp, w1p, b1p, w2p, wqm, wkv);
end.
"""

# recorded at commit ca3995a (x86_64, fast tier, one thread) and again when dot products became fused
# (issue 14: same trainer; fast tier at 1, 2 and 4 threads, checked at 2 and aarch64 all agreed)
LOSSES = "1 7.242894\n2 1.2838669\n3 -0.13870427\n4 -0.41332793\n"
CHECKPOINT_SHA256 = "5f4ffba0a967881b49a4396612d1c78a894a3cf6f712973888b4076bd8210f4c"


def train(tmp_path, monkeypatch, target: str, tier: str, threads: int) -> tuple[str, str]:
    binary = build_text(tmp_path, TRAINER, name="fastpaths.mica", target=target, tier=tier)
    checkpoint = tmp_path / "fastpaths.safetensors"
    monkeypatch.setenv("MICA_THREADS", str(threads))
    done = run(binary, target, args=[str(checkpoint)], timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout, hashlib.sha256(checkpoint.read_bytes()).hexdigest()


@pytest.mark.parametrize("tier, threads", [("fast", 1), ("fast", 2), ("fast", 4), ("checked", 2)])
def test_the_fast_paths_give_the_recorded_digits(tmp_path, monkeypatch, tier, threads):
    assert train(tmp_path, monkeypatch, "x86_64-linux", tier, threads) == (LOSSES, CHECKPOINT_SHA256)


@pytest.mark.qemu
def test_aarch64_gives_the_recorded_digits(tmp_path, monkeypatch, aarch64):
    assert train(tmp_path, monkeypatch, "aarch64-linux", "fast", 2) == (LOSSES, CHECKPOINT_SHA256)
