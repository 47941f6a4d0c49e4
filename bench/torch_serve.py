"""The peer of bench/serve.py: examples/gpt/gpt.mica's model in PyTorch behind the
standard library's ThreadingHTTPServer, answering what examples/gpt/serve.mica answers.

    python bench/torch_serve.py CHECKPOINT PORT [--corpus FILE]

GET /health and GET /sample?n=N&seed=S over HTTP/1.1 with keep-alive. A sample
continues the held-out text's first T characters as model.mica's SampleText does:
temperature 0.8, each draw from micatool.reference's copy of Mica's generator,
so the text is Mica's wherever float32 rounding picks the same character. The
model is bench/gpt_vs_torch.py's TorchGpt, loaded from the same safetensors.
Prints `serving on 127.0.0.1 port P` when it listens.
"""

from __future__ import annotations

import argparse
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import torch
from safetensors.torch import load_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpt_vs_torch import GPT, ROOT, TorchGpt, constants  # noqa: E402

from micatool.reference import Generator  # noqa: E402  (gpt_vs_torch put the repository on the path)

TEMPERATURE = 0.8
MAX_SAMPLE = 1000


class Sampler:
    def __init__(self, checkpoint: Path, corpus: Path):
        self.k = constants(GPT)
        weights = {name: value for name, value in load_file(str(checkpoint)).items()
                   if name.startswith(("embed.", "twins[")) and value.dtype == torch.float32}
        self.model = TorchGpt(weights, self.k).eval()
        data = corpus.read_bytes()
        self.alphabet = sorted(set(data))
        index = {c: i for i, c in enumerate(self.alphabet)}
        train_end = len(data) * 9 // 10
        self.prompt = [index[c] for c in data[train_end:train_end + self.k["T"]]]

    @torch.no_grad()
    def sample(self, n: int, seed: int) -> bytes:
        g, context = Generator(seed), list(self.prompt)
        out = list(context)
        for _ in range(n):
            logits = self.model(torch.tensor([context]))[0, -1]
            probs = torch.softmax(logits / TEMPERATURE, -1)[:len(self.alphabet)].tolist()
            u, total, nxt = g.uniform(0.0, 1.0), probs[0], 0
            while total < u and nxt < len(self.alphabet) - 1:
                nxt += 1
                total += probs[nxt]
            out.append(nxt)
            context = context[1:] + [nxt]
        return bytes(self.alphabet[i] for i in out) + b"\n"


def handler(sampler: Sampler):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as serve.mica

        def do_GET(self):
            url = urlsplit(self.path)
            if url.path == "/health":
                return self.answer(200, b"ok\n")
            if url.path != "/sample":
                return self.answer(404, b"no such path: " + url.path.encode() + b"\n")
            try:
                query = {key: int(values[-1]) for key, values in parse_qs(url.query, strict_parsing=bool(url.query))
                         .items() if key in ("n", "seed")}
            except ValueError:
                query = {"n": -1}
            n, seed = query.get("n", 200), query.get("seed", 1337)
            if not (0 <= n <= MAX_SAMPLE and seed >= 0):
                return self.answer(400, b"a sample takes n=0..1000 and seed=0 or more\n")
            self.answer(200, sampler.sample(n, seed))

        def answer(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:  # a line per request would measure the terminal
            pass

    return Handler


class Server(ThreadingHTTPServer):
    request_queue_size = 128  # the default 5 would refuse a burst of 64 connections
    daemon_threads = True


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("port", type=int)
    parser.add_argument("--corpus", type=Path, default=ROOT / "examples" / "gpt" / "corpus.txt")
    args = parser.parse_args()
    # a thread per connection, so each request's operators run on its own thread, as serve.mica's kernels
    # run on their task's when the kernels' pool is taken: PyTorch's pool under 64 threads only contends
    torch.set_num_threads(1)
    server = Server(("127.0.0.1", args.port), handler(Sampler(args.checkpoint, args.corpus)))
    print(f"serving on 127.0.0.1 port {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
