"""Mica Notebooks: Markdown whose recorded outputs are verified facts.

A notebook is a Markdown file. Each fenced block whose info string starts with
`mica` is a cell, a complete program. The fenced block that follows it (blank
lines between are fine) with the info string `output` is its recording: what
the program printed, standard output then standard error.

`run` builds and runs every cell and writes each fresh output into its
recording (adding one where a cell has none); `verify` runs every cell and
holds each fresh output against its recording, so the document proves itself.
A cell that does not compile is an error in both, reported at its line in
the notebook, unless its info string says `mica refused`: such a cell shows
what the compiler refuses, and its recording is the diagnostics.
"""

from __future__ import annotations

import difflib
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from . import targets
from .cache import write_atomically
from .compile import compile_program
from .diagnostics import CompileError, Diagnostic, Pos, SourceFile

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


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
class Cell:
    program: Block
    recording: Block | None


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


def cells(lines: list[str]) -> list[Cell]:
    blocks = fenced_blocks(lines)
    found = []
    for k, block in enumerate(blocks):
        if block.info.split()[:1] != ["mica"]:
            continue
        following = blocks[k + 1] if k + 1 < len(blocks) else None
        between = lines[block.last + 1: following.first] if following else []
        recorded = following is not None and following.info == "output" and not any(line.strip() for line in between)
        found.append(Cell(block, following if recorded else None))
    return found


def run_cell(notebook: Path, number: int, cell: Cell, tier: str) -> str:
    """What cell `number` prints, standard output then standard error. Its traps name the
    cell (`tour.md#2:5: ...`), so a recording does not change when text above it does;
    its diagnostics name the notebook's own lines (a `refused` cell's, the cell's)."""
    from .link import build

    refused = "refused" in cell.program.info.split()[1:]
    try:
        program = compile_program(SourceFile(f"{notebook.name}#{number}", cell.program.text))
    except CompileError as e:
        if refused:
            return str(e) + "\n"
        whole = SourceFile(str(notebook), "\n" * (cell.program.first + 1) + cell.program.text)
        raise CompileError([Diagnostic(whole, Pos(d.pos.line + cell.program.first + 1, d.pos.col), d.code, d.message)
                            for d in e.diagnostics], e.stopped) from None
    if refused:
        raise NotebookError(f"{notebook}:{cell.program.first + 1}: this cell says `refused`, but it compiles")
    binary = build.cached_build(program, targets.native(), tier)
    done = subprocess.run([str(binary)], capture_output=True, cwd=notebook.parent)
    return (done.stdout + done.stderr).decode("utf-8", "replace")


def output_block(text: str) -> list[str]:
    """A recording of text, fenced by more backticks than it holds in a row."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + "output", *text.splitlines(), fence]


def run(notebook: Path, tier: str) -> int:
    """Run every cell and record its output; rewrite the notebook when a recording changed."""
    lines = notebook.read_text().splitlines()
    changed = 0
    found = cells(lines)
    for number, cell in reversed(list(enumerate(found, 1))):  # from the end, so earlier lines stay put
        fresh = run_cell(notebook, number, cell, tier)
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
    return 0


def verify(notebook: Path, tier: str) -> int:
    """Run every cell and hold its output against its recording; 1 when any differs."""
    lines = notebook.read_text().splitlines()
    found = cells(lines)
    failed = 0
    for number, cell in enumerate(found, 1):
        fresh = run_cell(notebook, number, cell, tier)
        line = cell.program.first + 1
        if cell.recording is None:
            print(f"{notebook}:{line}: this cell has no recorded output; `micatool notebook run` records it")
            failed += 1
        elif cell.recording.text != fresh:
            print(f"{notebook}:{line}: the cell's output differs from its recording at line {cell.recording.first + 1}")
            diff = difflib.unified_diff(cell.recording.text.splitlines(), fresh.splitlines(), "recorded", "printed",
                                        lineterm="")
            print("\n".join(diff))
            failed += 1
    verdict = ("every output matches its recording" if not failed else "1 differs from its recording"
               if failed == 1 else f"{failed} differ from their recordings")
    print(f"{notebook}: {count(len(found), 'cell')}, {verdict}")
    return 1 if failed else 0


def count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
