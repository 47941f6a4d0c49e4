"""course.py: examples/course/, every program of the course as a file, from its chapter's cells.

Each chapter docs/course/NN-slug.md is a Mica Notebook. Every cell of it that
compiles (every cell but the `refused` ones) is a program a reader may want to
run, change and run again outside the notebook, so each becomes a file in
examples/course/NN-slug/, named after its `program` line in the order the
chapter shows them (`program GuessByHand;` in the first cell is
01-guess-by-hand.mica). A `continue` cell's file is its whole program: the
`program` line and declarations it inherits, then its own text, so it is
named after its chain's program, after its own number. Each folder gets a Makefile
(`make -C examples/course/NN-slug run` runs its programs in order) and links
to what the cells read beside the chapter: the data folder and any unit.

    python tools/course.py           # write examples/course/ (only what changed)
    python tools/course.py --check   # exit 1, naming each file that differs

tests/test_course.py runs the check, so a chapter's cells and its files never
drift apart: edit the chapter, run this, commit both.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from micatool import notebook  # noqa: E402
from micatool.cache import write_atomically  # noqa: E402

CHAPTERS = ROOT / "docs" / "course"
EXAMPLES = ROOT / "examples" / "course"
PROGRAM = re.compile(r"^\s*program\s+([A-Za-z_][A-Za-z0-9_]*)\s*;", re.MULTILINE)
USES = re.compile(r"^\s*uses\b", re.MULTILINE)


def chapters() -> list[Path]:
    return sorted(CHAPTERS.glob("[0-9][0-9]-*.md"))


def file_name(position: int, program: str) -> str:
    """01-guess-by-hand.mica for the first program, `GuessByHand`."""
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "-", program).lower().replace("_", "-")
    return f"{position:02d}-{words}.mica"


def programs(chapter: Path) -> dict[str, str]:
    """The chapter's programs that run: file name -> whole program text."""
    found = notebook.cells(chapter, chapter.read_text().splitlines())
    made = notebook.sources(chapter, found)
    named = {}
    for cell, source in zip(found, made):
        if cell.options.refused:
            continue
        program = PROGRAM.search(source.text)
        if program is None:
            raise SystemExit(f"{chapter}:{cell.program.first + 1}: a course cell starts with its `program` line")
        name = file_name(len(named) + 1, program.group(1))
        # A `continue` cell's program is its chain's: its file differs by its number alone.
        if not cell.options.continues and any(other.split("-", 1)[1] == name.split("-", 1)[1] for other in named):
            raise SystemExit(f"{chapter}:{cell.program.first + 1}: another cell of this chapter is "
                             f"`program {program.group(1)}`; each program of a chapter needs its own name")
        named[name] = source.text
    return named


def makefile(chapter: Path, names: list[str]) -> str:
    stems = " ".join(name.removesuffix(".mica") for name in names)
    return (f"# Written by tools/course.py from docs/course/{chapter.name}: edit the chapter, then run it.\n"
            f"PROGRAMS = {stems}\n"
            "include ../course.mk\n")


def links(chapter: Path, texts: list[str]) -> dict[str, str]:
    """What the folder links to beside the chapter: the data, and the units its programs use."""
    found = {"data": "../../../docs/course/data"}
    if any(USES.search(text) for text in texts):
        for unit in sorted(CHAPTERS.glob("*.mica")):
            found[unit.name] = f"../../../docs/course/{unit.name}"
    return found


def expected() -> dict[Path, tuple[str, str]]:
    """Every file the examples should hold: path -> ("file", text) or ("link", target)."""
    files = {}
    for chapter in chapters():
        folder = EXAMPLES / chapter.stem
        named = programs(chapter)
        for name, text in named.items():
            files[folder / name] = ("file", text)
        files[folder / "Makefile"] = ("file", makefile(chapter, list(named)))
        for name, target in links(chapter, list(named.values())).items():
            files[folder / name] = ("link", target)
    return files


def present() -> dict[Path, tuple[str, str]]:
    """What examples/course holds now, but its shared course.mk."""
    files = {}
    for path in sorted(EXAMPLES.glob("*/*")):
        files[path] = ("link", os.readlink(path)) if path.is_symlink() else ("file", path.read_text())
    return files


def differences() -> list[Path]:
    want, have = expected(), present()
    return sorted(path for path in want.keys() | have.keys() if want.get(path) != have.get(path))


def write() -> None:
    want = expected()
    for path in differences():
        if path.is_symlink() or path.is_file():
            path.unlink()
        if path not in want:
            continue
        kind, content = want[path]
        path.parent.mkdir(parents=True, exist_ok=True)
        if kind == "link":
            path.symlink_to(content)
        else:
            write_atomically(path, content.encode())
        print(f"wrote {path.relative_to(ROOT)}")
    for folder in EXAMPLES.iterdir():
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()


if __name__ == "__main__":
    if sys.argv[1:] == ["--check"]:
        stale = differences()
        for path in stale:
            print(f"{path.relative_to(ROOT)} differs from its chapter; run python tools/course.py")
        sys.exit(1 if stale else 0)
    write()
