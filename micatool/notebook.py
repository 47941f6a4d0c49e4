"""Mica Notebooks: Markdown whose recorded outputs are verified facts (docs/notebooks.md).

A notebook is a Markdown file. Each fenced block whose info string starts with
`mica` is a cell. The fenced block that follows it (blank lines between are
fine) with the info string `output` is its recording: what the program printed,
standard output then standard error. A cell is a whole program, or, when its
info string says `continue`, declarations and a body that join the
declarations of the cells before it into one program. The words after `mica`
ask for more: `refused` (the recording is the diagnostics), `threads=1,4`
(the same output at each thread count), `plot=f.svg x=... y=...` (an SVG of
printed columns, linked under the recording).

`run` builds and runs every cell and writes each fresh output into its
recording (adding one where a cell has none), and each plot beside the
notebook; `verify` runs every cell and holds each fresh output and plot to
what is recorded, so the document proves itself.
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import plot, targets
from .cache import write_atomically
from .compile import compile_program
from .compile.descent import Fallback, Parser
from .diagnostics import CompileError, Pos, SourceFile

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
LINK = re.compile(r"^!\[[^\]]*\]\([^)]*\)$")
PLOT_FILE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*\.svg$")


class NotebookError(Exception):
    """A notebook that cannot prove itself for a reason other than a differing output."""


@dataclass
class Block:
    """A fenced block: its info string, its content, and its lines (0-based, fences included)."""

    info: str
    text: str
    first: int
    last: int


@dataclass
class Options:
    """What a cell's info string asks for, besides running it."""

    refused: bool = False
    continues: bool = False
    threads: list[str] = field(default_factory=list)
    plot: str | None = None
    x: str | None = None
    y: list[str] = field(default_factory=list)
    kind: str = "line"
    group: str | None = None  # a points plot's series: one per value of this column
    z: str | None = None  # a heat map's values


@dataclass
class Cell:
    program: Block
    recording: Block | None
    link: int | None  # the line of the image link under the recording, if there is one
    options: Options


@dataclass
class Source:
    """The whole program a cell runs, and the notebook line (1-based) of each of its lines."""

    text: str
    lines: list[int]


def fenced_blocks(lines: list[str]) -> list[Block]:
    """The fenced blocks of a Markdown text, as CommonMark closes them."""
    blocks, i = [], 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        fence, info = opening.group(1), opening.group(2).strip()
        end = i + 1
        while end < len(lines):
            closing = FENCE.match(lines[end])
            if closing and closing.group(1)[0] == fence[0] and len(closing.group(1)) >= len(fence) \
                    and not closing.group(2).strip():
                break
            end += 1
        blocks.append(Block(info, "".join(line + "\n" for line in lines[i + 1:end]), i, min(end, len(lines) - 1)))
        i = end + 1
    return blocks


def options(notebook: Path, block: Block) -> Options:
    found = Options()
    for word in block.info.split()[1:]:
        key, _, value = word.partition("=")
        if word == "refused":
            found.refused = True
        elif word == "continue":
            found.continues = True
        elif key == "threads" and all(n.isdigit() and int(n) > 0 for n in value.split(",")):
            found.threads = value.split(",")
        elif key == "plot" and PLOT_FILE.match(value):
            found.plot = value
        elif key == "x" and value:
            found.x = value
        elif key == "y" and value:
            found.y = value.split(",")
        elif key == "kind" and value in plot.KINDS:
            found.kind = value
        elif key == "group" and value:
            found.group = value
        elif key == "z" and value:
            found.z = value
        else:
            raise NotebookError(f"{notebook}:{block.first + 1}: the cell's info string has '{word}', which is not "
                                "refused, continue, threads=N,..., plot=NAME.svg, x=COLUMN, y=COLUMN,..., "
                                f"group=COLUMN, z=COLUMN or kind={'|'.join(plot.KINDS)}")
    if found.plot and not (found.x and found.y):
        raise NotebookError(f"{notebook}:{block.first + 1}: a plot needs the columns it draws: x=COLUMN y=COLUMN,...")
    return found


def cells(notebook: Path, lines: list[str]) -> list[Cell]:
    blocks = fenced_blocks(lines)
    found = []
    for k, block in enumerate(blocks):
        if block.info.split()[:1] != ["mica"]:
            continue
        following = blocks[k + 1] if k + 1 < len(blocks) else None
        between = lines[block.last + 1: following.first] if following else []
        recorded = following is not None and following.info == "output" and not any(line.strip() for line in between)
        recording = following if recorded else None
        link = None
        if recording is not None:
            after = next((i for i in range(recording.last + 1, len(lines)) if lines[i].strip()), None)
            if after is not None and LINK.match(lines[after].strip()):
                link = after
        found.append(Cell(block, recording, link, options(notebook, block)))
    return found


