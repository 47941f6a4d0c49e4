"""Lowering: desugared Analysis -> CProgram (readable C that includes
runtime_c/mica.h, the PTX of the kernels it launches, and whether it uses the GPU).

The program's body becomes mica_program(); each routine becomes one C function
per shape binding it is called with (Affine__2x3), found by a worklist from
the main body. Static shapes become compile-time constants in the C types.
Statements lower here; expressions in lower_expr.py; builtins in
lower_builtins.py; tracked values and tape windows in lower_tape.py.

Values that own heap storage (strings, dynamic tensors and arrays) follow one
discipline: a fresh value is moved into the place it is assigned to; a
temporary that nobody takes is dropped at the end of its statement; locals are
dropped when their routine returns.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources

import jinja2

from .. import __version__
from . import ast
from .analyzer import Analysis, is_dynamic_row
from .ctypes import SUFFIX, CTypes, c_name
from .cprogram import CProgram
from .cvalue import CValue
from .lower_expr import ExprLowering, balanced, passed_by_pointer
from .lower_device import DeviceLowering, device_type
from .lower_tape import TapeLowering
from .symbols import RoutineSymbol, VarSymbol
from .types import (INTEGER, INTEGER_RANGES, Record, Scalar, Tensor, Tracked, Type, has_tracked, needs_drop, plain,
                    storage_bytes, substitute)

_templates = jinja2.Environment(
    loader=jinja2.FunctionLoader(lambda name: resources.files(__package__).joinpath("templates", name).read_text()),
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=False,
    undefined=jinja2.StrictUndefined,
)


def lower(analysis: Analysis) -> CProgram:
    return Lowering(analysis).render()


def bare(text: str) -> str:
    """A condition without the parentheses its own expression wrapped it in."""
    if text.startswith("(") and text.endswith(")") and balanced(text[1:-1]):
        return text[1:-1]
    return text


def c_string_literal(text: str) -> str:
    out = []
    for byte in text.encode("utf-8", "surrogateescape"):  # a file name's bytes, whatever they are
        char = chr(byte)
        if char in '"\\':
            out.append("\\" + char)
        elif 32 <= byte < 127 and char != "?":
            out.append(char)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


class Lowering:
    """The whole program: collects types, routine instances and the main body."""

    def __init__(self, analysis: Analysis):
        self.analysis = analysis
        self.types = CTypes()
        self.instances: dict[tuple, str] = {}
        self.pending: list[tuple[RoutineSymbol, dict, str, bool]] = []
        self.prototypes: list[str] = []
        self.functions: list[str] = []
        self.kernels: set[str] = set()  # the GPU kernels the program launches

    def instance(self, routine: RoutineSymbol, binding: dict, recording: bool = False) -> str:
        """The C name of routine for one shape binding, queued for lowering on first use."""
        key = (routine, tuple(sorted(binding.items())), recording)
        if key not in self.instances:
            name = c_name(routine.name)
            if routine.shape_vars:
                name += "__" + "x".join(str(binding[v]) for v in routine.shape_vars)
            if recording:
                name += "__tape"
            self.instances[key] = name
            self.pending.append((routine, dict(binding), name, recording))
        return self.instances[key]

    def render(self) -> CProgram:
        main = FunctionLowering(self, None, {}, recording=False)
        main_body = main.program_body(self.analysis)
        while self.pending:
            routine, binding, name, recording = self.pending.pop(0)
            prototype, text = FunctionLowering(self, routine, binding, recording).routine_text(name)
            self.prototypes.append(prototype)
            self.functions.append(text)
        globals_ = [f"{self.types.name(v.type)} {c_name(v.name)}" for v in self.analysis.global_vars]
        source_name = self.analysis.source.name.rsplit("/", 1)[-1]
        kernels = tuple(sorted(self.kernels))
        module = ""
        if kernels:
            from . import ptx  # its templates are read only for programs that launch kernels

            module = ptx.render(kernels)
        ptx_lines = [c_string_literal(line + "\n") for line in module.splitlines()] if self.types.uses_gpu else []
        c = _templates.get_template("program.c.j2").render(
            gpu=self.types.uses_gpu,
            ptx_lines=ptx_lines or ['""'],
            version=__version__,
            source_name=source_name.encode("utf-8", "surrogateescape").decode("utf-8", "replace").replace("*/", "* /"),
            source_name_c=c_string_literal(source_name),
            definitions=self.types.definitions,
            helpers=self.types.helpers,
            globals=globals_,
            prototypes=self.prototypes,
            functions=self.functions,
            main_body=main_body,
        )
        return CProgram(c, module, self.types.uses_gpu, kernels)


@dataclass
class Loop:
    next_label: str
    window_here: bool  # the loop runs inside this function's own tape window
    continued: bool = False


class FunctionLowering(ExprLowering, TapeLowering, DeviceLowering):
    """One C function: the main body or one instance of a routine."""

    def __init__(self, lowering: Lowering, routine: RoutineSymbol | None, binding: dict, recording: bool):
        self.lowering = lowering
        self.types = lowering.types
        self.routine = routine
        self.binding = binding
        self.recording = recording  # the __tape instance, run inside a window
        self.lines: list[tuple[int, str]] = []
        self.depth = 1
        self.drops: list[str] = []
        self.declared = False
        self.counter = 0
        self.loops: list[Loop] = []
        self.uses_done = False
        self.in_window = recording  # tracked operations record on the tape
        self.window_here = False  # inside a window this function opened
        self.copied_params: set[VarSymbol] = set()
        self.discarded: ast.Call | None = None
        self.line_now = routine.decl.pos.line if routine else 0
        self.frame_bytes = 0  # the temporaries' storage, for the routine's stack check

    # ============================================================ output

    def line(self, text: str) -> None:
        self.lines.append((self.depth, text))

    def fresh(self, prefix: str = "mica_t") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def declare(self, t: Type, init: str | None = None) -> str:
        """A temporary C variable of Mica type t, initialised or zeroed."""
        name = self.fresh()
        self.line(f"{self.ctype(t)} {name} = {init if init is not None else self.zero(t)};")
        self.declared = True
        self.frame_bytes += storage_bytes(t)
        return name

    def declare_uninitialized(self, t: Type) -> str:
        """A temporary that a kernel is about to fill completely."""
        name = self.fresh()
        self.line(f"{self.ctype(t)} {name};")
        self.declared = True
        self.frame_bytes += storage_bytes(t)
        return name

    def zero(self, t: Type) -> str:
        """C initializer of a zero value: scalars are numbers, the rest (tracked scalars too) structs."""
        return "0" if isinstance(t, Scalar) and t.name != "string" else "{0}"

    def concrete(self, t: Type) -> Type:
        return substitute(t, self.binding) if self.binding else t

    def ctype(self, t: Type) -> str:
        return self.types.name(self.concrete(t))

    def render_lines(self, lines) -> str:
        return "\n".join("    " * depth + text for depth, text in lines)

    @contextmanager
    def statement_scope(self):
        """Temporaries of one statement live in a C block and are dropped at its end."""
        outer = (self.lines, self.drops, self.declared)
        self.lines, self.drops, self.declared = [], [], False
        try:
            yield
        finally:
            inner, drops, declared = self.lines, self.drops, self.declared
            self.lines, self.drops, self.declared = outer
            if declared or drops:
                self.line("{")
                self.lines.extend((depth + 1, text) for depth, text in inner)
                self.lines.extend((self.depth + 1, d) for d in drops)
                self.line("}")
            else:
                self.lines.extend(inner)

    @contextmanager
    def indented(self):
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

    def condition(self, e: ast.Expr) -> str:
        """C text of a condition. When it needs temporaries, they are computed and
        released before the branch, so no exit or break can skip their drops."""
        outer = (self.lines, self.drops, self.declared)
        self.lines, self.drops, self.declared = [], [], False
        text = self.value(e).text
        inner, drops, declared = self.lines, self.drops, self.declared
        self.lines, self.drops, self.declared = outer
        if not (declared or drops):
            self.lines.extend(inner)
            return text
        flag = self.fresh()
        self.line(f"bool {flag};")
        self.line("{")
        self.lines.extend((depth + 1, t) for depth, t in inner)
        self.lines.append((self.depth + 1, f"{flag} = {text};"))
        self.lines.extend((self.depth + 1, d) for d in drops)
        self.line("}")
        return flag

    # ============================================================ functions

    def program_body(self, analysis: Analysis) -> str:
        for var in analysis.global_vars:
            if var.init is not None:
                self.initialize(var)
        self.stmts(analysis.program.body)
        return self.render_lines(self.lines)

    def initialize(self, var: VarSymbol) -> None:
        self.at_line(var.init.pos.line)
        with self.statement_scope():
            target = CValue(c_name(var.name), self.concrete(var.type), lvalue=True)
            self.store(target, self.value(var.init, plain(target.type)), var.init.pos.line)

    def routine_text(self, name: str) -> tuple[str, str]:
        routine = self.routine
        params = [self.param_decl(p) for p in routine.params]
        result = self.ctype(routine.result) if routine.result is not None else "void"
        if routine.result_var is not None and self.holds_node(routine.result_var):
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
            zero = "NULL" if self.holds_node(routine.result_var) else self.zero(routine.result)
            prologue.append(f"{result} result = {zero};")
        for local in routine.locals:
            prologue.append(f"{self.ctype(local.type)} {c_name(local.name)} = {self.zero(local.type)};")
        for local in routine.locals:
            if local.init is not None:
                self.initialize(local)
        self.stmts(routine.decl.body)
        frame = self.frame_bytes + sum(storage_bytes(self.concrete(v.type)) for v in routine.locals) + \
            sum(storage_bytes(self.concrete(p.type)) for p in self.copied_params) + \
            (storage_bytes(self.concrete(routine.result)) if routine.result is not None else 0)
        prologue.insert(0, f"mica_enter({frame});")
        # the caller's statement goes on after the call: its traps name its own line
        prologue.insert(0, "int mica_caller_line = mica_line;")
        epilogue = [self.types.drop(self.concrete(v.type), c_name(v.name)) for v in routine.locals if needs_drop(v.type)]
        epilogue += [self.types.drop(self.concrete(p.type), c_name(p.name)) for p in self.copied_params if needs_drop(p.type)]
        epilogue.append("mica_line = mica_caller_line;")
        if routine.result_var is not None:
            epilogue.append("return result;")
        signature = f"{routine.decl.kind} {routine.name}" + (
            " with " + ", ".join(f"{k} = {v}" for k, v in self.binding.items()) if self.binding else ""
        )
        text = _templates.get_template("routine.c.j2").render(
            signature=signature,
            prototype=prototype,
            prologue=prologue,
            body=self.render_lines(self.lines),
            needs_done_label=self.uses_done,
            epilogue=epilogue,
        )
        return prototype, text

    def param_decl(self, p: VarSymbol) -> str:
        t = self.concrete(p.type)
        ct = self.ctype(t)
        name = c_name(p.name)
        if self.holds_node(p):
            return f"mica_node *{name}"
        if p.by_address:
            return f"{ct} *{name}"
        if p.assigned and (passed_by_pointer(t) or needs_drop(t)):
            name += "__in"
        if passed_by_pointer(t):
            return f"const {ct} *{name}"
        return f"{ct} {name}"

    # ============================================================ statements

    def stmts(self, body: list[ast.Stmt]) -> None:
        for s in body:
            self.stmt(s)

    def stmt(self, s: ast.Stmt) -> None:
        self.line_now = s.pos.line  # where device operations that name no line of their own report faults
        if not isinstance(s, (ast.Compound, ast.Empty, ast.While, ast.Repeat)):  # loops set it at each test
            self.at_line(s.pos.line)
        getattr(self, "stmt_" + type(s).__name__)(s)

    def at_line(self, line: int) -> None:
        """The running statement's line, for the runtime's traps that are given none (mica.h, mica_line)."""
        self.line(f"mica_line = {line};")

    def stmt_Empty(self, s):
        pass

    def stmt_Compound(self, s: ast.Compound):
        self.stmts(s.body)

    def stmt_Assign(self, s: ast.Assign):
        with self.statement_scope():
            target_type = self.concrete(s.target.ty)
            if self.in_window and isinstance(target_type, Tracked):
                self.record_assign(s)
                return
            if self.in_window and has_tracked(target_type):
                self.copy_through_the_tape(s.target, s.value, target_type, s.pos)
                return
            if is_dynamic_row(s.target):
                self.store_dynamic_row(s.target, s.value, s.pos.line)
                return
            value = self.value(s.value, plain(target_type))
            target = self.place(s.target)
            self.store(target, value, s.pos.line)

    def copy_through_the_tape(self, target: ast.Expr, value: ast.Expr, t: Type, pos) -> None:
        """a := b for records or arrays holding tracked values, inside a window: part by part,
        so each tracked part reads b's node and writes a's, as `a.w := b.w` does."""
        if isinstance(t, Tracked) or not has_tracked(t):
            with self.statement_scope():
                self.stmt_Assign(ast.Assign(pos.line, pos.col, target, value))
            return
        if isinstance(t, Record):
            parts = [(ast.Field(pos.line, pos.col, target, name, ty=ft), ast.Field(pos.line, pos.col, value, name, ty=ft), ft) for name, ft in t.fields]
        else:
            parts = [(ast.Index(pos.line, pos.col, target, [index], ty=t.element), ast.Index(pos.line, pos.col, value, [index], ty=t.element), t.element)
                     for index in (ast.IntLit(pos.line, pos.col, i, ty=INTEGER, folded=i) for i in range(t.low, t.high + 1))]
        for part_target, part_value, part_type in parts:
            self.copy_through_the_tape(part_target, part_value, self.concrete(part_type), pos)

    def store_dynamic_row(self, target: ast.Index, value: ast.Expr, line: int) -> None:
        """m[i] := v for a dynamic matrix m: v's elements, as many as m has columns, into row i."""
        leading = target.base if len(target.indices) == 1 else ast.Index(target.line, target.col, target.base, target.indices[:-1])
        matrix = self.place(leading)
        t = plain(matrix.type)
        row = self.untracked(self.value(value, Tensor(t.element, None, 1)))
        index = self.value(target.indices[-1]).text
        self.line(f"mica_dyn_set_row_{SUFFIX[t.element]}(&{matrix.text}, {index}, {self.data(row)}, {self.count(row)}, {line});")

    def store(self, target: CValue, value: CValue, line: int) -> None:
        """target := value, with conversion, copy or move, and re-adoption of tracked places."""
        t = self.concrete(target.type)
        if isinstance(t, Tracked) and device_type(t):  # the place gets its own copy of the storage
            self.device_store(CValue(f"{target.text}.v", t.inner, lvalue=True), self.untracked(value), line)
            self.line(f"mica_tag_adopt(&{target.text}.tag);")
            return
        if isinstance(t, Tracked):
            self.line(f"{target.text}.v = {self.convert(value, t.inner, line).text};")
            self.line(f"mica_tag_adopt(&{target.text}.tag);")
            return
        if isinstance(value.type, Tracked):
            value = self.untracked(value)
        if isinstance(t, Tensor) and t.on_gpu:
            self.device_store(target, value, line)
            return
        converted = self.convert(value, t, line)
        if not needs_drop(t):
            self.line(f"{target.text} = {converted.text};")
        elif converted.owned:
            self.line(self.types.move(t, target.text, converted.text))
        else:
            self.line(self.types.assign(t, target.text, converted.text))

    def stmt_CallStmt(self, s: ast.CallStmt):
        with self.statement_scope():
            self.discarded = s.call  # a Load whose answer nobody reads traps when refused
            result = self.call(s.call)
            if result is not None and result.text:
                if result.owned:
                    self.line(self.types.drop(result.type, self.materialize(result).text))
                elif not result.lvalue:
                    self.line(f"(void){result.text};")

    def stmt_If(self, s: ast.If):
        cond = self.condition(s.cond)
        self.line(f"if ({bare(cond)}) {{")
        with self.indented():
            self.stmt(s.then)
        if s.otherwise is not None:
            self.line("} else {")
            with self.indented():
                self.stmt(s.otherwise)
        self.line("}")

    def stmt_While(self, s: ast.While):
        loop = Loop(self.fresh("mica_next"), self.window_here)
        self.line("for (;;) {")
        with self.indented():
            self.at_line(s.pos.line)
            cond = self.condition(s.cond)
            self.line(f"if (!({bare(cond)})) break;")
            self.loop_body(loop, lambda: self.stmt(s.body))
        self.line("}")

    def stmt_Repeat(self, s: ast.Repeat):
        loop = Loop(self.fresh("mica_next"), self.window_here)
        self.line("for (;;) {")
        with self.indented():
            self.loop_body(loop, lambda: self.stmts(s.body))
            self.at_line(s.cond.pos.line)
            cond = self.condition(s.cond)
            self.line(f"if ({bare(cond)}) break;")
        self.line("}")

    def loop_body(self, loop: Loop, body) -> None:
        self.loops.append(loop)
        body()
        self.loops.pop()
        if loop.continued:
            self.line(f"{loop.next_label}:;")

    def stmt_For(self, s: ast.For):
        var = self.place(s.var)
        low, high, count = self.fresh(), self.fresh(), self.fresh()
        var_type = plain(self.concrete(s.var.ty))
        self.line("{")
        with self.indented():
            start = self.bound(s.start, var_type)
            stop = self.bound(s.stop, var_type)
            self.line(f"int64_t {low} = {start}, {high} = {stop};")
            compare, step = (">=", "--") if s.downward else ("<=", "++")
            self.line(f"if ({low} {compare} {high}) {{")
            with self.indented():
                # the loop counts on its own: a routine writing the variable cannot keep it going
                self.line(f"for (int64_t {count} = {low};; {count}{step}) {{")
                with self.indented():
                    self.line(f"{var.text} = {count};")
                    loop = Loop(self.fresh("mica_next"), self.window_here)
                    self.loop_body(loop, lambda: self.stmt(s.body))
                    self.line(f"if ({count} == {high}) break;")
                self.line("}")
            self.line("}")
        self.line("}")

    def bound(self, e: ast.Expr, var_type: Scalar) -> str:
        """A loop bound, checked to fit the loop variable's type."""
        text = self.value(e).text
        if var_type.name != "integer":
            low, high = INTEGER_RANGES[var_type.name]
            return f"mica_narrow({text}, {low}, {high}, {e.pos.line})"
        return text

    def stmt_Break(self, s):
        if not self.loops[-1].window_here:
            self.leave_window()
        self.line("break;")

    def stmt_Continue(self, s):
        loop = self.loops[-1]
        if not loop.window_here:
            self.leave_window()
        loop.continued = True
        self.line(f"goto {loop.next_label};")

    def stmt_Exit(self, s):
        self.leave_window()
        if self.routine is None:
            self.line("return;")
        else:
            self.uses_done = True
            self.line("goto mica_done;")

    def stmt_Tape(self, s: ast.Tape):
        self.tape_window(s)
