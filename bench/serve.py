"""The GPT served over HTTP, under load: examples/gpt/serve.mica against the same model in
PyTorch behind the standard library's ThreadingHTTPServer (bench/torch_serve.py).

    python bench/serve.py [--seconds 30] [--connections 64] [--idle 200] [--probes 200]
                          [--only load|idle] [--checkpoint FILE] [--steps 200]

Trains the full-size examples/gpt/gpt.mica for --steps (or loads --checkpoint),
then runs two scenarios, each server started afresh on 127.0.0.1 for each row:

- load: for each of /health and /sample?n=32, --seconds of --connections
  keep-alive connections (Debian's `wrk`; a bounded Python client where wrk is
  missing): requests/s, p50/p99 latency, errors (failed connections and reads,
  timeouts, non-2xx answers) and the server's peak RSS (VmHWM).
- idle: --idle connections held open, either silent or sending a request head
  one byte every two seconds (a slowloris), each opened again as soon as the
  server closes it; meanwhile --probes requests of /health (or as many as
  --seconds allows), one after another, each on a fresh connection: how many of the held connections were accepted
  (connected within 5 s), the probes' p50/p99 latency from connect to the
  answer's last byte, the probes that failed (30 s each), and the server's RSS
  while it holds them (VmRSS).

Run it with a Python that has torch (PyTorch is no dependency of micatool).
Not a test: the figures depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import http.client
import os
import re
import shutil
import socket
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
CONNECT_WAIT = 5  # seconds a held connection may take to connect: past it, it counts as not accepted
PROBE_WAIT = 30  # seconds a probe may take before it counts as failed
DRIBBLE = b"GET /health HTTP/1.1\r\nHost: x\r\n" + b"X-Slow: " + b"z" * 10000  # a head that never ends


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

    def rss_mib(self, field: str = "VmHWM") -> float:
        """Its peak resident memory (VmHWM), or its resident memory now (VmRSS)."""
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        return int(re.search(rf"{field}:\s+(\d+) kB", status).group(1)) / 1024

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


class Held:
    """n connections to port held open by one thread: silent, or each sending DRIBBLE a byte
    every two seconds; one the server closes is opened again at once. `accepted` counts the
    first n that connected within CONNECT_WAIT."""

    def __init__(self, port: int, n: int, dribbling: bool):
        self.port, self.dribbling, self.stopping = port, dribbling, threading.Event()
        self.sockets = [self.open() for _ in range(n)]
        self.accepted = sum(s is not None for s in self.sockets)
        self.sent = [0] * n
        self.thread = threading.Thread(target=self.hold, daemon=True)
        self.thread.start()

    def open(self) -> socket.socket | None:
        try:
            s = socket.create_connection(("127.0.0.1", self.port), timeout=CONNECT_WAIT)
        except OSError:
            return None
        s.setblocking(False)
        return s

    def hold(self) -> None:
        while not self.stopping.wait(2.0):
            for i, s in enumerate(self.sockets):
                if s is not None and self.still_open(s, i):
                    continue
                if s is not None:
                    s.close()
                self.sockets[i], self.sent[i] = self.open(), 0

    def still_open(self, s: socket.socket, i: int) -> bool:
        """Whether the server still holds s, after its next byte when dribbling."""
        try:
            if s.recv(65536) == b"":
                return False
        except BlockingIOError:
            pass
        except OSError:
            return False
        if not self.dribbling:
            return True
        try:
            s.send(DRIBBLE[self.sent[i] % len(DRIBBLE):][:1])
        except OSError:
            return False
        self.sent[i] += 1
        return True

    def close(self) -> None:
        self.stopping.set()
        self.thread.join(60)
        for s in self.sockets:
            if s is not None:
                s.close()


def probe(port: int) -> float | None:
    """GET /health on a fresh connection: ms from connect to the answer's last byte, or None."""
    started = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=PROBE_WAIT) as s:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            answer = b""
            while piece := s.recv(4096):
                answer += piece
    except OSError:
        return None
    return (time.monotonic() - started) * 1e3 if answer.endswith(b"\r\n\r\nok\n") else None


def idle_scenario(server: Running, n: int, dribbling: bool, probes: int, seconds: int) -> dict:
    """Probes of /health, one after another, while n connections are held open: `probes` of
    them, or fewer when they take more than `seconds`."""
    held = Held(server.port, n, dribbling)
    try:
        deadline, times = time.monotonic() + seconds, []
        while len(times) < probes and time.monotonic() < deadline:
            times.append(probe(server.port))
        rss = server.rss_mib("VmRSS")
    finally:
        held.close()
    ok = [t for t in times if t is not None]
    cuts = statistics.quantiles(ok, n=100) if len(ok) > 1 else [float("nan")] * 99
    return {"accepted": held.accepted, "probes": len(times), "p50": cuts[49], "p99": cuts[98],
            "failed": len(times) - len(ok), "rss": rss}


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
    parser.add_argument("--idle", type=int, default=200, help="connections held open in the idle scenario")
    parser.add_argument("--probes", type=int, default=200, help="/health requests measured in the idle scenario")
    parser.add_argument("--only", choices=("load", "idle"), help="run one scenario")
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
    print(f"{cpu_model()}, {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d')}")
    with tempfile.TemporaryDirectory() as work:
        ck = checkpoint(args, Path(work))

        def started(name: str) -> Running:
            return Running(servers[name](ck), Path(work) / f"{name}.err")

        if args.only != "idle":
            load_table(args, load, started, servers)
        if args.only != "load":
            idle_table(args, started, servers)


def load_table(args, load, started, servers) -> None:
    print(f"\nload: {args.connections} keep-alive connections for {args.seconds} s each, "
          f"from {'wrk' if load is wrk else 'a Python client'}")
    print(f"{'server':<14}{'path':<16}{'requests/s':>12}{'p50 ms':>10}{'p99 ms':>10}{'errors':>8}{'peak RSS MiB':>14}",
          flush=True)
    for path in PATHS:
        for name in servers:
            server = started(name)
            try:
                f = load(server.port, path, args.seconds, args.connections)
                rss = server.rss_mib()
            finally:
                server.stop()
            print(f"{name:<14}{path:<16}{f['rps']:>12.1f}{f['p50']:>10.2f}{f['p99']:>10.2f}{f['errors']:>8}"
                  f"{rss:>14.1f}", flush=True)


def idle_table(args, started, servers) -> None:
    print(f"\nidle: {args.idle} connections held open (silent, or a head's byte every 2 s) while up to "
          f"{args.probes} requests of /health in {args.seconds} s, each on a fresh connection, are timed")
    print(f"{'server':<14}{'held':<8}{'accepted':>12}{'probes':>8}{'p50 ms':>10}{'p99 ms':>10}{'failed':>8}"
          f"{'RSS MiB':>10}", flush=True)
    for dribbling in (False, True):
        for name in servers:
            server = started(name)
            try:
                f = idle_scenario(server, args.idle, dribbling, args.probes, args.seconds)
            finally:
                server.stop()
            held = "slow" if dribbling else "silent"
            accepted = f"{f['accepted']} / {args.idle}"
            print(f"{name:<14}{held:<8}{accepted:>12}{f['probes']:>8}{f['p50']:>10.2f}{f['p99']:>10.2f}"
                  f"{f['failed']:>8}{f['rss']:>10.1f}", flush=True)


if __name__ == "__main__":
    main()
