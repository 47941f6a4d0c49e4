"""Units: the files of a program (LANGUAGE.md §12), found, parsed and put in order.

Takes the parsed file micatool was given and the folders -I named; gives the
units it uses, directly or through other units, each parsed, in dependency
order: every unit after the units it uses, which is also the order their
initializations run in. A unit is looked for beside the file that uses it
(as `name.mica`, then as its name exactly), then in each -I folder, then in
the folders of MICA_PATH.

Each file gets its own range of lines (diagnostics.FILE_LINE_BITS): the
program's file keeps its lines and the k-th unit's are shifted by k << 24,
so that from here on one position names a file and a line, in diagnostics,
in the generated C and in a run-time trap.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..diagnostics import FILE_LINE_BITS, MAX_FILE_LINES, MAX_FILES, CompileError, Diagnostic, SourceFile
from . import ast
from .source import SourceError, load_source, parse


class Files:
    """Where units' files come from: the disk. The language server's own reads the files
    open in the editor as the editor has them, saved or not, and finds those never saved."""

    def exists(self, path: Path) -> bool:
        return path.is_file()

    def read(self, path: str) -> SourceFile:
        return load_source(path)


DISK = Files()


@dataclass
class UnitFile:
    source: SourceFile
    tree: ast.Unit


def load(source: SourceFile, tree: ast.Program | ast.Unit, include: tuple[str, ...] = (),
         files: Files = DISK) -> list[UnitFile]:
    """The units `tree` uses, directly or not, in dependency order, their lines shifted;
    or the CompileError that says which cannot be had. Their files are found and read
    through `files`."""
    loader = Loader(include, files)
    loader.visit(source, tree, [])
    if not loader.diagnostics and len(loader.order) + 1 > MAX_FILES:
        loader.error(source, tree.pos, 3023, f"the program is made of {len(loader.order) + 1} files; "
                                             f"a program holds at most {MAX_FILES}")
    for unit in loader.order:
        lines = unit.source.text.count("\n") + 1
        if lines > MAX_FILE_LINES:
            loader.error(unit.source, unit.tree.pos, 3023, f"the unit has {lines} lines; a unit holds at most "
                                                           f"{MAX_FILE_LINES}")
    if loader.diagnostics:
        raise CompileError(loader.diagnostics)
    for index, unit in enumerate(loader.order, start=1):
        ast.shift_lines(unit.tree, index << FILE_LINE_BITS)
    return loader.order


def search_folders(using: SourceFile, include: tuple[str, ...]) -> list[tuple[Path, str]]:
    """Where a unit that `using` names is looked for, in order, each with why it is looked in."""
    beside = Path(using.name).parent
    folders = [(beside, f"beside {Path(using.name).name}")]
    folders += [(Path(folder), "-I") for folder in include]
    folders += [(Path(folder), "MICA_PATH") for folder in os.environ.get("MICA_PATH", "").split(":") if folder]
    return folders


def file_names(unit: str) -> list[str]:
    """The names a unit's file may have: its name in lowercase, then exactly."""
    return list(dict.fromkeys([unit.lower() + ".mica", unit + ".mica"]))


class Loader:
    def __init__(self, include: tuple[str, ...], files: Files):
        self.include, self.files = include, files
        self.done: dict[Path, UnitFile] = {}  # by the file's resolved path
        self.by_name: dict[str, UnitFile] = {}
        self.unreadable: set[Path] = set()  # told once, however many files use it
        self.order: list[UnitFile] = []
        self.diagnostics: list[Diagnostic] = []

    def error(self, source: SourceFile, pos, code: int, message: str) -> None:
        self.diagnostics.append(Diagnostic(source, pos, code, message))

    def visit(self, source: SourceFile, tree, path: list[tuple[Path, SourceFile, ast.Use | None]]) -> None:
        """Load every unit `tree` uses, after the units those use. `path` is the chain of files
        being loaded that led here, each with the uses item that named the next."""
        here = Path(source.name).resolve()
        if isinstance(tree, ast.Unit):
            self.check_heading(source, tree)
        named: set[str] = set()
        for use in tree.uses:
            if use.name in named:
                self.error(source, use.pos, 3022, f"unit '{use.name}' is named twice in this file's uses clauses")
                continue
            named.add(use.name)
            found = self.find(source, use)
            if found is None:
                continue
            chain = path + [(here, source, use)]
            circle = next((i for i, (file, _, _) in enumerate(chain) if file == found), None)
            if circle is not None:
                steps = ", ".join(f"{Path(s.name).name} uses {u.name}" for _, s, u in chain[circle:])
                self.error(source, use.pos, 3011, f"units use each other in a circle: {steps}")
            elif found in self.done:
                self.check_one_per_name(source, use, self.done[found])
            elif found not in self.unreadable:
                self.load_unit(source, use, found, chain)

    def find(self, source: SourceFile, use: ast.Use) -> Path | None:
        folders = search_folders(source, self.include)
        for folder, _ in folders:
            for name in file_names(use.name):
                if self.files.exists(folder / name):
                    return (folder / name).resolve()
        looked = ", ".join(f"{folder or '.'} ({why})" for folder, why in folders)
        self.error(source, use.pos, 3010, f"unit '{use.name}' not found: looked for "
                                          f"{' and '.join(file_names(use.name))} in {looked}")
        return None

    def load_unit(self, source: SourceFile, use: ast.Use, found: Path, chain) -> None:
        try:
            unit_source = self.files.read(display_path(found))
            tree = parse(unit_source)
        except SourceError as e:
            self.unreadable.add(found)
            self.error(source, use.pos, 3010, f"unit '{use.name}': {e}")
            return
        except CompileError as e:
            self.unreadable.add(found)
            self.diagnostics.extend(e.diagnostics)
            return
        if not isinstance(tree, ast.Unit):
            self.error(source, use.pos, 3019, f"'{unit_source.name}' holds a program, not a unit: "
                                              f"a file that is used must begin with 'unit {use.name};'")
            return
        unit = UnitFile(unit_source, tree)
        self.done[found] = unit
        if not self.check_one_per_name(source, use, unit):
            return
        if tree.name != use.name and tree.name.lower() == Path(unit_source.name).stem.lower():
            self.error(source, use.pos, 3012, f"the unit in '{unit_source.name}' is named '{tree.name}'; "
                                              f"names are case-sensitive")
        self.by_name[tree.name] = unit
        self.visit(unit_source, tree, chain)
        self.order.append(unit)

    def check_heading(self, source: SourceFile, tree: ast.Unit) -> None:
        stem = Path(source.name).stem
        if tree.name.lower() != stem.lower():
            self.error(source, tree.pos, 3012, f"this unit is named '{tree.name}', but its file is "
                                               f"'{Path(source.name).name}': a unit's name is its file's name "
                                               f"(case aside), so that the files using it find it")

    def check_one_per_name(self, source: SourceFile, use: ast.Use, unit: UnitFile) -> bool:
        """Two files may not both be unit X of one program."""
        other = self.by_name.get(unit.tree.name)
        if other is not None and other is not unit:
            self.error(source, use.pos, 3021, f"two files hold unit '{unit.tree.name}': '{other.source.name}' and "
                                              f"'{unit.source.name}'; the units of a program have different names")
            return False
        return True


def display_path(path: Path) -> str:
    """A unit's file as diagnostics name it: relative to the working folder where it lies below it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)
