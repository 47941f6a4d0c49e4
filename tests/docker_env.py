"""Docker for the tests: finds, installs and starts what is missing.

Gives two session fixtures:
  docker_daemon    a daemon that answers `docker info`. When none answers it
                   installs Debian's docker.io if needed, starts dockerd in the
                   background, and stops it again when the last test process
                   using it (pytest-xdist's workers share it) ends.
  arm64_emulation  qemu's aarch64 binfmt handler registered (package
                   qemu-user-static), so linux/arm64 containers run on x86_64.

and one per test, docker_held: what the test makes Docker hold (images it
loads, builds or pulls, containers it runs), removed when the test ends,
passed or failed; a module's fixture holds its own with holding(). The suite
leaves Docker's store as it found it.

Everything here needs root on Debian. When a step cannot be done, the tests
that use a fixture skip with the step's reason; with MICA_REQUIRE_DOCKER=1
(for machines known to run Docker) they fail instead, so a broken setup never
passes quietly.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import os
import pathlib
import platform
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator

import pytest

from micatool.cache import held_alone
from system import Unavailable, apt_install, sh, tail

BINFMT = pathlib.Path("/proc/sys/fs/binfmt_misc")
QEMU_CONF = pathlib.Path("/usr/lib/binfmt.d/qemu-aarch64.conf")
PIDFILE = pathlib.Path("/var/run/docker.pid")
START_WAIT_S = 60
DAEMON_START = pathlib.Path(tempfile.gettempdir()) / "mica-tests-dockerd.lock"  # one process checks or starts it
DAEMON_USERS = pathlib.Path(tempfile.gettempdir()) / "mica-tests-dockerd.users"  # held shared by each using it
# No iptables rules and no docker0 bridge: the tests' containers need no
# network, and the host's network is left as it was.
DOCKERD_FLAGS = [["--iptables=false", "--bridge=none"],
                 ["--iptables=false", "--bridge=none", "--storage-driver=vfs"]]



def give_up(reason: str):
    """Skip, or fail where the machine is meant to run Docker."""
    if os.environ.get("MICA_REQUIRE_DOCKER") == "1":
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


def ensure_docker_installed() -> None:
    """The docker CLI and dockerd, from Debian's docker.io when either is missing."""
    if not (shutil.which("docker") and shutil.which("dockerd")):
        apt_install("docker.io")


# ---------------------------------------------------------------- the daemon


def daemon_answers() -> bool:
    return sh(["docker", "info"], timeout=20)[0] == 0


def clear_stale_pidfile() -> None:
    """A dockerd killed without cleanup leaves its pid file, and the next refuses to start."""
    try:
        pid = int(PIDFILE.read_text().strip())
    except (OSError, ValueError):
        return
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        PIDFILE.unlink(missing_ok=True)
    except PermissionError:
        pass  # alive, someone else's


