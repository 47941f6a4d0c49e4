"""Analyzer: ast.Program -> Analysis (names, types, shapes and places checked).

Resolves every name to a symbol, gives every expression a type (Expr.ty) and
folds constants (Expr.folded), checks shapes, places, borrows and tracked
values, and reports every error it finds in source order. Routine bodies are
analyzed once with their shape variables as symbols; each call binds them
(Call.binding) and the lowering instantiates the routine per binding.
It changes no syntax: the forms that mean another (a routine named without
parentheses is a call) are noted in the Analysis, and desugar.py rewrites them.
"""

from __future__ import annotations

import difflib
import math
import struct
from dataclasses import dataclass, field, fields

from ..diagnostics import Pos, Reporter, SourceFile
from . import ast, ops, residency, shapes
from .ops.checking import CheckContext
from .ops.conversions import check_conversion
from .symbols import BuiltinSymbol, ConstSymbol, RoutineSymbol, Scope, ShapeVarSymbol, Symbol, TypeSymbol, VarSymbol
from .types import (
    BOOLEAN,
    ERROR,
    FLOAT32,
    FLOAT64,
    INTEGER,
    INTEGER_RANGES,
    SCALARS,
    STRING,
    VOID,
    Array,
    ErrorType,
    Record,
    Scalar,
    Tensor,
    Tracked,
    Type,
    element_of,
    has_tracked,
    holds_dynamic,
    is_tracked,
    plain,
    storage_bytes,
    substitute,
)


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


def _predeclared() -> Scope:
    scope = Scope()
    for name, t in SCALARS.items():
        scope.define(TypeSymbol(name, Pos(0, 0), t))
    for name in ops.OPS:
        if ":" not in name:  # 'Max:reduce' is an overload, reached through Max
            scope.define(BuiltinSymbol(name, Pos(0, 0)))
    scope.define(ConstSymbol("MaxInt", Pos(0, 0), INTEGER, 2**63 - 1))
    scope.define(ConstSymbol("Pi", Pos(0, 0), FLOAT64, 3.141592653589793))
    return scope


TENSOR_CONSTRUCTORS = {"vector": 1, "matrix": 2, "tensor": None}
STATIC_LIMIT_BYTES = 1 << 40
# Globals are C statics: with the default (small) code model the code reaches them
# and the C library's own statics 32-bit relative (x86_64; aarch64's reach is 4 GiB),
# so all of them and the code must fit in 2 GiB. This leaves the code 1 GiB of it.
GLOBALS_LIMIT_BYTES = 1 << 30
FLOAT32_OVERFLOW = 3.4028235677973366e38  # the least magnitude that rounds to float32's infinity


