"""Progress on a terminal: a spinner naming the long step under way.

The steps worth showing are zig's first build of a target (a minute, cold),
each target of a multi-target build, and writing an image. They show only
where a person watches: standard error is a terminal, CI is unset, and the
command line did not say --quiet. Nothing is printed anywhere else.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

_quiet = False


def silence() -> None:
    global _quiet
    _quiet = True


def shown() -> bool:
    return not _quiet and not os.environ.get("CI") and sys.stderr.isatty()


@contextlib.contextmanager
def step(message: str) -> Iterator[None]:
    """Show `message` with a spinner and the time spent while the block runs;
    the line disappears when it is done, leaving the terminal as it was."""
    if not shown():
        yield
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=Console(stderr=True),
                  transient=True, redirect_stdout=False, redirect_stderr=False) as bar:
        bar.add_task(message, total=None)
        yield
