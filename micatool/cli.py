"""The micatool command line: parses arguments and chains the stages.

Every error a user can cause ends here as a diagnostic or a one-line message
and a non-zero exit status; a bug in micatool prints a request to report it,
never a Python traceback (MICATOOL_TRACEBACK=1 shows one for developers).

Exit statuses: 0 done; 1 diagnostics or an error; 2 a malformed command
line; 3 a bug in micatool; 130 a Ctrl-C (start.py). `run` hands back its
program's status, so its own failures use 101, as cargo's do, where a
program's 1 would be mistaken.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from . import __version__, progress, targets
from .compile import CProgram, SourceError, compile_program, front_end, load_source
from .diagnostics import REPORT_HINT, CompileError, InternalError
from .link.image import ImageError, normalize_tag
from .link.size import BudgetError
from .notebook import NotebookError


class UsageError(Exception):
    """A command line that names something missing or impossible."""


class MalformedCommandLine(UsageError):
    """A command line whose words cannot mean anything together (a KEY=VALUE without
    '=', --overwrite without --push): status 2, as for a word argparse refuses."""


RUN_FAILED = 101  # `run`'s own failure, distinct from any status its program gives


def cmd_check(args) -> int:
    try:
        front_end(load_source(args.program), keep_tree=False, include=includes(args))
    except CompileError as e:
        if not args.json:
            raise
        for d in e.diagnostics:
            print(json.dumps({"file": d.source.name, "line": d.pos.line, "column": d.pos.col,
                              "code": d.code, "message": d.message,
                              "hints": [{"kind": h.kind, "text": h.text} for h in d.hints]}))
        return 1
    return 0


def cmd_emit_c(args) -> int:
    program = _compile(args, args.program)
    sys.stdout.write(program.debug_c if args.lines else program.c)
    return 0


def cmd_emit_ptx(args) -> int:
    sys.stdout.write(_compile(args, args.program).ptx)
    return 0


def cmd_explain(args) -> int:
    from .compile.tracked_places import explain_table

    sys.stdout.write(explain_table(front_end(load_source(args.program), include=includes(args))))
    return 0


def _build_binary(program: CProgram, target: targets.Target, tier: str, output: Path | None,
                  symbols: bool = False) -> Path:
    from .link import build

    if output is None:
        return build.cached_build(program, target, tier)
    build.build(program, target, tier, output, symbols)
    return output


def _compile(args, path: str) -> CProgram:
    return compile_program(load_source(path), includes(args))


def includes(args) -> tuple[str, ...]:
    """The -I folders, where units are looked for after the folder of the file that uses them."""
    return tuple(args.include or ())


def output_path(args, default: str) -> Path:
    """Where -o says, or `default`; as cc does, a folder that is not there is
    an error rather than something to create."""
    output = Path(args.output) if args.output else Path(default)
    if not output.parent.is_dir():
        raise UsageError(f"cannot write '{output}': the folder '{output.parent}' does not exist")
    if output.resolve() == Path(args.program).resolve():
        raise UsageError(f"the output would overwrite its own source '{args.program}'; choose another -o")
    return output


def cmd_build(args) -> int:
    source = load_source(args.program)  # the program's own trouble first: missing, a folder, not a .mica file
    output = output_path(args, default_binary(Path(args.program).stem, args.target))
    _build_binary(compile_program(source, includes(args)), args.target, args.tier, output, args.symbols)
    if not args.output and output.name != Path(args.program).stem:
        print(f"wrote {output} (for {args.target.name})", file=sys.stderr)
    return 0


def default_binary(stem: str, target: targets.Target) -> str:
    """The program's name for this machine; for another, with the machine after it
    (`springs-aarch64`), so a cross build never silently replaces a native one."""
    try:
        if target == targets.native():
            return stem
    except targets.TargetError:  # a machine Mica does not build for: every build is a cross build
        pass
    return f"{stem}-{target.name.split('-')[0]}"


def cmd_image(args) -> int:
    from .link import bases, image, registry

    labels, annotations = key_values(args.label, "--label"), key_values(args.annotation, "--annotation")
    if args.load and args.push and not args.output:
        raise MalformedCommandLine("--load hands Docker the tarball: give -o as well as --push")
    if args.overwrite and not args.push:
        raise MalformedCommandLine("--overwrite moves a registry tag: it goes with --push")
    if args.push:
        try:
            registry.push_target(args.push)  # a bad reference is told before anything is built
        except ImageError as e:
            raise MalformedCommandLine(str(e)) from None
    program = _compile(args, args.program)
    if program.uses_gpu and not args.base:
        raise image.ImageError(f"{args.program} uses the GPU, so its binary needs glibc (docs/gpu.md): "
                               f"pass --base with a glibc image, such as --base {bases.SUGGESTED_BASE}")
    output = output_path(args, Path(args.program).stem + ".tar") if args.output or not args.push else None
    binaries = {}
    for target in args.platform:
        binaries[target.platform] = _build_binary(program, target, "fast", None).read_bytes()
    base = None
    if args.base:
        base = bases.load_base(args.base, sorted(binaries))
    notes = image.source_metadata(Path(args.program))
    built = image.build_image(binaries, args.tag, None, "app", base, {**notes, **labels}, {**notes, **annotations})
    if output:
        with progress.step(f"writing {output}"):
            info = image.write_layout(built, output, image.resolve_epoch(None))
        print(f"wrote {output}: {info.tag}, {len(binaries)} platform(s), index {info.index_digest}, "
              f"{info.tarball_size} bytes")
    for platform, part in sorted(built.platforms.items()):
        print(f"  {platform}: manifest {part.manifest_digest}, layer {part.layer_size} bytes, "
              f"image {part.image_size} bytes")
    if args.push:
        with progress.step(f"pushing {args.push}", done=f"pushed {args.push}"):
            pushed = registry.push_image(built, args.push, args.overwrite)
        done = "already there" if pushed.unchanged else f"{pushed.uploaded} blob(s) sent, {pushed.present} present"
        print(f"pushed {args.push}: {pushed.reference} ({done})")
    if args.load:
        for tag in image.load_image(output):
            print(f"loaded {tag}")
    return 0


def key_values(items: list[str] | None, flag: str) -> dict[str, str]:
    """KEY=VALUE words into a dict; a word without '=' is a usage error."""
    pairs = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise MalformedCommandLine(f"{flag} {item!r}: give KEY=VALUE")
        pairs[key] = value
    return pairs


def cmd_size(args) -> int:
    from .link import size

    rows, measured = [], {}
    for path in args.program:
        name = size.program_name(Path(path))
        program = _compile(args, path)
        for target in args.target:
            sizes = size.section_sizes(_build_binary(program, target, "fast", None))
            arch = target.name.split("-")[0]
            rows.append({"program": name, "target": arch, **sizes})
            measured.setdefault(name, {})[arch] = sizes
    budgets = size.budget_rows(measured, args.check) if args.check else []
    ok = all(row["verdict"] != "OVER" for row in budgets)
    if args.json:  # one object per line: each size row, then each budget row (the status says if all fit)
        for row in rows + budgets:
            print(json.dumps(row))
    else:
        print(size.format_table(rows))
        if args.check:
            print(size.format_table(budgets))
    return 0 if ok else 1


def cmd_run(args) -> int:
    try:
        binary = _build_binary(_compile(args, args.program), targets.native(), args.tier, None)
    except Exception as e:
        raise RunFailed(e) from e
    sys.stdout.flush()
    program = subprocess.Popen([str(binary), *args.args])
    try:
        code = program.wait()
    except Stopped as stop:  # handed on, so the program flushes its output and ends as it would alone
        program.send_signal(stop.signal)
        code = program.wait()
    return 128 - code if code < 0 else code  # killed by a signal: the shell's 128 + signal number


class RunFailed(Exception):
    """`run` could not build its program; the cause is reported as usual, the status is RUN_FAILED."""


def cmd_notebook(args) -> int:
    from . import notebook

    path = Path(args.notebook)
    if not path.exists():
        raise UsageError(f"cannot read the notebook '{args.notebook}'")
    return (notebook.run if args.action == "run" else notebook.verify)(path, args.tier, args.target, includes(args))


def cmd_fmt(args) -> int:
    """Each file in the canonical layout (micatool/fmt.py); with --check, only name those
    that would change. A file that does not parse keeps its text and shows its diagnostics."""
    from .cache import write_atomically
    from .fmt import format_source

    failed = False
    for path in mica_files(args.paths):
        source = load_source(str(path))
        try:
            formatted = format_source(source)
        except CompileError as e:
            print(e, file=sys.stderr)
            failed = True
            continue
        if formatted == source.text:
            continue
        if args.check:
            print(f"would reformat {path}")
            failed = True
        else:
            write_atomically(path, formatted.encode("utf-8"))
            print(f"reformatted {path}")
    return 1 if failed else 0


def mica_files(paths: list[str]) -> list[Path]:
    """The files named, and every .mica file under the folders named, each once, in order."""
    found: dict[Path, None] = {}
    for name in paths:
        path = Path(name)
        if path.is_dir():
            found.update(dict.fromkeys(sorted(path.rglob("*.mica"))))
        elif path.exists():
            found[path] = None
        else:
            raise UsageError(f"no file or folder '{name}'")
    return list(found)


def cmd_lsp(args) -> int:
    """The language server, on standard input and output, until the editor says exit."""
    from .lsp.server import serve

    serve(includes(args))
    return 0


def cmd_version(args) -> int:
    from .link import zig

    print(f"micatool {__version__} (zig {zig.zig_version()})")
    return 0


def cmd_help(args) -> int:
    """The commands, one command's options, or a diagnostic code's page (micatool/help/);
    a topic that is none of these is a malformed command line."""
    from . import help

    top, subs = parser()
    if args.topic is None:
        top.print_help()
    elif args.topic in subs:
        subs[args.topic].print_help()
    elif args.topic == "codes":
        sys.stdout.write(help.listing())
    elif args.topic.isdigit():
        page = help.page(int(args.topic))
        if page is None:
            print(f"micatool: error: no diagnostic code {args.topic}; `micatool help codes` lists them",
                  file=sys.stderr)
            return 2
        show_markdown(help.show(page))
    else:
        print(f"micatool: error: no command '{args.topic}'; the commands are {', '.join(COMMANDS)}",
              file=sys.stderr)
        return 2
    return 0


def show_markdown(text: str) -> None:
    """Markdown `text`, drawn by rich on a terminal, as it is anywhere else."""
    if not sys.stdout.isatty():
        sys.stdout.write(text)
        return
    from rich.console import Console
    from rich.markdown import Markdown

    Console().print(Markdown(text))


COMMANDS = {
    "check": (cmd_check, "analyze only: print diagnostics, exit 1 on error"),
    "build": (cmd_build, "build a static binary"),
    "run": (cmd_run, "build for this machine and run, passing the arguments after --"),
    "emit-c": (cmd_emit_c, "print the C the compiler generates"),
    "emit-ptx": (cmd_emit_ptx, "print the PTX kernels the program's binary embeds"),
    "explain": (cmd_explain, "list every tracked place: canonical path, type, element count"),
    "image": (cmd_image, "write a FROM scratch OCI image of the program, without a Docker daemon"),
    "size": (cmd_size, "the stripped binary's size per target and section; --check holds it to budgets"),
    "fmt": (cmd_fmt, "rewrite Mica files in the one canonical layout; --check names those that would change"),
    "lsp": (cmd_lsp, "the language server for editors (LSP over standard input and output; docs/editors.md)"),
    "notebook": (cmd_notebook, "Mica Notebooks: run every cell and record its output, or verify the recordings"),
    "version": (cmd_version, "print micatool's version and the zig it builds with"),
    "help": (cmd_help, "show the commands, one command's options, or a diagnostic code's page (help codes lists "
                       "the codes)"),
}


def _word(meaning):
    """An argparse type from `meaning`, which gives what a word means or raises
    TargetError or ImageError: a word the command line cannot mean (an unknown
    target, a tag Docker refuses) is then told with the usage, status 2, before
    anything is compiled."""
    def parse(text: str):
        try:
            return meaning(text)
        except (targets.TargetError, ImageError) as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    return parse


def parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The top-level parser and each command's own."""
    top = argparse.ArgumentParser(prog="micatool", description="The Mica toolchain.",
                                  epilog="exit status: 0 done, 1 diagnostics or an error, 2 a malformed command line, "
                                         "3 a bug in micatool, 130 a Ctrl-C; run: its program's status, or 101 when "
                                         "it cannot build it")
    top.add_argument("-V", "--version", action="store_true", help="print the version and exit")
    top.add_argument("-q", "--quiet", action="store_true", help="no progress display")
    commands = top.add_subparsers(dest="command", metavar="command")
    subs = {}
    for name, (_, help_text) in COMMANDS.items():
        sub = subs[name] = commands.add_parser(name, help=help_text, description=help_text)
        sub.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS, help="no progress display")
        if name == "version":
            continue
        if name == "lsp":
            sub.add_argument("--stdio", action="store_true", help="talk over standard input and output (the default "
                                                                  "and only way; editors' clients pass it)")
        if name == "help":
            sub.add_argument("topic", nargs="?", help="a command, a diagnostic code (5119), or 'codes'")
        elif name == "size":
            sub.add_argument("program", nargs="+", help="one or more .mica source files")
        elif name == "fmt":
            sub.add_argument("paths", nargs="+", metavar="FILE|DIR", help=".mica files, or folders of them")
            sub.add_argument("--check", action="store_true",
                             help="change nothing: name each file that would change, and exit 1 if any would")
        elif name == "notebook":
            sub.add_argument("action", choices=("run", "verify"),
                             help="run: record every cell's output; verify: hold each output against its recording")
            sub.add_argument("notebook", help="a Markdown file whose ```mica cells are programs, or a folder of them")
            sub.add_argument("--target", default="native", type=_word(targets.resolve),
                             help="build the cells for this target and run them under qemu when it is not this "
                                  "machine's (default: native)")
        elif name != "lsp":
            sub.add_argument("program", help="a .mica source file")
        if name not in ("help", "version", "fmt"):
            sub.add_argument("-I", dest="include", action="append", metavar="DIR",
                             help="look for units in DIR too (after the using file's folder, before MICA_PATH's); "
                                  "may be given more than once")
        if name in ("build", "run", "notebook"):
            sub.add_argument("--tier", choices=targets.TIERS, default="checked",
                             help="debug (no optimisation, every check), checked (default), fast (no checks)")
        if name == "build":
            sub.add_argument("--target", default="native", type=_word(targets.resolve),
                             help="x86_64-linux (amd64), aarch64-linux (arm64) or native")
            sub.add_argument("-o", "--output", help="the binary to write (default: the program's name; for another "
                                                    "machine, with the machine after it: NAME-aarch64)")
            sub.add_argument("--symbols", action="store_true",
                             help="keep symbols and frame pointers, to profile with perf or callgrind")
        if name == "run":
            sub.epilog = "arguments after -- go to the program: micatool run prog.mica -- --steps 20"
        if name == "image":
            sub.add_argument("--platform", default="linux/amd64,linux/arm64", type=_word(targets.resolve_all),
                             help="comma-separated platforms")
            sub.add_argument("--tag", required=True, type=_word(normalize_tag), help="the image's name:tag")
            sub.add_argument("-o", "--output",
                             help="the tarball to write (default: the program's name.tar; none with --push alone)")
            sub.add_argument("--load", action="store_true", help="hand the image to Docker afterwards")
            sub.add_argument("--base", help="the image whose layers go below the binary (a GPU program needs "
                                            "glibc): an OCI layout folder, an OCI or docker-save tarball, "
                                            "or a registry reference")
            sub.add_argument("--push", metavar="REGISTRY/NAME:TAG", help="upload the image to a registry, no daemon")
            sub.add_argument("--overwrite", action="store_true",
                             help="with --push: move a tag that already names another image")
            sub.add_argument("--label", action="append", metavar="KEY=VALUE", help="a label in each image's config")
            sub.add_argument("--annotation", action="append", metavar="KEY=VALUE",
                             help="an annotation on each manifest and the index")
        if name == "size":
            sub.add_argument("--target", default="x86_64-linux,aarch64-linux", type=_word(targets.resolve_all),
                             help="comma-separated targets")
            sub.add_argument("--check", metavar="BUDGETS", help="fail when a binary exceeds its budget (TOML)")
        if name == "emit-c":
            sub.add_argument("--lines", action="store_true",
                             help="with the #line directives that a debug or --symbols build compiles, which name "
                                  "the Mica lines")
        if name in ("check", "size"):
            sub.add_argument("--json", action="store_true",
                             help="machine-readable output: " + ("one JSON object per diagnostic" if name == "check"
                                                                 else "one JSON object per size row (and budget row)"))
    return top, subs


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # `run`'s program gets what follows `--`; everything before it is micatool's, in any order
    ours, program_args = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    top, subs = parser()
    args, stray = top.parse_known_args(ours)
    if stray:
        hint = ""
        if args.command == "run":
            hint = (f"\nhint: a program's arguments go after --: "
                    f"micatool run {getattr(args, 'program', 'prog.mica')} -- {' '.join(stray)}")
        (subs.get(args.command) or top).print_usage(sys.stderr)
        print(f"micatool: error: unrecognized arguments: {' '.join(stray)}{hint}", file=sys.stderr)
        return 2
    if args.version:
        args.command = "version"
    if args.command is None:
        top.print_help(sys.stderr)
        return 2
    progress.quiet(getattr(args, "quiet", False))
    args.args = program_args
    try:
        return COMMANDS[args.command][0](args)
    except RunFailed as e:
        report(e.__cause__)
        return RUN_FAILED
    except BaseException as e:
        return report(e)


