"""One open file, checked as `micatool check` checks it, with what an editor asks
of it afterwards: its diagnostics, its analysis, and every place a name is
declared or used, in it and in the units it uses.

A file with syntax errors is checked as repaired (compile/repair.py): the
analyzer's annotations of the rest stay, so hover and completion work while
one line is unfinished. Nothing here raises for any text: what cannot be
checked gives diagnostics and fewer answers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path

from ..compile import ast, units
from ..compile.analyzer import Analysis, Analyzer
from ..compile.descent import Token, scan
from ..compile.source import parse_recovering
from ..compile.symbols import RoutineSymbol, Scope, Symbol, TypeSymbol
from ..diagnostics import FILE_LINE_BITS, MAX_FILE_LINES, CompileError, Diagnostic, Pos, SourceFile


@dataclass(frozen=True)
class Span:
    """Where a name stands: its file (0 the document, k its k-th unit), line, and columns [col, end)."""

    file: int
    line: int
    col: int
    end: int

    def holds(self, line: int, col: int) -> bool:
        return self.file == 0 and self.line == line and self.col <= col <= self.end


@dataclass
class Occurrence:
    """A name where it stands, and what it names."""

    span: Span
    symbol: Symbol
    node: ast.Node | None  # the Name (or Call) there; None at a declaration
    declaration: bool = False


@dataclass
class Document:
    path: str
    text: str
    source: SourceFile
    tokens: list[Token]
    tree: ast.Program | ast.Unit | None = None
    analyzer: Analyzer | None = None
    analysis: Analysis | None = None
    unit_files: list[units.UnitFile] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    occurrences: list[Occurrence] = field(default_factory=list)
    unit_paths: set[Path] = field(default_factory=set)  # every unit's file the check read or looked for

    def file_path(self, file: int) -> str:
        return self.path if file == 0 else str(Path(self.unit_files[file - 1].source.name).resolve())

    def file_tokens(self, file: int) -> list[Token]:
        return self.tokens if file == 0 else scan(self.unit_files[file - 1].source.text)

    def at(self, line: int, col: int) -> Occurrence | None:
        """The name at a position of the document (1-based line and column)."""
        return next((o for o in self.occurrences if o.span.holds(line, col)), None)

    def of(self, symbol: Symbol) -> list[Occurrence]:
        return [o for o in self.occurrences if o.symbol is symbol]


class Watched(units.Files):
    """`files`, noting in `seen` each unit's file a check reads or looks for: a change to
    one of them (opened, edited, saved, closed) may change what the check finds."""

    def __init__(self, files: units.Files, seen: set[Path]):
        self.files, self.seen = files, seen

    def exists(self, path: Path) -> bool:
        self.seen.add(path.resolve())
        return self.files.exists(path)

    def read(self, path: str) -> SourceFile:
        self.seen.add(Path(path).resolve())
        return self.files.read(path)


def check(path: str, text: str, include: tuple[str, ...] = (), files: units.Files = units.DISK) -> Document:
    """The file at path, holding text, checked; its units' files come through `files`."""
    source = SourceFile(path, text)
    document = Document(path, text, source, scan(text))
    tree, syntax, repairs = parse_recovering(source)
    document.diagnostics = list(syntax)
    if tree is None:
        return document
    document.tree = tree
    try:
        document.unit_files = units.load(source, tree, include, Watched(files, document.unit_paths))
    except CompileError as e:
        document.diagnostics += e.diagnostics
        return document
    analyzer = Analyzer(source, tuple(u.source for u in document.unit_files))
    try:
        document.analysis = analyzer.analyze(tree, document.unit_files)
    except CompileError:
        pass  # stopped at the hundredth error: the annotations so far still answer
    document.analyzer = analyzer
    found = analyzer.reporter.diagnostics
    if repairs is not None:
        found = [d for d in found if d.source is not source or not repairs.made_up(d.pos.line, d.code)]
    document.diagnostics = CompileError(document.diagnostics + found).diagnostics
    document.occurrences = occurrences(document)
    return document


# ---------------------------------------------------------------- where the names are


