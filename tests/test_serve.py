"""The GPT serving over HTTP/1.1 (examples/gpt/serve.mica): the small
configuration of tests/test_gpt.py trains a checkpoint, and the server loaded
from it answers /health and /sample on 127.0.0.1 (and ::1): the same bytes
for one seed from eight clients at once, the same text the program prints,
keep-alive, and a 4xx or a closed connection for each malformed or hostile
request, after which the server still answers. The int8 model serves the sample
int8.mica prints; the aarch64 build (under qemu) serves the same bytes; and the
FROM scratch image serves them under a real Docker daemon.

Every socket has a timeout and every loop a bound, so a broken server fails
a test instead of hanging it.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from docker_env import docker, docker_daemon, docker_held  # noqa: F401 (fixtures)
from helpers import EXAMPLES, build
from micatool.cli import main
from test_gpt import SMALL, small_folder
from test_network import host_param

pytestmark = pytest.mark.network

WAIT = 20  # seconds any one exchange may take before the test fails
PATIENCE = 2  # the server's --timeout: how long it waits for a silent caller
STEPS = 30
TAG = f"mica-test-gpt-serve:{os.getpid()}"


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("serve")


@pytest.fixture(scope="module")
def small(work):
    return small_folder(work)


@pytest.fixture(scope="module")
def binary(small):
    """The server."""
    return build(small / "serve.mica", tier="fast")


@pytest.fixture(scope="module")
def trained(work, small):
    """The checkpoint, and what the training run printed after it: the sample of seed 1337."""
    checkpoint = work / "ck.safetensors"
    done = subprocess.run([str(build(small / "gpt.mica", tier="fast")), "--steps", str(STEPS), "--save",
                           str(checkpoint)], capture_output=True, timeout=600, cwd=EXAMPLES / "gpt")
    assert done.returncode == 0, done.stderr
    sample = re.split(rb"validation loss .*\n\n", done.stdout, maxsplit=1)[1]
    return checkpoint, sample


class Server:
    """The GPT serving `checkpoint` on port 0 of `host`, and the port it printed."""

    def __init__(self, command: list[str], cwd):
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        cwd=cwd)
        lines = []
        reader = threading.Thread(target=self._read_until_serving, args=(lines,), daemon=True)
        reader.start()
        reader.join(WAIT)
        found = [re.fullmatch(r"serving on \S+ port (\d+)\n", line) for line in lines]
        assert found and found[-1], (lines, self.process.poll())
        self.port = int(found[-1].group(1))

    def _read_until_serving(self, lines: list) -> None:
        for _ in range(10):  # the header, then the port
            line = self.process.stdout.readline()
            lines.append(line)
            if not line or line.startswith("serving on"):
                return

    def stop(self) -> str:
        """Its standard error, after checking it is still running: nothing made it stop."""
        assert self.process.poll() is None, self.process.stderr.read()
        self.process.kill()
        return self.process.communicate(timeout=WAIT)[1]


def serve(binary, checkpoint, host: str, patience: float = PATIENCE) -> Server:
    return Server([str(binary), "--load", str(checkpoint), "--port", "0", "--host", host,
                   "--timeout", str(patience)], cwd=EXAMPLES / "gpt")


@pytest.fixture(scope="module")
def server(binary, trained):
    running = serve(binary, trained[0], "127.0.0.1")
    yield running
    running.stop()


def connect(port: int, host: str = "127.0.0.1") -> socket.socket:
    return socket.create_connection((host, port), timeout=WAIT)


def read_response(f) -> tuple[int, dict, bytes]:
    """One response from a socket's file: status, headers (lower-case names), body."""
    status_line = f.readline(1000)
    assert status_line.startswith(b"HTTP/1.1 "), status_line
    headers = {}
    for _ in range(50):
        line = f.readline(1000)
        if line == b"\r\n":
            break
        name, _, value = line.decode().partition(":")
        headers[name.strip().lower()] = value.strip()
    else:
        raise AssertionError("no end to the headers")
    body = f.read(int(headers["content-length"]))
    return int(status_line.split()[1]), headers, body


def exchange(port: int, raw: bytes, host: str = "127.0.0.1") -> tuple[int, dict, bytes, bytes]:
    """raw sent on a new connection: the first response, and what follows it until the server closes."""
    with connect(port, host) as s:
        s.sendall(raw)
        f = s.makefile("rb")
        status, headers, body = read_response(f)
        return status, headers, body, f.read()


