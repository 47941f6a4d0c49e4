"""Statements: assignments, calls, branches, loops, windows."""

from __future__ import annotations

from .. import ast, residency
from ..symbols import VarSymbol
from ..types import BOOLEAN, ERROR, ErrorType, Scalar, has_tracked, plain
from .rules import writes_part_of_tracked


class Statements:
    def __init__(self, analyzer):
        self.a = analyzer  # the program's state, and through it the other parts

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
        target_type = self.a.places.place(s.target, "assign to")
        value_type = self.a.expressions.expr(s.value, plain(target_type))
        if isinstance(target_type, ErrorType) or isinstance(value_type, ErrorType):
            return
        self.a.places.check_assignable(value_type, target_type, s.value, s.target)
        self.a.declarations.note_untracking(s.value, value_type, target_type, f"'{ast.place_text(s.target)}'")
        if has_tracked(target_type) and self.a.tape_depth > 0 \
                and not isinstance(s.target, ast.Name | ast.Field | ast.Index):
            self.a.error(s.target, 5107, "inside a tape window a tracked place is assigned whole")
        if self.a.tape_depth > 0 and writes_part_of_tracked(s.target):
            self.a.error(s.target, 5107, "inside a tape window a tracked value is assigned whole, "
                                         "not element by element")

    def stmt_CallStmt(self, s: ast.CallStmt):
        call = s.call
        if isinstance(call, ast.Name):  # a procedure named without parentheses: checked as the call it is
            call = ast.Call(call.line, call.col, call, [])
            self.a.bare_statements.append((s, call))
        if not isinstance(call, ast.Call):
            self.a.error(call, 2008, "a statement must be an assignment or a call")
            return
        self.a.expressions.expr(call, statement=True)

    def stmt_If(self, s: ast.If):
        self.condition(s.cond)
        self.stmt(s.then)
        if s.otherwise is not None:
            self.stmt(s.otherwise)

    def stmt_While(self, s: ast.While):
        self.condition(s.cond)
        self.loop(s.body)

    def stmt_Repeat(self, s: ast.Repeat):
        self.a.loop_depth += 1
        self.stmts(s.body)
        self.a.loop_depth -= 1
        self.condition(s.cond)

    def loop(self, body: ast.Stmt) -> None:
        self.a.loop_depth += 1
        self.stmt(body)
        self.a.loop_depth -= 1

    def stmt_For(self, s: ast.For):
        symbol = self.loop_variable(s.var)
        s.var.ty = symbol.type if symbol else ERROR
        for bound in (s.start, s.stop):
            t = self.a.expressions.expr(bound)
            if isinstance(t, ErrorType) or not residency.needs_host(self.a, "a for loop's count", bound, t):
                continue
            if not (isinstance(plain(t), Scalar) and plain(t).is_integer):
                self.a.error(bound, 4006, f"a for loop's bounds must be integers, found '{t}'")
        if symbol is not None:
            symbol.is_loop_var = True
        self.a.tasks.loop(s, lambda: self.loop(s.body))
        if symbol is not None:
            symbol.is_loop_var = False

    def loop_variable(self, var: ast.Name) -> VarSymbol | None:
        """The variable a for loop counts with, or None after saying why it cannot be."""
        symbol = self.a.resolve(var)
        var.symbol = symbol
        if symbol is None:
            return None
        if not isinstance(symbol, VarSymbol) or symbol.by_address:
            self.a.error(var, 5004, f"a for loop runs over a variable of its own; '{var.ident}' is not one")
        elif not (isinstance(symbol.type, Scalar) and symbol.type.is_integer):
            self.a.error(var, 4006, f"a for loop's variable must be an integer, '{var.ident}' is '{symbol.type}'")
        elif symbol.is_loop_var:
            self.a.error(var, 5003, f"'{var.ident}' already counts an enclosing for loop")
        else:
            return symbol
        return None

    def stmt_Tape(self, s: ast.Tape):
        if self.a.tape_depth > 0:
            self.a.error(s, 5105, "a tape window cannot open inside another tape window")
        if self.a.routine is not None:
            self.a.routine.has_tape = True
        self.a.tape_depth += 1
        self.stmts(s.body)
        self.a.tape_depth -= 1

    def stmt_Tasks(self, s: ast.Tasks):
        self.a.tasks.tasks_block(s)

    def stmt_Spawn(self, s: ast.Spawn):
        self.a.tasks.spawn(s)

    def stmt_Break(self, s):
        if self.a.loop_depth == 0:
            self.a.error(s, 2101, "'break' outside a loop")

    def stmt_Continue(self, s):
        if self.a.loop_depth == 0:
            self.a.error(s, 2102, "'continue' outside a loop")

    def stmt_Exit(self, s):
        pass

    def condition(self, e: ast.Expr) -> None:
        t = self.a.expressions.expr(e)
        if not isinstance(t, ErrorType) and t != BOOLEAN:
            self.a.error(e, 4007, f"a condition must be boolean, found '{t}'")


# The method that checks each kind of statement: stmt_If checks an ast.If.
_STMT_CHECKS = {getattr(ast, name[5:]): method for name, method in vars(Statements).items()
                if name.startswith("stmt_")}
