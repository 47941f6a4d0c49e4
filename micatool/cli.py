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
from .link.image import ImageError
from .link.size import BudgetError
from .notebook import NotebookError


class UsageError(Exception):
    """A command line that names something missing or impossible."""


def cmd_check(args) -> int:
    front_end(load_source(args.program))
    return 0


def cmd_emit_c(args) -> int:
    sys.stdout.write(to_c(load_source(args.program)))
    return 0


def cmd_emit_ptx(args) -> int:
    from .compile import to_ptx

    sys.stdout.write(to_ptx(load_source(args.program)))
    return 0


def cmd_explain(args) -> int:
    from .compile.places import explain_table

    sys.stdout.write(explain_table(front_end(load_source(args.program))))
    return 0


def _build_binary(program: str, target: targets.Target, tier: str, output: Path | None) -> Path:
    from .link import build

    c_source = to_c(load_source(program))
    if output is None:
        return build.cached_build(c_source, target, tier)
    build.build(c_source, target, tier, output)
    return output


def cmd_build(args) -> int:
    target = targets.resolve(args.target)
    output = Path(args.output) if args.output else Path(Path(args.program).stem)
    if output.resolve() == Path(args.program).resolve():
        raise UsageError(f"the binary would overwrite its own source '{args.program}'; choose another -o")
    _build_binary(args.program, target, args.tier, output)
    return 0


def cmd_image(args) -> int:
    from .link import build, image

    if build.GPU_MARK in to_c(load_source(args.program)):
        raise image.ImageError(f"{args.program} uses the GPU: its binary is the glibc flavour (docs/gpu.md), "
                               "which a FROM scratch image cannot run; build it and ship it on a CUDA base image")
    binaries = {}
    for word in args.platform.split(","):
        target = targets.resolve(word.strip())
        binaries[target.platform] = _build_binary(args.program, target, "fast", None).read_bytes()
    output = Path(args.output) if args.output else Path(Path(args.program).stem + ".tar")
    info = image.write_image(binaries, args.tag, output, binary_name=Path(args.program).stem)
    print(f"wrote {output}: {info.tag}, {len(binaries)} platform(s), index {info.index_digest}, {info.tarball_size} bytes")
    for platform, part in sorted(info.platforms.items()):
        print(f"  {platform}: manifest {part.manifest_digest}, layer {part.layer_size} bytes")
    if args.load:
        for tag in image.load_image(output):
            print(f"loaded {tag}")
    return 0


def cmd_size(args) -> int:
    from .link import size

    rows, measured = [], {}
    for program in args.program:
        name = size.program_name(Path(program))
        for word in args.target.split(","):
            target = targets.resolve(word.strip())
            sizes = size.section_sizes(_build_binary(program, target, "fast", None))
            arch = target.name.split("-")[0]
            rows.append({"program": name, "target": arch, **sizes})
            measured.setdefault(name, {})[arch] = sizes
    print(size.format_table(rows))
    if args.check:
        ok, table = size.check_budgets(measured, args.check)
        print(table)
        return 0 if ok else 1
    return 0


def cmd_run(args) -> int:
    binary = _build_binary(args.program, targets.native(), args.tier, None)
    sys.stdout.flush()
    code = subprocess.run([str(binary), *args.args]).returncode
    return 128 - code if code < 0 else code  # killed by a signal: the shell's 128 + signal number


def cmd_notebook(args) -> int:
    from . import notebook

    path = Path(args.notebook)
    if not path.is_file():
        raise UsageError(f"cannot read the notebook '{args.notebook}'")
    return (notebook.run if args.action == "run" else notebook.verify)(path, args.tier)


COMMANDS = {
    "check": (cmd_check, "analyze only: print diagnostics, exit 1 on error"),
    "build": (cmd_build, "build a static binary"),
    "run": (cmd_run, "build for this machine and run, passing the arguments after --"),
    "emit-c": (cmd_emit_c, "print the C the compiler generates"),
    "emit-ptx": (cmd_emit_ptx, "print the PTX kernels the program's binary embeds"),
    "explain": (cmd_explain, "list every tracked place: canonical path, type, element count"),
    "image": (cmd_image, "write a FROM scratch OCI image of the program, without a Docker daemon"),
    "size": (cmd_size, "the stripped binary's size per target and section; --check holds it to budgets"),
    "notebook": (cmd_notebook, "Mica Notebooks: run every cell and record its output, or verify the recordings"),
}


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="micatool", description="The Mica toolchain.")
    top.add_argument("--version", action="version", version=f"micatool {__version__}")
    commands = top.add_subparsers(dest="command", metavar="command")
    for name, (_, help_text) in COMMANDS.items():
        sub = commands.add_parser(name, help=help_text, description=help_text)
        if name == "size":
            sub.add_argument("program", nargs="+", help="one or more .mica source files")
        elif name == "notebook":
            sub.add_argument("action", choices=("run", "verify"),
                             help="run: record every cell's output; verify: hold each output against its recording")
            sub.add_argument("notebook", help="a Markdown file whose ```mica cells are programs")
        else:
            sub.add_argument("program", help="a .mica source file")
        if name in ("build", "run", "notebook"):
            sub.add_argument("--tier", choices=targets.TIERS, default="checked",
                             help="debug (no optimisation, every check), checked (default), fast (no checks)")
        if name == "build":
            sub.add_argument("--target", default="native", help="x86_64-linux (amd64), aarch64-linux (arm64) or native")
            sub.add_argument("-o", "--output", help="the binary to write (default: the program's name)")
        if name == "run":
            sub.epilog = "arguments after -- go to the program: micatool run prog.mica -- --steps 20"
        if name == "image":
            sub.add_argument("--platform", default="linux/amd64,linux/arm64", help="comma-separated platforms")
            sub.add_argument("--tag", required=True, help="the image's name:tag")
            sub.add_argument("-o", "--output", help="the tarball to write (default: the program's name.tar)")
            sub.add_argument("--load", action="store_true", help="hand the image to Docker afterwards")
        if name == "size":
            sub.add_argument("--target", default="x86_64-linux,aarch64-linux", help="comma-separated targets")
            sub.add_argument("--check", metavar="BUDGETS", help="fail when a binary exceeds its budget (TOML)")
    return top


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # `run`'s program gets what follows `--`; everything before it is micatool's, in any order
    program_args = argv[argv.index("--") + 1:] if "--" in argv else []
    args = parser().parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    if args.command is None:
        parser().print_help()
        return 2
    args.args = program_args
    try:
        return COMMANDS[args.command][0](args)
    except CompileError as e:
        print(e, file=sys.stderr)
        return 1
    except OSError as e:  # the file and the system's reason, without Python's errno dressing
        print(f"micatool: error: {e.filename or 'file'}: {e.strerror or e}", file=sys.stderr)
        return 1
    except (SourceError, UsageError, targets.TargetError, ImageError, BudgetError, NotebookError) as e:
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
