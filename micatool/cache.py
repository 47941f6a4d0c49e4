"""The on-disk cache (runtime libraries, built programs) and atomic file writes.

Everything micatool writes goes through write_atomically: a temporary file in
the same directory, flushed to disk, then renamed over the target, so a crash
never leaves a half-written file.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO


def cache_dir() -> Path:
    root = os.environ.get("MICA_CACHE_DIR")
    if root:
        return Path(root)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "micatool"


def write_atomically(path: Path, content: bytes | Callable[[BinaryIO], None], mode: int = 0o644) -> None:
    """Write content (bytes, or a function that writes to a file) to path.

    A symlink is followed, and the file it names is replaced. A path that is
    no regular file (a device such as /dev/null) is written in place: there
    is no file to replace, and renaming over it would remove the device."""
    path = Path(os.path.realpath(path))
    write = content if callable(content) else (lambda f: f.write(content))
    if path.exists() and not path.is_file():
        with open(path, "wb") as f:
            write(f)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    sync_directory(path.parent)


@contextlib.contextmanager
def held_alone(lock: Path) -> Iterator[None]:
    """One process at a time in the block, among all that name the same lock file: two
    builds that want the same cached file make it once, the second waiting for the first."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a") as held:
        try:
            fcntl.flock(held, fcntl.LOCK_EX)  # released when the file closes, or the process dies
        except OSError:  # a file system without locks (some NFS): build unguarded, as before locks
            pass
        yield


def sync_directory(path: Path) -> None:
    """Make a rename durable; some filesystems refuse, which is fine."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def digest(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"\0")
    return h.hexdigest()