def occurrences(document: Document) -> list[Occurrence]:
    trees = [document.tree] + [u.tree for u in document.unit_files]
    tokens = {file: document.file_tokens(file) for file in range(len(trees))}
    at = {file: {(t.line, t.col): i for i, t in enumerate(tokens[file])} for file in tokens}
    found: list[Occurrence] = []
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.symbol is not None:
                span = name_span(node.line, node.col, tokens, at, node.unit is not None)
                if span is not None:
                    found.append(Occurrence(span, node.symbol, node))
    for file, tree in enumerate(trees):  # type names, as the file's own scope resolves them
        scope = file_scope(document, tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.NamedType) and scope is not None:
                symbol = lookup_type(document, scope, node)
                span = name_span(node.line, node.col, tokens, at, node.unit is not None)
                if isinstance(symbol, TypeSymbol) and span is not None:
                    found.append(Occurrence(span, symbol, node))
    for file, tree in enumerate(trees):  # `uses Layers, Optim;`: each a unit's name
        for use in getattr(tree, "uses", []) + getattr(tree, "interface_uses", []) \
                + getattr(tree, "implementation_uses", []):
            unit = document.analyzer.units.get(use.name)
            if unit is not None:
                found.append(Occurrence(Span(*place(use.line), use.col, use.col + len(use.name)), unit, None))
    for symbol in declared(document):
        span = declaration_span(symbol.pos, symbol.name, tokens, at)
        if span is not None:
            found.append(Occurrence(span, symbol, None, declaration=True))
    for routine in document.analyzer.routines:  # a unit's routine: its body's heading declares it again
        if isinstance(routine.decl, ast.Routine) and routine.decl.pos != routine.pos:
            span = declaration_span(routine.decl.pos, routine.name, tokens, at)
            if span is not None:
                found.append(Occurrence(span, routine, None, declaration=True))
    return found


def file_scope(document: Document, tree) -> Scope | None:
    """The scope a file's own names are in: the document's, or its unit's."""
    if tree is document.tree:
        return document.analyzer.globals
    unit = document.analyzer.units.get(tree.name)
    return unit.scope if unit is not None else None


def lookup_type(document: Document, scope: Scope, node: ast.NamedType) -> Symbol | None:
    if node.unit is None:
        return scope.lookup(node.name)
    unit = document.analyzer.units.get(node.unit)
    return unit.scope.lookup(node.name) if unit is not None else None


def place(line: int) -> tuple[int, int]:
    """A tree's line as (file, line in that file)."""
    return line >> FILE_LINE_BITS, line & MAX_FILE_LINES


def name_span(line: int, col: int, tokens, at, qualified: bool) -> Span | None:
    file, line = place(line)
    i = at.get(file, {}).get((line, col))
    if i is None:
        return None
    last = tokens[file][i + 2] if qualified and i + 2 < len(tokens[file]) else tokens[file][i]
    return Span(file, line, col, last.col + len(last.text))


def declared(document: Document) -> list[Symbol]:
    """Every symbol the program's files declare: their globals and routines, and each
    routine's parameters and locals."""
    analyzer = document.analyzer
    scopes = [analyzer.globals] + [unit.scope for unit in analyzer.units.values()]
    symbols = [s for scope in scopes for s in scope.names.values() if s.pos.line > 0]
    for routine in analyzer.routines:
        symbols += routine.params + routine.locals
    return symbols


def declaration_span(pos: Pos, name: str, tokens, at) -> Span | None:
    """A declaration's name: the first token of that name at or after its position on its line
    (a `var a, b : T` declares both at the position of `a`)."""
    file, line = place(pos.line)
    i = at.get(file, {}).get((line, pos.col))
    if i is None:
        return None
    for token in islice(tokens[file], i, None):  # not a slice: that copies the rest of the file's tokens
        if token.line != line:
            return None
        if token.kind == "NAME" and token.text == name:
            return Span(file, line, token.col, token.col + len(token.text))
    return None


def routine_at(document: Document, line: int) -> RoutineSymbol | None:
    """The routine of the document whose body a line of it is in."""
    if document.analyzer is None:
        return None
    own = [r for r in document.analyzer.routines if place(r.decl.pos.line)[0] == 0
           and isinstance(r.decl, ast.Routine)]
    starts = sorted(own, key=lambda r: r.decl.pos.line)
    inside = None
    for routine in starts:
        if routine.decl.pos.line <= line:
            inside = routine
    if inside is not None and inside.decl.body and line > last_line(inside.decl):
        return None
    return inside


def last_line(node: ast.Node) -> int:
    return max(n.line for n in ast.walk(node))
