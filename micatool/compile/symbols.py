"""Symbols and scopes: what a name in a Mica program stands for.

The analyzer creates these; the lowering reads them. Each file of a program
has one global scope (its constants, types, variables and routines), above it
the interface names of the units it uses, above those the predeclared
vocabulary; each routine has one local scope beneath its file's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from ..diagnostics import Pos
from . import ast
from .types import Type


@dataclass(eq=False, slots=True)
class Symbol:
    name: str
    pos: Pos
    unit: Optional[str] = field(default=None, kw_only=True)  # the unit whose file-level declaration this is


@dataclass(eq=False, slots=True)
class ConstSymbol(Symbol):
    type: Type
    value: Any


@dataclass(eq=False, slots=True)
class TypeSymbol(Symbol):
    type: Type


@dataclass(eq=False, slots=True)
class VarSymbol(Symbol):
    """A variable, parameter, function result or loop variable."""

    type: Type
    role: str  # 'global', 'local', 'param', 'result'
    by_address: bool = False
    init: Optional[ast.Expr] = None
    is_loop_var: bool = False  # set while a for loop runs over it
    assigned: bool = False  # a value parameter written in its routine needs its own copy
    changed_at: Optional[ast.Node] = None  # where an address parameter is first written: tasks share a stream
    # lent to many of them only when no task's parameter is ever written


@dataclass(eq=False, slots=True)
class ShapeVarSymbol(Symbol):
    """A dimension name in a parameter type, bound by unification at each call."""


@dataclass(eq=False, slots=True)
class RoutineSymbol(Symbol):
    decl: ast.Routine
    params: list[VarSymbol] = field(default_factory=list)
    result: Optional[Type] = None
    result_var: Optional[VarSymbol] = None
    locals: list[VarSymbol] = field(default_factory=list)
    shape_vars: list[str] = field(default_factory=list)
    # Sets that most routines leave empty: each starts as the one empty frozenset,
    # and grows by a new set (a large program has tens of thousands of routines).
    calls: frozenset = frozenset()  # routines this one calls
    global_writes: frozenset = frozenset()  # globals it may write, through its callees too
    global_resizes: frozenset = frozenset()  # globals whose dynamic storage it may replace
    global_uses: frozenset = frozenset()  # globals its own body names (not its callees'), for tasks
    touches_tracked: bool = False  # reads or writes tracked values
    has_tape: bool = False  # holds a tape window
    tape_verbs: bool = False  # calls Backward or Gradient, which read and walk the program's tape

    @property
    def is_function(self) -> bool:
        return self.decl.kind == "function"


@dataclass(eq=False, slots=True)
class BuiltinSymbol(Symbol):
    """A word of the predeclared vocabulary (WriteLn, Sum, AdamStep, ...)."""


@dataclass(eq=False, slots=True)
class UnitSymbol(Symbol):
    """A unit a file uses: what its interface declares, and all of its file's names
    (a private one, named from outside, is refused by name)."""

    exports: dict[str, Symbol]
    scope: Scope


@dataclass(eq=False, slots=True)
class AmbiguousSymbol(Symbol):
    """A name that two or more used units declare: it must be qualified."""

    units: list[str]


class Scope:
    def __init__(self, parent: Optional[Scope] = None):
        self.parent = parent
        self.names: dict[str, Symbol] = {}

    def lookup(self, name: str) -> Optional[Symbol]:
        scope = self
        while scope is not None:
            if name in scope.names:
                return scope.names[name]
            scope = scope.parent
        return None

    def local(self, name: str) -> Optional[Symbol]:
        return self.names.get(name)

    def define(self, symbol: Symbol) -> None:
        self.names[symbol.name] = symbol


def uses_scope(units: list[UnitSymbol], parent: Scope) -> Scope:
    """The names a file sees through its uses clauses: each unit's own name, and every
    name of the units' interfaces; one that two of them declare is ambiguous."""
    scope = Scope(parent)
    for unit in units:
        for name, symbol in unit.exports.items():
            earlier = scope.names.get(name)
            if earlier is None or earlier is symbol:
                scope.define(symbol)
            elif isinstance(earlier, AmbiguousSymbol):
                earlier.units.append(unit.name)
            else:
                scope.define(AmbiguousSymbol(name, symbol.pos, [earlier.unit, unit.name]))
    for unit in units:
        scope.define(unit)
    return scope