def main_begin(text: str) -> tuple[int, int] | None:
    """The line (1-based) that ends the `program Name;` header (and its uses clause), and
    the line of the main `begin`; None when the program does not parse (its compilation
    will say why) or when the header or the `begin` shares its line with a declaration."""
    parser = Parser(text)
    try:
        parser.expect("program")
        parser.take("NAME")
        header = parser.line
        parser.expect(";")
        if parser.kind == "uses":
            parser.advance()
            parser.name_list()
            header = parser.line
            parser.expect(";")
        after_header = parser.line
        parser.declarations(parser.routine)
    except (Fallback, RecursionError):
        return None
    if parser.kind != "begin" or after_header == header and parser.line != header \
            or text.splitlines()[parser.line - 1][:parser.col - 1].strip():
        return None
    return header, parser.line


def sources(notebook: Path, found: list[Cell]) -> list[Source]:
    """Each cell's whole program. A `continue` cell's is the header and declarations of
    the cells it continues, in order, then its own text; lines count through all of it."""
    made, header, declarations = [], None, None
    for cell in found:
        text, at = cell.program.text, cell.program.first + 2
        own = text.splitlines(keepends=True)
        if not cell.options.continues:
            made.append(Source(text, list(range(at, at + len(own)))))
            split = main_begin(text)
            header = declarations = None
            if split is not None:
                header = Source("".join(own[:split[0]]), list(range(at, at + split[0])))
                declarations = Source("".join(own[split[0]:split[1] - 1]),
                                      list(range(at + split[0], at + split[1] - 1)))
            continue
        if header is None:
            raise NotebookError(f"{notebook}:{cell.program.first + 1}: a `continue` cell continues the program "
                                "of the cell before it, and there is none that parses with its `program` line "
                                "and its main `begin` on lines of their own")
        split = main_begin("program Fragment;\n" + text)
        made.append(Source(header.text + declarations.text + text,
                           header.lines + declarations.lines + list(range(at, at + len(own)))))
        if split is not None:
            begin = split[1] - 2  # the lines of this cell before its `begin`
            declarations = Source(declarations.text + "".join(own[:begin]),
                                  declarations.lines + list(range(at, at + begin)))
    return made


def run_cell(notebook: Path, number: int, cell: Cell, source: Source, tier: str, target: targets.Target,
             include: tuple[str, ...]) -> str:
    """What cell `number` prints, standard output then standard error. Its traps name the
    cell (`tour.md#2:5: ...`), so a recording does not change when text above it does;
    its diagnostics name the notebook's own lines (a `refused` cell's, the cell's). The
    units a cell uses are looked for beside the notebook, then in `include`."""
    from .link import build

    name = f"{notebook.name}#{number}"
    cell_source = SourceFile(str(notebook.parent / name), source.text)  # its units are beside the notebook
    try:
        program = compile_program(cell_source, include)
    except CompileError as e:
        if cell.options.refused:
            shown = SourceFile(name, source.text)
            return str(CompileError([replace(d, source=shown) if d.source is cell_source else d
                                     for d in e.diagnostics], e.stopped)) + "\n"
        whole = SourceFile(str(notebook), notebook.read_text())
        raise CompileError([replace(d, source=whole, pos=Pos(source.lines[d.pos.line - 1], d.pos.col))
                            if d.source is cell_source else d for d in e.diagnostics], e.stopped) from None
    if cell.options.refused:
        raise NotebookError(f"{notebook}:{cell.program.first + 1}: this cell says `refused`, but it compiles")
    command = [str(build.cached_build(program, target, tier))]
    if target != targets.native():
        emulator = shutil.which(f"qemu-{target.name.split('-')[0]}-static")
        if emulator is None:
            raise NotebookError(f"cannot run {target.name} binaries here: qemu-{target.name.split('-')[0]}-static "
                                "is not on PATH")
        command.insert(0, emulator)
    printed = {}
    for threads in cell.options.threads or [None]:
        env = dict(os.environ, MICA_THREADS=threads) if threads else None
        done = subprocess.run(command, capture_output=True, cwd=notebook.parent, env=env)
        printed[threads] = (done.stdout + done.stderr).decode("utf-8", "replace")
    first, *others = printed.items()
    for threads, text in others:
        if text != first[1]:
            raise NotebookError(f"{notebook}:{cell.program.first + 1}: the cell prints differently at MICA_THREADS="
                                f"{threads} than at {first[0]}:\n" + unified(first[1], text, first[0], threads))
    return first[1]


def drawn(notebook: Path, cell: Cell, printed: str) -> str:
    """The SVG text of the cell's plot, from the columns of what it printed."""
    chart = cell.options
    try:
        return plot.draw(printed, chart.kind, chart.x, chart.y, chart.group, chart.z)
    except plot.PlotError as e:
        raise NotebookError(f"{notebook}:{cell.program.first + 1}: cannot draw {cell.options.plot}: {e}") from None


def link_line(cell: Cell) -> str:
    chart = cell.options
    drawn_by = f"{chart.x} and {', '.join(chart.y)}" if chart.kind == "heat" else chart.x
    return f"![{chart.z or ', '.join(chart.y)} by {drawn_by}]({chart.plot})"


