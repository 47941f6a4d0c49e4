"""to_torch: a Mica GPT checkpoint as a nanoGPT-shaped PyTorch model.

    python examples/gpt/to_torch.py CHECKPOINT [CORPUS]

Everything comes from the file: the dimensions from its metadata's consts
(checked against each tensor's Mica type), the alphabet from its `alphabet`
tensor. Mica keeps each head's matrices apart and writes matrices as [in, out]
(x * w); nanoGPT joins the heads into c_attn and c_proj and keeps Linear's
[out, in]. AdamStep's first moment is `firsts` (embedFirst), its second
`seconds` (embedSecond). The script prints the validation loss on the GPT's own
held-out windows, in float32 as the GPT computes it, then samples text.
"""

from __future__ import annotations

import json
import sys

import torch
import torch.nn.functional as F
from safetensors import safe_open
from torch import nn


class Block(nn.Module):
    def __init__(self, C: int, H: int, Mlp: int, dropout: float):
        super().__init__()
        self.H = H
        self.drop = nn.Dropout(dropout)  # after each branch, as gpt.mica's --dropout; none on the attention weights
        self.ln_1, self.ln_2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.attn = nn.ModuleDict(dict(c_attn=nn.Linear(C, 3 * C, bias=False), c_proj=nn.Linear(C, C, bias=False)))
        self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(C, Mlp), c_proj=nn.Linear(Mlp, C)))

    def forward(self, x):  # x is (N, T, C)
        N, T, C = x.shape
        q, k, v = self.attn.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (y.view(N, T, self.H, C // self.H).transpose(1, 2) for y in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(N, T, C)
        x = x + self.drop(self.attn.c_proj(y))
        # Mica's Gelu is the tanh form
        return x + self.drop(self.mlp.c_proj(F.gelu(self.mlp.c_fc(self.ln_2(x)), approximate="tanh")))


class GPT(nn.Module):
    def __init__(self, V: int, T: int, C: int, H: int, L: int, Mlp: int, dropout: float = 0.0):
        super().__init__()
        self.T = T
        self.drop = nn.Dropout(dropout)
        self.transformer = nn.ModuleDict(dict(wte=nn.Embedding(V, C), wpe=nn.Embedding(T, C), ln_f=nn.LayerNorm(C),
                                              h=nn.ModuleList(Block(C, H, Mlp, dropout) for _ in range(L))))
        self.lm_head = nn.Linear(C, V, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # tied, as in the GPT

    def forward(self, ids):  # ids is (N, T): the logits (N, T, V)
        x = self.drop(self.transformer.wte(ids) + self.transformer.wpe(torch.arange(ids.shape[1], device=ids.device)))
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))


def state_dict(get, embed: str, block: str, L: int, H: int) -> dict[str, torch.Tensor]:
    """nanoGPT's names for one family of tensors: the weights (embed, twins) or one of Adam's moments."""
    joined = lambda k, w, dim: torch.cat([get(f"{block}[{k}].{w}[{h}]") for h in range(H)], dim=dim)  # noqa: E731
    state = {"transformer.wte.weight": get(f"{embed}.wte"), "transformer.wpe.weight": get(f"{embed}.wpe"),
             "transformer.ln_f.weight": get(f"{embed}.lnfg"), "transformer.ln_f.bias": get(f"{embed}.lnfb")}
    for k in range(L):
        p = f"transformer.h.{k}."
        state |= {p + "ln_1.weight": get(f"{block}[{k}].ln1g"), p + "ln_1.bias": get(f"{block}[{k}].ln1b"),
                  p + "attn.c_attn.weight": torch.cat([joined(k, w, 1) for w in ("wq", "wk", "wv")], dim=1).T,
                  p + "attn.c_proj.weight": joined(k, "wo", 0).T,
                  p + "ln_2.weight": get(f"{block}[{k}].ln2g"), p + "ln_2.bias": get(f"{block}[{k}].ln2b"),
                  p + "mlp.c_fc.weight": get(f"{block}[{k}].w1").T, p + "mlp.c_fc.bias": get(f"{block}[{k}].b1"),
                  p + "mlp.c_proj.weight": get(f"{block}[{k}].w2").T, p + "mlp.c_proj.bias": get(f"{block}[{k}].b2")}
    return state


def load(path: str, dropout: float = 0.0):
    """The model (dropping with chance `dropout` in training), an AdamW holding the GPT's
    moments, the consts and the alphabet."""
    with safe_open(path, "pt") as f:
        meta, get = f.metadata(), f.get_tensor
        assert meta["format"] == "mica" and meta["program"] == "Gpt", f"{path} is no checkpoint of the GPT"
        c, types = json.loads(meta["consts"]), json.loads(meta["tensors"])
        assert types["embed.wte"]["type"] == f"matrix[{c['V']}, {c['C']}] of float32"
        assert types["twins[0].wq[0]"]["type"] == f"matrix[{c['C']}, {c['HS']}] of float32"
        model = GPT(c["V"], c["T"], c["C"], c["H"], c["L"], c["Mlp"], dropout)
        model.load_state_dict(state_dict(get, "embed", "twins", c["L"], c["H"]) | {"lm_head.weight": get("embed.wte")},
                              strict=True)
        params = dict(model.named_parameters())  # lm_head.weight is wte's, listed once
        matrices = [p for p in params.values() if p.dim() == 2]
        optimizer = torch.optim.AdamW([{"params": matrices, "weight_decay": c["Decay"]},
                                       {"params": [p for p in params.values() if p.dim() < 2], "weight_decay": 0.0}],
                                      lr=c["MaxRate"], betas=(0.9, 0.95), eps=1e-8)
        first = state_dict(get, "embedFirst", "firsts", c["L"], c["H"])
        second = state_dict(get, "embedSecond", "seconds", c["L"], c["H"])
        for name, p in params.items():
            optimizer.state[p] = {"step": torch.tensor(float(get("step"))), "exp_avg": first[name],
                                  "exp_avg_sq": second[name]}
        return model, optimizer, c, bytes(get("alphabet").tolist())


def validation_loss(model, c, ids: list[int]) -> float:
    """ValidationLoss of gpt.mica: its evenly spaced held-out windows, B at a time, float32 means added in float64."""
    B, T, W = c["B"], c["T"], c["EvalWindows"]
    train_end, total = len(ids) * 9 // 10, 0.0
    for w in range(W):
        starts = [train_end + (w * B + b) * (len(ids) - train_end - T - 1) // (W * B) for b in range(B)]
        xs = torch.tensor([ids[s:s + T] for s in starts])
        ys = torch.tensor([ids[s + 1:s + T + 1] for s in starts])
        total += F.cross_entropy(model(xs).flatten(0, 1), ys.flatten()).item()
    return total / W


def sample(model, c, alphabet: bytes, context: list[int], n: int) -> str:
    torch.manual_seed(c["BaseSeed"])
    for _ in range(n):
        logits = model(torch.tensor([context[-c["T"]:]]))[0, -1, :len(alphabet)]
        context.append(torch.multinomial(F.softmax(logits / c["Temperature"], dim=0), 1).item())
    return bytes(alphabet[i] for i in context).decode("utf-8", "replace")


def main(path: str, corpus: str = "examples/gpt/corpus.txt") -> None:
    model, optimizer, c, alphabet = load(path)
    id_of = {byte: i for i, byte in enumerate(alphabet)}
    ids = [id_of[byte] for byte in open(corpus, "rb").read()]
    with torch.no_grad():
        print(f"validation loss {validation_loss(model, c, ids):.9f}")
        train_end = len(ids) * 9 // 10
        print(sample(model, c, alphabet, ids[train_end:train_end + c["T"]], 200))


if __name__ == "__main__":
    main(*sys.argv[1:])
