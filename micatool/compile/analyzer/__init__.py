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

from ...diagnostics import Pos, Reporter, SourceFile
from .. import ast, ops
from ..ops.checking import CheckContext
from ..symbols import BuiltinSymbol, ConstSymbol, RoutineSymbol, Scope, TypeSymbol, VarSymbol
from ..types import ERROR, FLOAT64, INTEGER, REGEX, SCALARS, STREAM, Record, Type
from .calls import Calls
from .declarations import Declarations
from .expressions import Expressions
from .places import Places
from .statements import Statements
from .tasks import Tasks
from .type_syntax import TypeSyntax


@dataclass
class Analysis:
    """The analyzed program: the annotated AST plus the symbols lowering needs."""

    source: SourceFile
    program: ast.Program
    global_vars: list[VarSymbol]
    global_consts: list[ConstSymbol]
    records: list[Record]
    routines: list[RoutineSymbol]
    tape_routines: set = field(default_factory=set)  # routines that run inside windows
    # what desugar.py rewrites, noted while checking: the tree is still as written
    bare_statements: list[tuple[ast.CallStmt, ast.Call]] = field(default_factory=list)  # `Report;`
    bare_values: list[tuple[ast.Name, ast.Call]] = field(default_factory=list)  # `t := Clock`
    repeated_first: list[ast.Binary] = field(default_factory=list)  # v + m, v - m: v repeats at every row of m


def analyze(source: SourceFile, program: ast.Program) -> Analysis:
    analyzer = Analyzer(source)
    analysis = analyzer.program(program)
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

    def __init__(self, source: SourceFile):
        self.source = source
        self.reporter = Reporter(source)
        self.globals = Scope(predeclared())
        self.scope = self.globals
        self.routine: RoutineSymbol | None = None
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

    def error(self, where, code: int, message: str) -> Type:
        pos = where if isinstance(where, Pos) else where.pos
        self.reporter.error(pos, code, message)
        return ERROR

    def program(self, program: ast.Program) -> Analysis:
        for decl in program.decls:
            self.declarations.declaration(decl, self.globals)
        for routine in self.routines:
            self.declarations.routine_body(routine)
        self.tape_depth = 0
        self.statements.stmts(program.body)
        self.declarations.close_over_calls()
        self.places.check_lent_elements()
        self.tasks.check_spawned_routines()
        inside, tape_routines = self.declarations.close_over_windows()
        self.declarations.check_gradient_uses(tape_routines)
        self.declarations.check_untrackings(inside)
        return Analysis(
            self.source, program, self.global_vars, self.global_consts, self.records, self.routines, tape_routines,
            self.bare_statements, self.bare_values, self.repeated_first
        )

    def suggest(self, name: str) -> str:
        names = []
        scope = self.scope
        while scope is not None:
            names.extend(scope.names)
            scope = scope.parent
        lowered = {n.lower(): n for n in names}
        if name.lower() in lowered:
            return f"; did you mean '{lowered[name.lower()]}'? (names are case-sensitive)"
        close = difflib.get_close_matches(name, names, 1)
        return f"; did you mean '{close[0]}'?" if close else ""
