"""Installing what the tests need: Debian packages, as root, through apt-get.

A package that cannot be had raises Unavailable, whose text is the reason the
tests that need it give when they skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess

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


def apt_update(force: bool = False) -> None:
    """apt-get update, once a session (again with `force`: after adding an architecture)."""
    global _apt_updated
    if os.geteuid() != 0:
        raise Unavailable("not root, so apt-get cannot be used")
    if not shutil.which("apt-get"):
        raise Unavailable("no apt-get on this machine")
    if force or not _apt_updated:
        sh(["apt-get", "update"], timeout=300, env=APT_ENV)
        _apt_updated = True


def apt_install(*packages: str) -> None:
    """Install Debian packages, or raise Unavailable saying why not."""
    try:
        apt_update()
    except Unavailable as e:
        raise Unavailable(f"{' '.join(packages)} missing: {e}") from None
    rc, out = sh(["apt-get", "install", "-y", "--no-install-recommends", *packages],
                 timeout=900, env=APT_ENV)
    if rc != 0:
        raise Unavailable(f"apt-get install {' '.join(packages)} failed: {tail(out)}")


def tail(text: str, lines: int = 5) -> str:
    return " | ".join(text.strip().splitlines()[-lines:])