def report(e: BaseException) -> int:
    """Say what went wrong in one message; give the exit status for it."""
    if isinstance(e, CompileError):
        print(e, file=sys.stderr)
        return 1
    if isinstance(e, MalformedCommandLine):
        print(f"micatool: error: {e}", file=sys.stderr)
        return 2
    if isinstance(e, OSError):  # the file and the system's reason, without Python's errno dressing
        print(f"micatool: error: {e.filename or 'file'}: {e.strerror or e}", file=sys.stderr)
        return 1
    if isinstance(e, (SourceError, UsageError, targets.TargetError, ImageError, BudgetError, NotebookError)):
        print(f"micatool: error: {e}", file=sys.stderr)
        return 1
    if isinstance(e, InternalError):
        print(f"micatool: internal error: {e}\n{REPORT_HINT}", file=sys.stderr)
        return 3
    if _interrupted(e):
        return 130
    if isinstance(e, Stopped):
        return 128 + e.signal
    if not isinstance(e, Exception) or os.environ.get("MICATOOL_TRACEBACK"):
        raise e
    print(f"micatool: internal error: {type(e).__name__}: {e}\n{REPORT_HINT}", file=sys.stderr)  # a bug
    return 3


def _interrupted(e: BaseException | None) -> bool:
    """Ctrl-C, or an error it caused: Python wraps a KeyboardInterrupt raised
    while a class is made (a lazy import, `__set_name__`) in a RuntimeError."""
    while e is not None and not isinstance(e, KeyboardInterrupt):
        e = e.__cause__
    return e is not None


class Stopped(BaseException):
    """SIGTERM or SIGHUP, raised where micatool was, so that every temporary
    folder and file is removed on the way out, as for Ctrl-C."""

    def __init__(self, signal_number: int):
        super().__init__(signal_number)
        self.signal = signal_number


def _stop(signal_number, _frame):
    raise Stopped(signal_number)


def entry() -> int:
    """The `micatool` command, once start.py has guarded Ctrl-C: its exit
    status. A closed standard output (`| head`) ends it quietly, by SIGPIPE,
    as it ends cat; SIGTERM and SIGHUP clean up first."""
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    for number in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, _stop)
    return main()