def start_dockerd(log: pathlib.Path) -> subprocess.Popen:
    """Start dockerd and wait until it answers; try vfs storage if overlay2 fails."""
    if os.geteuid() != 0:
        raise Unavailable("no Docker daemon answers and starting dockerd needs root")
    reasons = []
    for flags in DOCKERD_FLAGS:
        clear_stale_pidfile()
        with open(log, "wb") as out:  # each try's log alone, for its reason
            proc = subprocess.Popen(["dockerd", *flags], stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        if wait_for_daemon(proc):
            return proc
        stop(proc)
        reasons.append(f"dockerd {' '.join(flags)}: {tail(log.read_text(errors='replace'), 3)}")
    raise Unavailable("dockerd would not start: " + " || ".join(reasons))


def wait_for_daemon(proc: subprocess.Popen) -> bool:
    deadline = time.monotonic() + START_WAIT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        if daemon_answers():
            return True
        time.sleep(0.5)
    return False


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL if dockerd has not finished within 30 s."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="session")
def docker_daemon():
    """A Docker daemon that answers; started here if none did, and then stopped when the
    last test process using it is done (pytest-xdist's workers share one daemon: each
    holds the users file shared while it may use the daemon, and the one that started
    it waits for the file alone before stopping it)."""
    proc = None
    users = open(DAEMON_USERS, "a")
    try:
        with held_alone(DAEMON_START):
            ensure_docker_installed()
            if not daemon_answers():
                proc = start_dockerd(pathlib.Path(tempfile.gettempdir()) / "mica-tests-dockerd.log")
            fcntl.flock(users, fcntl.LOCK_SH)
    except Unavailable as e:
        users.close()
        give_up(f"docker: {e}")
    yield
    if proc:
        with held_alone(DAEMON_START):  # no process starts using it meanwhile
            fcntl.flock(users, fcntl.LOCK_EX)
            stop(proc)
    users.close()


def docker(*args: str, timeout: float = 180, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, env=env)


_containers = itertools.count()


class Held:
    """The images and containers a test makes Docker hold, each named here before
    or as it is made, so that remove() finds them however the test ended."""

    def __init__(self):
        self.images: list[str] = []
        self.containers: list[str] = []

    def image(self, ref: str) -> str:
        """`ref`, which the caller is about to build, pull or tag."""
        self.images.append(ref)
        return ref

    def load(self, tarball) -> subprocess.CompletedProcess:
        """`docker load`, holding every image it names."""
        done = docker("load", "-i", str(tarball))
        self.images += re.findall(r"^Loaded image(?: ID)?: (\S+)$", done.stdout, re.M)
        return done

    def container(self) -> str:
        """A name for a container the caller is about to run: removed even if it still runs
        (a `docker run --rm` whose client timed out leaves it running)."""
        name = f"mica-test-{os.getpid()}-{next(_containers)}"
        self.containers.append(name)
        return name

    def run(self, ref: str, *extra: str) -> subprocess.CompletedProcess:
        """docker run, never pulling and with no network: the image must be local."""
        return docker("run", "--rm", "--name", self.container(), "--pull", "never", "--network", "none", *extra, ref)

    def remove(self) -> None:
        if self.containers:
            docker("rm", "-f", *self.containers)
        if self.images:
            docker("rmi", "-f", *self.images)


@contextlib.contextmanager
def holding() -> Iterator[Held]:
    held = Held()
    try:
        yield held
    finally:
        held.remove()


@pytest.fixture
def docker_held(docker_daemon) -> Iterator[Held]:
    with holding() as held:
        yield held


# ---------------------------------------------------------------- arm64 through qemu


def ensure_binfmt_mounted() -> None:
    if (BINFMT / "register").exists():
        return
    rc, out = sh(["mount", "-t", "binfmt_misc", "binfmt_misc", str(BINFMT)])
    if rc != 0:
        raise Unavailable(f"cannot mount binfmt_misc at {BINFMT}: {tail(out)}")


def qemu_handler() -> str | None:
    """The registered aarch64 handler's text, or None."""
    entry = BINFMT / "qemu-aarch64"
    return entry.read_text() if entry.exists() else None


def register_qemu_aarch64() -> None:
    if not QEMU_CONF.exists():
        apt_install("qemu-user-static")
    if qemu_handler() is not None:  # the package's own scripts may have done it
        return
    try:
        (BINFMT / "register").write_text(QEMU_CONF.read_text().strip() + "\n")
    except OSError as e:
        if qemu_handler() is None:  # else another session (an xdist worker) registered it meanwhile
            raise Unavailable(f"cannot register {QEMU_CONF} with binfmt_misc: {e}")


def check_handler(text: str | None) -> None:
    """Enabled, and with flag F: the kernel opens qemu once, so it works inside
    containers whose file system has no qemu."""
    if text is None or not text.startswith("enabled"):
        raise Unavailable("qemu-aarch64 binfmt handler is not enabled")
    flags = next((l.split(":", 1)[1] for l in text.splitlines() if l.startswith("flags:")), "")
    if "F" not in flags:
        raise Unavailable("qemu-aarch64 binfmt handler lacks flag F; "
                          "containers cannot reach the interpreter")


@pytest.fixture(scope="session")
def arm64_emulation():
    """Linux/arm64 binaries run here: natively, or through qemu's binfmt handler."""
    if platform.machine() in ("aarch64", "arm64"):
        return
    try:
        ensure_binfmt_mounted()
        register_qemu_aarch64()
        check_handler(qemu_handler())
    except Unavailable as e:
        give_up(f"arm64 emulation: {e}")


# ---------------------------------------------------------------- other OCI tools


@pytest.fixture(scope="session")
def skopeo():
    """skopeo, a second reader of OCI layouts that needs no daemon (Debian's package)."""
    try:
        if not shutil.which("skopeo"):
            apt_install("skopeo")
    except Unavailable as e:
        give_up(f"skopeo: {e}")
    return shutil.which("skopeo")
