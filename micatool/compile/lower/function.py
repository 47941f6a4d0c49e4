"""One C function (the main body, or one instance of a routine), lowered by parts
composed here: the emitter, which owns the lines, temporaries and scopes;
statements; expressions; the tape; the device. Each part reaches the others
through this object; the vocabulary's lowerings (ops/) get the narrow view of
it, op_context (ops.lowering.LowerContext), as `f`.
"""

from __future__ import annotations

from .. import ast
from ..analyzer import Analysis, UnitAnalysis
from ..c_types import c_name, c_symbol
from ..cvalue import CValue
from ..symbols import RoutineSymbol, VarSymbol
from ..types import STREAM, Type, needs_drop, plain, storage_bytes, substitute
from ..ops.lowering import LowerContext
from .device import Device
from .emitter import Emitter
from .expressions import Expressions, passed_by_pointer
from .lines import Line, function
from .statements import Statements
from .tape import Tape
from .tasks import Tasks


class FunctionLowering:
    def __init__(self, lowering, routine: RoutineSymbol | None, binding: dict, recording: bool):
        self.lowering = lowering
        self.types = lowering.types
        self.routine = routine
        self.binding = binding
        self.recording = recording  # the __tape instance, run inside a window
        self.uses_done = False
        self.copied_params: set[VarSymbol] = set()
        self.closing: list[VarSymbol] = []  # the main body's: the stream variables closed as it ends
        self.discarded: ast.Call | None = None
        self.line_now = routine.decl.pos.line if routine else 0
        # the parts, each reaching the others through this function
        self.emit = Emitter(self.ctype)
        self.statements = Statements(self)
        self.exprs = Expressions(self)
        self.tape = Tape(self)
        self.device = Device(self)
        self.tasks = Tasks(self)
        self.op_context = LowerContext(self)  # what an op's lowering sees of this function

    def concrete(self, t: Type) -> Type:
        return substitute(t, self.binding) if self.binding else t

    def ctype(self, t: Type) -> str:
        return self.types.name(self.concrete(t))

    def program_function(self, analysis: Analysis) -> list[Line]:
        """mica_program(): the units' initializations, the program's variables' initial
        values, its body, and as it ends the closing of its streams."""
        program = analysis.program
        self.emit.at = program.pos.line
        for unit in analysis.units:  # each after the units it uses
            self.emit.line(f"{initialization_name(unit)}();")
        for var in analysis.global_vars:
            if var.init is not None:
                self.initialize(var)
        # the program's streams close as it ends, as a routine's do as it returns, then its units'
        self.closing = [v for unit in reversed(analysis.units) for v in unit.global_vars if v.type == STREAM]
        self.closing[:0] = [v for v in analysis.global_vars if v.type == STREAM]
        self.statements.stmts(program.body)
        epilogue = [self.types.drop(var.type, c_symbol(var)) for var in self.closing]
        return function("void mica_program(void)", program.pos.line, [], self.body(), epilogue)

    def initialization_function(self, unit: UnitAnalysis) -> tuple[str, list[Line]]:
        """A unit's initialization, as a C function the program calls first: its
        variables' initial values, then its initialization section."""
        self.emit.at = unit.tree.pos.line
        for var in unit.global_vars:
            if var.init is not None:
                self.initialize(var)
        self.statements.stmts(unit.tree.initialization)
        prototype = f"static void {initialization_name(unit)}(void)"
        return prototype, function(prototype, unit.tree.pos.line, [], self.body(), [])

    def body(self) -> list[Line]:
        """The lowered statements, and the label an exit jumps to when one does."""
        return self.emit.lines + ([Line(0, "mica_done:;", None)] if self.uses_done else [])

    def initialize(self, var: VarSymbol) -> None:
        self.statements.at_line(var.init.pos.line)
        with self.emit.statement_scope():
            target = CValue(c_symbol(var), self.concrete(var.type), lvalue=True)
            self.statements.store(target, self.exprs.value(var.init, plain(target.type)), var.init.pos.line)

    def routine_function(self, name: str) -> tuple[str, list[Line]]:
        routine = self.routine
        self.emit.at = routine.decl.pos.line
        params = [self.param_decl(p) for p in routine.params]
        result = self.ctype(routine.result) if routine.result is not None else "void"
        if routine.result_var is not None and self.tape.holds_node(routine.result_var):
            result = "mica_node *"
        prototype = f"static {result} {name}({', '.join(params) or 'void'})"
        prologue = []
        for p in routine.params:
            if p.assigned and not p.by_address and (passed_by_pointer(p.type) or needs_drop(p.type)):
                source = f"*{c_name(p.name)}__in" if passed_by_pointer(p.type) else f"{c_name(p.name)}__in"
                t = self.concrete(p.type)
                copy = self.types.copy(t, source) if needs_drop(t) else source
                prologue.append(f"{self.ctype(t)} {c_name(p.name)} = {copy};")
                self.copied_params.add(p)
        if routine.result_var is not None:
            zero = "NULL" if self.tape.holds_node(routine.result_var) else self.emit.zero(routine.result)
            prologue.append(f"{result} result = {zero};")
        for local in routine.locals:
            prologue.append(f"{self.ctype(local.type)} {c_name(local.name)} = {self.emit.zero(local.type)};")
        for local in routine.locals:
            if local.init is not None:
                self.initialize(local)
        self.statements.stmts(routine.decl.body)
        frame = self.emit.frame_bytes + sum(storage_bytes(self.concrete(v.type)) for v in routine.locals) + \
            sum(storage_bytes(self.concrete(p.type)) for p in self.copied_params) + \
            (storage_bytes(self.concrete(routine.result)) if routine.result is not None else 0)
        prologue.insert(0, f"mica_enter({frame});")
        # the caller's statement goes on after the call: its traps name its own line
        prologue.insert(0, "int mica_caller_line = mica_line;")
        epilogue = [self.types.drop(self.concrete(v.type), c_name(v.name))
                    for v in routine.locals if needs_drop(v.type)]
        epilogue += [self.types.drop(self.concrete(p.type), c_name(p.name))
                     for p in self.copied_params if needs_drop(p.type)]
        epilogue.append("mica_line = mica_caller_line;")
        if routine.result_var is not None:
            epilogue.append("return result;")
        return prototype, function(prototype, routine.decl.pos.line, prologue, self.body(), epilogue)

    def signature(self) -> str:
        """The routine as a comment above its C function names it, with its shape binding."""
        bound = ", ".join(f"{k} = {v}" for k, v in self.binding.items())
        return f"{self.routine.decl.kind} {self.routine.name}" + (f" with {bound}" if bound else "")

    def param_decl(self, p: VarSymbol) -> str:
        t = self.concrete(p.type)
        ct = self.ctype(t)
        name = c_name(p.name)
        if self.tape.holds_node(p):
            return f"mica_node *{name}"
        if p.by_address:
            return f"{ct} *{name}"
        if p.assigned and (passed_by_pointer(t) or needs_drop(t)):
            name += "__in"
        if passed_by_pointer(t):
            return f"const {ct} *{name}"
        return f"{ct} {name}"


def initialization_name(unit: UnitAnalysis) -> str:
    return f"{c_name(unit.tree.name)}__initialization"
