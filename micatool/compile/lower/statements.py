"""Statements of one function: assignments, calls, branches, loops and windows.

Values that own heap storage (strings, dynamic tensors and arrays) follow one
discipline: a fresh value is moved into the place it is assigned to; a
temporary that nobody takes is dropped at the end of its statement; locals are
dropped when their routine returns.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import ast
from ..analyzer.rules import is_dynamic_row
from ..c_types import SUFFIX
from ..cvalue import CValue
from ..residency import on_gpu
from ..types import (INTEGER, INTEGER_RANGES, STRING, Record, Scalar, Tensor, Tracked, Type, has_tracked, needs_drop,
                     plain)
from .expressions import balanced


def appended(s: ast.Assign) -> ast.Expr | None:
    """What `s := s + a + b` appends to the string place s (`a + b`), or None for
    any other assignment. Appending grows s where it is, by doubling, where the
    concatenation would copy all of s: a string built a piece at a time costs
    O(n), not O(n^2). The place's path must call nothing, since it is then
    lowered once where it was read and written apart."""
    if plain(s.target.ty) != STRING:
        return None
    pieces, first = [], s.value
    while isinstance(first, ast.Binary) and first.op == "+":
        pieces.append(first.right)
        first = first.left
    if not pieces or first != s.target or ast.root_name(first).symbol is not ast.root_name(s.target).symbol \
            or calls_in(s.target):
        return None
    rest = pieces.pop()
    while pieces:  # string concatenation is associative: s + a + b = s + (a + b)
        rest = ast.Binary(rest.line, rest.col, "+", rest, pieces.pop(), ty=STRING)
    return rest


def calls_in(e: ast.Expr) -> bool:
    return any(isinstance(node, ast.Call) for node in ast.walk(e))


def bare(text: str) -> str:
    """A condition without the parentheses its own expression wrapped it in."""
    if text.startswith("(") and text.endswith(")") and balanced(text[1:-1]):
        return text[1:-1]
    return text


@dataclass
class Loop:
    next_label: str
    window_here: bool  # the loop runs inside this function's own tape window
    continued: bool = False


class Statements:
    def __init__(self, f):
        self.f = f  # the function being lowered, and through it the other parts
        self.emit = f.emit
        self.loops: list[Loop] = []

    def condition(self, e: ast.Expr) -> str:
        """C text of a condition. When it needs temporaries, they are computed and
        released before the branch, so no exit or break can skip their drops."""
        return self.emit.hoisted(lambda: self.f.exprs.value(e).text)

    def stmts(self, body: list[ast.Stmt]) -> None:
        for s in body:
            self.stmt(s)

    def stmt(self, s: ast.Stmt) -> None:
        self.f.line_now = s.pos.line  # where device operations that name no line of their own report faults
        enclosing = self.emit.at
        self.emit.at = s.pos.line
        if not isinstance(s, (ast.Compound, ast.Empty, ast.While, ast.Repeat)):  # loops set it at each test
            self.at_line(s.pos.line)
        getattr(self, "stmt_" + type(s).__name__)(s)
        self.emit.at = enclosing  # what follows a nested statement (a loop's test, a brace) is its enclosing one's

    def at_line(self, line: int) -> None:
        """The running statement's line, for the runtime's traps that are given none (mica.h, mica_line),
        and for the C lines that follow (lines.py)."""
        self.emit.at = line
        self.emit.line(f"mica_line = {line};")

    def stmt_Empty(self, s):
        pass

    def stmt_Compound(self, s: ast.Compound):
        self.stmts(s.body)

    def stmt_Assign(self, s: ast.Assign):
        with self.emit.statement_scope():
            target_type = self.f.concrete(s.target.ty)
            if self.f.tape.in_window and isinstance(target_type, Tracked):
                self.f.tape.record_assign(s)
                return
            if self.f.tape.in_window and has_tracked(target_type):
                self.copy_through_the_tape(s.target, s.value, target_type, s.pos)
                return
            if is_dynamic_row(s.target):
                self.store_dynamic_row(s.target, s.value, s.pos.line)
                return
            piece = appended(s)
            if piece is not None:
                self.append(s.target, piece)
                return
            value = self.f.exprs.value(s.value, plain(target_type))
            target = self.f.exprs.place(s.target)
            self.store(target, value, s.pos.line)

    def append(self, target: ast.Expr, piece: ast.Expr) -> None:
        """target := target + piece, the string growing in place (mica_str_append); the
        piece first, as an assignment's value comes before its place."""
        text = self.f.exprs.borrow(self.f.exprs.value(piece, STRING)).text
        self.emit.line(f"mica_str_append(&{self.f.exprs.place(target).text}, {text});")

    def copy_through_the_tape(self, target: ast.Expr, value: ast.Expr, t: Type, pos) -> None:
        """a := b for records or arrays holding tracked values, inside a window: part by part,
        so each tracked part reads b's node and writes a's, as `a.w := b.w` does."""
        if isinstance(t, Tracked) or not has_tracked(t):
            with self.emit.statement_scope():
                self.stmt_Assign(ast.Assign(pos.line, pos.col, target, value))
            return
        if isinstance(t, Record):
            parts = [(ast.Field(pos.line, pos.col, target, name, ty=ft),
                      ast.Field(pos.line, pos.col, value, name, ty=ft), ft)
                     for name, ft in t.fields]
        else:
            parts = [(ast.Index(pos.line, pos.col, target, [index], ty=t.element),
                      ast.Index(pos.line, pos.col, value, [index], ty=t.element), t.element)
                     for index in (ast.IntLit(pos.line, pos.col, i, ty=INTEGER, folded=i)
                                   for i in range(t.low, t.high + 1))]
        for part_target, part_value, part_type in parts:
            self.copy_through_the_tape(part_target, part_value, self.f.concrete(part_type), pos)

    def store_dynamic_row(self, target: ast.Index, value: ast.Expr, line: int) -> None:
        """m[i] := v for a dynamic matrix m: v's elements, as many as m has columns, into row i."""
        leading = (target.base if len(target.indices) == 1
                   else ast.Index(target.line, target.col, target.base, target.indices[:-1]))
        matrix = self.f.exprs.place(leading)
        t = plain(matrix.type)
        row = self.f.exprs.untracked(self.f.exprs.value(value, Tensor(t.element, None, 1)))
        index = self.f.exprs.value(target.indices[-1]).text
        self.emit.line(f"mica_dyn_set_row_{SUFFIX[t.element]}(&{matrix.text}, {index}, {self.f.exprs.data(row)}, "
                       f"{self.f.exprs.count(row)}, {line});")

    def store(self, target: CValue, value: CValue, line: int) -> None:
        """target := value, with conversion, copy or move, and re-adoption of tracked places."""
        t = self.f.concrete(target.type)
        if isinstance(t, Tracked) and on_gpu(t):  # the place gets its own copy of the storage
            self.f.device.store(CValue(f"{target.text}.v", t.inner, lvalue=True), self.f.exprs.untracked(value), line)
            self.emit.line(f"mica_tag_adopt(&{target.text}.tag);")
            return
        if isinstance(t, Tracked):
            self.emit.line(f"{target.text}.v = {self.f.exprs.convert(value, t.inner, line).text};")
            self.emit.line(f"mica_tag_adopt(&{target.text}.tag);")
            return
        if isinstance(value.type, Tracked):
            value = self.f.exprs.untracked(value)
        if isinstance(t, Tensor) and t.on_gpu:
            self.f.device.store(target, value, line)
            return
        converted = self.f.exprs.convert(value, t, line)
        if not needs_drop(t):
            self.emit.line(f"{target.text} = {converted.text};")
        elif converted.owned:
            self.emit.line(self.f.types.move(t, target.text, converted.text))
        else:
            self.emit.line(self.f.types.assign(t, target.text, converted.text))

    def stmt_CallStmt(self, s: ast.CallStmt):
        with self.emit.statement_scope():
            self.f.discarded = s.call  # a Load whose answer nobody reads traps when refused
            result = self.f.exprs.call(s.call)
            if result is not None and result.text:
                if result.owned:
                    self.emit.line(self.f.types.drop(result.type, self.f.exprs.materialize(result).text))
                elif not result.lvalue:
                    self.emit.line(f"(void){result.text};")

    def stmt_If(self, s: ast.If):
        cond = self.condition(s.cond)
        self.emit.line(f"if ({bare(cond)}) {{")
        with self.emit.indented():
            self.stmt(s.then)
        if s.otherwise is not None:
            self.emit.line("} else {")
            with self.emit.indented():
                self.stmt(s.otherwise)
        self.emit.line("}")

    def stmt_While(self, s: ast.While):
        loop = Loop(self.emit.fresh("mica_next"), self.f.tape.window_here)
        self.emit.line("for (;;) {")
        with self.emit.indented():
            self.at_line(s.pos.line)
            cond = self.condition(s.cond)
            self.emit.line(f"if (!({bare(cond)})) break;")
            self.loop_body(loop, lambda: self.stmt(s.body))
        self.emit.line("}")

    def stmt_Repeat(self, s: ast.Repeat):
        loop = Loop(self.emit.fresh("mica_next"), self.f.tape.window_here)
        self.emit.line("for (;;) {")
        with self.emit.indented():
            self.loop_body(loop, lambda: self.stmts(s.body))
            self.at_line(s.cond.pos.line)
            cond = self.condition(s.cond)
            self.emit.line(f"if ({bare(cond)}) break;")
        self.emit.line("}")

    def loop_body(self, loop: Loop, body) -> None:
        self.loops.append(loop)
        body()
        self.loops.pop()
        if loop.continued:
            self.emit.line(f"{loop.next_label}:;")

    def stmt_For(self, s: ast.For):
        var = self.f.exprs.place(s.var)
        low, high, count = self.emit.fresh(), self.emit.fresh(), self.emit.fresh()
        var_type = plain(self.f.concrete(s.var.ty))
        self.emit.line("{")
        with self.emit.indented():
            start = self.bound(s.start, var_type)
            stop = self.bound(s.stop, var_type)
            self.emit.line(f"int64_t {low} = {start}, {high} = {stop};")
            compare, step = (">=", "--") if s.downward else ("<=", "++")
            self.emit.line(f"if ({low} {compare} {high}) {{")
            with self.emit.indented():
                # the loop counts on its own: a routine writing the variable cannot keep it going
                self.emit.line(f"for (int64_t {count} = {low};; {count}{step}) {{")
                with self.emit.indented():
                    self.emit.line(f"{var.text} = {count};")
                    loop = Loop(self.emit.fresh("mica_next"), self.f.tape.window_here)
                    self.loop_body(loop, lambda: self.stmt(s.body))
                    self.emit.line(f"if ({count} == {high}) break;")
                self.emit.line("}")
            self.emit.line("}")
        self.emit.line("}")

    def bound(self, e: ast.Expr, var_type: Scalar) -> str:
        """A loop bound, checked to fit the loop variable's type."""
        text = self.f.exprs.value(e).text
        if var_type.name != "integer":
            low, high = INTEGER_RANGES[var_type.name]
            return f"mica_narrow({text}, {low}, {high}, {e.pos.line})"
        return text

    def stmt_Break(self, s):
        if not self.loops[-1].window_here:
            self.f.tape.leave_window()
        self.emit.line("break;")

    def stmt_Continue(self, s):
        loop = self.loops[-1]
        if not loop.window_here:
            self.f.tape.leave_window()
        loop.continued = True
        self.emit.line(f"goto {loop.next_label};")

    def stmt_Exit(self, s):
        self.f.tape.leave_window()
        if self.f.routine is None and not self.f.closing:
            self.emit.line("return;")
        else:
            self.f.uses_done = True
            self.emit.line("goto mica_done;")

    def stmt_Tape(self, s: ast.Tape):
        self.f.tape.tape_window(s)

    def stmt_Tasks(self, s: ast.Tasks):
        self.f.tasks.tasks_block(s)

    def stmt_Spawn(self, s: ast.Spawn):
        self.f.tasks.spawn(s)