def output_block(text: str) -> list[str]:
    """A recording of text, fenced by more backticks than it holds in a row."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + "output", *text.splitlines(), fence]


def notebooks(path: Path) -> list[Path]:
    """The notebook named, or every Markdown file under a folder that holds a cell."""
    if path.is_file():
        return [path]
    return [p for p in sorted(path.rglob("*.md")) if cells(p, p.read_text().splitlines())]


def run(path: Path, tier: str, target: targets.Target, include: tuple[str, ...] = ()) -> int:
    for notebook in notebooks(path):
        run_notebook(notebook, tier, target, include)
    return 0


def run_notebook(notebook: Path, tier: str, target: targets.Target, include: tuple[str, ...] = ()) -> None:
    """Run every cell and record its output and plot; rewrite what changed."""
    lines = notebook.read_text().splitlines()
    changed = 0
    found = cells(notebook, lines)
    made = sources(notebook, found)
    for number, cell in reversed(list(enumerate(found, 1))):  # from the end, so earlier lines stay put
        fresh = run_cell(notebook, number, cell, made[number - 1], tier, target, include)
        if cell.options.plot:
            picture = notebook.parent / cell.options.plot
            text = drawn(notebook, cell, fresh).encode()
            if not picture.is_file() or picture.read_bytes() != text:
                write_atomically(picture, text)
                changed += 1
            if cell.link is None:
                at = (cell.recording or cell.program).last + 1
                lines[at:at] = ["", link_line(cell)]
                changed += 1
            elif lines[cell.link] != link_line(cell):
                lines[cell.link] = link_line(cell)
                changed += 1
        if cell.recording is not None and cell.recording.text == fresh:
            continue
        changed += 1
        if cell.recording is None:
            lines[cell.program.last + 1:cell.program.last + 1] = ["", *output_block(fresh)]
        else:
            lines[cell.recording.first:cell.recording.last + 1] = output_block(fresh)
    if changed:
        write_atomically(notebook, "".join(line + "\n" for line in lines).encode())
    print(f"{notebook}: {count(len(found), 'cell')} run, {count(changed, 'recording')} written")


def verify(path: Path, tier: str, target: targets.Target, include: tuple[str, ...] = ()) -> int:
    """Hold every notebook under path to its recordings; 1 when any output or plot differs."""
    found = notebooks(path)
    if not found:
        print(f"{path}: no Markdown file under it holds a ```mica cell, so nothing to verify")
        return 1
    failed = [notebook for notebook in found if not verify_notebook(notebook, tier, target, include)]
    return 1 if failed else 0


def verify_notebook(notebook: Path, tier: str, target: targets.Target, include: tuple[str, ...] = ()) -> bool:
    """Run every cell and hold its output and plot against the recording; False when any differs."""
    lines = notebook.read_text().splitlines()
    found = cells(notebook, lines)
    if not found:  # a verify that checked nothing proves nothing: a wrong path or a misspelt fence
        print(f"{notebook}: no ```mica cells, so nothing to verify")
        return False
    made = sources(notebook, found)
    failed = 0
    for number, cell in enumerate(found, 1):
        fresh = run_cell(notebook, number, cell, made[number - 1], tier, target, include)
        line = cell.program.first + 1
        if cell.recording is None:
            print(f"{notebook}:{line}: this cell has no recorded output; `micatool notebook run` records it")
            failed += 1
            continue
        if cell.recording.text != fresh:
            print(f"{notebook}:{line}: the cell's output differs from its recording at line {cell.recording.first + 1}")
            print(unified(cell.recording.text, fresh, "recorded", "printed"))
            failed += 1
        if cell.options.plot:
            failed += not plot_matches(notebook, line, cell, fresh)
    verdict = ("every output matches its recording" if not failed else "1 differs from its recording"
               if failed == 1 else f"{failed} differ from their recordings")
    print(f"{notebook}: {count(len(found), 'cell')}, {verdict}")
    return not failed


def plot_matches(notebook: Path, line: int, cell: Cell, printed: str) -> bool:
    """Whether the cell's SVG beside the notebook is the one its output draws, and is linked."""
    picture = notebook.parent / cell.options.plot
    fresh = drawn(notebook, cell, printed)
    if cell.link is None or notebook.read_text().splitlines()[cell.link].strip() != link_line(cell):
        print(f"{notebook}:{line}: the cell's plot is not linked under its recording as {link_line(cell)}")
        return False
    if not picture.is_file():
        print(f"{notebook}:{line}: the cell's plot {picture} is missing; `micatool notebook run` draws it")
        return False
    if picture.read_text() != fresh:
        print(f"{notebook}:{line}: the cell's plot {picture} differs from what its output draws")
        print(unified(picture.read_text(), fresh, "recorded", "drawn"))
        return False
    return True


def unified(before: str, after: str, old: object, new: object) -> str:
    return "\n".join(difflib.unified_diff(before.splitlines(), after.splitlines(), str(old), str(new), lineterm=""))


def count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
