"""The GPT served over HTTP, under load: examples/gpt/serve.mica against the same model in
PyTorch behind the standard library's ThreadingHTTPServer (bench/torch_serve.py).

    python bench/serve.py [--seconds 30] [--connections 64] [--checkpoint FILE] [--steps 200]

Trains the full-size examples/gpt/gpt.mica for --steps (or loads --checkpoint),
then, for each server and each of /health and /sample?n=32, starts the server
afresh on 127.0.0.1, loads it for --seconds with --connections keep-alive
connections (Debian's `wrk`; a bounded Python client where wrk is missing) and
prints one table: requests/s, p50/p99 latency, errors (failed connections and
reads, timeouts, non-2xx answers) and the server's peak RSS (VmHWM). Run it
with a Python that has torch (PyTorch is no dependency of micatool). Not a
test: the figures depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import http.client
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from micatool import targets  # noqa: E402
from micatool.compile import compile_program, load_source  # noqa: E402
from micatool.link.build import cached_build  # noqa: E402
from gpt_sizes import cpu_model  # noqa: E402

GPT = ROOT / "examples" / "gpt" / "gpt.mica"
SERVE = ROOT / "examples" / "gpt" / "serve.mica"
CORPUS = ROOT / "examples" / "gpt" / "corpus.txt"
PATHS = ("/health", "/sample?n=32")
START_WAIT = 120  # seconds a server may take to load and listen


class Running:
    """A server process started with `command`, once it prints `serving on HOST port P`."""

    def __init__(self, command: list[str], log: Path):
        self.log = log  # its standard error: a peer that resets makes ThreadingHTTPServer print tracebacks
        with log.open("w") as err:
            self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err, text=True, cwd=ROOT)
        found = []
        reader = threading.Thread(target=self._wait_for_port, args=(found,), daemon=True)
        reader.start()
        reader.join(START_WAIT)
        if not found:
            self.process.kill()
            raise SystemExit(f"{command[0]} did not start serving:\n{log.read_text()[-2000:]}")
        self.port = found[0]

    def _wait_for_port(self, found: list) -> None:
        for line in self.process.stdout:
            match = re.match(r"serving on \S+ port (\d+)", line)
            if match:
                found.append(int(match.group(1)))
                return

    def peak_rss_mib(self) -> float:
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        return int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)) / 1024

    def stop(self) -> None:
        self.process.kill()
        self.process.wait(30)


def wrk(port: int, path: str, seconds: int, connections: int) -> dict:
    """wrk's figures: requests/s, p50 and p99 in ms, and every kind of error it counts. A request
    may take 60 s before it counts as an error: a slow server's latency is measured, not dropped."""
    done = subprocess.run(["wrk", "-t", "2", "-c", str(connections), "-d", f"{seconds}s", "--timeout", "60s",
                           "--latency", f"http://127.0.0.1:{port}{path}"],
                          capture_output=True, text=True, timeout=seconds + 120)
    out = done.stdout
    if "Requests/sec:" not in out:
        raise SystemExit(f"wrk gave no figures:\n{out}{done.stderr}")
    unit = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4}

    def percentile(p: str) -> float:
        found = re.search(rf"^\s*{p}(?:\.000)?%\s+([\d.]+)(us|ms|s|m)\s*$", out, re.M)
        if found is None:
            raise SystemExit(f"no {p}th percentile in wrk's output:\n{out}")
        return float(found.group(1)) * unit[found.group(2)]

    errors = sum(int(n) for n in re.findall(r"(?:connect|read|write|timeout) (\d+)", out))
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)), "p50": percentile("50"),
            "p99": percentile("99"), "errors": errors + (int(non_2xx.group(1)) if non_2xx else 0)}


def python_client(port: int, path: str, seconds: int, connections: int) -> dict:
    """wrk's figures from threads of http.client, each on one keep-alive connection; every
    request has a 60 s timeout and the run ends at its deadline."""
    latencies, errors, lock = [], [0], threading.Lock()
    deadline = time.monotonic() + seconds

    def client():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        while time.monotonic() < deadline:
            started = time.monotonic()
            try:
                conn.request("GET", path)
                response = conn.getresponse()
                response.read()
                ok = response.status == 200
            except (OSError, http.client.HTTPException):
                ok = False
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            with lock:
                if ok:
                    latencies.append((time.monotonic() - started) * 1e3)
                else:
                    errors[0] += 1
        conn.close()

    threads = [threading.Thread(target=client) for _ in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 90)
    cuts = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [float("nan")] * 99
    return {"rps": len(latencies) / seconds, "p50": cuts[49], "p99": cuts[98], "errors": errors[0]}


def checkpoint(args, work: Path) -> Path:
    if args.checkpoint:
        return Path(args.checkpoint).resolve()
    saved = work / "gpt.safetensors"
    trainer = cached_build(compile_program(load_source(str(GPT))), targets.native(), "fast")
    subprocess.run([str(trainer), "--corpus", str(CORPUS), "--steps", str(args.steps), "--save", str(saved)],
                   check=True, capture_output=True, cwd=ROOT)
    return saved


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--checkpoint", help="a checkpoint of examples/gpt/gpt.mica (default: train one)")
    parser.add_argument("--steps", type=int, default=200, help="training steps of the checkpoint made")
    args = parser.parse_args()
    load = wrk if shutil.which("wrk") else python_client
    binary = cached_build(compile_program(load_source(str(SERVE))), targets.native(), "fast")
    servers = {
        "mica": lambda ck: [str(binary), "--corpus", str(CORPUS), "--load", str(ck), "--port", "0",
                            "--host", "127.0.0.1"],
        "python+torch": lambda ck: [sys.executable, str(ROOT / "bench" / "torch_serve.py"), str(ck), "0",
                                    "--corpus", str(CORPUS)],
    }
    print(f"{cpu_model()}, {os.cpu_count()} CPUs; {args.connections} connections for {args.seconds} s each, "
          f"load from {'wrk' if load is wrk else 'a Python client'}")
    print(f"{'server':<14}{'path':<16}{'requests/s':>12}{'p50 ms':>10}{'p99 ms':>10}{'errors':>8}{'peak RSS MiB':>14}",
          flush=True)
    with tempfile.TemporaryDirectory() as work:
        ck = checkpoint(args, Path(work))
        for path in PATHS:
            for name, command in servers.items():
                server = Running(command(ck), Path(work) / f"{name}.err")
                try:
                    f = load(server.port, path, args.seconds, args.connections)
                    rss = server.peak_rss_mib()
                finally:
                    server.stop()
                print(f"{name:<14}{path:<16}{f['rps']:>12.1f}{f['p50']:>10.2f}{f['p99']:>10.2f}{f['errors']:>8}"
                      f"{rss:>14.1f}", flush=True)

if __name__ == "__main__":
    main()