def get(port: int, target: str, host: str = "127.0.0.1") -> tuple[int, dict, bytes]:
    status, headers, body, _ = exchange(port, f"GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                                        .encode(), host)
    return status, headers, body


def closed_within(s: socket.socket, seconds: float) -> bytes:
    """What the server sends before it closes s, which it must do within `seconds`."""
    s.settimeout(seconds)
    got = b""
    for _ in range(100):
        piece = s.recv(65536)
        if not piece:
            return got
        got += piece
    raise AssertionError("the server kept talking")


# ---------------------------------------------------------------- answers


def test_health_answers_ok_with_a_content_length(server):
    status, headers, body = get(server.port, "/health")
    assert (status, body, headers["content-length"], headers["content-type"]) == \
        (200, b"ok\n", "3", "text/plain; charset=utf-8")


def test_a_sample_is_the_text_the_program_prints_for_its_seed(server, trained):
    _, sample = trained
    status, _, body = get(server.port, f"/sample?n={SMALL['SampleLength']}&seed=1337")
    assert (status, body) == (200, sample)


def test_the_int8_model_serves_the_int8_sample_int8_prints(binary, small, trained):
    """--int8 samples from the quantized model: its integer products run in the tasks."""
    printed = subprocess.run([str(build(small / "int8.mica", tier="fast")), "--load", str(trained[0])],
                             capture_output=True, timeout=600, cwd=EXAMPLES / "gpt")
    assert printed.returncode == 0, printed.stderr
    sample = re.search(rb"from float32's\n\n(.*\n)sampling tokens/s", printed.stdout, re.S).group(1)
    running = Server([str(binary), "--load", str(trained[0]), "--int8", "--port", "0", "--host", "127.0.0.1"],
                     cwd=EXAMPLES / "gpt")
    try:
        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(lambda _: get(running.port, f"/sample?n={SMALL['SampleLength']}"), range(4)))
    finally:
        running.stop()
    assert [(status, body) for status, _, body in answers] == [(200, sample)] * 4


def test_eight_clients_at_once_get_the_same_bytes_for_one_seed(server):
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: get(server.port, "/sample?n=200&seed=7"), range(8)))
    assert {(status, body) for status, _, body in answers} == {answers[0][::2]}
    assert answers[0][0] == 200 and len(answers[0][2]) == SMALL["T"] + 200 + 1
    shorter = get(server.port, "/sample?seed=7&n=50")[2]
    assert shorter[:-1] == answers[0][2][:SMALL["T"] + 50]  # the same draws, stopped sooner
    assert get(server.port, "/sample?n=200&seed=8")[2] != answers[0][2]


def test_keep_alive_answers_two_requests_on_one_connection(server):
    with connect(server.port) as s:
        f = s.makefile("rb")
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        first = read_response(f)
        s.sendall(b"GET /sample?n=5&seed=3 HTTP/1.1\r\nHost: x\r\n\r\n")
        second = read_response(f)
        s.sendall(b"GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n")
        third = read_response(f)
    assert (first[0], first[2], "connection" in first[1]) == (200, b"ok\n", False)
    assert (second[0], len(second[2]), third[0]) == (200, SMALL["T"] + 5 + 1, 404)


def test_http_1_0_and_connection_close_end_the_connection(server):
    for raw in (b"GET /health HTTP/1.0\r\n\r\n", b"GET /health HTTP/1.1\r\nconnection: Close\r\n\r\n",
                b"GET /health HTTP/1.1\r\nHost: x\r\nCONNECTION:close\r\n\r\n"):
        status, headers, body, after = exchange(server.port, raw)
        assert (status, headers["connection"], body, after) == (200, "close", b"ok\n", b"")


# ---------------------------------------------------------------- what is refused

