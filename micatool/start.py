"""The `micatool` command's first module, which the console script and
`python -m micatool` import in place of cli.py.

It imports only what the interpreter has loaded already, so that its guard is
in place at once: cli.py takes a third of a second to import (lark, jinja2,
the compiler), and a Ctrl-C then must end as quietly as one during a build.
Every Ctrl-C from here on ends micatool with status 130 and no traceback:

- while cli.py imports, at once: there is nothing to clean up yet, and an
  exception raised inside an import may come out wrapped in another;
- while a command runs, as KeyboardInterrupt, so that its temporary files and
  folders are removed on the way out (cli.report turns it into 130);
- a second one, or one after the command has ended, at once again.
"""

import os
import signal
import sys

INTERRUPTED = 130  # the shell's 128 + SIGINT


def _leave(_signal_number, _frame):
    os._exit(INTERRUPTED)


def _interrupt(_signal_number, _frame):
    signal.signal(signal.SIGINT, _leave)  # a second Ctrl-C does not wait for the cleanup
    raise KeyboardInterrupt


def entry() -> None:
    """The `micatool` command: cli.entry under the guard."""
    signal.signal(signal.SIGINT, _leave)
    try:
        from .cli import entry as command

        signal.signal(signal.SIGINT, _interrupt)
        status = command()
    except KeyboardInterrupt:  # one that came before cli.main could report it
        status = INTERRUPTED
    except SystemExit as e:  # argparse's --help and its malformed command lines
        status = e.code
    signal.signal(signal.SIGINT, _leave)
    _end(status)


def _end(status: int) -> None:
    """Exit with `status` now, the output flushed. The interpreter's own exit
    would first give SIGINT back its default action, then spend tens of
    milliseconds taking lark, jinja2 and numpy apart, and a Ctrl-C then would
    kill micatool by the signal instead of ending it with 130. Output that
    cannot be written (a full disk) is said, as cat says it."""
    try:
        if sys.stdout is not None:  # None when micatool was started with it closed
            sys.stdout.flush()
    except OSError as e:
        print(f"micatool: error: cannot write standard output: {e.strerror}", file=sys.stderr)
        status = status or 1
    try:
        if sys.stderr is not None:
            sys.stderr.flush()
    except OSError:
        pass  # nowhere left to say so
    os._exit(status)
