"""Declarations: constants, types, variables and routines, and the checks that
need the whole program (calls closed over, windows, gradients read)."""

from __future__ import annotations

from .. import ast
from ..symbols import ConstSymbol, RoutineSymbol, Scope, ShapeVarSymbol, Symbol, TypeSymbol, VarSymbol
from ..types import ERROR, STREAM, ErrorType, Tensor, Type, has_tracked, is_tracked, plain, storage_bytes
from .rules import GLOBALS_LIMIT_BYTES, STREAM_ALONE, STREAM_COPIED, not_addressable, tracked_parameter


class Declarations:
    def __init__(self, analyzer):
        self.a = analyzer  # the program's state, and through it the other parts
        self.misheaded: set[RoutineSymbol] = set()  # bodies under another heading than the interface's: unchecked

    def declaration(self, decl: ast.Node, scope: Scope) -> None:
        if isinstance(decl, ast.ConstDecl):
            self.const_decl(decl, scope)
        elif isinstance(decl, ast.TypeDecl):
            t = self.a.type_syntax.resolve_type(decl.type, name=decl.name)
            self.define(scope, TypeSymbol(decl.name, decl.pos, t))
        elif isinstance(decl, ast.VarDecl):
            self.var_decl(decl, scope)
        elif isinstance(decl, ast.Routine | ast.Heading):
            self.routine_header(decl)

    def define(self, scope: Scope, symbol: Symbol) -> None:
        earlier = scope.local(symbol.name)
        if earlier is not None:
            self.a.error(symbol.pos, 3002, f"'{symbol.name}' is already declared at line {self.a.line_of(earlier.pos)}")
            return
        if symbol.name == "result" and self.a.routine is not None and self.a.routine.is_function:
            self.a.error(symbol.pos, 3002, "'result' is already declared: it holds the function's value")
            return
        if symbol.name in self.a.visible_units or symbol.name == self.a.unit_name:
            self.a.error(symbol.pos, 3020, f"'{symbol.name}' names a unit of this file, so '{symbol.name}.Name' could "
                                           f"not tell the two apart: choose another name")
            return
        if scope is self.a.globals:
            symbol.unit = self.a.unit_name
        scope.define(symbol)

    def const_decl(self, decl: ast.ConstDecl, scope: Scope) -> None:
        declared = self.a.type_syntax.resolve_type(decl.type) if decl.type is not None else None
        t = self.a.expressions.expr(decl.value, plain(declared) if declared else None)
        if decl.value.folded is None and not isinstance(t, ErrorType):
            why = "; a tensor constant is a literal: compute this one into a variable" \
                if isinstance(plain(t), Tensor) else ""
            self.a.error(decl.value, 4001, f"the value of constant '{decl.name}' must be known at compile time{why}")
            t = ERROR
        if declared is not None and not isinstance(t, ErrorType):
            self.a.places.check_assignable(t, declared, decl.value)
            t = declared
        symbol = ConstSymbol(decl.name, decl.pos, t, decl.value.folded)
        self.define(scope, symbol)
        if scope is self.a.globals:
            self.a.global_consts.append(symbol)

    def var_decl(self, decl: ast.VarDecl, scope: Scope) -> None:
        t = self.a.type_syntax.resolve_type(decl.type)
        is_global = scope is self.a.globals
        if is_global and self.a.unit_name is not None and has_tracked(t):
            self.a.error(decl, 5116, f"a unit cannot declare the tracked variable '{decl.names[0]}': tracked "
                                     f"variables live in the program's var section, where their paths name "
                                     f"checkpoints; declare it there and pass it to the unit's routines")
        elif not is_global and has_tracked(t) and not is_tracked(t):
            self.a.error(decl, 5102, f"a variable of type '{t}' holds tracked places and must live in "
                                     "the program's var section")
        if decl.init is not None:
            if len(decl.names) > 1:
                self.a.error(decl.init, 4002, "an initial value can only be given to one variable at a time")
            self.a.places.check_assignable(self.a.expressions.expr(decl.init, plain(t)), t, decl.init)
        for name in decl.names:
            symbol = VarSymbol(name, decl.pos, t, "global" if is_global else "local", init=decl.init)
            self.define(scope, symbol)
            if is_global:
                self.a.global_vars.append(symbol)
                self.count_global_bytes(decl, name, t)
            elif self.a.routine is not None:
                self.a.routine.locals.append(symbol)

    def count_global_bytes(self, decl: ast.VarDecl, name: str, t: Type) -> None:
        """Report the global whose storage takes the globals past GLOBALS_LIMIT_BYTES (6020)."""
        within = self.a.global_bytes <= GLOBALS_LIMIT_BYTES
        self.a.global_bytes += storage_bytes(t)
        if within and self.a.global_bytes > GLOBALS_LIMIT_BYTES:
            self.a.error(decl, 6020, f"with '{name}' the global variables take {self.a.global_bytes} bytes in place, "
                                     f"past the 1 GiB that static storage holds: "
                                     f"make '{name}' a dynamic array or tensor")

    def routine_header(self, decl: ast.Routine | ast.Heading) -> None:
        earlier = self.a.globals.local(decl.name)
        if isinstance(earlier, RoutineSymbol) and isinstance(decl, ast.Routine) and earlier.unit is not None:
            self.body_of_heading(earlier, decl)
            return
        routine = RoutineSymbol(decl.name, decl.pos, decl)
        self.define(self.a.globals, routine)
        self.a.routines.append(routine)
        shape_vars: list[str] = []
        for param in decl.params:
            inner = param.type
            by_address = param.by_address
            if isinstance(inner, ast.AddressType):
                inner, by_address = inner.inner, True
            t = self.a.type_syntax.resolve_type(inner, new_shape_vars=shape_vars)
            if has_tracked(t) and not is_tracked(t):
                self.a.error(param, 5102, f"a parameter of type '{t}' holds tracked places; "
                                          "only the program's var section may")
            if by_address and has_tracked(t):
                self.a.error(param, 5119, not_addressable(t), *tracked_parameter(param.name, t))
            if t == STREAM and not by_address:
                t = self.a.error(param, 5020, STREAM_COPIED.format(
                    f"declare the parameter 'address {param.name} : stream' and lend it with 'address'"))
            routine.params.append(VarSymbol(param.name, param.pos, t, "param", by_address=by_address))
        routine.shape_vars = shape_vars
        if decl.result is not None:
            routine.result = self.a.type_syntax.resolve_type(decl.result, known_shape_vars=set(shape_vars))
            if routine.result == STREAM:
                routine.result = self.a.error(decl.result, 5021, STREAM_ALONE.format("a function's result"))

    def body_of_heading(self, routine: RoutineSymbol, decl: ast.Routine) -> None:
        """An implementation's routine for a heading of the unit's interface: the heading,
        repeated exactly, and the body."""
        heading = routine.decl
        if isinstance(heading, ast.Routine):
            self.a.error(decl, 3014, f"'{decl.name}' already has a body, at line {self.a.line_of(heading.pos)}")
        else:
            if (decl.kind, decl.params, decl.result) != (heading.kind, heading.params, heading.result):
                self.a.error(decl, 3015, f"this heading of '{decl.name}' differs from the interface's, at line "
                                         f"{self.a.line_of(heading.pos)}: a body repeats its heading exactly")
                self.misheaded.add(routine)  # its body is written for another heading: no error of its own
            routine.decl = decl

    def check_bodies_given(self, routines: list[RoutineSymbol]) -> None:
        """Every heading of a unit's interface has its body in the implementation."""
        for routine in routines:
            if isinstance(routine.decl, ast.Heading):
                self.a.error(routine.decl, 3013, f"the interface declares {routine.decl.kind} '{routine.name}', "
                                                 f"and the implementation gives it no body")

    def routine_body(self, routine: RoutineSymbol) -> None:
        decl = routine.decl
        self.a.routine = routine
        self.a.scope = Scope(self.a.globals)
        for name in routine.shape_vars:
            self.a.scope.define(ShapeVarSymbol(name, decl.pos))
        for param in routine.params:
            self.define(self.a.scope, param)
        if routine.is_function:
            routine.result_var = VarSymbol("result", decl.pos, routine.result, "result")
            self.a.scope.define(routine.result_var)
        for local in decl.decls:
            if isinstance(local, ast.TypeDecl):
                t = self.a.type_syntax.resolve_type(local.type, name=local.name,
                                                    known_shape_vars=set(routine.shape_vars))
                self.define(self.a.scope, TypeSymbol(local.name, local.pos, t))
            else:
                self.declaration(local, self.a.scope)
        self.a.statements.stmts(decl.body)
        self.a.scope = self.a.globals
        self.a.routine = None

    def close_over_calls(self) -> None:
        """A routine writes the globals its callees write."""
        changed = True
        while changed:
            changed = False
            for routine in self.a.routines:
                for callee in routine.calls:
                    if not (callee.global_writes <= routine.global_writes and
                            callee.global_resizes <= routine.global_resizes):
                        routine.global_writes |= callee.global_writes
                        routine.global_resizes |= callee.global_resizes
                        changed = True

    def close_over_windows(self) -> set:
        """Routines that run inside a tape window: called from one, directly or not."""
        inside: set[RoutineSymbol] = set()
        work = [r for r, _ in self.a.window_calls]
        while work:
            r = work.pop()
            if r not in inside:
                inside.add(r)
                work.extend(r.calls)
        for routine, pos in self.a.window_calls:
            reach = {routine}
            frontier = [routine]
            while frontier:
                for callee in frontier.pop().calls:
                    if callee not in reach:
                        reach.add(callee)
                        frontier.append(callee)
            opener = next((r for r in reach if r.has_tape), None)
            if opener is routine:
                self.a.error(pos, 5105, f"'{routine.name}' opens a tape window, and windows do not nest")
            elif opener is not None:
                self.a.error(pos, 5105, f"'{routine.name}' calls '{opener.name}', which opens a tape window, "
                                        "and windows do not nest")
        for r in inside:
            self.a.window_reads |= self.a.routine_reads.get(r, set())
        return inside, {r for r in inside if r.touches_tracked}

    def note_untracking(self, where: ast.Node, source: Type, target: Type, what: str) -> None:
        """A tracked value stored into a plain place; an error if it happens inside a window."""
        if is_tracked(source) and not has_tracked(target):
            self.note_tape_loss(where, 5115, f"{what} is plain, so the tracked value stored there leaves the tape and "
                                             f"its gradient is lost; "
                                             f"declare it tracked, or read the value after the window")

    def note_tape_loss(self, where: ast.Node, code: int, message: str) -> None:
        """Where a gradient would silently end: an error once it is known to run inside a window
        (here, or in a routine that windows call)."""
        self.a.untrackings.append((where, code, message, self.a.routine, self.a.tape_depth > 0))

    def check_untrackings(self, inside: set) -> None:
        for where, code, message, routine, in_window in self.a.untrackings:
            if in_window or routine in inside:
                self.a.error(where, code, message)

    def check_gradient_uses(self, tape_routines) -> None:
        for root, pos, text in self.a.gradient_uses:
            if root not in self.a.window_reads:
                self.a.error(pos, 5106, f"Gradient of '{text}', which no tape window reads")
