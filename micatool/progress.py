"""Progress: what a step that may take a while is doing, so no minute passes in silence.

The steps worth naming are the first build of a target's runtime (with zig's
C library: a minute, cold), each target of a multi-target build, a base
image fetched from a registry, writing and pushing an image. Where a person
watches (standard error is a terminal and CI is unset) a spinner names the
step under way, with its hint on a line of its own so that an 80-column
terminal shows it whole. Anywhere else (a pipe, a file, a CI log) a long
step, one that can take more than about a second, writes one plain line when
it starts and one with its time when it ends; a quick step writes nothing,
so a cached build is as silent there as it always was. --quiet silences both.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator

_quiet = False


def quiet(wanted: bool) -> None:
    """Whether steps say nothing (--quiet): set by each command, so one run's choice
    does not outlast it where several run in one process."""
    global _quiet
    _quiet = wanted


def on_a_terminal() -> bool:
    return sys.stderr.isatty() and not os.environ.get("CI")


@contextlib.contextmanager
def step(doing: str, hint: str = "", done: str = "") -> Iterator[None]:
    """Name the step `doing` while the block runs; `hint` says how long it may take.
    A long step says what it has `done`: on a pipe, it writes a line as it starts,
    `micatool: doing; hint`, and one as it ends, `micatool: done in 61.2 s`."""
    if _quiet:
        yield
    elif on_a_terminal():
        with _spinner(doing + (f"\n{hint}" if hint else "")):
            yield
    elif done:
        say(doing + (f"; {hint}" if hint else ""))
        started = time.monotonic()
        yield
        say(f"{done} in {time.monotonic() - started:.1f} s")
    else:
        yield


def say(line: str) -> None:
    print(f"micatool: {line}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def _spinner(text: str) -> Iterator[None]:
    """A spinner, `text` and the time spent; the text wraps at the terminal's width
    rather than being cut, and the lines disappear when the block ends."""
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
    from rich.table import Column

    text_column = TextColumn("{task.description}", markup=False, table_column=Column(ratio=1, no_wrap=False))
    with Progress(SpinnerColumn(), text_column, TimeElapsedColumn(), console=Console(stderr=True), expand=True,
                  transient=True, redirect_stdout=False, redirect_stderr=False) as bar:
        bar.add_task(text, total=None)
        yield
