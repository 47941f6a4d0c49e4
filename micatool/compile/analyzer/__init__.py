"""Analyzer: ast.Program -> Analysis (names, types, shapes and places checked).

Resolves every name to a symbol, gives every expression a type (Expr.ty) and
folds constants (Expr.folded), checks shapes, places, borrows and tracked
values, and reports every error it finds in source order. Routine bodies are
analyzed once with their shape variables as symbols; each call binds them
(Call.binding) and the lowering instantiates the routine per binding.
It changes no syntax: the forms that mean another (a routine named without
parentheses is a call) are noted in the Analysis, and desugar.py rewrites them.

The Analyzer holds the program's state and its parts, each a file of this
package: declarations (and the whole-program checks), type syntax, statements,
places, expressions, calls, and tasks blocks.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from ...diagnostics import Hint, Pos, Reporter, SourceFile
from .. import ast, ops
from ..ops.checking import CheckContext
from ..slips import OTHER_NAMES, RETURN_HELP
from ..symbols import (AmbiguousSymbol, BuiltinSymbol, ConstSymbol, RoutineSymbol, Scope, Symbol, TypeSymbol,
                       UnitSymbol, VarSymbol, uses_scope)
from ..types import ERROR, FLOAT64, INTEGER, REGEX, SCALARS, STREAM, Record, Type
from ..units import UnitFile
from .calls import Calls
from .declarations import Declarations
from .expressions import Expressions
from .places import Places
from .statements import Statements
from .tasks import Tasks
from .type_syntax import TypeSyntax


@dataclass
class UnitAnalysis:
    """A unit as the lowering needs it: its variables and initialization, and the
    constants its interface declares (a checkpoint records them)."""

    source: SourceFile
    tree: ast.Unit
    global_vars: list[VarSymbol]
    interface_consts: list[ConstSymbol]


@dataclass
class Analysis:
    """The analyzed program: the annotated AST plus the symbols lowering needs.
    `program` is a Unit where a unit was checked alone (which nothing lowers)."""

    source: SourceFile
    program: ast.Program | ast.Unit
    global_vars: list[VarSymbol]
    global_consts: list[ConstSymbol]
    records: list[Record]
    routines: list[RoutineSymbol]
    tape_routines: set = field(default_factory=set)  # routines that run inside windows
    # what desugar.py rewrites, noted while checking: the tree is still as written
    bare_statements: list[tuple[ast.CallStmt, ast.Call]] = field(default_factory=list)  # `Report;`
    bare_values: list[tuple[ast.Name, ast.Call]] = field(default_factory=list)  # `t := Clock`
    repeated_first: list[ast.Binary] = field(default_factory=list)  # v + m, v - m: v repeats at every row of m
    units: list[UnitAnalysis] = field(default_factory=list)  # in the order their initializations run


def analyze(source: SourceFile, tree: ast.Program | ast.Unit, unit_files: list[UnitFile] = ()) -> Analysis:
    analyzer = Analyzer(source, tuple(u.source for u in unit_files))
    analysis = analyzer.analyze(tree, unit_files)
    analyzer.reporter.check()
    return analysis


def predeclared() -> Scope:
    scope = Scope()
    for name, t in SCALARS.items():
        scope.define(TypeSymbol(name, Pos(0, 0), t))
    scope.define(TypeSymbol("stream", Pos(0, 0), STREAM))
    scope.define(TypeSymbol("regex", Pos(0, 0), REGEX))
    for name in ops.OPS:
        if ":" not in name:  # 'Max:reduce' is an overload, reached through Max
            scope.define(BuiltinSymbol(name, Pos(0, 0)))
    scope.define(ConstSymbol("MaxInt", Pos(0, 0), INTEGER, 2**63 - 1))
    scope.define(ConstSymbol("Pi", Pos(0, 0), FLOAT64, 3.141592653589793))
    return scope


class Analyzer:
    """The state of one program's analysis: scopes, the routine being checked, what
    the whole-program checks collect; and the parts that check."""

    def __init__(self, source: SourceFile, unit_sources: tuple[SourceFile, ...] = ()):
        self.source = source
        self.reporter = Reporter(source, unit_sources)
        self.predeclared = predeclared()
        self.globals = Scope(self.predeclared)  # the file being checked: its own declarations
        self.scope = self.globals
        self.unit_name: str | None = None  # the unit being checked, None in the program
        self.units: dict[str, UnitSymbol] = {}  # every unit checked so far, by name
        self.visible_units: dict[str, UnitSymbol] = {}  # those the file being checked uses
        self.implementation_only: set[str] = set()  # while a unit's interface is checked: its implementation's uses
        self.routine: RoutineSymbol | None = None
        self.call: ast.Call | None = None  # the call whose arguments are being checked (5119's help names it)
        self.tape_depth = 0
        self.loop_depth = 0
        self.global_vars: list[VarSymbol] = []
        self.global_bytes = 0  # what the global variables declared so far take in place
        self.global_consts: list[ConstSymbol] = []
        self.records: list[Record] = []
        self.routines: list[RoutineSymbol] = []
        self.window_calls: list[tuple[RoutineSymbol, Pos]] = []
        self.window_reads: set[VarSymbol] = set()  # tracked roots read inside windows
        self.routine_reads: dict[RoutineSymbol, set[VarSymbol]] = {}
        self.gradient_uses: list[tuple[VarSymbol, Pos, str]] = []
        self.writing: ast.Name | None = None
        # where gradients would end: the place, the diagnostic, the routine, inside a window
        self.untrackings: list[tuple[ast.Node, int, str, RoutineSymbol | None, bool]] = []
        self.calls_lending: list[tuple[ast.Call, RoutineSymbol]] = []  # calls with address arguments
        self.bare_statements: list[tuple[ast.CallStmt, ast.Call]] = []
        self.bare_values: list[tuple[ast.Name, ast.Call]] = []
        self.repeated_first: list[ast.Binary] = []
        self.check_context = CheckContext(self)  # what the vocabulary's checkers see of all this
        # the parts, each reaching the others through this analyzer
        self.declarations = Declarations(self)
        self.type_syntax = TypeSyntax(self)
        self.statements = Statements(self)
        self.places = Places(self)
        self.expressions = Expressions(self)
        self.calls = Calls(self)
        self.tasks = Tasks(self)

    def error(self, where, code: int, message: str, *hints: Hint) -> Type:
        pos = where if isinstance(where, Pos) else where.pos
        self.reporter.error(pos, code, message, hints)
        return ERROR

    def analyze(self, tree: ast.Program | ast.Unit, unit_files: list[UnitFile]) -> Analysis:
        """Each unit, after the units it uses; then the given file; then the checks
        that need every routine of the program."""
        units = [self.unit(unit) for unit in unit_files]
        if isinstance(tree, ast.Unit):
            self.unit(UnitFile(self.source, tree))
        else:
            self.program(tree)
        self.declarations.close_over_calls()
        self.places.check_lent_elements()
        self.tasks.check_spawned_routines()
        inside, tape_routines = self.declarations.close_over_windows()
        self.declarations.check_gradient_uses(tape_routines)
        self.declarations.check_untrackings(inside)
        return Analysis(
            self.source, tree, self.global_vars, self.global_consts, self.records, self.routines, tape_routines,
            self.bare_statements, self.bare_values, self.repeated_first, units
        )

    def program(self, program: ast.Program) -> None:
        self.enter_file(program.uses, None)
        first = len(self.routines)
        for decl in program.decls:
            self.declarations.declaration(decl, self.globals)
        self.routine_bodies(first)
        self.tape_depth = 0
        self.statements.stmts(program.body)

    def unit(self, unit: UnitFile) -> UnitAnalysis:
        """A unit's interface, then its implementation (with the units only that part
        uses), its bodies and its initialization: then the unit is one other files may use."""
        tree = unit.tree
        self.enter_file(tree.interface_uses, tree.name)
        first = len(self.routines)
        self.implementation_only = {use.name for use in tree.implementation_uses} - set(self.visible_units)
        for decl in tree.interface:
            self.declarations.declaration(decl, self.globals)
        self.implementation_only = set()
        exports = dict(self.globals.names)
        interface_consts = list(self.global_consts)
        self.visible_units.update((use.name, self.units[use.name]) for use in tree.implementation_uses)
        self.globals.parent = uses_scope(list(self.visible_units.values()), self.predeclared)
        for decl in tree.implementation:
            self.declarations.declaration(decl, self.globals)
        self.declarations.check_bodies_given(self.routines[first:])
        self.routine_bodies(first)
        self.tape_depth = 0
        self.statements.stmts(tree.initialization)
        self.units[tree.name] = UnitSymbol(tree.name, tree.pos, exports, self.globals)
        return UnitAnalysis(unit.source, tree, self.global_vars, interface_consts)

    def enter_file(self, uses: list[ast.Use], unit_name: str | None) -> None:
        """A file's own scope, beneath the names its uses clause makes visible."""
        self.unit_name = unit_name
        self.visible_units = {use.name: self.units[use.name] for use in uses}
        self.globals = self.scope = Scope(uses_scope(list(self.visible_units.values()), self.predeclared))
        self.global_vars, self.global_consts = [], []

    def routine_bodies(self, first: int) -> None:
        """The bodies of the routines the file declares (from routine number `first`)."""
        for routine in self.routines[first:]:
            if isinstance(routine.decl, ast.Routine) and routine not in self.declarations.misheaded:
                self.declarations.routine_body(routine)

    # -- names

    def lookup(self, e: ast.Name | ast.NamedType) -> Symbol | None:
        """What a name stands for here; a qualified one (`Tokens.Encode`) is looked up in
        its unit: its interface, or all of it within the unit itself."""
        ident = e.ident if isinstance(e, ast.Name) else e.name
        if e.unit is None:
            return self.scope.lookup(ident)
        if e.unit == self.unit_name:
            return self.globals.local(ident)
        unit = self.visible_units.get(e.unit)
        return unit.exports.get(ident) if unit is not None else None

    def resolve(self, e: ast.Name | ast.NamedType, what: str = "name") -> Symbol | None:
        """lookup, or None after saying why the name names nothing one may use here."""
        symbol = self.lookup(e)
        ident = e.ident if isinstance(e, ast.Name) else e.name
        if isinstance(symbol, AmbiguousSymbol):
            both = " and ".join(f"'{unit}'" for unit in symbol.units)
            qualified = " or ".join(f"{unit}.{ident}" for unit in symbol.units)
            self.error(e, 3016, f"'{ident}' is declared by units {both}: write {qualified}")
            return None
        if isinstance(symbol, UnitSymbol):
            self.error(e, 3025, f"'{ident}' is a unit: name one of its declarations, as {ident}.Name")
            return None
        if symbol is not None:
            return symbol
        if e.unit is None and ident in self.units:  # `Z.x` for a unit of the program this file does not use
            self.error(e, 3018, f"'{ident}' is not a unit this file uses: add it to a uses clause")
        elif e.unit is None:
            self.error(e, 3001, f"unknown {what} '{ident}'" + self.suggest(ident),
                       *([Hint.help(RETURN_HELP)] if ident == "return" else []))
        elif e.unit != self.unit_name and e.unit in self.implementation_only:
            self.error(e, 3018, f"'{e.unit}' is used by this unit's implementation only: to name it in the "
                                f"interface, move it to the interface's uses clause")
        elif e.unit != self.unit_name and e.unit not in self.visible_units:
            self.error(e, 3018, f"'{e.unit}' is not a unit this file uses: add it to a uses clause")
        elif e.unit != self.unit_name and ident in self.visible_units[e.unit].scope.names:
            self.error(e, 3017, f"'{ident}' is private to unit '{e.unit}': only what its interface declares "
                                f"may be used from other files")
        else:
            names = self.visible_units[e.unit].exports if e.unit != self.unit_name else self.globals.names
            close = difflib.get_close_matches(ident, list(names), 1)
            self.error(e, 3018, f"unit '{e.unit}' declares no '{ident}'"
                                + (f"; did you mean '{e.unit}.{close[0]}'?" if close else ""))
        return None

    def declared(self, *operands: ast.Expr) -> tuple[Hint, ...]:
        """Where the shapes of a mismatch come from: a note for each operand that is a
        variable or constant, saying its declared type and line."""
        return tuple(Hint.note(f"'{e.ident}' is declared '{e.symbol.type}' at {self.reporter.line_of(e.symbol.pos)}")
                     for e in operands if isinstance(e, ast.Name) and isinstance(e.symbol, VarSymbol | ConstSymbol)
                     and e.symbol.pos.line > 0)

    def line_of(self, pos: Pos) -> int:
        """A position's line within its own file (a unit's lines are shifted: units.py)."""
        return self.reporter.locate(pos, 0, "").pos.line

    def suggest(self, name: str) -> str:
        names = []
        scope = self.scope
        while scope is not None:
            names.extend(scope.names)
            scope = scope.parent
        if name in OTHER_NAMES:
            return f"; did you mean '{OTHER_NAMES[name]}'?"
        lowered = {n.lower(): n for n in names}
        if name.lower() in lowered:
            return f"; did you mean '{lowered[name.lower()]}'? (names are case-sensitive)"
        close = difflib.get_close_matches(name, names, 1)
        return f"; did you mean '{close[0]}'?" if close else ""
