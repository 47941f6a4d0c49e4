"""Installing what the tests need: Debian packages, as root, through apt-get, and
Node packages, through npm ci from a lock file into micatool's cache.

A package that cannot be had raises Unavailable, whose text is the reason the
tests that need it give when they skip.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from micatool.cache import held_alone

_apt_updated = False
APT_ENV = dict(os.environ, DEBIAN_FRONTEND="noninteractive")


class Unavailable(Exception):
    """A step that cannot be done here; its text is the skip reason."""


def sh(args: list[str], timeout: float = 60, env: dict | None = None, cwd=None) -> tuple[int, str]:
    """Run a command; give its exit status and its output, stdout and stderr together."""
    try:
        done = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=timeout, env=env, cwd=cwd)
    except FileNotFoundError:
        return 127, f"{args[0]}: not found"
    except subprocess.TimeoutExpired:
        return 124, f"{' '.join(args)}: no answer within {timeout} s"
    return done.returncode, done.stdout


def apt_turn():
    """One apt-get at a time among the test processes (pytest-xdist's workers, a second
    session): apt refuses to run beside another rather than wait for it."""
    return held_alone(Path(tempfile.gettempdir()) / "mica-tests-apt.lock")


def apt_update(force: bool = False) -> None:
    """apt-get update, once a session (again with `force`: after adding an architecture)."""
    global _apt_updated
    if os.geteuid() != 0:
        raise Unavailable("not root, so apt-get cannot be used")
    if not shutil.which("apt-get"):
        raise Unavailable("no apt-get on this machine")
    if force or not _apt_updated:
        with apt_turn():
            sh(["apt-get", "update"], timeout=300, env=APT_ENV)
        _apt_updated = True


def apt_install(*packages: str) -> None:
    """Install Debian packages, or raise Unavailable saying why not."""
    try:
        apt_update()
    except Unavailable as e:
        raise Unavailable(f"{' '.join(packages)} missing: {e}") from None
    with apt_turn():
        rc, out = sh(["apt-get", "install", "-y", "--no-install-recommends", *packages],
                     timeout=900, env=APT_ENV)
    if rc != 0:
        raise Unavailable(f"apt-get install {' '.join(packages)} failed: {tail(out)}")


NODE_MAJOR = 20  # the oldest Node.js that @vscode/vsce 3.9 (editors/vscode/test/tools) runs on


def require_node() -> None:
    """Node.js and npm, from Debian when missing; Unavailable when they cannot be had or are too old."""
    if not (shutil.which("node") and shutil.which("npm")):
        apt_install("nodejs", "npm")
    rc, out = sh(["node", "--version"])
    major = re.match(r"v(\d+)\.", out)
    if rc != 0 or major is None:
        raise Unavailable(f"node --version: {tail(out)}")
    if int(major.group(1)) < NODE_MAJOR:
        raise Unavailable(f"node {out.strip()} is older than {NODE_MAJOR}, which @vscode/vsce needs")


def npm_ci(project: Path, into: Path) -> Path:
    """The packages that project's package-lock.json pins, installed once (npm ci) into a
    folder of `into` named after the lock: the folder holding their node_modules.
    Installed aside and renamed into place, so a session that stops half-way or runs
    beside another leaves no half-installed folder."""
    lock = (project / "package-lock.json").read_bytes()
    folder = into / ("node-" + hashlib.sha256(lock).hexdigest()[:16])
    if (folder / "node_modules").is_dir():
        return folder
    into.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=into, prefix=".node-"))
    try:
        for name in ("package.json", "package-lock.json"):
            shutil.copy(project / name, work / name)
        # No install scripts and no optional packages: nothing compiles, nothing
        # native (vsce's optional keytar stores publishing tokens, which tests never use).
        rc, out = sh(["npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--omit=optional",
                      "--cache", str(into / "npm-cache")], timeout=900, cwd=work)
        if rc != 0:
            raise Unavailable(f"npm ci of {project.name}/package-lock.json failed: {tail(out)}")
        try:
            work.rename(folder)
        except OSError:  # another session put it there first
            pass
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return folder


def tail(text: str, lines: int = 5) -> str:
    return " | ".join(text.strip().splitlines()[-lines:])
