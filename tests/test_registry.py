"""Push and pull over the OCI distribution API, against real registries on
127.0.0.1 (Debian's docker-registry, tests/registry_env.py), with and without
htpasswd logins; skopeo reads back what was pushed, and Docker pulls and runs
it (the `docker` tests).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import re
import socket
import subprocess
import tarfile
import threading

import pytest

from docker_env import arm64_emulation, docker, docker_daemon, docker_held, skopeo  # noqa: F401 (fixtures)
from fake_driver import build_fake_driver
from glibc_base import glibc_base  # noqa: F401 (fixture)
from helpers import EXAMPLES, build
from micatool.cli import main
from micatool.link import bases, image, registry
from registry_env import PASSWORD, USER, auth_registry, free_port, open_registry  # noqa: F401 (fixtures)
from static_hello import HELLO_LINE, hello_binaries  # noqa: F401 (fixture)

EPOCH = 1700000000
pytestmark = pytest.mark.registry


def hello_image(hello_binaries, **labels) -> image.Image:
    binaries = {p: path.read_bytes() for p, path in hello_binaries.items()}
    return image.build_image(binaries, "mica/hello:1", EPOCH, labels=labels)


def skopeo_raw(skopeo, ref: str) -> bytes:
    done = subprocess.run([skopeo, "inspect", "--raw", "--tls-verify=false", f"docker://{ref}"],
                          capture_output=True)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout


def login(monkeypatch, tmp_path, host: str | None, user: str = USER, password: str = PASSWORD) -> None:
    """A Docker config with one login (or none) for the rest of the test."""
    auths = {host: {"auth": base64.b64encode(f"{user}:{password}".encode()).decode()}} if host else {}
    (tmp_path / "config.json").write_text(json.dumps({"auths": auths}))
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path))


@pytest.fixture(autouse=True)
def no_login(monkeypatch, tmp_path):
    login(monkeypatch, tmp_path, None)


# ---------------------------------------------------------------- push


def test_push_gives_the_registry_our_bytes(open_registry, hello_binaries, skopeo):
    built = hello_image(hello_binaries, run="first")
    pushed = registry.push_image(built, f"{open_registry.host}/mica/hello:1")
    assert (pushed.uploaded, pushed.present, pushed.unchanged) == (4, 0, False)  # 2 layers, 2 configs
    assert pushed.reference == f"{open_registry.host}/mica/hello@{built.index_digest}"
    raw = skopeo_raw(skopeo, f"{open_registry.host}/mica/hello:1")
    assert "sha256:" + hashlib.sha256(raw).hexdigest() == built.index_digest
    for part in built.platforms.values():
        raw = skopeo_raw(skopeo, f"{open_registry.host}/mica/hello@{part.manifest_digest}")
        assert json.loads(raw)["layers"][-1]["digest"] == part.layer_digest


def test_the_same_image_again_sends_nothing(open_registry, hello_binaries):
    built = hello_image(hello_binaries, run="again")
    registry.push_image(built, f"{open_registry.host}/mica/again:1")
    assert registry.push_image(built, f"{open_registry.host}/mica/again:1").unchanged


def test_a_tag_naming_another_image_is_refused_unless_overwrite(open_registry, hello_binaries, skopeo):
    first, second = hello_image(hello_binaries, run="one"), hello_image(hello_binaries, run="two")
    target = f"{open_registry.host}/mica/moved:1"
    registry.push_image(first, target)
    with pytest.raises(registry.RegistryError) as refused:
        registry.push_image(second, target)
    assert str(refused.value) == (f"{target} already names another image ({first.index_digest}); "
                                  "pass --overwrite to move the tag")
    pushed = registry.push_image(second, target, overwrite=True)
    assert (pushed.uploaded, pushed.present) == (2, 2)  # new configs; the layers were there
    assert "sha256:" + hashlib.sha256(skopeo_raw(skopeo, target)).hexdigest() == second.index_digest


def test_a_login_is_sent_where_the_registry_asks(auth_registry, hello_binaries, skopeo, monkeypatch, tmp_path):
    login(monkeypatch, tmp_path, auth_registry.host)
    built = hello_image(hello_binaries)
    assert registry.push_image(built, f"{auth_registry.host}/mica/private:1").uploaded == 4
    pulled = bases.load_base(f"{auth_registry.host}/mica/private:1", ["linux/arm64"])
    assert pulled["linux/arm64"].layers[0]["digest"] == built.platforms["linux/arm64"].layer_digest


def test_a_refused_login_is_one_line(auth_registry, hello_binaries, monkeypatch, tmp_path):
    login(monkeypatch, tmp_path, auth_registry.host, password="wrong")
    with pytest.raises(registry.RegistryError) as refused:
        registry.push_image(hello_image(hello_binaries), f"{auth_registry.host}/mica/private:2")
    assert str(refused.value) == (f"the registry {auth_registry.host} refused the login of 'mica' "
                                  f"(from {tmp_path / 'config.json'})")


def test_no_login_says_how_to_give_one(auth_registry, hello_binaries, capsys):
    words = EXAMPLES / "words" / "words.mica"
    build(words, tier="fast")  # the runtime built before: its first build has its own lines
    capsys.readouterr()
    code = main(["image", str(words), "--tag", "mica/words:1", "--platform", "linux/amd64",
                 "--push", f"{auth_registry.host}/mica/words:1"])
    assert code == 1
    assert capsys.readouterr().err == (f"micatool: pushing {auth_registry.host}/mica/words:1\n"
                                       f"micatool: error: the registry {auth_registry.host} needs a login; "
                                       f"run: docker login {auth_registry.host}\n")


def test_an_unreachable_registry_is_one_line(hello_binaries):
    host = f"127.0.0.1:{free_port()}"  # nothing listens there
    with pytest.raises(registry.RegistryError) as refused:
        registry.push_image(hello_image(hello_binaries), f"{host}/mica/hello:1")
    assert str(refused.value) == f"cannot reach the registry {host} ([Errno 111] Connection refused)"


class DyingProxy:
    """Forwards to a registry and dies (closes every socket, stops listening)
    in the middle of the first blob upload it sees."""

    def __init__(self, upstream: str):
        self.upstream = upstream.split(":")
        self.server = socket.create_server(("127.0.0.1", 0))
        self.host = f"127.0.0.1:{self.server.getsockname()[1]}"
        self.died = threading.Event()
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while not self.died.is_set():
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            with client:
                head = client.recv(65536)
                if head.startswith(b"PUT ") and b"/blobs/uploads/" in head.split(b"\r\n", 1)[0]:
                    self.died.set()  # half a blob arrived: the registry "dies"
                    self.server.close()
                    return
                with socket.create_connection((self.upstream[0], int(self.upstream[1]))) as up:
                    up.sendall(head)
                    while chunk := up.recv(65536):
                        client.sendall(chunk)


def test_a_registry_that_dies_mid_push_leaves_no_tag(open_registry, hello_binaries):
    proxy = DyingProxy(open_registry.host)
    with pytest.raises(registry.RegistryError) as refused:
        registry.push_image(hello_image(hello_binaries, run="dies"), f"{proxy.host}/mica/dies:1")
    assert proxy.died.is_set()
    message = str(refused.value)
    assert message.startswith(f"the registry {proxy.host} stopped answering while uploading sha256:")
    assert "\n" not in message
    session = registry.Session(registry.parse_reference(f"{open_registry.host}/mica/dies:1"), "pull")
    assert registry.tagged_digest(session) is None


def test_a_pushed_image_gets_a_digest_reference(open_registry, hello_binaries, capsys):
    code = main(["image", str(EXAMPLES / "words" / "words.mica"), "--tag", "mica/words:1",
                 "--platform", "linux/amd64", "--push", f"{open_registry.host}/mica/words:1"])
    assert code == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1].startswith(f"pushed {open_registry.host}/mica/words:1: "
                                           f"{open_registry.host}/mica/words@sha256:")


# ---------------------------------------------------------------- a GPU image through a registry


@pytest.fixture(scope="module")
def pushed_gpu(open_registry, glibc_base, skopeo, tmp_path_factory):
    """examples/gpu on the libc6 base pulled from the registry, pushed back: its digest reference."""
    base = f"{open_registry.host}/mica/glibc-base:1"
    done = subprocess.run([skopeo, "copy", "--all", "--preserve-digests", "--dest-tls-verify=false",
                           f"oci:{glibc_base.layout}", f"docker://{base}"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    with pytest.MonkeyPatch.context() as env:
        env.setenv("DOCKER_CONFIG", str(tmp_path_factory.mktemp("no-login")))
        folder = tmp_path_factory.mktemp("pushed-gpu")
        out = folder / "gpu.tar"
        with open(folder / "printed.txt", "w") as printed, contextlib.redirect_stdout(printed):
            assert main(["image", str(EXAMPLES / "gpu" / "gpu.mica"), "--tag", "mica/gpu:1", "--base", base,
                         "--push", f"{open_registry.host}/mica/gpu:1", "-o", str(out)]) == 0
    return f"{open_registry.host}/mica/gpu:1", out, (folder / "printed.txt").read_text()


def test_the_base_pulled_keeps_its_layers(pushed_gpu, glibc_base, open_registry):
    ref, out, printed = pushed_gpu
    with tarfile.open(out) as tar:
        for platform, digest in glibc_base.layer_digests.items():
            assert tar.getmember(image.blob_path(digest)).isfile()
    # the base's two layers are mounted from its repository; two binaries and two configs are sent
    assert re.search(rf"^pushed {ref}: {open_registry.host}/mica/gpu@sha256:[0-9a-f]{{64}} "
                     r"\(4 blob\(s\) sent, 2 present\)$", printed, re.M), printed


@pytest.mark.docker
@pytest.mark.parametrize("platform", ["linux/amd64", "linux/arm64"])
def test_docker_pulls_and_runs_the_gpu_image(platform, pushed_gpu, docker_held, arm64_emulation, tmp_path):
    ref = docker_held.image(pushed_gpu[0])
    triple = {"linux/amd64": "x86_64-linux-gnu", "linux/arm64": "aarch64-linux-gnu"}[platform]
    driver = build_fake_driver(tmp_path, triple + ".2.28")
    done = docker("pull", "--platform", platform, ref, timeout=300)
    assert done.returncode == 0, done.stderr
    done = docker_held.run(ref, "--platform", platform, "-v", f"{driver}:/usr/lib/{triple}/libcuda.so.1:ro")
    assert done.returncode == 0, done.stderr
    host, device, same = done.stdout.splitlines()
    assert host.split("=", 1)[1] == device.split("=", 1)[1]
    assert same == "64 of 64 elements identical to the bit"


class TokenFront:
    """The real registry behind a front that wants Bearer tokens, as Docker
    Hub or GHCR do: a request without the token gets a 401 challenge naming
    the token service (here too), which hands a token for a good login."""

    TOKEN = "token-for-the-tests"

    def __init__(self, upstream: str):
        import http.server

        front = self
        self.scopes: list[str] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_any(self):
                if self.path.startswith("/token?"):
                    return front.token(self)
                if self.headers.get("Authorization") != f"Bearer {front.TOKEN}":
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", f'Bearer realm="http://{front.host}/token",'
                                                         f'service="mica-tests"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                front.forward(self, upstream)
            do_GET = do_HEAD = do_POST = do_PUT = do_any

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.host = f"127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def token(self, handler):
        import urllib.parse

        query = urllib.parse.parse_qs(urllib.parse.urlsplit(handler.path).query)
        self.scopes += query.get("scope", [])
        good = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
        body = json.dumps({"token": self.TOKEN}).encode() if handler.headers.get("Authorization") == good else b""
        handler.send_response(200 if body else 401)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    @staticmethod
    def forward(handler, upstream: str):
        import http.client

        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else None
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in ("authorization", "host")}
        connection = http.client.HTTPConnection(upstream, timeout=30)
        connection.request(handler.command, handler.path, body=body, headers=headers)
        answer = connection.getresponse()
        data = answer.read()
        handler.send_response(answer.status)
        for key, value in answer.getheaders():
            if key.lower() not in ("content-length", "connection", "transfer-encoding"):
                handler.send_header(key, value.replace(upstream, handler.headers["Host"]))
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        if handler.command != "HEAD":
            handler.wfile.write(data)
        connection.close()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_bearer_tokens_are_fetched_for_the_repository(open_registry, hello_binaries, monkeypatch, tmp_path):
    front = TokenFront(open_registry.host)
    try:
        login(monkeypatch, tmp_path, front.host)
        built = hello_image(hello_binaries, run="bearer")
        assert registry.push_image(built, f"{front.host}/mica/bearer:1").uploaded == 4
        assert front.scopes[0] == "repository:mica/bearer:pull,push"
        login(monkeypatch, tmp_path, front.host, password="wrong")
        with pytest.raises(registry.RegistryError) as refused:
            bases.load_base(f"{front.host}/mica/bearer:1", ["linux/amd64"])
        assert str(refused.value) == (f"the registry {front.host} refused the login of 'mica' "
                                      f"(from {tmp_path / 'config.json'})")
    finally:
        front.close()
