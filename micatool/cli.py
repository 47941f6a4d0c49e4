"""The micatool command line: parses arguments and chains the stages.

Every error a user can cause ends here as a diagnostic or a one-line message
and a non-zero exit status; a bug in micatool prints a request to report it,
never a Python traceback (MICATOOL_TRACEBACK=1 shows one for developers).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from . import __version__, targets
from .compile import SourceError, front_end, load_source, to_c
from .diagnostics import REPORT_HINT, CompileError, InternalError


class UsageError(Exception):
    """A command line that names something missing or impossible."""


def _source(path: str):
    return load_source(path)


def cmd_check(args) -> int:
    front_end(_source(args.program))
    return 0


def cmd_emit_c(args) -> int:
    sys.stdout.write(to_c(_source(args.program)))
    return 0


def cmd_explain(args) -> int:
    from .compile.places import explain_table

    sys.stdout.write(explain_table(front_end(_source(args.program))))
    return 0


def _build_binary(program: str, target: targets.Target, tier: str, output: Path | None) -> Path:
    from .link import build

    c_source = to_c(_source(program))
    if output is None:
        return build.cached_build(c_source, target, tier)
    build.build(c_source, target, tier, output)
    return output


def cmd_build(args) -> int:
    target = targets.resolve(args.target)
    output = Path(args.output) if args.output else Path(Path(args.program).stem)
    _build_binary(args.program, target, args.tier, output)
    return 0


def cmd_run(args) -> int:
    binary = _build_binary(args.program, targets.native(), args.tier, None)
    sys.stdout.flush()
    return subprocess.run([str(binary), *args.args]).returncode


COMMANDS = {
    "check": (cmd_check, "analyze only: print diagnostics, exit 1 on error"),
    "build": (cmd_build, "build a static binary"),
    "run": (cmd_run, "build for this machine and run, passing the arguments after --"),
    "emit-c": (cmd_emit_c, "print the C the compiler generates"),
    "explain": (cmd_explain, "list every tracked place: canonical path, type, element count"),
}


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="micatool", description="The Mica toolchain.")
    top.add_argument("--version", action="version", version=f"micatool {__version__}")
    commands = top.add_subparsers(dest="command", metavar="command")
    for name, (_, help_text) in COMMANDS.items():
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.add_argument("program", help="a .mica source file")
        if name in ("build", "run"):
            sub.add_argument("--tier", choices=targets.TIERS, default="checked",
                             help="debug (no optimisation, every check), checked (default), fast (no checks)")
        if name == "build":
            sub.add_argument("--target", default="native", help="x86_64-linux (amd64), aarch64-linux (arm64) or native")
            sub.add_argument("-o", "--output", help="the binary to write (default: the program's name)")
        if name == "run":
            sub.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the program, after --")
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command is None:
        parser().print_help()
        return 2
    if getattr(args, "args", None) and args.args[0] == "--":
        args.args = args.args[1:]
    try:
        return COMMANDS[args.command][0](args)
    except CompileError as e:
        print(e, file=sys.stderr)
        return 1
    except (SourceError, UsageError, targets.TargetError, OSError) as e:
        print(f"micatool: error: {e}", file=sys.stderr)
        return 1
    except InternalError as e:
        print(f"micatool: internal error: {e}\n{REPORT_HINT}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # a bug: say so plainly, without a traceback
        if os.environ.get("MICATOOL_TRACEBACK"):
            raise
        print(f"micatool: internal error: {type(e).__name__}: {e}\n{REPORT_HINT}", file=sys.stderr)
        return 3