class Analyzer:
    def __init__(self, source: SourceFile):
        self.source = source
        self.reporter = Reporter(source)
        self.globals = Scope(_predeclared())
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

    def error(self, where, code: int, message: str) -> Type:
        pos = where if isinstance(where, Pos) else where.pos
        self.reporter.error(pos, code, message)
        return ERROR

    # ============================================================ program

    def program(self, program: ast.Program) -> Analysis:
        for decl in program.decls:
            self.declaration(decl, self.globals)
        for routine in self.routines:
            self.routine_body(routine)
        self.tape_depth = 0
        self.stmts(program.body)
        self.close_over_calls()
        self.check_lent_elements()
        inside, tape_routines = self.close_over_windows()
        self.check_gradient_uses(tape_routines)
        self.check_untrackings(inside)
        return Analysis(
            self.source, program, self.global_vars, self.global_consts, self.records, self.routines, tape_routines,
            self.bare_statements, self.bare_values, self.repeated_first
        )

    def declaration(self, decl: ast.Node, scope: Scope) -> None:
        if isinstance(decl, ast.ConstDecl):
            self.const_decl(decl, scope)
        elif isinstance(decl, ast.TypeDecl):
            t = self.resolve_type(decl.type, name=decl.name)
            self.define(scope, TypeSymbol(decl.name, decl.pos, t))
        elif isinstance(decl, ast.VarDecl):
            self.var_decl(decl, scope)
        elif isinstance(decl, ast.Routine):
            self.routine_header(decl)

    def define(self, scope: Scope, symbol: Symbol) -> None:
        earlier = scope.local(symbol.name)
        if earlier is not None:
            self.error(symbol.pos, 3002, f"'{symbol.name}' is already declared at line {earlier.pos.line}")
            return
        if symbol.name == "result" and self.routine is not None and self.routine.is_function:
            self.error(symbol.pos, 3002, "'result' is already declared: it holds the function's value")
            return
        scope.define(symbol)

    def const_decl(self, decl: ast.ConstDecl, scope: Scope) -> None:
        declared = self.resolve_type(decl.type) if decl.type is not None else None
        t = self.expr(decl.value, plain(declared) if declared else None)
        if decl.value.folded is None and not isinstance(t, ErrorType):
            self.error(decl.value, 4001, f"the value of constant '{decl.name}' must be known at compile time")
            t = ERROR
        if declared is not None and not isinstance(t, ErrorType):
            self.check_assignable(t, declared, decl.value)
            t = declared
        symbol = ConstSymbol(decl.name, decl.pos, t, decl.value.folded)
        self.define(scope, symbol)
        if scope is self.globals:
            self.global_consts.append(symbol)
        elif self.routine is not None:
            self.routine.local_consts.append(symbol)

    def var_decl(self, decl: ast.VarDecl, scope: Scope) -> None:
        t = self.resolve_type(decl.type)
        is_global = scope is self.globals
        if not is_global and has_tracked(t) and not is_tracked(t):
            self.error(decl, 5102, f"a variable of type '{t}' holds tracked places and must live in the program's var section")
        if decl.init is not None:
            if len(decl.names) > 1:
                self.error(decl.init, 4002, "an initial value can only be given to one variable at a time")
            self.check_assignable(self.expr(decl.init, plain(t)), t, decl.init)
        for name in decl.names:
            symbol = VarSymbol(name, decl.pos, t, "global" if is_global else "local", init=decl.init)
            self.define(scope, symbol)
            if is_global:
                self.global_vars.append(symbol)
                self.count_global_bytes(decl, name, t)
            elif self.routine is not None:
                self.routine.locals.append(symbol)

    def count_global_bytes(self, decl: ast.VarDecl, name: str, t: Type) -> None:
        """Report the global whose storage takes the globals past GLOBALS_LIMIT_BYTES (6020)."""
        within = self.global_bytes <= GLOBALS_LIMIT_BYTES
        self.global_bytes += storage_bytes(t)
        if within and self.global_bytes > GLOBALS_LIMIT_BYTES:
            self.error(decl, 6020, f"with '{name}' the global variables take {self.global_bytes} bytes in place, past "
                                   f"the 1 GiB that static storage holds: make '{name}' a dynamic array or tensor")

    # ============================================================ routines

    def routine_header(self, decl: ast.Routine) -> None:
        routine = RoutineSymbol(decl.name, decl.pos, decl)
        self.define(self.globals, routine)
        self.routines.append(routine)
        shape_vars: list[str] = []
        for param in decl.params:
            inner = param.type
            by_address = param.by_address
            if isinstance(inner, ast.AddressType):
                inner, by_address = inner.inner, True
            t = self.resolve_type(inner, new_shape_vars=shape_vars)
            if has_tracked(t) and not is_tracked(t):
                self.error(param, 5102, f"a parameter of type '{t}' holds tracked places; only the program's var section may")
            if by_address and has_tracked(t):
                self.error(param, 5119, _not_addressable(t))
            routine.params.append(VarSymbol(param.name, param.pos, t, "param", by_address=by_address))
        routine.shape_vars = shape_vars
        if decl.result is not None:
            routine.result = self.resolve_type(decl.result, known_shape_vars=set(shape_vars))

    def routine_body(self, routine: RoutineSymbol) -> None:
        decl = routine.decl
        self.routine = routine
        self.routine_reads[routine] = set()
        self.scope = Scope(self.globals)
        for name in routine.shape_vars:
            self.scope.define(ShapeVarSymbol(name, decl.pos))
        for param in routine.params:
            self.define(self.scope, param)
        if routine.is_function:
            routine.result_var = VarSymbol("result", decl.pos, routine.result, "result")
            self.scope.define(routine.result_var)
        for local in decl.decls:
            if isinstance(local, ast.TypeDecl):
                t = self.resolve_type(local.type, name=local.name, known_shape_vars=set(routine.shape_vars))
                self.define(self.scope, TypeSymbol(local.name, local.pos, t))
            else:
                self.declaration(local, self.scope)
        self.stmts(decl.body)
        self.scope = self.globals
        self.routine = None

    def close_over_calls(self) -> None:
        """A routine writes the globals its callees write."""
        changed = True
        while changed:
            changed = False
            for routine in self.routines:
                for callee in routine.calls:
                    if not (callee.global_writes <= routine.global_writes and
                            callee.global_resizes <= routine.global_resizes):
                        routine.global_writes |= callee.global_writes
                        routine.global_resizes |= callee.global_resizes
                        changed = True

    def close_over_windows(self) -> set:
        """Routines that run inside a tape window: called from one, directly or not."""
        inside: set[RoutineSymbol] = set()
        work = [r for r, _ in self.window_calls]
        while work:
            r = work.pop()
            if r not in inside:
                inside.add(r)
                work.extend(r.calls)
        for routine, pos in self.window_calls:
            reach = {routine}
            frontier = [routine]
            while frontier:
                for callee in frontier.pop().calls:
                    if callee not in reach:
                        reach.add(callee)
                        frontier.append(callee)
            opener = next((r for r in reach if r.has_tape), None)
            if opener is routine:
                self.error(pos, 5105, f"'{routine.name}' opens a tape window, and windows do not nest")
            elif opener is not None:
                self.error(pos, 5105, f"'{routine.name}' calls '{opener.name}', which opens a tape window, and windows do not nest")
        for r in inside:
            self.window_reads |= self.routine_reads.get(r, set())
        return inside, {r for r in inside if r.touches_tracked}

    def note_untracking(self, where: ast.Node, source: Type, target: Type, what: str) -> None:
        """A tracked value stored into a plain place; an error if it happens inside a window."""
        if is_tracked(source) and not has_tracked(target):
            self.note_tape_loss(where, 5115, f"{what} is plain, so the tracked value stored there leaves the tape and "
                                             f"its gradient is lost; declare it tracked, or read the value after the window")

    def note_tape_loss(self, where: ast.Node, code: int, message: str) -> None:
        """Where a gradient would silently end: an error once it is known to run inside a window
        (here, or in a routine that windows call)."""
        self.untrackings.append((where, code, message, self.routine, self.tape_depth > 0))

    def check_untrackings(self, inside: set) -> None:
        for where, code, message, routine, in_window in self.untrackings:
            if in_window or routine in inside:
                self.error(where, code, message)

    def check_gradient_uses(self, tape_routines) -> None:
        for root, pos, text in self.gradient_uses:
            if root not in self.window_reads:
                self.error(pos, 5106, f"Gradient of '{text}', which no tape window reads")

    # ============================================================ types

    def resolve_type(self, t, name: str | None = None, new_shape_vars: list | None = None,
                     known_shape_vars: set | None = None) -> Type:
        known = set(known_shape_vars or ()) | set(new_shape_vars or ())
        if self.routine is not None:
            known |= set(self.routine.shape_vars)
        if isinstance(t, ast.NamedType):
            symbol = self.scope.lookup(t.name)
            if symbol is None:
                return self.error(t, 3001, f"unknown type '{t.name}'" + self.suggest(t.name))
            if not isinstance(symbol, TypeSymbol):
                return self.error(t, 3003, f"'{t.name}' is not a type")
            return symbol.type
        if isinstance(t, ast.ShapedType):
            return self.shaped_type(t, new_shape_vars, known)
        if isinstance(t, ast.DynamicShapedType):
            element = self.tensor_element(t.element, t)
            if t.constructor not in ("vector", "matrix"):
                return self.error(t, 4003, f"'{t.constructor} of T' is not a type; dynamic tensors are 'vector of T' and 'matrix of T'")
            if isinstance(element, ErrorType):
                return ERROR
            if self.on_gpu(t.element):
                return self.error(t, 7008, "a GPU tensor needs a static shape: its storage is allocated on the device")
            return Tensor(element, None, TENSOR_CONSTRUCTORS[t.constructor])
        if isinstance(t, ast.StaticArrayType):
            low, high = self.const_int(t.low), self.const_int(t.high)
            element = self.resolve_type(t.element, known_shape_vars=known)
            if low is None or high is None or isinstance(element, ErrorType):
                return ERROR
            if low > high:
                return self.error(t, 6002, f"array bounds {low}..{high} are empty: the low bound is above the high bound")
            return self.within_static_limit(t, Array(element, low, high))
        if isinstance(t, ast.DynamicArrayType):
            element = self.resolve_type(t.element, known_shape_vars=known)
            if has_tracked(element):
                return self.error(t, 5103, "a dynamic array cannot hold tracked values: their paths must be known before the program runs")
            return Array(element, None, None)
        if isinstance(t, ast.RecordType):
            return self.record_type(t, name, known)
        if isinstance(t, ast.TrackedType):
            inner = self.resolve_type(t.inner, new_shape_vars=new_shape_vars, known_shape_vars=known)
            if isinstance(inner, ErrorType):
                return ERROR
            if isinstance(inner, Scalar) and inner.is_float:
                return Tracked(inner)
            if isinstance(inner, Tensor) and inner.element.is_float and not inner.is_dynamic:
                return Tracked(inner)
            return self.error(t, 5101, f"'tracked' needs a float scalar or a static-shaped float tensor, not '{inner}'")
        if isinstance(t, ast.AddressType):
            return self.error(t, 5104, "'address' belongs in a parameter list: it lends the caller's place to the routine")
        if isinstance(t, ast.OnGpuType):
            inner = self.resolve_type(t.inner, new_shape_vars=new_shape_vars, known_shape_vars=known)
            if isinstance(inner, ErrorType):
                return ERROR
            if isinstance(inner, Scalar) and inner.is_numeric:
                return Tensor(inner, (), 0, True)  # a device scalar
            if isinstance(inner, Tensor) and inner.is_dynamic:
                return self.error(t, 7008, "a GPU tensor needs a static shape: its storage is allocated on the device")
            if isinstance(inner, Tensor):  # a named tensor type, moved
                return Tensor(inner.element, inner.shape, 0, True)
            return self.error(t, 7009, f"'on gpu' applies to numbers and static tensors, not '{inner}'")
        raise AssertionError(f"unknown type syntax {t!r}")

    def on_gpu(self, element) -> bool:
        return isinstance(element, ast.OnGpuType)

    def tensor_element(self, element, where) -> Scalar | ErrorType:
        t = self.resolve_type(element.inner if self.on_gpu(element) else element)
        if isinstance(t, ErrorType):
            return ERROR
        if not isinstance(t, Scalar) or not t.is_numeric:
            return self.error(where, 4004, f"a tensor's elements must be a float or integer type, not '{t}'")
        return t

    def shaped_type(self, t: ast.ShapedType, new_shape_vars, known) -> Type:
        rank = TENSOR_CONSTRUCTORS.get(t.constructor, -1)
        if rank == -1:
            return self.error(t, 3003, f"'{t.constructor}' is not a tensor type; use vector, matrix or tensor")
        if rank is not None and len(t.dims) != rank:
            word = "one dimension" if rank == 1 else "two dimensions"
            return self.error(t, 6003, f"'{t.constructor}' takes {word}, found {len(t.dims)}")
        dims = []
        for d in t.dims:
            dim = self.dimension(d, new_shape_vars, known)
            if dim is None:
                return ERROR
            dims.append(dim)
        element = self.tensor_element(t.element, t)
        if isinstance(element, ErrorType):
            return ERROR
        return self.within_static_limit(t, Tensor(element, tuple(dims), 0, self.on_gpu(t.element)))

    def within_static_limit(self, where: ast.Node, t: Type) -> Type:
        """A static type lives in place, as C storage: keep it to a size a machine can address."""
        if storage_bytes(t) > STATIC_LIMIT_BYTES:
            return self.error(where, 6019, f"'{t}' would take {storage_bytes(t)} bytes in place; a static type "
                                           f"holds at most 1 TiB: use a dynamic array or tensor")
        return t

    def dimension(self, d: ast.Expr, new_shape_vars, known) -> int | str | None:
        if isinstance(d, ast.Name):
            symbol = self.scope.lookup(d.ident)
            if d.ident in known:
                return d.ident
            if isinstance(symbol, TypeSymbol):
                self.error(d, 4005, f"'{d.ident}' is a type; a dimension is a constant or a shape variable")
                return None
            if not isinstance(symbol, ConstSymbol) and new_shape_vars is not None:
                new_shape_vars.append(d.ident)  # any name but a constant's: a shape variable (it shadows)
                known.add(d.ident)
                return d.ident
            if symbol is None or isinstance(symbol, ShapeVarSymbol):
                self.error(d, 3001, f"unknown name '{d.ident}' in a dimension; shape variables are introduced by parameter types")
                return None
            if not isinstance(symbol, ConstSymbol):
                self.error(d, 4005, f"a dimension is a constant, and '{d.ident}' is not one; shape variables are "
                                    f"introduced by parameter types")
                return None
        if self.mentions_shape_var(d, known):
            self.error(d, 6004, "a shape variable must stand alone as a dimension")
            return None
        value = self.const_int(d)
        if value is None:
            return None
        if value <= 0:
            self.error(d, 6001, f"a dimension must be positive, found {value}")
            return None
        return value

    def mentions_shape_var(self, e: ast.Expr, known) -> bool:
        if isinstance(e, ast.Name):
            return e.ident in known
        return any(self.mentions_shape_var(c, known) for c in _children(e))

    def record_type(self, t: ast.RecordType, name, known) -> Type:
        fields: list[tuple[str, Type]] = []
        seen: set[str] = set()
        for decl in t.fields:
            ft = self.resolve_type(decl.type, known_shape_vars=known)
            for field_name in decl.names:
                if field_name in seen:
                    self.error(decl, 3004, f"field '{field_name}' appears twice in the record")
                seen.add(field_name)
                fields.append((field_name, ft))
        record = Record(name or f"record_{len(self.records) + 1}", tuple(fields), anonymous=name is None)
        self.records.append(record)
        return record

    def const_int(self, e: ast.Expr) -> int | None:
        t = self.expr(e)
        if isinstance(t, ErrorType):
            return None
        if not (isinstance(t, Scalar) and t.is_integer) or e.folded is None:
            self.error(e, 4005, "expected an integer known at compile time")
            return None
        return e.folded

    # ============================================================ statements

    def stmts(self, body: list[ast.Stmt]) -> None:
        for s in body:
            self.stmt(s)

    def stmt(self, s: ast.Stmt) -> None:
        _STMT_CHECKS[s.__class__](self, s)

    def stmt_Empty(self, s):
        pass

    def stmt_Compound(self, s: ast.Compound):
        self.stmts(s.body)

    def stmt_Assign(self, s: ast.Assign):
        target_type = self.place(s.target, "assign to")
        value_type = self.expr(s.value, plain(target_type))
        if isinstance(target_type, ErrorType) or isinstance(value_type, ErrorType):
            return
        self.check_assignable(value_type, target_type, s.value)
        self.note_untracking(s.value, value_type, target_type, f"'{ast.place_text(s.target)}'")
        if has_tracked(target_type) and self.tape_depth > 0 and not isinstance(s.target, ast.Name | ast.Field | ast.Index):
            self.error(s.target, 5107, "inside a tape window a tracked place is assigned whole")
        if self.tape_depth > 0 and _writes_part_of_tracked(s.target):
            self.error(s.target, 5107, "inside a tape window a tracked value is assigned whole, not element by element")

    def stmt_CallStmt(self, s: ast.CallStmt):
        call = s.call
        if isinstance(call, ast.Name):  # a procedure named without parentheses: checked as the call it is
            call = ast.Call(call.line, call.col, call, [])
            self.bare_statements.append((s, call))
        if not isinstance(call, ast.Call):
            self.error(call, 2008, "a statement must be an assignment or a call")
            return
        self.expr(call, statement=True)

    def stmt_If(self, s: ast.If):
        self.condition(s.cond)
        self.stmt(s.then)
        if s.otherwise is not None:
            self.stmt(s.otherwise)

    def stmt_While(self, s: ast.While):
        self.condition(s.cond)
        self.loop(s.body)

    def stmt_Repeat(self, s: ast.Repeat):
        self.loop_depth += 1
        self.stmts(s.body)
        self.loop_depth -= 1
        self.condition(s.cond)

    def loop(self, body: ast.Stmt) -> None:
        self.loop_depth += 1
        self.stmt(body)
        self.loop_depth -= 1

    def stmt_For(self, s: ast.For):
        symbol = self.scope.lookup(s.var.ident)
        s.var.symbol = symbol
        if symbol is None:
            self.error(s.var, 3001, f"unknown name '{s.var.ident}'" + self.suggest(s.var.ident))
        elif not isinstance(symbol, VarSymbol) or symbol.by_address:
            self.error(s.var, 5004, f"a for loop runs over a variable of its own; '{s.var.ident}' is not one")
            symbol = None
        elif not (isinstance(symbol.type, Scalar) and symbol.type.is_integer):
            self.error(s.var, 4006, f"a for loop's variable must be an integer, '{s.var.ident}' is '{symbol.type}'")
            symbol = None
        elif symbol.is_loop_var:
            self.error(s.var, 5003, f"'{s.var.ident}' already counts an enclosing for loop")
            symbol = None
        s.var.ty = symbol.type if symbol else ERROR
        for bound in (s.start, s.stop):
            t = self.expr(bound)
            if isinstance(t, ErrorType) or not residency.needs_host(self, "a for loop's count", bound, t):
                continue
            if not (isinstance(plain(t), Scalar) and plain(t).is_integer):
                self.error(bound, 4006, f"a for loop's bounds must be integers, found '{t}'")
        if symbol is not None:
            symbol.is_loop_var = True
        self.loop(s.body)
        if symbol is not None:
            symbol.is_loop_var = False

    def stmt_Tape(self, s: ast.Tape):
        if self.tape_depth > 0:
            self.error(s, 5105, "a tape window cannot open inside another tape window")
        if self.routine is not None:
            self.routine.has_tape = True
        self.tape_depth += 1
        self.stmts(s.body)
        self.tape_depth -= 1

    def stmt_Break(self, s):
        if self.loop_depth == 0:
            self.error(s, 2101, "'break' outside a loop")

    def stmt_Continue(self, s):
        if self.loop_depth == 0:
            self.error(s, 2102, "'continue' outside a loop")

    def stmt_Exit(self, s):
        pass

    def condition(self, e: ast.Expr) -> None:
        t = self.expr(e)
        if not isinstance(t, ErrorType) and t != BOOLEAN:
            self.error(e, 4007, f"a condition must be boolean, found '{t}'")

    # ============================================================ places

    def place(self, e: ast.Expr, action: str) -> Type:
        """Type-check e as a place to write; report why when it is not one."""
        if isinstance(e, ast.Name) and self.routine is not None and e.ident == self.routine.name and self.routine.is_function:
            e.symbol = self.routine.result_var
            e.ty = self.routine.result
            return e.ty
        root = root_name(e)
        if root is None:
            self.expr(e)
            return self.error(e, 5001, f"cannot {action} this expression: it is not a variable, field or element")
        self.writing = root  # writing a place is not reading it (see note_use)
        t = self.expr(e)
        self.writing = None
        if isinstance(t, ErrorType):
            return ERROR
        symbol = root.symbol
        if isinstance(symbol, ConstSymbol):
            return self.error(e, 5002, f"cannot {action} constant '{root.ident}'")
        if isinstance(symbol, ShapeVarSymbol):
            return self.error(e, 5002, f"cannot {action} shape variable '{root.ident}'")
        if not isinstance(symbol, VarSymbol):
            return self.error(e, 5001, f"cannot {action} '{root.ident}': it is not a variable")
        if symbol.is_loop_var and e is root:
            return self.error(e, 5003, f"cannot {action} '{root.ident}' while a for loop counts with it")
        if _indexes_string(e):
            return self.error(e, 5005, "strings are values: build a new one with Copy and '+' instead of writing a character")
        if symbol.role == "param" and not symbol.by_address:
            symbol.assigned = True
        if symbol.role == "global" and self.routine is not None:
            self.routine.global_writes.add(symbol)
            if holds_dynamic(t):
                self.routine.global_resizes.add(symbol)
        return t

    def address_arg(self, arg: ast.Expr, what: str = "") -> Type:
        """An `address place` argument: the place must be plain and writable."""
        if not isinstance(arg, ast.AddressArg):
            t = self.expr(arg)
            if isinstance(t, ErrorType):
                return ERROR
            return self.error(arg, 5006, f"{what or 'this parameter'} writes the caller's storage: pass it as 'address <place>'")
        t = self.place(arg.place, "take the address of")
        arg.ty = t
        if isinstance(t, ErrorType):
            return ERROR
        if has_tracked(t):
            arg.ty = self.error(arg, 5119, _not_addressable(t))
        elif is_dynamic_row(arg.place):
            arg.ty = self.error(arg, 5008, "a row of a dynamic matrix has no storage of its own to lend; copy it into "
                                         "a vector variable, or lend the whole matrix")
        return arg.ty

    def check_lent_elements(self) -> None:
        """An element of dynamic storage lent to a routine that may resize that storage
        would be written after it moved (5009)."""
        for call, routine in self.calls_lending:
            lent = [a for a, p in zip(call.args, routine.params)
                    if p.by_address and isinstance(a, ast.AddressArg) and not isinstance(a.ty, ErrorType)]
            whole = {root_name(a.place).symbol for a in lent if holds_dynamic(a.place.ty)}
            for arg in lent:
                inside = _dynamic_storage_roots(arg.place)
                if inside and (inside & (routine.global_resizes | whole)):
                    self.error(arg, 5009, f"'{routine.name}' may resize the storage that '{ast.place_text(arg.place)}' "
                                          f"lives in, and would then write where it used to be; lend a variable "
                                          f"holding the element, and store it back after the call")

    # ============================================================ expressions

    def expr(self, e: ast.Expr, expected: Type | None = None, statement: bool = False) -> Type:
        if e.__class__ is ast.Call:
            t = self.expr_Call(e, expected, statement)
        else:
            t = _EXPR_CHECKS[e.__class__](self, e, expected)
        e.ty = t
        return t

    def expr_IntLit(self, e: ast.IntLit, expected):
        e.folded = e.value
        return INTEGER

    def expr_FloatLit(self, e: ast.FloatLit, expected):
        e.folded = e.value
        return FLOAT64

    def expr_StrLit(self, e: ast.StrLit, expected):
        e.folded = e.value
        return STRING

    def expr_BoolLit(self, e: ast.BoolLit, expected):
        e.folded = e.value
        return BOOLEAN

    def expr_AddressArg(self, e: ast.AddressArg, expected):
        self.expr(e.place)
        return self.error(e, 5007, "'address' lends a place to a parameter declared 'address T'; this one is not")

    def expr_FormatArg(self, e: ast.FormatArg, expected):
        self.expr(e.value)
        return self.error(e, 4008, "':width:decimals' formats belong in Write and WriteLn arguments")

    def expr_Name(self, e: ast.Name, expected):
        symbol = self.scope.lookup(e.ident)
        e.symbol = symbol
        if symbol is None:
            return self.error(e, 3001, f"unknown name '{e.ident}'" + self.suggest(e.ident))
        if isinstance(symbol, ConstSymbol):
            e.folded = symbol.value
            return symbol.type
        if isinstance(symbol, ShapeVarSymbol):
            return INTEGER
        if isinstance(symbol, VarSymbol):
            self.note_use(symbol, reading=self.writing is not e)
            return symbol.type
        if isinstance(symbol, RoutineSymbol | BuiltinSymbol):  # named without parentheses: checked as the call it is
            call = ast.Call(e.line, e.col, ast.Name(e.line, e.col, e.ident), [])
            self.bare_values.append((e, call))
            return self.expr(call, expected)
        if isinstance(symbol, TypeSymbol):
            return self.error(e, 4009, f"'{e.ident}' is a type, not a value")
        raise AssertionError(symbol)

    def note_use(self, symbol: VarSymbol, reading: bool) -> None:
        """Remember which tracked places windows read: Gradient of any other is an error."""
        if not has_tracked(symbol.type):
            return
        if self.routine is not None:
            self.routine.touches_tracked = True
            if reading:
                self.routine_reads[self.routine].add(symbol)
        if self.tape_depth > 0 and reading:
            self.window_reads.add(symbol)

    def expr_Field(self, e: ast.Field, expected):
        base = self.expr(e.base)
        if isinstance(base, ErrorType):
            return ERROR
        if not isinstance(base, Record):
            return self.error(e, 4010, f"'{base}' has no fields; '.{e.name}' needs a record")
        t = base.field(e.name)
        if t is None:
            names = [n for n, _ in base.fields]
            hint = difflib.get_close_matches(e.name, names, 1)
            extra = f"; did you mean '{hint[0]}'?" if hint else ""
            which = f"the {base}" if base.anonymous else f"record '{base}'"
            return self.error(e, 3005, f"{which} has no field '{e.name}'{extra}")
        return t

    def expr_Index(self, e: ast.Index, expected):
        base = self.expr(e.base)
        for index in e.indices:
            t = self.expr(index)
            if not isinstance(t, ErrorType) and not residency.needs_host(self, "indexing", index, t):
                return ERROR
            if not isinstance(t, ErrorType) and not (isinstance(plain(t), Scalar) and plain(t).is_integer):
                self.error(index, 4011, f"an index must be an integer, found '{t}'")
                return ERROR
        if isinstance(base, ErrorType):
            return ERROR
        t = base
        remaining = list(e.indices)
        while remaining:
            tracked = is_tracked(t)
            inner = plain(t)
            if isinstance(inner, Array):
                index = remaining.pop(0)
                if index.folded is not None and not inner.is_dynamic and not inner.low <= index.folded <= inner.high:
                    return self.error(index, 6005, f"index {index.folded} is outside the bounds {inner.low}..{inner.high}")
                t = inner.element
            elif isinstance(inner, Tensor) and inner.on_gpu:
                return self.error(e, 7007, "indexing a GPU tensor would read it piece by piece from the host; "
                                           "compute on the device, or index ToHost of it")
            elif isinstance(inner, Tensor):
                count = min(len(remaining), inner.rank)
                taken, remaining = remaining[:count], remaining[count:]
                if not inner.is_dynamic:
                    for index, extent in zip(taken, inner.shape):
                        if index.folded is not None and isinstance(extent, int) and not 0 <= index.folded < extent:
                            return self.error(index, 6005, f"index {index.folded} is outside 0..{extent - 1}")
                if count == inner.rank:
                    t = inner.element
                elif inner.is_dynamic:
                    t = Tensor(inner.element, None, inner.rank - count, inner.on_gpu)
                else:
                    t = inner.with_shape(inner.shape[count:])
                if tracked:
                    t = Tracked(t)
            elif inner == STRING:
                if len(remaining) > 1:
                    return self.error(e, 4012, "a string takes one index")
                remaining.pop()
                t = STRING
            else:
                return self.error(e, 4012, f"a value of type '{t}' cannot be indexed")
        return t

    def expr_TensorLit(self, e: ast.TensorLit, expected):
        element = None
        if isinstance(expected, Tensor):
            element = expected.element
        shape, items = self.literal_shape(e)
        if shape is None:
            return ERROR
        types = [self.expr(item, element) for item in items]
        if any(isinstance(t, ErrorType) for t in types):
            return ERROR
        if element is None:
            element = FLOAT64 if any(plain(t).is_float for t in types if isinstance(plain(t), Scalar)) else INTEGER
        for item, t in zip(items, types):
            if not (isinstance(plain(t), Scalar) and plain(t).is_numeric):
                return self.error(item, 4013, f"a tensor literal holds numbers, found '{t}'")
            self.check_assignable(plain(t), element, item)
        if all(item.folded is not None for item in items):
            e.folded = [item.folded for item in items]
        return Tensor(element, shape)

    def literal_shape(self, e: ast.TensorLit):
        """The shape of a nested literal and its scalar items in row-major order."""
        if all(isinstance(item, ast.TensorLit) for item in e.items):
            inner = [self.literal_shape(item) for item in e.items]
            if any(shape is None for shape, _ in inner):
                return None, []
            first = inner[0][0]
            for item, (shape, _) in zip(e.items, inner):
                if shape != first:
                    self.error(item, 6006, f"the rows of a tensor literal differ in shape: {list(first)} and {list(shape)}")
                    return None, []
            return (len(e.items),) + first, [x for _, items in inner for x in items]
        if any(isinstance(item, ast.TensorLit) for item in e.items):
            self.error(e, 6006, "a tensor literal mixes numbers and rows")
            return None, []
        return (len(e.items),), list(e.items)

    def expr_Unary(self, e: ast.Unary, expected):
        t = self.expr(e.operand, expected)
        if isinstance(t, ErrorType):
            return ERROR
        if e.op == "not":
            if t != BOOLEAN:
                return self.error(e, 4014, f"'not' needs a boolean, found '{t}'")
            if e.operand.folded is not None:
                e.folded = not e.operand.folded
            return BOOLEAN
        inner = plain(t)
        numeric = (isinstance(inner, Scalar) and inner.is_numeric) or (isinstance(inner, Tensor) and inner.element.is_float)
        if not numeric:
            return self.error(e, 4014, f"'{e.op}' needs a number or a float tensor, found '{t}'")
        if e.operand.folded is not None and isinstance(inner, Scalar):
            e.folded = -e.operand.folded if e.op == "-" else e.operand.folded
            if inner.is_integer and e.folded > INTEGER_RANGES["integer"][1]:
                e.folded = None
                return self.error(e, 4023, f"the constant expression overflows a 64-bit integer ({-e.operand.folded})")
        self.note_tracked_op(t)
        return INTEGER if isinstance(inner, Scalar) and inner.is_integer else t

    def note_tracked_op(self, t: Type) -> None:
        if is_tracked(t) and self.routine is not None:
            self.routine.touches_tracked = True

    def expr_Binary(self, e: ast.Binary, expected):
        op = e.op
        sub_expected = expected if op in "+-*/" else None
        lt = self.expr(e.left, sub_expected if not isinstance(expected, Tensor) else None)
        rt = self.expr(e.right, sub_expected if not isinstance(expected, Tensor) else None)
        if isinstance(lt, ErrorType) or isinstance(rt, ErrorType):
            return ERROR
        result = self.binary_type(e, op, lt, rt)
        if not isinstance(result, ErrorType) and e.left.folded is not None and e.right.folded is not None:
            e.folded = self.fold(e, op, e.left.folded, e.right.folded, result)
        if not isinstance(result, ErrorType):
            self.note_tracked_op(result)
        return result

    def binary_type(self, e: ast.Binary, op: str, lt: Type, rt: Type) -> Type:
        """The type of `left op right`, or ERROR once a diagnostic says why not."""
        if lt.__class__ is not Scalar or rt.__class__ is not Scalar:  # two host scalars live nowhere in particular
            placed = self.placed_binary_type(e, op, lt, rt)
            if placed is not None:
                return placed
        lp, rp = plain(lt), plain(rt)
        if isinstance(lp, Tensor) and lp.rank == 0 and isinstance(rp, Tensor) and rp.rank > 0:
            lp = lp.element  # a device scalar scales a device tensor
        if isinstance(rp, Tensor) and rp.rank == 0 and isinstance(lp, Tensor) and lp.rank > 0:
            rp = rp.element
        if op in _LOGICAL:
            if lp != BOOLEAN or rp != BOOLEAN:
                return self.error(e, 4015, f"'{op}' needs booleans, found '{lt}' and '{rt}'")
            return BOOLEAN
        if op in _COMPARISONS:
            return self.comparison_type(e, op, lt, rt, lp, rp)
        if op in ("div", "mod"):
            if not (isinstance(lp, Scalar) and lp.is_integer and isinstance(rp, Scalar) and rp.is_integer):
                return self.error(e, 4017, f"'{op}' needs integers, found '{lt}' and '{rt}'; '/' divides floats")
            if e.right.folded == 0:
                return self.error(e.right, 4018, "division by zero")
            return INTEGER
        tracked = is_tracked(lt) or is_tracked(rt)
        if tracked and any(isinstance(p, Tensor) and p.is_dynamic for p in (lp, rp)):
            return self.error(e, 5109, f"'{op}' cannot join a tracked value with the dynamic tensor '{lp if lp.is_dynamic else rp}'; "
                                       "give it a static shape")
        if isinstance(lp, Scalar) and isinstance(rp, Scalar):
            return self.scalar_arithmetic_type(e, op, lt, rt, lp, rp, tracked)
        if isinstance(lp, Tensor) and isinstance(rp, Scalar) or isinstance(lp, Scalar) and isinstance(rp, Tensor):
            tensor, scalar = (lp, rp) if isinstance(lp, Tensor) else (rp, lp)
            if not scalar.is_numeric or not tensor.element.is_float:
                return self.error(e, 4019, f"cannot apply '{op}' to '{lt}' and '{rt}'")
            if op == "/" and isinstance(lp, Scalar):
                return self.error(e, 4020, "a scalar cannot be divided by a tensor; scale by the reciprocal instead")
            if not self.constants_fit(e, tensor.element):
                return ERROR
            return Tracked(tensor) if tracked else tensor
        if isinstance(lp, Tensor) and isinstance(rp, Tensor):
            return self.tensor_arithmetic_type(e, op, lt, rt, lp, rp, tracked)
        return self.error(e, 4019, f"cannot apply '{op}' to '{lt}' and '{rt}'")

    def placed_binary_type(self, e: ast.Binary, op: str, lt: Type, rt: Type) -> Type | None:
        """What residency decides about `left op right`: ERROR, the type of arithmetic
        between GPU scalars, or None to go on as on the host."""
        if not residency.check_together(self, e, f"'{op}'", [e.left, e.right], [lt, rt]):
            return ERROR
        if (op in _COMPARISONS or op in _LOGICAL) and (residency.on_gpu(lt) or residency.on_gpu(rt)):
            return self.error(e, 7010, f"'{op}' decides on the host; bring the GPU value there first with ToHost")
        for operand, t in ((e.left, lt), (e.right, rt)):
            if residency.on_gpu(t) and not element_of(t).is_float:
                return self.error(operand, 7012, f"{residency.describe(operand)} holds integers on the GPU, where "
                                                 f"they are storage (ids, targets), not numbers to compute with; "
                                                 f"compute on the host and move the result with ToDevice")
        lp, rp = plain(lt), plain(rt)
        if op in "+-*/" and (_device_scalar(lp) or _device_scalar(rp)) and \
                all(isinstance(x, Scalar) or _device_scalar(x) for x in (lp, rp)):
            return self.device_scalar_type(e, op, lt, rt)
        device_scalar_with_tensor = any(_device_scalar(x) for x in (lp, rp)) and \
            any(isinstance(x, Tensor) and x.rank > 0 for x in (lp, rp))
        if device_scalar_with_tensor and (is_tracked(lt) or is_tracked(rt)):
            return self.error(e, 7011, f"'{op}' between a GPU scalar and a GPU tensor does not record on the GPU's "
                                       f"tape yet; use a host number, or compute it outside the window")
        return None

    def comparison_type(self, e: ast.Binary, op: str, lt: Type, rt: Type, lp: Type, rp: Type) -> Type:
        both_numbers = isinstance(lp, Scalar) and isinstance(rp, Scalar) and lp.is_numeric and rp.is_numeric
        both_strings = lp == STRING and rp == STRING
        both_booleans = lp == BOOLEAN and rp == BOOLEAN and op in ("=", "<>")
        if not (both_numbers or both_strings or both_booleans):
            return self.error(e, 4016, f"cannot compare '{lt}' with '{rt}'")
        if both_numbers:  # compared as arithmetic would join them: f = 0.1 with f a float32 is 0.1f
            e.compared_as = self.promote(lp, rp, e.left, e.right)
        return BOOLEAN

    def scalar_arithmetic_type(self, e: ast.Binary, op: str, lt: Type, rt: Type, lp: Scalar, rp: Scalar,
                               tracked: bool) -> Type:
        if op == "+" and lp == STRING and rp == STRING:
            return STRING
        if not (lp.is_numeric and rp.is_numeric):
            return self.error(e, 4019, f"cannot apply '{op}' to '{lt}' and '{rt}'")
        if op == "/" and e.right.folded == 0 and lp.is_integer and rp.is_integer:
            return self.error(e.right, 4018, "division by zero")
        result = self.promote(lp, rp, e.left, e.right)
        if op == "/" and result.is_integer:
            result = FLOAT64
        if not self.constants_fit(e, result):
            return ERROR
        return Tracked(result) if tracked and result.is_float else result

    def tensor_arithmetic_type(self, e: ast.Binary, op: str, lt: Type, rt: Type, lp: Tensor, rp: Tensor,
                               tracked: bool) -> Type:
        if lp.element != rp.element:
            return self.error(e, 4021, f"cannot apply '{op}' to '{lt}' and '{rt}': the element types differ; convert one with {rp.element.name}(...) or {lp.element.name}(...)")
        if not lp.element.is_float:
            return self.error(e, 4022, f"arithmetic on tensors needs float elements, found '{lt}'")
        repeated_left = op in ("+", "-") and 0 < len(shapes.dims(lp)) < len(shapes.dims(rp))
        try:
            if repeated_left:  # the shapes meet with the repeated operand on the right
                result = shapes.elementwise(rp, lp, op)
                self.repeated_first.append(e)
                return Tracked(result) if tracked else result
            if op == "*":
                result = shapes.product(lp, rp)
            elif op == "/":
                return self.error(e, 4020, "'/' between two tensors is not defined; scale by a scalar or use Mul")
            else:
                result = shapes.elementwise(lp, rp, op)
        except shapes.ShapeMismatch as why:
            if op == "-":
                return self.error(e, 6007, f"cannot subtract '{rt}' from '{lt}': {why}")
            verb = "multiply" if op == "*" else "add"
            joiner = "by" if op == "*" else "and"
            return self.error(e, 6007, f"cannot {verb} '{lt}' {joiner} '{rt}': {why}")
        return Tracked(result) if tracked else result

    def constants_fit(self, e: ast.Binary, element: Scalar) -> bool:
        """A constant computed in float32 must not round to infinity there (4030)."""
        for side in (e.left, e.right):
            if element == FLOAT32 and isinstance(side.folded, float) and abs(side.folded) >= FLOAT32_OVERFLOW \
                    and side.folded != float("inf") and side.folded != float("-inf"):
                self.error(side, 4030, f"the value {side.folded} does not fit in 'float32'")
                return False
        return True

    def device_scalar_type(self, e: ast.Binary, op: str, lt: Type, rt: Type) -> Type:
        """Numbers on the GPU join as host numbers do: float32 with float64 gives float64,
        and a constant takes the other side's type."""
        left, right = (element_of(t) for t in (lt, rt))
        if not left.is_numeric or not right.is_numeric:
            return self.error(e, 4019, f"cannot apply '{op}' to '{lt}' and '{rt}'")
        element = self.promote(left, right, e.left, e.right)
        if element.is_integer:
            element = FLOAT64
        result = Tensor(element, (), 0, True)
        return Tracked(result) if is_tracked(lt) or is_tracked(rt) else result

    def promote(self, a: Scalar, b: Scalar, ea: ast.Expr, eb: ast.Expr) -> Scalar:
        """Mixed arithmetic: integers become floats; a constant takes the other side's float type."""
        if a.is_integer and b.is_integer:
            return INTEGER
        if a.is_float and b.is_float:
            if a == b:
                return a
            if ea.folded is not None and a == FLOAT64:  # a float64 constant adapts to float32
                return b
            if eb.folded is not None and b == FLOAT64:
                return a
            return FLOAT64
        return a if a.is_float else b

    def fold(self, e, op, a, b, result):
        if result == FLOAT32 and op in "+-*/":  # float32 arithmetic: its operands and its result are float32
            a, b = to_float32(a), to_float32(b)
        try:
            if op == "+":
                value = a + b
            elif op == "-":
                value = a - b
            elif op == "*":
                value = a * b
            elif op == "/":
                value = a / b
            elif op == "div":
                value = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
            elif op == "mod":
                value = a - b * (abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1))
            elif op == "and":
                value = a and b
            elif op == "or":
                value = a or b
            else:
                value = {"=": a == b, "<>": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
        except (ZeroDivisionError, TypeError, OverflowError):
            return None
        if result == FLOAT32 and isinstance(value, float):
            value = to_float32(value)
        if isinstance(result, Scalar) and result.is_integer and isinstance(value, int):
            low, high = INTEGER_RANGES["integer"]
            if not low <= value <= high:
                self.error(e, 4023, f"the constant expression overflows a 64-bit integer ({value})")
                return None
        return value

    # ============================================================ calls

    def expr_Call(self, e: ast.Call, expected, statement: bool) -> Type:
        if not isinstance(e.callee, ast.Name):
            self.expr(e.callee)
            return self.error(e, 4024, "only a named procedure or function can be called")
        name = e.callee.ident
        symbol = self.scope.lookup(name)
        e.callee.symbol = symbol
        e.target = symbol
        if symbol is None:
            for arg in e.args:
                self.expr(arg.value if isinstance(arg, ast.FormatArg) else arg)
            return self.error(e.callee, 3001, f"unknown name '{name}'" + self.suggest(name))
        if isinstance(symbol, BuiltinSymbol):
            t = self.builtin_call(e, ops.OPS[name], expected)
        elif isinstance(symbol, RoutineSymbol):
            t = self.routine_call(e, symbol)
        elif isinstance(symbol, TypeSymbol):
            t = check_conversion(self.check_context, e, symbol.type)
        else:
            for arg in e.args:
                self.expr(arg)
            return self.error(e.callee, 4025, f"'{name}' is not a procedure or function")
        if t is VOID and not statement:
            return self.error(e, 4026, f"'{name}' is a procedure and gives no value")
        return t

    def builtin_call(self, e: ast.Call, op: ops.Op, expected) -> Type:
        """The op's own check, then the rule the registry keeps for every op: one the GPU
        does not run takes no GPU operand (7005), so no call passes here that cannot lower."""
        reported = len(self.reporter.diagnostics)
        t = op.check(self.check_context, e, expected)
        if op.device is None and len(self.reporter.diagnostics) == reported:  # the op's own refusal comes first
            for arg in e.args:
                place = arg.place if isinstance(arg, ast.AddressArg) else arg
                if place.ty is not None and not residency.needs_host(self, f"'{op.name}'", place, place.ty):
                    return ERROR
        return t

    def routine_call(self, e: ast.Call, routine: RoutineSymbol) -> Type:
        if self.routine is not None:
            self.routine.calls.add(routine)
            if routine.touches_tracked or routine.has_tape:
                self.routine.touches_tracked = True
        if self.tape_depth > 0:
            self.window_calls.append((routine, e.pos))
        if len(e.args) != len(routine.params):
            for arg in e.args:
                self.expr(arg.place if isinstance(arg, ast.AddressArg) else arg)
            return self.error(e, 4027, f"'{routine.name}' takes {_count(len(routine.params), 'argument')}, found {len(e.args)}")
        if any(p.by_address for p in routine.params):
            self.calls_lending.append((e, routine))
        binding: dict[str, object] = {}
        ok = True
        for arg, param in zip(e.args, routine.params):
            if isinstance(param.type, ErrorType):  # reported at the declaration already
                self.expr(arg.place if isinstance(arg, ast.AddressArg) else arg)
                ok = False
                continue
            if param.by_address:
                t = self.address_arg(arg, f"parameter '{param.name}'")
            else:
                if isinstance(arg, ast.AddressArg):
                    self.expr(arg.place)
                    self.error(arg, 5007, f"parameter '{param.name}' takes a value; remove 'address'")
                    ok = False
                    continue
                t = self.expr(arg, plain(shapes_free(param.type)))
            if isinstance(t, ErrorType):
                ok = False
                continue
            try:
                fits = shapes.unify(param.type, t, binding)
            except shapes.ShapeMismatch as why:
                self.error(arg, 6008, f"argument '{param.name}' of '{routine.name}' has type '{t}': {why}")
                ok = False
                continue
            concrete = substitute(param.type, binding)
            if param.by_address:
                if residency.on_gpu(t) != residency.on_gpu(concrete):
                    self.error(arg, 7003, f"parameter '{param.name}' of '{routine.name}' lends a place "
                                          f"{residency.place_word(concrete)}, found one {residency.place_word(t)}")
                    ok = False
                elif not fits or plain(concrete) != plain(t):
                    self.error(arg, 4028, f"parameter '{param.name}' of '{routine.name}' lends '{concrete}', found '{t}'")
                    ok = False
            elif not (fits and self.assignable(t, concrete, arg)):
                if residency.on_gpu(t) != residency.on_gpu(concrete) and not isinstance(plain(t), Scalar):
                    self.error(arg, 7003, f"argument '{param.name}' of '{routine.name}' is {residency.place_word(concrete)}, "
                                          f"found '{t}' {residency.place_word(t)}")
                    ok = False
                    continue
                code = 6010 if isinstance(plain(t), Tensor) and isinstance(plain(concrete), Tensor) else 4028
                self.error(arg, code, f"argument '{param.name}' of '{routine.name}' must be '{concrete}', found '{t}'")
                ok = False
            else:
                self.note_untracking(arg, t, concrete, f"parameter '{param.name}' of '{routine.name}'")
        e.binding = binding
        if routine.result is None:
            return VOID
        return substitute(routine.result, binding) if ok else ERROR

    # ============================================================ assignability

    def assignable(self, source: Type, target: Type, e: ast.Expr) -> bool:
        s, t = plain(source), plain(target)
        if s == t:
            return True
        if isinstance(s, Scalar) and isinstance(t, Scalar):
            if t == FLOAT32 and isinstance(e.folded, int | float) and not isinstance(e.folded, bool):
                return abs(e.folded) < FLOAT32_OVERFLOW  # a constant that would round to infinity does not fit
            if t.is_float and s.is_numeric:
                return True
            if t.is_integer and s.is_integer:
                if e.folded is not None and isinstance(e.folded, int):
                    low, high = INTEGER_RANGES[t.name]
                    return low <= e.folded <= high
                return True
            return False
        if isinstance(s, Tensor) and isinstance(t, Tensor):
            if s.on_gpu != t.on_gpu:
                return False
            if s.element != t.element and not (e.folded is not None and isinstance(e, ast.TensorLit)):
                return False
            if s.rank != t.rank:
                return False
            if s.is_dynamic or t.is_dynamic:
                return True
            return s.shape == t.shape
        return False

    def check_assignable(self, source: Type, target: Type, e: ast.Expr) -> None:
        if isinstance(source, ErrorType) or isinstance(target, ErrorType):
            return
        if self.assignable(source, target, e):
            return
        s, t = plain(source), plain(target)
        if residency.on_gpu(source) != residency.on_gpu(target):
            verb = "ToDevice" if residency.on_gpu(target) else "ToHost"
            self.error(e, 7004, f"'{source}' lives {residency.place_word(source)} and '{target}' "
                                f"{residency.place_word(target)}; cross with {verb}({residency.argument_text(e)})")
        elif isinstance(s, Tensor) and isinstance(t, Tensor) and s.element == t.element and s.rank == t.rank:
            self.error(e, 6010, f"cannot assign '{source}' to '{target}': the shapes differ")
        elif isinstance(s, Scalar) and s.is_float and isinstance(t, Scalar) and t.is_integer:
            self.error(e, 4029, f"cannot assign '{source}' to '{target}': convert with Trunc or Round")
        elif isinstance(s, Scalar) and s.is_numeric and isinstance(t, Scalar) and t.is_numeric:
            self.error(e, 4030, f"the value {e.folded} does not fit in '{t}'")
        else:
            self.error(e, 4031, f"cannot assign '{source}' to '{target}'")

    # ============================================================ helpers

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


# ---------------------------------------------------------------- free helpers


def _not_addressable(t: Type) -> str:
    return f"data type '{t}' cannot be used in memory operation 'address of' (requires addressable)"


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def is_dynamic_row(target: ast.Expr) -> bool:
    """m[i] with m a dynamic matrix: a row that is storage inside m, not a value of its own."""
    if not isinstance(target, ast.Index):
        return False
    t, left = plain(target.base.ty), len(target.indices)
    while left and isinstance(t, Array):
        t, left = plain(t.element), left - 1
    return isinstance(t, Tensor) and t.is_dynamic and 0 < left < t.rank


def to_float32(x: float) -> float:
    """x rounded to the nearest float32 (infinity past its range), as a Python float."""
    try:
        return struct.unpack("f", struct.pack("f", x))[0]
    except OverflowError:  # struct rounds as a C cast does, and refuses what rounds to infinity
        return math.copysign(math.inf, x)


# The method that checks each kind of node: stmt_If checks an ast.If.
_STMT_CHECKS = {getattr(ast, name[5:]): method for name, method in vars(Analyzer).items() if name.startswith("stmt_")}
_EXPR_CHECKS = {getattr(ast, name[5:]): method for name, method in vars(Analyzer).items() if name.startswith("expr_")}

_LOGICAL = frozenset(["and", "or"])
_COMPARISONS = frozenset(["=", "<>", "<", "<=", ">", ">="])


def _device_scalar(t: Type) -> bool:
    return isinstance(t, Tensor) and t.rank == 0


def _dynamic_storage_roots(place: ast.Expr) -> set:
    """The variable whose dynamic storage holds the place, when an index reaches into some."""
    e = place
    while isinstance(e, ast.Field | ast.Index):
        if isinstance(e, ast.Index) and _indexes_dynamic_storage(e):
            root = root_name(place)
            return {root.symbol} if root is not None else set()
        e = e.base
    return set()


def _indexes_dynamic_storage(e: ast.Index) -> bool:
    t = plain(e.base.ty)
    for _ in e.indices:
        if isinstance(t, Array | Tensor) and t.is_dynamic:
            return True
        if not isinstance(t, Array):
            return False
        t = plain(t.element)
    return False


def root_name(e: ast.Expr) -> ast.Name | None:
    while isinstance(e, ast.Field | ast.Index):
        e = e.base
    return e if isinstance(e, ast.Name) else None


def _indexes_string(e: ast.Expr) -> bool:
    return isinstance(e, ast.Index) and plain(e.base.ty) == STRING


def _writes_part_of_tracked(e: ast.Expr) -> bool:
    return isinstance(e, ast.Index) and is_tracked(e.base.ty)


def _children(e: ast.Expr):
    for f in fields(e):
        value = getattr(e, f.name)
        if isinstance(value, ast.Expr):
            yield value
        elif isinstance(value, list):
            yield from (v for v in value if isinstance(v, ast.Expr))


def shapes_free(t: Type) -> Type | None:
    """The expected type to hand a literal argument: only a fully known shape helps."""
    inner = plain(t)
    if isinstance(inner, Tensor) and inner.shape is not None and not inner.is_concrete:
        return Tensor(inner.element, None, inner.rank)
    return inner
