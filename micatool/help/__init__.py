"""`micatool help CODE`: a page for each diagnostic code, as rustc's `--explain`.

A page is micatool/help/NNNN.md: a title line, a few sentences (what the rule
is, why Mica has it, the usual fix), then a program that breaks the rule and
the same program fixed, each in a fenced block:

    # a tracked place is never lent
    A tracked place belongs to the tape ...
    ```mica wrong
    program Step; ...
    ```
    ```mica fixed
    program Step; ...
    ```

A block `mica wrong FILE` (or `mica fixed FILE`) is a unit that lies beside
that program, and `mica FILE` one beside both; a block `mica` alone is the
program of both, when only a unit changes. A program's file is named after
its heading, in lowercase, as a unit's must be.

A page holds no diagnostic text: what the wrong program gets is worked out
when the page is shown, by the front end `micatool check` runs, so a page
and the compiler never disagree. tests/test_help.py holds every page to its
code: the wrong program gets that code and no other, the fixed one nothing.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..compile import front_end, load_source, require_program
from ..diagnostics import CompileError, Diagnostic

# The code ranges, by their first digit (micatool/diagnostics.py).
RANGES = {1: "lexical", 2: "syntax", 3: "names and units", 4: "types", 5: "places, borrows and tracked values",
          6: "shapes", 7: "GPU residency"}


@dataclass(frozen=True)
class Page:
    code: int
    title: str
    prose: str
    wrong: dict[str, str]  # file name to text, the program's file first; empty when no program can show the code
    fixed: dict[str, str]


BLOCK = re.compile(r"^```mica(?P<info>[^\n]*)\n(?P<text>.*?)^```\n", re.M | re.S)


def codes() -> list[int]:
    """Every code that has a page."""
    names = (entry.name for entry in resources.files(__package__).iterdir())
    return sorted(int(name[:4]) for name in names if re.fullmatch(r"\d{4}\.md", name))


def page(code: int) -> Page | None:
    """Code `code`'s page, or None when there is no such code."""
    entry = resources.files(__package__).joinpath(f"{code}.md")
    return parse(code, entry.read_text(encoding="utf-8")) if entry.is_file() else None


def parse(code: int, text: str) -> Page:
    title, _, rest = text.partition("\n")
    blocks = list(BLOCK.finditer(rest))
    prose_end = blocks[0].start() if blocks else len(rest)
    programs: dict[str | None, str] = {}
    units: dict[str | None, dict[str, str]] = {"wrong": {}, "fixed": {}, None: {}}
    for block in blocks:
        words = block["info"].split()
        role = words.pop(0) if words and words[0] in ("wrong", "fixed") else None
        if words:
            units[role][words[0]] = block["text"]
        else:
            programs[role] = block["text"]
    if not title.startswith("# ") or BLOCK.sub("", rest[prose_end:]).strip():
        raise ValueError(f"page {code}: a title line, prose, then programs and nothing else")

    def files(role: str) -> dict[str, str]:
        program = programs.get(role, programs.get(None))
        return {file_name(program): program, **units[None], **units[role]} if program else {}

    return Page(code, title.removeprefix("# "), rest[:prose_end].strip(), files("wrong"), files("fixed"))


def file_name(program: str) -> str:
    """A program's (or unit's) file, named after its heading; main.mica where the heading is
    what the page shows wrong."""
    heading = re.match(r"\s*(?:program|unit)\s+(\w+)", program)
    return (heading[1] if heading else "main").lower() + ".mica"


def diagnose(files: dict[str, str]) -> list[Diagnostic]:
    """What micatool says of the program that `files` hold (the first is the program's,
    the others lie beside it): the front end's diagnostics, then build's refusal of a unit."""
    with tempfile.TemporaryDirectory(prefix="micatool-help-") as folder, _inside(folder):
        for name, text in files.items():
            Path(name).write_text(text, encoding="utf-8")
        try:
            require_program(front_end(load_source(next(iter(files))), keep_tree=False))
        except CompileError as e:
            return e.diagnostics
    return []


@contextlib.contextmanager
def _inside(folder: str) -> Iterator[None]:
    """Work in `folder`, so that units are found beside the program and diagnostics name
    files as a user who checks there sees them."""
    here = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(here)


def show(shown: Page) -> str:
    """The page as plain text, which is Markdown too: its prose, the wrong program, what
    micatool says of it, and the fixed program."""
    heading = f"{shown.code}: {shown.title}"
    lines = [heading, "=" * len(heading), "", shown.prose]
    if shown.wrong:
        said = "\n".join(d.render() for d in diagnose(shown.wrong))
        lines += ["", "This program breaks the rule:", *_program(shown.wrong),
                  "", "micatool says:", "", _indented(said),
                  "", "Fixed:", *_program(shown.fixed)]
    return "\n".join(lines) + "\n"


def _program(files: dict[str, str]) -> list[str]:
    """The program (its diagnostics name its file), then each unit beside it, named."""
    lines = []
    for i, (name, text) in enumerate(files.items()):
        if i:
            lines += ["", f"with {name} beside it:"]
        lines += ["", _indented(text.rstrip("\n"))]
    return lines


def _indented(text: str) -> str:
    return "\n".join("    " + line if line else "" for line in text.split("\n"))


def listing() -> str:
    """Every code with its title, by range."""
    every = codes()
    lines = ["Every diagnostic code; `micatool help CODE` shows its page."]
    for digit, name in RANGES.items():
        lines += ["", f"{digit}xxx {name}"]
        lines += [f"    {code}  {page(code).title}" for code in every if code // 1000 == digit]
    return "\n".join(lines) + "\n"
