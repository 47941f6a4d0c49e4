"""Real registries on 127.0.0.1 for the push and pull tests.

Debian's `docker-registry` (the CNCF distribution registry, 2.8) is installed
when missing and started per session on a free port with its storage in a
temporary folder:

  open_registry   anyone may pull and push;
  auth_registry   htpasswd (bcrypt) authentication: user USER, password PASSWORD.

A registry that cannot be had skips the tests that use it, saying why.
"""

from __future__ import annotations

import pathlib
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass

import pytest

from docker_env import stop
from system import Unavailable, apt_install, tail

BINARY = "/usr/bin/docker-registry"
USER = "mica"
PASSWORD = "s3cret-for-tests"
START_WAIT_S = 30


@dataclass(frozen=True)
class Registry:
    host: str  # 127.0.0.1:PORT
    storage: pathlib.Path
    process: subprocess.Popen


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def answers(host: str) -> bool:
    try:
        urllib.request.urlopen(f"http://{host}/v2/", timeout=2).close()
    except urllib.error.HTTPError as e:
        return e.code == 401  # up, and wants a login
    except OSError:
        return False
    return True


def start_registry(folder: pathlib.Path, htpasswd: pathlib.Path | None) -> Registry:
    if not shutil.which(BINARY):
        apt_install("docker-registry")
    host = f"127.0.0.1:{free_port()}"
    storage = folder / "storage"
    auth = f"auth:\n  htpasswd:\n    realm: mica-tests\n    path: {htpasswd}\n" if htpasswd else ""
    config = folder / "config.yml"
    config.write_text(f"version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {storage}\n"
                      f"  delete:\n    enabled: true\nhttp:\n  addr: {host}\n{auth}")
    log = open(folder / "registry.log", "wb")
    process = subprocess.Popen([BINARY, "serve", str(config)], stdout=log, stderr=subprocess.STDOUT,
                               start_new_session=True)
    deadline = time.monotonic() + START_WAIT_S
    while time.monotonic() < deadline and process.poll() is None:
        if answers(host):
            return Registry(host, storage, process)
        time.sleep(0.2)
    stop(process)
    raise Unavailable(f"docker-registry would not start: {tail((folder / 'registry.log').read_text(errors='replace'))}")


def bcrypt_line(user: str, password: str) -> str:
    import bcrypt

    return f"{user}:{bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=5)).decode()}\n"


def registry_fixture(tmp_path_factory, with_auth: bool):
    folder = tmp_path_factory.mktemp("registry-auth" if with_auth else "registry")
    htpasswd = None
    if with_auth:
        htpasswd = folder / "htpasswd"
        htpasswd.write_text(bcrypt_line(USER, PASSWORD))
    try:
        return start_registry(folder, htpasswd)
    except Unavailable as e:
        pytest.skip(f"registry: {e}")


@pytest.fixture(scope="session")
def open_registry(tmp_path_factory):
    registry = registry_fixture(tmp_path_factory, with_auth=False)
    yield registry
    stop(registry.process)


@pytest.fixture(scope="session")
def auth_registry(tmp_path_factory):
    registry = registry_fixture(tmp_path_factory, with_auth=True)
    yield registry
    stop(registry.process)