MALFORMED = {
    "unknown path": (b"GET /nope HTTP/1.1\r\n\r\n", 404, b"no such path: /nope\n"),
    "no version": (b"GET /health\r\n\r\n", 400, b"bad request line\n"),
    "garbage": (b"\x00\xff hello there friend\r\n\r\n", 400, b"bad request line\n"),
    "another method": (b"POST /sample HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 405, b"only GET\n"),
    "n too large": (b"GET /sample?n=1001 HTTP/1.1\r\n\r\n", 400, b"a sample takes n=0..1000 and seed=0 or more\n"),
    "n not a number": (b"GET /sample?n=ten HTTP/1.1\r\n\r\n", 400, b"a sample takes n=0..1000 and seed=0 or more\n"),
    "negative seed": (b"GET /sample?seed=-1 HTTP/1.1\r\n\r\n", 400, b"a sample takes n=0..1000 and seed=0 or more\n"),
    "unknown key": (b"GET /sample?temperature=2 HTTP/1.1\r\n\r\n", 400,
                    b"a sample takes n=0..1000 and seed=0 or more\n"),
    "two queries": (b"GET /sample?n=1?n=2 HTTP/1.1\r\n\r\n", 400, b"bad query\n"),
    "headers past 8 KiB": (b"GET /health HTTP/1.1\r\n" + b"X-Padding: " + b"p" * 9000 + b"\r\n\r\n", 431,
                           b"request head over 8192 bytes\n"),
    "one endless line": (b"GET /" + b"a" * 20000, 431, b"request head over 8192 bytes\n"),
}


@pytest.mark.parametrize("case", MALFORMED)
def test_a_malformed_request_gets_its_4xx(server, case):
    raw, status, body = MALFORMED[case]
    got_status, headers, got_body, after = exchange(server.port, raw)
    assert (got_status, got_body) == (status, body)
    if status != 404:  # what follows a malformed request cannot be trusted: the connection closes
        assert (headers["connection"], after) == ("close", b"")


def test_a_silent_caller_is_closed_after_the_timeout(server):
    with connect(server.port) as s:
        assert closed_within(s, WAIT) == b""


def test_a_caller_that_dribbles_its_request_is_closed_at_the_deadline(server):
    """A byte every quarter second: each read is in time, the head as a whole is not."""
    request = b"GET /health HTTP/1.1\r\n" + b"X: y\r\n" * 20  # 35 s of dribbling
    with connect(server.port) as s:
        s.settimeout(0.25)
        for byte in request:
            try:
                s.sendall(bytes([byte]))
                piece = s.recv(100)
            except TimeoutError:
                continue
            except OSError:  # reset: closed while we wrote
                break
            assert piece == b""
            break
        else:
            raise AssertionError("the server waited for the whole dribbled head")


def test_a_half_closed_caller_still_gets_its_answer(server):
    with connect(server.port) as s:
        s.sendall(b"GET /sample?n=3&seed=1 HTTP/1.1\r\nHost: x\r\n\r\n")
        s.shutdown(socket.SHUT_WR)
        f = s.makefile("rb")
        status, _, body = read_response(f)
        assert (status, len(body), f.read()) == (200, SMALL["T"] + 3 + 1, b"")


def test_a_request_cut_short_gets_a_closed_connection(server):
    with connect(server.port) as s:
        s.sendall(b"GET /health HTTP/1.1\r\nHost:")
        s.shutdown(socket.SHUT_WR)
        assert closed_within(s, WAIT) == b""


def test_callers_that_leave_mid_answer_do_not_stop_the_server(server):
    for _ in range(20):
        with connect(server.port) as s:
            s.sendall(b"GET /sample?n=1000&seed=2 HTTP/1.1\r\n\r\n" * 4)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # reset
    assert get(server.port, "/health")[:3:2] == (200, b"ok\n")
    assert server.process.poll() is None


def test_more_callers_than_workers_are_all_served(server):
    """65 connections held open at once: a worker each for 64 of them, the last waits its turn."""
    sockets = [connect(server.port) for _ in range(65)]
    try:
        for s in sockets:
            s.sendall(b"GET /health HTTP/1.1\r\nConnection: close\r\n\r\n")
        answers = [closed_within(s, WAIT) for s in sockets]
    finally:
        for s in sockets:
            s.close()
    assert all(a.startswith(b"HTTP/1.1 200 OK\r\n") and a.endswith(b"\r\n\r\nok\n") for a in answers)


def test_a_keep_alive_connection_closes_after_a_hundred_requests(server):
    """Even with more requests sent ahead: the hundredth answer still arrives, whole."""
    with connect(server.port) as s:
        f = s.makefile("rb")
        s.sendall(b"GET /health HTTP/1.1\r\n\r\n" * 120)
        answers = [read_response(f) for _ in range(100)]
        assert f.read() == b""
    assert [a[1].get("connection") for a in answers] == [None] * 99 + ["close"]


# ---------------------------------------------------------------- idle callers


@pytest.fixture(scope="module")
def patient(binary, trained):
    """A server that waits on a silent caller longer than a test waits for an answer: one
    that kept a worker waiting on each would answer no one else in time."""
    running = serve(binary, trained[0], "127.0.0.1", patience=3 * WAIT)
    yield running
    running.stop()


def still_open(s: socket.socket) -> bool:
    """Has the server neither closed s nor written to it?"""
    s.setblocking(False)
    try:
        return s.recv(1) != b""  # anything said is wrong too, and fails the caller's assertion
    except BlockingIOError:
        return True


def test_idle_and_slow_callers_hold_no_worker(patient):
    """200 callers, half silent and half part-way through a head (the issue's attack, against
    64 workers): /health on a fresh connection is answered, and none of them was closed for it."""
    callers = [connect(patient.port) for _ in range(200)]
    try:
        for s in callers[1::2]:
            s.sendall(b"GET /health HTTP/1.1\r\nHo")
        assert get(patient.port, "/health")[:3:2] == (200, b"ok\n")
        assert all(still_open(s) for s in callers)
    finally:
        for s in callers:
            s.close()


def test_a_keep_alive_connection_is_given_up_for_a_caller_that_waits(patient):
    """64 keep-alive callers, each answered once and silent since, hold every worker between
    requests: a 65th caller is answered all the same, and one of them is closed for it."""
    callers = [connect(patient.port) for _ in range(64)]
    try:
        for s in callers:
            s.sendall(b"GET /health HTTP/1.1\r\n\r\n")
            assert read_response(s.makefile("rb"))[::2] == (200, b"ok\n")
        assert get(patient.port, "/health")[:3:2] == (200, b"ok\n")
        assert sum(not still_open(s) for s in callers) >= 1
    finally:
        for s in callers:
            s.close()


def test_a_timeout_out_of_range_is_a_usage_error(binary):
    for timeout in ("0", "-1", "1e9"):
        done = subprocess.run([str(binary), "--port", "0", "--timeout", timeout], capture_output=True, text=True,
                              timeout=WAIT, cwd=EXAMPLES / "gpt")
        assert (done.returncode, done.stdout) == (2, "serve: --timeout is seconds, more than 0 and at most a day\n")


def test_the_server_needs_a_checkpoint(binary):
    done = subprocess.run([str(binary), "--port", "0"], capture_output=True, text=True, timeout=WAIT)
    assert (done.returncode, done.stdout) == (2, "usage: serve --load FILE [--port PORT] [--host HOST] "
                                                 "[--timeout SECONDS] [--int8] [--corpus FILE]\n")


# ---------------------------------------------------------------- ::1, and the image


@pytest.mark.parametrize("host", [host_param("::1")])
def test_the_server_answers_on_the_ipv6_loopback(binary, trained, server, host):
    running = serve(binary, trained[0], host)
    try:
        assert get(running.port, "/sample?n=200&seed=7", host) == get(server.port, "/sample?n=200&seed=7")
    finally:
        running.stop()


@pytest.mark.qemu
def test_the_aarch64_server_answers_the_same_bytes(small, trained, server, aarch64):
    binary = build(small / "serve.mica", tier="fast", target="aarch64-linux")
    running = Server([aarch64, str(binary), "--load", str(trained[0]), "--port", "0", "--host", "127.0.0.1"],
                     cwd=EXAMPLES / "gpt")
    try:
        answer = get(running.port, "/sample?n=200&seed=7")
    finally:
        running.stop()
    assert answer == get(server.port, "/sample?n=200&seed=7")


@pytest.mark.docker
def test_the_image_serves_from_a_mounted_checkpoint(docker_held, work, small, trained, server):
    """The FROM scratch image, the corpus and checkpoint mounted read-only. The test daemon makes no
    bridge (tests/docker_env.py), so the container shares the host's network and listens on 127.0.0.1
    only, on a port the test picks."""
    source = small / "serve.mica"
    tarball = work / "serve.tar"
    assert main(["-q", "image", str(source), "--tag", TAG, "--platform", "linux/amd64", "-o", str(tarball)]) == 0
    loaded = docker_held.load(tarball)
    assert loaded.returncode == 0, loaded.stderr
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    name = docker_held.container()
    container = docker("run", "-d", "--rm", "--name", name, "--pull", "never", "--network", "host",
                       "-v", f"{trained[0]}:/ck.safetensors:ro",
                       "-v", f"{EXAMPLES / 'gpt' / 'corpus.txt'}:/corpus.txt:ro", TAG,
                       "--corpus", "/corpus.txt", "--load", "/ck.safetensors", "--port", str(port),
                       "--host", "127.0.0.1")
    assert container.returncode == 0, container.stderr
    answer = None
    for _ in range(100):  # until it listens: at most 10 s
        try:
            answer = get(port, "/sample?n=200&seed=7")
            break
        except OSError:
            time.sleep(0.1)
    assert answer is not None, docker("logs", name).stderr
    assert answer == get(server.port, "/sample?n=200&seed=7")
